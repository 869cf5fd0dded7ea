// Layout-derived quantities shared by memory and time.

#include "cost/context.hpp"

#include "cost/hybrid.hpp"

#include <algorithm>

namespace meshplan::cost {

namespace {

// LayoutGroups is integer divisions mostly, and the leaves of a subtree share its inputs: a
// per-thread memo keyed by every field it reads (a pure function: the same results).
// SplitStages memoises itself (layout.cpp).
MeshGroups MemoLayoutGroups(const CostView& l, int64_t world) {
  struct Slot {
    bool used = false;
    int64_t tp = 0, cp = 0, pp = 0, ep = 0, dp = 0, rep = 0, world = 0;
    MeshGroups groups;
  };
  thread_local Slot last;
  if (!last.used || last.world != world || last.tp != l.tp || last.cp != l.cp || last.pp != l.pp || last.ep != l.ep ||
      last.dp != l.dp || last.rep != l.dp_replicate) {
    last = Slot{true, l.tp, l.cp, l.pp, l.ep, l.dp, l.dp_replicate, world, LayoutGroups(l, world)};
  }
  return last.groups;
}

}  // namespace

Ctx MakeCtx(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup,
            const ParamCounts& params, const CostView& layout, const FlopsPerToken* flops) {
  const int64_t grad_accum = std::max<int64_t>(1, layout.grad_accum);
  const int64_t mb_per_call = std::max<int64_t>(1, layout.mb_per_call);
  const double tokens_per_mb = double(layout.micro_batch) * double(setup.seq_len) /
                               double(std::max<int64_t>(1, layout.cp));
  // Every member named: the struct is built in place, not zeroed first.
  return Ctx{model,
             system,
             setup,
             params,
             layout,
             layout.split,
             MemoLayoutGroups(layout, setup.num_gpus),
             grad_accum,
             mb_per_call,
             grad_accum * mb_per_call,
             tokens_per_mb,
             flops ? *flops : ComputeFlopsPerToken(model, setup.seq_len),
             nullptr,
             nullptr,
             nullptr,
             -1,
             nullptr};
}

namespace {

// The PP rank holding the MTP layers: that of the given layout's 'm' stage (-1 without one),
// else that of the last stage (rank 0 without stages).
int64_t MtpRank(int64_t pp, int64_t num_stages, const PpLayerLayout* given) {
  const int64_t stage = given != nullptr ? given->StageOf('m') : std::max<int64_t>(1, num_stages) - 1;
  return stage >= 0 ? stage % pp : -1;
}

}  // namespace

namespace {

// The blocks of a hybrid model on `pp_rank`: the layers of its stages as LayersOfRank splits
// them, counted by kind (Megatron-Core select_pipeline_segment: a pattern without '|' is cut
// into consecutive runs of layers, stage s on rank s % pp).
//
// The rank holding the MTP layers (MtpRank) also runs mtp_layers depths of the MTP block
// pattern (ModelSpec::mtp_pattern): counted as that many blocks of each kind, for time and for
// activations. Megatron-Bridge's mtp_use_repeated_layer shares one depth's parameters between
// the depths, so the parameters these counts imply are mtp_layers - 1 blocks too many (an
// overcount of about one MoE block's experts / EP on that rank).
HybridBlocks HybridBlocksOfRank(const ModelSpec& m, int64_t pp, int64_t num_stages, int64_t pp_rank,
                                const PpLayerLayout* given, SplitPlaces places, int64_t mtp_layers) {
  HybridBlocks r;
  if (mtp_layers > 0 && pp_rank == MtpRank(pp, num_stages, given)) {
    for (const LayerBlock& x : m.mtp_pattern) {
      r.attention += mtp_layers * (x.mixer == MixerKind::kAttention || x.mixer == MixerKind::kDeepseekV4Attention);
      r.mamba += mtp_layers * (x.mixer == MixerKind::kMamba2);
      r.gdn += mtp_layers * (x.mixer == MixerKind::kGatedDeltaNet);
      r.dense += mtp_layers * (x.mlp == MlpKind::kDense);
      r.moe += mtp_layers * (x.mlp == MlpKind::kMoe);
    }
  }
  auto add = [&](int64_t first, int64_t count) {
    const HybridBlocks b = HybridBlocksIn(m, first, count);
    r.attention += b.attention;
    r.mamba += b.mamba;
    r.gdn += b.gdn;
    r.dense += b.dense;
    r.moe += b.moe;
  };
  if (given != nullptr) {
    int64_t start = 0;
    for (size_t s = 0; s < given->stages.size(); ++s) {
      const int64_t size = given->CountIn(s, 't');
      if (int64_t(s) % pp == pp_rank) add(start, size);
      start += size;
    }
  } else if (pp == 1 || num_stages <= 0) {
    add(0, m.num_layers);
  } else {
    const OwnSplit own = OwnStageSplit(m.num_layers, places, num_stages);
    for (int64_t s = pp_rank; s < num_stages; s += pp) add(own.FirstLayer(s), own.Layers(s));
  }
  return r;
}

}  // namespace

LayerMix LayersOfRank(const ModelSpec& m, int64_t pp_size, int64_t num_stages, int64_t pp_rank,
                      const PpLayerLayout* given, int64_t mtp_layers, SplitPlaces places) {
  if (m.is_hybrid()) {
    const HybridBlocks b =
        HybridBlocksOfRank(m, std::max<int64_t>(1, pp_size), num_stages, pp_rank, given, places, mtp_layers);
    return LayerMix{b.dense, b.moe};
  }
  const LayerMix mix = ModelLayerMix(m);
  const int64_t pp = std::max<int64_t>(1, pp_size);
  const int64_t mtp = std::max<int64_t>(0, mtp_layers);
  LayerMix r{0, 0};
  if (given != nullptr) {
    // The recipe's layout: stage s on rank s % pp, its decoder layers following those of the
    // stages before it in the model (pipeline_parallel_layer_layout.py get_layer_offset).
    int64_t start = 0;
    for (size_t s = 0; s < given->stages.size(); ++s) {
      const int64_t size = given->CountIn(s, 't');
      if (int64_t(s) % pp == pp_rank) {
        const int64_t dense = std::clamp<int64_t>(mix.dense - start, 0, size);
        r.dense += dense;
        r.moe += size - dense;
      }
      start += size;
    }
  } else if (pp == 1 || num_stages <= 0) {
    r = mix;
  } else {
    const OwnSplit own = OwnStageSplit(m.num_layers, places, num_stages);
    for (int64_t s = pp_rank; s < num_stages; s += pp) {
      const int64_t start = own.FirstLayer(s), size = own.Layers(s);
      const int64_t dense = std::clamp<int64_t>(mix.dense - start, 0, size);
      r.dense += dense;
      r.moe += size - dense;
    }
  }
  // An MTP layer's decoder layer has the type of the model's last layer (megatron.md 3.6).
  if (mtp > 0 && pp_rank == MtpRank(pp, num_stages, given)) (mix.moe > 0 ? r.moe : r.dense) += mtp;
  return r;
}

LayerMix LayersOfRank(const Ctx& c, int64_t pp_rank) {
  return LayersOfRank(c.model, c.view.pp, c.split.num_stages, pp_rank, c.split.given, c.view.mtp_layers,
                      c.view.places);
}

RankParams ParamsOfRank(const ModelSpec& m, const ParamCounts& p, int64_t pp_size, int64_t num_stages,
                        int64_t pp_rank, const PpLayerLayout* given, int64_t mtp_layers, SplitPlaces places) {
  const int64_t pp = std::max<int64_t>(1, pp_size);
  RankParams r;
  const LayerMix layers = LayersOfRank(m, pp_size, num_stages, pp_rank, given, mtp_layers, places);
  r.dense_layers = layers.dense;
  r.moe_layers = layers.moe;
  // A recipe's layout puts the embedding and the loss (with the final norm and the output
  // layer) on the ranks of the stages that hold E and L.
  r.has_embedding = given != nullptr ? given->StageOf('E') % pp == pp_rank : pp_rank == 0;
  r.has_head = given != nullptr ? given->StageOf('L') % pp == pp_rank : pp_rank == pp - 1;
  if (mtp_layers > 0 && MtpRank(pp, num_stages, given) == pp_rank) r.mtp_layers = mtp_layers;
  if (m.is_hybrid()) {
    // One block per layer, each with its pre-norm (h); the MTP depths' blocks on their rank
    // (HybridBlocksOfRank), with each depth's eh_proj and three norms below.
    const HybridBlocks b = HybridBlocksOfRank(m, pp, num_stages, pp_rank, given, places, mtp_layers);
    r.attention_mixers = b.attention;
    r.mamba_mixers = b.mamba;
    r.gdn_mixers = b.gdn;
    const double h = double(m.hidden_size);
    const double attn = double(p.attention_per_layer) + h, mamba = double(p.mamba_per_layer) + h;
    const double gdn = double(p.gdn_per_layer) + h;
    const double dense = double(p.dense_mlp_per_layer) + h;
    const double moe = double(p.shared_per_layer) + double(p.router_per_layer) + double(p.latent_proj_per_layer) + h;
    const double experts_layer = double(p.expert_per_layer) * double(m.num_experts);
    r.layer_dense = double(b.attention) * attn + double(b.mamba) * mamba + double(b.gdn) * gdn + double(b.dense) * dense +
                    double(b.moe) * moe;
    r.layer_expert = double(b.moe) * experts_layer;
    const double mixer_max = std::max({b.attention > 0 ? attn : 0.0, b.mamba > 0 ? mamba : 0.0, b.gdn > 0 ? gdn : 0.0});
    const double mlp_max = std::max(b.dense > 0 ? dense : 0.0, b.moe > 0 ? moe : 0.0);
    // A Gated DeltaNet hybrid's layers hold a mixer and an MLP each (Qwen3-Next, Qwen3.5: one
    // decoder layer, one FSDP unit): the largest layer is the largest mixer with the largest
    // MLP; single-block layers (Nemotron-H): the largest block. (DeepSeek-V4's layers also pair
    // attention with a MoE; left as the largest block.)
    const bool two_block_layers = b.gdn > 0;
    r.max_layer_dense = two_block_layers ? mixer_max + mlp_max : std::max(mixer_max, mlp_max);
    r.max_layer_expert = b.moe > 0 ? experts_layer : 0.0;
    // The final norm: what CountParams' norms hold beyond one per block.
    const double final_norm = std::max(0.0, double(p.norms) - double(m.num_layers) * h);
    if (r.has_embedding) r.root += double(p.embedding);
    if (r.has_head) r.root += double(p.output_head) + final_norm;
    if (r.mtp_layers > 0) r.layer_dense += 3.0 * h + 2.0 * h * h;  // one shared depth: norms, eh_proj
    return r;
  }
  const double attn = double(p.attention_per_layer), norms = double(p.norms_per_layer);
  const double dense_layer = attn + double(p.dense_mlp_per_layer) + norms;
  const double moe_layer = attn + double(p.shared_per_layer) + double(p.router_per_layer) + norms;
  const double experts_layer = double(p.expert_per_layer) * double(m.num_experts);
  r.layer_dense = double(r.dense_layers) * dense_layer + double(r.moe_layers) * moe_layer;
  r.layer_expert = double(r.moe_layers) * experts_layer;
  r.max_layer_dense = std::max(r.dense_layers > 0 ? dense_layer : 0.0, r.moe_layers > 0 ? moe_layer : 0.0);
  r.max_layer_expert = r.moe_layers > 0 ? experts_layer : 0.0;
  const double final_norm = std::max(0.0, double(p.norms) - double(m.num_layers) * norms);
  if (r.has_embedding) r.root += double(p.embedding);
  if (r.has_head) r.root += double(p.output_head) + final_norm;
  if (r.mtp_layers > 0) {
    // Beside its decoder layer (counted above) each MTP layer holds enorm, hnorm and its final
    // norm (3h) and eh_proj (2h·h); the rank also builds its own copy of the word embedding
    // when it is not the embedding's rank (gpt_model.py: pre_process or mtp_process), whose
    // gradient is all-reduced with the first stage's like a tied embedding.
    const double h = double(m.hidden_size);
    r.layer_dense += double(r.mtp_layers) * (3.0 * h + 2.0 * h * h);
    if (!r.has_embedding) r.root += double(p.embedding);
  }
  return r;
}

RankParams ParamsOfRank(const Ctx& c, int64_t pp_rank) {
  if (c.rank_params != nullptr && c.params_rank == pp_rank) return *c.rank_params;
  return ParamsOfRank(c.model, c.params, c.view.pp, c.split.num_stages, pp_rank, c.split.given, c.view.mtp_layers,
                      c.view.places);
}

int64_t QDim(const ModelSpec& m) {
  if (m.mla) return m.num_attention_heads * (m.mla_spec.qk_nope_head_dim + m.mla_spec.qk_rope_head_dim);
  return m.num_attention_heads * m.head_dim;
}
int64_t QkHeadDim(const ModelSpec& m) {
  return m.mla ? m.mla_spec.qk_nope_head_dim + m.mla_spec.qk_rope_head_dim : m.head_dim;
}
int64_t KDim(const ModelSpec& m) {
  if (m.mla) return QDim(m);
  return m.num_key_value_heads * m.head_dim;
}
int64_t VDim(const ModelSpec& m) {
  if (m.mla) return m.num_attention_heads * m.mla_spec.v_head_dim;
  return m.num_key_value_heads * m.head_dim;
}
int64_t AttnOutDim(const ModelSpec& m) {
  if (m.mla) return m.num_attention_heads * m.mla_spec.v_head_dim;
  return m.num_attention_heads * m.head_dim;
}

}  // namespace meshplan::cost
