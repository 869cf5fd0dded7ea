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

/// What it means when a rule's check fails.
enum class Severity {
  kError,        ///< the framework refuses the layout (or meshplan does not support it): invalid
  kWarning,      ///< the framework runs it but warns, or its guide says otherwise: `check` prints "warning:"
  kSilentlyOff,  ///< a requested setting the framework switches off without a word: `check` lists it
};

/// One rule. `check` is pure and allocation-free; `explain` builds the message (both
/// values, spelled as the recipe keys, and a fix where there is one) only on failure.
/// Only error rows decide validity (FirstFailure, AllFailures, the search); warning and
/// silently-off rows are findings about a layout that stays valid (Findings).
struct Rule {
  const char* name;     ///< stable snake_case id, used in counts and tests
  const char* source;   ///< framework file and function the rule comes from
  RuleStage stage;      ///< the latest-chosen field group the rule reads
  bool (*check)(const RuleContext&);
  std::string (*explain)(const RuleContext&);
  /// Reads dp_size (or divides by it). false: also evaluated when the mesh does not divide
  /// the world and dp cannot be inferred (AllFailures).
  bool needs_dp = true;
  Severity severity = Severity::kError;
  /// A condition on the model without which `check` passes for every layout (the rule is about
  /// layers the model does not have: Mamba-2, Gated DeltaNet, DeepSeek-V4 attention); nullptr:
  /// every model. The search tests only the rows that apply to its model
  /// (RulesApplyingAtStage); the other callers test every row, with the same verdicts.
  bool (*applies)(const ModelSpec&) = nullptr;
  /// (features stage) Reads a recompute or CUDA-graph field (recompute, recompute_modules,
  /// recompute_method, recompute_num_layers, cuda_graph, cuda_graph_scope): the fields in which
  /// the feature sets of a Megatron-Bridge mesh differ (Space::FeatureSetsDifferInRecomputeOnly).
  /// false: one verdict for all of a mesh's feature sets, so the search tests it on the first.
  bool reads_recompute = true;
  /// (mesh stage) Reads of the layout only tp, cp, pp and dp (with the request): one verdict for
  /// all the meshes of a walk part that fixes them (Space::PartsFixTpCpPp), so the search tests
  /// it on the part's first mesh that passes.
  bool part_axes_only = false;
};

/// `rule` restricted to the models `applies` accepts (Rule::applies). Throws nothing.
constexpr Rule ForModels(Rule rule, bool (*applies)(const ModelSpec&)) {
  rule.applies = applies;
  return rule;
}

/// `rule` (of the features stage) marked as reading no recompute or CUDA-graph field
/// (Rule::reads_recompute false). Throws nothing.
constexpr Rule ReadsNoRecompute(Rule rule) {
  rule.reads_recompute = false;
  return rule;
}

/// `rule` (of the mesh stage) marked as reading only tp, cp, pp and dp of the layout
/// (Rule::part_axes_only). Throws nothing.
constexpr Rule ReadsPartAxesOnly(Rule rule) {
  rule.part_axes_only = true;
  return rule;
}

/// The whole AutoModel table: error rows in check order (mesh, then features, then batch);
/// it has no warning or silently-off rows.
std::span<const Rule> AutoModelRules();

/// The whole Megatron-Bridge table (names start with `mb_`): the error rows in check order
/// (mesh, then features, then batch), then the warning rows, then the silently-off rows, each
/// of those in the order `check` prints them. Sources: megatron.md section 2 (2.13 is the
/// checklist). The findings rows:
///   - warning: CUDA_DEVICE_MAX_CONNECTIONS != 1 before Blackwell with TP or CP > 1 and
///     neither FSDP nor EP overlap (asserted by Megatron-LM's own argument parser,
///     arguments.py:1452-1479, not by Megatron-Bridge); TP > 1 with EP > 1 without sequence
///     parallelism (model_parallel_config.py:561-566);
///   - silently off: tp_comm_overlap without TP >= 2, SP or Transformer Engine
///     (comm_overlap.py:441-451); DP overlap with DP 1 (comm_overlap.py:562-591), and not on by
///     default without the distributed optimizer (comm_overlap.py:635-643).
std::span<const Rule> MegatronBridgeRules();

/// The rows of `framework`'s table with `severity`: by default the rules that decide validity,
/// in check order.
std::span<const Rule> RulesFor(Framework framework, Severity severity = Severity::kError);

/// The rows of `severity` that `ctx` fails (for kWarning and kSilentlyOff: what the framework
/// warns about or switches off), in table order; empty when there is none.
std::vector<const Rule*> Findings(const RuleContext& ctx, Severity severity);

/// Findings(ctx, severity) as `check` prints them: each row's message followed by its source
/// in brackets ("... [MB training/comm_overlap.py:441-451]").
std::vector<std::string> FindingMessages(const RuleContext& ctx, Severity severity);

/// Every function below checks the error rows of `ctx.layout.framework`'s table.
/// The first rule `ctx` fails, or nullptr if the layout is valid.
const Rule* FirstFailure(const RuleContext& ctx);

/// The first failing rule among those of exactly `stage`, or nullptr.
const Rule* FirstFailureAtStage(const RuleContext& ctx, RuleStage stage);

/// The error rows of `framework`'s table at exactly `stage` that apply to `model`
/// (Rule::applies), in check order: the rows FirstFailureAtStage tests less those that pass
/// for every layout of `model`, so the first failure among them is FirstFailureAtStage's.
/// Throws nothing.
std::vector<const Rule*> RulesApplyingAtStage(Framework framework, RuleStage stage, const ModelSpec& model);

/// Every rule `ctx` fails. The rules after a failed axes_positive / batch_sizes_positive /
/// mb_axes_positive are skipped (their arithmetic would divide by zero), except that when the
/// only axis below 1 is an AutoModel dp_size that cannot be inferred (the world is not a
/// multiple of tp * cp * pp), the rules that do not read dp (Rule::needs_dp false) are still
/// evaluated, so that every broken one is listed.
std::vector<const Rule*> AllFailures(const RuleContext& ctx);

/// The row named `name` in either table (any severity), or nullptr.
const Rule* FindRule(const std::string& name);

}  // namespace meshplan
