#pragma once
/// \file cost.hpp
/// Analytical cost model, first version: per-GPU memory and step time of one layout.
/// All figures are for the most loaded rank. Units: bytes, seconds, FLOP, FLOP/s.
/// Formulas and their sources are documented at each function in planner/cost/.

#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"

namespace meshplan {

/// Per-GPU memory in bytes, most loaded rank (PP rank 0 unless stated).
struct MemoryBreakdown {
  double weights = 0;      ///< parameters resident between steps (sharded per strategy)
  double gradients = 0;    ///< gradient buffers (incl. unsharded grads kept by defer_fsdp_grad_sync)
  double optimizer = 0;    ///< fp32 master copy (if any) + Adam exp_avg + exp_avg_sq
  double activations = 0;  ///< saved activations of the in-flight micro-batches
  double logits = 0;       ///< logits + fp32 upcast for the loss (ranks holding lm_head)
  double buffers = 0;      ///< transient: FSDP all-gathered layers, DDP buckets, EP dispatch
  double overhead = 0;     ///< CUDA context + NCCL workspace
  double Total() const {
    return weights + gradients + optimizer + activations + logits + buffers + overhead;
  }
};

/// Step time in seconds. Communication fields are the exposed (not overlapped) part.
struct TimeBreakdown {
  double compute = 0;  ///< forward + backward (+ recompute) GEMM and attention time
  double tp_comm = 0;
  double cp_comm = 0;
  double dp_comm = 0;  ///< FSDP all-gather / reduce-scatter or DDP all-reduce, exposed part
  double ep_comm = 0;
  double pp_comm = 0;
  double bubble = 0;   ///< pipeline bubble
  double optimizer = 0;  ///< optimizer step (HBM-bound)
  double Step() const {
    return compute + tp_comm + cp_comm + dp_comm + ep_comm + pp_comm + bubble + optimizer;
  }
};

/// Result of scoring one layout.
struct Cost {
  MemoryBreakdown memory;
  TimeBreakdown time;
  double capacity_bytes = 0;      ///< GPU memory * (1 - headroom)
  bool fits = false;              ///< memory.Total() <= capacity_bytes
  double model_flops = 0;         ///< model FLOP per optimizer step, whole job (no recompute)
  double step_seconds = 0;        ///< time.Step()
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;  ///< model FLOP/s per GPU / 1e12
  double mfu = 0;                 ///< model FLOP/s per GPU / dense peak of the precision (0..1)
};

/// Model FLOP of one optimizer step (forward + backward, no recompute) for
/// `global_batch` sequences of `seq_len` tokens.
/// Source: Megatron-LM megatron/training/training.py::num_floating_point_operations
/// (megatron.md 3.6): causal attention halved, GQA, MLA, SwiGLU, MoE top-k, logits.
double ModelFlopsPerStep(const ModelSpec& model, const TrainSetup& setup);

/// Everything that depends on (model, system, setup) but not on the layout, computed
/// once; Evaluate() then scores a layout without allocating.
class CostModel {
 public:
  /// Throws nothing; inputs must be valid (loaders validated them).
  CostModel(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup);
  /// Scores a layout that has passed the rules.
  Cost Evaluate(const Layout& layout) const;
  const ModelSpec& model() const { return model_; }
  const SystemSpec& system() const { return system_; }
  const TrainSetup& setup() const { return setup_; }
  const ParamCounts& params() const { return params_; }

 private:
  ModelSpec model_;
  SystemSpec system_;
  TrainSetup setup_;
  ParamCounts params_;
  double model_flops_ = 0;
  double peak_flops_ = 0;  ///< dense peak FLOP/s for setup_.precision
};

}  // namespace meshplan
