// CostModel: scores one layout (memory of the most loaded rank, step time of the slowest).

#include <algorithm>

#include "cost/context.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "meshplan/cost.hpp"

namespace meshplan {

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
      links_(setup.num_gpus <= cost::kMaxGraphWorld ? cost::SharedLinkTable(system, setup.num_gpus, model.num_experts)
                                                      : nullptr) {}

/// Evaluates every pipeline rank (rank 0 holds the most in-flight micro-batches and the
/// embedding, rank pp-1 the lm_head and logits, a middle rank may hold more layers) and
/// reports the largest memory total and the longest step. Allocation-free: everything is
/// arithmetic on the precomputed params_ and the layout.
///   capacity = gpu.memory_bytes · (1 − headroom); fits = total ≤ capacity
///   tokens/s/GPU = global_batch·seq_len / (step·num_gpus)
///   model TFLOP/s/GPU = model_flops / (step·num_gpus) / 1e12; MFU = that / peak(precision)
Cost CostModel::Evaluate(const Layout& layout) const {
  cost::Ctx ctx = cost::MakeCtx(model_, system_, setup_, params_, layout, flops_.get());
  ctx.links = links_.get();
  Cost out;
  const int64_t pp = std::max<int64_t>(1, layout.pp);
  double best_mem = -1.0, best_step = -1.0;
  // Ranks with the same layers, embedding and head have the same step time, and the first
  // of them holds the most in-flight micro-batches (InflightMicrobatches is non-increasing
  // in the rank), hence the most memory: only that one is evaluated.
  struct Seen {
    int64_t dense, moe;
    bool embedding, head;
  };
  Seen seen[8];
  int n_seen = 0;
  for (int64_t r = 0; r < pp; ++r) {
    const cost::LayerMix mix = cost::LayersOfRank(ctx, r);
    const Seen sig{mix.dense, mix.moe, r == 0, r == pp - 1};
    bool dup = false;
    for (int i = 0; i < n_seen && !dup; ++i) {
      dup = seen[i].dense == sig.dense && seen[i].moe == sig.moe && seen[i].embedding == sig.embedding &&
            seen[i].head == sig.head;
    }
    if (dup) continue;
    if (n_seen < 8) seen[n_seen++] = sig;
    const MemoryBreakdown mem = cost::RankMemory(ctx, r, memory_);
    const TimeBreakdown time =
        layout.framework == Framework::kMegatronBridge
            ? cost::MegatronTime(cost::MegatronRankTerms(ctx, r, mem), system_.megatron_fit, setup_.precision)
            : cost::RankTime(ctx, r, mem);
    if (mem.Total() > best_mem) {
      best_mem = mem.Total();
      out.memory = mem;
    }
    if (time.Step() > best_step) {
      best_step = time.Step();
      out.time = time;
    }
  }
  out.capacity_bytes = system_.gpu.memory_bytes * (1.0 - setup_.headroom);
  out.fits = out.memory.Total() <= out.capacity_bytes;
  out.model_flops = model_flops_;
  out.step_seconds = out.time.Step();
  const double gpus = double(std::max<int64_t>(1, setup_.num_gpus));
  if (out.step_seconds > 0) {
    out.tokens_per_s_per_gpu =
        double(setup_.global_batch) * double(setup_.seq_len) / (out.step_seconds * gpus);
    const double flops_per_s = model_flops_ / (out.step_seconds * gpus);
    out.model_tflops_per_gpu = flops_per_s / 1e12;
    out.mfu = peak_flops_ > 0 ? flops_per_s / peak_flops_ : 0.0;
  }
  return out;
}

std::vector<MemoryBreakdown> CostModel::RankMemories(const Layout& layout) const {
  const cost::Ctx ctx = cost::MakeCtx(model_, system_, setup_, params_, layout, flops_.get());
  std::vector<MemoryBreakdown> out;
  for (int64_t r = 0; r < std::max<int64_t>(1, layout.pp); ++r) out.push_back(cost::RankMemory(ctx, r, memory_));
  return out;
}

}  // namespace meshplan
