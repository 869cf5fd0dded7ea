// Rules of Megatron-Core's hybrid model (Mamba-2 / attention / MLP / MoE layer patterns,
// Megatron-Bridge's NemotronH providers build Megatron-Core's HybridModel). Sources at
// Megatron-LM d98e8a6 (2026-08-22): megatron/core/ssm/mamba_mixer.py (MambaMixer.__init__),
// megatron/core/ssm/mamba_context_parallel.py (MambaContextParallel.__init__),
// megatron/core/models/hybrid/hybrid_layer_allocation.py (select_pipeline_segment). Messages
// quote the framework's own where it has one.
#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan::rules {
namespace {

using namespace mb;

bool HasMamba(const ModelSpec& m) { return BuildsHybridModel(m); }

/// Each TP rank gets whole Mamba heads. Source: mamba_mixer.py:262
/// (assert self.nheads % tp_size == 0).
bool MambaTpHeads(const RuleContext& c) { return !HasMamba(c.model) || c.model.mamba.num_heads % L(c).tp == 0; }
std::string MambaTpHeadsMsg(const RuleContext& c) {
  return Cat("nheads must be evenly divisble by tp_size: mamba_num_heads (", c.model.mamba.num_heads,
             ") is not a multiple of tensor_model_parallel_size (", L(c).tp, "); each TP rank owns whole Mamba-2 heads");
}

/// Each TP rank gets whole B/C groups. Source: mamba_mixer.py:270
/// (assert self.ngroups % tp_size == 0).
bool MambaTpGroups(const RuleContext& c) { return !HasMamba(c.model) || c.model.mamba.n_groups % L(c).tp == 0; }
std::string MambaTpGroupsMsg(const RuleContext& c) {
  return Cat("ngroups must be evenly divisible by tp_size: n_groups (", c.model.mamba.n_groups,
             ") is not a multiple of tensor_model_parallel_size (", L(c).tp, "); each TP rank owns whole groups of B and C");
}

/// CP splits a TP rank's heads (the all-to-all makes the mixer head-parallel). Source:
/// mamba_context_parallel.py:106-108 (nheads_local_tp % cp_size == 0).
bool MambaCpHeads(const RuleContext& c) {
  const Layout& l = L(c);
  if (!HasMamba(c.model) || l.cp == 1 || c.model.mamba.num_heads % l.tp != 0) return true;
  return (c.model.mamba.num_heads / l.tp) % l.cp == 0;
}
std::string MambaCpHeadsMsg(const RuleContext& c) {
  return Cat("nheads must be evenly divisible by tp_size * cp_size: mamba_num_heads (", c.model.mamba.num_heads,
             ") over tensor_model_parallel_size x context_parallel_size (", L(c).tp, " x ", L(c).cp,
             "); Megatron-Core's Mamba context parallelism gives each CP rank whole heads");
}

/// CP and the groups of a TP rank: one divides the other. Source: mamba_context_parallel.py:119-133
/// (cp_size % ngroups_local_tp == 0 when ngroups_local_tp < cp_size, else ngroups_local_tp % cp_size == 0).
bool MambaCpGroups(const RuleContext& c) {
  const Layout& l = L(c);
  if (!HasMamba(c.model) || l.cp == 1 || c.model.mamba.n_groups % l.tp != 0) return true;
  const int64_t local = c.model.mamba.n_groups / l.tp;
  return local < l.cp ? l.cp % local == 0 : local % l.cp == 0;
}
std::string MambaCpGroupsMsg(const RuleContext& c) {
  const int64_t local = c.model.mamba.n_groups / L(c).tp;
  if (local < L(c).cp) {
    return Cat("cp_size must be evenly divisible by ngroups/tp_size: context_parallel_size ", L(c).cp,
               " and n_groups / tensor_model_parallel_size = ", c.model.mamba.n_groups, " / ", L(c).tp, " = ", local);
  }
  return Cat("ngroups must be evenly divisible by tp_size * cp_size: n_groups (", c.model.mamba.n_groups,
             ") over tensor_model_parallel_size x context_parallel_size (", L(c).tp, " x ", L(c).cp, ")");
}

/// FP8 GEMMs need the in_proj output width to be a multiple of 16. Source: mamba_mixer.py:253-257.
bool MambaFp8InProj(const RuleContext& c) {
  if (!HasMamba(c.model) || c.setup.precision == Precision::kBf16) return true;
  const Mamba2Spec& x = c.model.mamba;
  return (2 * x.d_inner() + 2 * x.n_groups * x.state_size + x.num_heads) % 16 == 0;
}
std::string MambaFp8InProjMsg(const RuleContext& c) {
  const Mamba2Spec& x = c.model.mamba;
  return Cat("For FP8, the innermost dimension of the Mamba layer input projection output tensor must be a multiple "
             "of 16: 2 x d_inner + 2 x n_groups x ssm_state_size + mamba_num_heads = ",
             2 * x.d_inner() + 2 * x.n_groups * x.state_size + x.num_heads, "; train in bf16");
}

/// A pattern without '|' separators is split into equal runs of layers. Source:
/// hybrid_layer_allocation.py:435-441 select_pipeline_segment (num_layers % pp_size == 0 when no
/// pipe separators and neither num_layers_in_first/last_pipeline_stage is set).
/// account_for_embedding/loss_in_pipeline_split are not read by HybridModel's split.
bool HybridPpLayers(const RuleContext& c) {
  const Layout& l = L(c);
  return !BuildsHybridModel(c.model) || l.pp == 1 || c.model.num_layers % l.pp == 0;
}
std::string HybridPpLayersMsg(const RuleContext& c) {
  return Cat("Number of layers (", c.model.num_layers, ") must be evenly divisible by pipeline-model-parallel-size (",
             L(c).pp, ") when no pipe separators are specified in the pattern (hybrid_override_pattern); choose a "
             "pipeline_model_parallel_size that divides ", c.model.num_layers);
}

/// VPP needs '|' stage boundaries in the pattern, which Hugging Face configs do not have. Source:
/// hybrid_layer_allocation.py:385-392 select_pipeline_segment.
bool HybridVpp(const RuleContext& c) { return !BuildsHybridModel(c.model) || L(c).vpp == 1 || L(c).pp == 1; }
std::string HybridVppMsg(const RuleContext& c) {
  return Cat("Virtual pipeline parallelism (vp_stage != None) is not supported when hybrid_layer_pattern has no "
             "pipe ('|') separators: virtual_pipeline_model_parallel_size ", L(c).vpp, " with the hybrid_override_pattern of ",
             c.model.name, "; use virtual_pipeline_model_parallel_size: null");
}

/// meshplan splits a hybrid model by its pattern only: a recipe's pipeline_model_parallel_layout
/// (which HybridModel reads for MTP placement only, hybrid_model.py:223-229) and
/// account_for_embedding/loss_in_pipeline_split (which HybridModel does not read:
/// select_pipeline_segment takes num_layers_in_first/last_pipeline_stage only) are refused
/// rather than priced as a split that does not happen.
bool HybridSplit(const RuleContext& c) { return !BuildsHybridModel(c.model) || L(c).pp == 1 || L(c).pp_split == MbPpSplit::kEven; }
std::string HybridSplitMsg(const RuleContext& c) {
  if (L(c).pp_split == MbPpSplit::kLayout) {
    return "a pipeline_model_parallel_layout with a hybrid model: Megatron-Core's HybridModel splits its layers by "
           "the hybrid_override_pattern ('|' separators or equal runs), not by the layout string, and meshplan "
           "models only that split; remove pipeline_model_parallel_layout";
  }
  return "account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split with a hybrid model: "
         "Megatron-Core's HybridModel does not read them (its split is the hybrid_override_pattern's equal runs, "
         "models/hybrid/hybrid_layer_allocation.py select_pipeline_segment), so meshplan does not price them; "
         "set both false";
}

// Every row concerns Mamba-2 layers or the hybrid split: it passes on other models.
const Rule kRules[] = {
    ForModels(ReadsPartAxesOnly({"mb_mamba_tp_divides_heads", "MCore ssm/mamba_mixer.py:262", RuleStage::kMesh,
                                 MambaTpHeads, MambaTpHeadsMsg, false}),
              HasMamba),
    ForModels(ReadsPartAxesOnly({"mb_mamba_tp_divides_groups", "MCore ssm/mamba_mixer.py:270", RuleStage::kMesh,
                                 MambaTpGroups, MambaTpGroupsMsg, false}),
              HasMamba),
    ForModels(ReadsPartAxesOnly({"mb_mamba_cp_divides_heads", "MCore ssm/mamba_context_parallel.py:106-108",
                                 RuleStage::kMesh, MambaCpHeads, MambaCpHeadsMsg, false}),
              HasMamba),
    ForModels(ReadsPartAxesOnly({"mb_mamba_cp_groups", "MCore ssm/mamba_context_parallel.py:119-133", RuleStage::kMesh,
                                 MambaCpGroups, MambaCpGroupsMsg, false}),
              HasMamba),
    ForModels(ReadsPartAxesOnly({"mb_mamba_fp8_in_proj", "MCore ssm/mamba_mixer.py:253-257", RuleStage::kMesh,
                                 MambaFp8InProj, MambaFp8InProjMsg, false}),
              HasMamba),
    ForModels(ReadsPartAxesOnly({"mb_hybrid_pp_divides_layers", "MCore models/hybrid/hybrid_layer_allocation.py:435-441",
                                 RuleStage::kMesh, HybridPpLayers, HybridPpLayersMsg, false}),
              BuildsHybridModel),
    ForModels({"mb_hybrid_vpp_needs_pipes", "MCore models/hybrid/hybrid_layer_allocation.py:385-392", RuleStage::kMesh,
               HybridVpp, HybridVppMsg, false},
              BuildsHybridModel),
    ForModels({"mb_hybrid_pp_split",
               "MCore models/hybrid/hybrid_layer_allocation.py select_pipeline_segment (meshplan refusal)",
               RuleStage::kMesh, HybridSplit, HybridSplitMsg, false},
              BuildsHybridModel),
};

}  // namespace

std::span<const Rule> MegatronHybridRules() { return kRules; }

}  // namespace meshplan::rules
