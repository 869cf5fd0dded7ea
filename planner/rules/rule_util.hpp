#pragma once
// Small helpers shared by the rule files.

#include <sstream>
#include <string>
#include <vector>

#include "meshplan/rules.hpp"

namespace meshplan::rules {

/// Concatenates its arguments with operator<< (messages are built only on failure).
template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Rule::needs_dp = false: the rule reads no dp_size (AllFailures evaluates it when dp is unknown).
inline constexpr bool kNoDp = false;

/// Orders a table as the registries hold it: the error rows by stage (stable, so topic order
/// is kept inside a stage: FirstFailureAtStage relies on it), then the warning rows, then the
/// silently-off rows, each of those in the order written.
void SortTable(std::vector<Rule>& rows);

/// The rows of `severity` in a table ordered by SortTable (one contiguous run).
std::span<const Rule> RowsOf(std::span<const Rule> table, Severity severity);

/// Rules of one topic, concatenated by registry.cpp in check order.
std::span<const Rule> MeshRules();
std::span<const Rule> ParallelRules();
std::span<const Rule> PipelineRules();
/// AutoModel's rules for models it trains as transformers' own modules (frameworks/automodel/rules_hf_model.cpp).
std::span<const Rule> HfModelRules();
/// AutoModel's rules for its Gated DeltaNet hybrids (frameworks/automodel/rules_gdn.cpp).
std::span<const Rule> AutoModelGdnRules();
std::span<const Rule> AutoModelDsv4Rules();  ///< DeepSeek-V4 (frameworks/automodel/rules_dsv4.cpp)
/// Nemotron-H / Nemotron 3 (frameworks/automodel/rules_nemotron_h.cpp).
std::span<const Rule> AutoModelNemotronHRules();
std::span<const Rule> BatchRules();


/// The GPU has tensor cores for the setup's precision: FP8 needs compute capability 8.9+
/// (Transformer Engine check_fp8_support; torchao float8 likewise), NVFP4 needs Blackwell
/// (check_nvfp4_support); in hwdb terms a nonzero fp8_tflops / fp4_tflops. Passes when the
/// system is unknown.
/// Whether `m` is DeepSeek-V4 (its hybrid attention and hash-routed layers have rules of their
/// own in both frameworks' tables: Rule::applies).
inline bool IsDeepseekV4(const ModelSpec& m) { return m.architecture == Architecture::kDeepseekV4; }

inline bool PrecisionSupported(const RuleContext& c) {
  if (c.system == nullptr) return true;
  if (c.setup.precision == Precision::kFp8) return c.system->gpu.fp8_flops > 0;
  if (c.setup.precision == Precision::kFp4) return c.system->gpu.fp4_flops > 0;
  return true;
}
inline std::string PrecisionSupportedMsg(const RuleContext& c) {
  return Cat(PrecisionName(c.setup.precision), " requested but ", c.system->gpu.display_name, " has no ",
             c.setup.precision == Precision::kFp4 ? "FP4" : "FP8",
             " tensor cores (the framework stops at start-up); expected bf16",
             c.setup.precision == Precision::kFp4 && c.system->gpu.fp8_flops > 0 ? " or fp8" : "");
}

}  // namespace meshplan::rules
