// Whole-or-nothing output files.
//
// The content goes to PATH.tmp.XXXXXX in the same directory, is fsync'ed and then moved
// into place: with --force by rename() (atomic replace), without it by link() (which fails
// with EEXIST if PATH appeared meanwhile, so a file is never replaced without --force,
// even by a race) and unlink of the temporary name. A SIGINT / SIGTERM / SIGHUP arriving
// while the temporary file exists removes it before the process dies; after SIGKILL it
// may remain, but PATH itself is never partial.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "meshplan/diag.hpp"
#include "meshplan/recipe.hpp"
#include "recipe/term_signals.hpp"

namespace meshplan {
namespace {

// Temporary file to remove if a signal arrives (async-signal-safe: a fixed buffer).
char g_tmp_path[4096];
std::atomic<bool> g_tmp_live{false};

extern "C" void RemoveTmpAndDie(int sig) {
  if (g_tmp_live.load()) unlink(g_tmp_path);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// Installs the cleanup handlers for the lifetime of the object.
class TmpGuard {
 public:
  explicit TmpGuard(const std::string& path) {
    std::strncpy(g_tmp_path, path.c_str(), sizeof g_tmp_path - 1);
    g_tmp_live = true;
    struct sigaction sa {};
    sa.sa_handler = RemoveTmpAndDie;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~TmpGuard() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
    g_tmp_live = false;
  }
  TmpGuard(const TmpGuard&) = delete;
  TmpGuard& operator=(const TmpGuard&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

}  // namespace

std::string ResolveOutputPath(const std::string& path, const char* flag) {
  const SourceLoc loc{path, 0, 0, /*output=*/true};
  std::string cur = path;
  for (int hops = 0;; ++hops) {
    struct stat lst {};
    if (lstat(cur.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) break;
    if (hops == 40) throw InputError(loc, flag, "expected a file path, found a loop of symbolic links");
    std::string target(4096, '\0');
    const ssize_t n = readlink(cur.c_str(), target.data(), target.size());
    if (n <= 0 || size_t(n) >= target.size()) break;
    target.resize(size_t(n));
    if (target[0] != '/') {
      const size_t slash = cur.find_last_of('/');
      target = (slash == std::string::npos ? std::string() : cur.substr(0, slash + 1)) + target;
    }
    // /proc/self/fd/N of a pipe or socket leads to "pipe:[123]", no path in a directory.
    const size_t colon = target.find(":[");
    if (colon != std::string::npos && target.back() == ']' && target.find('/', colon) == std::string::npos) {
      throw InputError(loc, flag, "expected a file path, found a symbolic link to '" +
                                      target.substr(target.find_last_of('/') + 1) +
                                      "' (a pipe or socket, not a file; nothing was written)");
    }
    cur = target;
  }
  return cur;
}

void WriteFileAtomically(const std::string& user_path, const std::string& content, bool force, const char* flag) {
  const SourceLoc loc{user_path, 0, 0, /*output=*/true};
  if (user_path.empty()) throw InputError({"<command line>", 0, 0}, flag, "expected a file path, found ''");
  // Written through a symbolic link, as a shell redirection writes: the rename below would
  // otherwise replace the link itself (`--out /dev/stdout --force` replaced the machine's link).
  const std::string path = ResolveOutputPath(user_path, flag);
  if (path.size() + 16 >= sizeof g_tmp_path) throw InputError(loc, flag, "path too long");
  struct stat st {};
  const bool exists = stat(path.c_str(), &st) == 0;
  if (exists) {
    if (S_ISDIR(st.st_mode)) throw InputError(loc, flag, "is a directory; expected a file path");
    if (!force) throw InputError(loc, flag, "file exists; pass --force to replace it");
  }
  std::string tmpl = path + ".tmp.XXXXXX";
  // Block the signals while the temporary file is created and its name recorded.
  TermSignalsHeld held;
  int fd = mkstemp(tmpl.data());
  const int mkstemp_errno = errno;
  if (fd < 0) {
    held.Release();
    std::string why = std::strerror(mkstemp_errno);
    const size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    struct stat dst {};
    if (mkstemp_errno == ENOENT && stat(dir.c_str(), &dst) != 0) why += " (the directory does not exist)";
    throw InputError(loc, flag, "cannot create a file next to it: " + why);
  }
  TmpGuard guard(tmpl);
  held.Release();

  const char* p = content.data();
  size_t left = content.size();
  bool ok = true;
  int err = 0;
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      err = errno;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // mkstemp creates 0600; give the file the usual 0666 & ~umask, or the mode of the file it
  // replaces (a 0640 recipe stays 0640).
  const mode_t mask = umask(0);
  umask(mask);
  const mode_t mode = exists && S_ISREG(st.st_mode) ? (st.st_mode & 07777) : (0666 & ~mask);
  if (ok && fchmod(fd, mode) != 0) ok = false, err = errno;
  if (ok && fsync(fd) != 0) ok = false, err = errno;
  if (close(fd) != 0 && ok) ok = false, err = errno;
  if (ok) {
    if (force) {
      if (std::rename(tmpl.c_str(), path.c_str()) != 0) ok = false, err = errno;
    } else if (link(tmpl.c_str(), path.c_str()) == 0) {
      unlink(tmpl.c_str());
    } else if (errno == EEXIST) {
      unlink(tmpl.c_str());
      throw InputError(loc, flag, "file exists; pass --force to replace it");
    } else if (errno == EPERM || errno == EOPNOTSUPP || errno == EMLINK || errno == ENOSYS) {
      // No hard links on this file system: the stat() above is the best check we have.
      if (std::rename(tmpl.c_str(), path.c_str()) != 0) ok = false, err = errno;
    } else {
      ok = false;
      err = errno;
    }
  }
  if (!ok) {
    unlink(tmpl.c_str());
    throw InputError(loc, flag, std::string("cannot write: ") + std::strerror(err));
  }
}

}  // namespace meshplan
