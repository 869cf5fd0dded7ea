// The flex dispatcher's DeepEP / HybridEP buffers (cost::EpDispatcherBufferBytes), computed by
// hand from the libraries' allocation code (the formulas of planner/cost/memory.hpp).
#include <doctest/doctest.h>

#include "cost/context.hpp"
#include "cost/memory.hpp"
#include "cost_fixtures.hpp"

namespace meshplan {
namespace {

// A Megatron-Core view of the flex dispatcher at EP `ep` (etp 1, tp 1, cp 1, micro-batch 1).
CostView Flex(FlexBackend backend, int64_t ep) {
  CostView v;
  v.runtime = CostRuntime::kMegatronCore;
  v.dispatcher = TokenDispatch::kFlex;
  v.flex_backend = backend;
  v.ep = ep;
  v.etp = 1;
  v.micro_batch = 1;
  return v;
}

double Bytes(const ModelSpec& m, const SystemSpec& sys, int64_t gpus, const CostView& v) {
  const ParamCounts p = CountParams(m);
  const TrainSetup setup = test::Setup(gpus, 4096, 1024);
  const cost::Ctx c = cost::MakeCtx(m, sys, setup, p, v);
  return cost::EpDispatcherBufferBytes(c);
}

TEST_CASE("EP buffers: DeepEP v1.2.1's size hints at hidden 4096") {
  ModelSpec m = test::Qwen3_30B_A3B();
  m.hidden_size = 4096;  // DeepEP's buffers depend on the hidden size and the group only
  const SystemSpec sys = test::DgxH100();
  // EP 8, one node: NVLink only. 10 channels x 8 peers x (2 + 3) ints, and 10 x 8 x 256
  // receive slots of 8192 bytes of token and 2056 of top-k indices (128 x 8), weights
  // (128 x 4), scales (128 x 4) and source metadata (8): 1600 + 209879040, rounded up to 128.
  CHECK(Bytes(m, sys, 64, Flex(FlexBackend::kDeepEP, 8)) == doctest::Approx(209880704.0));
  // EP 32 over 4 nodes: 8 NVLink peers, 4 RDMA ranks, 288 NVLink slots: 3520 + 236113920 ->
  // 236117504; RDMA 10 x 4 x 18 x 2 x 4 + 10 x 4 x 128 x 2 x (8192 + 2072) = 105109120.
  CHECK(Bytes(m, sys, 64, Flex(FlexBackend::kDeepEP, 32)) == doctest::Approx(236117504.0 + 105109120.0));
  // The buffers do not grow with the batch (a fixed ring of chunks).
  CostView big = Flex(FlexBackend::kDeepEP, 8);
  big.micro_batch = 4;
  CHECK(Bytes(m, sys, 64, big) == doctest::Approx(209880704.0));
}

TEST_CASE("EP buffers: HybridEP keeps room for every token of the group at one rank") {
  // DeepSeek-V3 (h 7168, 256 experts) at EP 64 inside one 72-GPU NVLink domain, 4096 tokens
  // per rank: T x 64 x (2h + 4 x (4 local experts x 64) + 4 x 7168/128) = 262144 x 15584.
  SystemSpec nvl72 = test::DgxH100();
  nvl72.gpus_per_node = 4;
  nvl72.scaleup_domain_gpus = 72;
  const ModelSpec ds = test::DeepSeekV3();
  CHECK(Bytes(ds, nvl72, 64, Flex(FlexBackend::kHybridEP, 64)) == doctest::Approx(262144.0 * 15584.0));
  // Qwen3-30B-A3B (h 2048, 128 experts) at EP 16 over two 8-GPU domains: R 8, N 2, q = 8 x 8,
  // s = 16. NVLink 4096 x 16 x (4096 + 256 + 64) = 289406976; RDMA dispatch 4096 x (4096 +
  // 512 + 64) + 4096 x (4096 + 256 + 64) = 37224448, combine 2 x 4096 x (4096 + 256) = 35651584.
  const ModelSpec q = test::Qwen3_30B_A3B();
  const SystemSpec h100 = test::DgxH100();
  CHECK(Bytes(q, h100, 16, Flex(FlexBackend::kHybridEP, 16)) == doctest::Approx(289406976.0 + 37224448.0 + 35651584.0));
  // Twice the tokens (micro-batch 2), twice the buffers; TP 2 with sequence parallelism halves
  // a rank's tokens again.
  CostView mb2 = Flex(FlexBackend::kHybridEP, 16);
  mb2.micro_batch = 2;
  CHECK(Bytes(q, h100, 16, mb2) == doctest::Approx(2.0 * (289406976.0 + 37224448.0 + 35651584.0)));
  mb2.tp = 2;
  mb2.sequence_parallel = true;
  CHECK(Bytes(q, h100, 32, mb2) == doctest::Approx(289406976.0 + 37224448.0 + 35651584.0));
}

TEST_CASE("EP buffers: none without the flex dispatcher and part of the rank's overhead") {
  const ModelSpec q = test::Qwen3_30B_A3B();
  const SystemSpec h100 = test::DgxH100();
  CostView a2a = Flex(FlexBackend::kNone, 8);
  a2a.dispatcher = TokenDispatch::kAlltoall;
  CHECK(Bytes(q, h100, 8, a2a) == 0.0);
  CHECK(Bytes(q, h100, 8, Flex(FlexBackend::kDeepEP, 1)) == 0.0);
  // RankMemory's overhead (CUDA context + NCCL + EP) carries them: the flex layout's exceeds
  // the alltoall one's by exactly the buffers.
  const ParamCounts p = CountParams(q);
  const TrainSetup setup = test::Setup(8, 4096, 1024);
  const CostView flex = Flex(FlexBackend::kDeepEP, 8);
  const cost::Ctx cf = cost::MakeCtx(q, h100, setup, p, flex);
  const cost::Ctx ca = cost::MakeCtx(q, h100, setup, p, a2a);
  CHECK(cost::RankMemory(cf, 0).overhead - cost::RankMemory(ca, 0).overhead ==
        doctest::Approx(cost::EpDispatcherBufferBytes(cf)));
  CHECK(cost::EpDispatcherBufferBytes(cf) > 1e8);
}

}  // namespace
}  // namespace meshplan
