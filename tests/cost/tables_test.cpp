// What the cost model precomputes or memoises for speed (planner/cost/tables.cpp, the link
// table index in comm.cpp, CostModel::WithSetup / MemoryTotal, the SplitStages memo): each
// must give exactly what it stands for.

#include <doctest/doctest.h>

#include <vector>

#include "cost/comm.hpp"
#include "cost/cost_fixtures.hpp"
#include "cost/tables.hpp"
#include "cost/time.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/layout.hpp"

namespace meshplan {
namespace {

// DeepSeek-V3's layer mix: 61 layers, the first 3 dense, 256 routed experts.
ModelSpec SixtyOneLayers() {
  ModelSpec m = test::Qwen3_30B_A3B();
  m.num_layers = 61;
  m.num_dense_layers = 3;
  m.num_experts = 256;
  return m;
}

std::vector<Layout> SomeLayouts() {
  std::vector<Layout> out;
  for (Strategy s : {Strategy::kFsdp2, Strategy::kMegatronFsdp, Strategy::kDdp}) {
    for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      Layout l;
      l.strategy = s;
      l.recompute = r;
      l.tp = 2;
      l.pp = 4;
      l.ep = 4;
      l.dp = 8;
      l.local_batch_size = 8;
      l.pp_microbatch_size = 2;
      l.pp_schedule = PpSchedule::kInterleaved1F1B;
      out.push_back(l);
      l.pp = 1;
      l.dp = 32;
      l.local_batch_size = 2;
      out.push_back(l);
    }
  }
  Layout m;  // a Megatron-Bridge layout (Megatron memory estimate, the same for every rank)
  m.framework = Framework::kMegatronBridge;
  m.strategy = Strategy::kMegatronFsdp;
  m.mb.use_megatron_fsdp = true;
  m.use_distributed_optimizer = true;
  m.tp = 2;
  m.pp = 4;
  m.vpp = 3;
  m.dp = 8;
  m.pp_microbatch_size = 1;
  m.local_batch_size = 16;
  out.push_back(m);
  return out;
}

TEST_CASE("cost tables: WithSetup scores exactly as a cost model built for that setup") {
  const ModelSpec model = test::Qwen3_30B_A3B();
  const SystemSpec sys = test::DgxH100();
  const CostModel base(model, sys, test::Setup(64, 4096, 256));
  for (const TrainSetup& other : {test::Setup(64, 4096, 8), test::Setup(64, 2048, 64), test::Setup(32, 4096, 32)}) {
    const CostModel derived = base.WithSetup(other);
    const CostModel fresh(model, sys, other);
    for (const Layout& l : SomeLayouts()) {
      const Cost a = Score(derived, l), b = Score(fresh, l);
      CHECK(a.step_seconds == b.step_seconds);
      CHECK(a.memory.Total() == b.memory.Total());
      CHECK(a.model_flops == b.model_flops);
      CHECK(derived.StepSecondsLowerBound(ToCostView(l, derived.model(), derived.setup())) == fresh.StepSecondsLowerBound(ToCostView(l, fresh.model(), fresh.setup())));
    }
  }
}

TEST_CASE("cost tables: MemoryTotal is the memory of Evaluate") {
  const CostModel cm(test::Qwen3_30B_A3B(), test::DgxH100(), test::Setup(64, 4096, 256));
  for (const Layout& l : SomeLayouts()) {
    const Cost c = Score(cm, l);
    CHECK(cm.MemoryTotal(ToCostView(l, cm.model(), cm.setup())) == c.memory.Total());
    CHECK(c.memory.Total() > 0);
  }
}

TEST_CASE("cost tables: the pipeline ranks scored are rank 0 and each new layer shape") {
  const ModelSpec m = SixtyOneLayers();
  const ParamCounts p = CountParams(m);
  // pp 4, 4 stages: 61 = 16 + 15 + 15 + 15. Rank 0 holds the 3 dense layers and the embedding,
  // ranks 1 and 2 the same 15 MoE layers (rank 2 is not scored), rank 3 the head.
  const cost::RankPlan plan = cost::BuildRankPlan(m, p, 4, 4);
  REQUIRE(plan.ranks.size() == 3);
  CHECK(plan.ranks[0].rank == 0);
  CHECK(plan.ranks[0].params.dense_layers == 3);
  CHECK(plan.ranks[0].params.moe_layers == 13);
  CHECK(plan.ranks[0].params.has_embedding);
  CHECK(plan.ranks[1].rank == 1);
  CHECK(plan.ranks[1].params.moe_layers == 15);
  CHECK(plan.ranks[2].rank == 3);
  CHECK(plan.ranks[2].params.moe_layers == 15);
  CHECK(plan.ranks[2].params.has_head);
  // The table hands out the same plan, built once.
  const cost::CostTables tables(m, p);
  const cost::RankPlan* a = tables.Ranks(4, 4);
  REQUIRE(a != nullptr);
  CHECK(a == tables.Ranks(4, 4));
  REQUIRE(a->ranks.size() == 3);
  CHECK(a->ranks[2].rank == 3);
  CHECK(a->ranks[2].params.root == plan.ranks[2].params.root);
  // Outside the table (pp above the layer count): none; the cost model builds it itself.
  CHECK(tables.Ranks(62, 62) == nullptr);
  // Activation bytes per layer are LayerActivationBytes'.
  CHECK(tables.Act(true, cost::AcWrap::kSelective).split ==
        cost::LayerActivationBytes(m, true, cost::AcWrap::kSelective).split);
}

TEST_CASE("cost tables: the unfused Megatron-Core ops are counted once per model and read per layout") {
  // GPT-OSS-120B (YaRN without MLA, biased o_proj): the values of the worked example in
  // time_megatron_test.cpp.
  const ModelSpec oss = LoadModel("gpt-oss-120b");
  const ParamCounts p = CountParams(oss);
  const cost::CostTables tables(oss, p);
  CHECK(tables.Unfused().fwd_elements == test::Rel(89763.84 + 10310.4));
  CHECK(tables.Unfused().bwd_elements == test::Rel(98012.16));
  CHECK(tables.Unfused().kernels == 35.0);
  // A layout's shared Megatron terms take the table's value, not the model's
  // rope_scaling_type again: a plain-RoPE copy of the model scored with GPT-OSS's tables
  // prices GPT-OSS's unfused ops; without tables it prices none.
  ModelSpec plain = oss;
  plain.rope_scaling_type.clear();
  plain.architecture = Architecture::kQwen3Moe;
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(8, 4096, 8);
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.strategy = Strategy::kDdp;
  l.dp = 8;
  l.ep = 8;
  const cost::MegatronShared want = cost::MegatronLayoutShared(cost::MakeCtx(oss, sys, setup, p, ToCostView(l, oss, setup)));
  const CostView cached_view = ToCostView(l, plain, setup);
  cost::Ctx cached = cost::MakeCtx(plain, sys, setup, p, cached_view);
  cached.tables = &tables;
  const cost::MegatronShared got = cost::MegatronLayoutShared(cached);
  CHECK(got.dense_mem_s == want.dense_mem_s);
  CHECK(got.moe_mem_s == want.moe_mem_s);
  CHECK(got.layer_kernels.dense == want.layer_kernels.dense);
  CHECK(got.layer_kernels.moe == want.layer_kernels.moe);
  const cost::MegatronShared none = cost::MegatronLayoutShared(cost::MakeCtx(plain, sys, setup, p, ToCostView(l, plain, setup)));
  CHECK(want.layer_kernels.moe - none.layer_kernels.moe == test::Rel(35.0));
}

TEST_CASE("link table: the indexed lookup finds what the binary search finds") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  const cost::LinkTable indexed = cost::BuildLinkTable(sys, 64, 256);
  cost::LinkTable searched;
  searched.entries = indexed.entries;  // not indexed: binary search
  int found = 0;
  for (int64_t n = 0; n <= 70; ++n) {
    for (int64_t stride = 0; stride <= 70; ++stride) {
      const cost::LinkTable::Entry* a = indexed.Find({n, stride});
      const cost::LinkTable::Entry* b = searched.Find({n, stride});
      REQUIRE((a == nullptr) == (b == nullptr));
      if (a == nullptr) continue;
      ++found;
      CHECK(a->n == b->n);
      CHECK(a->stride == b->stride);
      CHECK(a->ring.busbw_bytes_per_s == b->ring.busbw_bytes_per_s);
      CHECK(a->a2a.latency_s == b->a2a.latency_s);
    }
  }
  CHECK(found == int(indexed.entries.size()));
}

TEST_CASE("link table: above 2048 GPUs the table holds the link-tier rule") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  const cost::LinkTable t = cost::BuildGroupLinkTable(sys, 4096);
  CHECK(t.entries.size() > 0);
  for (const cost::LinkTable::Entry& e : t.entries) {
    const cost::Link rule = cost::GroupLink(sys, {e.n, e.stride});
    CHECK(e.ring.busbw_bytes_per_s == rule.busbw_bytes_per_s);
    CHECK(e.ring.latency_s == rule.latency_s);
    CHECK(e.a2a.busbw_bytes_per_s == rule.busbw_bytes_per_s);
  }
  // TP 8 inside a node: NVLink; 16 ranks of stride 1 span two nodes: the NICs.
  CHECK(cost::RingLink(sys, &t, {8, 1}).busbw_bytes_per_s == sys.scaleup_bandwidth * sys.scaleup_busbw_efficiency);
  CHECK(cost::RingLink(sys, &t, {16, 1}).busbw_bytes_per_s == sys.NicBandwidthPerGpu() * sys.scaleout_busbw_efficiency);
  CHECK(t.Find({3, 1}) == nullptr);
}

TEST_CASE("layout: stage splits do not depend on the order they are asked in") {
  std::vector<Layout> layouts;
  for (int64_t pp = 1; pp <= 8; ++pp) {
    for (PpSchedule s : {PpSchedule::k1F1B, PpSchedule::kInterleaved1F1B}) {
      for (int64_t lps = 0; lps <= 12; ++lps) {
        for (StageRounding r : {StageRounding::kNone, StageRounding::kUp, StageRounding::kDown}) {
          Layout l;
          l.pp = pp;
          l.pp_schedule = s;
          l.layers_per_stage = lps;
          l.stage_rounding = r;
          layouts.push_back(l);
        }
      }
    }
  }
  for (int64_t layers : {61, 80, 7}) {
    std::vector<StageSplit> forward;
    for (const Layout& l : layouts) forward.push_back(SplitStages(layers, l));
    for (size_t i = layouts.size(); i-- > 0;) {
      const StageSplit b = SplitStages(layers, layouts[i]);
      CHECK(b.num_stages == forward[i].num_stages);
      CHECK(b.stages_per_rank == forward[i].stages_per_rank);
      CHECK(b.first_rank_layers == forward[i].first_rank_layers);
      CHECK(b.last_rank_layers == forward[i].last_rank_layers);
    }
  }
  // Worked: 61 layers, pp 4, interleaved with the default 2 stages per rank: 8 stages of
  // 8,8,8,8,8,7,7,7 layers; rank 0 holds stages 0 and 4 (16 layers), rank 3 stages 3 and 7 (15).
  Layout l;
  l.pp = 4;
  l.pp_schedule = PpSchedule::kInterleaved1F1B;
  const StageSplit s = SplitStages(61, l);
  CHECK(s.num_stages == 8);
  CHECK(s.stages_per_rank == 2);
  CHECK(s.first_rank_layers == 16);
  CHECK(s.last_rank_layers == 15);
}

}  // namespace
}  // namespace meshplan
