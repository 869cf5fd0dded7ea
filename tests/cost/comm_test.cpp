// Collective times and link tiers (planner/cost/comm.cpp).

#include <doctest/doctest.h>

#include "cost/comm.hpp"
#include "cost/cost_fixtures.hpp"
#include "meshplan/framework.hpp"

namespace meshplan {
namespace {

TEST_CASE("cost: ring all-reduce 1e9 bytes and n=8 and 1e11 B/s takes 0.0175 s") {
  // 1e9 · 2·7/8 / 1e11 = 0.0175 s (no latency)
  const cost::Link link{1e11, 0.0};
  CHECK(cost::AllReduceSeconds(1e9, 8, link) == test::Rel(0.0175));
  // all-gather / reduce-scatter / all-to-all: 1e9 · 7/8 / 1e11 = 0.00875 s
  CHECK(cost::AllGatherSeconds(1e9, 8, link) == test::Rel(0.00875));
  CHECK(cost::ReduceScatterSeconds(1e9, 8, link) == test::Rel(0.00875));
  CHECK(cost::AllToAllSeconds(1e9, 8, link) == test::Rel(0.00875));
  // one rank: nothing to do
  CHECK(cost::AllReduceSeconds(1e9, 1, link) == 0.0);
}

TEST_CASE("cost: latency terms") {
  // α = 10 µs: all-reduce n=4 adds 2·3·10 µs = 60 µs; p2p adds one α.
  const cost::Link link{1e11, 10e-6};
  CHECK(cost::AllReduceSeconds(1e9, 4, link) == test::Rel(60e-6 + 1e9 * 1.5 / 1e11));
  CHECK(cost::P2pSeconds(1e8, link) == test::Rel(10e-6 + 1e-3));
}

TEST_CASE("cost: TP=8 inside a DGX node uses NVLink and DP across nodes uses the NIC rate") {
  const SystemSpec sys = test::DgxH100();
  Layout l;
  l.tp = 8;
  l.dp = 4;  // 32 GPUs = 4 nodes
  const cost::MeshGroups g = cost::LayoutGroups(ToCostView(l, ModelSpec{}, TrainSetup{}), 32);
  CHECK(g.tp.n == 8);
  CHECK(g.tp.stride == 1);
  CHECK(g.dp_shard_cp.n == 4);
  CHECK(g.dp_shard_cp.stride == 8);
  // NVLink: 450e9 · 0.8 = 360e9 B/s; NIC: 50e9 · 8 / 8 · 0.9 = 45e9 B/s
  const cost::Link tp = cost::GroupLink(sys, g.tp);
  const cost::Link dp = cost::GroupLink(sys, g.dp_shard_cp);
  CHECK(tp.busbw_bytes_per_s == test::Rel(360e9));
  CHECK(tp.latency_s == test::Rel(5e-6));
  CHECK(dp.busbw_bytes_per_s == test::Rel(45e9));
  CHECK(dp.latency_s == test::Rel(10e-6));
}

TEST_CASE("cost: group spans") {
  const SystemSpec sys = test::DgxH100();
  // cp=2 with tp=4: stride 4, span 8 -> inside the node
  CHECK(cost::GroupLink(sys, {2, 4}).busbw_bytes_per_s == test::Rel(360e9));
  // 3 ranks, stride 2: span 6 does not tile an 8-GPU domain -> some groups straddle nodes
  CHECK(cost::GroupLink(sys, {3, 2}).busbw_bytes_per_s == test::Rel(45e9));
  // EP and PP groups: ep=16 spans 2 nodes; pp=2 on 16 GPUs: neighbours 8 apart
  Layout l;
  l.pp = 2;
  l.dp = 8;
  l.ep = 4;
  const cost::MeshGroups g = cost::LayoutGroups(ToCostView(l, ModelSpec{}, TrainSetup{}), 16);
  CHECK(g.pp.stride == 8);
  CHECK(cost::GroupLink(sys, g.pp).busbw_bytes_per_s == test::Rel(45e9));
  CHECK(g.ep.n == 4);
  CHECK(g.ep_shard.n == 2);
  CHECK(g.ep_shard.stride == 4);
  CHECK(cost::GroupLink(sys, g.ep).busbw_bytes_per_s == test::Rel(360e9));
  CHECK(cost::GroupLink(sys, {16, 1}).busbw_bytes_per_s == test::Rel(45e9));
}

}  // namespace
}  // namespace meshplan
