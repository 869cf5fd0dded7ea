// Mesh, tensor, pipeline, context and expert parallelism rules of Megatron-Bridge /
// Megatron-Core (megatron.md 2.1-2.5, 2.13). MB = Megatron-Bridge
// src/megatron/bridge/training/config.py, MCore = Megatron-LM megatron/core/.
#include "meshplan/rule_domains.hpp"
#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan::rules {
namespace {

using namespace mb;

/// Every size is positive (etp 0 means unset).
/// Source: MCore model_parallel_config.py (sizes are positive integers).
bool AxesPositive(const RuleContext& c) {
  const Layout& l = L(c);
  return l.tp >= 1 && l.pp >= 1 && l.cp >= 1 && l.ep >= 1 && l.dp >= 1 && l.vpp >= 1 && l.etp >= 0 &&
         l.local_batch_size >= 1 && l.pp_microbatch_size >= 1;
}
std::string AxesPositiveMsg(const RuleContext& c) {
  const Layout& l = L(c);
  return Cat("every parallel size must be >= 1; found tensor_model_parallel_size=", l.tp,
             " pipeline_model_parallel_size=", l.pp, " context_parallel_size=", l.cp, " expert_model_parallel_size=",
             l.ep, " virtual_pipeline_model_parallel_size=", l.vpp, " micro_batch_size=", l.micro_batch());
}

/// Dense grid: W % (TP*PP*CP) == 0 and DP = W / (TP*PP*CP).
/// Source: MB config.py:1013-1027 get_data_parallel_size; MCore parallel_state.py:819-823.
bool WorldDense(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t n = l.tp * l.pp * l.cp;
  return c.setup.num_gpus % n == 0 && l.dp * n == c.setup.num_gpus;
}
std::string WorldDenseMsg(const RuleContext& c) {
  const Layout& l = L(c);
  return Cat("world_size (", c.setup.num_gpus, ") is not divisible by tensor x pipeline x context parallel (",
             l.tp, " x ", l.pp, " x ", l.cp, " = ", l.tp * l.pp * l.cp,
             "): every GPU must sit in exactly one TP x CP x PP block, the rest is data parallel");
}

/// Expert grid: W % (ETP*EP*PP) == 0 (EP is folded into the dense ranks, not multiplied in).
/// Source: MCore parallel_state.py:870-885 ("world_size is not divisible by
/// expert_tensor_model_pipeline_parallel size"); expert_tensor_parallel_size None = TP
/// (model_parallel_config.py:507; MB PR #5754, issue #546).
bool WorldExpert(const RuleContext& c) { return Edp(c) > 0; }
std::string WorldExpertMsg(const RuleContext& c) {
  const Layout& l = L(c);
  return Cat("world_size (", c.setup.num_gpus, ") is not divisible by expert_tensor x expert x pipeline parallel (",
             l.EffectiveEtp(), " x ", l.ep, " x ", l.pp, " = ", l.EffectiveEtp() * l.ep * l.pp, ")",
             // Setting ETP 1 is a fix only when TP > 1 and EP x PP then divides the world; a
             // model without experts gets its fix from the TP x PP x CP rule instead.
             !c.model.is_moe()
                 ? Cat("; the model has no experts, so its expert grid is TP x 1 x PP: choose "
                       "tensor_model_parallel_size and pipeline_model_parallel_size whose product divides ",
                       c.setup.num_gpus)
             : l.etp == 0 && l.tp > 1 && c.setup.num_gpus % (l.ep * l.pp) == 0
                 ? Cat("; expert_tensor_parallel_size is unset, so it equals tensor_model_parallel_size (", l.tp,
                       "): set expert_tensor_parallel_size: 1")
                 : c.setup.num_gpus % (l.ep * l.pp) != 0
                       ? Cat("; even with expert_tensor_parallel_size 1, expert x pipeline parallel (", l.ep * l.pp,
                             ") does not divide it: choose expert_model_parallel_size and pipeline_model_parallel_size "
                             "whose product divides ", c.setup.num_gpus)
                       : std::string(""),
             "; experts are laid out on their own ETP x EP x PP grid over the same GPUs");
}

/// With use_tp_pp_dp_mapping the order does not end in pp, so the expert and dense DP must agree.
/// Source: MCore parallel_state.py:898-902.
bool TpPpDpMapping(const RuleContext& c) {
  const Layout& l = L(c);
  return !l.mb.use_tp_pp_dp_mapping || l.pp == 1 || Edp(c) == 0 || Edp(c) == l.dp;
}
std::string TpPpDpMappingMsg(const RuleContext& c) {
  return Cat("use_tp_pp_dp_mapping with pipeline_model_parallel_size ", L(c).pp,
             " needs expert data parallel (", Edp(c), ") == data parallel (", L(c).dp,
             "): with rank order tp-cp-ep-pp-dp the two grids' PP groups must coincide; unset use_tp_pp_dp_mapping");
}

/// Source: MCore transformer_config.py:1446.
bool TpHeads(const RuleContext& c) { return c.model.num_attention_heads % L(c).tp == 0; }
std::string TpHeadsMsg(const RuleContext& c) {
  return Cat("num_attention_heads (", c.model.num_attention_heads, ") must be a multiple of tensor_model_parallel_size (",
             L(c).tp, "): each TP rank owns whole attention heads");
}

/// Current MCore replicates KV heads when num_query_groups < TP; <= core_v0.15 did not.
/// Source: MCore transformer_config.py:1461-1468, attention.py:353; ms-swift #8219.
bool TpQueryGroups(const RuleContext& c) {
  const int64_t g = c.model.num_key_value_heads, tp = L(c).tp;
  if (c.mb_version == MBridgeVersion::kCore015) return g % tp == 0;
  return g % tp == 0 || tp % g == 0;
}
std::string TpQueryGroupsMsg(const RuleContext& c) {
  if (c.mb_version == MBridgeVersion::kCore015) {
    return Cat("num_query_groups (", c.model.num_key_value_heads, ") must be a multiple of tensor_model_parallel_size (",
               L(c).tp, "); Megatron-Core <= 0.15 cannot replicate KV heads (0.16+ accepts tp % num_query_groups == 0)");
  }
  return Cat("num_query_groups (", c.model.num_key_value_heads, ") and tensor_model_parallel_size (", L(c).tp,
             ") must divide one another: KV heads are split over TP ranks or replicated on them");
}

/// Linear layers split their output with divide(ffn, TP).
/// Source: MCore tensor_parallel/layers.py:1038 (divide) (megatron.md 2.2, inferred).
bool TpFfn(const RuleContext& c) {
  return c.model.num_dense_layers == 0 || c.model.intermediate_size % L(c).tp == 0;
}
std::string TpFfnMsg(const RuleContext& c) {
  return Cat("ffn_hidden_size (", c.model.intermediate_size, ") must be a multiple of tensor_model_parallel_size (",
             L(c).tp, "): the MLP columns are split evenly over TP ranks");
}

/// Source: MCore tensor_parallel/layers.py (divide(moe_ffn_hidden_size, ETP)) (megatron.md 2.2).
bool EtpMoeFfn(const RuleContext& c) {
  return !c.model.is_moe() || c.model.moe_intermediate_size % L(c).EffectiveEtp() == 0;
}
std::string EtpMoeFfnMsg(const RuleContext& c) {
  return Cat("moe_ffn_hidden_size (", c.model.moe_intermediate_size,
             ") must be a multiple of expert_tensor_parallel_size (", L(c).EffectiveEtp(),
             L(c).etp == 0 ? ", unset so equal to TP" : "", "): each expert's columns are split over ETP ranks");
}

/// Source: MCore transformer_config.py:1595-1596.
bool EpMoe(const RuleContext& c) { return domain::EpRequiresMoe(c.model, L(c).ep); }
std::string EpMoeMsg(const RuleContext& c) {
  return Cat("expert_model_parallel_size=", L(c).ep, " needs num_moe_experts, but ", c.model.name,
             " is a dense model: use expert_model_parallel_size: 1");
}

/// Source: MCore transformer/moe/moe_layer.py:186; MLM arguments.py:1655-1658.
bool EpExperts(const RuleContext& c) { return domain::EpDividesExperts(c.model, L(c).ep); }
std::string EpExpertsMsg(const RuleContext& c) {
  return Cat("num_moe_experts (", c.model.num_experts, ") must be a multiple of expert_model_parallel_size (", L(c).ep,
             "): every EP rank holds the same number of experts");
}

/// MoE with add_bias_linear (expert biases, GPT-OSS) needs ETP == 1.
/// Source: megatron.md 2.5 (MCore MoE experts with bias).
bool ExpertBiasEtp(const RuleContext& c) { return !c.model.expert_bias || L(c).EffectiveEtp() == 1; }
std::string ExpertBiasEtpMsg(const RuleContext& c) {
  return Cat(c.model.name, " has biased expert linears (add_bias_linear), which need expert_tensor_parallel_size 1; found ",
             L(c).EffectiveEtp(), L(c).etp == 0 ? " (unset, so equal to TP)" : "");
}

/// Source: MCore model_parallel_config.py:504 ("Cannot use sequence parallelism without tensor parallelism").
bool SpNeedsTp(const RuleContext& c) { return !L(c).sequence_parallel || L(c).tp > 1; }
std::string SpNeedsTpMsg(const RuleContext&) {
  return "sequence_parallel: true with tensor_model_parallel_size 1: sequence parallelism splits TP's replicated "
         "activations, so it needs TP > 1; set sequence_parallel: false";
}

/// Source: MCore model_parallel_config.py:528-531 (pipeline_dtype required when PP > 1).
bool PipelineDtype(const RuleContext& c) { return L(c).pp == 1 || L(c).mb.pipeline_dtype_set; }
std::string PipelineDtypeMsg(const RuleContext& c) {
  return Cat("pipeline_model_parallel_size ", L(c).pp,
             " needs model.pipeline_dtype (the dtype of tensors sent between stages); set pipeline_dtype: bfloat16");
}

/// Source: MCore parallel_state.py:826-830.
bool VppNeedsPp(const RuleContext& c) { return domain::MegatronVppNeedsPp(L(c).pp, L(c).vpp); }
std::string VppNeedsPpMsg(const RuleContext& c) {
  return Cat("virtual_pipeline_model_parallel_size ", L(c).vpp,
             " with pipeline_model_parallel_size 1: virtual stages interleave a pipeline, so PP must be > 1");
}

/// Even split: (L + accounted embedding/loss) % PP == 0.
/// Source: MCore transformer_block.py:148-158 (get_num_layers_to_build).
/// A HybridModel's split is mb_hybrid_pp_divides_layers' (rules_hybrid.cpp).
bool PpLayers(const RuleContext& c) {
  return BuildsHybridModel(c.model) || domain::MegatronPpDividesLayers(c.model.num_layers, L(c).pp, L(c).pp_split);
}
std::string PpLayersMsg(const RuleContext& c) {
  const bool accounted = L(c).pp_split == MbPpSplit::kAccountEmbeddingLoss;
  return Cat("num_layers ", c.model.num_layers, accounted ? " + embedding + loss = " : "",
             accounted ? std::to_string(SplitLayers(c)) : std::string(),
             " is not divisible by pipeline_model_parallel_size ", L(c).pp,
             "; use account_for_embedding/loss_in_pipeline_split or a pipeline_model_parallel_layout");
}

/// With VPP: layers per PP rank % VPP == 0.
/// Source: MCore transformer_block.py:172-176; MB gpt_provider.py:240-255.
bool VppLayers(const RuleContext& c) {
  const Layout& l = L(c);
  return domain::MegatronVppDividesLayers(c.model.num_layers, l.pp, l.pp_split, l.vpp);
}
std::string VppLayersMsg(const RuleContext& c) {
  return Cat("layers per pipeline rank (", SplitLayers(c) / L(c).pp,
             ") must be divisible by virtual_pipeline_model_parallel_size ", L(c).vpp,
             ": every virtual stage gets the same number of layers");
}

/// A pipeline_model_parallel_layout meshplan writes has PP*VPP stages, each given at least one
/// decoder layer. Source: MCore transformer_config.py:2241-2258 (len(stages) % PP == 0, VPP = len / PP).
/// A recipe's own layout (pp_layout) may leave stages empty: the mb_pp_layout_ rules
/// (frameworks/megatron_bridge/rules_layout.cpp) check it instead.
bool LayoutStages(const RuleContext& c) {
  const Layout& l = L(c);
  return l.pp_layout != nullptr || domain::MegatronLayoutStagesFit(c.model.num_layers, l.pp, l.vpp, l.pp_split);
}
std::string LayoutStagesMsg(const RuleContext& c) {
  return Cat("pipeline_model_parallel_layout with ", L(c).pp, " x ", L(c).vpp, " = ", L(c).pp * L(c).vpp,
             " stages cannot give each stage a layer of the ", c.model.num_layers, " decoder layers");
}

/// At PP == 2 the interleaved schedule cannot tell send-next from send-prev without p2p overlap.
/// Source: MLM arguments.py:1001-1017 (issue NVIDIA/Megatron-LM#750).
bool VppPp2(const RuleContext& c) {
  const Layout& l = L(c);
  return !(l.vpp > 1 && l.pp == 2 && l.mb.overlap_p2p_comm == Tri::kFalse);
}
std::string VppPp2Msg(const RuleContext&) {
  return "interleaved pipeline (virtual_pipeline_model_parallel_size > 1) at pipeline_model_parallel_size 2 needs "
         "overlap_p2p_comm: true (Megatron-LM#750: send-next and send-prev look alike at PP 2)";
}

/// Source: MB config.py:1574-1577; MLM arguments.py:1335-1338 (zig-zag split into 2*CP chunks).
bool CpSeq(const RuleContext& c) { return c.setup.seq_len % domain::CpSeqMultiple(L(c).cp) == 0; }
std::string CpSeqMsg(const RuleContext& c) {
  return Cat("seq_length ", c.setup.seq_len,
             " must be divisible by 2 x context_parallel_size = ", domain::CpSeqMultiple(L(c).cp),
             ": CP splits each sequence into 2*CP load-balanced chunks");
}

/// With SP the CP-local sequence is split over TP too: s % (CP * lcm(2, TP)) (CP > 1) or s % TP.
/// Source: MB config.py:1353-1372 (collate_padding_multiple); NeMo-RL PR #3563 (megatron.md 2.4).
bool SpSeq(const RuleContext& c) {
  const Layout& l = L(c);
  return !l.sequence_parallel || domain::MegatronSpDividesSequence(c.setup.seq_len, l.tp, l.cp);
}
std::string SpSeqMsg(const RuleContext& c) {
  const Layout& l = L(c);
  return Cat("seq_length ", c.setup.seq_len, " must be a multiple of ", SequenceParallelSeqMultiple(l.tp, l.cp),
             " with sequence_parallel: each CP chunk is split again over the ", l.tp, " TP ranks");
}

constexpr const char* kPs = "MCore parallel_state.py::initialize_model_parallel";

const Rule kRules[] = {
    {"mb_axes_positive", "MCore model_parallel_config.py", RuleStage::kMesh, AxesPositive, AxesPositiveMsg},
    ReadsPartAxesOnly({"mb_world_divisible_by_tp_pp_cp",
                       "MB training/config.py:1013 get_data_parallel_size; MCore parallel_state.py:819", RuleStage::kMesh,
                       WorldDense, WorldDenseMsg}),
    {"mb_world_divisible_by_etp_ep_pp", "MCore parallel_state.py:870-885 (expert grid; ETP unset = TP)",
     RuleStage::kMesh, WorldExpert, WorldExpertMsg},
    {"mb_tp_pp_dp_mapping_edp", kPs, RuleStage::kMesh, TpPpDpMapping, TpPpDpMappingMsg},
    ReadsPartAxesOnly({"mb_tp_divides_heads", "MCore transformer/transformer_config.py:1446", RuleStage::kMesh, TpHeads,
                       TpHeadsMsg}),
    ReadsPartAxesOnly({"mb_tp_query_groups", "MCore transformer/transformer_config.py:1461-1468", RuleStage::kMesh,
                       TpQueryGroups, TpQueryGroupsMsg}),
    ReadsPartAxesOnly(
        {"mb_tp_divides_ffn", "MCore tensor_parallel/layers.py (divide)", RuleStage::kMesh, TpFfn, TpFfnMsg}),
    {"mb_etp_divides_moe_ffn", "MCore tensor_parallel/layers.py (divide)", RuleStage::kMesh, EtpMoeFfn, EtpMoeFfnMsg},
    {"mb_ep_requires_moe", "MCore transformer/transformer_config.py:1595", RuleStage::kMesh, EpMoe, EpMoeMsg},
    {"mb_ep_divides_experts", "MCore transformer/moe/moe_layer.py:186", RuleStage::kMesh, EpExperts, EpExpertsMsg},
    {"mb_expert_bias_etp1", "MCore MoE experts with add_bias_linear (megatron.md 2.5)", RuleStage::kMesh,
     ExpertBiasEtp, ExpertBiasEtpMsg},
    {"mb_pipeline_dtype", "MCore model_parallel_config.py:528-531", RuleStage::kMesh, PipelineDtype, PipelineDtypeMsg},
    {"mb_vpp_requires_pp", "MCore parallel_state.py:826-830", RuleStage::kMesh, VppNeedsPp, VppNeedsPpMsg},
    {"mb_pp_divides_layers", "MCore transformer/transformer_block.py:148-158", RuleStage::kMesh, PpLayers, PpLayersMsg},
    {"mb_vpp_divides_layers", "MCore transformer/transformer_block.py:172-176; MB models/gpt_provider.py:240-255",
     RuleStage::kMesh, VppLayers, VppLayersMsg},
    {"mb_pp_layout_stages", "MCore transformer/transformer_config.py:2241-2258", RuleStage::kMesh, LayoutStages,
     LayoutStagesMsg},
    {"mb_vpp_pp2_needs_p2p_overlap", "MLM training/arguments.py:1001-1017 (Megatron-LM#750)", RuleStage::kMesh,
     VppPp2, VppPp2Msg},
    ReadsPartAxesOnly(
        {"mb_cp_divides_sequence", "MB training/config.py:1574-1577", RuleStage::kMesh, CpSeq, CpSeqMsg}),
    ReadsNoRecompute({"mb_sp_requires_tp", "MCore model_parallel_config.py:504", RuleStage::kFeatures, SpNeedsTp,
                      SpNeedsTpMsg}),
    ReadsNoRecompute({"mb_sp_divides_sequence", "MB training/config.py:1353-1372 (collate_padding_multiple)",
                      RuleStage::kFeatures, SpSeq, SpSeqMsg}),
};

}  // namespace

std::span<const Rule> MegatronMeshRules() { return kRules; }

}  // namespace meshplan::rules
