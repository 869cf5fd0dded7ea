#pragma once
/// \file flops.hpp
/// Per-token FLOP terms of the Megatron-LM formula (megatron.md 3.6), shared by
/// ModelFlopsPerStep and the compute-time model. Private to planner/cost.

#include <cstdint>

#include "meshplan/model.hpp"

namespace meshplan::cost {

/// Dense and MoE decoder-layer counts. A model without experts has only dense layers,
/// whatever num_dense_layers says.
struct LayerMix {
  int64_t dense = 0;
  int64_t moe = 0;
};
LayerMix ModelLayerMix(const ModelSpec& model);

/// FLOP per token for forward + backward (the factor 6 = 3 passes x 2 FLOP per MAC is
/// included), per decoder layer unless stated. Source: Megatron-LM
/// megatron/training/training.py::num_floating_point_operations / transformer_flops.
struct FlopsPerToken {
  double attn_linear_flops = 0;  ///< A_lin: attention projections (GQA or MLA)
  double attn_core_flops = 0;    ///< s·A_core: causal QK^T and PV for a sequence of seq_len (mean over layers with sliding windows)
  double dense_mlp_flops = 0;    ///< 6·h·c·f, c = 3 (SwiGLU), dense layers
  double shared_flops = 0;       ///< 6·h·c·f_s, MoE layers
  double routed_flops = 0;       ///< 6·h·c·f_e·k, MoE layers (top-k experts)
  double logits_flops = 0;       ///< 6·h·V, once per token (no MTP)
  /// Hybrid models, per Mamba-2 block: in_proj and out_proj GEMMs (MambaLinearFlops) and the
  /// SSD chunked scan (SsdScanFlops, cost/hybrid.hpp); 0 for the flat models.
  double mamba_linear_flops = 0;
  double ssd_flops = 0;
  /// Per Gated DeltaNet block: its projections (GdnLinearFlops) and the chunked gated delta
  /// rule (GdnChunkFlops, cost/hybrid.hpp); 0 without such blocks.
  double gdn_linear_flops = 0;
  double gdn_chunk_flops = 0;

  /// Linear (GEMM) FLOP of one dense / MoE layer, attention core excluded.
  double DenseLayerLinear() const { return attn_linear_flops + dense_mlp_flops; }
  double MoeLayerLinear() const { return attn_linear_flops + shared_flops + routed_flops; }
  /// Whole model per token: sum over layers + logits.
  double Total(const LayerMix& mix) const;
  /// One MTP layer per token beyond its decoder layer: 6·(3h + 2h²) for enorm, hnorm, the final
  /// norm and eh_proj (2h -> h), as Megatron-LM counts them (training.py transformer_flops).
  double mtp_extra_flops = 0;
  /// One MTP layer per token, all of it: its decoder layer (the model's last layer type, `moe`),
  /// mtp_extra_flops and its logits (6·h·V).
  double MtpLayer(bool moe) const {
    return (moe ? MoeLayerLinear() : DenseLayerLinear()) + attn_core_flops + mtp_extra_flops + logits_flops;
  }
  /// `mtp_layers` MTP layers of `model` per token (0 for none or a negative count).
  double Mtp(const ModelSpec& model, int64_t mtp_layers) const {
    return mtp_layers > 0 ? double(mtp_layers) * MtpLayer(model.is_moe()) : 0.0;
  }
};

/// Terms for `model` with sequences of `seq_len` tokens (S2/T = seq_len for BSHD batches).
FlopsPerToken ComputeFlopsPerToken(const ModelSpec& model, int64_t seq_len);

}  // namespace meshplan::cost
