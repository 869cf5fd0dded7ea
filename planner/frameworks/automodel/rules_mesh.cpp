// Mesh-shape and strategy-support rules of NeMo AutoModel (main / v0.5).
// Source files are under nemo_automodel/ in NVIDIA-NeMo/Automodel.
#include "rules/rule_util.hpp"

namespace meshplan::rules {
namespace {

const Layout& L(const RuleContext& c) { return c.layout; }

/// Every mesh axis is at least 1.
/// Source: components/distributed/mesh_utils.py::_validate_mesh_spec (assert shape > 0).
bool AxesPositive(const RuleContext& c) {
  const Layout& l = L(c);
  return l.tp >= 1 && l.pp >= 1 && l.cp >= 1 && l.ep >= 1 && l.dp >= 1 && l.dp_replicate >= 1;
}
std::string AxesPositiveMsg(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t n = l.tp * l.cp * l.pp;
  if (l.dp == 0 && l.tp >= 1 && l.pp >= 1 && l.cp >= 1 && l.ep >= 1 && l.dp_replicate >= 1 && n > 0 &&
      c.setup.num_gpus % n != 0) {
    // dp_size was left to be inferred and cannot be: say why rather than "dp_size=0".
    return Cat("dp_size is inferred as world_size / (tp_size * cp_size * pp_size) = ", c.setup.num_gpus, " / (",
               l.tp, " * ", l.cp, " * ", l.pp, ") = ", c.setup.num_gpus, " / ", n,
               ", not a whole number: world_size must be divisible by tp_size * cp_size * pp_size");
  }
  return Cat("every mesh axis must be >= 1; found tp_size=", l.tp, " pp_size=", l.pp, " cp_size=", l.cp,
             " ep_size=", l.ep, " dp_size=", l.dp, " dp_replicate_size=", l.dp_replicate);
}

/// dp is inferred as world / (tp * cp * pp); the world size must divide exactly.
/// Source: components/distributed/mesh_utils.py::_infer_dp_size.
bool WorldDivisible(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t model_ranks = l.tp * l.cp * l.pp;
  return model_ranks > 0 && c.setup.num_gpus % model_ranks == 0 && l.dp * model_ranks == c.setup.num_gpus;
}
std::string WorldDivisibleMsg(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t n = l.tp * l.cp * l.pp;
  if (n > 0 && c.setup.num_gpus % n == 0) {
    return Cat("dp_size=", l.dp, " but world_size / (tp_size * cp_size * pp_size) = ", c.setup.num_gpus, " / ", n,
               " = ", c.setup.num_gpus / n, "; set dp_size: null to let AutoModel infer it");
  }
  return Cat("world_size (", c.setup.num_gpus, ") must be divisible by tp_size * cp_size * pp_size (", l.tp,
             " * ", l.cp, " * ", l.pp, " = ", n, ")");
}

/// HSDP replication is an FSDP2 feature.
/// Source: components/distributed/mesh_utils.py ("dp_replicate_size is only supported with FSDP2Config").
bool HsdpFsdp2Only(const RuleContext& c) {
  return L(c).dp_replicate == 1 || L(c).strategy == Strategy::kFsdp2;
}
std::string HsdpFsdp2OnlyMsg(const RuleContext& c) {
  return Cat("dp_replicate_size=", L(c).dp_replicate, " is only supported with strategy fsdp2, not ",
             StrategyName(L(c).strategy), "; remove dp_replicate_size");
}

/// dp_shard = dp / dp_replicate must be whole.
/// Source: components/distributed/mesh_utils.py ("dp_size must be a multiple of dp_replicate_size").
bool HsdpDividesDp(const RuleContext& c) { return L(c).dp % L(c).dp_replicate == 0; }
std::string HsdpDividesDpMsg(const RuleContext& c) {
  return Cat("dp_size=", L(c).dp, " must be a multiple of dp_replicate_size=", L(c).dp_replicate);
}

/// FSDP2 refuses pure replication (that is DDP's job): dp_replicate < dp unless it is 1.
/// Source: components/distributed/mesh_utils.py ("dp_replicate_size=R must be less than dp_size=D ...").
bool HsdpNotPureReplication(const RuleContext& c) {
  return L(c).dp_replicate == 1 || L(c).dp_replicate < L(c).dp;
}
std::string HsdpNotPureReplicationMsg(const RuleContext& c) {
  return Cat("dp_replicate_size=", L(c).dp_replicate, " must be less than dp_size=", L(c).dp,
             " since DDP usecase is not supported by FSDP2; use strategy ddp or a smaller dp_replicate_size");
}

/// DDP builds no device mesh: data parallelism only.
/// Source: components/distributed/mesh_utils.py (_require_size_one for tp, pp, cp, ep under ddp).
bool DdpDataParallelOnly(const RuleContext& c) {
  const Layout& l = L(c);
  return l.strategy != Strategy::kDdp || (l.tp == 1 && l.pp == 1 && l.cp == 1 && l.ep == 1);
}
std::string DdpDataParallelOnlyMsg(const RuleContext& c) {
  const Layout& l = L(c);
  const char* what = l.tp != 1 ? "tensor parallelism (tp_size)" : l.pp != 1 ? "pipeline parallelism (pp_size)"
                     : l.cp != 1 ? "context parallelism (cp_size)" : "expert parallelism (ep_size)";
  return Cat("ddp does not support ", what, "; found tp_size=", l.tp, " pp_size=", l.pp, " cp_size=", l.cp,
             " ep_size=", l.ep, "; use strategy fsdp2");
}

/// MegatronFSDP has no pipeline or expert parallelism.
/// Source: components/distributed/mesh_utils.py (_require_size_one("megatron_fsdp", pp_size / ep_size)),
/// recipes/llm/train_ft.py ("MegatronFSDPConfig is not supported when pipeline parallelism is enabled").
bool MegatronFsdpNoPpEp(const RuleContext& c) {
  const Layout& l = L(c);
  return l.strategy != Strategy::kMegatronFsdp || (l.pp == 1 && l.ep == 1);
}
std::string MegatronFsdpNoPpEpMsg(const RuleContext& c) {
  const Layout& l = L(c);
  return Cat("megatron_fsdp does not support ", l.pp != 1 ? "pipeline parallelism (pp_size=" : "expert parallelism (ep_size=",
             l.pp != 1 ? l.pp : l.ep, "); use strategy fsdp2");
}

/// The current MegatronFSDP backend is supported for pure data parallelism only; TP and CP
/// are accepted by its mesh but untested (supported-configuration rule, not a start-up check).
/// Source: NVIDIA-NeMo/Automodel issue #3191 ("Supported parallelism: pure DP (tp_size=1) only");
/// components/distributed/config.py::MegatronFSDPConfig.
bool MegatronFsdpPureDp(const RuleContext& c) {
  const Layout& l = L(c);
  return l.strategy != Strategy::kMegatronFsdp || (l.tp == 1 && l.cp == 1);
}
std::string MegatronFsdpPureDpMsg(const RuleContext& c) {
  return Cat("megatron_fsdp is supported for pure data parallelism only (tp_size=1, cp_size=1); found tp_size=",
             L(c).tp, " cp_size=", L(c).cp, "; use strategy fsdp2 for TP or CP");
}

/// MegatronFSDP skips activation checkpointing (logs an error) and raises on 'selective'.
/// Source: components/distributed/megatron_fsdp.py (activation checkpointing "not yet supported ... Skipping");
/// recipes/_dist_utils.py (selective only for FSDP2 and DDP).
bool MegatronFsdpNoCheckpointing(const RuleContext& c) {
  return L(c).strategy != Strategy::kMegatronFsdp || L(c).recompute == Recompute::kNone;
}
std::string MegatronFsdpNoCheckpointingMsg(const RuleContext& c) {
  return Cat("megatron_fsdp does not apply activation_checkpointing (", RecomputeName(L(c).recompute),
             " is skipped or rejected); set activation_checkpointing: false or use fsdp2");
}

/// Selective activation checkpointing: FSDP2 and DDP on main; FSDP2 only in v0.5.0 and earlier.
/// Source: recipes/_dist_utils.py::parse_distributed_section
/// ("selective activation checkpointing is supported only for FSDP2 and DDP configs.").
bool SelectiveCheckpointingStrategy(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.recompute != Recompute::kSelective) return true;
  if (c.version == AutoModelVersion::kV04) return l.strategy == Strategy::kFsdp2;
  return l.strategy == Strategy::kFsdp2 || l.strategy == Strategy::kDdp;
}
std::string SelectiveCheckpointingStrategyMsg(const RuleContext& c) {
  return Cat("activation_checkpointing: selective is supported only for ",
             c.version == AutoModelVersion::kV04 ? "fsdp2" : "fsdp2 and ddp", ", not ", StrategyName(L(c).strategy));
}

constexpr const char* kMeshUtils = "components/distributed/mesh_utils.py";

const Rule kRules[] = {
    {"precision_supported", "torchao float8 / TE check_fp8_support (compute capability 8.9+)", RuleStage::kMesh,
     PrecisionSupported, PrecisionSupportedMsg, kNoDp},
    {"axes_positive", "components/distributed/mesh_utils.py::_validate_mesh_spec", RuleStage::kMesh, AxesPositive,
     AxesPositiveMsg},
    {"world_divisible_by_model_parallel", "components/distributed/mesh_utils.py::_infer_dp_size", RuleStage::kMesh,
     WorldDivisible, WorldDivisibleMsg},
    {"ddp_data_parallel_only", kMeshUtils, RuleStage::kMesh, DdpDataParallelOnly, DdpDataParallelOnlyMsg, kNoDp},
    {"megatron_fsdp_no_pp_ep", kMeshUtils, RuleStage::kMesh, MegatronFsdpNoPpEp, MegatronFsdpNoPpEpMsg, kNoDp},
    {"megatron_fsdp_pure_dp", "components/distributed/config.py::MegatronFSDPConfig (Automodel issue #3191)",
     RuleStage::kMesh, MegatronFsdpPureDp, MegatronFsdpPureDpMsg, kNoDp},
    {"hsdp_fsdp2_only", kMeshUtils, RuleStage::kMesh, HsdpFsdp2Only, HsdpFsdp2OnlyMsg, kNoDp},
    {"hsdp_divides_dp", kMeshUtils, RuleStage::kMesh, HsdpDividesDp, HsdpDividesDpMsg},
    {"hsdp_not_pure_replication", kMeshUtils, RuleStage::kMesh, HsdpNotPureReplication, HsdpNotPureReplicationMsg},
    {"megatron_fsdp_no_checkpointing", "components/distributed/megatron_fsdp.py", RuleStage::kFeatures,
     MegatronFsdpNoCheckpointing, MegatronFsdpNoCheckpointingMsg, kNoDp},
    {"selective_checkpointing_strategy", "recipes/_dist_utils.py::parse_distributed_section", RuleStage::kFeatures,
     SelectiveCheckpointingStrategy, SelectiveCheckpointingStrategyMsg, kNoDp},
};

}  // namespace

std::span<const Rule> MeshRules() { return kRules; }

}  // namespace meshplan::rules
