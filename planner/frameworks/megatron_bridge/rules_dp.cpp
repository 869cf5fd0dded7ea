// Data-parallel flavour (DDP, distributed optimizer, Megatron FSDP, torch FSDP2), checkpoint
// format, launch environment, overlap, recompute and batch rules of Megatron-Bridge /
// Megatron-Core (megatron.md 2.6-2.12, 2.13). MB = Megatron-Bridge, MLM = Megatron-LM.
#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan::rules {
namespace {

using namespace mb;

const char* CkptName(MbCkptFormat f) {
  switch (f) {
    case MbCkptFormat::kUnset: return "unset (torch_dist)";
    case MbCkptFormat::kTorch: return "torch";
    case MbCkptFormat::kTorchDist: return "torch_dist";
    case MbCkptFormat::kTorchDcp: return "torch_dcp";
    case MbCkptFormat::kFsdpDtensor: return "fsdp_dtensor";
  }
  return "?";
}

/// Source: MB config.py (use_megatron_fsdp and use_torch_fsdp2 are mutually exclusive; megatron.md 1.4).
bool FsdpExclusive(const RuleContext& c) { return !(Mfsdp(L(c)) && Fsdp2(L(c))); }
std::string FsdpExclusiveMsg(const RuleContext&) {
  return "use_megatron_fsdp and use_torch_fsdp2 are both on: they are two different FSDP implementations, pick one";
}

/// MB sets both flags when either is set; a recipe that writes one true and the other
/// false says something that will not happen. Source: MB config.py:1065-1069.
bool MfsdpFlags(const RuleContext& c) {
  const Layout& l = L(c);
  return !(l.mb.use_megatron_fsdp && l.mb.dist_use_megatron_fsdp == Tri::kFalse);
}
std::string MfsdpFlagsMsg(const RuleContext& c) {
  return Cat("Megatron FSDP needs dist.use_megatron_fsdp and ddp.use_megatron_fsdp both true; found dist=",
             TriName(L(c).mb.dist_use_megatron_fsdp), " ddp=", OnOff(L(c).mb.use_megatron_fsdp));
}

/// Megatron FSDP v1 takes all four ddp.data_parallel_sharding_strategy values (no_shard,
/// optim, optim_grads, optim_grads_params); with optim_grads_params (also what an unset key
/// means: the recipe functions' value, MB recipes/common.py _pretrain_common) it asserts that
/// train.check_weight_hash_across_dp_replicas_interval is None, the weights being sharded.
/// Source: MB training/config.py _validate_and_apply_megatron_fsdp_v1_configs (2026-08-22),
/// Megatron-LM training/arguments.py (the same assertion).
bool MfsdpSharding(const RuleContext& c) {
  const Layout& l = L(c);
  const bool zero3 = l.mb.sharding == MbSharding::kUnset || l.mb.sharding == MbSharding::kOptimGradsParams;
  return !Mfsdp(l) || !zero3 || !l.mb.weight_hash_check;
}
std::string MfsdpShardingMsg(const RuleContext&) {
  return "train.check_weight_hash_across_dp_replicas_interval is not supported with Megatron FSDP's optim_grads_params "
         "sharding (the weights are sharded, no rank holds a replica to hash): set it to null, or shard less "
         "(ddp.data_parallel_sharding_strategy: optim_grads)";
}

/// Source: MB config.py:1079-1124 (_validate_and_apply_megatron_fsdp_v1_configs turns it off).
bool MfsdpAverage(const RuleContext& c) { return !Mfsdp(L(c)) || L(c).mb.average_in_collective != Tri::kTrue; }
std::string MfsdpAverageMsg(const RuleContext&) {
  return "ddp.average_in_collective: true with Megatron FSDP: Megatron-Bridge switches it off (unless symmetric "
         "registration is disabled); write average_in_collective: false";
}

/// Source: MB config.py:1105-1108 (fsdp_dtensor required by Megatron FSDP v1 whenever a
/// checkpoint is saved or loaded). An unset format passes unless save/load is configured.
bool MfsdpCkpt(const RuleContext& c) {
  const MbSettings& s = L(c).mb;
  if (!Mfsdp(L(c)) || s.ckpt_format == MbCkptFormat::kFsdpDtensor) return true;
  return s.ckpt_format == MbCkptFormat::kUnset && !s.checkpointing;
}
std::string MfsdpCkptMsg(const RuleContext& c) {
  return Cat("Megatron FSDP saves and loads DTensor checkpoints: checkpoint.ckpt_format must be fsdp_dtensor, found ",
             CkptName(L(c).mb.ckpt_format));
}

/// Source: MB config.py:1529-1533 (fsdp_dtensor only with Megatron FSDP).
bool DtensorNeedsMfsdp(const RuleContext& c) {
  return L(c).mb.ckpt_format != MbCkptFormat::kFsdpDtensor || Mfsdp(L(c));
}
std::string DtensorNeedsMfsdpMsg(const RuleContext&) {
  return "checkpoint.ckpt_format: fsdp_dtensor is only allowed with Megatron FSDP (use_megatron_fsdp: true); use "
         "torch_dist";
}

/// Source: MB config.py:1079-1124 ("use_tp_pp_dp_mapping is not supported" with Megatron FSDP).
bool MfsdpMapping(const RuleContext& c) { return !Mfsdp(L(c)) || !L(c).mb.use_tp_pp_dp_mapping; }
std::string MfsdpMappingMsg(const RuleContext&) {
  return "dist.use_tp_pp_dp_mapping is not supported with Megatron FSDP; remove it";
}

/// Source: MB skill doc, Megatron FSDP CPU offloading (megatron.md 2.8, marked uncertain there).
bool MfsdpOffload(const RuleContext& c) {
  const Layout& l = L(c);
  return !Mfsdp(l) || !l.mb.cpu_offloading || (l.pp == 1 && l.recompute == Recompute::kNone);
}
std::string MfsdpOffloadMsg(const RuleContext& c) {
  return Cat("cpu_offloading with Megatron FSDP needs pipeline_model_parallel_size 1 and no recompute; found PP ",
             L(c).pp, ", recompute ", RecomputeName(L(c).recompute));
}

/// Source: MCore transformer/transformer_config.py:1884-1889 ("CPU offloading can be done only for
/// layers less than num_layers").
bool OffloadLayers(const RuleContext& c) {
  const Layout& l = L(c);
  return !l.mb.cpu_offloading || l.mb.cpu_offloading_num_layers < c.model.num_layers;
}
std::string OffloadLayersMsg(const RuleContext& c) {
  return Cat("cpu_offloading_num_layers must be less than the model's ", c.model.num_layers, " layers; found ",
             L(c).mb.cpu_offloading_num_layers);
}

/// Source: MCore transformer/transformer_config.py:1891-1894 (no pipeline parallelism with CPU
/// offloading).
bool OffloadPp(const RuleContext& c) { return !L(c).mb.cpu_offloading || L(c).pp <= 1; }
std::string OffloadPpMsg(const RuleContext& c) {
  return Cat("cpu_offloading does not support pipeline parallelism; found pipeline_model_parallel_size ", L(c).pp);
}

/// Source: MCore transformer_config.py (cpu_offloading is incompatible with recompute; megatron.md 2.12).
bool OffloadRecompute(const RuleContext& c) { return !L(c).mb.cpu_offloading || L(c).recompute == Recompute::kNone; }
std::string OffloadRecomputeMsg(const RuleContext& c) {
  return Cat("cpu_offloading cannot be combined with recompute_granularity ", RecomputeName(L(c).recompute),
             ": both try to drop the same activations");
}

/// Source: MB config.py:1110; MLM arguments.py:1048, 1166 (FSDP needs CUDA_DEVICE_MAX_CONNECTIONS != 1).
bool FsdpCdmc(const RuleContext& c) {
  return !(Mfsdp(L(c)) || Fsdp2(L(c))) || L(c).mb.cuda_device_max_connections != 1;
}
std::string FsdpCdmcMsg(const RuleContext&) {
  return "CUDA_DEVICE_MAX_CONNECTIONS=1 with FSDP: FSDP overlaps its all-gathers on a second stream and needs more "
         "than one connection; use 32 (Blackwell) or 8";
}

/// Source: MLM arguments.py:1031-1063 (torch FSDP2: no pipeline or expert parallelism).
bool Fsdp2PpEp(const RuleContext& c) { return !Fsdp2(L(c)) || (L(c).pp == 1 && L(c).ep == 1); }
std::string Fsdp2PpEpMsg(const RuleContext& c) {
  return Cat("use_torch_fsdp2 does not support pipeline or expert parallelism; found PP ", L(c).pp, ", EP ", L(c).ep,
             "; use Megatron FSDP");
}

/// Source: MLM arguments.py:1031-1063 (FSDP2 shards the optimizer itself).
bool Fsdp2Distopt(const RuleContext& c) { return !Fsdp2(L(c)) || !L(c).use_distributed_optimizer; }
std::string Fsdp2DistoptMsg(const RuleContext&) {
  return "use_torch_fsdp2 with use_distributed_optimizer: FSDP2 already shards the optimizer; set "
         "use_distributed_optimizer: false";
}

/// Source: MLM arguments.py:1031-1063 (untie_embeddings_and_output_weights).
bool Fsdp2Untied(const RuleContext& c) { return !Fsdp2(L(c)) || !c.model.tie_word_embeddings; }
std::string Fsdp2UntiedMsg(const RuleContext& c) {
  return Cat("use_torch_fsdp2 needs untied embeddings, but ", c.model.name, " ties its input and output embeddings");
}

/// Source: MLM arguments.py:1031-1063 (ckpt_format torch_dist or torch_dcp).
bool Fsdp2Ckpt(const RuleContext& c) {
  const MbCkptFormat f = L(c).mb.ckpt_format;
  return !Fsdp2(L(c)) || f == MbCkptFormat::kUnset || f == MbCkptFormat::kTorchDist || f == MbCkptFormat::kTorchDcp;
}
std::string Fsdp2CkptMsg(const RuleContext& c) {
  return Cat("use_torch_fsdp2 saves torch_dist or torch_dcp checkpoints; found ckpt_format ", CkptName(L(c).mb.ckpt_format));
}

/// Source: MLM training/arguments.py:1031-1063 (torch FSDP2 asserts not gradient_accumulation_fusion;
/// megatron.md 2.9). Unset reads as on: Megatron-Bridge's GPT providers default it to whether the
/// fused kernel can be enabled (on with Transformer Engine / Apex).
bool Fsdp2GradAccFusion(const RuleContext& c) { return !Fsdp2(L(c)) || L(c).mb.grad_acc_fusion == Tri::kFalse; }
std::string Fsdp2GradAccFusionMsg(const RuleContext& c) {
  return Cat("use_torch_fsdp2 needs model.gradient_accumulation_fusion: false; found ",
             L(c).mb.grad_acc_fusion == Tri::kTrue ? "true" : "it unset (the model providers turn it on)");
}

/// Source: MLM checkpointing (torch_dcp requires TP <= 1 and PP <= 1, "not tested"; megatron.md 1.5).
bool DcpNoTpPp(const RuleContext& c) {
  return L(c).mb.ckpt_format != MbCkptFormat::kTorchDcp || (L(c).tp == 1 && L(c).pp == 1);
}
std::string DcpNoTpPpMsg(const RuleContext& c) {
  return Cat("checkpoint.ckpt_format: torch_dcp needs TP 1 and PP 1; found TP ", L(c).tp, ", PP ", L(c).pp);
}

/// Source: MCore parallel_state.py:922-926 ((DP*CP) % num_distributed_optimizer_instances).
bool DistoptInstances(const RuleContext& c) {
  const int64_t n = L(c).mb.num_distributed_optimizer_instances;
  return n >= 1 && (L(c).dp * L(c).cp) % n == 0;
}
std::string DistoptInstancesMsg(const RuleContext& c) {
  return Cat("data parallel x context parallel (", L(c).dp, " x ", L(c).cp,
             ") must be divisible by num_distributed_optimizer_instances (", L(c).mb.num_distributed_optimizer_instances, ")");
}

/// Source: MLM arguments.py:1024-1029 (overlap_param_gather needs distopt or MFSDP, and overlap_grad_reduce).
bool ParamGather(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.mb.overlap_param_gather != Tri::kTrue) return true;
  return (l.use_distributed_optimizer || Mfsdp(l)) && l.mb.overlap_grad_reduce != Tri::kFalse;
}
std::string ParamGatherMsg(const RuleContext& c) {
  const Layout& l = L(c);
  if (!(l.use_distributed_optimizer || Mfsdp(l))) {
    return "overlap_param_gather: true needs use_distributed_optimizer: true (plain DDP keeps full parameters, there is "
           "nothing to gather)";
  }
  return "overlap_param_gather: true needs overlap_grad_reduce: true";
}

/// overlap_p2p_comm only in the interleaved schedule, never with batch_p2p_comm.
/// Source: MB training/comm_overlap.py:454-462; MLM arguments.py:1001-1017.
bool P2pFlags(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.mb.overlap_p2p_comm == Tri::kTrue && l.mb.batch_p2p_comm == Tri::kTrue) return false;
  return l.mb.overlap_p2p_comm != Tri::kTrue || (l.pp > 1 && l.vpp > 1);
}
std::string P2pFlagsMsg(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.mb.batch_p2p_comm == Tri::kTrue && l.mb.overlap_p2p_comm == Tri::kTrue) {
    return "overlap_p2p_comm and batch_p2p_comm are both true: they are mutually exclusive";
  }
  return Cat("overlap_p2p_comm: true needs an interleaved pipeline (PP > 1 and VPP > 1); found PP ", l.pp, ", VPP ", l.vpp,
             "; write overlap_p2p_comm: false, batch_p2p_comm: true");
}

/// Source: MCore transformer_config.py:1901-1939 (full needs recompute_method and
/// recompute_num_layers <= layers per PP rank; selective forbids recompute_num_layers).
bool RecomputeArgs(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.recompute == Recompute::kSelective) return l.mb.recompute_num_layers == 0;
  if (l.recompute != Recompute::kFull) return true;
  const int64_t per_rank = (c.model.num_layers + l.pp - 1) / l.pp;
  return l.mb.recompute_method != MbRecomputeMethod::kUnset && l.mb.recompute_num_layers >= 1 && l.mb.recompute_num_layers <= per_rank;
}
std::string RecomputeArgsMsg(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.recompute == Recompute::kSelective) {
    return Cat("recompute_granularity: selective does not take recompute_num_layers (found ", l.mb.recompute_num_layers, ")");
  }
  return Cat("recompute_granularity: full needs recompute_method (uniform or block) and recompute_num_layers between 1 and "
             "the layers per pipeline rank (", (c.model.num_layers + l.pp - 1) / l.pp, "); found method ",
             l.mb.recompute_method == MbRecomputeMethod::kUnset ? "unset" : "set", ", num_layers ",
             l.mb.recompute_num_layers);
}

/// Selective recompute modules the model has: mla_up_proj needs multi_latent_attention,
/// moe_act needs moe_grouped_gemm (Megatron-Bridge's MoE model providers set it; dense models
/// have no experts to group). Source: MCore transformer_config.py:1964-1973 (d98e8a6, 2026-08).
/// DeepSeek-V4 runs with multi_latent_attention on (Megatron-Bridge 067f987 deepseek_v4_bridge.py
/// provider_bridge; DSv4HybridSelfAttention's qkv_up_checkpoint honours mla_up_proj).
static bool MegatronMultiLatentAttention(const ModelSpec& m) { return m.mla || m.architecture == Architecture::kDeepseekV4; }
bool RecomputeModulesModel(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.recompute != Recompute::kSelective) return true;
  const uint32_t m = l.mb.recompute_modules;
  return ((m & kRecomputeMlaUpProj) == 0 || MegatronMultiLatentAttention(c.model)) && ((m & kRecomputeMoeAct) == 0 || c.model.is_moe());
}
std::string RecomputeModulesModelMsg(const RuleContext& c) {
  const uint32_t m = L(c).mb.recompute_modules;
  if ((m & kRecomputeMlaUpProj) != 0 && !MegatronMultiLatentAttention(c.model)) {
    return "recompute_modules has mla_up_proj, which needs multi_latent_attention; " + c.model.name +
           " has no MLA (found " + RecomputeModulesValue(m) + ")";
  }
  return "recompute_modules has moe_act, which needs moe_grouped_gemm (MoE experts); " + c.model.name +
         " is a dense model (found " + RecomputeModulesValue(m) + ")";
}

/// Source: MB training/comm_overlap.py:478-518; MCore transformer_config.py:3002-3030.
bool EpOverlap(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.mb.ep_a2a_overlap != Tri::kTrue) return true;
  const MbDispatcher d = l.mb.token_dispatcher;
  const bool moe_rc = l.recompute == Recompute::kSelective && (l.mb.recompute_modules & kRecomputeMoe) != 0;
  return l.ep > 1 && d != MbDispatcher::kAllgather && (l.pp == 1 || l.vpp > 1) && l.recompute != Recompute::kFull &&
         !moe_rc;
}
std::string EpOverlapMsg(const RuleContext& c) {
  const Layout& l = L(c);
  return Cat("overlap_moe_expert_parallel_comm needs EP > 1 (found ", l.ep, "), moe_token_dispatcher_type alltoall or flex "
             "(found ", l.mb.token_dispatcher == MbDispatcher::kAllgather ? "allgather" : "alltoall/flex",
             "), VPP when PP > 1 (PP ", l.pp, ", VPP ", l.vpp, "), no full recompute and no moe in recompute_modules");
}

/// Per-layer CUDA graphs (cuda_graph_impl transformer_engine or local) with recompute. Source:
/// MCore transformer_config.py __post_init__ (Megatron-LM d98e8a64, 2026-08-22, lines 2854-2870):
/// with cuda_graph_impl != "none", a recompute_granularity other than selective asserts
/// cuda_graph_impl == "full_iteration" ("full recompute is only supported with full iteration
/// CUDA graph"); selective recompute of "moe" under transformer_engine graphs asserts that
/// moe_router is not in cuda_graph_scope.
bool CudaGraphRecompute(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.mb.cuda_graph != MbCudaGraph::kTransformerEngine) return true;
  if (l.recompute == Recompute::kFull) return false;
  const bool moe_rc = l.recompute == Recompute::kSelective && (l.mb.recompute_modules & kRecomputeMoe) != 0;
  return !(moe_rc && (l.mb.cuda_graph_scope & kGraphMoeRouter) != 0);
}
std::string CudaGraphRecomputeMsg(const RuleContext& c) {
  if (L(c).recompute == Recompute::kFull) {
    return "recompute_granularity: full with per-layer CUDA graphs (cuda_graph_impl transformer_engine or local): "
           "Megatron-Core asserts \"full recompute is only supported with full iteration CUDA graph\"; set "
           "model.cuda_graph_impl: none (or full_iteration), or use selective recompute";
  }
  return "recompute_modules has moe with moe_router in cuda_graph_scope (cuda_graph_impl transformer_engine): "
         "Megatron-Core refuses graphing a recomputed router; drop moe_router / moe_preprocess from cuda_graph_scope "
         "or moe from recompute_modules";
}

/// The flex dispatcher's backend on the GPU. Source: Megatron-Bridge training/flex_dispatcher_backend.py
/// validate_flex_dispatcher_backend (called by ConfigContainer.validate, training/config.py:1652;
/// 067f987d): DeepEP needs compute capability 8.x or 9.x or a GPU named "NVIDIA B200" / "NVIDIA
/// B300" (not GB200 / GB300); HybridEP compute capability 8.x-10.x. (flex_dispatcher_backend.py
/// lines 97-103: a device-name check of Megatron-Bridge's, not DeepEP's: DeepEP v1.2.1 runs on
/// sm_100, and AutoModel, which has no such check, accepts deepep on GB200 inside a tray: rule
/// deepep_nvl_peers_in_node. The two frameworks differ here because their code does.)
bool FlexBackendGpu(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.mb.token_dispatcher != MbDispatcher::kFlex || c.system == nullptr) return true;
  return domain::FlexBackendRuns(l.mb.flex_backend, c.system->gpu);
}
std::string FlexBackendGpuMsg(const RuleContext& c) {
  const bool deepep = L(c).mb.flex_backend == MbFlexBackend::kDeepEP;
  return std::string("moe_flex_dispatcher_backend: ") + (deepep ? "deepep" : "hybridep") + " is not supported on " +
         c.system->gpu.display_name + " (Megatron-Bridge validate_flex_dispatcher_backend: " +
         (deepep ? "DeepEP runs on Ampere, Hopper, B200 and B300" : "HybridEP runs on compute capability 8.x to 10.x") +
         "); use " + (deepep ? "hybridep" : "moe_token_dispatcher_type: alltoall");
}

/// DeepEP's kernels need a tuned configuration for the flex dispatcher's group of expert-TP x
/// EP ranks (domain::DeepEpRanksSupported: DeepEP v1.2.1 Buffer.get_dispatch_config, called by
/// Megatron-Core fused_a2a.py get_buffer at the first dispatch; the job stops there, after
/// start-up, so Megatron-Bridge's own config checks do not see it).
bool DeepEpRanks(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.mb.token_dispatcher != MbDispatcher::kFlex || l.mb.flex_backend != MbFlexBackend::kDeepEP || l.ep <= 1) {
    return true;
  }
  return domain::DeepEpRanksSupported(l.EffectiveEtp() * l.ep);
}
std::string DeepEpRanksMsg(const RuleContext& c) {
  const Layout& l = L(c);
  std::string sizes;
  for (int64_t n : domain::DeepEpRankSizes()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(n);
  return Cat("moe_flex_dispatcher_backend: deepep has no kernel configuration for ", l.EffectiveEtp() * l.ep,
             " ranks (expert_tensor_parallel_size ", l.EffectiveEtp(), " x expert_model_parallel_size ", l.ep,
             "); DeepEP v1.2.1 Buffer.get_dispatch_config supports ", sizes,
             " and asserts 'Unsupported number of EP ranks' at the first dispatch; use an EP size it supports, "
             "moe_flex_dispatcher_backend: hybridep, or moe_token_dispatcher_type: alltoall");
}

/// Source: MCore num_microbatches_calculator.py:381-391 (GBS % (MBS*DP) == 0).
bool GlobalBatch(const RuleContext& c) { return NumMicrobatches(c) >= 1; }
std::string GlobalBatchMsg(const RuleContext& c) {
  return Cat("global_batch_size (", c.setup.global_batch, ") must be divisible by micro_batch_size x data parallel (",
             L(c).micro_batch(), " x ", L(c).dp, " = ", L(c).micro_batch() * L(c).dp, ")");
}

/// MXFP8 (the recipe's, or meshplan's on Blackwell) quantizes GEMM inputs in 1x32 blocks along
/// both dimensions: Transformer Engine's MXFP8Quantizer.is_quantizable needs the rows divisible
/// by 32; per-tensor FP8 (and NVFP4 here) needs them divisible by 8 (assert_dim_for_fp8_exec).
int64_t Fp8RowMultiple(const RuleContext& c) {
  const MbFp8Recipe r = L(c).mb.fp8_recipe;
  const bool blackwell = c.system != nullptr && c.system->gpu.BlackwellOrNewer();
  const bool mx = c.setup.precision == Precision::kFp8 &&
                  (r == MbFp8Recipe::kMxfp8 || (r == MbFp8Recipe::kUnset && blackwell));
  return mx ? 32 : 8;
}
/// Rows of a linear layer's FP8 input on one rank: micro_batch · seq_length / cp tokens, and
/// with sequence parallel / tp (the sequence shard is quantized before the all-gather).
int64_t Fp8Rows(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t cp = std::max<int64_t>(1, l.cp), tp = std::max<int64_t>(1, l.tp);
  const int64_t rows = l.micro_batch() * (c.setup.seq_len / cp);
  return l.sequence_parallel && rows % tp == 0 ? rows / tp : rows;
}
/// Source: TE pytorch/utils.py assert_dim_for_fp8_exec; tensor/mxfp8_tensor.py
/// MXFP8Quantizer.is_quantizable.
bool Fp8TokenRows(const RuleContext& c) {
  if (c.setup.precision == Precision::kBf16) return true;
  if (c.setup.seq_len % std::max<int64_t>(1, L(c).cp) != 0) return true;  // mb_cp_divides_sequence reports that
  return Fp8Rows(c) % Fp8RowMultiple(c) == 0;
}
std::string Fp8TokenRowsMsg(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t cp = std::max<int64_t>(1, l.cp);
  const bool mx = Fp8RowMultiple(c) == 32;
  return Cat(mx ? "MXFP8" : PrecisionName(c.setup.precision), " GEMMs need their input's rows, micro_batch_size x "
             "seq_length / context_parallel_size", l.sequence_parallel ? " / tensor_model_parallel_size (the sequence "
             "shard)" : "", " = ", Fp8Rows(c), " tokens (micro_batch_size ", l.micro_batch(), ", seq_length ",
             c.setup.seq_len, ", cp ", cp, l.sequence_parallel ? Cat(", tp ", l.tp) : std::string(), "), to be a multiple of ",
             Fp8RowMultiple(c), " (Transformer Engine asserts it)");
}

/// MXFP8 needs Blackwell (compute capability 10.0+).
/// Source: TE pytorch/fp8.py check_mxfp8_support.
bool Mxfp8Blackwell(const RuleContext& c) {
  return c.setup.precision != Precision::kFp8 || L(c).mb.fp8_recipe != MbFp8Recipe::kMxfp8 || c.system == nullptr ||
         c.system->gpu.BlackwellOrNewer();
}
std::string Mxfp8BlackwellMsg(const RuleContext& c) {
  return Cat("the MXFP8 recipe needs a Blackwell GPU (compute capability 10.0+), found ", c.system->gpu.display_name,
             " (", c.system->gpu.compute_capability, "); expected bf16_with_fp8_current_scaling_mixed or "
             "bf16_with_fp8_delayed_scaling_mixed");
}

/// Interleaved schedule with the default group size PP: M >= PP and M % PP == 0.
/// Source: MCore pipeline_parallel/schedules.py:1160-1180.
bool Interleaved(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.vpp == 1 || l.pp == 1) return true;
  const int64_t m = NumMicrobatches(c);
  return m == 0 || (m >= l.pp && m % l.pp == 0);
}
std::string InterleavedMsg(const RuleContext& c) {
  return Cat("the interleaved schedule needs the number of micro-batches (", NumMicrobatches(c),
             " = global_batch / (micro_batch_size x DP)) to be a multiple of pipeline_model_parallel_size (", L(c).pp, ")");
}

const Rule kRules[] = {
    ReadsPartAxesOnly({"mb_precision_supported", "TE pytorch/fp8.py check_fp8_support / check_nvfp4_support",
                       RuleStage::kMesh, PrecisionSupported, PrecisionSupportedMsg, kNoDp}),
    {"mb_mxfp8_needs_blackwell", "TE pytorch/fp8.py check_mxfp8_support", RuleStage::kMesh, Mxfp8Blackwell,
     Mxfp8BlackwellMsg, kNoDp},
    {"mb_fsdp_exclusive", "MB training/config.py (DistributedInitConfig)", RuleStage::kMesh, FsdpExclusive, FsdpExclusiveMsg},
    {"mb_megatron_fsdp_flags", "MB training/config.py:1065-1069", RuleStage::kMesh, MfsdpFlags, MfsdpFlagsMsg},
    {"mb_megatron_fsdp_weight_hash", "MB training/config.py _validate_and_apply_megatron_fsdp_v1_configs", RuleStage::kMesh, MfsdpSharding,
     MfsdpShardingMsg},
    {"mb_megatron_fsdp_average_in_collective", "MB training/config.py:1079-1124", RuleStage::kMesh, MfsdpAverage,
     MfsdpAverageMsg},
    {"mb_megatron_fsdp_ckpt_format", "MB training/config.py:1105-1108", RuleStage::kMesh, MfsdpCkpt, MfsdpCkptMsg},
    {"mb_fsdp_dtensor_needs_megatron_fsdp", "MB training/config.py:1529-1533", RuleStage::kMesh, DtensorNeedsMfsdp,
     DtensorNeedsMfsdpMsg},
    {"mb_megatron_fsdp_no_tp_pp_dp_mapping", "MB training/config.py:1079-1124", RuleStage::kMesh, MfsdpMapping,
     MfsdpMappingMsg},
    {"mb_megatron_fsdp_cdmc", "MB training/config.py:1110; MLM arguments.py:1048,1166", RuleStage::kMesh, FsdpCdmc,
     FsdpCdmcMsg},
    {"mb_fsdp2_no_pp_ep", "MLM training/arguments.py:1031-1063", RuleStage::kMesh, Fsdp2PpEp, Fsdp2PpEpMsg},
    {"mb_fsdp2_no_distributed_optimizer", "MLM training/arguments.py:1031-1063", RuleStage::kMesh, Fsdp2Distopt,
     Fsdp2DistoptMsg},
    {"mb_fsdp2_untied_embeddings", "MLM training/arguments.py:1031-1063", RuleStage::kMesh, Fsdp2Untied, Fsdp2UntiedMsg},
    {"mb_fsdp2_ckpt_format", "MLM training/arguments.py:1031-1063", RuleStage::kMesh, Fsdp2Ckpt, Fsdp2CkptMsg},
    {"mb_fsdp2_no_grad_acc_fusion", "MLM training/arguments.py:1031-1063", RuleStage::kMesh, Fsdp2GradAccFusion,
     Fsdp2GradAccFusionMsg},
    {"mb_torch_dcp_no_tp_pp", "MLM training/checkpointing (torch_dcp)", RuleStage::kMesh, DcpNoTpPp, DcpNoTpPpMsg},
    {"mb_distopt_instances_divide_dp_cp", "MCore parallel_state.py:922-926", RuleStage::kMesh, DistoptInstances,
     DistoptInstancesMsg},
    {"mb_overlap_param_gather", "MLM training/arguments.py:1024-1029", RuleStage::kMesh, ParamGather, ParamGatherMsg},
    {"mb_p2p_comm_flags", "MB training/comm_overlap.py:454-462", RuleStage::kMesh, P2pFlags, P2pFlagsMsg},
    {"mb_megatron_fsdp_cpu_offloading", "MB skill doc (Megatron FSDP CPU offloading)", RuleStage::kFeatures,
     MfsdpOffload, MfsdpOffloadMsg},
    {"mb_cpu_offloading_no_recompute", "MCore transformer/transformer_config.py", RuleStage::kFeatures, OffloadRecompute,
     OffloadRecomputeMsg},
    ReadsNoRecompute({"mb_cpu_offloading_num_layers", "MCore transformer/transformer_config.py:1884-1889",
                      RuleStage::kFeatures, OffloadLayers, OffloadLayersMsg}),
    ReadsNoRecompute({"mb_cpu_offloading_no_pp", "MCore transformer/transformer_config.py:1891-1894",
                      RuleStage::kFeatures, OffloadPp, OffloadPpMsg}),
    {"mb_recompute_arguments", "MCore transformer/transformer_config.py:1901-1939", RuleStage::kFeatures, RecomputeArgs,
     RecomputeArgsMsg},
    {"mb_recompute_modules_model", "MCore transformer/transformer_config.py:1964-1973", RuleStage::kFeatures,
     RecomputeModulesModel, RecomputeModulesModelMsg},
    {"mb_ep_overlap_requirements", "MB training/comm_overlap.py:478-518", RuleStage::kFeatures, EpOverlap, EpOverlapMsg},
    {"mb_cuda_graph_recompute", "MCore transformer/transformer_config.py:2854-2870 (__post_init__)", RuleStage::kFeatures,
     CudaGraphRecompute, CudaGraphRecomputeMsg},
    ReadsNoRecompute({"mb_flex_backend_gpu", "MB training/flex_dispatcher_backend.py validate_flex_dispatcher_backend",
                      RuleStage::kFeatures, FlexBackendGpu, FlexBackendGpuMsg}),
    ReadsNoRecompute({"mb_deepep_ep_ranks",
                      "DeepEP v1.2.1 deep_ep/buffer.py Buffer.get_dispatch_config; MCore moe/fused_a2a.py get_buffer",
                      RuleStage::kFeatures, DeepEpRanks, DeepEpRanksMsg}),
    {"mb_global_batch_divisible", "MCore num_microbatches_calculator.py:381-391", RuleStage::kBatch, GlobalBatch,
     GlobalBatchMsg},
    {"mb_interleaved_microbatches", "MCore pipeline_parallel/schedules.py:1160-1180", RuleStage::kBatch, Interleaved,
     InterleavedMsg},
    {"mb_fp8_token_rows", "TE pytorch/utils.py assert_dim_for_fp8_exec; tensor/mxfp8_tensor.py is_quantizable",
     RuleStage::kBatch, Fp8TokenRows, Fp8TokenRowsMsg},
};

}  // namespace

std::span<const Rule> MegatronDpRules() { return kRules; }

}  // namespace meshplan::rules
