// The ranking orders of scored layouts (RanksBefore, ExpectedBefore, MoreRobust, RiskRanked:
// include/meshplan/search.hpp; the rule in docs/ranking.md).
#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "meshplan/search.hpp"

namespace meshplan {
namespace {

// The simpler layout first among equally fast, equally large ones: fewer model-parallel ranks,
// then the sizes, AutoModel's schedule fields, then Megatron-Bridge's (their defaults on
// AutoModel layouts): every field in which the layouts of a space differ, so that two of them
// never compare equal and the order does not depend on the search threads.
auto Key(const Layout& l) {
  return std::make_tuple(l.tp * l.pp * l.cp * l.ep, l.tp, l.pp, l.cp, l.ep, l.dp_replicate, static_cast<int>(l.strategy),
                         static_cast<int>(l.recompute), l.local_batch_size, l.pp_microbatch_size,
                         static_cast<int>(l.pp_schedule), l.layers_per_stage, l.sequence_parallel, l.vpp, l.etp,
                         l.use_distributed_optimizer, l.mb.use_megatron_fsdp, l.mb.use_torch_fsdp2,
                         l.mb.recompute_modules, static_cast<int>(l.pp_split), static_cast<int>(l.stage_rounding),
                         static_cast<int>(l.mb.cp_comm), l.mb.hcp_first);
}

// The mesh and DP flavour of a layout (SameMesh).
auto MeshKey(const Layout& l) {
  return std::make_tuple(static_cast<int>(l.strategy), l.tp, l.pp, l.cp, l.ep, l.etp, l.dp, l.dp_replicate,
                         l.use_distributed_optimizer, l.mb.use_megatron_fsdp, l.mb.use_torch_fsdp2);
}

// How far below its memory band a layout's margin is, bytes (0: within the band).
double Shortfall(const Risk& r) { return std::max(0.0, r.memory_band_bytes - r.margin_bytes); }

int ParallelAxes(const Layout& l) {
  return (l.tp > 1) + (l.pp > 1) + (l.cp > 1) + (l.ep > 1) + (l.dp_replicate > 1);
}

// False when a (virtual) pipeline stage holds fewer than 2 decoder layers: the frameworks'
// recipes split 2-5 layers per virtual stage or more (docs/accuracy.md, "Results").
bool RecipeLikeStages(const Layout& l, int64_t layers) {
  if (l.pp <= 1) return true;
  const StageSplit s = SplitStages(layers, l);
  return s.num_stages > 0 && layers >= 2 * s.num_stages;
}

}  // namespace

bool RanksBefore(const Candidate& a, const Candidate& b) {
  if (a.cost.step_seconds != b.cost.step_seconds) return a.cost.step_seconds < b.cost.step_seconds;
  const double ma = a.cost.memory.Total(), mb = b.cost.memory.Total();
  if (ma != mb) return ma < mb;
  return Key(a.layout) < Key(b.layout);
}

bool ExpectedBefore(const Candidate& a, const Candidate& b) {
  if (a.risk.expected_step_seconds != b.risk.expected_step_seconds) {
    return a.risk.expected_step_seconds < b.risk.expected_step_seconds;
  }
  return RanksBefore(a, b);
}

bool SameMesh(const Layout& a, const Layout& b) { return MeshKey(a) == MeshKey(b); }

bool MoreRobust(const Candidate& a, const Candidate& b, int64_t layers, const TrainSetup& setup) {
  const double sa = Shortfall(a.risk), sb = Shortfall(b.risk);
  if (sa != sb) return sa < sb;
  const int xa = ParallelAxes(a.layout), xb = ParallelAxes(b.layout);
  if (xa != xb) return xa < xb;
  const bool da = a.layout.dp > 1, db = b.layout.dp > 1;
  if (da != db) return da;
  const int64_t ma = a.layout.MicroBatchesPerStep(setup), mb = b.layout.MicroBatchesPerStep(setup);
  if (ma != mb) return ma < mb;
  const bool ra = RecipeLikeStages(a.layout, layers), rb = RecipeLikeStages(b.layout, layers);
  if (ra != rb) return ra;
  return ExpectedBefore(a, b);
}

std::vector<Candidate> RiskRanked(std::vector<Candidate> pool, int top_n, bool distinct, int64_t layers,
                                  const TrainSetup& setup) {
  std::sort(pool.begin(), pool.end(), ExpectedBefore);
  // A tie needs two: tied layouts of at least two meshes (two layouts without `distinct`) in
  // the pool, whether or not top_n shows them both (a top of 1 still marks its tie).
  size_t tied_partners = 0;
  if (!pool.empty()) {
    const double limit = pool.front().risk.expected_step_seconds * (1.0 + pool.front().risk.step_band);
    const auto tied_end = std::find_if(pool.begin(), pool.end(),
                                       [limit](const Candidate& c) { return c.risk.expected_step_seconds > limit; });
    if (tied_end - pool.begin() > 1) {
      // Robustness orders meshes, each by its fastest tied variant; the variants of one mesh
      // (batch, schedule, recompute) stay in expected-step order after it: what tells them
      // apart (recompute FLOP, micro-batch sizes) is priced, not left to the band.
      std::map<decltype(MeshKey(Layout{})), size_t> group_of;
      std::vector<size_t> group(static_cast<size_t>(tied_end - pool.begin()));
      std::vector<const Candidate*> leaders;
      for (size_t i = 0; i < group.size(); ++i) {
        pool[i].risk.tie = true;
        const auto [it, added] = group_of.emplace(MeshKey(pool[i].layout), leaders.size());
        if (added) leaders.push_back(&pool[i]);
        group[i] = it->second;
      }
      tied_partners = distinct ? leaders.size() : group.size();
      std::vector<size_t> by_robustness(leaders.size());
      std::iota(by_robustness.begin(), by_robustness.end(), size_t{0});
      std::sort(by_robustness.begin(), by_robustness.end(),
                [&](size_t a, size_t b) { return MoreRobust(*leaders[a], *leaders[b], layers, setup); });
      std::vector<size_t> place(leaders.size());
      for (size_t r = 0; r < by_robustness.size(); ++r) place[by_robustness[r]] = r;
      std::vector<size_t> idx(group.size());
      std::iota(idx.begin(), idx.end(), size_t{0});
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return place[group[a]] < place[group[b]]; });
      std::vector<Candidate> tied;
      tied.reserve(idx.size());
      for (size_t i : idx) tied.push_back(std::move(pool[i]));
      std::move(tied.begin(), tied.end(), pool.begin());
    }
  }
  std::vector<Candidate> out;
  const size_t n = static_cast<size_t>(std::max(1, top_n));
  for (Candidate& c : pool) {
    if (out.size() == n) break;
    if (distinct && std::any_of(out.begin(), out.end(), [&](const Candidate& o) { return SameMesh(o.layout, c.layout); })) {
      continue;
    }
    out.push_back(std::move(c));
  }
  if (tied_partners < 2) {
    for (Candidate& c : out) c.risk.tie = false;
  }
  return out;
}

}  // namespace meshplan
