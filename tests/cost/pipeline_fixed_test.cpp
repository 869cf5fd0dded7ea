// Fixed costs of Megatron-Core pipelines (planner/cost/time_megatron.cpp: MegatronPipelineComm,
// MegatronWarmupMicrobatches, MegatronMaxStageLayers) worked by hand from
// megatron/core/pipeline_parallel/schedules.py and p2p_communication.py.
#include <doctest/doctest.h>

#include "cost/context.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "cost_fixtures.hpp"
#include "fixtures/models.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/layout.hpp"

namespace meshplan {
namespace {

TEST_CASE("pipeline fixed costs: warm-up forwards of rank 0 as get_pp_rank_microbatches counts them") {
  // 1F1B: pp - 1.
  CHECK(cost::MegatronWarmupMicrobatches(4, 1, 8, false) == 3);
  // Interleaved: 2(pp - 1) + (vpp - 1)·pp = 6 + 8 = 14; one more with EP overlap.
  CHECK(cost::MegatronWarmupMicrobatches(4, 3, 8, false) == 14);
  CHECK(cost::MegatronWarmupMicrobatches(4, 3, 8, true) == 15);
  // All in warm-up when vpp·M is smaller: 3 x 2 = 6.
  CHECK(cost::MegatronWarmupMicrobatches(4, 3, 2, false) == 6);
  CHECK(cost::MegatronWarmupMicrobatches(1, 1, 8, false) == 0);
}

TEST_CASE("pipeline fixed costs: overlap_p2p_comm exposes the warm-up and cool-down sends only") {
  // pp 4 x vpp 3, 8 micro-batches, 1 ms per send on a 47 GB/s link.
  const cost::Link ib{47e9, 14e-6};
  const cost::MegatronPpComm c = cost::MegatronPipelineComm(4, 3, 8, 1e-3, ib, true, false, false, true);
  CHECK(c.exchanges == 48.0);  // 2 x 3 x 8
  CHECK(c.blocking == 28.0);   // 2 x 14 (warm-up forwards, cool-down backwards)
  CHECK(c.exposed == test::Rel(28e-3));
  CHECK(c.hidden == test::Rel(20e-3));
  // Hidden at kappa 0.266 x 47/257 = 0.048646: 20 ms -> 0.97292 ms.
  CHECK(c.hidden_cost == test::Rel(20e-3 * 0.266 * 47.0 / 257.0).epsilon(1e-9));
  CHECK(c.sync_gap == 0.0);
  // Host: 4 p2p operations x 3 stages x 8 micro-batches x 36 us = 3.456 ms.
  CHECK(c.host == test::Rel(3.456e-3));
  CHECK(c.Seconds() == test::Rel(28e-3 + 0.97292e-3).epsilon(1e-5));
  // Under a full-iteration CUDA graph the host issues none of them.
  CHECK(cost::MegatronPipelineComm(4, 3, 8, 1e-3, ib, true, false, false, false).host == 0.0);
  // With fewer micro-batches than the warm-up needs every send is blocking.
  const cost::MegatronPpComm all = cost::MegatronPipelineComm(4, 3, 2, 1e-3, ib, true, false, false, true);
  CHECK(all.blocking == 12.0);
  CHECK(all.hidden == 0.0);
}

TEST_CASE("pipeline fixed costs: 1F1B with batch_p2p_comm waits for every send and synchronizes after each") {
  const cost::Link nvl{370e9, 3.4e-6};
  const cost::MegatronPpComm c = cost::MegatronPipelineComm(4, 1, 8, 1e-3, nvl, false, true, false, true);
  CHECK(c.exchanges == 16.0);
  CHECK(c.exposed == test::Rel(16e-3));
  CHECK(c.hidden_cost == 0.0);
  // torch.cuda.synchronize() after each of the 16 exchanges: 16 x 36 us of idle GPU.
  CHECK(c.sync_gap == test::Rel(16 * 36e-6));
  CHECK(c.host == test::Rel(4 * 8 * 36e-6));
  // batch_p2p_comm off (individual isend / irecv): no synchronize.
  CHECK(cost::MegatronPipelineComm(4, 1, 8, 1e-3, nvl, false, false, false, true).sync_gap == 0.0);
  CHECK(cost::MegatronPipelineComm(1, 1, 8, 1e-3, nvl, false, true, false, true).Seconds() == 0.0);
}

TEST_CASE("pipeline fixed costs: the largest virtual stage of a split") {
  // 80 layers, pp 4 x vpp 5 = 20 stages with account_for_embedding/loss_in_pipeline_split
  // ({1, 1}): 82 places, 4 each and 5 for stages 0 and 1; stage 0 holds 5 - 1 = 4 layers,
  // stage 19 4 - 1 = 3, the 18 middle stages 73: 4 each and one of 5.
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.pp = 4;
  l.vpp = 5;
  l.pp_split = MbPpSplit::kAccountEmbeddingLoss;
  const StageSplit own = SplitStages(80, l);
  CHECK(cost::MegatronMaxStageLayers(80, own, OwnSplitPlaces(l), 0) == 5);
  // Even split: 4 each.
  l.pp_split = MbPpSplit::kEven;
  CHECK(cost::MegatronMaxStageLayers(80, SplitStages(80, l), OwnSplitPlaces(l), 0) == 4);
  // A given layout: its stages' decoder and MTP layers, 5 in stage 0.
  const PpLayoutParse p = ParsePpLayoutString("Ettttt|tt|ttt|tmL");
  REQUIRE(p.ok);
  PpLayerLayout g;
  g.stages = p.stages;
  StageSplit given;
  given.num_stages = 4;
  given.given = &g;
  CHECK(cost::MegatronMaxStageLayers(11, given, {}, 1) == 5);
  const PpLayoutParse q = ParsePpLayoutString("Et|t|tmmmL");
  PpLayerLayout h;
  h.stages = q.stages;
  given.num_stages = 3;
  given.given = &h;
  CHECK(cost::MegatronMaxStageLayers(3, given, {}, 3) == 4);  // t + 3 m
}

Layout Llama70bPp4Vpp5() {
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.strategy = Strategy::kDdp;
  l.tp = 4;
  l.pp = 4;
  l.vpp = 5;
  l.dp = 4;
  l.sequence_parallel = true;
  l.mb.overlap_p2p_comm = Tri::kTrue;
  l.mb.batch_p2p_comm = Tri::kFalse;
  return l;
}

cost::MegatronTerms RankTerms(const ModelSpec& m, const SystemSpec& s, const TrainSetup& setup, const Layout& l,
                              int64_t rank) {
  const ParamCounts p = CountParams(m);
  const CostView view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, s, setup, p, view);
  return cost::MegatronRankTerms(c, rank, cost::RankMemory(c, rank));
}

TEST_CASE("pipeline fixed costs: Llama 3 70B pp 4 x vpp 5 on 64 H100 by hand") {
  // seq 8192, 256 sequences, dp 4, micro-batch 1: 64 micro-batches. The stage tensor is
  // [8192 / tp 4 (sequence parallel), 1, 8192] BF16 = 33,554,432 bytes over the inter-node
  // link of the PP group (stride 16; the fixture's NIC: 50 GB/s x 0.9 = 45 GB/s, 10 us):
  // 10 us + 745.654 us = 755.654 us per send.
  const ModelSpec m = test::Llama3_70B();
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(64, 8192, 256);
  const Layout l = Llama70bPp4Vpp5();
  const cost::MegatronTerms t = RankTerms(m, sys, setup, l, 0);
  // 640 sends; 2 x (2·3 + 4·4) = 44 blocking: 33.2488 ms; 596 hidden (450.370 ms) at
  // kappa 0.266 x 45/257 = 0.046576: 20.9765 ms.
  CHECK(t.pp == test::Rel(0.0542253).epsilon(1e-4));
  // Without sequence parallel the full sequence travels: 4x the bytes.
  Layout no_sp = l;
  no_sp.sequence_parallel = false;
  const double per4 = 10e-6 + 4 * 33554432.0 / 45e9;
  CHECK(RankTerms(m, sys, setup, no_sp, 0).pp == test::Rel(44 * per4 + 596 * per4 * 0.266 * 45.0 / 257.0).epsilon(1e-4));
  // The host issues 4 x 5 x 64 p2p operations more than the layers' kernels: 46.08 ms.
  Layout one = l;
  one.pp = 1;
  one.vpp = 1;
  one.dp = 16;
  const TrainSetup setup16 = test::Setup(16, 8192, 1024);  // same 64 micro-batches per rank, 80 layers
  const double layer_host = RankTerms(m, sys, setup16, one, 0).host / 80.0;
  CHECK(t.host - 20.0 * layer_host == test::Rel(46.08e-3).epsilon(1e-6));
  // Even split (4 layers per stage): the bubble is (pp - 1)/(vpp·M) = 3/320.
  CHECK(t.bubble_fraction == test::Rel(3.0 / 320.0));
  // account_for_embedding/loss_in_pipeline_split: rank 0 holds 20 layers (4 per stage) but the
  // largest stage has 5, so its fill and drain last 5/4 longer; rank 1 (stages 1, 5, ... with
  // 5 + 4 x 4 = 21 layers) 5/4.2.
  Layout acc = l;
  acc.pp_split = MbPpSplit::kAccountEmbeddingLoss;
  CHECK(RankTerms(m, sys, setup, acc, 0).bubble_fraction == test::Rel(3.0 / 320.0 * 1.25));
  CHECK(RankTerms(m, sys, setup, acc, 1).bubble_fraction == test::Rel(3.0 / 320.0 * 5.0 / 4.2));
}

}  // namespace
}  // namespace meshplan
