#pragma once
/// \file search.hpp
/// Exhaustive search of the AutoModel layout space: enumerate, check every rule, score
/// the valid layouts with the cost model, rank those that fit.

#include <chrono>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "meshplan/cost.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"
#include "meshplan/risk.hpp"
#include "meshplan/rules.hpp"

namespace meshplan {

/// Megatron-Bridge settings that are software choices rather than layout choices: a release's
/// performance recipe sets them for every layout alike (recipes/megatron-bridge-perf.yaml).
struct MbRuntime {
  MbDispatcher dispatcher = MbDispatcher::kAlltoall;  ///< model.moe_token_dispatcher_type (ep > 1)
  MbFlexBackend flex_backend = MbFlexBackend::kNone;  ///< model.moe_flex_dispatcher_backend (flex)
  bool pad_to_capacity = false;  ///< MbSettings::moe_pad_to_capacity (token drop with padding)
  Tri ep_a2a_overlap = Tri::kFalse;  ///< comm_overlap.overlap_moe_expert_parallel_comm (ep > 1)
  MbCudaGraph cuda_graph = MbCudaGraph::kNone;  ///< model.cuda_graph_impl
  uint32_t cuda_graph_scope = 0;                ///< MbGraphScope bits
  bool grad_reduce_in_fp32 = true;              ///< mixed_precision / ddp grad_reduce_in_fp32
  /// model.cross_entropy_fusion_impl te with the loss fusion on (MbSettings::te_cross_entropy)
  bool te_cross_entropy = false;
  /// model.cp_comm_type of the recipe function (kUnset where it sets none, then plan searches the
  /// types: MegatronCpCommChoices), or of a recipe read; a request with mb_runtime keeps it.
  MbCpComm cp_comm = MbCpComm::kUnset;
  int64_t hcp_first = 0;  ///< with kA2aP2p: hierarchical_context_parallel_sizes[0] (0: the space's)
};

/// What to search.
struct PlanRequest {
  ModelSpec model;
  SystemSpec system;
  TrainSetup setup;
  AutoModelVersion version = AutoModelVersion::kV05;
  /// Which framework's layout space, rules and recipes. Megatron-Bridge searches TP, PP, VPP,
  /// CP, EP, ETP, micro-batch, SP, recompute and the DP flavour (see EnumerateLayouts).
  Framework framework = kDefaultFramework;
  MBridgeVersion mb_version = MBridgeVersion::kMain;  ///< Megatron-Bridge rules (framework kMegatronBridge)
  /// The Megatron-Bridge recipe function (`run_recipe.py --recipe`) the overrides are written
  /// for: its override paths and its own settings (recipes/megatron-bridge-recipe-functions.json).
  /// "": the model preset's default (planner/frameworks/megatron_bridge/recipe_functions.cpp).
  std::string mb_recipe_function;
  /// Megatron-Bridge software settings every layout is priced with (dispatcher, EP overlap,
  /// CUDA graphs, gradient dtype); unset: the recipe function's own (RecipeRuntime), with
  /// the changes the layout forces (ApplyEmittedSettings).
  /// `meshplan validate` sets the published run's, so that its rank compares like with like.
  std::optional<MbRuntime> mb_runtime;
  /// AutoModel `model.backend` MoE settings (dispatcher, fake gate) every layout is priced
  /// with; unset: the learned gate and the dispatcher meshplan's recipe names (deepep with EP
  /// inside a node, hybridep across). `check` sets the recipe's, `validate` the benchmark
  /// recipe's, so that the recipe's layout is ranked among layouts priced like it.
  std::optional<AmMoeBackend> am_moe_backend;
  /// With am_moe_backend whose dispatcher is deepep (check's nearest walk,
  /// FrameworkOps::nearest_release): only the EP sizes at which deepep cannot run
  /// (automodel::DeepEpRuns), each with the dispatcher automodel::DefaultBackend gives it.
  bool am_release_dispatcher = false;
  /// Megatron-Bridge selective recompute: the `recompute_modules` sets (MbRecomputeModule bits;
  /// 0 = Megatron-Core's default {core_attn}) searched besides no recompute and full recompute.
  /// Empty by default: `plan --recompute-modules` sets those of NVIDIA's performance recipes
  /// (search::SearchedRecomputeModules); `check` the recipe's own set. {core_attn} alone is not
  /// searched by default: fused attention keeps no score matrix, so it saves no memory.
  std::vector<uint32_t> mb_recompute_module_sets;
  std::vector<Strategy> strategies = {Strategy::kFsdp2, Strategy::kMegatronFsdp, Strategy::kDdp};
  /// Megatron-Bridge: search torch FSDP2 (`dist.use_torch_fsdp2`) too. Off by default even with
  /// kFsdp2 in `strategies`: Megatron-Bridge issue #2785 "Torch FSDP2 does not work" (open,
  /// megatron.md 2.9 and pitfall 12: treat it as unsupported, prefer Megatron FSDP); `plan
  /// --strategy fsdp2` turns it on, with a warning.
  bool mb_torch_fsdp2 = false;
  /// Megatron-Bridge MoE layouts (EP > 1): also search the token dispatchers the GPU runs
  /// besides the recipe function's own (alltoall, flex with HybridEP, flex with DeepEP:
  /// megatron_bridge::DispatcherChoices), each written into the recipe it wins. Off by default:
  /// it multiplies the EP layouts scored by up to 3 (`plan --search-dispatchers`).
  bool mb_search_dispatchers = false;
  int top_n = 5;
  int64_t max_micro_batch = 16;  ///< largest micro-batch (sequences per forward) enumerated
  /// Stop the walk at this time (checked every few hundred layouts) and return the best
  /// layouts found so far with PlanResult::stopped set. Default: no deadline.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// Stop after this many complete layouts have been tested (checked against the batch rules
  /// and, when valid, scored: PlanResult::tested), counted over every search thread, so that
  /// at most this many are tested; EnumerateLayouts returns at most this many layouts. The
  /// mesh and feature checks of partial layouts that cut the space into subtrees are not
  /// counted. Which layouts fall within the budget depends on the thread timing when more
  /// than one thread searches. Bounds time and, for EnumerateLayouts, memory. 0 = no limit.
  int64_t max_layouts = 0;
  /// Memory budget: stop the walk once this process's resident memory (ResidentBytes())
  /// exceeds this many bytes, checked with the deadline every few hundred layouts, and
  /// return the best layouts found so far with PlanResult::stopped = "memory". 0 = no limit.
  int64_t max_memory_bytes = 0;
  /// Search threads; 0 = one per hardware core. Results do not depend on it.
  int threads = 0;
  /// Branch-and-bound: skip (mesh, features) subtrees whose least memory exceeds the
  /// capacity or whose step-time lower bound (CostModel::StepSecondsLowerBound) exceeds the
  /// k-th best step of a first pass over the most promising subtrees. The top-k is the same
  /// as without pruning; `valid` and `fitting` then count the layouts actually scored.
  bool prune = true;
  /// Rank by the expected step with the risk of running out of memory priced in
  /// (Risk::expected_step_seconds), the layouts within the step band of the best a tie ordered
  /// by robustness (RiskRanked, docs/ranking.md). False: by the predicted step alone
  /// (RanksBefore), as `validate` ranks published layouts to score the model's own order.
  bool risk_ranking = true;
  /// Keep one layout per mesh in `top` (DistinctLayout: the best-ranked of the variants that
  /// differ only in batch, schedule, VPP, sequence parallel or recompute). `plan` sets it unless
  /// --all-variants is given.
  bool distinct_layouts = false;
};

/// A scored layout.
struct Candidate {
  Layout layout;
  Cost cost;
  Risk risk;  ///< its band and memory risk (AssessRisk; tie set by RiskRanked)
};

/// Outcome of a search.
struct PlanResult {
  std::vector<Candidate> top;   ///< best fitting layouts, fastest first (at most top_n)
  int64_t enumerated = 0;       ///< layouts generated (partial layouts checked at the mesh and feature level included)
  int64_t tested = 0;           ///< complete layouts tested (what PlanRequest::max_layouts limits)
  int64_t valid = 0;            ///< passed every rule
  int64_t fitting = 0;          ///< valid and within memory capacity
  /// Rejections per rule name (first failing rule), most frequent first.
  std::vector<std::pair<std::string, int64_t>> rejected_by_rule;
  /// Among valid layouts, the one needing least memory (set when any layout was valid).
  std::optional<Candidate> least_memory;
  /// Why the walk stopped early ("" = it covered the whole space): "deadline",
  /// "max_layouts" or "memory" (PlanRequest::max_memory_bytes). The counts and results above are those of the part searched.
  std::string stopped;
  /// With stopped == "memory": the resident size (bytes, /proc/self/statm) that was above the
  /// budget when the search stopped (the largest over the search threads); else 0.
  int64_t stopped_resident_bytes = 0;
  /// (mesh, features) subtrees skipped by branch-and-bound (PlanRequest::prune).
  int64_t pruned = 0;
  /// Valid layouts of the scored subtrees skipped by branch-and-bound one by one: their step's
  /// lower bound at their own micro-batch count (CostModel::StepLowerBoundOf) is above the
  /// threshold. Counted in `valid`, not scored, so not in `fitting`.
  int64_t pruned_layouts = 0;
  /// Fitting layouts with activation recompute left out of `top` because the same layout
  /// without recompute also passes every rule and fits: recompute would only add time. Counted
  /// among those no slower than the pruning threshold (the top_n-th best step of the search's
  /// first phase; all of them with `prune` false), so the count does not depend on the search
  /// threads' timing.
  int64_t recompute_dominated = 0;
};

/// Every layout the planner considers for `req` (all strategies, sizes dividing the GPU
/// count, micro-batch and local batch sizes dividing the per-rank batch, schedules,
/// VPP degrees, SP, recompute). AutoModel: not yet filtered by the rules.
/// Megatron-Bridge (req.framework): TP, CP, PP dividing the GPU count; per PP one layer split
/// (even, else embedding and loss accounted, else an explicit layout) and every VPP it allows;
/// EP dividing the experts; ETP unset or 1; DP flavour DDP + distributed optimizer, plain DDP,
/// Megatron FSDP (optim_grads_params) or torch FSDP2; SP exactly when TP > 1; recompute none,
/// selective or full (uniform, 1 layer); micro-batch powers of two up to max_micro_batch. That
/// space is too large to list whole at 1000+ GPUs, so subtrees whose mesh or feature choices
/// already break a rule are not expanded: the list holds the layouts that pass the mesh and
/// feature rules (batch rules not yet applied).
std::vector<Layout> EnumerateLayouts(const PlanRequest& req);
/// A test of a mesh-level layout (mesh fields set, features and batch not yet chosen): false
/// skips the mesh and every layout under it before any of their rules is tested.
using MeshFilter = std::function<bool(const Layout& mesh)>;
/// EnumerateLayouts' layouts passed to `visit` one by one, in the same order, without holding
/// the list (its memory is one subtree's leaves); `visit` returns false to stop. With
/// `keep_mesh`, only the layouts of the meshes it keeps (it is called from the search threads).
void ForEachLayout(const PlanRequest& req, const std::function<bool(const Layout&)>& visit,
                   const MeshFilter& keep_mesh = {});

/// Runs the search. Never throws for a request whose model and system loaded.
PlanResult Plan(const PlanRequest& req);

/// A valid layout near a given one (`meshplan check`).
struct NearbyLayout {
  Candidate candidate;
  std::vector<std::string> changes;  ///< "field: old -> new", one per changed layout field
  int edits = 0;  ///< EditCount(changes): the decisions changed (recompute's keys are one)
  /// Why it is listed when not for its speed alone: "the one-edit fix (expert_model_parallel_size
  /// 16 -> 8); alone it needs 96.3 GiB, above the 71.2 GiB usable: with recompute full it fits".
  std::string note;
  /// Not edits: settings the recipe leaves unset (priced off) that this layout's recipe turns on,
  /// where that changes its predicted memory or step time (PricedNotes), "tp_comm_overlap:
  /// unset (off) -> true". Filled for the listed layouts only (NearestValidLayouts).
  std::vector<std::string> notes;
};

/// The decisions `changes` (LayoutChanges) make, each counted once: a recompute setting with its
/// method, layer count and modules; a TP size with the sequence parallelism, expert TP and TP
/// overlap that go with it; a PP size with its layer split, layout string and P2P settings; an EP
/// size with its dispatcher; the data-parallel flavour with its overlaps. Every other field is
/// one decision.
int EditCount(const std::vector<std::string>& changes);

/// How many edits beyond the fewest that fit check's nearest fixes may make (NearestValidLayouts).
inline constexpr int kNearestExtraEdits = 2;
/// The gain in expected throughput (the out-of-memory risk priced, Risk::expected_step_seconds)
/// an extra edit must buy for a farther fix to be listed: the Megatron-Core step-time model's
/// leave-one-out median |error| on the published runs, 7%.
inline constexpr double kNearestEditGain = 0.07;

/// The layouts NearestValidLayouts chooses among: every valid layout of `req`'s space
/// (ForEachLayout, then every rule; priced with `from`'s software settings,
/// FrameworkOps::nearest_request) within kNearestExtraEdits edits (EditCount) of the fewest that
/// fit, all of them when none fits; scored, in walk order, with their changes. `first_fit` (when
/// not null) is set to that fewest, -1 when none fits. The walk is bounded by edits: a mesh
/// whose own fields already make more edits than needed is skipped before its rules.
/// Never throws for loaded inputs.
std::vector<NearbyLayout> NearbyValidLayouts(const PlanRequest& req, const Layout& from, int* first_fit = nullptr);

/// The `n` valid layouts of the planner's space (EnumerateLayouts, then every rule, and the
/// fastest fitting layouts of the planner's search, Plan, with `from`'s software settings, and
/// plan's first layouts with the job's recipe function's settings where they differ) that fix
/// `from` with the fewest edits, ranked as plan ranks among those edits. The candidates are the
/// fitting layouts within kNearestExtraEdits edits (EditCount) of the fewest that fit, each with
/// its Risk (AssessRisk of the job's kind). A candidate is listed when it has the fewest edits
/// that fit, or its expected step (the out-of-memory risk priced) is shorter by more than
/// kNearestEditGain than every nearer one's (so a farther fix is shown only where it is worth its
/// edits, and a fix is never worse than a nearer one); the listed ones are ranked as plan's
/// RiskRanked with distinct layouts (expected step; within the step band of the first, by
/// MoreRobust); then the rest by edits and expected step. The one-edit fix (the best valid layout
/// that changes one decision) is listed with a note when it is not already: with what it needs
/// to fit (recompute), or on how many GPUs it fits as it is (FewestGpusFor), or why it is not
/// first. Layouts that fit come before those that do not. Never throws for loaded inputs.
std::vector<NearbyLayout> NearestValidLayouts(const PlanRequest& req, const Layout& from, int n);

/// The fields one layout changes from another (FrameworkOps::nearest_changes and LayoutChanges
/// fill it): as "field: old -> new" lines for the report, or as the changed fields alone, which
/// is what counting edits needs (no string is built then). Apart from them, in text mode with a
/// pricer (set_pricer), its notes: settings the recipe leaves unset that the other layout's
/// recipe turns on, each kept only where the cost model prices it (PricedNotes).
class LayoutDiff {
 public:
  enum class Mode {
    kText,        ///< the lines and the fields
    kFields,      ///< the changed fields only
    kMeshFields,  ///< the changed fields among those set with the mesh only (Space::Meshes:
                  ///< features and batch are not compared), a lower bound of a layout's edits
  };
  explicit LayoutDiff(Mode mode) : mode_(mode) {}
  bool text() const { return mode_ == Mode::kText; }
  /// True when only the mesh-level fields are compared: a framework's nearest_changes stops
  /// after them (they come first).
  bool mesh_only() const { return mode_ == Mode::kMeshFields; }
  /// Records a changed field; `line()` gives its "field: old -> new" line, built in text mode only.
  template <typename Line>
  void Add(const char* field, Line&& line) {
    fields_.push_back(field);
    if (text()) lines_.push_back(line());
  }
  /// Whether the layout compared against, with one setting as the recipe has it (`as_recipe`),
  /// is priced otherwise than as it is: true when its predicted memory or step time differs.
  using Pricer = std::function<bool(const Layout& as_recipe)>;
  /// Makes Note record its lines (text mode only), each where `priced` says the setting matters.
  void set_pricer(Pricer priced) { priced_ = std::move(priced); }
  /// Records a line that is not an edit: `field`, left unset by the recipe (priced off), is set
  /// to `value` by the other layout's recipe; "field: unset (off) -> value" in notes(). Kept only
  /// with a pricer that says the other layout, with the field unset (`as_recipe()`), is priced
  /// otherwise; nothing is built without one.
  template <typename AsRecipe>
  void Note(const char* field, const char* value, AsRecipe&& as_recipe) {
    if (text() && priced_ && priced_(as_recipe())) notes_.push_back(std::string(field) + ": unset (off) -> " + value);
  }
  const std::vector<const char*>& fields() const { return fields_; }
  std::vector<std::string>& lines() { return lines_; }
  std::vector<std::string>& notes() { return notes_; }
  /// The decisions the changed fields make (EditCount of the lines, without them).
  int Edits() const;

 private:
  Mode mode_;
  std::vector<const char*> fields_;
  std::vector<std::string> lines_;
  std::vector<std::string> notes_;
  Pricer priced_;
};

/// Fills `out` with the fields that differ from `from` to `to` (FrameworkOps::nearest_changes,
/// with the framework's recompute key, then sequence parallel unless `out` compares mesh fields
/// only).
void DiffLayouts(const Layout& from, const Layout& to, int64_t num_layers, const TrainSetup& setup, LayoutDiff& out);

/// A layout run as it is on more GPUs: its model-parallel sizes, data parallelism grown.
struct MoreGpus {
  int64_t gpus = 0;  ///< world size
  Layout layout;     ///< `dp` = gpus / (tp x pp x cp)
  Cost cost;         ///< scored at `gpus` with the request's sequence length and global batch
};

/// The fewest GPUs above `req.setup.num_gpus` (multiples of tp x pp x cp, at most 16 times the
/// request's) on which `l` passes every rule of its framework and fits the usable memory, with
/// the data-parallel size grown to fill them; nullopt when none does. What `check` says when a
/// recipe, or its one-edit fix, only divides or only fits with more GPUs. Never throws for loaded
/// inputs.
std::optional<MoreGpus> FewestGpusFor(const PlanRequest& req, const Layout& l);

/// The layout fields that differ from `from` to `to`, "field: old -> new" in the keys of the
/// recipe `to` would be written as (FrameworkOps::nearest_changes, then sequence parallel): the
/// keys a user edits, AutoModel's activation_checkpointing and Megatron-Bridge's
/// recompute_granularity among them. What NearbyLayout::changes lists.
std::vector<std::string> LayoutChanges(const Layout& from, const Layout& to, int64_t num_layers, const TrainSetup& setup);

/// The settings `from` (a recipe read) leaves unset, priced off, that the recipe of `to` turns on
/// (LayoutDiff::Note of FrameworkOps::nearest_changes), each only where it changes `to`'s
/// predicted memory or step time under `cost` (Score of `to` with the setting unset against
/// `to` as it is): an overlap that has nothing to overlap in `to` (batch_p2p_comm or
/// overlap_p2p_comm with PP 1, tp_comm_overlap with TP 1, overlap_grad_reduce with one DP and
/// one expert-DP rank) or that the cost model does not read is left out. "field: unset (off) ->
/// true" lines, in nearest_changes' order. Never throws for loaded inputs.
std::vector<std::string> PricedNotes(const Layout& from, const Layout& to, int64_t num_layers, const TrainSetup& setup,
                                     const CostModel& cost);

/// How a recipe's layout compares with the planner's own search for the same job
/// (`meshplan check`).
struct PlanComparison {
  int searched = 0;      ///< how many of the planner's first fitting layouts it is compared with
  /// The recipe's rank as plan ranks (RiskRanked: by expected step, Risk::expected_step_seconds,
  /// the OOM risk priced in; those within the step band of the first tied and ordered by
  /// robustness): plan's own row number when plan lists the recipe's layout, else the place it
  /// takes among plan's rows. With risk ranking off: 1 + the layouts whose predicted step is
  /// strictly shorter (1e-9 relative).
  int64_t rank = 0;
  bool tie = false;      ///< that rank is a tie, as plan's table marks it ("2=")
  bool beyond = false;   ///< ranked after all `searched` of them
  std::optional<Candidate> fastest;  ///< the planner's first layout, its rank 1 (unset: none fits)
  /// The recipe's expected step / the planner's first's expected step - 1 (0.12: 12% slower).
  double gap = 0;
  double band = 0;       ///< the job's step-time band (StepErrorBand): a gap within it is a tie
  Risk own;              ///< the recipe's risk (AssessRisk of its predicted cost)
  std::vector<std::string> changes;  ///< LayoutChanges from the recipe's layout to the fastest
  std::vector<std::string> notes;    ///< PricedNotes from the recipe's layout to the fastest
  std::string stopped;   ///< PlanResult::stopped of the search ("" = whole space)
};

/// Searches `req`'s space with the software settings of `from` (FrameworkOps::nearest_request:
/// a recipe's dispatcher, overlap and CUDA graphs price the layouts it is compared with), ranked
/// as plan ranks (req.risk_ranking: by expected step, ties by robustness), and places `from`,
/// predicted at `own`, among the `top_n` first fitting layouts as plan would rank it (its rank
/// the one plan prints for the same layout, ties included).
/// Never throws for loaded inputs.
PlanComparison CompareWithPlan(const PlanRequest& req, const Layout& from, const Cost& own, int top_n);

/// Resident memory of this process in bytes (Linux: /proc/self/statm; elsewhere the peak
/// from getrusage). What PlanRequest::max_memory_bytes is checked against.
int64_t ResidentBytes();

/// Ranking order: faster step first, then less memory, then the simpler layout.
bool RanksBefore(const Candidate& a, const Candidate& b);

/// Expected-step order: lower Risk::expected_step_seconds first, then RanksBefore. The order
/// the search keeps its candidates in under PlanRequest::risk_ranking.
bool ExpectedBefore(const Candidate& a, const Candidate& b);

/// Robustness order among tied layouts: within the memory band first (a margin below
/// Risk::memory_band_bytes ranks after, the smaller shortfall first), then fewer parallel
/// axes above 1 (TP, PP, CP, EP, HSDP replicas), DP > 1 before DP 1, fewer micro-batches per
/// step, every (virtual) pipeline stage holding at least 2 layers, then ExpectedBefore.
/// `layers`: the model's num_layers. Throws nothing.
bool MoreRobust(const Candidate& a, const Candidate& b, int64_t layers, const TrainSetup& setup);

/// True when `a` and `b` have the same mesh and DP flavour (strategy, TP, PP, CP, EP, ETP,
/// DP, HSDP replicas, Megatron's distributed optimizer and FSDP flags): variants of one
/// layout that PlanRequest::distinct_layouts collapses.
bool SameMesh(const Layout& a, const Layout& b);

/// The final order of a search's candidates: `pool` sorted by ExpectedBefore (the search
/// keeps every candidate within the step band of the best and the top_n by expected step:
/// Scorer), the tied ones (expected step within the best's Risk::step_band of the best's,
/// when more than one) first with Risk::tie set: their meshes (SameMesh groups) in MoreRobust
/// order of each mesh's fastest tied variant, a mesh's variants in expected-step order; then
/// the rest by expected step. With `distinct`, only the first of each SameMesh group; at most
/// `top_n`.
std::vector<Candidate> RiskRanked(std::vector<Candidate> pool, int top_n, bool distinct, int64_t layers,
                                  const TrainSetup& setup);

}  // namespace meshplan
