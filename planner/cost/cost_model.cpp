// CostModel: scores one layout (memory of the most loaded rank, step time of the slowest).

#include <algorithm>

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
// ctx.tables must be set; ctx's per-rank pointers are cleared on return.
template <class Visit>
void ForEachScoredRank(cost::Ctx& ctx, const MemoryOptions& opts, bool memory_only, Visit&& visit) {
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
  if (!uniform && plan->ranks.size() > 1 && cost::RankMemoryUsesPytorchTerms(ctx, opts)) {
    terms = cost::PytorchTerms(ctx, opts);
    ctx.pytorch_terms = &terms;
  }
  MemoryBreakdown memory, shared;
  bool have_shared = false;
  for (const cost::RankEntry& e : plan->ranks) {
    ctx.rank_params = &e.params;
    ctx.params_rank = e.rank;
    if (!uniform || e.params.mtp_layers > 0) {
      memory = cost::RankMemory(ctx, e.rank, opts);  // the rank's own (the MTP rank holds more)
    } else {
      if (!have_shared) shared = cost::RankMemory(ctx, e.rank, opts);
      have_shared = true;
      memory = shared;
    }
    visit(e, memory);
    if (uniform && memory_only && ctx.view.mtp_layers == 0) break;  // every rank the same
  }
  ctx.pytorch_terms = nullptr;  // `terms` and `local` end here
  ctx.rank_params = nullptr;
  ctx.params_rank = -1;
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
///   model TFLOP/s/GPU = model_flops / (step·num_gpus) / 1e12; MFU = that / peak(precision)
Cost CostModel::Evaluate(const CostView& layout) const {
  cost::Ctx ctx = cost::MakeCtx(model_, system_, setup_, params_, layout, flops_.get());
  ctx.links = links_.get();
  ctx.tables = tables_.get();
  ctx.defer_fsdp_grad_sync = memory_.defer_fsdp_grad_sync;
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
  ForEachScoredRank(ctx, memory_, /*memory_only=*/false, [&](const cost::RankEntry& e, const MemoryBreakdown& mem) {
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
  });
  const double capacity = system_.gpu.memory_bytes * (1.0 - setup_.headroom);
  const double step = time_of_slowest.Step();
  // Megatron-LM counts the MTP layers a layout trains in its model FLOPs (megatron.md 3.6).
  const double flops =
      model_flops_ + double(setup_.global_batch) * double(setup_.seq_len) * ctx.flops.Mtp(model_, layout.mtp_layers);
  const double gpus = double(std::max<int64_t>(1, setup_.num_gpus));
  double tokens_per_s = 0, tflops = 0, mfu = 0;
  if (step > 0) {
    tokens_per_s = double(setup_.global_batch) * double(setup_.seq_len) / (step * gpus);
    const double flops_per_s = flops / (step * gpus);
    tflops = flops_per_s / 1e12;
    mfu = peak_flops_ > 0 ? flops_per_s / peak_flops_ : 0.0;
  }
  // Every member named: built in place, not zeroed first.
  return Cost{memory, time_of_slowest, capacity, memory.Total() <= capacity, flops, step,
              tokens_per_s, tflops, mfu};
}

double CostModel::MemoryTotal(const CostView& layout) const {
  cost::Ctx ctx = cost::MakeCtx(model_, system_, setup_, params_, layout, flops_.get());
  ctx.links = links_.get();
  ctx.tables = tables_.get();
  MemoryBreakdown best;
  double best_mem = -1.0;
  ForEachScoredRank(ctx, memory_, /*memory_only=*/true, [&](const cost::RankEntry&, const MemoryBreakdown& mem) {
    if (mem.Total() > best_mem) {
      best_mem = mem.Total();
      best = mem;
    }
  });
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
