// Finding hardware database files: by name in the embedded hwdb/ or in a --hwdb folder,
// or by path to a system YAML. Parsing itself is in hwdb_parse.cpp.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <system_error>
#include <vector>

#include "cost/time.hpp"
#include "data/yaml_util.hpp"
#include "hardware/hwdb_parse.hpp"
#include "meshplan/data.hpp"

namespace meshplan::hardware {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEmbeddedPrefix = "<embedded>/";

/// True if `path` names an existing regular file (no exception on errors).
bool IsFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

/// True when LoadSystem's argument is a path rather than a database name.
bool LooksLikePath(const std::string& s) {
  auto ends_with = [&](const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return s.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml");
}

/// "unknown KIND 'name'; did you mean 'x'? known KINDs: a, b" (suggestion only when close).
std::string UnknownName(const std::string& kind, const std::string& name, std::vector<std::string> known) {
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  std::string msg = "unknown " + kind + " '" + name + "'";
  std::string hint = yamlutil::DidYouMean(name, known);
  msg += hint.empty() ? ";" : "; did you mean '" + hint + "'?";
  return msg + " known " + kind + "s: " + JoinNames(known);
}

}  // namespace

/// Stems of DIR/*.yaml, sorted; empty if DIR is missing.
std::vector<std::string> ListYamlStems(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".yaml" && IsFile(p.string())) names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// [A-Za-z0-9._-]+ not starting with '.': no path separators, no "..".
bool IsPlainName(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_';
  });
}

/// "a, b, c", or "none".
std::string JoinNames(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// First match of `name` in search.dirs, then the embedded DB; else InputError listing names.
GpuSpec FindGpu(const std::string& name, const GpuSearch& search, const SourceLoc& where,
                const std::string& field) {
  std::vector<std::string> known;
  if (IsPlainName(name)) {
    for (const std::string& dir : search.dirs) {
      std::string path = dir + "/" + name + ".yaml";
      if (IsFile(path)) return ParseGpu(data::ReadFileOrThrow(path), path);
    }
    if (search.embedded) {
      std::string path = "hwdb/gpus/" + name + ".yaml";
      if (auto text = data::FindEmbedded(path)) return ParseGpu(std::string(*text), kEmbeddedPrefix + path);
    }
  }
  for (const std::string& dir : search.dirs) {
    for (std::string& n : ListYamlStems(dir)) known.push_back(std::move(n));
  }
  if (search.embedded) {
    for (std::string& n : ListGpus()) known.push_back(std::move(n));
  }
  throw InputError(where, field, UnknownName("GPU", name, known));
}

}  // namespace meshplan::hardware

namespace meshplan {

using hardware::GpuSearch;

/// Loads a system by database name or by path; see hardware.hpp. For a path, the system's
/// GPU is looked for in ../gpus/ next to the file, then in `hwdb_dir`/gpus if given, then in
/// the embedded database. For a name, only the chosen database (hwdb_dir or embedded) is used.
void CheckHwdbDir(const std::string& hwdb_dir) {
  if (hwdb_dir.empty() || std::filesystem::is_directory(hwdb_dir)) return;
  throw InputError({hwdb_dir, 0, 0}, "--hwdb",
                   "expected a hardware database directory (with systems/ and gpus/), found " +
                       std::string(std::filesystem::exists(hwdb_dir) ? "a file" : "nothing"));
}

namespace {

// The embedded systems with a megatron_time_fit, parsed once.
const std::vector<FittedSystemConstants>& EmbeddedFits() {
  static const std::vector<FittedSystemConstants> fits = [] {
    std::vector<FittedSystemConstants> v;
    for (const std::string& n : ListSystems()) {
      const std::string path = "hwdb/systems/" + n + ".yaml";
      const auto text = data::FindEmbedded(path);
      if (!text) continue;
      const SystemSpec s = hardware::ParseSystem(std::string(*text), hardware::kEmbeddedPrefix + path, GpuSearch{});
      if (s.megatron_fit.fitted) v.push_back({s.name, s.gpu.compute_capability, s.megatron_fit, s.gpu.bf16_flops});
    }
    return v;
  }();
  return fits;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

SystemSpec WithFit(SystemSpec s) {
  ApplyUnfittedMegatronFit(s);
  return s;
}

SystemSpec LoadSystemAsWritten(const std::string& name_or_path, const std::string& hwdb_dir);

}  // namespace

void ApplyUnfittedMegatronFit(SystemSpec& system) {
  if (system.megatron_fit.fitted) return;
  std::vector<FittedSystemConstants> same_die;
  for (const FittedSystemConstants& f : EmbeddedFits()) {
    if (std::fabs(f.compute_capability - system.gpu.compute_capability) < 1e-9 &&
        std::fabs(f.bf16_flops - system.gpu.bf16_flops) <= 1e-6 * system.gpu.bf16_flops) {
      same_die.push_back(f);
    }
  }
  if (!same_die.empty()) {
    BorrowMegatronFitFrom(system, same_die);
    return;
  }
  system.megatron_fit = cost::MegatronPhysicalFit();
}

void BorrowMegatronFitFrom(SystemSpec& system, const std::vector<FittedSystemConstants>& fitted) {
  if (system.megatron_fit.fitted) return;
  std::vector<const FittedSystemConstants*> from;
  for (const FittedSystemConstants& f : fitted) {
    if (std::fabs(f.compute_capability - system.gpu.compute_capability) < 1e-9) from.push_back(&f);
  }
  const bool same_arch = !from.empty();
  if (!same_arch) {
    for (const FittedSystemConstants& f : fitted) from.push_back(&f);
  }
  if (from.empty()) return;
  auto median = [&](double MegatronTimeFit::*field) {
    std::vector<double> v;
    for (const FittedSystemConstants* f : from) v.push_back(f->fit.*field);
    return Median(v);
  };
  MegatronTimeFit& fit = system.megatron_fit;
  fit.gemm_bf16 = median(&MegatronTimeFit::gemm_bf16);
  fit.gemm_fp8 = median(&MegatronTimeFit::gemm_fp8);
  fit.gemm_fp4 = median(&MegatronTimeFit::gemm_fp4);
  fit.memory_bound = median(&MegatronTimeFit::memory_bound);
  fit.kernel_overhead = median(&MegatronTimeFit::kernel_overhead);
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  if (same_arch && from.size() == 1) {
    os << from[0]->name;
  } else {
    os << "the median of ";
    for (size_t i = 0; i < from.size(); ++i) os << (i ? ", " : "") << from[i]->name;
  }
  if (same_arch) {
    os << " (same GPU compute capability " << system.gpu.compute_capability << ")";
  } else {
    os << " (no fitted system has compute capability " << system.gpu.compute_capability << ")";
  }
  fit.borrowed_from = os.str();
}

SystemSpec LoadSystem(const std::string& name_or_path, const std::string& hwdb_dir) {
  return WithFit(LoadSystemAsWritten(name_or_path, hwdb_dir));
}

namespace {

// The system as its file says (LoadSystem without the borrowed fit).
SystemSpec LoadSystemAsWritten(const std::string& name_or_path, const std::string& hwdb_dir) {
  if (hardware::LooksLikePath(name_or_path)) {
    std::string text = data::ReadFileOrThrow(name_or_path);
    std::filesystem::path parent = std::filesystem::path(name_or_path).parent_path();
    GpuSearch search;
    search.dirs.push_back((parent.empty() ? std::string(".") : parent.string()) + "/../gpus");
    if (!hwdb_dir.empty()) search.dirs.push_back(hwdb_dir + "/gpus");
    return hardware::ParseSystem(text, name_or_path, search);
  }
  const std::string& name = name_or_path;
  if (!hwdb_dir.empty()) {
    CheckHwdbDir(hwdb_dir);
    std::string dir = hwdb_dir + "/systems";
    if (!std::filesystem::is_directory(dir)) {
      throw InputError({hwdb_dir, 0, 0}, "--hwdb",
                       "expected a hardware database directory with systems/ and gpus/ (a copy of hwdb/), found no "
                       "systems/ folder in it");
    }
    std::string path = dir + "/" + name + ".yaml";
    if (hardware::IsPlainName(name) && hardware::IsFile(path)) {
      // The database's own GPUs first, then the embedded ones (as for a system given by path):
      // a --hwdb holding only systems/ reuses the shipped GPU files.
      GpuSearch search{{hwdb_dir + "/gpus"}, /*embedded=*/true};
      return hardware::ParseSystem(data::ReadFileOrThrow(path), path, search);
    }
    throw InputError({dir, 0, 0}, "system", hardware::UnknownName("system", name, hardware::ListYamlStems(dir)));
  }
  std::string path = "hwdb/systems/" + name + ".yaml";
  if (hardware::IsPlainName(name)) {
    if (auto text = data::FindEmbedded(path)) {
      return hardware::ParseSystem(std::string(*text), hardware::kEmbeddedPrefix + path, GpuSearch{});
    }
  }
  throw InputError({std::string(hardware::kEmbeddedPrefix) + "hwdb/systems", 0, 0}, "system",
                   hardware::UnknownName("system", name, ListSystems()));
}

}  // namespace

std::string SystemYamlText(const std::string& name_or_path, const std::string& hwdb_dir) {
  LoadSystemAsWritten(name_or_path, hwdb_dir);  // the same resolution and errors; the file parses
  if (hardware::LooksLikePath(name_or_path)) return data::ReadFileOrThrow(name_or_path);
  if (!hwdb_dir.empty()) return data::ReadFileOrThrow(hwdb_dir + "/systems/" + name_or_path + ".yaml");
  return std::string(*data::FindEmbedded("hwdb/systems/" + name_or_path + ".yaml"));
}

/// Loads a GPU by name from `hwdb_dir`/gpus if given, then from the embedded hwdb/gpus/.
GpuSpec LoadGpu(const std::string& name, const std::string& hwdb_dir) {
  GpuSearch search;
  std::string where = std::string(hardware::kEmbeddedPrefix) + "hwdb/gpus";
  if (!hwdb_dir.empty()) {
    // As for a system's gpu: (LoadSystem): the directory's GPUs first, then the embedded ones.
    search = GpuSearch{{hwdb_dir + "/gpus"}, /*embedded=*/true};
    where = hwdb_dir + "/gpus";
  }
  return hardware::FindGpu(name, search, {where, 0, 0}, "gpu");
}

std::vector<std::string> ListSystems(const std::string& hwdb_dir) {
  if (hwdb_dir.empty()) return data::ListEmbedded("hwdb/systems");
  std::error_code ec;
  if (!std::filesystem::is_directory(hwdb_dir + "/systems", ec)) {
    throw InputError({"<command line>", 0, 0}, "--hwdb",
                     "expected a hardware database directory with systems/ in it, found '" + hwdb_dir + "'");
  }
  return hardware::ListYamlStems(hwdb_dir + "/systems");
}

std::vector<std::string> ListGpus(const std::string& hwdb_dir) {
  std::vector<std::string> names = data::ListEmbedded("hwdb/gpus");
  if (hwdb_dir.empty()) return names;
  for (std::string& n : hardware::ListYamlStems(hwdb_dir + "/gpus")) names.push_back(std::move(n));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace meshplan
