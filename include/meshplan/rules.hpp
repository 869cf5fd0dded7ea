#pragma once
/// \file rules.hpp
/// Validity rules of NeMo AutoModel (main / v0.5; automodel.md section 6) and of
/// Megatron-Bridge / Megatron-Core (megatron.md section 2), each a named check citing the
/// framework file it comes from. The layout's `framework` selects the rule set. The rule engine is the single authority
/// on validity: the planner enumerates, the rules decide.

#include <span>
#include <string>
#include <vector>

#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"

namespace meshplan {

/// AutoModel release whose rules apply. Current (v0.5 / main) is the default.
enum class AutoModelVersion {
  kV05,  ///< v0.5.0 / main (2026-08): EP divides dp*cp*tp; selective AC with fsdp2 and ddp
  kV04,  ///< v0.3 / v0.4: EP divides dp*cp and needs tp == 1; selective AC fsdp2 only
};

/// Megatron-Bridge release whose rules apply. Only one rule differs between the two
/// (megatron.md 2.2 and 7, ms-swift #8219): `mb_tp_query_groups`.
enum class MBridgeVersion {
  kMain,     ///< main (2026-08) on Megatron-Core >= 0.16: num_query_groups % tp == 0 or tp % num_query_groups == 0
  kCore015,  ///< a release on Megatron-Core <= 0.15: num_query_groups % tp == 0 (no KV-head replication)
};

/// Everything a rule may look at.
struct RuleContext {
  const ModelSpec& model;
  const TrainSetup& setup;
  const Layout& layout;
  AutoModelVersion version = AutoModelVersion::kV05;
  MBridgeVersion mb_version = MBridgeVersion::kMain;
  /// The system, for rules that depend on the GPU generation (CUDA_DEVICE_MAX_CONNECTIONS on
  /// pre-Blackwell GPUs); nullptr = unknown, and such rules pass.
  const SystemSpec* system = nullptr;
};

/// Which layout fields a rule reads, so the search can test a rule as soon as those
/// fields are chosen and skip the whole subtree below a failure.
enum class RuleStage {
  kMesh,      ///< strategy and axis sizes (tp, pp, cp, ep, dp, dp_replicate)
  kFeatures,  ///< + sequence_parallel, recompute
  kBatch,     ///< + local batch, micro-batch, pipeline schedule and stages
};

/// One rule. `check` is pure and allocation-free; `explain` builds the message (both
/// values, spelled as the recipe keys, and a fix where there is one) only on failure.
struct Rule {
  const char* name;     ///< stable snake_case id, used in counts and tests
  const char* source;   ///< framework file and function the rule comes from
  RuleStage stage;      ///< the latest-chosen field group the rule reads
  bool (*check)(const RuleContext&);
  std::string (*explain)(const RuleContext&);
  /// Reads dp_size (or divides by it). false: also evaluated when the mesh does not divide
  /// the world and dp cannot be inferred (AllFailures).
  bool needs_dp = true;
};

/// All AutoModel rules, in the order they are checked (mesh rules first).
std::span<const Rule> AutoModelRules();

/// All Megatron-Bridge rules (names start with `mb_`), in check order (mesh rules first).
/// Sources: megatron.md section 2 (2.13 is the checklist).
std::span<const Rule> MegatronBridgeRules();

/// Megatron conditions that the framework only warns about (empty for AutoModel layouts):
/// CUDA_DEVICE_MAX_CONNECTIONS != 1 before Blackwell with TP or CP > 1 and neither FSDP nor
/// EP overlap (asserted by Megatron-LM's own argument parser, arguments.py:1452-1479, not by
/// Megatron-Bridge), and TP > 1 with EP > 1 without sequence parallelism
/// (model_parallel_config.py:561-566). Each string is the message with its source.
std::vector<std::string> MegatronWarnings(const RuleContext& ctx);

/// The rule set of `framework`.
std::span<const Rule> RulesFor(Framework framework);

/// Every function below checks the rule set of `ctx.layout.framework`.
/// The first rule `ctx` fails, or nullptr if the layout is valid.
const Rule* FirstFailure(const RuleContext& ctx);

/// The first failing rule among those of exactly `stage`, or nullptr.
const Rule* FirstFailureAtStage(const RuleContext& ctx, RuleStage stage);

/// Every rule `ctx` fails. The rules after a failed axes_positive / batch_sizes_positive /
/// mb_axes_positive are skipped (their arithmetic would divide by zero), except that when the
/// only axis below 1 is an AutoModel dp_size that cannot be inferred (the world is not a
/// multiple of tp * cp * pp), the rules that do not read dp (Rule::needs_dp false) are still
/// evaluated, so that every broken one is listed.
std::vector<const Rule*> AllFailures(const RuleContext& ctx);

/// The rule named `name` in either rule set, or nullptr.
const Rule* FindRule(const std::string& name);

}  // namespace meshplan
