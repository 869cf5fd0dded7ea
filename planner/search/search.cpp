// Exhaustive search over the AutoModel layout space.
//
// The walk chooses fields in the order of the rule stages (mesh axes, then features, then
// batch and pipeline schedule) and tests each stage's rules as soon as its fields are set,
// so one failing mesh rule removes its whole subtree; `enumerated` counts every layout or
// subtree tested. Every complete layout that passes all rules is scored by the cost model.
#include <algorithm>
#include <map>
#include <tuple>

#include "meshplan/search.hpp"
#include "search/megatron_space.hpp"

namespace meshplan {
namespace {

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d == 0) {
      out.push_back(d);
      if (d != n / d) out.push_back(n / d);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Pipeline schedule variants for pp > 1: 1f1b with one stage per rank, interleaved1f1b with
// the framework default (layers_per_stage null: 2 stages per rank) and, for each larger
// VPP degree v, the layers_per_stage (and rounding mode) that yields exactly v*pp stages.
struct ScheduleChoice {
  PpSchedule schedule;
  int64_t layers_per_stage;
  StageRounding rounding;
};

std::vector<ScheduleChoice> ScheduleChoices(int64_t num_layers, int64_t pp) {
  std::vector<ScheduleChoice> out;
  out.push_back({PpSchedule::k1F1B, 0, StageRounding::kNone});
  if (2 * pp <= num_layers) out.push_back({PpSchedule::kInterleaved1F1B, 0, StageRounding::kNone});
  for (int64_t v = 3; v * pp <= num_layers; ++v) {
    const int64_t target = v * pp;
    const int64_t lps = (num_layers + target - 1) / target;
    const int64_t s = (num_layers + lps - 1) / lps;  // <= target
    if (s == target) {
      out.push_back({PpSchedule::kInterleaved1F1B, lps, StageRounding::kNone});
    } else if (s > target - pp) {
      out.push_back({PpSchedule::kInterleaved1F1B, lps, StageRounding::kUp});
    }
  }
  return out;
}

std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int64_t, int64_t, int, int64_t, bool>
Key(const Layout& l) {
  return {l.tp * l.pp * l.cp * l.ep, l.tp, l.pp, l.cp, l.ep, l.dp_replicate, static_cast<int>(l.strategy),
          static_cast<int>(l.recompute), l.local_batch_size, l.pp_microbatch_size,
          static_cast<int>(l.pp_schedule), l.layers_per_stage, l.sequence_parallel};
}

struct Walker {
  const PlanRequest& req;
  CostModel cost_model;
  PlanResult result;
  std::map<std::string, int64_t> rejected;
  std::vector<Layout>* collect = nullptr;  // EnumerateLayouts: collect instead of scoring
  int64_t ticks = 0;                       // layouts tested, for the deadline / budget check
  bool stop = false;

  // Cheap: a clock read every 256 layouts. Once set, every loop below unwinds.
  bool Stopped() {
    if (stop) return true;
    ++ticks;
    if (req.max_layouts > 0 && ticks > req.max_layouts) {
      result.stopped = "max_layouts";
      stop = true;
    } else if ((ticks & 255) == 0 && req.deadline != std::chrono::steady_clock::time_point::max() &&
               std::chrono::steady_clock::now() >= req.deadline) {
      result.stopped = "deadline";
      stop = true;
    }
    return stop;
  }

  explicit Walker(const PlanRequest& r) : req(r), cost_model(r.model, r.system, r.setup) {}

  bool Reject(const Layout& l, RuleStage stage) {
    if (Stopped()) return true;
    if (collect) return false;
    ++result.enumerated;
    RuleContext ctx{req.model, req.setup, l, req.version};
    if (const Rule* r = FirstFailureAtStage(ctx, stage)) {
      ++rejected[r->name];
      return true;
    }
    return false;
  }

  void Score(const Layout& l) {
    if (stop) return;
    if (collect) {
      if (Stopped()) return;
      ++result.enumerated;
      collect->push_back(l);
      return;
    }
    if (Reject(l, RuleStage::kBatch)) return;
    ++result.valid;
    Candidate c{l, cost_model.Evaluate(l)};
    if (!result.least_memory || c.cost.memory.Total() < result.least_memory->cost.memory.Total()) {
      result.least_memory = c;
    }
    if (!c.cost.fits) return;
    ++result.fitting;
    auto& top = result.top;
    if (static_cast<int>(top.size()) == req.top_n && !RanksBefore(c, top.back())) return;
    top.insert(std::upper_bound(top.begin(), top.end(), c, RanksBefore), c);
    if (static_cast<int>(top.size()) > req.top_n) top.pop_back();
  }

  void Batches(Layout l) {
    const int64_t dp = l.dp;
    const int64_t per_rank = req.setup.global_batch % dp == 0 ? req.setup.global_batch / dp : 0;
    if (per_rank == 0) {  // no local batch can work; let global_batch_divisible say so once
      l.local_batch_size = 1;
      Score(l);
      return;
    }
    const std::vector<int64_t> lbs_options = Divisors(per_rank);
    if (l.pp == 1) {
      for (int64_t lbs : lbs_options) {
        if (lbs > req.max_micro_batch) break;
        l.local_batch_size = lbs;
        Score(l);
      }
      return;
    }
    const std::vector<ScheduleChoice> schedules = ScheduleChoices(req.model.num_layers, l.pp);
    for (int64_t mb = 1; mb <= req.max_micro_batch && mb <= per_rank; mb *= 2) {
      l.pp_microbatch_size = mb;
      for (int64_t lbs : lbs_options) {
        if (lbs % mb != 0 || lbs / mb < l.pp) continue;
        l.local_batch_size = lbs;
        for (const ScheduleChoice& s : schedules) {
          l.pp_schedule = s.schedule;
          l.layers_per_stage = s.layers_per_stage;
          l.stage_rounding = s.rounding;
          Score(l);
        }
      }
    }
  }

  void Features(Layout l) {
    for (bool sp : {false, true}) {
      if (sp && l.tp == 1) continue;  // SP only means something with TP
      l.sequence_parallel = sp;
      for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        l.recompute = rc;
        if (Reject(l, RuleStage::kFeatures)) continue;
        Batches(l);
      }
    }
  }

  void Run() {
    const int64_t n = req.setup.num_gpus;
    std::vector<int64_t> ep_options = {1};
    if (req.model.is_moe()) {
      for (int64_t e : Divisors(req.model.num_experts)) {
        if (e > 1 && e <= n) ep_options.push_back(e);
      }
    }
    for (Strategy strategy : req.strategies) {
      for (int64_t tp : Divisors(n)) {
        for (int64_t cp : Divisors(n / tp)) {
          for (int64_t pp : Divisors(n / (tp * cp))) {
            if (pp > req.model.num_layers) break;
            const int64_t dp = n / (tp * cp * pp);
            const std::vector<int64_t> reps = strategy == Strategy::kFsdp2 ? Divisors(dp) : std::vector<int64_t>{1};
            for (int64_t rep : reps) {
              for (int64_t ep : ep_options) {
                Layout l;
                l.strategy = strategy;
                l.tp = tp;
                l.cp = cp;
                l.pp = pp;
                l.dp = dp;
                l.dp_replicate = rep;
                l.ep = ep;
                if (Reject(l, RuleStage::kMesh)) continue;
                Features(l);
              }
            }
          }
        }
      }
    }
    result.rejected_by_rule.assign(rejected.begin(), rejected.end());
    std::stable_sort(result.rejected_by_rule.begin(), result.rejected_by_rule.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
};

}  // namespace

bool RanksBefore(const Candidate& a, const Candidate& b) {
  if (a.cost.step_seconds != b.cost.step_seconds) return a.cost.step_seconds < b.cost.step_seconds;
  const double ma = a.cost.memory.Total(), mb = b.cost.memory.Total();
  if (ma != mb) return ma < mb;
  return Key(a.layout) < Key(b.layout);
}

std::vector<Layout> EnumerateLayouts(const PlanRequest& req) {
  if (req.framework == Framework::kMegatronBridge) return search::MegatronEnumerate(req);
  std::vector<Layout> out;
  Walker w(req);
  w.collect = &out;
  w.Run();
  return out;
}

PlanResult Plan(const PlanRequest& req) {
  if (req.framework == Framework::kMegatronBridge) return search::MegatronPlan(req);
  Walker w(req);
  w.Run();
  return std::move(w.result);
}

}  // namespace meshplan
