// The flex dispatcher's communication buffers (DeepEP, HybridEP): device memory the
// dispatcher's library allocates outside PyTorch's caching allocator at the first dispatch and
// keeps for the run. Formulas: cost/memory.hpp EpDispatcherBufferBytes.
#include <algorithm>
#include <cmath>

#include "cost/memory.hpp"
#include "meshplan/topology.hpp"

namespace meshplan::cost {

namespace {

// DeepEP v1.2.1 normal mode (csrc/config.hpp Config::get_nvl_buffer_size_hint /
// get_rdma_buffer_size_hint; deep_ep/buffer.py get_dispatch_config / get_combine_config).
constexpr double kDeepEpChannels = 10;    // Buffer.num_sms 20 (Megatron-Core's and AutoModel's default) / 2
constexpr double kDeepEpNvlPeers = 8;     // NUM_MAX_NVL_PEERS
constexpr double kDeepEpMaxTopK = 128;    // kNumMaxTopK: index (int64) and weight (fp32) slots per token
constexpr double kDeepEpMaxScales = 128;  // kNumMaxScales: fp32 scale slots per token
constexpr double kDeepEpSourceMeta = 8;   // sizeof(internode::SourceMeta): two ints
constexpr double kDeepEpRdmaRecv = 128;   // num_max_rdma_chunked_recv_tokens of every table entry

double Align128(double bytes) { return std::ceil(bytes / 128.0) * 128.0; }

// num_max_nvl_chunked_recv_tokens of the dispatch and combine tables (equal in both): 256 up
// to 8 ranks, 288 for 16-64, 560 for 128, 720 for 144 and 160.
double DeepEpNvlRecvTokens(double ranks) {
  if (ranks <= 8) return 256;
  if (ranks <= 64) return 288;
  if (ranks <= 128) return 560;
  return 720;
}

double DeepEpBytes(double ranks, double hidden) {
  const double hidden_bytes = 2.0 * hidden;  // fused_a2a.py get_hidden_bytes: h · max(element size, 2)
  const double nvl_ranks = std::min(ranks, kDeepEpNvlPeers);
  const double rdma_ranks = std::max(std::floor(ranks / kDeepEpNvlPeers), 1.0);
  const double per_token = kDeepEpMaxTopK * (8.0 + 4.0) + kDeepEpMaxScales * 4.0 + kDeepEpSourceMeta;
  const double nvl = Align128(kDeepEpChannels * nvl_ranks * (2.0 * rdma_ranks + 3.0) * 4.0 +
                              kDeepEpChannels * nvl_ranks * DeepEpNvlRecvTokens(ranks) * (hidden_bytes + per_token));
  if (ranks <= kDeepEpNvlPeers) return nvl;
  const double rdma = Align128(kDeepEpChannels * rdma_ranks * (kDeepEpNvlPeers * 2.0 + 2.0) * 2.0 * 4.0 +
                               kDeepEpChannels * rdma_ranks * kDeepEpRdmaRecv * 2.0 * (hidden_bytes + per_token + 16.0));
  return nvl + rdma;
}

// HybridEP (DeepEP hybrid-ep branch 94a9f8f: csrc/hybrid_ep/buffer/intranode.cu
// NVLCoordinator::allocate_*_buffers, internode_doca.cu RDMACoordinator::allocate_*_buffers;
// deep_ep/hybrid_ep_buffer.py use_shared_buffer=True, so the dispatch reuses the combine's
// token and probability buffers). T tokens per rank (init_hybrid_ep_buffer's
// max_num_of_tokens_per_rank: the first dispatch's x.shape[-2]), R ranks of the group per NVLink
// domain, N domains, E_l local experts, h hidden:
//   NVLink: the worst case of every token of the group to one rank, T·R·N tokens, each h bf16
//     values, E_l·R fp32 probabilities and h/128 fp32 scaling factors;
//   RDMA (N > 1): the rank's own T tokens to send (h bf16, E_l·R·N probabilities, h/128
//     scales) and, per other domain, T tokens each of a dispatch group buffer (h, E_l·R, h/128)
//     and of the combine's reduction and group buffers (h bf16 and E_l·R probabilities each).
double HybridEpBytes(double tokens, double ranks_per_domain, double domains, double local_experts, double hidden) {
  const double probs = local_experts * ranks_per_domain, scales = hidden / 128.0;
  const double nvl = tokens * ranks_per_domain * domains * (2.0 * hidden + 4.0 * probs + 4.0 * scales);
  if (domains <= 1) return nvl;
  const double other = domains - 1.0;
  const double dispatch = tokens * (2.0 * hidden + 4.0 * probs * domains + 4.0 * scales) +
                          tokens * other * (2.0 * hidden + 4.0 * probs + 4.0 * scales);
  const double combine = 2.0 * tokens * other * (2.0 * hidden + 4.0 * probs);
  return nvl + dispatch + combine;
}

}  // namespace

double EpDispatcherBufferBytes(const Ctx& c) {
  const CostView& l = c.view;
  const ModelSpec& m = c.model;
  if (l.dispatcher != TokenDispatch::kFlex || l.ep <= 1 || !m.is_moe() || m.num_experts <= 0) return 0.0;
  // The flex dispatcher's group: expert-TP x EP ranks (Megatron-Core MoEFlexTokenDispatcher
  // tp_ep_group; AutoModel: its EP group, etp 1), consecutive ranks spanning ceil(n / domain)
  // NVLink domains.
  const int64_t etp = l.runtime == CostRuntime::kMegatronCore ? std::max<int64_t>(1, l.etp) : 1;
  const int64_t n = etp * l.ep;
  const double hidden = double(m.ExpertInputSize());
  if (l.flex_backend != FlexBackend::kHybridEP) return DeepEpBytes(double(n), hidden);
  const int64_t domain = PlacedDomainGpus(c.system, c.setup.num_gpus);
  const int64_t domains = n <= domain ? 1 : (n + domain - 1) / domain;
  // Tokens of the MoE layer's input on a rank: a micro-batch's over CP, and over TP with
  // sequence parallelism (Megatron-Core's MoE input is the rank's sequence shard).
  const bool tp_shard = l.sequence_parallel && l.tp > 1;
  const double tokens = c.tokens_per_mb / (tp_shard ? double(l.tp) : 1.0);
  const double local_experts = double(m.num_experts) / double(l.ep);
  return HybridEpBytes(tokens, double(n) / double(domains), double(domains), local_experts, hidden);
}

}  // namespace meshplan::cost
