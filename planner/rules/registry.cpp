// The rule registry: every AutoModel rule, in check order (mesh, then features, then batch;
// batch_sizes_positive precedes the pipeline rules that divide by pp_microbatch_size), and
// the functions that check a layout against its framework's table.
#include <algorithm>
#include <array>
#include <vector>

#include "meshplan/framework.hpp"
#include "rules/rule_util.hpp"

namespace meshplan {
namespace {

std::vector<Rule> BuildRegistry() {
  std::vector<Rule> all;
  for (auto part : {rules::MeshRules(), rules::ParallelRules(), rules::BatchRules(), rules::PipelineRules(),
                    rules::HfModelRules(), rules::AutoModelGdnRules(), rules::AutoModelDsv4Rules(),
                    rules::AutoModelNemotronHRules()}) {
    all.insert(all.end(), part.begin(), part.end());
  }
  rules::SortTable(all);
  return all;
}

const std::vector<Rule>& AutoModelRegistry() {
  static const std::vector<Rule> registry = BuildRegistry();
  return registry;
}

// The error rows of the layout's framework.
std::span<const Rule> Registry(const RuleContext& ctx) { return RulesFor(ctx.layout.framework); }

}  // namespace

namespace rules {

void SortTable(std::vector<Rule>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Rule& a, const Rule& b) {
    if (a.severity != b.severity) return a.severity < b.severity;
    return a.severity == Severity::kError && a.stage < b.stage;
  });
}

std::span<const Rule> RowsOf(std::span<const Rule> table, Severity severity) {
  const auto begin =
      std::partition_point(table.begin(), table.end(), [&](const Rule& r) { return r.severity < severity; });
  const auto end = std::partition_point(begin, table.end(), [&](const Rule& r) { return r.severity == severity; });
  return {begin, end};
}

}  // namespace rules

std::span<const Rule> AutoModelRules() { return AutoModelRegistry(); }

std::span<const Rule> RulesFor(Framework framework, Severity severity) {
  // The last request's rows, per thread: the search asks at every layout it tests (the tables
  // are static, so the span stays valid).
  thread_local bool known = false;
  thread_local Framework last_framework{};
  thread_local Severity last_severity{};
  thread_local std::span<const Rule> last;
  if (known && framework == last_framework && severity == last_severity) return last;
  last = rules::RowsOf(FrameworkOf(framework).rules(), severity);
  last_framework = framework;
  last_severity = severity;
  known = true;
  return last;
}

std::vector<const Rule*> Findings(const RuleContext& ctx, Severity severity) {
  std::vector<const Rule*> out;
  for (const Rule& r : RulesFor(ctx.layout.framework, severity)) {
    if (!r.check(ctx)) out.push_back(&r);
  }
  return out;
}

std::vector<std::string> FindingMessages(const RuleContext& ctx, Severity severity) {
  std::vector<std::string> out;
  for (const Rule* r : Findings(ctx, severity)) out.push_back(r->explain(ctx) + " [" + r->source + "]");
  return out;
}

const Rule* FirstFailure(const RuleContext& ctx) {
  for (const Rule& r : Registry(ctx)) {
    if (!r.check(ctx)) return &r;
  }
  return nullptr;
}

const Rule* FirstFailureAtStage(const RuleContext& ctx, RuleStage stage) {
  // Both registries are sorted by stage (stable_sort in their builders): each stage's rows are
  // one run, found once per framework and thread (the search asks at every layout it tests).
  constexpr size_t kStages = static_cast<size_t>(RuleStage::kBatch) + 1;
  thread_local bool known = false;
  thread_local Framework last_framework{};
  thread_local std::array<std::span<const Rule>, kStages> runs;
  if (!known || ctx.layout.framework != last_framework) {
    const std::span<const Rule> rules = Registry(ctx);
    for (size_t k = 0; k < kStages; ++k) {
      const RuleStage s = static_cast<RuleStage>(k);
      const auto begin = std::partition_point(rules.begin(), rules.end(), [s](const Rule& r) { return r.stage < s; });
      const auto end = std::partition_point(begin, rules.end(), [s](const Rule& r) { return r.stage == s; });
      runs[k] = {begin, end};
    }
    last_framework = ctx.layout.framework;
    known = true;
  }
  for (const Rule& r : runs[static_cast<size_t>(stage)]) {
    if (!r.check(ctx)) return &r;
  }
  return nullptr;
}

std::vector<const Rule*> RulesApplyingAtStage(Framework framework, RuleStage stage, const ModelSpec& model) {
  std::vector<const Rule*> out;
  for (const Rule& r : RulesFor(framework)) {
    if (r.stage == stage && (r.applies == nullptr || r.applies(model))) out.push_back(&r);
  }
  return out;
}

std::vector<const Rule*> AllFailures(const RuleContext& ctx) {
  std::vector<const Rule*> out;
  // A failed mesh-axis check would make later arithmetic meaningless (division by zero); but
  // dp 0 alone (explain's inferred dp of a world that tp * cp * pp does not divide) leaves the
  // rules that do not read dp meaningful.
  const Layout& l = ctx.layout;
  const bool only_dp_unknown =
      l.dp == 0 && l.tp >= 1 && l.pp >= 1 && l.cp >= 1 && l.ep >= 1 && l.dp_replicate >= 1;
  bool dp_unknown = false;
  for (const Rule& r : Registry(ctx)) {
    if (dp_unknown && r.needs_dp) continue;
    if (!r.check(ctx)) {
      out.push_back(&r);
      const std::string_view n = r.name;
      if (n == "axes_positive" && only_dp_unknown) {
        dp_unknown = true;
      } else if (n == "axes_positive" || n == "batch_sizes_positive" || n == "mb_axes_positive") {
        break;
      }
    }
  }
  return out;
}

const Rule* FindRule(const std::string& name) {  // every row, findings included
  for (const Rule& r : AutoModelRules()) {
    if (name == r.name) return &r;
  }
  for (const Rule& r : MegatronBridgeRules()) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

}  // namespace meshplan
