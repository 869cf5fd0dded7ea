// CostModel: scores one layout (memory of the most loaded rank, step time of the slowest).

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "cost/context.hpp"
#include "cost/memory.hpp"
#include "cost/tables.hpp"
#include "cost/time.hpp"
#include "meshplan/cost.hpp"

namespace meshplan {
namespace {

// Calls visit(entry, memory) for each pipeline rank to score (the tables' RankPlan, or one
// built here outside their range: pp above the layer count, only hand-written layouts, and
// for a recipe's pipeline_model_parallel_layout), in
// order, with ctx set to that rank's parameters and `memory` its RankMemory. Where the
// memory profile makes the memory rank-independent (RankMemoryIsUniform) only the first
// rank's is computed, and with `memory_only` the scan stops there; otherwise the "pytorch"
// profile's rank-independent terms are computed once when several ranks are scored (not for
// the Megatron-Core profiles, which do not read them: RankMemoryUsesPytorchTerms).
// ctx.tables must be set; ctx's per-rank pointers are cleared on return. `known`: the
// memories of the ranks in visiting order, already computed (CpVariantMemories below), in place of
// RankMemory. Returns true when every rank of the plan was visited.
template <class Visit>
bool ForEachScoredRank(cost::Ctx& ctx, const MemoryOptions& opts, bool memory_only, Visit&& visit,
                       const MemoryBreakdown* known = nullptr) {
  cost::RankPlan local;
  // A recipe's pipeline layout has its own split: its plan is built here (and so is one for an
  // MTP layer count other than the model's).
  const int64_t mtp = ctx.view.mtp_layers;
  const cost::RankPlan* plan = ctx.split.given != nullptr ? nullptr
                                                          : ctx.tables->Ranks(ctx.view.pp, ctx.split.num_stages, mtp,
                                                                              ctx.view.places);
  if (plan == nullptr) {
    local = cost::BuildRankPlan(ctx.model, ctx.params, ctx.view.pp, ctx.split.num_stages, ctx.split.given, mtp,
                                ctx.view.places);
    plan = &local;
  }
  const bool uniform = cost::RankMemoryIsUniform(ctx, opts);
  cost::PytorchRankTerms terms;
  if (!uniform && cost::RankMemoryUsesPytorchTerms(ctx, opts)) {
    terms = cost::PytorchTerms(ctx, opts);
    ctx.pytorch_terms = &terms;
  }
  MemoryBreakdown memory, shared;
  bool have_shared = false;
  size_t visited = 0;
  for (const cost::RankEntry& e : plan->ranks) {
    ctx.rank_params = &e.params;
    ctx.params_rank = e.rank;
    if (known != nullptr) {
      memory = known[visited];
    } else if (!uniform || e.params.mtp_layers > 0) {
      memory = cost::RankMemory(ctx, e.rank, opts);  // the rank's own (the MTP rank holds more)
    } else {
      if (!have_shared) shared = cost::RankMemory(ctx, e.rank, opts);
      have_shared = true;
      memory = shared;
    }
    visit(e, memory);
    ++visited;
    if (uniform && memory_only && ctx.view.mtp_layers == 0) break;  // every rank the same
  }
  ctx.pytorch_terms = nullptr;  // `terms` and `local` end here
  ctx.rank_params = nullptr;
  ctx.params_rank = -1;
  return visited == plan->ranks.size();
}

// The per-rank memories of the last Megatron-Core layouts Evaluate scored, per thread, one
// per slot of a hash of the fields a mesh's variants differ in. The cp_comm_type variants of a
// layout (CostView::cp_comm and cp_a2a, the view's last fields) hold the same memory: no
// memory term reads them (cost/memory.cpp, memory_megatron.cpp, hybrid.cpp), so a layout
// whose view agrees byte for byte up to cp_comm with a stored one, under the same CostModel
// inputs (tables, setup, memory options), takes the stored memories instead of RankMemory.
// Padding compares too: a difference there is a miss, never a wrong value.
class CpVariantMemories {
 public:
  static constexpr size_t kRanks = 4;  ///< layouts scoring more pipeline ranks are not kept
  static constexpr size_t kPrefix = offsetof(CostView, cp_comm);
  /// The stored memories of `view` under (tables, setup, opts), or nullptr; `ranks` (when set)
  /// receives their count.
  const MemoryBreakdown* Find(uint64_t tables, const TrainSetup& setup, const MemoryOptions& opts,
                              const CostView& view, size_t* ranks = nullptr) {
    Entry& e = entries_[SlotOf(view, setup)];
    const TrainSetup& k = e.setup;
    if (!e.used || e.tables != tables || k.num_gpus != setup.num_gpus || k.seq_len != setup.seq_len ||
        k.global_batch != setup.global_batch || k.precision != setup.precision ||
        std::memcmp(&e.opts, &opts, sizeof opts) != 0 || std::memcmp(e.view, &view, kPrefix) != 0) {
      return nullptr;
    }
    if (ranks != nullptr) *ranks = e.ranks;
    return e.memory;
  }
  /// Keeps `ranks` (at most kRanks) memories of `view`, replacing its slot's.
  void Store(uint64_t tables, const TrainSetup& setup, const MemoryOptions& opts, const CostView& view,
             const MemoryBreakdown* memory, size_t ranks) {
    Entry& e = entries_[SlotOf(view, setup)];
    e.used = true;
    e.tables = tables;
    e.setup = setup;  // the memory reads its num_gpus, seq_len, global_batch and precision
    std::memcpy(&e.opts, &opts, sizeof opts);
    std::memcpy(e.view, &view, kPrefix);
    std::copy(memory, memory + ranks, e.memory);
    e.ranks = ranks;
  }

 private:
  struct Entry {
    bool used = false;
    uint64_t tables = 0;
    TrainSetup setup;
    MemoryOptions opts;
    unsigned char view[kPrefix] = {};
    MemoryBreakdown memory[kRanks];
    size_t ranks = 0;
  };
  static constexpr size_t kSlots = 256;
  // Any function of the view would do (Find compares it whole): the fields a mesh's features,
  // micro-batches, DP flavours and dispatchers set, and the global batch (the memory probes'
  // CostModels have their own), mixed by multiplication.
  static size_t SlotOf(const CostView& v, const TrainSetup& setup) {
    uint64_t h = uint64_t(v.micro_batch) ^ uint64_t(setup.global_batch) << 20;
    for (uint64_t x : {uint64_t(v.recompute), uint64_t(v.recompute_modules), uint64_t(v.dp_impl),
                       uint64_t(v.distributed_optimizer), uint64_t(v.dispatcher), uint64_t(v.flex_backend),
                       uint64_t(v.tp), uint64_t(v.pp), uint64_t(v.ep), uint64_t(v.etp), uint64_t(v.vpp),
                       uint64_t(v.cp)}) {
      h = h * 0x100000001B3ull ^ x;
    }
    h *= 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 56) & (kSlots - 1);
  }
  Entry entries_[kSlots];
};

// This thread's CpVariantMemories (Evaluate stores, Evaluate and MemoryTotal read).
CpVariantMemories& CpMemo() {
  thread_local CpVariantMemories memo;
  return memo;
}

}  // namespace

CostModel::CostModel(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup,
                     const MemoryOptions& memory)
    : model_(model),
      system_(system),
      setup_(setup),
      params_(CountParams(model)),
      memory_(memory),
      model_flops_(ModelFlopsPerStep(model, setup)),
      peak_flops_(cost::PeakFlops(system.gpu, setup.precision)),
      flops_(std::make_shared<const cost::FlopsPerToken>(cost::ComputeFlopsPerToken(model, setup.seq_len))),
      links_(cost::SharedLinkTable(system, setup.num_gpus, model.num_experts)),
      tables_(std::make_shared<const cost::CostTables>(model, params_)) {}

CostModel CostModel::WithSetup(const TrainSetup& setup) const {
  CostModel out = *this;  // model, system, parameter counts, memory options, tables
  out.setup_ = setup;
  out.model_flops_ = ModelFlopsPerStep(model_, setup);
  out.peak_flops_ = cost::PeakFlops(system_.gpu, setup.precision);
  if (setup.seq_len != setup_.seq_len) {
    out.flops_ = std::make_shared<const cost::FlopsPerToken>(cost::ComputeFlopsPerToken(model_, setup.seq_len));
  }
  if (setup.num_gpus != setup_.num_gpus) out.links_ = cost::SharedLinkTable(system_, setup.num_gpus, model_.num_experts);
  return out;
}

/// Evaluates every pipeline rank (rank 0 holds the most in-flight micro-batches and the
/// embedding, rank pp-1 the lm_head and logits, a middle rank may hold more layers) and
/// reports the largest memory total and the longest step. Allocation-free: everything is
/// arithmetic on the precomputed params_ and the layout.
///   capacity = gpu.memory_bytes · (1 − headroom); fits = total ≤ capacity
///   tokens/s/GPU = global_batch·seq_len / (step·num_gpus)
///   model TFLOP/s/GPU = model_flops / (step·num_gpus) / 1e12; MFU = that / BF16 dense peak,
///   mfu_precision_peak = that / dense peak of the precision (PeakFlops)
Cost CostModel::Evaluate(const CostView& layout) const {
  cost::Ctx ctx = cost::MakeCtx(model_, system_, setup_, params_, layout, flops_.get());
  ctx.links = links_.get();
  ctx.tables = tables_.get();
  ctx.defer_fsdp_grad_sync = memory_.defer_fsdp_grad_sync || layout.defer_fsdp_grad_sync;
  ctx.fp32_params = memory_.fp32_params;
  // Ranks with the same layers, embedding and head have the same step time, and the first
  // of them holds the most in-flight micro-batches (InflightMicrobatches is non-increasing
  // in the rank), hence the most memory: only that one is evaluated (cost::RankPlan, built
  // once per (pp, stage count)). The "megatron" profile's memory does not depend on the
  // rank: computed once; the "pytorch" profile's rank-independent terms likewise.
  MemoryBreakdown memory;
  TimeBreakdown time_of_slowest;
  double best_mem = -1.0, best_step = -1.0;
  const bool megatron = layout.runtime == CostRuntime::kMegatronCore;
  const cost::MegatronShared mshared = megatron ? cost::MegatronLayoutShared(ctx) : cost::MegatronShared{};
  // The memories of a cp_comm_type variant scored before (CpVariantMemories), for the layouts whose
  // memory the memo can hold (CostTables, no recipe pipeline layout).
  CpVariantMemories& memo = CpMemo();
  const bool memoised = megatron && layout.cp > 1 && layout.split.given == nullptr;
  const MemoryBreakdown* known = memoised ? memo.Find(tables_->Id(), setup_, memory_, layout) : nullptr;
  MemoryBreakdown seen[CpVariantMemories::kRanks];
  size_t ranks = 0;
  ForEachScoredRank(ctx, memory_, /*memory_only=*/false, [&](const cost::RankEntry& e, const MemoryBreakdown& mem) {
    if (ranks < CpVariantMemories::kRanks) seen[ranks] = mem;
    ++ranks;
    const TimeBreakdown time =
        megatron ? cost::MegatronTime(cost::MegatronRankTerms(ctx, mshared, e.rank, mem), system_.megatron_fit,
                                      setup_.precision)
                 : cost::RankTime(ctx, e.rank, mem);
    if (mem.Total() > best_mem) {
      best_mem = mem.Total();
      memory = mem;
    }
    if (time.Step() > best_step) {
      best_step = time.Step();
      time_of_slowest = time;
    }
  }, known);
  if (memoised && known == nullptr && ranks <= CpVariantMemories::kRanks) {
    memo.Store(tables_->Id(), setup_, memory_, layout, seen, ranks);
  }
  const double capacity = system_.gpu.memory_bytes * (1.0 - setup_.headroom);
  const double step = time_of_slowest.Step();
  // Megatron-LM counts the MTP layers a layout trains in its model FLOPs (megatron.md 3.6).
  const double flops =
      model_flops_ + double(setup_.global_batch) * double(setup_.seq_len) * ctx.flops.Mtp(model_, layout.mtp_layers);
  const double gpus = double(std::max<int64_t>(1, setup_.num_gpus));
  double tokens_per_s = 0, tflops = 0, mfu = 0, mfu_precision_peak = 0;
  if (step > 0) {
    tokens_per_s = double(setup_.global_batch) * double(setup_.seq_len) / (step * gpus);
    const double flops_per_s = flops / (step * gpus);
    tflops = flops_per_s / 1e12;
    mfu = system_.gpu.bf16_flops > 0 ? flops_per_s / system_.gpu.bf16_flops : 0.0;
    mfu_precision_peak = peak_flops_ > 0 ? flops_per_s / peak_flops_ : 0.0;
  }
  // Every member named: built in place, not zeroed first.
  return Cost{memory, time_of_slowest, capacity, memory.Total() <= capacity, flops, step,
              tokens_per_s, tflops, mfu, mfu_precision_peak};
}

double CostModel::MemoryTotal(const CostView& layout) const {
  // A cp_comm_type variant's memories, as Evaluate kept them (CpVariantMemories): the most of
  // the ranks Evaluate scored is the most of those this scan reads (all of them, or the first
  // where every rank holds the same).
  const bool memoised = layout.runtime == CostRuntime::kMegatronCore && layout.cp > 1 && layout.split.given == nullptr;
  if (memoised) {
    size_t ranks = 0;
    const MemoryBreakdown* known = CpMemo().Find(tables_->Id(), setup_, memory_, layout, &ranks);
    if (known != nullptr && ranks > 0) {
      double most = -1.0;
      for (size_t i = 0; i < ranks; ++i) most = std::max(most, known[i].Total());
      return most;
    }
  }
  cost::Ctx ctx = cost::MakeCtx(model_, system_, setup_, params_, layout, flops_.get());
  ctx.links = links_.get();
  ctx.tables = tables_.get();
  MemoryBreakdown best;
  double best_mem = -1.0;
  MemoryBreakdown seen[CpVariantMemories::kRanks];
  size_t ranks = 0;
  auto visit = [&](const cost::RankEntry&, const MemoryBreakdown& mem) {
    if (ranks < CpVariantMemories::kRanks) seen[ranks] = mem;
    ++ranks;
    if (mem.Total() > best_mem) {
      best_mem = mem.Total();
      best = mem;
    }
  };
  const bool all = ForEachScoredRank(ctx, memory_, /*memory_only=*/true, visit);
  // Kept for the other variants (their memory probes, their no-recompute twins) when the scan
  // read every rank, as Evaluate's does.
  if (memoised && all && ranks <= CpVariantMemories::kRanks) {
    CpMemo().Store(tables_->Id(), setup_, memory_, layout, seen, ranks);
  }
  return best.Total();
}

std::vector<MemoryBreakdown> CostModel::RankMemories(const CostView& layout) const {
  cost::Ctx ctx = cost::MakeCtx(model_, system_, setup_, params_, layout, flops_.get());
  ctx.links = links_.get();
  ctx.tables = tables_.get();
  std::vector<MemoryBreakdown> out;
  for (int64_t r = 0; r < std::max<int64_t>(1, layout.pp); ++r) out.push_back(cost::RankMemory(ctx, r, memory_));
  return out;
}

}  // namespace meshplan
