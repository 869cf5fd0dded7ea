// Least-squares calibration of a system from collective and GEMM microbenchmarks, on the
// least-squares core it shares with validate --fit (least_squares.hpp).
#include "meshplan/calibrate.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>

#include "accuracy/least_squares.hpp"
#include "meshplan/data.hpp"
#include "meshplan/diag.hpp"

namespace meshplan {

namespace {

double Steps(const std::string& op, int64_t n) {
  if (op == "all_reduce") return 2.0 * double(n - 1);
  if (op == "send_recv") return 1.0;
  return double(n - 1);
}
double BusFactor(const std::string& op, int64_t n) {
  if (op == "all_reduce") return 2.0 * double(n - 1) / double(n);
  if (op == "send_recv") return 1.0;
  return double(n - 1) / double(n);
}

// Least squares of rows a_i . x = t_i on relative residuals (each row divided by t_i). A
// latency (x(0)) that comes out negative or zero is not physical (the points do not resolve
// it): it is then fixed at `fallback_latency`, the bandwidth term alone is fitted and
// `*fell_back` (if given) is set.
Eigen::Vector2d FitRelative(const std::vector<std::array<double, 3>>& rows, double fallback_latency = 0,
                            bool* fell_back = nullptr) {
  Eigen::MatrixXd A(rows.size(), 2);
  Eigen::VectorXd b(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    A(i, 0) = rows[i][0] / rows[i][2];
    A(i, 1) = rows[i][1] / rows[i][2];
    b(i) = 1.0;
  }
  accuracy::Unknown latency;
  latency.lower = std::numeric_limits<double>::denorm_min();  // positive
  latency.fixed_at = fallback_latency;
  const accuracy::BoundedSolution x = accuracy::SolveBounded(A, b, {latency, accuracy::Unknown{}});
  if (fell_back != nullptr) *fell_back = x.fixed[0];
  return Eigen::Vector2d(x.x[0], x.x[1]);
}

}  // namespace

namespace {

// Limits of a plausible measurement (tools/measure/collectives.py and gemm.py write far
// smaller values); anything outside is refused rather than fitted.
constexpr int kMaxDepth = 64;                 // JSON nesting, as the YAML readers
constexpr size_t kMaxLineChars = 65536;       // a measurement line is ~250 characters
constexpr double kMinSeconds = 1e-9, kMaxSeconds = 3600;
constexpr int64_t kMaxGroup = 1 << 20;        // GPUs in one collective group (as --gpus)
constexpr int64_t kMaxBytes = int64_t{1} << 40;  // 1 TiB per collective buffer
constexpr int64_t kMaxGemmDim = 1 << 20;

// Short, one-line rendering of a JSON value for "found ..." (strings quoted and cut).
std::string Shown(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object: return "a map";
    case nlohmann::json::value_t::array: return "a list";
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 60) s = s.substr(0, 60) + "...";
      return "the string \"" + s + "\"";
    }
    case nlohmann::json::value_t::number_float:
      if (!std::isfinite(v.get<double>())) return "a number beyond the range of a double";
      [[fallthrough]];
    default: {
      std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      if (s.size() > 60) s = s.substr(0, 60) + "...";
      return s;
    }
  }
}

// 1-based column of the first (or the last) key `"key"` (followed by optional blanks and
// ':') in `line`; 1 if it is not found (a key written with escapes).
int KeyColumn(const std::string& line, const std::string& key, bool last = false) {
  const std::string quoted = "\"" + key + "\"";
  int found = 0;
  for (size_t pos = line.find(quoted); pos != std::string::npos; pos = line.find(quoted, pos + 1)) {
    size_t after = line.find_first_not_of(" \t", pos + quoted.size());
    if (after != std::string::npos && line[after] == ':') {
      found = static_cast<int>(pos) + 1;
      if (!last) break;
    }
  }
  return found > 0 ? found : 1;
}

// The key whose value starts at byte `at` of `line` ("" if none): the last "key": before it.
std::string KeyBefore(const std::string& line, size_t at) {
  const size_t colon = line.rfind(':', at);
  if (colon == std::string::npos) return "";
  const size_t close = line.find_last_not_of(" \t", colon == 0 ? 0 : colon - 1);
  if (close == std::string::npos || line[close] != '"' || close == 0) return "";
  const size_t open = line.rfind('"', close - 1);
  if (open == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

// One JSON line of a measurement file, with typed, range-checked getters whose errors name
// file, line, the column of the key, the field, what was expected and what was found.
class LineReader {
 public:
  LineReader(const std::string& file, int ln, const std::string& line, const nlohmann::json& j)
      : file_(file), ln_(ln), line_(line), j_(j) {}

  [[noreturn]] void Fail(const std::string& key, const std::string& message) const {
    throw InputError({file_, ln_, key.empty() ? 1 : KeyColumn(line_, key)}, key, message);
  }
  bool Has(const char* key) const { return j_.contains(key); }
  const nlohmann::json& Need(const char* key, const std::string& expected) const {
    if (!j_.contains(key)) Fail(key, "missing; expected " + expected + " (a measurement line of collectives.py / gemm.py)");
    return j_.at(key);
  }
  double Num(const char* key, double min, double max) const {
    const std::string expected = "a number in [" + Fmt(min) + ", " + Fmt(max) + "]";
    const nlohmann::json& v = Need(key, expected);
    if (!v.is_number()) Fail(key, "expected " + expected + ", found " + Shown(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < min || x > max) Fail(key, "expected " + expected + ", found " + Shown(v));
    return x;
  }
  int64_t Int(const char* key, int64_t min, int64_t max) const {
    const std::string expected = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    const nlohmann::json& v = Need(key, expected);
    if (!v.is_number_integer()) Fail(key, "expected " + expected + ", found " + Shown(v));
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(max) || static_cast<int64_t>(u) < min) {
        Fail(key, "expected " + expected + ", found " + Shown(v));
      }
      return static_cast<int64_t>(u);
    }
    const int64_t x = v.get<int64_t>();
    if (x < min || x > max) Fail(key, "expected " + expected + ", found " + Shown(v));
    return x;
  }
  std::string OneOf(const char* key, std::initializer_list<const char*> allowed) const {
    std::string expected;
    for (const char* a : allowed) expected += (expected.empty() ? "" : ", ") + std::string(a);
    const nlohmann::json& v = Need(key, "one of " + expected);
    if (v.is_string()) {
      for (const char* a : allowed) {
        if (v.get<std::string>() == a) return a;
      }
    }
    Fail(key, "expected one of " + expected + ", found " + Shown(v));
  }

 private:
  static std::string Fmt(double x) {
    std::ostringstream os;
    os << x;
    return os.str();
  }
  const std::string& file_;
  int ln_;
  const std::string& line_;
  const nlohmann::json& j_;
};

// Parses one line; throws InputError for malformed JSON, nesting deeper than kMaxDepth and
// duplicate keys of the measurement object.
nlohmann::json ParseLine(const std::string& file, int ln, const std::string& line) {
  std::vector<std::vector<std::string>> keys;  // keys seen per open object
  std::string duplicate;
  auto cb = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && depth >= kMaxDepth) {
      throw InputError({file, ln, 1}, "", "nesting deeper than 64 levels; expected a flat measurement object");
    }
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end && !keys.empty()) keys.pop_back();
    if (event == E::key && !keys.empty() && duplicate.empty()) {
      const std::string k = parsed.get<std::string>();
      if (std::find(keys.back().begin(), keys.back().end(), k) != keys.back().end()) duplicate = k;
      keys.back().push_back(k);
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line, cb);
  } catch (const nlohmann::json::parse_error& e) {
    // Python's json.dumps writes NaN, Infinity and -Infinity for non-finite floats: name them.
    size_t at = e.byte == 0 ? 0 : std::min(e.byte - 1, line.size());
    if (at > 0 && line[at - 1] == '-') --at;
    const int col = static_cast<int>(at) + 1;
    for (const char* word : {"NaN", "Infinity", "-Infinity"}) {
      if (line.compare(at, std::strlen(word), word) == 0) {
        throw InputError({file, ln, col}, KeyBefore(line, at),
                         std::string("expected a finite number, found ") + word +
                             " (Python's json module writes non-finite floats so; the measurement failed)");
      }
    }
    throw InputError({file, ln, col}, "", "malformed JSON; expected one JSON object per line (JSON lines)");
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond the range of a double (id 406: "number overflow parsing '1e999'").
    const std::string what = e.what();
    const size_t q = what.find("parsing '");
    const std::string token = q == std::string::npos ? "" : what.substr(q + 9, what.find('\'', q + 9) - (q + 9));
    const size_t at = token.empty() ? std::string::npos : line.find(token);
    if (at == std::string::npos) {
      throw InputError({file, ln, 1}, "", "expected numbers within the range of a double");
    }
    throw InputError({file, ln, static_cast<int>(at) + 1}, KeyBefore(line, at),
                     "expected a number within the range of a double, found " + token.substr(0, 60));
  } catch (const nlohmann::json::exception&) {
    throw InputError({file, ln, 1}, "", "malformed JSON; expected one JSON object per line (JSON lines)");
  }
  if (!duplicate.empty()) {
    throw InputError({file, ln, KeyColumn(line, duplicate, true)}, duplicate,
                     "duplicate key; expected each field once per measurement line");
  }
  return j;
}

}  // namespace

std::vector<CalibrationPoint> ParseCalibrationPoints(std::string_view text, const std::string& file) {
  std::vector<CalibrationPoint> pts;
  std::string gpu;  // from the {"environment"} line, which comes first
  size_t start = 0;
  int ln = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string line(text.substr(start, end - start));
    start = end + 1;
    ++ln;
    if (line.find('\0') != std::string::npos) {
      throw InputError({file, ln, static_cast<int>(line.find('\0')) + 1}, "",
                       "file contains NUL bytes; expected JSON lines text (collectives.jsonl / gemm.jsonl)");
    }
    if (line.size() > kMaxLineChars) {
      throw InputError({file, ln, 1}, "",
                       "expected a measurement line of at most " + std::to_string(kMaxLineChars) + " characters, found " +
                           std::to_string(line.size()));
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = ParseLine(file, ln, line);
    if (!j.is_object()) {
      throw InputError({file, ln, 1}, "", "expected a JSON object per line (a measurement of collectives.py / gemm.py), found " + Shown(j));
    }
    if (j.contains("environment")) {
      const nlohmann::json& env = j["environment"];
      if (env.is_object() && env.contains("gpu") && env["gpu"].is_string()) gpu = env["gpu"].get<std::string>();
      continue;
    }
    const LineReader r(file, ln, line, j);
    CalibrationPoint p;
    p.where = file + ":" + std::to_string(ln);
    p.file = file;
    p.line = ln;
    p.gpu = gpu;
    if (!j.contains("kind") && j.contains("peak_alloc") && j.contains("step_s")) {  // tests/data/measured/ format
      r.Fail("kind", "missing: this is a training-run line of tools/measure/measure.py; calibrate reads the "
                     "collectives.jsonl and gemm.jsonl of tools/measure/calibration_sweep.sh");
    }
    p.kind = r.OneOf("kind", {"collective", "gemm"});
    p.seconds = r.Num("seconds", kMinSeconds, kMaxSeconds);
    if (p.kind == "collective") {
      p.op = r.OneOf("op", {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"});
      p.n = r.Int("n", 2, kMaxGroup);
      p.bytes = static_cast<double>(r.Int("bytes", 1, kMaxBytes));
      p.nodes = r.Has("nodes_spanned") ? r.Int("nodes_spanned", 1, p.n) : 1;
    } else {
      p.op = r.OneOf("dtype", {"bf16", "fp8"});
      const int64_t m = r.Int("m", 1, kMaxGemmDim), n = r.Int("n", 1, kMaxGemmDim), k = r.Int("k", 1, kMaxGemmDim);
      p.flop = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
      p.n = std::min({m, n, k});
    }
    pts.push_back(p);
  }
  return pts;
}

std::vector<CalibrationPoint> ReadCalibrationPoints(const std::vector<std::string>& files) {
  std::vector<CalibrationPoint> pts;
  std::vector<std::filesystem::path> seen;
  for (const std::string& file : files) {
    std::error_code ec;
    const std::filesystem::path canon = std::filesystem::weakly_canonical(file, ec);
    for (size_t i = 0; !ec && i < seen.size(); ++i) {
      if (seen[i] == canon) {
        throw InputError({file, 0, 0}, "MEASUREMENTS",
                         "given twice (as " + files[i] + " too); expected each measurement file once, else its points "
                         "would count double in the fit");
      }
    }
    seen.push_back(ec ? std::filesystem::path(file) : canon);
    std::vector<CalibrationPoint> some = ParseCalibrationPoints(data::ReadFileOrThrow(file), file);
    if (some.empty()) {
      throw InputError({file, 0, 0}, "MEASUREMENTS",
                       "expected at least one measurement line (kind collective or gemm), found none");
    }
    pts.insert(pts.end(), some.begin(), some.end());
  }
  return pts;
}

namespace {

// Units of the calibrated constants in a system file (hwdb_parse.cpp reads value x unit).
constexpr double kMicro = 1e-6;  // scaleup_latency_us, scaleout_latency_us

// "1 measurement", "3 measurements": `n` and `noun`, plural unless n is 1.
std::string Count(size_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string Fixed(double x, int decimals) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(decimals);
  os << x;
  return os.str();
}

// A constant kept at the base system's value `prior`, for `why`.
CalibratedConstant Kept(const char* key, double prior, double unit, std::string why) {
  return {key, prior, prior, unit, 0, std::move(why)};
}

// A constant fitted from `n` points to `value`.
CalibratedConstant Fitted(const char* key, double value, double prior, double unit, size_t n, std::string basis) {
  return {key, value, prior, unit, static_cast<int>(n), std::move(basis)};
}

}  // namespace

std::string CalibratedConstant::Label(const std::string& base) const {
  if (fitted()) return "fitted from " + Count(measurements, "measurement") +
                       " (" + basis + ")";
  return "kept at " + (base.empty() ? std::string("the base system") : base) + "'s value: " + basis;
}

CalibrationFit Calibrate(const SystemSpec& base, const std::vector<CalibrationPoint>& points) {
  CalibrationFit fit;
  fit.system = base;
  fit.base_name = base.name;
  fit.dropped_megatron_fit = base.megatron_fit.fitted;
  // Errors about the points as a whole name their files.
  std::vector<std::string> seen;
  std::string files;
  for (const auto& p : points) {
    if (std::find(seen.begin(), seen.end(), p.file) != seen.end()) continue;
    seen.push_back(p.file);
    files += (files.empty() ? "" : ", ") + p.file;
  }
  const SourceLoc all{files.empty() ? "<measurements>" : files, 0, 0};
  std::vector<std::array<double, 3>> coll;
  size_t n_collective = 0, n_multinode = 0, n_bf16 = 0;
  for (const auto& p : points) {
    if (p.kind == "collective") {
      ++n_collective;
      if (p.nodes > 1) ++n_multinode;
      if (p.nodes == 1 && p.n >= 2 && p.bytes >= (1 << 20)) {
        coll.push_back({Steps(p.op, p.n), p.bytes * BusFactor(p.op, p.n), p.seconds});
      }
    } else {
      // Faster than the datasheet peak (5% allowed for clock boost): a mistimed measurement.
      const double peak = p.op == "bf16" ? base.gpu.bf16_flops : base.gpu.fp8_flops;
      if (peak > 0 && p.flop / p.seconds > 1.05 * peak) {
        std::ostringstream os;
        os << "expected a GEMM no faster than 1.05 x the dense " << p.op << " peak of " << base.gpu.display_name << " ("
           << peak / 1e12 << " TFLOP/s), found " << p.seconds << " s for " << p.flop << " FLOP (2 m n k) = "
           << p.flop / p.seconds / 1e12 << " TFLOP/s; either the measurements are of a faster GPU than the base system's "
           << "(--system), or the time was not synchronized with the GPU";
        throw InputError({p.file, p.line, 0}, "seconds", os.str());
      }
      if (p.op == "bf16") ++n_bf16;
    }
  }
  Eigen::Vector2d cx(0, 0);
  bool latency_fell_back = false;
  if (!coll.empty()) {
    if (coll.size() < 3) throw InputError(all, "MEASUREMENTS", "expected at least 3 collective points of >= 1 MiB");
    // No positive latency in the fit: keep the base system's (a system file needs one > 0).
    cx = FitRelative(coll, base.scaleup_latency, &latency_fell_back);
    if (!(cx(1) > 0) || !std::isfinite(cx(1))) {
      throw InputError(all, "MEASUREMENTS",
                       "expected collective times that grow with the message size; the least-squares fit gives a "
                       "non-positive bus bandwidth");
    }
    if (!(cx(0) <= 0.1)) {  // hwdb's limit for scaleup_latency_us (0.1 s per step)
      throw InputError(all, "MEASUREMENTS",
                       "expected a scale-up latency of at most 100000 us per collective step, the fit gives " +
                           std::to_string(cx(0) * 1e6) + " us; the collective times do not follow the model");
    }
    fit.scaleup_latency_s = cx(0);
    fit.scaleup_busbw = 1.0 / cx(1);
    fit.system.scaleup_latency = cx(0);
    fit.system.scaleup_busbw_efficiency = std::min(1.0, fit.scaleup_busbw / base.scaleup_bandwidth);
  }
  Eigen::Vector2d g[2] = {{0, 0}, {0, 0}};
  size_t g_rows[2] = {0, 0};
  const char* dtypes[2] = {"bf16", "fp8"};
  for (int d = 0; d < 2; ++d) {
    std::vector<std::array<double, 3>> rows;
    for (const auto& p : points) {
      if (p.kind == "gemm" && p.op == dtypes[d] && p.n >= 2048) rows.push_back({1.0, p.flop, p.seconds});
    }
    g_rows[d] = rows.size();
    if (rows.size() >= 3) g[d] = FitRelative(rows);
  }
  const double mamf = base.gpu.bf16_flops * base.gpu.matmul_efficiency_bf16;
  if (g[0](1) > 0) {
    fit.bf16_rate = 1.0 / g[0](1);
    fit.system.compute_efficiency = std::min(1.0, base.compute_efficiency * fit.bf16_rate / mamf);
  }
  if (g[1](1) > 0) fit.fp8_rate = 1.0 / g[1](1);
  // The written system file must load: its efficiencies in hwdb's (0.01, 1].
  const std::pair<const char*, double> efficiencies[] = {
      {"compute_efficiency", fit.system.compute_efficiency},
      {"scaleup_busbw_efficiency", fit.system.scaleup_busbw_efficiency}};
  for (const auto& [key, value] : efficiencies) {
    if (!(value > kMinEfficiency)) {
      std::ostringstream os;
      os << "expected measurements giving a " << key << " above " << kMinEfficiency << " (hwdb's range ("
         << kMinEfficiency << ", 1]), the fit gives " << value << "; the times are far slower than the model expects";
      throw InputError(all, "MEASUREMENTS", os.str());
    }
  }
  if (coll.empty() && fit.bf16_rate == 0) {
    throw InputError(all, "MEASUREMENTS",
                     "expected at least 3 scale-up collective points (one node, >= 1 MiB) or at least 3 bf16 GEMM "
                     "points (min(m,n,k) >= 2048) to fit; found " + Count(n_collective, "collective point") + " (" +
                         std::to_string(coll.size()) + " usable) and " + Count(n_bf16, "bf16 GEMM point") + " (" +
                         std::to_string(g_rows[0]) + " with min(m,n,k) >= 2048)");
  }

  // Where each constant comes from, in the order of the system file.
  const SystemSpec& s = fit.system;
  const std::string coll_basis = "one-node collectives of >= 1 MiB";
  const std::string no_coll =
      n_collective == 0 ? "no collective measurements"
                        : "none of the " + Count(n_collective, "collective measurement") + " is one-node with >= 1 MiB";
  if (coll.empty()) {
    fit.constants.push_back(Kept("scaleup_latency_us", base.scaleup_latency, kMicro, no_coll));
  } else if (latency_fell_back) {
    fit.constants.push_back(Kept("scaleup_latency_us", base.scaleup_latency, kMicro,
                                 "the " + Count(coll.size(), "measurement") + " (" + coll_basis +
                                     ") give no positive latency (messages too large to resolve it)"));
  } else {
    fit.constants.push_back(Fitted("scaleup_latency_us", s.scaleup_latency, base.scaleup_latency, kMicro,
                                   coll.size(), coll_basis));
  }
  const std::string scaleout_why = "calibrate fits the one-node (scale-up) constants only; " +
                                   (n_multinode == 0 ? std::string("no multi-node measurements")
                                                     : Count(n_multinode, "multi-node collective measurement") +
                                                           " reported, not fitted");
  fit.constants.push_back(Kept("scaleout_latency_us", base.scaleout_latency, kMicro, scaleout_why));
  if (coll.empty()) {
    fit.constants.push_back(Kept("scaleup_busbw_efficiency", base.scaleup_busbw_efficiency, 1.0, no_coll));
  } else {
    std::string basis = coll_basis + ": busbw " + Fixed(fit.scaleup_busbw / 1e9, 1) + " GB/s of the " +
                        Fixed(base.scaleup_bandwidth / 1e9, 0) + " GB/s scaleup_gbps_per_gpu";
    if (fit.scaleup_busbw > base.scaleup_bandwidth) basis += ", clamped to 1";
    fit.constants.push_back(Fitted("scaleup_busbw_efficiency", s.scaleup_busbw_efficiency,
                                   base.scaleup_busbw_efficiency, 1.0, coll.size(), basis));
  }
  fit.constants.push_back(Kept("scaleout_busbw_efficiency", base.scaleout_busbw_efficiency, 1.0, scaleout_why));
  if (fit.bf16_rate > 0) {
    std::string basis = "bf16 GEMMs with min(m,n,k) >= 2048: " + Fixed(fit.bf16_rate / 1e12, 0) +
                        " TFLOP/s against the MAMF " + Fixed(mamf / 1e12, 0) +
                        " TFLOP/s (bf16 peak x matmul_efficiency_bf16), times the base value";
    if (base.compute_efficiency * fit.bf16_rate / mamf > 1.0) basis += ", clamped to 1";
    fit.constants.push_back(Fitted("compute_efficiency", s.compute_efficiency, base.compute_efficiency, 1.0,
                                   g_rows[0], basis));
  } else {
    std::string why = n_bf16 == 0 ? "no bf16 GEMM measurements"
                      : g_rows[0] < 3 ? Count(n_bf16, "bf16 GEMM measurement") + ", " + std::to_string(g_rows[0]) +
                                            " with min(m,n,k) >= 2048 (3 needed)"
                                      : "the " + Count(g_rows[0], "bf16 GEMM measurement") +
                                            " with min(m,n,k) >= 2048 give no positive rate";
    fit.constants.push_back(Kept("compute_efficiency", base.compute_efficiency, 1.0, why));
  }

  double ss = 0;
  int nfit = 0;
  for (const auto& p : points) {
    CalibrationResidual r;
    r.point = p;
    if (p.kind == "collective") {
      if (coll.empty()) continue;
      r.predicted = Steps(p.op, p.n) * cx(0) + p.bytes * BusFactor(p.op, p.n) * cx(1);
      r.fitted = p.nodes == 1 && p.bytes >= (1 << 20);
    } else {
      const int d = p.op == "fp8" ? 1 : 0;
      if (g[d](1) <= 0) continue;
      r.predicted = g[d](0) + p.flop * g[d](1);
      r.fitted = p.n >= 2048;
    }
    r.residual = r.predicted / p.seconds - 1.0;
    if (r.fitted) {
      ss += r.residual * r.residual;
      ++nfit;
    }
    fit.residuals.push_back(r);
  }
  fit.fitted_points = nfit;
  fit.rms_residual = nfit ? std::sqrt(ss / nfit) : 0.0;
  return fit;
}

namespace {

// `si` in a system file's unit (hwdb_parse.cpp reads it back as value x `unit`): 6 significant
// digits for a fitted value; for a kept one the fewest digits (6 or more) that read back as
// exactly `si`, so that a constant no measurement covered loads back unchanged.
std::string FileValue(double si, double unit, bool exact) {
  const double x = si / unit;
  for (int digits = 6; digits <= 17; ++digits) {
    std::ostringstream os;
    os.precision(digits);
    os << x;
    if (!exact || std::strtod(os.str().c_str(), nullptr) * unit == si || digits == 17) return os.str();
  }
  return "";  // not reached
}

std::string MegatronFitNote(const CalibrationFit& fit) {
  return "megatron_time_fit of " + fit.base_name +
         " not carried over (`meshplan validate --fit` fitted it against the base constants); the calibrated "
         "system has the unfitted Megatron-Core step-time model until `meshplan validate --fit` refits it";
}

}  // namespace

std::string CalibratedConstantsTable(const CalibrationFit& fit) {
  std::ostringstream t;
  char line[160];
  std::snprintf(line, sizeof line, "%-26s %12s %12s  %s\n", "constant", "value", fit.base_name.c_str(), "source");
  t << line;
  for (const CalibratedConstant& c : fit.constants) {
    std::snprintf(line, sizeof line, "%-26s %12.6g %12.6g  ", c.key.c_str(), c.value / c.unit, c.prior / c.unit);
    t << line << c.Label(fit.base_name) << "\n";
  }
  if (fit.dropped_megatron_fit) t << MegatronFitNote(fit) << "\n";
  return t.str();
}

std::string CalibratedSystemYaml(const CalibrationFit& fit, const std::vector<std::string>& sources) {
  const SystemSpec& s = fit.system;
  std::ostringstream y;
  y.precision(6);
  y << "# " << s.display_name << ", calibrated by `meshplan calibrate` (least squares, Eigen) from " << fit.base_name
    << " and:\n";
  for (const auto& f : sources) y << "#   " << f << "\n";
  y << "# fit:";
  if (fit.scaleup_busbw > 0) {
    y << " scale-up latency " << fit.scaleup_latency_s * 1e6 << " us/step, busbw " << fit.scaleup_busbw / 1e9
      << " GB/s,";
  }
  if (fit.bf16_rate > 0) y << " bf16 large-GEMM rate " << fit.bf16_rate / 1e12 << " TFLOP/s,";
  if (fit.fp8_rate > 0) y << " fp8 " << fit.fp8_rate / 1e12 << " TFLOP/s,";
  y << " RMS relative residual " << fit.rms_residual << " over " << fit.fitted_points << " points\n";
  if (fit.dropped_megatron_fit) y << "# " << MegatronFitNote(fit) << "\n";
  y << "display_name: " << s.display_name << " (calibrated)\n";
  y << "gpu: " << s.gpu.name << "\n";
  y << "gpus_per_node: " << s.gpus_per_node << "\n";
  y << "scaleup_domain_gpus: " << s.scaleup_domain_gpus << "\n";
  y << "scaleup_gbps_per_gpu: " << FileValue(s.scaleup_bandwidth, 1e9, true) << "\n";
  y << "nics_per_node: " << s.nics_per_node << "\n";
  y << "nic_gbit: " << FileValue(s.nic_bandwidth, 1.25e8, true) << "\n";
  for (const CalibratedConstant& c : fit.constants) {
    y << c.key << ": " << FileValue(c.value, c.unit, !c.fitted()) << "   # " << c.Label(fit.base_name) << "\n";
  }
  return y.str();
}

bool MeasuredOnGpu(const std::string& measured, const GpuSpec& gpu) {
  auto words = [](const std::string& text) {
    std::vector<std::string> out;
    std::string w;
    for (char ch : text + " ") {
      if (std::isalnum(static_cast<unsigned char>(ch))) {
        w += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      } else if (!w.empty()) {
        out.push_back(w);
        w.clear();
      }
    }
    return out;
  };
  std::string model;
  for (const std::string& w : words(measured)) {
    if (w != "nvidia" && w != "amd" && w != "instinct" && w != "tesla") {
      model = w;
      break;
    }
  }
  if (model.empty()) return true;
  for (const std::string& text : {gpu.display_name, gpu.name}) {
    for (const std::string& w : words(text)) {
      if (w == model) return true;
    }
  }
  return false;
}

void RefuseOtherGpu(const std::vector<CalibrationPoint>& points, const SystemSpec& base, const std::string& system_arg) {
  for (const CalibrationPoint& p : points) {
    if (!MeasuredOnGpu(p.gpu, base.gpu)) {
      throw InputError({p.file, 1, 1}, "environment.gpu",
                       "expected measurements of the base system's GPU, " + base.gpu.display_name + " (--system " +
                           system_arg + "), found " + p.gpu + "; calibrate the system of the GPU that was measured");
    }
  }
}

}  // namespace meshplan
