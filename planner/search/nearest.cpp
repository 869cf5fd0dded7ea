// The valid layouts nearest to a given one, for `meshplan check`.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>

#include "meshplan/framework.hpp"
#include "meshplan/risk.hpp"
#include "meshplan/search.hpp"
#include "search/diff.hpp"

namespace meshplan {

using search::Diff;

// Every field whose value differs between the recipe read (layout `a`) and the recipe written
// for `b` (FrameworkOps::recipe_yaml): the framework's keys (its recompute key among them), then
// sequence parallel.
void DiffLayouts(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup, LayoutDiff& c) {
  FrameworkOf(a).nearest_changes(a, b, num_layers, setup, c);
  if (c.mesh_only()) return;
  const bool said = std::any_of(c.fields().begin(), c.fields().end(),
                                [](const char* f) { return std::strcmp(f, "sequence_parallel") == 0; });
  if (!said) Diff(c, "sequence_parallel", a.sequence_parallel ? "true" : "false", b.sequence_parallel ? "true" : "false");
}

std::vector<std::string> LayoutChanges(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup) {
  LayoutDiff c(LayoutDiff::Mode::kText);
  DiffLayouts(a, b, num_layers, setup, c);
  return std::move(c.lines());
}

std::vector<std::string> PricedNotes(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup,
                                     const CostModel& cost) {
  LayoutDiff c(LayoutDiff::Mode::kText);
  const Cost as_is = Score(cost, b);
  c.set_pricer([&](const Layout& as_recipe) {
    const Cost off = Score(cost, as_recipe);
    return off.step_seconds != as_is.step_seconds || off.memory.Total() != as_is.memory.Total();
  });
  DiffLayouts(a, b, num_layers, setup, c);
  return std::move(c.notes());
}

namespace {

// `cmp`'s rank, tie and beyond for the recipe's candidate `mine` among plan's first layouts
// `top` (risk-ranked: RiskRanked, ties marked) as plan ranks them: the row's own rank when plan
// lists the recipe's layout (the same description and prediction), else the place RiskRanked
// gives it among those rows, so that a recipe equal to plan's "2=" row is rank 2, tied.
void PlaceAsPlanRanks(const std::vector<Candidate>& top, const Candidate& mine, const PlanRequest& req, int top_n,
                      PlanComparison& cmp) {
  const std::string d = Describe(mine.layout);
  auto same = [&](const Candidate& c) {
    return c.cost.step_seconds == mine.cost.step_seconds && c.cost.memory.Total() == mine.cost.memory.Total() &&
           Describe(c.layout) == d;
  };
  for (size_t i = 0; i < top.size(); ++i) {
    if (same(top[i])) {
      cmp.rank = static_cast<int64_t>(i) + 1;
      cmp.tie = top[i].risk.tie;
      return;
    }
  }
  std::vector<Candidate> pool = top;
  pool.push_back(mine);
  for (Candidate& c : pool) c.risk.tie = false;
  const std::vector<Candidate> ranked =
      RiskRanked(std::move(pool), static_cast<int>(top.size()) + 1, false, req.model.num_layers, req.setup);
  const size_t at = static_cast<size_t>(std::find_if(ranked.begin(), ranked.end(), same) - ranked.begin());
  cmp.rank = static_cast<int64_t>(at) + 1;
  cmp.tie = at < ranked.size() && ranked[at].risk.tie;
  cmp.beyond = at >= top.size() && static_cast<int64_t>(top.size()) >= top_n;
}

}  // namespace

PlanComparison CompareWithPlan(const PlanRequest& request, const Layout& from, const Cost& own, int top_n) {
  PlanRequest req = request;
  FrameworkOf(from).nearest_request(req, from);
  req.top_n = top_n;
  // As plan's table lists them: one row per mesh (plan without --all-variants), so that a
  // recipe plan wrote as its row k is rank k here.
  req.distinct_layouts = true;
  const PlanResult res = Plan(req);
  PlanComparison cmp;
  cmp.searched = top_n;
  cmp.stopped = res.stopped;
  const ErrorKind kind = ErrorKindOf(ToCostView(from, req.model, req.setup).runtime, req.model, req.system, req.setup);
  cmp.band = StepErrorBand(kind).value;
  cmp.own = AssessRisk(kind, own);
  // Compared as plan ranks: by the expected step (the OOM risk priced in), the recipe's own
  // risk assessed the same way, whether or not plan's table ranks by it (--rank-by step).
  const double mine = req.risk_ranking ? cmp.own.expected_step_seconds : own.step_seconds;
  auto step_of = [&](const Candidate& c) { return req.risk_ranking ? c.risk.expected_step_seconds : c.cost.step_seconds; };
  if (req.risk_ranking) {
    PlaceAsPlanRanks(res.top, Candidate{from, own, cmp.own}, req, top_n, cmp);
  } else {  // by predicted step alone, no ties
    int64_t faster = 0;
    for (const Candidate& c : res.top) faster += step_of(c) < mine * (1 - 1e-9) ? 1 : 0;
    cmp.rank = faster + 1;
    cmp.beyond = faster >= int64_t(res.top.size()) && int64_t(res.top.size()) >= top_n;
  }
  if (!res.top.empty()) {
    cmp.fastest = res.top.front();
    if (step_of(*cmp.fastest) > 0) cmp.gap = mine / step_of(*cmp.fastest) - 1.0;
    cmp.changes = LayoutChanges(from, cmp.fastest->layout, req.model.num_layers, req.setup);
    cmp.notes = PricedNotes(from, cmp.fastest->layout, req.model.num_layers, req.setup,
                            CostModel(req.model, req.system, req.setup));
  }
  return cmp;
}

namespace {

// The decision a changed field belongs to (EditCount): its family, else the field itself.
const char* FamilyOf(const char* field) {
  static const std::pair<const char*, const char*> kFamilies[] = {
      {"activation_checkpointing", "recompute"}, {"recompute_granularity", "recompute"}, {"recompute_method", "recompute"}, {"recompute_num_layers", "recompute"},
      {"recompute_modules", "recompute"}, {"tensor_model_parallel_size", "tp"}, {"tp_size", "tp"},
      {"sequence_parallel", "tp"}, {"expert_tensor_parallel_size", "tp"}, {"tp_comm_overlap", "tp"},
      {"pipeline_model_parallel_size", "pp"}, {"pp_size", "pp"}, {"pipeline layer split", "pp"},
      {"pipeline_model_parallel_layout", "pp"}, {"overlap_p2p_comm", "pp"}, {"batch_p2p_comm", "pp"},
      {"layers_per_stage", "pp"}, {"round_virtual_stages_to_pp_multiple", "pp"},
      {"expert_model_parallel_size", "ep"}, {"ep_size", "ep"}, {"moe_token_dispatcher_type", "ep"},
      {"model.backend.dispatcher", "ep"}, {"model.backend.attn", "cp"},
      {"data-parallel flavour", "dp"}, {"strategy", "dp"}, {"overlap_grad_reduce", "dp"},
      {"overlap_param_gather", "dp"}, {"dp_replicate_size", "dp"},
  };
  for (const auto& [f, family] : kFamilies) {
    if (std::strcmp(field, f) == 0) return family;
  }
  return field;
}

// The decision a change ("field: old -> new") belongs to (EditCount).
std::string DecisionOf(const std::string& change) {
  const std::string field = change.substr(0, change.find(": "));
  const char* family = FamilyOf(field.c_str());
  return family == field.c_str() ? field : std::string(family);
}

std::vector<std::string> Decisions(const std::vector<std::string>& changes) {
  std::vector<std::string> d;
  for (const std::string& c : changes) {
    const std::string f = DecisionOf(c);
    if (std::find(d.begin(), d.end(), f) == d.end()) d.push_back(f);
  }
  return d;
}

std::string Gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / 1073741824.0);
  return buf;
}


// The planner's first layouts for the job as `plan` searches it, with the software settings of
// the job's recipe function (Megatron-Bridge: its dispatcher and flex backend) where the nearest
// request fixed the recipe's own (FrameworkOps::nearest_request): a fix that changes EP anyway
// may take the dispatcher plan would run at the new EP, at no extra edit (EditCount counts the
// dispatcher with EP). Each is a candidate within the edit bound, as the fastest ones are.
void AddJobPlanFixes(const PlanRequest& request, const PlanRequest& req, const Layout& from, int n, int& first_fit,
                     std::vector<NearbyLayout>& scored) {
  if (request.mb_runtime || !req.mb_runtime) return;  // the same settings: nothing new
  PlanRequest job = req;
  job.mb_runtime.reset();
  job.top_n = std::max(20, 4 * n);
  for (const Candidate& c : Plan(job).top) {
    NearbyLayout x{c, LayoutChanges(from, c.layout, req.model.num_layers, req.setup), 0, {}, {}};
    x.edits = EditCount(x.changes);
    if (!c.cost.fits || (first_fit >= 0 && x.edits > first_fit + kNearestExtraEdits)) continue;
    const std::string d = Describe(c.layout);
    const bool seen = std::any_of(scored.begin(), scored.end(), [&](const NearbyLayout& y) {
      return y.changes == x.changes && Describe(y.candidate.layout) == d &&
             y.candidate.cost.step_seconds == c.cost.step_seconds;
    });
    if (seen) continue;
    if (first_fit < 0 || x.edits < first_fit) first_fit = x.edits;
    scored.push_back(std::move(x));
  }
  if (first_fit >= 0) {
    scored.erase(std::remove_if(scored.begin(), scored.end(),
                                [&](const NearbyLayout& x) { return x.edits > first_fit + kNearestExtraEdits; }),
                 scored.end());
  }
}

// Every candidate's risk as plan assesses its own layouts (AssessRisk of the job's kind): the
// walk scores without it.
void AssessFixRisks(std::vector<NearbyLayout>& xs, const ErrorKind& kind) {
  for (NearbyLayout& x : xs) x.candidate.risk = AssessRisk(kind, x.candidate.cost);
}

// `idx` (fitting candidates of `xs`) as plan ranks its layouts (RiskRanked with distinct
// layouts): one per mesh, its best by expected step; by expected step, those within the step
// band of the first tied and ordered by robustness (MoreRobust).
std::vector<size_t> RiskOrder(const std::vector<NearbyLayout>& xs, std::vector<size_t> idx, int64_t layers,
                              const TrainSetup& setup) {
  std::stable_sort(idx.begin(), idx.end(),
                   [&](size_t a, size_t b) { return ExpectedBefore(xs[a].candidate, xs[b].candidate); });
  std::vector<size_t> order;
  for (size_t i : idx) {
    const bool mesh_seen = std::any_of(order.begin(), order.end(), [&](size_t j) {
      return SameMesh(xs[i].candidate.layout, xs[j].candidate.layout);
    });
    if (!mesh_seen) order.push_back(i);
  }
  if (order.empty()) return order;
  const Risk& best = xs[order.front()].candidate.risk;
  const double limit = best.expected_step_seconds * (1.0 + best.step_band);
  const auto tied_end = std::find_if(order.begin(), order.end(), [&](size_t i) {
    return xs[i].candidate.risk.expected_step_seconds > limit;
  });
  std::stable_sort(order.begin(), tied_end, [&](size_t a, size_t b) {
    return MoreRobust(xs[a].candidate, xs[b].candidate, layers, setup);
  });
  return order;
}

// The listed fixes of `scored` (sorted: fitting first by edits then expected step; then the
// others), as indices, at most `n`. A fitting fix is eligible when it has the fewest edits that
// fit, or when its expected step (the out-of-memory risk priced, Risk::expected_step_seconds)
// is shorter by more than kNearestEditGain than that of every fix with fewer edits: a farther
// fix is listed only where it is worth its edits, and never one worse than a nearer fix. The
// eligible ones are ranked as plan ranks (RiskOrder): the risk is priced among the fixes within
// the edit bound, not against plan's own first layout, which may lie beyond it. Fewer than `n`:
// the rest in `scored` order.
std::vector<size_t> ListedOrder(const std::vector<NearbyLayout>& scored, int n, int64_t layers, const TrainSetup& setup) {
  std::vector<size_t> eligible;
  double nearer_best = 0, group_best = 0;  // 0: none yet
  int group = -1;
  for (size_t i = 0; i < scored.size() && scored[i].candidate.cost.fits; ++i) {
    const NearbyLayout& x = scored[i];
    if (x.edits != group) {
      if (group_best > 0) nearer_best = nearer_best > 0 ? std::min(nearer_best, group_best) : group_best;
      group = x.edits;
      group_best = 0;
    }
    const double e = x.candidate.risk.expected_step_seconds;
    if (nearer_best <= 0 || e * (1 + kNearestEditGain) < nearer_best) eligible.push_back(i);
    group_best = group_best > 0 ? std::min(group_best, e) : e;
  }
  std::vector<size_t> order = RiskOrder(scored, eligible, layers, setup);
  const size_t want = static_cast<size_t>(std::max(n, 0));
  if (order.size() > want) order.resize(want);
  for (size_t i = 0; i < scored.size() && order.size() < want; ++i) {
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  }
  return order;
}

// "; <what> it fits on N GPUs (dp D: X GiB per GPU, T tokens/s per GPU)" when `l` fits with more
// GPUs (FewestGpusFor), else "".
std::string MoreGpusNote(const PlanRequest& req, const Layout& l, const std::string& what) {
  const std::optional<MoreGpus> more = FewestGpusFor(req, l);
  if (!more) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "; %s it fits on %lld GPUs (dp %lld: %s GiB per GPU, %.0f tokens/s per GPU)", what.c_str(),
                static_cast<long long>(more->gpus), static_cast<long long>(more->layout.dp),
                Gib(more->cost.memory.Total()).c_str(), more->cost.tokens_per_s_per_gpu);
  return buf;
}

// The one-edit fix (the valid layout changing one decision: the best-ranked that fits, else the
// one nearest to fitting, least memory) shown in `out` (at most `n`): as it is where it fits,
// else with what it needs to fit (the first listed fix that makes its change, else the
// best-ranked fitting one that makes it with the fewest others), with a note saying which, and how much lower its expected throughput is when
// it is listed after other fixes.
void ShowOneKeyFix(const PlanRequest& req, const std::vector<NearbyLayout>& scored, int n, std::vector<NearbyLayout>& out) {
  const NearbyLayout* one_key = nullptr;
  auto better_key = [](const NearbyLayout& x, const NearbyLayout& y) {
    const Cost &a = x.candidate.cost, &b = y.candidate.cost;
    if (a.fits != b.fits) return a.fits;
    return a.fits ? ExpectedBefore(x.candidate, y.candidate) : a.memory.Total() < b.memory.Total();
  };
  for (const NearbyLayout& x : scored) {
    if (x.edits == 1 && (one_key == nullptr || better_key(x, *one_key))) one_key = &x;
  }
  if (one_key == nullptr) return;
  std::string what;
  for (const std::string& c : one_key->changes) what += (what.empty() ? "" : ", ") + c;
  NearbyLayout shown = *one_key;
  if (!one_key->candidate.cost.fits) {
    // The best-ranked fitting fix that makes its change with at most one edit more than the fewest.
    auto has_key = [&](const NearbyLayout& x) {
      bool has = x.candidate.cost.fits;
      for (const std::string& c : one_key->changes) {
        has = has && std::find(x.changes.begin(), x.changes.end(), c) != x.changes.end();
      }
      return has;
    };
    // The first listed fix that makes it, else the best-ranked that makes it with at most one
    // edit more than the fewest.
    const NearbyLayout* with = nullptr;
    const auto listed = std::find_if(out.begin(), out.end(), has_key);
    if (listed != out.end()) {
      with = &*listed;
    } else {
      int fewest = -1;
      for (const NearbyLayout& x : scored) {
        if (has_key(x) && (fewest < 0 || x.edits < fewest)) fewest = x.edits;
      }
      for (const NearbyLayout& x : scored) {
        if (has_key(x) && x.edits <= fewest + 1 && (with == nullptr || ExpectedBefore(x.candidate, with->candidate))) with = &x;
      }
    }
    const std::string alone = "the one-edit fix (" + what + ") alone needs " + Gib(one_key->candidate.cost.memory.Total()) +
                              " GiB per GPU, above the " + Gib(one_key->candidate.cost.capacity_bytes) + " GiB usable";
    if (with != nullptr) {
      std::string extra;
      for (const std::string& c : with->changes) {
        if (std::find(one_key->changes.begin(), one_key->changes.end(), c) == one_key->changes.end()) {
          extra += (extra.empty() ? "" : ", ") + c;
        }
      }
      shown = *with;
      shown.note = alone + "; it fits with " + extra;
    } else {
      shown.note = alone + "; no layout of the planner's space within " + std::to_string(1 + kNearestExtraEdits) +
                   " edits makes it fit";
    }
    shown.note += MoreGpusNote(req, one_key->candidate.layout, "as it is");
  } else {
    shown.note = "the one-edit fix (" + what + ")";
  }
  auto same = [&](const NearbyLayout& y) {
    return y.changes == shown.changes && Describe(y.candidate.layout) == Describe(shown.candidate.layout);
  };
  auto it = std::find_if(out.begin(), out.end(), same);
  if (it != out.end()) {
    it->note = shown.note;
  } else if (shown.candidate.cost.fits || out.empty() || !out.back().candidate.cost.fits) {
    if (static_cast<int>(out.size()) >= n) out.pop_back();
    out.push_back(shown);
  }
  // Said beside the one-edit fix when it is not first: how much lower its expected throughput is.
  const auto pos = std::find_if(out.begin(), out.end(), same);
  if (pos != out.begin() && pos != out.end() && pos->candidate.cost.fits && out.front().candidate.cost.fits &&
      pos->candidate.risk.expected_step_seconds > 0) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "; listed after fixes ranked before it (expected throughput, the out-of-memory risk priced, %.0f%% below the first)",
                  100 * (1 - out.front().candidate.risk.expected_step_seconds / pos->candidate.risk.expected_step_seconds));
    pos->note += buf;
  }
}

}  // namespace

std::optional<MoreGpus> FewestGpusFor(const PlanRequest& req, const Layout& l) {
  const int64_t model_parallel = l.tp * l.pp * l.cp, n = req.setup.num_gpus;
  if (model_parallel < 1 || n < 1) return std::nullopt;
  for (int64_t g = (n / model_parallel + 1) * model_parallel; g <= 16 * n; g += model_parallel) {
    TrainSetup setup = req.setup;
    setup.num_gpus = g;
    Layout at = l;
    FrameworkOf(l).set_dp(at, g / model_parallel, setup);
    const RuleContext ctx{req.model, setup, at, req.version, req.mb_version, &req.system};
    if (FirstFailure(ctx)) continue;
    const Cost c = Score(CostModel(req.model, req.system, setup), at);
    if (c.fits) return MoreGpus{g, at, c};
  }
  return std::nullopt;
}

int EditCount(const std::vector<std::string>& changes) { return static_cast<int>(Decisions(changes).size()); }

namespace {

// A small number per decision (FamilyOf the field), the same for every field of one decision,
// found by the field's address (the fields are string literals): counting a layout's edits
// compares addresses, not strings. Per thread, so without locks.
int DecisionId(const char* field) {
  thread_local std::vector<std::pair<const char*, int>> by_address;
  thread_local std::vector<std::string> decisions;
  for (const auto& [address, id] : by_address) {
    if (address == field) return id;
  }
  const std::string d = FamilyOf(field);
  int id = static_cast<int>(std::find(decisions.begin(), decisions.end(), d) - decisions.begin());
  if (id == static_cast<int>(decisions.size())) decisions.push_back(d);
  by_address.emplace_back(field, id);
  return id;
}

}  // namespace

int LayoutDiff::Edits() const {
  uint64_t seen = 0;
  std::vector<int> more;  // ids beyond 63 (never for the fields of today's frameworks)
  for (const char* field : fields_) {
    const int id = DecisionId(field);
    if (id < 64) {
      seen |= uint64_t{1} << id;
    } else if (std::find(more.begin(), more.end(), id) == more.end()) {
      more.push_back(id);
    }
  }
  return __builtin_popcountll(seen) + static_cast<int>(more.size());
}

namespace {

// Edits (LayoutDiff::Edits) from `from` to `to`, counted without building their lines.
int EditsTo(const Layout& from, const Layout& to, int64_t num_layers, const TrainSetup& setup, LayoutDiff::Mode mode) {
  LayoutDiff c(mode);
  DiffLayouts(from, to, num_layers, setup, c);
  return c.Edits();
}

// The valid layouts of req's space (ForEachLayout, then every rule) within `cap` edits of
// `from`, with their edit counts, in walk order. A mesh whose own fields already make more
// than `cap` edits (LayoutDiff::kMeshFields, a lower bound of every layout under it) is skipped
// before its rules. `cap` < 0: no bound.
std::vector<std::pair<Layout, int>> ValidWithinEdits(const PlanRequest& req, const Layout& from, int cap) {
  const int64_t layers = req.model.num_layers;
  std::vector<std::pair<Layout, int>> out;
  MeshFilter near;
  if (cap >= 0) {
    near = [&](const Layout& mesh) { return EditsTo(from, mesh, layers, req.setup, LayoutDiff::Mode::kMeshFields) <= cap; };
  }
  ForEachLayout(
      req,
      [&](const Layout& l) {
        const int d = EditsTo(from, l, layers, req.setup, LayoutDiff::Mode::kFields);
        if (cap >= 0 && d > cap) return true;
        RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
        if (!FirstFailure(ctx)) out.emplace_back(l, d);
        return true;
      },
      near);
  return out;
}

// The valid layouts within kNearestExtraEdits edits of the fewest that fit (all valid layouts
// when none fits), scored, in walk order; `first_fit` is set to that fewest (-1: none fits).
// Walked with a growing edit bound: a bound of B finds every valid layout of at most B edits;
// when the fewest that fit, F, has F + kNearestExtraEdits <= B, those are the answer; else the
// walk is repeated with B = F + kNearestExtraEdits (or unbounded when none fits within B).
// The same layouts, scores and order as scoring every valid layout of the space.
std::vector<NearbyLayout> NearestScored(const PlanRequest& req, const Layout& from, int& first_fit) {
  const CostModel cost(req.model, req.system, req.setup);
  // The layouts whose fixed software settings fail a rule, with those settings released
  // (FrameworkOps::nearest_release: AutoModel's dispatcher), walked after the others.
  PlanRequest released;
  const auto release = FrameworkOf(from).nearest_release;
  const bool releases = release != nullptr && release(req, released);
  // An edit budget reaches the whole space only unbounded; so does a layout budget, whose
  // first max_layouts layouts are those of the unbounded walk.
  int cap = req.max_layouts > 0 ? -1 : 1 + kNearestExtraEdits;
  while (true) {
    std::vector<std::pair<Layout, int>> valid = ValidWithinEdits(req, from, cap);
    if (releases) {
      std::vector<std::pair<Layout, int>> more = ValidWithinEdits(released, from, cap);
      valid.insert(valid.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    // Scored by edits (fewest first) until the fewest that fit, plus the extra edits, is passed.
    std::vector<size_t> by_edits(valid.size());
    std::iota(by_edits.begin(), by_edits.end(), size_t{0});
    std::stable_sort(by_edits.begin(), by_edits.end(), [&](size_t a, size_t b) { return valid[a].second < valid[b].second; });
    std::vector<std::optional<Cost>> costs(valid.size());
    first_fit = -1;
    for (size_t i : by_edits) {
      const int d = valid[i].second;
      if (first_fit >= 0 && d > first_fit + kNearestExtraEdits) break;
      costs[i] = Score(cost, valid[i].first);
      if (costs[i]->fits && first_fit < 0) first_fit = d;
    }
    if (cap >= 0 && (first_fit < 0 || first_fit + kNearestExtraEdits > cap)) {
      cap = first_fit < 0 ? -1 : first_fit + kNearestExtraEdits;
      continue;
    }
    std::vector<NearbyLayout> scored;
    for (size_t i = 0; i < valid.size(); ++i) {
      if (!costs[i]) continue;
      const Layout& l = valid[i].first;
      scored.push_back({{l, *costs[i], {}}, LayoutChanges(from, l, req.model.num_layers, req.setup), valid[i].second, {}, {}});
    }
    return scored;
  }
}

}  // namespace

std::vector<NearbyLayout> NearbyValidLayouts(const PlanRequest& request, const Layout& from, int* first_fit) {
  PlanRequest req = request;
  FrameworkOf(from).nearest_request(req, from);
  int fewest = -1;
  std::vector<NearbyLayout> scored = NearestScored(req, from, fewest);
  if (first_fit != nullptr) *first_fit = fewest;
  return scored;
}

std::vector<NearbyLayout> NearestValidLayouts(const PlanRequest& request, const Layout& from, int n) {
  PlanRequest req = request;
  FrameworkOf(from).nearest_request(req, from);
  // The valid layouts, nearest first (stable: walk order among equal edits), scored up to
  // kNearestExtraEdits edits beyond the fewest that fit (NearbyValidLayouts).
  int first_fit = -1;
  std::vector<NearbyLayout> scored = NearbyValidLayouts(request, from, &first_fit);
  std::stable_sort(scored.begin(), scored.end(), [](const NearbyLayout& a, const NearbyLayout& b) { return a.edits < b.edits; });
  // The planner's fastest fitting layouts with the recipe's software settings: a fix far from
  // the recipe in fields but far faster is among the candidates whatever the enumeration order.
  // Needed only when the walk stopped at the layout budget: a whole walk has already scored
  // every valid layout within the edits these are kept within (each is a valid layout of the
  // same space, so it is there and `seen`), and when none fits the planner has none either.
  if (req.max_layouts > 0) {
    PlanRequest fast = req;
    fast.top_n = std::max(20, 4 * n);
    fast.risk_ranking = false;  // the fastest by predicted step, as CompareWithPlan
    for (const Candidate& c : Plan(fast).top) {
      NearbyLayout x{c, LayoutChanges(from, c.layout, req.model.num_layers, req.setup), 0, {}, {}};
      x.edits = EditCount(x.changes);
      if (first_fit >= 0 && x.edits > first_fit + kNearestExtraEdits) continue;
      const bool seen = std::any_of(scored.begin(), scored.end(), [&](const NearbyLayout& y) {
        return y.changes == x.changes && Describe(y.candidate.layout) == Describe(x.candidate.layout);
      });
      if (!seen) {
        if (first_fit < 0 || x.edits < first_fit) first_fit = x.edits;
        scored.push_back(std::move(x));
      }
    }
  }
  AddJobPlanFixes(request, req, from, n, first_fit, scored);
  AssessFixRisks(scored, ErrorKindOf(ToCostView(from, req.model, req.setup).runtime, req.model, req.system, req.setup));
  // The fitting ones first: fewest edits, then as plan ranks (the expected step); then those
  // that do not fit, fewest changed fields first (none is a fix: the nearest to the recipe as
  // written).
  std::stable_sort(scored.begin(), scored.end(), [](const NearbyLayout& a, const NearbyLayout& b) {
    if (a.candidate.cost.fits != b.candidate.cost.fits) return a.candidate.cost.fits;
    if (!a.candidate.cost.fits && a.changes.size() != b.changes.size()) return a.changes.size() < b.changes.size();
    if (a.edits != b.edits) return a.edits < b.edits;
    return ExpectedBefore(a.candidate, b.candidate);
  });
  std::vector<NearbyLayout> out;
  for (size_t i : ListedOrder(scored, n, req.model.num_layers, req.setup)) out.push_back(scored[i]);
  ShowOneKeyFix(req, scored, n, out);
  const CostModel cost(req.model, req.system, req.setup);
  for (NearbyLayout& x : out) x.notes = PricedNotes(from, x.candidate.layout, req.model.num_layers, req.setup, cost);
  return out;
}

}  // namespace meshplan
