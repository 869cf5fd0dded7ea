// The rule registry: every AutoModel rule, in check order (mesh, then features, then batch;
// batch_sizes_positive precedes the pipeline rules that divide by pp_microbatch_size).
#include <algorithm>
#include <vector>

#include "rules/rule_util.hpp"

namespace meshplan {
namespace {

std::vector<Rule> BuildRegistry() {
  std::vector<Rule> all;
  for (auto part : {rules::MeshRules(), rules::ParallelRules(), rules::BatchRules(), rules::PipelineRules()}) {
    all.insert(all.end(), part.begin(), part.end());
  }
  // Stable: topic order is kept inside each stage.
  std::stable_sort(all.begin(), all.end(), [](const Rule& a, const Rule& b) { return a.stage < b.stage; });
  return all;
}

const std::vector<Rule>& Registry() {
  static const std::vector<Rule> registry = BuildRegistry();
  return registry;
}

}  // namespace

std::span<const Rule> AutoModelRules() { return Registry(); }

const Rule* FirstFailure(const RuleContext& ctx) {
  for (const Rule& r : Registry()) {
    if (!r.check(ctx)) return &r;
  }
  return nullptr;
}

const Rule* FirstFailureAtStage(const RuleContext& ctx, RuleStage stage) {
  for (const Rule& r : Registry()) {
    if (r.stage == stage && !r.check(ctx)) return &r;
  }
  return nullptr;
}

std::vector<const Rule*> AllFailures(const RuleContext& ctx) {
  std::vector<const Rule*> out;
  // A failed mesh-axis check would make later arithmetic meaningless (division by zero).
  for (const Rule& r : Registry()) {
    if (!r.check(ctx)) {
      out.push_back(&r);
      if (std::string_view(r.name) == "axes_positive" || std::string_view(r.name) == "batch_sizes_positive") break;
    }
  }
  return out;
}

const Rule* FindRule(const std::string& name) {
  for (const Rule& r : Registry()) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

}  // namespace meshplan
