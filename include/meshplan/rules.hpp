#pragma once
/// \file rules.hpp
/// Validity rules of NeMo AutoModel (main / v0.5; automodel.md section 6), each a named
/// check citing the framework file it comes from. The rule engine is the single authority
/// on validity: the planner enumerates, the rules decide.

#include <span>
#include <string>
#include <vector>

#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"

namespace meshplan {

/// AutoModel release whose rules apply. Current (v0.5 / main) is the default.
enum class AutoModelVersion {
  kV05,  ///< v0.5.0 / main (2026-08): EP divides dp*cp*tp; selective AC with fsdp2 and ddp
  kV04,  ///< v0.3 / v0.4: EP divides dp*cp and needs tp == 1; selective AC fsdp2 only
};

/// Everything a rule may look at.
struct RuleContext {
  const ModelSpec& model;
  const TrainSetup& setup;
  const Layout& layout;
  AutoModelVersion version = AutoModelVersion::kV05;
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
};

/// All AutoModel rules, in the order they are checked (mesh rules first).
std::span<const Rule> AutoModelRules();

/// The first rule `ctx` fails, or nullptr if the layout is valid.
const Rule* FirstFailure(const RuleContext& ctx);

/// The first failing rule among those of exactly `stage`, or nullptr.
const Rule* FirstFailureAtStage(const RuleContext& ctx, RuleStage stage);

/// Every rule `ctx` fails.
std::vector<const Rule*> AllFailures(const RuleContext& ctx);

/// The rule named `name`, or nullptr.
const Rule* FindRule(const std::string& name);

}  // namespace meshplan
