// Parsing of hwdb/gpus/*.yaml and hwdb/systems/*.yaml into GpuSpec / SystemSpec.
// The files use published units (TFLOP/s, GiB, TB/s, GB/s, Gb/s, microseconds); everything
// is converted to SI here and only here. Schema: hwdb/README.md.

#include <limits>
#include <sstream>

#include "data/yaml_util.hpp"
#include "hardware/hwdb_parse.hpp"

namespace meshplan::hardware {
namespace {

// Unit conversions, exactly as include/meshplan/hardware.hpp documents them.
constexpr double kTflops = 1e12;         // 1 TFLOP/s in FLOP/s
constexpr double kGib = 1073741824.0;    // 2^30 bytes
constexpr double kTBps = 1e12;           // 1 TB/s in bytes/s
constexpr double kGBps = 1e9;            // 1 GB/s in bytes/s
constexpr double kGbit = 1.25e8;         // 1 Gb/s in bytes/s
constexpr double kMicro = 1e-6;          // 1 us in seconds

// Sane upper bounds, in the file's units. Far above any real part, low enough to catch a
// value written in the wrong unit (e.g. FLOP/s instead of TFLOP/s).
constexpr double kMinTflops = 1;         // below any tensor-core GPU (A100: 312)
constexpr double kMaxTflops = 100000;    // 100 PFLOP/s per GPU
constexpr double kMaxGib = 16384;        // 16 TiB of HBM
constexpr double kMaxTBps = 1000;
// Floors of the bandwidths: below them a step is priced in ages (nic_gbit: 1e-300 printed a
// 1e62-second DP time). 1 Gb/s Ethernet, a PCIe 1.0 x1 lane's 0.25 GB/s, 1 GiB and 10 GB/s
// of memory are below any training system's.
constexpr double kMinGbit = 1;
constexpr double kMinGBps = 0.25;
constexpr double kMinGib = 1;
constexpr double kMinTBps = 0.01;
constexpr double kMaxGBps = 100000;      // 100 TB/s per GPU of scale-up
constexpr double kMaxGbit = 100000;      // 100 Tb/s per NIC
constexpr double kMaxLatencyUs = 100000; // 0.1 s per step
constexpr int kMaxGpusPerNode = 1024;
constexpr int kMaxDomainGpus = 1 << 20;

/// `v` as the default ostream format prints it ("1.5", "-450", "9.89e+14").
std::string Str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// File stem: "a/b/h100-sxm.yaml" -> "h100-sxm".
std::string Stem(const std::string& filename) {
  std::string base = filename.substr(filename.find_last_of('/') + 1);
  size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

/// The plausible values of a number: (min, max] when `min_open`, else [min, max].
struct Bounds {
  double min = 0;
  bool min_open = true;
  double max = 0;
};

/// A required finite number within `b` (or 0 when `zero_ok`), described as `what` ("dense BF16
/// peak in TFLOP/s") in messages. Missing and out-of-range values throw.
double Number(yamlutil::MapReader& r, const std::string& key, Bounds b, const std::string& what,
              bool zero_ok = false) {
  // Built by append: GCC 12 warns falsely (-Wrestrict) on `const char* + std::string` here.
  std::string interval(b.min_open ? "(" : "[");
  interval.append(Str(b.min)).append(", ").append(Str(b.max)).append("]");
  // [0, max] rather than "0 or (0, max]".
  const std::string range = !zero_ok ? interval : b.min == 0 ? "[0, " + Str(b.max) + "]" : "0 or " + interval;
  if (!r.HasValue(key)) {
    r.Fail(key, r.Has(key) ? "expected " + what + ", a number in " + range + ", found null"
                           : "missing; expected " + what + ", a number in " + range);
  }
  double v = r.Num(key, std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max());
  const bool inside = (b.min_open ? v > b.min : v >= b.min) && v <= b.max;
  if (!inside && !(v == 0 && zero_ok)) {
    r.Fail(key, "expected " + what + ", a number in " + range + ", found " + Str(v));
  }
  return v;
}

/// A number in (0, max].
double Number(yamlutil::MapReader& r, const std::string& key, double max, const std::string& what) {
  return Number(r, key, Bounds{0, true, max}, what);
}

/// An optional peak in TFLOP/s; absent, null or 0 reads as 0 (unsupported).
double OptionalTflops(yamlutil::MapReader& r, const std::string& key, const std::string& what) {
  if (!r.HasValue(key)) return 0;
  return Number(r, key, Bounds{kMinTflops, false, kMaxTflops}, what, /*zero_ok=*/true);
}

/// An efficiency: a fraction in (0.01, 1] (1e-300 priced every step as taking forever).
double Fraction(yamlutil::MapReader& r, const std::string& key, const std::string& what) {
  return Number(r, key, Bounds{kMinEfficiency, true, 1.0}, what + " (a fraction, not a percentage)");
}

/// Parses a GPU file; see hwdb/README.md for the keys. Unknown keys are reported first (with
/// a "did you mean"), so that a misspelt key is not reported as a missing one.
GpuSpec ParseGpuText(const std::string& text, const std::string& filename) {
  YAML::Node root = yamlutil::ParseMap(text, filename);
  yamlutil::MapReader r(root, filename);
  r.Ignore({"display_name", "bf16_tflops", "fp8_tflops", "fp4_tflops", "fp32_tflops", "memory_gib", "hbm_tbps",
            "matmul_efficiency_bf16", "matmul_efficiency_fp8", "compute_capability", "platform"});
  r.RejectUnknown();

  GpuSpec g;
  g.name = Stem(filename);
  g.display_name = r.Str("display_name");
  g.bf16_flops =
      Number(r, "bf16_tflops", Bounds{kMinTflops, false, kMaxTflops}, "the dense BF16 peak in TFLOP/s") * kTflops;
  g.fp8_flops = OptionalTflops(r, "fp8_tflops", "the dense FP8 peak in TFLOP/s (0: none)") * kTflops;
  g.fp4_flops = OptionalTflops(r, "fp4_tflops", "the dense FP4 peak in TFLOP/s (0: none)") * kTflops;
  g.fp32_flops = OptionalTflops(r, "fp32_tflops", "the FP32 (non-tensor-core) peak in TFLOP/s (0: not known)") * kTflops;
  g.memory_bytes = Number(r, "memory_gib", Bounds{kMinGib, false, kMaxGib}, "the HBM capacity torch reports, in GiB") * kGib;
  g.hbm_bandwidth = Number(r, "hbm_tbps", Bounds{kMinTBps, false, kMaxTBps}, "the HBM bandwidth in TB/s") * kTBps;
  g.matmul_efficiency_bf16 = Fraction(r, "matmul_efficiency_bf16", "the BF16 MAMF / peak");
  if (g.fp8_flops > 0) {
    g.matmul_efficiency_fp8 = Fraction(r, "matmul_efficiency_fp8", "the FP8 MAMF / peak");
  } else if (r.HasValue("matmul_efficiency_fp8")) {
    r.Fail("matmul_efficiency_fp8",
           "given, but fp8_tflops is 0 or absent (no FP8); expected no matmul_efficiency_fp8, "
           "or a positive fp8_tflops");
  }
  if (r.HasValue("platform")) {
    const std::string platform = r.Str("platform");
    if (platform != "cuda" && platform != "rocm") {
      r.Fail("platform", "expected cuda or rocm, found '" + platform + "'");
    }
    g.rocm = platform == "rocm";
  }
  // Last, so that a broken file reports its first problem first.
  g.compute_capability =
      Number(r, "compute_capability", Bounds{1.0, false, 99.9},
             "torch.cuda.get_device_capability() as major.minor (9.0 for H100, 10.0 for B200)");
  // Transformer Engine runs FP8 from compute capability 8.9 and NVFP4 from 10.0 (pytorch/fp8.py
  // check_fp8_support, check_nvfp4_support): a peak below that would be planned and fail.
  if (g.fp8_flops > 0 && g.compute_capability < 8.9 - 1e-9) {
    r.Fail("fp8_tflops", "given, but compute_capability " + yamlutil::Shown(r.Get("compute_capability")) +
                             " has no FP8 (8.9 or later); expected no fp8_tflops, or the GPU's real capability");
  }
  if (g.fp4_flops > 0 && g.compute_capability < 10.0 - 1e-9) {
    r.Fail("fp4_tflops", "given, but compute_capability " + yamlutil::Shown(r.Get("compute_capability")) +
                             " has no FP4 (10.0 or later); expected no fp4_tflops, or the GPU's real capability");
  }
  return g;
}

/// The optional `megatron_time_fit:` map of a system (written by `meshplan validate --fit`).
MegatronTimeFit ParseMegatronFit(const YAML::Node& node, const std::string& filename) {
  MegatronTimeFit f;
  if (!node.IsMap()) {
    throw InputError(yamlutil::LocOf(node, filename), "megatron_time_fit",
                     "expected a map of fitted constants (gemm_bf16, gemm_fp8, gemm_fp4, memory_bound, "
                     "kernel_overhead_us, ...), found " + yamlutil::Shown(node));
  }
  yamlutil::MapReader r(node, filename, "megatron_time_fit");
  r.Ignore({"source", "residuals", "fitted"});
  // Each constant scales a physical time: between 1/20 and 20 of the datasheet estimate.
  f.gemm_bf16 = r.Num("gemm_bf16", 0.05, 20.0, 1.0);
  f.gemm_fp8 = r.Num("gemm_fp8", 0.05, 20.0, 1.0);
  f.gemm_fp4 = r.Num("gemm_fp4", 0.05, 20.0, 1.0);
  f.memory_bound = r.Num("memory_bound", 0.0, 50.0, 1.0);
  f.kernel_overhead = r.Num("kernel_overhead_us", 0.0, 1000.0, f.kernel_overhead * 1e6) * kMicro;
  f.rows = static_cast<int>(r.Int("rows", 0, 1000000, 0));
  f.residual_median = r.Num("residual_median", 0.0, 100.0, 0.0);
  f.residual_p90 = r.Num("residual_p90", 0.0, 100.0, 0.0);
  r.RejectUnknown();
  f.fitted = true;
  return f;
}

}  // namespace

/// Parses a system file and resolves its GPU through `search`; see hwdb/README.md.
SystemSpec ParseSystem(const std::string& text, const std::string& filename, const GpuSearch& search) {
  YAML::Node root = yamlutil::ParseMap(text, filename);
  yamlutil::MapReader r(root, filename);
  r.Ignore({"display_name", "gpu", "gpus_per_node", "scaleup_domain_gpus", "scaleup_gbps_per_gpu",
            "scaleup_latency_us", "nics_per_node", "nic_gbit", "scaleout_latency_us",
            "scaleup_busbw_efficiency", "scaleout_busbw_efficiency", "compute_efficiency",
            "megatron_time_fit"});
  r.RejectUnknown();

  SystemSpec s;
  if (r.HasValue("megatron_time_fit")) s.megatron_fit = ParseMegatronFit(r.Get("megatron_time_fit"), filename);
  s.name = Stem(filename);
  s.display_name = r.Str("display_name");
  std::string gpu = r.Str("gpu");
  if (!IsPlainName(gpu)) {
    r.Fail("gpu", "expected the name of a file of hwdb/gpus/ (letters, digits, '.', '-', '_'), found '" +
                      gpu + "'");
  }
  s.gpus_per_node = static_cast<int>(r.Int("gpus_per_node", 1, kMaxGpusPerNode));
  s.scaleup_domain_gpus = static_cast<int>(r.Int("scaleup_domain_gpus", 1, kMaxDomainGpus));
  if (s.scaleup_domain_gpus % s.gpus_per_node != 0) {
    r.Fail("scaleup_domain_gpus", "expected a multiple of gpus_per_node (" + std::to_string(s.gpus_per_node) +
                                      "), found " + std::to_string(s.scaleup_domain_gpus));
  }
  s.scaleup_bandwidth =
      Number(r, "scaleup_gbps_per_gpu", Bounds{kMinGBps, false, kMaxGBps}, "the scale-up bandwidth per GPU in GB/s, one direction") * kGBps;
  s.scaleup_latency =
      Number(r, "scaleup_latency_us", kMaxLatencyUs, "the scale-up latency per collective step in us") * kMicro;
  s.nics_per_node = static_cast<int>(r.Int("nics_per_node", 1, kMaxGpusPerNode));
  s.nic_bandwidth = Number(r, "nic_gbit", Bounds{kMinGbit, false, kMaxGbit}, "the line rate per NIC in Gb/s") * kGbit;
  s.scaleout_latency =
      Number(r, "scaleout_latency_us", kMaxLatencyUs, "the scale-out latency per collective step in us") * kMicro;
  s.scaleup_busbw_efficiency =
      Fraction(r, "scaleup_busbw_efficiency", "the measured scale-up busbw / scaleup_gbps_per_gpu");
  s.scaleout_busbw_efficiency = Fraction(r, "scaleout_busbw_efficiency", "the measured busbw / NIC line rate");
  s.compute_efficiency = Fraction(r, "compute_efficiency", "the achieved fraction of the MAMF matmul rate");
  s.gpu = FindGpu(gpu, search, r.Loc("gpu"), "gpu");
  return s;
}

}  // namespace meshplan::hardware

namespace meshplan {

/// Parses one GPU YAML; the GPU's name is the stem of `filename`. Throws InputError.
GpuSpec ParseGpu(const std::string& text, const std::string& filename) {
  return hardware::ParseGpuText(text, filename);
}

}  // namespace meshplan
