#pragma once
/// \file cp_comm.hpp
/// The context-parallel exchange of one Megatron-Core attention layer under each of
/// Megatron-Core's cp_comm_types (Transformer Engine's CP attention), per micro-batch. Private to
/// planner/cost.

#include <algorithm>
#include <cstdint>

#include "cost/comm.hpp"

namespace meshplan::cost {

/// Ranks whose sequence chunks a rank's attention core is split over, AttentionLengthFactor's
/// `cp`: the ring's cp for p2p; 1 for a2a (each rank attends the whole sequence on cp-th of the
/// heads) and all_gather (each query chunk streams the gathered key prefix, as the unsplit causal
/// attention does); cp / cp_a2a for a2a+p2p (the ring between the a2a sub-groups, each ring
/// chunk cp_a2a times longer). 1 without CP.
int64_t CpRingRanks(const CostView& view);

/// One attention layer's CP exchange for one micro-batch on one rank.
struct CpLayerInputs {
  double kv_bytes = 0;      ///< K and V of the rank's T tokens on one TP rank, BF16: T·(d_K + d_V)/tp·2
  double qkv_bytes = 0;     ///< Q, K and V of them: T·(d_Q + d_K + d_V)/tp·2
  double o_bytes = 0;       ///< the attention output of them: T·d_O/tp·2
  double core_seconds = 0;  ///< the layer's attention core on the rank, forward + backward (+ recompute), s
  int64_t cp = 1;
  int64_t a2a = 1;          ///< kA2aP2p: ranks of the a2a level (hierarchical_context_parallel_sizes[0])
  bool full = false;        ///< full recompute: the forward's exchange runs again
};
/// The links of the CP group {cp, stride} and, for a2a+p2p, of its two levels: the a2a level
/// {a2a, stride} (consecutive CP ranks: parallel_state.py create_hierarchical_groups) and the
/// ring level {cp / a2a, stride·a2a}.
struct CpLinks {
  Link ring;        ///< ring / p2p / all-gather link of the CP group
  Link a2a;         ///< all-to-all link of the CP group
  Link inner_a2a;   ///< all-to-all link of the a2a level (kA2aP2p)
  Link outer_ring;  ///< ring link of the p2p level (kA2aP2p)
};
/// The links `view`'s cp_comm_type uses, of the CP group `cp` ({cp, stride tp}: LayoutGroups),
/// from `table` where it holds the shape (RingLink, A2aLink). Throws nothing.
CpLinks CpLinksOf(const SystemSpec& system, const LinkTable* table, const CostView& view, Group cp);

/// Exposed seconds of the exchange, by type (Transformer Engine
/// pytorch/attention/dot_product_attention/context_parallel.py, d0067d0d):
///   p2p (AttnFuncWithCPAndKVP2P): cp − 1 sends of kv_bytes around the ring forward, twice the
///     bytes backward (K, V and their gradients), the forward again under full recompute:
///     (full ? 4 : 3)·(cp − 1)·P2pSeconds(kv_bytes, ring), overlapped with the core (the sends run
///     on cp_stream beside each step's attention): max(0, that − core_seconds).
///   all_gather (AttnFuncWithCPAndKVAllGather, "KV all-gather between CP ranks is exposed"):
///     forward all-gathers K and V (cp·kv_bytes gathered), backward gathers them again and
///     reduce-scatters dK, dV: (full ? 4 : 3)·AllGatherSeconds(cp·kv_bytes, cp, ring), exposed.
///   a2a (AttnFuncWithCPAndQKVOA2A, flash_attn_a2a_communicate): forward all-to-alls Q, K, V
///     before the core and the output after it, backward dO and dQ, dK, dV the same sizes; each
///     is waited for before the kernel that reads it: (full ? 3 : 2)·(AllToAllSeconds(qkv_bytes,
///     cp, a2a) + AllToAllSeconds(o_bytes, cp, a2a)), exposed.
///   a2a+p2p (AttnFuncWithCPAndKVP2P with cp_group [a2a, p2p]): the a2a terms over the a2a level
///     (exposed), then the p2p ring over cp / a2a ranks with chunks of the same kv_bytes (a2a
///     times the tokens, 1/a2a of the heads), hidden behind the core as for p2p.
/// 0 at cp <= 1. Throws nothing.
double CpLayerExposedSeconds(CpCommType type, const CpLayerInputs& in, const CpLinks& links);

/// CpLayerExposedSeconds summed over the n micro-batches of a step that splits T tokens
/// evenly, in closed form: every term of it is a latency per micro-batch plus a part linear
/// in the micro-batch's tokens, or (the rings hidden behind the core) the positive part of
/// such a sum, so n·CpLayerExposedSeconds(in at T/n tokens) =
///   T·linear_per_token + n·linear_per_micro_batch + max(0, T·ring_per_token + n·ring_per_micro_batch)
/// (ring_per_micro_batch >= 0). `per_token` holds the inputs of one token (kv_bytes,
/// qkv_bytes, o_bytes, core_seconds per token). Used by the search's lower bound
/// (planner/cost/bounds.cpp) to price the exchange of every micro-batch count at once;
/// tests/cost/cp_comm_test.cpp checks it against CpLayerExposedSeconds.
struct CpStepPieces {
  double linear_per_token = 0, linear_per_micro_batch = 0;
  double ring_per_token = 0, ring_per_micro_batch = 0;
  /// The step's exchange (s) for `tokens` in `micro_batches`.
  double At(double tokens, double micro_batches) const {
    return tokens * linear_per_token + micro_batches * linear_per_micro_batch +
           std::max(0.0, tokens * ring_per_token + micro_batches * ring_per_micro_batch);
  }
};
CpStepPieces CpLayerStepPieces(CpCommType type, const CpLayerInputs& per_token, const CpLinks& links);

}  // namespace meshplan::cost
