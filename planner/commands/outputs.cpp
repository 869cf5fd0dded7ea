// Output files of a plan, checked before the search: a long search must not end in "file
// exists" or "no such directory".
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "commands/internal.hpp"
#include "recipe/term_signals.hpp"

namespace meshplan {

std::vector<std::pair<std::string, const char*>> PlanOutputTargets(const PlanOutputs& o, size_t recipes) {
  std::vector<std::pair<std::string, const char*>> targets;
  if (o.out) targets.emplace_back(*o.out, "--out");
  if (o.emit_launch) {
    for (size_t i = 0; i < recipes; ++i) {
      const LaunchPaths p = LaunchFilePaths(o.out.value_or(""), static_cast<int>(i + 1));
      for (const std::string& f : {p.recipe, p.launch, p.sbatch}) targets.emplace_back(f, "--emit-launch");
    }
  }
  if (o.report) targets.emplace_back(*o.report, "--report");
  return targets;
}

void CheckOutputPath(const std::string& user_path, const char* flag, bool force) {
  if (user_path.empty()) return;
  const SourceLoc loc{user_path, 0, 0, /*output=*/true};
  // The file a symbolic link leads to, which WriteFileAtomically writes.
  const std::string path = ResolveOutputPath(user_path, flag);
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::absolute(path, ec).parent_path();
  if (!std::filesystem::is_directory(parent, ec)) {
    const bool exists = std::filesystem::exists(parent, ec);
    throw InputError(loc, flag, "expected a file in an existing directory; '" + parent.string() +
                                    (exists ? "' is not a directory" : "' does not exist (create it first)") +
                                    " (nothing was written)");
  }
  if (std::filesystem::is_directory(path, ec)) throw InputError(loc, flag, "is a directory; expected a file path");
  // A device or FIFO is refused as such, not as an existing file that --force would replace.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw InputError(loc, flag, "expected a regular file to replace, found another kind of file (a device, FIFO or socket)");
  }
  if (!force && std::filesystem::exists(path, ec)) {
    throw InputError(loc, flag, "file exists; pass --force to replace it (nothing was written)");
  }
  // The file is written through a temporary beside it and a rename: try that now (a read-only
  // directory, /proc, a name too long), so the search is not run for nothing.
  // SIGINT / SIGTERM / SIGHUP are held back until the probe is gone, so that a run killed
  // here leaves no temporary file (a pending signal is delivered at the unblock).
  TermSignalsHeld held;
  std::string probe = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(probe.data());
  const int mkstemp_errno = errno;
  bool renamable = false;
  if (fd >= 0) {
    ::close(fd);
    renamable = std::rename(probe.c_str(), (probe + "x").c_str()) == 0;
    std::remove(renamable ? (probe + "x").c_str() : probe.c_str());
  }
  held.Release();
  if (fd < 0) {
    throw InputError(loc, flag, std::string("cannot create a file next to it: ") + std::strerror(mkstemp_errno) +
                                    " (nothing was written)");
  }
  if (!renamable) throw InputError(loc, flag, "cannot rename a file in its directory (nothing was written)");
}

void RefuseInputsAsOutputs(const std::vector<std::pair<std::string, const char*>>& targets,
                           const std::vector<std::pair<std::string, const char*>>& inputs) {
  for (const auto& [path, flag] : targets) {
    for (const auto& [in, in_flag] : inputs) {
      std::error_code ec;
      if (in.empty() || !std::filesystem::is_regular_file(in, ec) || !std::filesystem::exists(path, ec)) continue;
      if (!std::filesystem::equivalent(path, in, ec) || ec) continue;
      throw InputError({path, 0, 0, /*output=*/true}, flag,
                       std::string("is the ") + in_flag + " file " + in +
                           ", an input of this run; expected a different path (nothing was written)");
    }
  }
}

namespace commands {

void RefuseSameOutputs(const std::vector<std::pair<std::string, const char*>>& targets) {
  std::vector<std::filesystem::path> seen;
  for (const auto& [path, flag] : targets) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(ResolveOutputPath(path, flag), ec);
    std::filesystem::path p = std::filesystem::weakly_canonical(abs.parent_path(), ec) / abs.filename();
    if (ec) p = abs.lexically_normal();
    for (size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] != p) continue;
      const std::string what = targets[i].second == std::string("--emit-launch")
                                   ? "the launch file " + targets[i].first + " that --emit-launch writes beside --out"
                                   : std::string(targets[i].second) + " " + targets[i].first;
      throw InputError({path, 0, 0}, flag,
                       "is the same file as " + what +
                           "; expected a different path for each output (nothing was written)");
    }
    seen.push_back(p);
  }
}

}  // namespace commands
}  // namespace meshplan
