// What meshplan writes into a Megatron-Bridge recipe beyond the layout: the overlap, FSDP,
// checkpoint, CUDA_DEVICE_MAX_CONNECTIONS and recompute settings derived from the layout and
// the system (ApplyEmittedSettings: the TP-overlap gating among them), a published recipe's
// software settings (ApplyMbRuntime), and the selective-recompute module sets searched.
#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "frameworks/megatron_bridge/space.hpp"

namespace meshplan::search {

std::vector<uint32_t> SearchedRecomputeModules(const ModelSpec& m) {
  // The module sets of Megatron-Bridge's own performance recipes (megatron.md, perf-recipe
  // table; recipes/megatron-bridge-perf.yaml), each kept when the model has what it recomputes.
  // Megatron-Core's default {core_attn} is not searched: Transformer Engine's fused attention
  // keeps no score matrix, so recomputing it saves no memory and costs time (MCore warns so
  // in transformer_config.py:1983-1989).
  const bool dense_mlp = !m.is_moe() || m.num_dense_layers > 0;
  std::vector<uint32_t> out;
  if (m.mla) {
    out.push_back(kRecomputeMlaUpProj);
    if (dense_mlp) out.push_back(kRecomputeMlaUpProj | kRecomputeMlp);
    if (m.is_moe()) out.push_back(kRecomputeMlaUpProj | kRecomputeLayernorm | kRecomputeMoeAct);
  }
  if (m.is_moe()) {
    out.push_back(kRecomputeLayernorm | kRecomputeMoeAct);
    out.push_back(kRecomputeMoeAct);
  }
  if (!m.is_moe()) out.push_back(kRecomputeMlp);
  return out;
}

void ApplyEmittedSettings(Layout& l, const SystemSpec& system, Precision precision) {
  MbSettings& s = l.mb;
  const bool mfsdp = s.use_megatron_fsdp || s.dist_use_megatron_fsdp == Tri::kTrue;
  const bool fsdp2 = s.use_torch_fsdp2;
  s.use_megatron_fsdp = mfsdp;
  s.dist_use_megatron_fsdp = mfsdp ? Tri::kTrue : Tri::kFalse;
  if (mfsdp) l.use_distributed_optimizer = true;  // MB config.py:1079-1124 forces it
  s.sharding = mfsdp ? MbSharding::kOptimGradsParams : MbSharding::kUnset;
  s.average_in_collective = mfsdp ? Tri::kFalse : Tri::kUnset;
  s.ckpt_format = mfsdp ? MbCkptFormat::kFsdpDtensor : MbCkptFormat::kTorchDist;
  s.use_tp_pp_dp_mapping = false;
  // MLM arguments.py:1031-1063: torch FSDP2 without gradient_accumulation_fusion, which
  // Megatron-Bridge's model providers turn on where the fused kernel exists.
  s.grad_acc_fusion = fsdp2 ? Tri::kFalse : Tri::kUnset;
  s.cpu_offloading = false;
  s.pipeline_dtype_set = true;
  s.transformer_engine = true;
  // comm_overlap.py:441-451: TP overlap needs TP >= 2, SP and Transformer Engine.
  // NVFP4: off (megatron.md perf-recipe table: every *_nvfp4 recipe sets tp_comm_overlap False).
  // Transformer Engine's userbuffers exchange through NVLink peer memory: a TP group larger than
  // the NVLink domain (TP 16 on 8-GPU DGX nodes) gets no overlap and is priced exposed.
  const int64_t domain = system.scaleup_domain_gpus > 0 ? system.scaleup_domain_gpus : system.gpus_per_node;
  s.tp_comm_overlap = (l.tp >= 2 && l.sequence_parallel && precision != Precision::kFp4 && l.tp <= domain)
                          ? Tri::kTrue
                          : Tri::kFalse;
  // comm_overlap.py:454-462.
  const bool interleaved = l.pp > 1 && l.vpp > 1;
  s.overlap_p2p_comm = interleaved ? Tri::kTrue : Tri::kFalse;
  s.batch_p2p_comm = interleaved ? Tri::kFalse : Tri::kTrue;
  // comm_overlap.py:562-591, 635-643: DP overlap with the distributed optimizer and DP > 1.
  const bool dp_overlap = l.use_distributed_optimizer && l.dp > 1 && !fsdp2;
  s.overlap_grad_reduce = dp_overlap ? Tri::kTrue : Tri::kFalse;
  s.overlap_param_gather = dp_overlap ? Tri::kTrue : Tri::kFalse;
  s.bucket_size = dp_overlap ? 128LL * 1024 * 1024 : 0;  // parameters, not bytes
  s.ep_a2a_overlap = Tri::kFalse;
  s.token_dispatcher = l.ep > 1 ? MbDispatcher::kAlltoall : MbDispatcher::kAllgather;
  s.num_distributed_optimizer_instances = 1;
  ApplyRecomputeArguments(l);
  // megatron.md 2.11: 32 on Blackwell; 1 before Blackwell with TP or CP > 1 unless FSDP;
  // never 1 under FSDP (8 = the perf launcher's default otherwise).
  if (!PreBlackwellGpu(system)) {
    s.cuda_device_max_connections = 32;
  } else if (!mfsdp && !fsdp2 && (l.tp > 1 || l.cp > 1)) {
    s.cuda_device_max_connections = 1;
  } else {
    s.cuda_device_max_connections = 8;
  }
}

void ApplyRecomputeArguments(Layout& l) {
  l.mb.recompute_method = l.recompute == Recompute::kFull ? MbRecomputeMethod::kUniform : MbRecomputeMethod::kUnset;
  l.mb.recompute_num_layers = l.recompute == Recompute::kFull ? 1 : 0;
}

void ApplyMbRuntime(Layout& l, const MbRuntime& rt) {
  if (l.ep > 1) {
    l.mb.token_dispatcher = rt.dispatcher;
    l.mb.flex_backend = rt.dispatcher == MbDispatcher::kFlex ? rt.flex_backend : MbFlexBackend::kNone;
    l.mb.ep_a2a_overlap = rt.ep_a2a_overlap;
    l.mb.moe_pad_to_capacity = rt.pad_to_capacity;
  }
  l.mb.cuda_graph = rt.cuda_graph;
  l.mb.cuda_graph_scope = rt.cuda_graph_scope;
  l.mb.grad_reduce_in_fp32 = rt.grad_reduce_in_fp32;
  l.mb.te_cross_entropy = rt.te_cross_entropy;
}

MbRuntime MbRuntimeOf(const Layout& l) {
  MbRuntime rt;
  if (l.mb.token_dispatcher != MbDispatcher::kAllgather) rt.dispatcher = l.mb.token_dispatcher;
  rt.flex_backend = rt.dispatcher == MbDispatcher::kFlex ? l.mb.flex_backend : MbFlexBackend::kNone;
  rt.ep_a2a_overlap = l.mb.ep_a2a_overlap == Tri::kTrue ? Tri::kTrue : Tri::kFalse;
  rt.pad_to_capacity = l.mb.moe_pad_to_capacity;
  rt.cuda_graph = l.mb.cuda_graph;
  rt.cuda_graph_scope = l.mb.cuda_graph_scope;
  rt.grad_reduce_in_fp32 = l.mb.grad_reduce_in_fp32;
  rt.te_cross_entropy = l.mb.te_cross_entropy;
  rt.cp_comm = l.mb.cp_comm;
  rt.hcp_first = l.mb.cp_comm == MbCpComm::kA2aP2p ? l.mb.hcp_first : 0;
  return rt;
}

void FitCudaGraphsToRecompute(Layout& l) {
  MbSettings& s = l.mb;
  if (s.cuda_graph != MbCudaGraph::kTransformerEngine) return;
  if (l.recompute == Recompute::kFull) {
    s.cuda_graph = MbCudaGraph::kNone;
    s.cuda_graph_scope = 0;
  } else if (l.recompute == Recompute::kSelective && (s.recompute_modules & kRecomputeMoe)) {
    s.cuda_graph_scope &= ~(kGraphMoeRouter | kGraphMoePreprocess);  // preprocess needs the router graph
    if (s.cuda_graph_scope == 0) s.cuda_graph = MbCudaGraph::kNone;  // 0 would mean the whole layer
  }
}

}  // namespace meshplan::search
