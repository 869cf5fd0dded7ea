#pragma once
/// \file memory.hpp
/// Per-GPU memory of one pipeline rank (bytes). Private to planner/cost.

#include <cstdint>

#include "cost/context.hpp"

namespace meshplan::cost {

/// Activation bytes per token of one decoder layer, grouped by how tensor parallelism
/// divides them.
struct ActBytes {
  double rep = 0;      ///< replicated over TP ranks, split by tp only with sequence_parallel
  double split = 0;    ///< head- or width-sharded: divided by tp
  double unsplit = 0;  ///< never divided by tp (routed experts are EP-owned, not TP-split)
  double PerRank(int64_t tp, bool sequence_parallel) const {
    const double t = double(tp < 1 ? 1 : tp);
    return rep / (sequence_parallel ? t : 1.0) + split / t + unsplit;
  }
};

/// Bytes per token that one layer keeps for backward under `recompute` (formulas in
/// memory.cpp). kFull returns only the checkpointed layer input.
ActBytes LayerActivationBytes(const ModelSpec& model, bool moe_layer, Recompute recompute);

/// Micro-batches (in units of "all the rank's layers") whose activations PP rank `pp_rank`
/// holds at its peak. 1 without PP.
double InflightMicrobatches(const Layout& layout, const StageSplit& split, int64_t pp_rank);

/// Memory of PP rank `pp_rank`.
MemoryBreakdown RankMemory(const Ctx& c, int64_t pp_rank);

/// Fixed per-GPU overhead: CUDA context, cuBLAS and NCCL workspaces. Assumption (not
/// measured here; typical for PyTorch + NCCL on Hopper): 1 GiB.
inline constexpr double kRuntimeOverheadBytes = 1024.0 * 1024.0 * 1024.0;
/// NCCL buffers per communicator actually used (group size > 1). Assumption: 128 MiB.
inline constexpr double kNcclBytesPerGroup = 128.0 * 1024.0 * 1024.0;
/// torch DDP default bucket_cap_mb = 25 MiB; two buckets assumed in flight.
inline constexpr double kDdpBucketBytes = 25.0 * 1024.0 * 1024.0;
inline constexpr double kDdpBucketsInFlight = 2.0;
/// AutoModel `distributed.moe.reshard_after_forward` default (false, automodel.md 1.2):
/// when ep > 1 and ep_shard > 1 the gathered experts stay resident from forward to backward.
inline constexpr bool kMoeReshardAfterForward = false;

}  // namespace meshplan::cost
