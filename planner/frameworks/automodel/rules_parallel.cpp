// Tensor, sequence, context and expert parallelism rules of NeMo AutoModel (main / v0.5).
// Source files are under nemo_automodel/ in NVIDIA-NeMo/Automodel.
#include <algorithm>

#include "meshplan/framework.hpp"
#include "meshplan/rule_domains.hpp"
#include "rules/rule_util.hpp"

namespace meshplan::rules {
namespace {

const Layout& L(const RuleContext& c) { return c.layout; }

/// TP shards attention heads evenly.
/// Source: components/distributed/parallelizer.py::validate_tp_mesh.
bool TpDividesHeads(const RuleContext& c) { return L(c).tp == 1 || c.model.num_attention_heads % L(c).tp == 0; }
std::string TpDividesHeadsMsg(const RuleContext& c) {
  return Cat("num_attention_heads (", c.model.num_attention_heads, ") must be divisible by tp_size (", L(c).tp, ")");
}

/// TP shards KV heads too; AutoModel has no KV-head replication, so tp <= num_key_value_heads.
/// Source: components/distributed/parallelizer.py::validate_tp_mesh (Automodel issue #799).
bool TpDividesKvHeads(const RuleContext& c) { return L(c).tp == 1 || c.model.num_key_value_heads % L(c).tp == 0; }
std::string TpDividesKvHeadsMsg(const RuleContext& c) {
  return Cat("num_key_value_heads (", c.model.num_key_value_heads, ") must be divisible by tp_size (", L(c).tp,
             "); AutoModel does not replicate KV heads");
}

/// MoE models go through the custom MoE parallelizer, whose TP path needs a registered
/// safe plan (and pretrained weights); routed experts stay EP-owned. meshplan does not
/// emit TP for MoE models (no AutoModel recipe combines tp > 1 with MoE experts).
/// Source: components/moe/parallelizer.py::_resolve_moe_tp_plan.
bool MoeNoTensorParallel(const RuleContext& c) { return !c.model.is_moe() || L(c).tp == 1; }
std::string MoeNoTensorParallelMsg(const RuleContext& c) {
  return Cat("tp_size=", L(c).tp, " on MoE model ", c.model.architecture_name,
             ": the custom MoE TP path has no safe plan registered for it; use tp_size: 1 and ep_size for the experts");
}

/// `sequence_parallel` is a field of FSDP2Config only; other strategies reject the key.
/// Source: components/distributed/config.py (FSDP2Config fields; strict unknown-option check).
bool SequenceParallelFsdp2Only(const RuleContext& c) {
  return !L(c).sequence_parallel || L(c).strategy == Strategy::kFsdp2;
}
std::string SequenceParallelFsdp2OnlyMsg(const RuleContext& c) {
  return Cat("Unknown options for strategy '", StrategyName(L(c).strategy),
             "': ['sequence_parallel']; sequence_parallel exists only for fsdp2");
}

/// The custom MoE TP path rejects sequence parallelism.
/// Source: components/moe/parallelizer.py::_resolve_moe_tp_plan
/// ("sequence_parallel=True is not supported by the custom MoE TP path yet").
/// FSDP2's sequence_parallel changes only the TP plan, which is applied when the TP mesh has
/// more than one rank (components/distributed/parallelizer.py, DefaultParallelizationStrategy
/// .parallelize: `if tp_mesh.size() > 1:`); with tp_size 1 it is switched off without a word.
bool SequenceParallelHasTp(const RuleContext& c) { return !L(c).sequence_parallel || L(c).tp > 1; }
std::string SequenceParallelHasTpMsg(const RuleContext&) {
  return "sequence_parallel: true does nothing with tp_size 1: FSDP2 applies the TP plan it changes only when "
         "tp_size > 1";
}

bool SequenceParallelDenseOnly(const RuleContext& c) { return !L(c).sequence_parallel || !c.model.is_moe(); }
std::string SequenceParallelDenseOnlyMsg(const RuleContext&) {
  return "sequence_parallel=True is not supported by the custom MoE TP path; set sequence_parallel: false";
}

/// Load-balanced CP splits each sequence into 2*cp chunks.
/// Source: components/distributed/context_parallel/utils.py ("CP sequence length ... must be divisible by 2*cp").
bool CpDividesSequence(const RuleContext& c) { return c.setup.seq_len % domain::CpSeqMultiple(L(c).cp) == 0; }
std::string CpDividesSequenceMsg(const RuleContext& c) {
  return Cat("CP sequence length ", c.setup.seq_len, " must be divisible by 2 * cp_size = ",
             domain::CpSeqMultiple(L(c).cp));
}

/// CP strips the attention mask and runs causal SDPA, so a sliding-window model would
/// silently train with full causal attention; meshplan refuses CP for such models.
/// Source: components/distributed/context_parallel/utils.py::attach_context_parallel_hooks
/// (mask removed, is_causal=True).
bool CpNoSlidingWindow(const RuleContext& c) {
  return L(c).cp == 1 || c.model.sliding_window == 0 || c.model.num_sliding_window_layers == 0;
}
std::string CpNoSlidingWindowMsg(const RuleContext& c) {
  return Cat("cp_size=", L(c).cp, " with sliding_window=", c.model.sliding_window, " on ",
             c.model.num_sliding_window_layers,
             " layers: context parallelism replaces the mask by full causal attention; use cp_size: 1");
}

/// Expert parallelism needs a MoE model.
/// Source: _transformers/capabilities.py::validate_for_mesh ("Expert parallelism ... requires a MoE model").
bool EpRequiresMoe(const RuleContext& c) { return domain::EpRequiresMoe(c.model, L(c).ep); }
std::string EpRequiresMoeMsg(const RuleContext& c) {
  return Cat("Expert parallelism (ep_size=", L(c).ep, ") requires a MoE model, but ", c.model.architecture_name,
             " has no experts");
}

/// Each EP rank owns num_experts / ep experts.
/// Source: components/moe/parallelizer.py ("n_routed_experts must be divisible by expert_parallel_degree").
bool EpDividesExperts(const RuleContext& c) { return domain::EpDividesExperts(c.model, L(c).ep); }
std::string EpDividesExpertsMsg(const RuleContext& c) {
  return Cat("n_routed_experts ", c.model.num_experts, " must be divisible by expert_parallel_degree (ep_size) ",
             L(c).ep);
}

/// EP is carved from the non-PP ranks. Current (v0.5 / main): (dp * cp * tp) % ep == 0.
/// v0.3 / v0.4: (dp * cp) % ep == 0, and the MoE mesh only covered the world with tp == 1.
/// Source: components/distributed/mesh_utils.py (non_pp_size check; PR #1684 changed it).
bool EpDividesNonPpRanks(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.ep == 1) return true;
  if (c.version == AutoModelVersion::kV04) return l.tp == 1 && (l.dp * l.cp) % l.ep == 0;
  return (l.dp * l.cp * l.tp) % l.ep == 0;
}
std::string EpDividesNonPpRanksMsg(const RuleContext& c) {
  const Layout& l = L(c);
  if (c.version == AutoModelVersion::kV04) {
    return Cat("AutoModel v0.4 and earlier need tp_size == 1 and dp_size * cp_size (", l.dp, " * ", l.cp, " = ",
               l.dp * l.cp, ") a multiple of ep_size=", l.ep);
  }
  return Cat("non_pp_size=dp_size * cp_size * tp_size=", l.dp, " * ", l.cp, " * ", l.tp, " = ",
             l.dp * l.cp * l.tp, " must be a multiple of ep_size=", l.ep);
}

/// The deepep dispatcher (BackendConfig's default where DeepEP is installed) calls DeepEP's
/// Buffer.get_dispatch_config with the EP group's size at the first dispatch
/// (components/moe/megatron/fused_a2a.py get_buffer), which asserts "Unsupported number of EP
/// ranks" for a size its table lacks (domain::DeepEpRanksSupported, DeepEP v1.2.1).
bool DeepEpEpRanks(const RuleContext& c) {
  const Layout& l = L(c);
  return l.ep <= 1 || !c.model.is_moe() || l.am_backend.dispatcher != AmDispatcher::kDeepEP ||
         domain::DeepEpRanksSupported(l.ep);
}
std::string DeepEpEpRanksMsg(const RuleContext& c) {
  std::string sizes;
  for (int64_t n : domain::DeepEpRankSizes()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(n);
  return Cat("model.backend.dispatcher deepep (the default with DeepEP installed) has no kernel configuration for "
             "ep_size ", L(c).ep, ": DeepEP v1.2.1 Buffer.get_dispatch_config supports ", sizes,
             " ranks and asserts 'Unsupported number of EP ranks' at the first dispatch; set "
             "model.backend.dispatcher: hybridep (or torch), or an ep_size it supports");
}

// DeepEP's first min(ep, 8) ranks (its NVLink peers) on one node of `system`.
bool NvlPeersInNode(const SystemSpec& system, int64_t ep) { return std::min<int64_t>(ep, 8) <= system.gpus_per_node; }

/// DeepEP's normal-mode kernels reach the first min(ep_size, 8) ranks of the EP group over
/// NVLink by CUDA IPC (DeepEP v1.2.1 csrc/deep_ep.cpp Buffer::Buffer: rdma_rank = rank /
/// NUM_MAX_NVL_PEERS, num_nvl_ranks = min(num_ranks, NUM_MAX_NVL_PEERS = 8), lines 36-37;
/// cudaIpcGetMemHandle / cudaIpcOpenMemHandle, lines 50 and 200), and a CUDA IPC handle opens
/// only on a GPU of the same host; AutoModel builds the buffer in normal mode without MNNVL
/// (components/moe/megatron/fused_a2a.py get_buffer: Buffer(group, num_nvl_bytes,
/// num_rdma_bytes)). So those ranks must share a node: on a 4-GPU GB200 / GB300 tray EP 8 and
/// up spans two hosts' worth of IPC peers and fails at the buffer's set-up.
/// AutoModel has no GPU check of its own for deepep (BackendConfig, components/models/common/
/// utils.py: dispatcher is a Literal, no device test) and DeepEP runs on "architectures with
/// SM90 PTX ISA support" (DeepEP v1.2.1 README, Requirements), Blackwell's sm_100 included: deepep
/// on GB200 with EP inside a tray is valid here. Megatron-Bridge refuses DeepEP on GB200 / GB300
/// by device name in its own validate_flex_dispatcher_backend (training/flex_dispatcher_backend.py
/// lines 97-103 at 067f987d: rule mb_flex_backend_gpu), a check of that framework, not of DeepEP.
bool DeepEpNvlPeersInNode(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.ep <= 1 || !c.model.is_moe() || l.am_backend.dispatcher != AmDispatcher::kDeepEP || c.system == nullptr) {
    return true;
  }
  return NvlPeersInNode(*c.system, l.ep);
}
std::string DeepEpNvlPeersInNodeMsg(const RuleContext& c) {
  const int64_t peers = std::min<int64_t>(L(c).ep, 8);
  return Cat("model.backend.dispatcher deepep with ep_size ", L(c).ep, " needs its first ", peers,
             " EP ranks on one node (DeepEP v1.2.1 reaches up to 8 NVLink peers by CUDA IPC, csrc/deep_ep.cpp); ",
             c.system->display_name, " has ", c.system->gpus_per_node,
             " GPUs per node; set model.backend.dispatcher: hybridep, or ep_size <= ", c.system->gpus_per_node);
}

constexpr const char* kValidateTp = "components/distributed/parallelizer.py::validate_tp_mesh";

const Rule kRules[] = {
    {"tp_divides_heads", kValidateTp, RuleStage::kMesh, TpDividesHeads, TpDividesHeadsMsg, kNoDp},
    {"tp_divides_kv_heads", kValidateTp, RuleStage::kMesh, TpDividesKvHeads, TpDividesKvHeadsMsg, kNoDp},
    {"moe_no_tensor_parallel", "components/moe/parallelizer.py::_resolve_moe_tp_plan", RuleStage::kMesh,
     MoeNoTensorParallel, MoeNoTensorParallelMsg, kNoDp},
    {"ep_requires_moe", "_transformers/capabilities.py::validate_for_mesh", RuleStage::kMesh, EpRequiresMoe,
     EpRequiresMoeMsg, kNoDp},
    {"ep_divides_experts", "components/moe/parallelizer.py::parallelize_model", RuleStage::kMesh, EpDividesExperts,
     EpDividesExpertsMsg, kNoDp},
    {"ep_divides_non_pp_ranks", "components/distributed/mesh_utils.py (non_pp_size % ep_size)", RuleStage::kMesh,
     EpDividesNonPpRanks, EpDividesNonPpRanksMsg},
    {"deepep_ep_ranks", "components/moe/megatron/fused_a2a.py::get_buffer; DeepEP v1.2.1 Buffer.get_dispatch_config",
     RuleStage::kFeatures, DeepEpEpRanks, DeepEpEpRanksMsg, kNoDp},
    {"deepep_nvl_peers_in_node", "components/moe/megatron/fused_a2a.py::get_buffer; DeepEP v1.2.1 csrc/deep_ep.cpp Buffer::Buffer",
     RuleStage::kFeatures, DeepEpNvlPeersInNode, DeepEpNvlPeersInNodeMsg, kNoDp},
    {"cp_divides_sequence", "components/distributed/context_parallel/utils.py", RuleStage::kMesh, CpDividesSequence,
     CpDividesSequenceMsg, kNoDp},
    {"cp_no_sliding_window", "components/distributed/context_parallel/utils.py::attach_context_parallel_hooks",
     RuleStage::kMesh, CpNoSlidingWindow, CpNoSlidingWindowMsg, kNoDp},
    {"sequence_parallel_fsdp2_only", "components/distributed/config.py::FSDP2Config", RuleStage::kFeatures,
     SequenceParallelFsdp2Only, SequenceParallelFsdp2OnlyMsg, kNoDp},
    {"sequence_parallel_dense_only", "components/moe/parallelizer.py::_resolve_moe_tp_plan", RuleStage::kFeatures,
     SequenceParallelDenseOnly, SequenceParallelDenseOnlyMsg, kNoDp},
    {"sequence_parallel_needs_tp", "components/distributed/parallelizer.py (TP plan applied only for tp_size > 1)",
     RuleStage::kFeatures, SequenceParallelHasTp, SequenceParallelHasTpMsg, kNoDp, Severity::kSilentlyOff},
};

}  // namespace

std::span<const Rule> ParallelRules() { return kRules; }

}  // namespace meshplan::rules

namespace meshplan::automodel {

bool DeepEpRuns(const SystemSpec& system, int64_t ep) {
  return ep <= 1 || (domain::DeepEpRanksSupported(ep) && rules::NvlPeersInNode(system, ep));
}

}  // namespace meshplan::automodel
