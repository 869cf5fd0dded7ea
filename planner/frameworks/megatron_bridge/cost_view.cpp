// Megatron-Bridge layout -> CostView: the mesh, Megatron-Core's schedule (train.micro_batch_size,
// VPP model chunks), the DP flavour and the overlap / CUDA-graph / dispatcher settings of a
// ConfigContainer (megatron.md 1.2-1.6), priced on Megatron-Core + Transformer Engine.

#include <algorithm>

#include "meshplan/framework.hpp"

namespace meshplan::megatron_bridge {
namespace {

bool On(Tri t) { return t == Tri::kTrue; }

TokenDispatch DispatchOf(MbDispatcher d) {
  switch (d) {
    case MbDispatcher::kAllgather: return TokenDispatch::kAllgather;
    case MbDispatcher::kAlltoall: return TokenDispatch::kAlltoall;
    case MbDispatcher::kFlex: return TokenDispatch::kFlex;
  }
  return TokenDispatch::kAllgather;
}

CudaGraphCapture GraphOf(MbCudaGraph g) {
  switch (g) {
    case MbCudaGraph::kNone: return CudaGraphCapture::kNone;
    case MbCudaGraph::kTransformerEngine: return CudaGraphCapture::kPerLayer;
    case MbCudaGraph::kFullIteration: return CudaGraphCapture::kFullIteration;
  }
  return CudaGraphCapture::kNone;
}

}  // namespace

void SetRecomputeView(CostView& v, const Layout& l) {
  const MbSettings& mb = l.mb;
  v.recompute = l.recompute;
  v.recompute_modules = mb.recompute_modules;
  v.recompute_block_layers = mb.recompute_method == MbRecomputeMethod::kBlock ? mb.recompute_num_layers : 0;
  v.cuda_graph = GraphOf(mb.cuda_graph);
  v.cuda_graph_scope = mb.cuda_graph_scope;
}

CostView ToCostView(const Layout& l, const ModelSpec& model, const TrainSetup& setup) {
  const MbSettings& mb = l.mb;
  CostView v = MeshCostView(l, model, setup);  // M = global_batch / (dp · mbs) micro-batches, one schedule call
  v.runtime = CostRuntime::kMegatronCore;
  v.dp_replicate = 1;  // Megatron-Core has no HSDP replica axis
  // Megatron-Core interleaves exactly when pp > 1 and virtual_pipeline_model_parallel_size > 1,
  // with vpp model chunks per rank (SplitStages in MeshCostView).
  v.interleaved = l.pp > 1 && l.vpp > 1 && model.num_layers > 0;
  v.estimate_vpp = l.vpp > 1 ? l.vpp : 0;
  v.cpu_offload_layers = mb.cpu_offloading ? mb.cpu_offloading_num_layers : 0;
  v.loss_bytes_per_logit = mb.te_cross_entropy ? 2.0 : 4.0;
  v.optimizer_state_bytes = mb.optimizer_state_bytes;
  // Megatron-Bridge forces ddp.use_megatron_fsdp and dist.use_megatron_fsdp equal (MB
  // config.py); either one set means Megatron FSDP.
  v.dp_impl = (mb.use_megatron_fsdp || mb.dist_use_megatron_fsdp == Tri::kTrue) ? DpImpl::kMegatronFsdp
              : mb.use_torch_fsdp2                                              ? DpImpl::kFsdpPerModule
                                                                                : DpImpl::kReplicated;
  v.distributed_optimizer = l.use_distributed_optimizer || mb.use_megatron_fsdp;
  // ddp.data_parallel_sharding_strategy; unset is the recipe functions' optim_grads_params
  // (MB recipes/common.py _pretrain_common), Megatron FSDP v1 takes all four (MB config.py
  // _validate_and_apply_megatron_fsdp_v1_configs checks none of them).
  v.fsdp_sharding = mb.sharding == MbSharding::kNoShard      ? FsdpSharding::kNoShard
                    : mb.sharding == MbSharding::kOptim      ? FsdpSharding::kOptim
                    : mb.sharding == MbSharding::kOptimGrads ? FsdpSharding::kOptimGrads
                                                             : FsdpSharding::kOptimGradsParams;
  // mixed_precision / ddp grad_reduce_in_fp32: fp32 (4 bytes) or bf16 (2) main gradients.
  v.main_grad_bytes = mb.grad_reduce_in_fp32 ? 4.0 : 2.0;
  v.bucket_size = mb.bucket_size;
  v.tp_comm_overlap = On(mb.tp_comm_overlap);
  v.unfused_attention = mb.unfused_attention;
  v.pp_scatter_gather = mb.pp_scatter_gather;
  v.ep_a2a_overlap = On(mb.ep_a2a_overlap);
  v.overlap_p2p = On(mb.overlap_p2p_comm);
  v.batch_p2p_sync = On(mb.batch_p2p_comm);  // batch_p2p_sync is not read: Megatron-Core's default true
  v.overlap_grad_reduce = On(mb.overlap_grad_reduce);
  v.dispatcher = DispatchOf(mb.token_dispatcher);
  v.flex_backend = v.dispatcher != TokenDispatch::kFlex            ? FlexBackend::kNone
                   : mb.flex_backend == MbFlexBackend::kHybridEP ? FlexBackend::kHybridEP
                                                                 : FlexBackend::kDeepEP;
  // token_dispatcher.py: MoEAlltoAllTokenDispatcher._maybe_dtoh_and_synchronize copies the
  // token counts to the host and waits on d2h_event before the EP all-to-all unless
  // drop_and_pad (moe_pad_expert_input_to_capacity); the flex dispatcher's HybridEP and DeepEP
  // paths size their buffers from the counts the same way (fused_a2a.py hybrid_ep_dispatch:
  // num_permuted_tokens None "causes a D2H synchronization"; DeepEP returns
  // num_recv_tokens_per_expert_list to the host), and the grouped GEMM takes the counts as a
  // host list (experts.py TEGroupedMLP, tokens_per_expert.tolist()). With EP 1 and TP 1 the
  // counts still go to the host for the grouped GEMM ("before_finish").
  v.moe_host_sync = model.is_moe() && !mb.moe_pad_to_capacity;
  SetRecomputeView(v, l);
  // model.cp_comm_type. a2a+p2p with a level of one rank runs as the other type (Transformer
  // Engine attn_forward_func_with_cp: a2a group of 1 -> p2p, p2p group of 1 -> a2a).
  switch (mb.cp_comm) {
    case MbCpComm::kUnset:
    case MbCpComm::kP2p: v.cp_comm = CpCommType::kP2p; break;
    case MbCpComm::kAllGather: v.cp_comm = CpCommType::kAllGather; break;
    case MbCpComm::kA2a: v.cp_comm = CpCommType::kA2a; break;
    case MbCpComm::kA2aP2p: {
      const int64_t a = mb.hcp_first;
      v.cp_comm = a <= 1 ? CpCommType::kP2p : a >= l.cp ? CpCommType::kA2a : CpCommType::kA2aP2p;
      v.cp_a2a = v.cp_comm == CpCommType::kA2aP2p ? a : 1;
      break;
    }
  }
  return v;
}

}  // namespace meshplan::megatron_bridge
