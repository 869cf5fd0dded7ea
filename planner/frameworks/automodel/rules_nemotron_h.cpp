// NeMo AutoModel's rules for Nemotron-H / Nemotron 3 (NemotronHForCausalLM: components/models/
// nemotron_v3, trained through components/moe/parallelizer.py with EP, else
// components/distributed/parallelizer.py NemotronHParallelizationStrategy). Sources under
// nemo_automodel/ in NVIDIA-NeMo/Automodel 36044ad. The MoE models' TP and SP are the custom MoE
// TP path's rules (rules_parallel.cpp moe_no_tensor_parallel, sequence_parallel_dense_only).
#include "meshplan/rule_domains.hpp"
#include "rules/rule_util.hpp"

namespace meshplan::rules {
namespace {

const Layout& L(const RuleContext& c) { return c.layout; }

bool HasMamba(const ModelSpec& m) {
  for (const LayerBlock& b : m.layer_pattern) {
    if (b.mixer == MixerKind::kMamba2) return true;
  }
  return false;
}

/// MambaContextParallel splits the Mamba-2 heads over the CP ranks.
/// Source: components/distributed/context_parallel/mamba.py MambaContextParallel.__init__
/// (`assert num_heads % cp_size == 0`).
bool MambaCpDividesHeads(const RuleContext& c) {
  return L(c).cp <= 1 || !HasMamba(c.model) || c.model.mamba.num_heads % L(c).cp == 0;
}
std::string MambaCpDividesHeadsMsg(const RuleContext& c) {
  return Cat("mamba_num_heads (", c.model.mamba.num_heads, ") must be divisible by cp_size (", L(c).cp,
             "): MambaContextParallel gives each CP rank num_heads / cp_size Mamba-2 heads");
}

/// The B and C groups: split over the CP ranks (n_groups % cp == 0) or, with fewer groups than
/// ranks, repeated (cp % n_groups == 0).
/// Source: components/distributed/context_parallel/mamba.py MambaContextParallel.__init__.
bool MambaCpGroups(const RuleContext& c) {
  if (L(c).cp <= 1 || !HasMamba(c.model)) return true;
  const int64_t g = c.model.mamba.n_groups, cp = L(c).cp;
  return g < cp ? cp % g == 0 : g % cp == 0;
}
std::string MambaCpGroupsMsg(const RuleContext& c) {
  return Cat("n_groups (", c.model.mamba.n_groups, ") and cp_size (", L(c).cp,
             ") must divide one another: MambaContextParallel splits the B/C groups over the CP ranks (n_groups % cp_size "
             "== 0) or repeats them (cp_size % n_groups == 0)");
}

/// NemotronHParallelizationStrategy asserts sequence parallelism off (the dense Nemotron-H
/// models; the MoE ones meet sequence_parallel_dense_only first).
/// Source: components/distributed/parallelizer.py NemotronHParallelizationStrategy.parallelize.
bool IsNemotronH(const ModelSpec& m) { return m.architecture == Architecture::kNemotronH; }

bool NemotronHNoSp(const RuleContext& c) {
  return !L(c).sequence_parallel || c.model.architecture != Architecture::kNemotronH;
}
std::string NemotronHNoSpMsg(const RuleContext&) {
  return "Sequence parallelism is not supported for NemotronHForCausalLM; set sequence_parallel: false";
}

const Rule kRules[] = {
    ForModels({"nemotron_h_cp_divides_mamba_heads",
               "components/distributed/context_parallel/mamba.py::MambaContextParallel", RuleStage::kMesh,
               MambaCpDividesHeads, MambaCpDividesHeadsMsg, kNoDp},
              HasMamba),
    ForModels({"nemotron_h_cp_mamba_groups", "components/distributed/context_parallel/mamba.py::MambaContextParallel",
               RuleStage::kMesh, MambaCpGroups, MambaCpGroupsMsg, kNoDp},
              HasMamba),
    ForModels({"nemotron_h_no_sequence_parallel",
               "components/distributed/parallelizer.py::NemotronHParallelizationStrategy.parallelize",
               RuleStage::kFeatures, NemotronHNoSp, NemotronHNoSpMsg, kNoDp},
              IsNemotronH),
};

}  // namespace

std::span<const Rule> AutoModelNemotronHRules() { return kRules; }

}  // namespace meshplan::rules
