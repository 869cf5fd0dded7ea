// Rules of Megatron-Core's DeepSeek-V4 hybrid attention and hash-routed MoE layers
// (Megatron-Bridge 067f987 models/deepseek/deepseek_v4_bridge.py DeepSeekV4Bridge builds
// GPTModel with experimental_attention_variant = "dsv4_hybrid", moe_n_hash_layers =
// num_hash_layers). Sources at Megatron-LM dev d48bd6be (the branch Megatron-Bridge's
// examples/models/deepseek_v4/README.md requires: the Megatron-LM its main branch pins has no
// DSv4 attention): megatron/core/transformer/transformer_config.py __post_init__. Messages
// quote the framework's own.
#include <algorithm>

#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan::rules {
namespace {

using namespace mb;

/// Source: transformer_config.py, the dsv4_hybrid branch (assert tensor_model_parallel_size
/// == 1, "DSv4 Hybrid Attention only supports TP size 1.").
bool Dsv4Tp(const RuleContext& c) { return !IsDeepseekV4(c.model) || L(c).tp == 1; }
std::string Dsv4TpMsg(const RuleContext& c) {
  return Cat("DSv4 Hybrid Attention only supports TP size 1 (tensor_model_parallel_size=", L(c).tp,
             "); scale DeepSeek-V4 with expert and pipeline parallelism (Megatron-Bridge's DeepSeek-V4 README: "
             "MLA tensor parallelism is not supported alongside the DSv4 hybrid attention path)");
}

/// Source: transformer_config.py: with context_parallel_size > 1, dsv4_hybrid requires
/// cp_partition_mode='contiguous' ("DSv4 Hybrid with context parallelism requires
/// cp_partition_mode='contiguous'."), and contiguous partitioning requires THD inputs from a
/// sequence_packing_scheduler ("BSHD inputs are not supported"). meshplan's Megatron-Bridge
/// layouts are BSHD (unpacked): Megatron-Bridge's DeepSeek-V4 recipes run unpacked (SBHD), and
/// its README lists context parallelism for DeepSeek-V4 as not yet supported.
bool Dsv4Cp(const RuleContext& c) { return !IsDeepseekV4(c.model) || L(c).cp == 1; }
std::string Dsv4CpMsg(const RuleContext& c) {
  return Cat("DSv4 Hybrid with context parallelism requires cp_partition_mode='contiguous', and "
             "cp_partition_mode='contiguous' with context parallelism requires THD inputs from a "
             "sequence_packing_scheduler; BSHD inputs are not supported (context_parallel_size=", L(c).cp,
             "; meshplan plans unpacked BSHD batches, as Megatron-Bridge's DeepSeek-V4 recipes run): use "
             "context_parallel_size 1");
}

/// Decoder layers in the stage that holds the embedding (the recipe's layout's 'E' stage, or
/// meshplan's own split's first stage).
int64_t EmbeddingStageLayers(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.pp_layout != nullptr) {
    const int64_t e = l.pp_layout->StageOf('E');
    return e >= 0 ? l.pp_layout->CountIn(size_t(e), 't') : 0;
  }
  const int64_t stages = l.pp * std::max<int64_t>(1, l.vpp);
  return OwnStageDecoderLayers(c.model.num_layers, OwnSplitPlaces(l), stages, 0);
}

/// Source: transformer_config.py, the moe_n_hash_layers > 0 branch: with PP > 1 (not a hybrid
/// model) "pipeline_model_parallel_layout must be set when using hash MoE layers with pipeline
/// parallelism (PP > 1)."; then "All hash MoE layers must be in the same virtual pipeline
/// stage" as the embedding (moe_n_hash_layers <= the decoder layers of that stage).
bool Dsv4HashLayout(const RuleContext& c) {
  const Layout& l = L(c);
  if (!IsDeepseekV4(c.model) || c.model.dsv4.num_hash_layers == 0 || l.pp <= 1) return true;
  return l.pp_layout != nullptr || l.pp_split == MbPpSplit::kLayout;
}
std::string Dsv4HashLayoutMsg(const RuleContext& c) {
  return Cat("pipeline_model_parallel_layout must be set when using hash MoE layers with pipeline parallelism "
             "(PP > 1): ", c.model.name, " routes its first ", c.model.dsv4.num_hash_layers,
             " layers by a token-id table (moe_n_hash_layers), which must sit with the embedding; "
             "pipeline_model_parallel_size=", L(c).pp, " without a layout");
}
bool Dsv4HashStage(const RuleContext& c) {
  const Layout& l = L(c);
  if (!IsDeepseekV4(c.model) || c.model.dsv4.num_hash_layers == 0 || l.pp <= 1) return true;
  if (l.pp_layout == nullptr && l.pp_split != MbPpSplit::kLayout) return true;  // Dsv4HashLayout's
  return c.model.dsv4.num_hash_layers <= EmbeddingStageLayers(c);
}
std::string Dsv4HashStageMsg(const RuleContext& c) {
  return Cat("Currently, All hash MoE layers must be in the same virtual pipeline stage as the embedding: "
             "moe_n_hash_layers=", c.model.dsv4.num_hash_layers, " but that stage holds ", EmbeddingStageLayers(c),
             " decoder layers");
}

/// Source: transformer_config.py, the moe_n_hash_layers > 0 branch (assert not
/// overlap_moe_expert_parallel_comm, "overlap_moe_expert_parallel_comm does not support
/// moe_n_hash_layers > 0 for now.").
bool Dsv4HashEpOverlap(const RuleContext& c) {
  return !IsDeepseekV4(c.model) || c.model.dsv4.num_hash_layers == 0 || L(c).mb.ep_a2a_overlap != Tri::kTrue;
}
std::string Dsv4HashEpOverlapMsg(const RuleContext& c) {
  return Cat("overlap_moe_expert_parallel_comm does not support moe_n_hash_layers > 0 for now (",
             c.model.name, " has ", c.model.dsv4.num_hash_layers,
             " hash-routed layers): set comm_overlap.overlap_moe_expert_parallel_comm false");
}

/// The rows' source: transformer_config.py __post_init__ at Megatron-LM dev d48bd6be.
constexpr const char* kConfig = "MCore (dev d48bd6be) transformer/transformer_config.py __post_init__";

// Every row concerns DeepSeek-V4's attention or hash routing: it passes on other models.
const Rule kRules[] = {
    ForModels(ReadsPartAxesOnly({"mb_dsv4_tp1", kConfig, RuleStage::kMesh, Dsv4Tp, Dsv4TpMsg, false}), IsDeepseekV4),
    ForModels(ReadsPartAxesOnly({"mb_dsv4_cp_needs_thd", kConfig, RuleStage::kMesh, Dsv4Cp, Dsv4CpMsg, false}), IsDeepseekV4),
    ForModels({"mb_dsv4_hash_layers_need_pp_layout", kConfig, RuleStage::kBatch, Dsv4HashLayout, Dsv4HashLayoutMsg,
               false},
              IsDeepseekV4),
    ForModels({"mb_dsv4_hash_layers_first_stage", kConfig, RuleStage::kBatch, Dsv4HashStage, Dsv4HashStageMsg, false},
              IsDeepseekV4),
    ForModels(ReadsNoRecompute({"mb_dsv4_hash_layers_ep_overlap", kConfig, RuleStage::kFeatures, Dsv4HashEpOverlap,
                                Dsv4HashEpOverlapMsg, false}),
              IsDeepseekV4),
};

}  // namespace

std::span<const Rule> MegatronDsv4Rules() { return kRules; }

}  // namespace meshplan::rules
