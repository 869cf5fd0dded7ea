// The per-thread memos of the Megatron-Bridge scoring path (cost/last_values.hpp): HashedValues
// itself, and MegatronLayoutShared / RankMemory with the CostModel's tables (memoised) against
// the same terms without tables (computed each time), over layouts that revisit a mesh with
// other micro-batches, recompute modes and data-parallel flavours: a memo key missing an input
// would return a value computed for another layout.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "cost/comm.hpp"
#include "cost/context.hpp"
#include "cost/last_values.hpp"
#include "cost/memory.hpp"
#include "cost/tables.hpp"
#include "cost/time.hpp"
#include "meshplan/framework.hpp"

namespace meshplan {
namespace {

using Key = std::array<int64_t, 2>;

TEST_CASE("cost: HashedValues finds what it stored and forgets a key its slot gave to another") {
  cost::HashedValues<Key, double, 8> memo;
  const Key a{3, 7};
  const size_t slot_a = memo.SlotOf(a);
  CHECK(memo.Find(a, slot_a) == nullptr);
  CHECK(memo.Store(a, slot_a, 2.5) == 2.5);
  REQUIRE(memo.Find(a, slot_a) != nullptr);
  CHECK(*memo.Find(a, slot_a) == 2.5);
  // Another key of the same slot (8 slots: one among the first few dozen keys) replaces it.
  Key b{0, 0};
  for (int64_t i = 4; i < 1000; ++i) {
    b = Key{i, 7};
    if (memo.SlotOf(b) == slot_a) break;
  }
  REQUIRE(b != a);
  REQUIRE(memo.SlotOf(b) == slot_a);
  CHECK(memo.Find(b, slot_a) == nullptr);  // same slot, other key: a miss, not a's value
  memo.Store(b, slot_a, 4.0);
  CHECK(*memo.Find(b, slot_a) == 4.0);
  CHECK(memo.Find(a, slot_a) == nullptr);
}

// Bit-for-bit equality of the fields a layout's step time reads.
void CheckSameShared(const cost::MegatronShared& x, const cost::MegatronShared& y) {
  CHECK(x.n_mb == y.n_mb);
  CHECK(x.tokens == y.tokens);
  CHECK(x.extra == y.extra);
  CHECK(x.core_extra == y.core_extra);
  CHECK(x.linear_rate == y.linear_rate);
  CHECK(x.expert_rate == y.expert_rate);
  CHECK(x.core_rate == y.core_rate);
  CHECK(x.dense_mem_s == y.dense_mem_s);
  CHECK(x.moe_mem_s == y.moe_mem_s);
  CHECK(x.head_mem_s == y.head_mem_s);
  CHECK(x.layer_kernels.moe == y.layer_kernels.moe);
  CHECK(x.recompute_moe_flops == y.recompute_moe_flops);
  CHECK(x.tp_per == y.tp_per);
  CHECK(x.cp_layer_mb == y.cp_layer_mb);
  CHECK(x.ep_per == y.ep_per);
  CHECK(x.ep_a2a.rdma == y.ep_a2a.rdma);
  CHECK(x.ep_hidden_cost == y.ep_hidden_cost);
  CHECK(x.pp == y.pp);
  CHECK(x.bubble_fraction == y.bubble_fraction);
  CHECK(x.max_stage_layers == y.max_stage_layers);
  CHECK(x.v == y.v);
  CHECK(x.ld.busbw_bytes_per_s == y.ld.busbw_bytes_per_s);
  CHECK(x.le.busbw_bytes_per_s == y.le.busbw_bytes_per_s);
}

TEST_CASE("cost: the memoised Megatron-Bridge terms equal the terms computed afresh") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  const ModelSpec m = LoadModel("deepseek-v3");
  TrainSetup setup;
  setup.num_gpus = 2048;
  setup.seq_len = 4096;
  setup.global_batch = 8192;
  const ParamCounts p = CountParams(m);
  const cost::CostTables tables(m, p);
  const auto links = cost::SharedLinkTable(sys, setup.num_gpus, m.num_experts);
  // Two meshes, each with two DP flavours, three recompute modes, three micro-batches and
  // three dispatchers (alltoall, flex with DeepEP and with HybridEP: the EP all-to-all memo's
  // key and the buffers in the memory's overhead), walked twice (the second walk is served
  // from the memos).
  std::vector<Layout> layouts;
  const std::pair<MbDispatcher, MbFlexBackend> dispatchers[] = {{MbDispatcher::kAlltoall, MbFlexBackend::kNone},
                                                                {MbDispatcher::kFlex, MbFlexBackend::kDeepEP},
                                                                {MbDispatcher::kFlex, MbFlexBackend::kHybridEP}};
  for (int64_t pp : {8, 16}) {
    for (bool distopt : {false, true}) {
      for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        for (int64_t mbs : {1, 2, 4}) {
          for (const auto& [dispatcher, backend] : dispatchers) {
            Layout l;
            l.framework = Framework::kMegatronBridge;
            l.strategy = Strategy::kDdp;
            l.tp = 4;
            l.pp = pp;
            l.ep = 32;
            l.dp = setup.num_gpus / (l.tp * l.pp);
            l.sequence_parallel = true;
            l.use_distributed_optimizer = distopt;
            l.recompute = rc;
            l.mtp_layers = m.mtp_num_layers;
            l.mb.token_dispatcher = dispatcher;
            l.mb.flex_backend = backend;
            SetMegatronMicroBatch(l, mbs, setup);
            layouts.push_back(l);
          }
        }
      }
    }
  }
  MemoryOptions opts;
  for (int pass = 0; pass < 2; ++pass) {
    for (const Layout& l : layouts) {
      CAPTURE(pass);
      CAPTURE(l.pp);
      CAPTURE(l.micro_batch());
      const CostView v = ToCostView(l, m, setup);
      cost::Ctx fresh = cost::MakeCtx(m, sys, setup, p, v);
      fresh.links = links.get();
      cost::Ctx memo = cost::MakeCtx(m, sys, setup, p, v);
      memo.links = links.get();
      memo.tables = &tables;
      CheckSameShared(cost::MegatronLayoutShared(memo), cost::MegatronLayoutShared(fresh));
      for (int64_t r : {int64_t{0}, l.pp / 2, l.pp - 1}) {
        CAPTURE(r);
        CHECK(cost::RankMemory(memo, r, opts).Total() == cost::RankMemory(fresh, r, opts).Total());
        CHECK(cost::RankMemory(memo, r, opts).weights == cost::RankMemory(fresh, r, opts).weights);
        CHECK(cost::RankMemory(memo, r, opts).overhead == cost::RankMemory(fresh, r, opts).overhead);
      }
    }
  }
}

}  // namespace
}  // namespace meshplan
