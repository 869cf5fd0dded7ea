// The per-thread memos of the Megatron-Bridge scoring path (cost/last_values.hpp): HashedValues
// itself, and MegatronLayoutShared / RankMemory with the CostModel's tables (memoised) against
// the same terms without tables (computed each time), over layouts that revisit a mesh with
// other micro-batches, recompute modes and data-parallel flavours, and the step-time bound's
// per-mesh terms: a memo key missing an input would return a value computed for another layout.
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
#include "frameworks/megatron_bridge/space.hpp"
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

TEST_CASE("cost: the Megatron step-time bound of a mesh's feature sets equals the bound computed afresh") {
  // StepLowerBoundOf keeps the terms of the last meshes it bounded that read no recompute field
  // (bounds.cpp MegatronMeshTermsCached). One CostModel bounds layouts that revisit a mesh after
  // others, with every recompute mode, CP exchange, DP flavour, dispatcher and CUDA-graph scope
  // varied; a fresh CostModel per layout (new tables, so its memo misses) bounds each afresh. A
  // key missing an input would return another mesh's terms.
  const SystemSpec sys = LoadSystem("dgx-h100");
  const ModelSpec m = LoadModel("deepseek-v3");
  TrainSetup setup;
  setup.num_gpus = 2048;
  setup.seq_len = 8192;
  setup.global_batch = 4096;
  std::vector<Layout> meshes;
  for (int64_t cp : {1, 2}) {
    for (int64_t ep : {8, 64}) {
      for (int flavour = 0; flavour < 3; ++flavour) {
        for (MbCpComm cc : {MbCpComm::kUnset, MbCpComm::kA2a}) {
          if (cp == 1 && cc != MbCpComm::kUnset) continue;
          Layout l;
          l.framework = Framework::kMegatronBridge;
          l.tp = 2;
          l.cp = cp;
          l.pp = 8;
          l.vpp = ep == 8 ? 2 : 1;
          l.ep = ep;
          l.dp = setup.num_gpus / (l.tp * l.cp * l.pp);
          l.sequence_parallel = true;
          l.use_distributed_optimizer = flavour > 0;
          l.mb.use_megatron_fsdp = flavour == 2;
          l.mtp_layers = m.mtp_num_layers;
          search::ApplyEmittedSettings(l, sys);
          l.mb.token_dispatcher = ep == 8 ? MbDispatcher::kAlltoall : MbDispatcher::kFlex;
          l.mb.flex_backend = ep == 8 ? MbFlexBackend::kNone : MbFlexBackend::kDeepEP;
          l.mb.ep_a2a_overlap = ep == 8 ? Tri::kFalse : Tri::kTrue;
          l.mb.cuda_graph = MbCudaGraph::kTransformerEngine;
          l.mb.cuda_graph_scope = kGraphAttn | kGraphMoeRouter | kGraphMoePreprocess;
          l.mb.cp_comm = cc;
          meshes.push_back(l);
        }
      }
    }
  }
  const std::pair<Recompute, uint32_t> modes[] = {{Recompute::kNone, 0},
                                                  {Recompute::kSelective, kRecomputeMlaUpProj},
                                                  {Recompute::kSelective, kRecomputeLayernorm | kRecomputeMoeAct},
                                                  {Recompute::kFull, 0}};
  const CostModel shared(m, sys, setup);
  // Each mesh's feature sets one after the other, then every mesh's again in reverse (the memo
  // holds two meshes: the second pass revisits each after others were bounded).
  std::vector<Layout> walk;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < meshes.size(); ++i) {
      const Layout& mesh = meshes[pass == 0 ? i : meshes.size() - 1 - i];
      for (const auto& [rc, modules] : modes) {
        Layout l = mesh;
        l.recompute = rc;
        l.mb.recompute_modules = modules;
        search::ApplyRecomputeArguments(l);
        search::FitCudaGraphsToRecompute(l);
        walk.push_back(l);
      }
    }
  }
  // The shared model's bounds first (a fresh model's call between them would take a slot of
  // the same per-thread memo), then each fresh one.
  std::vector<StepLowerBound> memoised;
  for (const Layout& l : walk) memoised.push_back(shared.StepLowerBoundOf(ToCostView(l, m, setup)));
  int64_t compared = 0;
  for (size_t i = 0; i < walk.size(); ++i) {
    const Layout& l = walk[i];
    CAPTURE(l.cp);
    CAPTURE(l.ep);
    CAPTURE(int(l.recompute));
    CAPTURE(l.mb.use_megatron_fsdp);
    const StepLowerBound& a = memoised[i];
    const StepLowerBound b = CostModel(m, sys, setup).StepLowerBoundOf(ToCostView(l, m, setup));
    CHECK(a.fixed == b.fixed);
    CHECK(a.per_micro_batch == b.per_micro_batch);
    CHECK(a.ring_fixed == b.ring_fixed);
    CHECK(a.ring_per_micro_batch == b.ring_per_micro_batch);
    CHECK(a.bubble == b.bubble);
    CHECK(a.dp_per_micro_batch == b.dp_per_micro_batch);
    CHECK(a.host_per_micro_batch == b.host_per_micro_batch);
    CHECK(a.fixed > 0);
    ++compared;
  }
  CHECK(compared == int64_t(meshes.size()) * 8);
}

}  // namespace
}  // namespace meshplan
