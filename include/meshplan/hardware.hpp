#pragma once
/// \file hardware.hpp
/// GPUs and systems of the hardware database hwdb/ (hwdb/gpus/*.yaml, hwdb/systems/*.yaml).
/// Units inside meshplan are SI: bytes, bytes/s, FLOP/s, seconds. The YAML files use the
/// published units (GB, TB/s, TFLOP/s, GB/s, Gb/s, microseconds) and the loader converts.

#include <string>
#include <vector>

namespace meshplan {

/// One accelerator. Rates are dense (no sparsity).
struct GpuSpec {
  std::string name;             ///< file stem, e.g. "h100-sxm"
  std::string display_name;     ///< e.g. "NVIDIA H100 SXM5 80GB"
  double bf16_flops = 0;        ///< FLOP/s, dense BF16 peak
  double fp8_flops = 0;         ///< FLOP/s, dense FP8 peak; 0 if unsupported
  double fp4_flops = 0;         ///< FLOP/s, dense FP4 peak; 0 if unsupported
  double fp32_flops = 0;        ///< FLOP/s, FP32 peak on the CUDA cores (no TF32); 0 if not known
  double memory_bytes = 0;      ///< HBM capacity in bytes as the framework sees it
  double hbm_bandwidth = 0;     ///< bytes/s
  double matmul_efficiency_bf16 = 0;  ///< best achievable GEMM rate / bf16 peak (MAMF)
  double matmul_efficiency_fp8 = 0;   ///< best achievable GEMM rate / fp8 peak (MAMF)
  /// torch.cuda.get_device_capability() as major + minor/10 (H100 9.0, B200 10.0, B300 10.3;
  /// ROCm reports MI300X as 9.4). Decides the framework settings that depend on the GPU
  /// generation: Megatron's CUDA_DEVICE_MAX_CONNECTIONS rule and MXFP8 (both: major >= 10).
  double compute_capability = 0;
  /// The GPU runs ROCm, not CUDA (hwdb `platform: rocm`): libraries built for CUDA alone, DeepEP
  /// and its HybridEP branch among them, do not run on it, though ROCm's torch reports a CUDA-like
  /// compute capability.
  bool rocm = false;
  /// Blackwell or newer (compute capability major >= 10).
  bool BlackwellOrNewer() const { return compute_capability >= 10.0; }
};

/// Fitted constants of the Megatron-Core step-time model (planner/cost/time_megatron.cpp), per
/// system: each scales one physical term computed at the hardware's datasheet rates. At most
/// five apply to one (system, precision): the GEMM factor of that precision, memory_bound and
/// kernel_overhead. Fitted by least squares (Eigen) on published Megatron-Bridge runs by
/// `meshplan validate --fit` (planner/accuracy/megatron_fit.cpp) and stored in the system's YAML
/// under `megatron_time_fit:` with the fit's residuals. Defaults (fitted = false) are the
/// unfitted physical model.
struct MegatronTimeFit {
  bool fitted = false;
  double gemm_bf16 = 1.0;  ///< GEMM time / (FLOP / (bf16 peak · MAMF efficiency)), dimensionless
  double gemm_fp8 = 1.0;   ///< same for FP8 / MXFP8 GEMMs at the FP8 peak
  double gemm_fp4 = 1.0;   ///< same for NVFP4 GEMMs at the FP4 peak
  double memory_bound = 1.0;     ///< elementwise / norm / permute time / (bytes / HBM bandwidth)
  double kernel_overhead = 4e-6; ///< seconds of fill-and-drain per kernel (prior: ~4 us)
  int rows = 0;                  ///< published rows the fit used
  double residual_median = 0;    ///< median |relative step-time residual| of the fit
  double residual_p90 = 0;       ///< 90th percentile of the same
  /// Unfitted systems (no megatron_time_fit): whose fitted constants they price with
  /// (LoadSystem: the embedded systems of the same GPU compute capability, else the median
  /// of every embedded fitted system), e.g. "dgx-h100 (same compute capability 9.0)"; empty
  /// when fitted or when nothing was borrowed (the defaults above).
  std::string borrowed_from;
  /// The unfitted physical model (cost::MegatronPhysicalFit: no system's fit applies, its
  /// GPU's generation constants instead); false when fitted or borrowed.
  bool physical = false;
};

/// Efficiencies of a hardware file (matmul_efficiency_*, *_busbw_efficiency, compute_efficiency)
/// are plausible in (kMinEfficiency, 1]; below, every step is priced as taking ages.
inline constexpr double kMinEfficiency = 0.01;

/// A system: nodes of identical GPUs, a scale-up (NVLink/NVSwitch) domain and a
/// scale-out (InfiniBand/RoCE) network of one NIC rail per GPU or fewer.
struct SystemSpec {
  std::string name;                  ///< file stem, e.g. "dgx-h100"
  std::string display_name;
  GpuSpec gpu;
  int gpus_per_node = 0;
  int scaleup_domain_gpus = 0;       ///< GPUs sharing one NVLink domain (8 on DGX, 72 on NVL72)
  double scaleup_bandwidth = 0;      ///< bytes/s per GPU, one direction (NVLink4: 450e9)
  double scaleup_latency = 0;        ///< seconds per collective step inside the domain
  int nics_per_node = 0;             ///< compute NICs (storage NICs excluded)
  double nic_bandwidth = 0;          ///< bytes/s per NIC, one direction (400 Gb/s -> 50e9)
  double scaleout_latency = 0;       ///< seconds per collective step across nodes
  double scaleup_busbw_efficiency = 0;   ///< measured large-message busbw / scaleup_bandwidth
  double scaleout_busbw_efficiency = 0;  ///< measured large-message busbw / NIC line rate
  double compute_efficiency = 0;     ///< end-to-end achieved fraction of the matmul rate
                                     ///< for large GEMMs (used by the cost model)
  MegatronTimeFit megatron_fit;      ///< Megatron-Core step-time constants (unfitted: defaults)
  /// Scale-out bandwidth each GPU gets, bytes/s, one direction.
  double NicBandwidthPerGpu() const { return nic_bandwidth * nics_per_node / gpus_per_node; }
};

/// Parses one GPU YAML held in `text` (`filename` for messages). Throws InputError.
GpuSpec ParseGpu(const std::string& text, const std::string& filename);

/// Throws InputError naming `--hwdb` unless `hwdb_dir` is empty (the embedded database) or a
/// directory.
void CheckHwdbDir(const std::string& hwdb_dir);

/// Loads a system by name (hwdb/systems/NAME.yaml, from `hwdb_dir` if given, else the
/// embedded database) or by path to a system YAML. The system's `gpu:` names a file of
/// hwdb/gpus/ in the same database. A system without megatron_time_fit prices with the
/// physical constants of its GPU generation (ApplyUnfittedMegatronFit). Throws InputError for
/// an unknown name (listing the known ones) or a malformed file (file, line, field).
SystemSpec LoadSystem(const std::string& name_or_path, const std::string& hwdb_dir = "");

/// For a system without its own megatron_time_fit:
///   - when an embedded system with a fit has the same GPU die (the same compute capability and
///     the same dense BF16 peak: DGX H200's H200 and DGX H100's H100 SXM, which share SMs and
///     clocks and differ in HBM), that system's fitted constants (BorrowMegatronFitFrom over
///     those systems): the fit measures what the die sustains under Megatron-Core, and the
///     memory-bound constant multiplies the ideal HBM time at the system's own bandwidth;
///   - otherwise the physical constants of its GPU generation (cost::MegatronPhysicalFit: GEMMs
///     at the measured sustained 1/1.15 (BF16) and 1/1.20 (FP8, FP4) of the GPU file's own MAMF,
///     elementwise kernels at the measured 0.674 of its HBM bandwidth, 4 us per kernel), instead
///     of another generation's fitted constants, which carry what that system's rows miss: on the
///     published DGX A100 runs of tests/data/published_dense_runs.csv the median |error| is 7.0%
///     with these constants and 27.1% with the median of the fitted systems' (docs/accuracy.md).
///     Sets MegatronTimeFit::borrowed_from to "the physical model".
/// `fitted` stays false. No-op when fitted.
void ApplyUnfittedMegatronFit(SystemSpec& system);

/// One fitted system's constants, as BorrowMegatronFitFrom borrows from them: the system's
/// name (named in MegatronTimeFit::borrowed_from), its GPU's compute capability and its fit.
struct FittedSystemConstants {
  std::string name;
  double compute_capability = 0;
  MegatronTimeFit fit;
  double bf16_flops = 0;  ///< FLOP/s, its GPU's dense BF16 peak (0: not known)
};
/// The rule unfitted systems followed before ApplyUnfittedMegatronFit, kept as validate
/// --transfer's "LOSO borrow" column: the median per constant over the entries of `fitted`
/// of the same compute capability as `system`'s GPU, else over all of them; sets
/// MegatronTimeFit::borrowed_from. No-op when `system` is fitted or `fitted` is empty.
void BorrowMegatronFitFrom(SystemSpec& system, const std::vector<FittedSystemConstants>& fitted);

/// The YAML text of the system file LoadSystem(`name_or_path`, `hwdb_dir`) reads (the path's,
/// `hwdb_dir`/systems/NAME.yaml, or the embedded hwdb/systems/NAME.yaml), as written. Throws
/// InputError as LoadSystem does.
std::string SystemYamlText(const std::string& name_or_path, const std::string& hwdb_dir = "");

/// Loads a GPU by name from `hwdb_dir`/gpus if given, then from the embedded hwdb/gpus/. Throws
/// InputError.
GpuSpec LoadGpu(const std::string& name, const std::string& hwdb_dir = "");

/// Names of the systems / GPUs of the embedded database, sorted; with `hwdb_dir` those of its
/// systems/ (InputError on --hwdb when it has none), and of its gpus/ with the embedded GPUs
/// (a system's GPU falls back to them, LoadSystem).
std::vector<std::string> ListSystems(const std::string& hwdb_dir = "");
std::vector<std::string> ListGpus(const std::string& hwdb_dir = "");

}  // namespace meshplan
