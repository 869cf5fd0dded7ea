// The valid layouts nearest to a given one, for `meshplan check`.
#include <algorithm>
#include <string>

#include "meshplan/framework.hpp"
#include "meshplan/search.hpp"
#include "search/diff.hpp"

namespace meshplan {

using search::Diff;

// Every field whose value differs between the recipe read (layout `a`) and the recipe written
// for `b` (FrameworkOps::recipe_yaml): the framework's keys, then sequence parallel and recompute.
std::vector<std::string> LayoutChanges(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup) {
  std::vector<std::string> c = FrameworkOf(a).nearest_changes(a, b, num_layers, setup);
  Diff(c, "sequence_parallel", std::string(a.sequence_parallel ? "true" : "false"),
       std::string(b.sequence_parallel ? "true" : "false"));
  Diff(c, "recompute", std::string(RecomputeName(a.recompute)), std::string(RecomputeName(b.recompute)));
  return c;
}

PlanComparison CompareWithPlan(const PlanRequest& request, const Layout& from, double step_seconds, int top_n) {
  PlanRequest req = request;
  FrameworkOf(from).nearest_request(req, from);
  req.top_n = top_n;
  req.risk_ranking = false;  // "its fastest": the planner's layouts by predicted step
  const PlanResult res = Plan(req);
  PlanComparison cmp;
  cmp.searched = top_n;
  cmp.stopped = res.stopped;
  int64_t faster = 0;
  for (const Candidate& c : res.top) faster += c.cost.step_seconds < step_seconds * (1 - 1e-9) ? 1 : 0;
  cmp.rank = faster + 1;
  cmp.beyond = faster >= int64_t(res.top.size()) && int64_t(res.top.size()) >= top_n;
  if (!res.top.empty()) {
    cmp.fastest = res.top.front();
    if (cmp.fastest->cost.step_seconds > 0) cmp.gap = step_seconds / cmp.fastest->cost.step_seconds - 1.0;
    cmp.changes = LayoutChanges(from, cmp.fastest->layout, req.model.num_layers, req.setup);
  }
  return cmp;
}

std::vector<NearbyLayout> NearestValidLayouts(const PlanRequest& request, const Layout& from, int n) {
  PlanRequest req = request;
  FrameworkOf(from).nearest_request(req, from);
  const CostModel cost(req.model, req.system, req.setup);
  std::vector<std::pair<Layout, std::vector<std::string>>> valid;
  for (const Layout& l : EnumerateLayouts(req)) {
    RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
    if (FirstFailure(ctx)) continue;
    valid.emplace_back(l, LayoutChanges(from, l, req.model.num_layers, req.setup));
  }
  std::stable_sort(valid.begin(), valid.end(),
                   [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  // Score whole groups of equal distance, nearest first, until n layouts that fit are found.
  std::vector<NearbyLayout> scored;
  int fitting = 0;
  for (size_t i = 0; i < valid.size();) {
    const size_t d = valid[i].second.size();
    for (; i < valid.size() && valid[i].second.size() == d; ++i) {
      NearbyLayout x{{valid[i].first, Score(cost, valid[i].first), {}}, std::move(valid[i].second)};
      fitting += x.candidate.cost.fits ? 1 : 0;
      scored.push_back(std::move(x));
    }
    if (fitting >= n) break;
  }
  std::stable_sort(scored.begin(), scored.end(), [](const NearbyLayout& a, const NearbyLayout& b) {
    if (a.candidate.cost.fits != b.candidate.cost.fits) return a.candidate.cost.fits;
    if (a.changes.size() != b.changes.size()) return a.changes.size() < b.changes.size();
    return RanksBefore(a.candidate, b.candidate);
  });
  if (scored.size() > static_cast<size_t>(n)) scored.resize(n);
  return scored;
}

}  // namespace meshplan
