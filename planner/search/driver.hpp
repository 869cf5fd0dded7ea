#pragma once
// The search driver shared by the AutoModel and Megatron-Bridge layout spaces: rule checks
// with per-rule counts, scoring, top-k, branch-and-bound and the parallel, deterministic
// walk over subtrees.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "meshplan/search.hpp"

namespace meshplan::search {

/// A layout space split into subtrees. A subtree is a layout whose mesh axes, strategy and
/// features (sequence parallel, recompute) are set and have passed their rules; its leaves
/// differ in batch and schedule fields only.
class Space {
 public:
  virtual ~Space() = default;
  /// The mesh walk is cut into parts that can be walked independently (on several
  /// threads); walking parts 0, 1, ... in turn is the whole walk in enumeration order.
  virtual size_t MeshParts() const = 0;
  /// Mesh-level layouts of one part in enumeration order (not yet checked by any rule),
  /// handed to `emit` one at a time: the whole list is never held (millions of layouts).
  virtual void Meshes(size_t part, const std::function<void(const Layout&)>& emit) const = 0;
  /// The meshes of one part at `positions` (ascending, among those Meshes emits), handed to
  /// `emit` in that order: the same layouts Meshes emits there. The default walks Meshes and
  /// keeps those; a space may build only the meshes asked for (a search rebuilds its subtrees
  /// from their positions).
  virtual void MeshesAt(size_t part, const std::vector<uint32_t>& positions,
                        const std::function<void(const Layout&)>& emit) const;
  /// True when MeshesAt builds only the meshes asked for (its cost grows with their count, not
  /// with the part's): a search then rebuilds one mesh where it needs one, else a whole part.
  virtual bool MeshesAtBuildsOnlyThose() const { return false; }
  /// The feature variants of a mesh that passed its rules (not yet checked); `mesh` is one this
  /// space emitted (Meshes, MeshesAt).
  virtual void Features(const Layout& mesh, std::vector<Layout>& out) const = 0;
  /// True when the feature sets Features gives for one mesh differ only in their recompute and
  /// CUDA-graph fields (those of Rule::reads_recompute), so that a features-stage rule reading
  /// none of them has one verdict for all of them.
  virtual bool FeatureSetsDifferInRecomputeOnly() const { return false; }
  /// True when every mesh of a part (Meshes(part)) has the same tp, cp, pp and dp, so that a
  /// mesh-stage rule reading only those (Rule::part_axes_only) has one verdict per part.
  virtual bool PartsFixTpCpPp() const { return false; }
  /// True when every mesh and feature set this space emits passes `rule` by construction (a
  /// setting the space writes itself, a field it never sets): the walk does not test it. Each
  /// such claim is checked by walking the space (tests/search/space_test.cpp).
  virtual bool EmitsOnlyLayoutsPassing(const Rule&) const { return false; }
  /// ToCostView(feature, model, setup). `sibling`: the view of another of the same mesh's
  /// feature sets, or nullptr; a space whose feature sets differ only in fields the view
  /// derives on their own may set those on a copy of it instead of building the view afresh.
  virtual CostView FeatureView(const Layout& feature, const ModelSpec& model, const TrainSetup& setup,
                               const CostView* sibling) const;
  /// Every leaf of a subtree, in enumeration order (batch rules not yet checked).
  virtual void Leaves(const Layout& subtree, std::vector<Layout>& out) const = 0;
  /// Layouts whose memory is <= that of every leaf of the subtree (the least memory of the
  /// subtree is at least the least of theirs); used to prune subtrees that cannot fit.
  virtual void MemoryBoundLayouts(const Layout& subtree, std::vector<Layout>& out) const = 0;
  /// Hook run on a leaf before it is checked and scored (Megatron: derived settings).
  virtual void Prepare(Layout&) const {}
};

/// Everything one thread gathers. Candidates carry their position in the exhaustive walk
/// (subtree index, leaf index) so that merging per-thread results in that order gives the
/// same answer as one thread walking everything.
/// One per search thread; cache-line aligned so that two threads' counters never share a line.
class alignas(64) Scorer {
 public:
  /// `budget`: complete layouts reserved so far by every scorer of the search, shared by all
  /// threads (PlanRequest::max_layouts); nullptr = no limit. `count_limit` (seconds): layouts
  /// left out for their no-recompute twin are counted when their step is at most this
  /// (PlanResult::recompute_dominated); a limit that does not depend on the scorer's own top
  /// keeps the count independent of how subtrees were spread over threads.
  Scorer(const PlanRequest& req, const CostModel& cost_model, std::atomic<int64_t>* budget = nullptr,
         double count_limit = std::numeric_limits<double>::infinity());

  /// Tests the rules of `stage`; counts a rejection per rule. True if rejected. With
  /// `shared_rows_passed`, the stage's rows shared by a group of layouts are known to pass
  /// (another layout of the group passed every row), and only the others are tested, the same
  /// first failure: at the mesh stage the rows reading only tp, cp, pp and dp
  /// (Rule::part_axes_only; the group: a part's meshes, Space::PartsFixTpCpPp), at the
  /// features stage those reading no recompute field (Rule::reads_recompute false; the group: a
  /// mesh's feature sets, Space::FeatureSetsDifferInRecomputeOnly).
  bool Reject(const Layout& l, RuleStage stage, bool shared_rows_passed = false);
  /// Leaves out of Reject the rows `space` passes by construction
  /// (Space::EmitsOnlyLayoutsPassing); nullptr: every row. Only the walk of `space`'s own layouts
  /// sets it.
  void SkipRowsPassedBy(const Space* space) {
    if (space != skip_space_) stage_rules_known_ = false;
    skip_space_ = space;
  }
  /// Checks the batch rules of a complete layout and scores it. With PlanRequest::max_layouts
  /// the layout first reserves one unit of the shared budget; once max_layouts are reserved
  /// it is not tested and the scorer stops ("max_layouts"), so at most max_layouts complete
  /// layouts are tested over all threads.
  /// With `bound` (the subtree's StepLowerBound), a valid layout whose bound at its
  /// micro-batches per step is above `threshold` is counted as pruned and not scored: its step
  /// is above the threshold, so it can be neither ranked nor counted (count_limit <= threshold).
  void Leaf(const Layout& l, uint64_t order, const StepLowerBound* bound = nullptr,
            double threshold = std::numeric_limits<double>::infinity());
  /// Deadline / budget check (a clock read, and with a memory budget a resident-size read,
  /// every 256 calls; the layout budget on every call).
  bool Stopped();

  /// Marks the search stopped for `reason` ("deadline"), as Stopped() would have: the walk,
  /// which reads the clock itself, stops before the scoring phases start.
  void MarkStopped(const std::string& reason) {
    if (stopped_.empty()) stopped_ = reason;
  }

  /// Counts a subtree skipped by branch-and-bound (per thread: no shared counter).
  void Prune() { ++pruned_; }
  int64_t pruned() const { return pruned_; }
  int64_t pruned_layouts() const { return pruned_layouts_; }

  void Merge(const Scorer& other);
  /// Keeps only the recompute-dominated layouts counted so far whose step is at most `limit`.
  void KeepDominatedUpTo(double limit);
  PlanResult Finish() const;

  /// Sorts the kept candidates and drops those that can no longer be ranked: kept are the
  /// top_n by expected step (top_n distinct meshes with PlanRequest::distinct_layouts) and every
  /// one within the step band of the best (Risk::step_band), what RiskRanked needs.
  void Trim();
  /// Trim(), then the largest expected step a kept candidate may have (infinite while fewer
  /// than top_n are kept): the search's pruning threshold.
  double Limit();
  int64_t fitting() const { return fitting_; }

 private:
  const PlanRequest& req_;
  const CostModel& cost_model_;
  /// Kept candidates, unsorted between Trim() calls (trimmed once trim_at_ are held).
  std::vector<std::pair<Candidate, uint64_t>> top_;
  double limit_ = std::numeric_limits<double>::infinity();
  size_t trim_at_ = 128;
  ErrorKind kind_{};
  bool has_kind_ = false;
  std::vector<std::pair<const Rule*, int64_t>> rejected_;
  /// Per stage, the error rows Reject tests: RulesApplyingAtStage of the framework of the
  /// layouts it last saw (the search's model is fixed).
  std::array<std::vector<const Rule*>, static_cast<size_t>(RuleStage::kBatch) + 1> stage_rules_;
  /// Per stage, those of stage_rules_ a group of layouts does not share (see Reject).
  std::array<std::vector<const Rule*>, static_cast<size_t>(RuleStage::kBatch) + 1> unshared_rules_;
  Framework stage_rules_framework_{};
  bool stage_rules_known_ = false;
  const Space* skip_space_ = nullptr;  ///< SkipRowsPassedBy
  std::pair<Candidate, uint64_t> least_{};
  bool has_least_ = false;
  std::atomic<int64_t>* budget_ = nullptr;
  /// True when `l` (valid) recomputes activations and the same layout without recompute passes
  /// every rule and fits in `capacity_bytes` (Cost::capacity_bytes): recompute then only adds
  /// time, so `l` is not ranked.
  bool NoRecomputeFits(const Layout& l, double capacity_bytes) const;

  int64_t enumerated_ = 0, tested_ = 0, valid_ = 0, fitting_ = 0, ticks_ = 0, pruned_ = 0, pruned_layouts_ = 0;
  double count_limit_;
  std::vector<double> dominated_steps_;  ///< step seconds of the counted recompute-dominated layouts
  std::string stopped_;
  int64_t stopped_resident_ = 0;  ///< the resident bytes that stopped it ("memory"), else 0
};

/// Runs the two-phase search over `space` (see PlanRequest::prune) with req.threads threads.
PlanResult RunSearch(const PlanRequest& req, const Space& space);

/// Every leaf of every subtree that passes the mesh and feature rules, in walk order.
std::vector<Layout> ListLeaves(const PlanRequest& req, const Space& space);
/// The leaves ListLeaves lists, passed to `visit` one by one in the same order (at most
/// req.max_layouts of them when it is > 0) without holding them; `visit` returns false to stop. A
/// mesh that `keep_mesh` (when set) rejects is skipped before its rules, with all its leaves.
void VisitLeaves(const PlanRequest& req, const Space& space, const std::function<bool(const Layout&)>& visit,
                 const MeshFilter& keep_mesh = {});

}  // namespace meshplan::search
