// Search driver: see driver.hpp.
//
// Phase 0: the mesh and feature rules cut the space into subtrees, each with its step-time
//   lower bound (CostModel::StepLowerBoundOf, a function of the micro-batches per step).
// Phase 1 (the scan on one thread): in order of that bound at one sequence per micro-batch,
//   the first `kSeedSubtrees` subtrees whose memory bound fits the capacity are scored
//   exhaustively (those passed over cannot hold a fitting layout and are pruned); the k-th
//   best expected step found is the pruning threshold.
// Phase 2: every other subtree is skipped if no leaf can fit (its memory bound exceeds the
//   capacity) or if its least step-time bound exceeds the threshold; in the rest, each valid
//   layout whose bound at its own micro-batch count exceeds it is skipped, the others scored.
// Both phases split subtrees over threads by an atomic counter; per-thread results are
// merged by walk position, so the answer and the counts do not depend on the thread count
// (the threshold is fixed before phase 2 starts).
#include "search/driver.hpp"

#include "meshplan/framework.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <numeric>
#include <thread>

namespace meshplan::search {
namespace {

/// Seeds: the first subtrees (in order of their bound at one sequence per micro-batch) whose
/// memory probe fits, scored before the rest to set the pruning threshold. 512 rather than 64:
/// on DeepSeek-V3 / 2048 H100 under Megatron-Bridge the 64 best by bound held none of the
/// fastest layouts (threshold 19.2 s for a best step of 14.0 s, 141k layouts scored), 512 set it
/// near the best (45k scored); on small problems the seeds are the whole space either way.
constexpr size_t kSeedSubtrees = 512;
constexpr size_t kSeedScan = 16 * kSeedSubtrees;
/// The seed scan widens fourfold, up to this many subtrees, while fewer
/// than kSeedSubtrees of those scanned can fit: the subtrees with the lowest step bounds are
/// often the ones that cannot fit (no recompute, the least model parallelism), and without a
/// seed nothing is pruned by time.
constexpr size_t kSeedScanMax = 65536;
/// Seed candidates whose memory is probed at once (on the search threads) before their
/// verdicts are read in scan order: at most this many probes more than the seeds need.
constexpr size_t kProbeRun = 1024;

// The order candidates are kept in: expected step (the predicted step when the request does
// not price risk: Risk::expected_step_seconds is then the step), then walk position.
bool Before(const std::pair<Candidate, uint64_t>& a, const std::pair<Candidate, uint64_t>& b) {
  if (ExpectedBefore(a.first, b.first)) return true;
  if (ExpectedBefore(b.first, a.first)) return false;
  return a.second < b.second;
}

// Work items (mesh parts or subtrees) a thread must at least get before another thread is
// started: below that, starting a thread and warming its caches costs more CPU than it saves.
constexpr size_t kMinItemsPerThread = 32;

int ThreadCount(const PlanRequest& req, size_t work) {
  int n = req.threads > 0 ? req.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(std::min<size_t>(static_cast<size_t>(n), std::max<size_t>(1, work / kMinItemsPerThread)));
}

// Runs fn(begin, end) on `threads` threads, each on one contiguous run of [0, n) (in order:
// the first thread the first run); returns when all are done.
template <typename Fn>
void InRanges(int threads, size_t n, Fn fn) {
  const size_t t = static_cast<size_t>(std::max(1, threads));
  std::vector<std::thread> pool;
  for (size_t k = 1; k < t; ++k) pool.emplace_back([&, k] { fn(n * k / t, n * (k + 1) / t); });
  fn(0, n / t);
  for (auto& th : pool) th.join();
}

// Runs fn(index, scorer) for index in [0, n) on `threads` threads; returns the merged scorer.
// `stoppable`: a thread stops taking work once its scorer is Stopped() (deadline, budget).
// `budget`: the search's shared layout budget (nullptr = none).
template <typename Fn>
Scorer Parallel(const PlanRequest& req, const CostModel& cm, size_t n, bool stoppable, Fn fn,
                std::atomic<int64_t>* budget = nullptr,
                double count_limit = std::numeric_limits<double>::infinity()) {
  const int threads = ThreadCount(req, n);
  std::vector<Scorer> scorers(static_cast<size_t>(threads), Scorer(req, cm, budget, count_limit));
  // Indices are handed out in small chunks (one shared counter update per chunk).
  const size_t chunk = std::clamp<size_t>(n / (static_cast<size_t>(threads) * 64), 1, 64);
  std::atomic<size_t> next{0};
  auto work = [&](int t) {
    Scorer& s = scorers[static_cast<size_t>(t)];
    for (size_t begin = next.fetch_add(chunk); begin < n; begin = next.fetch_add(chunk)) {
      for (size_t i = begin; i < std::min(n, begin + chunk); ++i) {
        if (stoppable && s.Stopped()) return;
        fn(i, s);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);  // the calling thread is one of the workers
  for (auto& th : pool) th.join();
  for (size_t t = 1; t < scorers.size(); ++t) scorers[0].Merge(scorers[t]);
  return std::move(scorers[0]);
}

// Subtrees: layouts that passed the mesh and feature rules, in walk order, with their
// step-time lower bounds when `bounds` is set. The parts of the mesh walk run on the search
// threads (each part's subtrees in their own list, so the order is the walk's); rejections
// are counted into `head`. A mesh `keep_mesh` (when set) rejects is skipped before its rules.
// A subtree is held as (its part, its mesh's position in the part's walk, its position among
// the mesh's Features), 12 bytes instead of a Layout (480): a search holds up to a million
// subtrees over half a million meshes. Get rebuilds a subtree by walking its part's meshes
// again (Space::Meshes is deterministic) and its mesh's feature list (Space::Features depends
// on the mesh alone), keeping the last part's kept meshes and the last mesh's features per
// thread; threads take subtrees in walk order, so each rebuilds a part about once.
struct SubtreeRef {
  uint32_t part = 0;
  uint32_t mesh = 0;     ///< position among the meshes Space::Meshes(part) emits
  uint32_t feature = 0;  ///< position in Space::Features of that mesh
};

struct SubtreeList {
  const Space* space = nullptr;
  uint64_t id = 0;  ///< unique per list (the per-thread caches' key)
  std::vector<std::vector<uint32_t>> kept_meshes;  ///< per part: positions of the meshes with a subtree, ascending
  std::vector<int64_t> dps;     ///< the dp sizes of the subtrees, each once
  std::vector<SubtreeRef> all;  ///< walk order
  std::vector<double> bound;    ///< bound[i] of all[i] (when computed)
  /// seed_key[i]: all[i]'s bound at one sequence per micro-batch (StepLowerBound::At at the
  /// most micro-batches), the order in which seeds are tried (when bounds are computed).
  std::vector<double> seed_key;

  /// Subtree i in walk order; the reference lives until this thread's next Get.
  const Layout& Get(size_t i) const {
    struct Cache {
      uint64_t list = 0;
      uint32_t part = 0;
      bool part_built = false;
      std::vector<Layout> meshes;  ///< the part's kept meshes, in kept_meshes[part] order (whole-part rebuilds)
      uint64_t features_list = 0;
      uint32_t features_part = 0, features_mesh = 0;
      std::vector<Layout> features;
      std::vector<uint32_t> one;  ///< the one mesh position asked of MeshesAt
    };
    thread_local Cache cache;
    const SubtreeRef& r = all[i];
    if (cache.features_list == id && cache.features_part == r.part && cache.features_mesh == r.mesh) {
      return cache.features[r.feature];
    }
    cache.features.clear();
    if (space->MeshesAtBuildsOnlyThose()) {
      cache.one.assign(1, r.mesh);
      space->MeshesAt(r.part, cache.one, [&](const Layout& mesh) { space->Features(mesh, cache.features); });
    } else {
      const std::vector<uint32_t>& kept = kept_meshes[r.part];
      if (!cache.part_built || cache.list != id || cache.part != r.part) {
        cache.meshes.clear();
        space->MeshesAt(r.part, kept, [&](const Layout& mesh) { cache.meshes.push_back(mesh); });
        cache.list = id;
        cache.part = r.part;
        cache.part_built = true;
      }
      const size_t k = static_cast<size_t>(std::lower_bound(kept.begin(), kept.end(), r.mesh) - kept.begin());
      space->Features(cache.meshes[k], cache.features);
    }
    cache.features_list = id;
    cache.features_part = r.part;
    cache.features_mesh = r.mesh;
    return cache.features[r.feature];
  }
};

std::atomic<uint64_t> next_subtree_list_id{1};

SubtreeList Subtrees(const PlanRequest& req, const Space& space, const CostModel& cm, Scorer& head, bool bounds,
                     const MeshFilter& keep_mesh = {}) {
  SubtreeList out;
  out.space = &space;
  out.id = next_subtree_list_id.fetch_add(1);
  const size_t parts = space.MeshParts();
  out.kept_meshes.resize(parts);
  std::vector<std::vector<SubtreeRef>> part_refs(parts);
  std::vector<std::vector<double>> part_bounds(parts), part_keys(parts);
  std::vector<std::vector<int64_t>> part_dps(parts);
  // PlanRequest::deadline, read every 4096 meshes of a part (read every 64, the 10-point
  // Megatron-Bridge sweep measured about 10% slower, though a clock read is ~26 ns here): past it,
  // the parts' remaining meshes are skipped (the walk of a large space takes ~0.1 s).
  const bool timed = req.deadline != std::chrono::steady_clock::time_point::max();
  std::atomic<bool> past_deadline{timed && std::chrono::steady_clock::now() >= req.deadline};
  Scorer rejected = Parallel(req, cm, parts, false, [&](size_t p, Scorer& s) {
    s.SkipRowsPassedBy(&space);
    thread_local std::vector<Layout> features;
    // Filled here and moved into place once: the lists' headers sit side by side, and two
    // threads growing neighbours would share their cache line.
    std::vector<uint32_t> kept;
    std::vector<SubtreeRef> refs;
    std::vector<double> b, keys;
    std::vector<int64_t> dps;
    uint32_t position = 0;
    // After one mesh of the part passes, the rows its meshes share (reading only tp, cp, pp, dp)
    // are known to pass for them all.
    const bool share_part_rows = space.PartsFixTpCpPp();
    bool part_rows_passed = false;
    // After one feature set of a mesh passes, the rows it shares with the others (those reading
    // no recompute field) are known to pass for them all.
    const bool share_rows = space.FeatureSetsDifferInRecomputeOnly();
    space.Meshes(p, [&](const Layout& mesh) {
      const uint32_t mesh_position = position++;
      if (timed && (mesh_position & 4095) == 0 && std::chrono::steady_clock::now() >= req.deadline) {
        past_deadline.store(true, std::memory_order_relaxed);
      }
      if (timed && past_deadline.load(std::memory_order_relaxed)) return;
      if (keep_mesh && !keep_mesh(mesh)) return;
      if (s.Reject(mesh, RuleStage::kMesh, share_part_rows && part_rows_passed)) return;
      part_rows_passed = true;
      features.clear();
      space.Features(mesh, features);
      bool any = false;
      CostView sibling;  // the view of the mesh's first feature set bounded
      for (size_t k = 0; k < features.size(); ++k) {
        const Layout& f = features[k];
        if (s.Reject(f, RuleStage::kFeatures, share_rows && any)) continue;
        refs.push_back(SubtreeRef{static_cast<uint32_t>(p), mesh_position, static_cast<uint32_t>(k)});
        if (bounds) {
          const CostView view = space.FeatureView(f, cm.model(), cm.setup(), any ? &sibling : nullptr);
          if (!any) sibling = view;
          const StepLowerBound lb = cm.StepLowerBoundOf(view);
          // As CostModel::StepSecondsLowerBound, from the same StepLowerBound.
          const MicroBatchRange n = MicroBatchesPerStep(cm.setup().global_batch, view.dp, req.max_micro_batch);
          b.push_back(lb.Least(n.fewest, n.most));
          keys.push_back(lb.At(n.most));
        }
        any = true;
        if (std::find(dps.begin(), dps.end(), f.dp) == dps.end()) dps.push_back(f.dp);
      }
      if (any) kept.push_back(mesh_position);
    });
    kept.shrink_to_fit();
    out.kept_meshes[p] = std::move(kept);
    part_refs[p] = std::move(refs);
    part_bounds[p] = std::move(b);
    part_keys[p] = std::move(keys);
    part_dps[p] = std::move(dps);
  });
  head.Merge(rejected);
  if (past_deadline.load()) head.MarkStopped("deadline");
  size_t n = 0;
  for (const auto& v : part_refs) n += v.size();
  out.all.reserve(n);
  if (bounds) out.bound.reserve(n);
  if (bounds) out.seed_key.reserve(n);
  for (size_t p = 0; p < parts; ++p) {
    out.all.insert(out.all.end(), part_refs[p].begin(), part_refs[p].end());
    if (bounds) out.bound.insert(out.bound.end(), part_bounds[p].begin(), part_bounds[p].end());
    if (bounds) out.seed_key.insert(out.seed_key.end(), part_keys[p].begin(), part_keys[p].end());
    for (int64_t dp : part_dps[p]) {
      if (std::find(out.dps.begin(), out.dps.end(), dp) == out.dps.end()) out.dps.push_back(dp);
    }
    std::vector<SubtreeRef>().swap(part_refs[p]);
    std::vector<double>().swap(part_bounds[p]);
    std::vector<double>().swap(part_keys[p]);
  }
  return out;
}

// Scores the leaves of `subtree`; with `bound`, those whose bound is above `threshold` are
// pruned one by one (Scorer::Leaf).
void ScoreSubtree(const Space& space, const Layout& subtree, size_t index, Scorer& s,
                  const StepLowerBound* bound = nullptr, double threshold = std::numeric_limits<double>::infinity()) {
  thread_local std::vector<Layout> leaves;
  leaves.clear();
  space.Leaves(subtree, leaves);
  uint64_t leaf = 0;
  for (Layout& l : leaves) {
    space.Prepare(l);
    s.Leaf(l, (static_cast<uint64_t>(index) << 24) | leaf++, bound, threshold);
  }
}

}  // namespace

CostView Space::FeatureView(const Layout& feature, const ModelSpec& model, const TrainSetup& setup,
                            const CostView*) const {
  return ToCostView(feature, model, setup);
}

void Space::MeshesAt(size_t part, const std::vector<uint32_t>& positions,
                     const std::function<void(const Layout&)>& emit) const {
  uint32_t position = 0;
  size_t next = 0;
  Meshes(part, [&](const Layout& mesh) {
    if (next < positions.size() && positions[next] == position) {
      emit(mesh);
      ++next;
    }
    ++position;
  });
}

Scorer::Scorer(const PlanRequest& req, const CostModel& cost_model, std::atomic<int64_t>* budget, double count_limit)
    : req_(req), cost_model_(cost_model), budget_(req.max_layouts > 0 ? budget : nullptr), count_limit_(count_limit) {}

bool Scorer::Stopped() {
  if (!stopped_.empty()) return true;
  ++ticks_;
  if (budget_ != nullptr && budget_->load(std::memory_order_relaxed) >= req_.max_layouts) {
    stopped_ = "max_layouts";
  } else if ((ticks_ & 255) == 0 && req_.deadline != std::chrono::steady_clock::time_point::max() &&
             std::chrono::steady_clock::now() >= req_.deadline) {
    stopped_ = "deadline";
  } else if ((ticks_ & 255) == 0 && req_.max_memory_bytes > 0) {
    const int64_t resident = ResidentBytes();
    if (resident > req_.max_memory_bytes) {
      stopped_ = "memory";
      stopped_resident_ = resident;
    }
  }
  return !stopped_.empty();
}

bool Scorer::Reject(const Layout& l, RuleStage stage, bool shared_rows_passed) {
  ++enumerated_;
  RuleContext ctx{req_.model, req_.setup, l, req_.version, req_.mb_version, &req_.system};
  if (!stage_rules_known_ || l.framework != stage_rules_framework_) {
    for (size_t k = 0; k < stage_rules_.size(); ++k) {
      stage_rules_[k] = RulesApplyingAtStage(l.framework, static_cast<RuleStage>(k), req_.model);
      if (skip_space_ != nullptr) {
        std::erase_if(stage_rules_[k], [&](const Rule* row) { return skip_space_->EmitsOnlyLayoutsPassing(*row); });
      }
      unshared_rules_[k].clear();
      for (const Rule* row : stage_rules_[k]) {
        const bool shared = row->stage == RuleStage::kMesh ? row->part_axes_only
                            : row->stage == RuleStage::kFeatures ? !row->reads_recompute
                                                                 : false;
        if (!shared) unshared_rules_[k].push_back(row);
      }
    }
    stage_rules_framework_ = l.framework;
    stage_rules_known_ = true;
  }
  // The first failure among the rows that apply to the model (less those known to pass):
  // FirstFailureAtStage's.
  const size_t k = static_cast<size_t>(stage);
  const Rule* r = nullptr;
  for (const Rule* row : shared_rows_passed ? unshared_rules_[k] : stage_rules_[k]) {
    if (!row->check(ctx)) {
      r = row;
      break;
    }
  }
  if (r == nullptr) return false;
  for (auto& [rule, n] : rejected_) {
    if (rule == r) {
      ++n;
      return true;
    }
  }
  rejected_.emplace_back(r, 1);
  return true;
}

void Scorer::Leaf(const Layout& l, uint64_t order, const StepLowerBound* bound, double threshold) {
  if (Stopped()) return;
  // Reserve this layout's unit of the budget before testing it: the reservations of all
  // threads are one atomic counter, so no more than max_layouts layouts are ever tested.
  if (budget_ != nullptr && budget_->fetch_add(1, std::memory_order_relaxed) >= req_.max_layouts) {
    stopped_ = "max_layouts";
    return;
  }
  ++tested_;
  if (Reject(l, RuleStage::kBatch)) return;
  ++valid_;
  if (bound != nullptr) {
    const int64_t n = l.MicroBatchesPerStep(req_.setup);
    if (n > 0 && bound->At(double(n)) > threshold) {
      ++pruned_layouts_;
      return;
    }
  }
  const Cost cost = Score(cost_model_, l);
  const double mem = cost.memory.Total();
  if (!has_least_ || mem < least_.first.cost.memory.Total() ||
      (mem == least_.first.cost.memory.Total() && order < least_.second)) {
    least_.first.layout = l;
    least_.first.cost = cost;
    least_.second = order;
    has_least_ = true;
  }
  if (!cost.fits) return;
  ++fitting_;
  // The layout is copied into a Candidate only when it is kept (below).
  Risk risk;
  if (req_.risk_ranking) {
    if (!has_kind_) {
      // One kind per search: the runtime is the framework's, the rest the request's.
      kind_ = ErrorKindOf(ToCostView(l, cost_model_.model(), cost_model_.setup()).runtime, req_.model, req_.system,
                          req_.setup);
      has_kind_ = true;
    }
    risk = AssessRisk(kind_, cost);
  } else {
    risk.expected_step_seconds = cost.step_seconds;
  }
  // A layout whose expected step is above the limit can never be ranked (see Trim).
  const bool may_rank = risk.expected_step_seconds <= limit_;
  const bool counted = cost.step_seconds <= count_limit_;
  if (!may_rank && !counted) return;
  if (NoRecomputeFits(l, cost.capacity_bytes)) {
    if (counted) dominated_steps_.push_back(cost.step_seconds);
    return;
  }
  if (!may_rank) return;
  top_.emplace_back(Candidate{l, cost, risk}, order);
  if (top_.size() >= trim_at_) Trim();
}

void Scorer::Trim() {
  std::sort(top_.begin(), top_.end(), Before);
  const size_t k = static_cast<size_t>(std::max(1, req_.top_n));
  // The expected step of the k-th layout (of the k-th distinct mesh with distinct_layouts):
  // RiskRanked takes its top_n among the tied layouts and, after them, by expected step, so
  // no layout slower than that and outside the best's band can be in it.
  double kth = std::numeric_limits<double>::infinity();
  if (req_.distinct_layouts) {
    std::vector<const Layout*> meshes;
    for (const auto& c : top_) {
      if (std::none_of(meshes.begin(), meshes.end(), [&](const Layout* m) { return SameMesh(*m, c.first.layout); })) {
        meshes.push_back(&c.first.layout);
        if (meshes.size() == k) {
          kth = c.first.risk.expected_step_seconds;
          break;
        }
      }
    }
  } else if (top_.size() >= k) {
    kth = top_[k - 1].first.risk.expected_step_seconds;
  }
  if (!top_.empty()) {
    const Risk& best = top_.front().first.risk;
    limit_ = std::max(kth, best.expected_step_seconds * (1.0 + best.step_band));
    while (!top_.empty() && top_.back().first.risk.expected_step_seconds > limit_) top_.pop_back();
  }
  trim_at_ = std::max<size_t>(2 * top_.size(), 2 * k + 64);
}

double Scorer::Limit() {
  Trim();
  return limit_;
}

bool Scorer::NoRecomputeFits(const Layout& l, double capacity_bytes) const {
  if (l.recompute == Recompute::kNone) return false;
  Layout n = l;
  n.recompute = Recompute::kNone;
  n.mb.recompute_modules = 0;
  n.mb.recompute_method = MbRecomputeMethod::kUnset;
  n.mb.recompute_num_layers = 0;
  // `l` passed every rule, and the twin differs in recompute fields only, which only the
  // feature rules read (the stage contract of Space): its mesh and batch rules pass as l's did.
  const RuleContext ctx{req_.model, req_.setup, n, req_.version, req_.mb_version, &req_.system};
  if (FirstFailureAtStage(ctx, RuleStage::kFeatures) != nullptr) return false;
  return cost_model_.MemoryTotal(ToCostView(n, cost_model_.model(), cost_model_.setup())) <= capacity_bytes;
}

void Scorer::Merge(const Scorer& o) {
  enumerated_ += o.enumerated_;
  dominated_steps_.insert(dominated_steps_.end(), o.dominated_steps_.begin(), o.dominated_steps_.end());
  tested_ += o.tested_;
  pruned_ += o.pruned_;
  pruned_layouts_ += o.pruned_layouts_;
  valid_ += o.valid_;
  fitting_ += o.fitting_;
  for (const auto& entry : o.rejected_) {
    const Rule* rule = entry.first;  // (not a structured binding: clang 14 cannot capture those)
    auto it = std::find_if(rejected_.begin(), rejected_.end(), [rule](const auto& p) { return p.first == rule; });
    if (it == rejected_.end()) {
      rejected_.push_back(entry);
    } else {
      it->second += entry.second;
    }
  }
  if (o.has_least_ && (!has_least_ || o.least_.first.cost.memory.Total() < least_.first.cost.memory.Total() ||
                       (o.least_.first.cost.memory.Total() == least_.first.cost.memory.Total() &&
                        o.least_.second < least_.second))) {
    least_ = o.least_;
    has_least_ = true;
  }
  top_.insert(top_.end(), o.top_.begin(), o.top_.end());
  Trim();
  if (stopped_.empty()) stopped_ = o.stopped_;
  stopped_resident_ = std::max(stopped_resident_, o.stopped_resident_);
}

void Scorer::KeepDominatedUpTo(double limit) {
  dominated_steps_.erase(std::remove_if(dominated_steps_.begin(), dominated_steps_.end(),
                                        [limit](double s) { return s > limit; }),
                         dominated_steps_.end());
}

PlanResult Scorer::Finish() const {
  PlanResult r;
  std::vector<std::pair<Candidate, uint64_t>> kept = top_;
  std::sort(kept.begin(), kept.end(), Before);
  std::vector<Candidate> pool;
  pool.reserve(kept.size());
  for (auto& c : kept) pool.push_back(std::move(c.first));
  if (req_.risk_ranking) {
    r.top = RiskRanked(std::move(pool), req_.top_n, req_.distinct_layouts, req_.model.num_layers, req_.setup);
  } else {
    const size_t k = static_cast<size_t>(std::max(1, req_.top_n));
    for (Candidate& c : pool) {
      if (r.top.size() == k) break;
      if (req_.distinct_layouts && std::any_of(r.top.begin(), r.top.end(), [&](const Candidate& o) {
            return SameMesh(o.layout, c.layout);
          })) {
        continue;
      }
      r.top.push_back(std::move(c));
    }
  }
  r.enumerated = enumerated_;
  r.tested = tested_;
  r.valid = valid_;
  r.fitting = fitting_;
  r.pruned = pruned_;
  r.pruned_layouts = pruned_layouts_;
  r.recompute_dominated = static_cast<int64_t>(dominated_steps_.size());
  r.stopped = stopped_;
  r.stopped_resident_bytes = stopped_resident_;
  if (has_least_) r.least_memory = least_.first;
  for (const auto& [rule, n] : rejected_) r.rejected_by_rule.emplace_back(rule->name, n);
  std::sort(r.rejected_by_rule.begin(), r.rejected_by_rule.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  return r;
}

namespace {

// The search of RunSearch; `budget` counts the complete layouts reserved for testing, over
// every thread and both passes (PlanRequest::max_layouts).
PlanResult Search(const PlanRequest& req, const Space& space, std::atomic<int64_t>& budget) {
  const CostModel cm(req.model, req.system, req.setup);
  Scorer head(req, cm, &budget);
  const SubtreeList list = Subtrees(req, space, cm, head, req.prune);
  const size_t n = list.all.size();

  if (!req.prune) {
    Scorer all = Parallel(
        req, cm, n, true, [&](size_t i, Scorer& s) { ScoreSubtree(space, list.Get(i), i, s); }, &budget);
    head.Merge(all);
    return head.Finish();
  }

  const double capacity = req.system.gpu.memory_bytes * (1.0 - req.setup.headroom);
  // Memory probes run with one sequence per data-parallel rank (global batch = dp), so that
  // they also have no gradient accumulation: the accumulated-gradient terms of the memory
  // model appear only when accumulation > 1, and a leaf with a large local batch may have
  // none. The probe is then below every leaf of its subtree.
  std::map<int64_t, CostModel> probe_models;
  for (int64_t dp : list.dps) {
    TrainSetup one = req.setup;
    one.global_batch = std::max<int64_t>(1, dp);
    probe_models.emplace(dp, cm.WithSetup(one));
  }
  // True when no leaf of the subtree can fit (its least-memory probe exceeds the capacity).
  auto cannot_fit = [&](const Layout& subtree) {
    thread_local std::vector<Layout> probes;
    probes.clear();
    space.MemoryBoundLayouts(subtree, probes);
    double least = std::numeric_limits<double>::infinity();
    const CostModel& probe_model = probe_models.at(subtree.dp);
    for (Layout& p : probes) {
      space.Prepare(p);
      least = std::min(least, probe_model.MemoryTotal(ToCostView(p, probe_model.model(), probe_model.setup())));
    }
    return !probes.empty() && least > capacity;
  };

  // Phase 1: the most promising subtrees that can fit, by step-time lower bound. Seeds that
  // cannot fit would leave the threshold infinite (nothing pruned by time) and, under
  // --max-layouts, spend the budget on layouts that are never kept.
  const std::vector<double>& bound = list.bound;
  const std::vector<double>& key = list.seed_key;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<char> done(n, 0);
  std::vector<Layout> seeds;      // the seed subtrees, in scan order
  std::vector<size_t> seed_ids;   // their subtree indices
  size_t passed_over = 0;
  // The scan follows the order of the bound: kSeedScan subtrees, widened while too few of them
  // can fit (a request where nothing fits leaves the rest to the parallel phase 2). Its
  // subtrees are rebuilt and probed kProbeRun at a time on the search threads, their verdicts
  // read in scan order: the seeds and the subtrees passed over are those a probe of one
  // subtree after the other would give.
  std::vector<Layout> run_layouts(kProbeRun);
  std::vector<char> fits(kProbeRun, 0);
  std::vector<size_t> by_walk;
  for (size_t from = 0, scan = std::min(n, kSeedScan);; scan = std::min({n, 4 * scan, kSeedScanMax})) {
    std::partial_sort(order.begin() + static_cast<std::ptrdiff_t>(from), order.begin() + static_cast<std::ptrdiff_t>(scan),
                      order.end(), [&](size_t a, size_t b) { return key[a] != key[b] ? key[a] < key[b] : a < b; });
    for (size_t j = from; j < scan && seeds.size() < kSeedSubtrees;) {
      const size_t run = std::min(scan - j, kProbeRun);
      // In walk order, so that a thread rebuilds each mesh (or part) of the run once.
      by_walk.resize(run);
      std::iota(by_walk.begin(), by_walk.end(), size_t{0});
      std::sort(by_walk.begin(), by_walk.end(), [&](size_t a, size_t b) { return order[j + a] < order[j + b]; });
      InRanges(ThreadCount(req, run), run, [&](size_t begin, size_t end) {
        for (size_t w = begin; w < end; ++w) {
          const size_t i = by_walk[w];
          run_layouts[i] = list.Get(order[j + i]);
          fits[i] = cannot_fit(run_layouts[i]) ? 0 : 1;
        }
      });
      for (size_t i = 0; i < run && seeds.size() < kSeedSubtrees; ++i, ++j) {
        done[order[j]] = 1;
        if (fits[i]) {
          seeds.push_back(run_layouts[i]);
          seed_ids.push_back(order[j]);
        } else {
          ++passed_over;
        }
      }
    }
    from = scan;
    if (seeds.size() >= kSeedSubtrees || scan >= std::min(n, kSeedScanMax)) break;
  }
  Scorer seeded = Parallel(
      req, cm, seeds.size(), true, [&](size_t j, Scorer& s) { ScoreSubtree(space, seeds[j], seed_ids[j], s); }, &budget);
  for (size_t j = 0; j < passed_over; ++j) seeded.Prune();
  // Every layout the final ranking can hold has an expected step at most the seeds' limit
  // (Scorer::Trim), and its step is at most its expected step: a subtree whose step lower
  // bound is above the limit holds none of them.
  const double threshold = seeded.Limit();
  // The seeds counted every recompute-dominated layout; both phases count those up to the
  // threshold (a number fixed before phase 2: the count does not depend on thread timing).
  seeded.KeepDominatedUpTo(threshold);

  // Phase 2: the rest, pruned.
  Scorer rest = Parallel(req, cm, n, true, [&](size_t i, Scorer& s) {
    if (done[i]) return;
    if (bound[i] > threshold) {
      s.Prune();
      return;
    }
    const Layout& subtree = list.Get(i);
    if (cannot_fit(subtree)) {
      s.Prune();
      return;
    }
    // The subtree's bound as a function of the micro-batch count prunes its leaves one by one
    // (only where it depends on that count: the Megatron-Core bound).
    const StepLowerBound lb = cm.StepLowerBoundOf(ToCostView(subtree, cm.model(), cm.setup()));
    const bool by_leaf = lb.per_micro_batch > 0 || lb.ring_per_micro_batch > 0 || lb.bubble > 0 || lb.host_per_micro_batch > 0;
    ScoreSubtree(space, subtree, i, s, by_leaf ? &lb : nullptr, threshold);
  }, &budget, threshold);
  head.Merge(seeded);
  head.Merge(rest);
  PlanResult result = head.Finish();
  // Nothing fits: the least-memory layout may sit in a pruned subtree; walk everything (with
  // what is left of the layout budget: not when the search already stopped or spent it).
  const bool spent = req.max_layouts > 0 && budget.load() >= req.max_layouts;
  if (result.fitting == 0 && result.pruned > 0 && result.stopped.empty() && !spent) {
    PlanRequest exhaustive = req;
    exhaustive.prune = false;
    const int64_t tested_before = result.tested;
    result = Search(exhaustive, space, budget);
    result.tested += tested_before;
  }
  return result;
}

}  // namespace

PlanResult RunSearch(const PlanRequest& req, const Space& space) {
  std::atomic<int64_t> budget{0};
  return Search(req, space, budget);
}

void VisitLeaves(const PlanRequest& req, const Space& space, const std::function<bool(const Layout&)>& visit,
                 const MeshFilter& keep_mesh) {
  const CostModel cm(req.model, req.system, req.setup);
  Scorer head(req, cm);
  const SubtreeList list = Subtrees(req, space, cm, head, false, keep_mesh);
  std::vector<Layout> leaves;
  int64_t visited = 0;
  for (size_t i = 0; i < list.all.size(); ++i) {
    leaves.clear();
    space.Leaves(list.Get(i), leaves);
    for (Layout& l : leaves) {
      if (req.max_layouts > 0 && visited >= req.max_layouts) return;  // exactly max_layouts
      space.Prepare(l);
      ++visited;
      if (!visit(l)) return;
    }
  }
}

std::vector<Layout> ListLeaves(const PlanRequest& req, const Space& space) {
  std::vector<Layout> out;
  VisitLeaves(req, space, [&](const Layout& l) {
    out.push_back(l);
    return true;
  });
  return out;
}

}  // namespace meshplan::search
