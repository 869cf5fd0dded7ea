// Topology graph (include/meshplan/topology.hpp, planner/cost/topology.cpp): bandwidths a group
// gets, computed by hand from the hwdb numbers and checked against the graph.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>

#include "cost/comm.hpp"
#include "cost_fixtures.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/topology.hpp"

namespace meshplan {
namespace {

// DGX H100 (hwdb/systems/dgx-h100.yaml): NVLink 450 GB/s x 0.822, NIC 50 GB/s x 0.94.
constexpr double kH100Nvl = 450e9 * 0.822;
constexpr double kH100Nic = 50e9 * 0.94;

TEST_CASE("topology: graph of 16 DGX H100 GPUs has GPUs and NVSwitches and NICs and leaves and a spine") {
  const Topology t(LoadSystem("dgx-h100"), 16);
  // 16 GPUs + 2 NVSwitch domains + 16 NICs + 8 rail leaves (1 pod) + 1 spine
  CHECK(t.num_vertices() == 43);
  // both directions of: 16 GPU-switch, 16 GPU-NIC, 16 NIC-leaf, 8 leaf-spine
  CHECK(t.num_edges() == 2 * (16 + 16 + 16 + 8));
  CHECK(t.domain_gpus() == 8);
}

TEST_CASE("topology: TP=8 inside a DGX H100 node gets the NVLink bus bandwidth") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  const GroupBandwidth b = Topology(sys, 32).Group(8, 1);
  // every ring hop GPU -> NVSwitch -> GPU carries one unit: busbw = 450e9 x 0.822
  CHECK(b.ring_busbw == doctest::Approx(kH100Nvl));
  CHECK(b.ring_latency == doctest::Approx(sys.scaleup_latency));
}

TEST_CASE("topology: DP across DGX H100 nodes (one rank per node) gets one NIC per rank") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  // dp 4, stride 8 on 32 GPUs: 8 concurrent groups, each ring hop leaves its node on its own
  // rail: one unit per NIC -> busbw = 50e9 x 0.94
  const GroupBandwidth b = Topology(sys, 32).Group(4, 8);
  CHECK(b.ring_busbw == doctest::Approx(kH100Nic));
  CHECK(b.ring_latency == doctest::Approx(sys.scaleout_latency));
  // 16 ranks stride 1 over 2 nodes: the two cross-node hops of each ring are spread over the
  // node's 8 rails (1/8 unit per NIC): min(NVLink, 8 x NIC) = min(369.9, 376) GB/s
  const GroupBandwidth w = Topology(sys, 16).Group(16, 1);
  CHECK(w.ring_busbw == doctest::Approx(std::min(kH100Nvl, 8 * kH100Nic)));
  // the closed-form tier rule charged only one NIC per rank
  CHECK(cost::GroupLink(sys, {16, 1}).busbw_bytes_per_s == doctest::Approx(kH100Nic));
}

TEST_CASE("topology: PP 4 on two DGX H100 nodes is priced at its node-crossing hop") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  // Stages on ranks o, o+4 (node 0), o+8, o+12 (node 1), o = 0..3: the PP group is all four
  // stages, not the first pair (which is inside node 0 and got NVLink).
  Layout l;
  l.pp = 4;
  l.dp = 4;
  const cost::MeshGroups g = cost::LayoutGroups(ToCostView(l, ModelSpec{}, TrainSetup{}), 16);
  CHECK(g.pp.n == 4);
  CHECK(g.pp.stride == 4);
  const Topology t(sys, 16);
  CHECK(t.Group(2, 4).ring_busbw == doctest::Approx(kH100Nvl));  // stages 0 -> 1 only
  // The hop o+4 -> o+8 (and the ring's o+12 -> o) leaves its node over the rails of the
  // group's two members there (o and o+4): half a unit per NIC, so 2 x NIC per unit of hop;
  // the in-node hops take one unit of NVLink. busbw = min(369.9, 2 x 47) GB/s.
  const GroupBandwidth b = t.Group(4, 4);
  CHECK(b.ring_busbw == doctest::Approx(std::min(kH100Nvl, 2 * kH100Nic)));
  CHECK(b.ring_latency == doctest::Approx(sys.scaleout_latency));
}

TEST_CASE("topology: EP=64 all-to-all inside a GB200 NVL72 rack versus across 8 DGX H100 nodes") {
  const SystemSpec nvl72 = LoadSystem("gb200-nvl72");
  // all 64 ranks in one NVLink domain: each GPU sends 63 units over its own NVLink port:
  // a2a_bw = 63 / (63 / (900e9 x 0.756)) = 900e9 x 0.756
  const GroupBandwidth rack = Topology(nvl72, 64).Group(64, 1);
  CHECK(rack.a2a_bw == doctest::Approx(900e9 * 0.756));
  // 8 DGX nodes: each node sends 8 x 56 = 448 units off-node over 8 NICs (56 per NIC, the
  // bottleneck; NVLink carries 7 per GPU): a2a_bw = 63 / (56 / (50e9 x 0.94))
  const GroupBandwidth dgx = Topology(LoadSystem("dgx-h100"), 64).Group(64, 1);
  CHECK(dgx.a2a_bw == doctest::Approx(63.0 / 56.0 * kH100Nic));
  CHECK(rack.a2a_bw / dgx.a2a_bw > 12);
}

TEST_CASE("topology: NVL72 jobs larger than a rack are placed in 64-GPU blocks") {
  const Topology t(LoadSystem("gb200-nvl72"), 256);
  CHECK(t.domain_gpus() == 64);
  // EP 64 stays inside a block: NVLink rate
  CHECK(t.Group(64, 1).a2a_bw == doctest::Approx(900e9 * 0.756));
}

TEST_CASE("topology: a DP ring across two NVL72 blocks leaves each block over many NICs") {
  const SystemSpec sys = LoadSystem("gb200-nvl72");
  // 128 GPUs = two 64-GPU NVLink blocks; dp 64 stride 2 (tp 2 inside): each ring has 32
  // members per block, 2 per 4-GPU tray (rails 0 and 2), so 32 distinct (tray, rail) NICs per
  // block. Each of its two cross-block hops is spread over 32 channels (1/32 unit per NIC);
  // the other ring (offset 1) uses rails 1 and 3. Bottleneck: the NVLink hop (one unit):
  // min(900e9 x 0.756, 32 x 400e9/8 x 0.94) = 680.4 GB/s.
  const GroupBandwidth b = Topology(sys, 128).Group(64, 2);
  CHECK(b.ring_busbw == doctest::Approx(900e9 * 0.756));
  // A tray-local view (the rails of the sender's tray only: 2 NICs) would give 94 GB/s.
  CHECK(b.ring_busbw > 7 * 2 * 50e9 * 0.94);
}

TEST_CASE("topology: shapes that do not tile the GPUs give zero bandwidth") {
  const Topology t(LoadSystem("dgx-h100"), 16);
  CHECK(t.Group(3, 1).ring_busbw == 0);
  CHECK(t.Group(1, 1).ring_busbw == 0);
}

TEST_CASE("topology: the cost model's link table is the graph's") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  const cost::LinkTable table = cost::BuildLinkTable(sys, 32, 256);
  const cost::LinkTable::Entry* e = table.Find({4, 8});
  REQUIRE(e != nullptr);
  CHECK(e->ring.busbw_bytes_per_s == doctest::Approx(kH100Nic));
  CHECK(cost::RingLink(sys, &table, {8, 1}).busbw_bytes_per_s == doctest::Approx(kH100Nvl));
  CHECK(table.Find({5, 1}) == nullptr);
}

}  // namespace
}  // namespace meshplan

namespace meshplan {

TEST_CASE("topology: a world that is not whole nodes is priced without touching missing GPUs") {
  // 12 GPUs of 8-GPU nodes: the second node has GPUs on rails 0-3 only. The CLI refuses such
  // counts; the library must still price them (it used to index a GPU-NIC edge that does not
  // exist). DP 12 runs a ring over both nodes: finite, positive bandwidth.
  for (const auto& [system, gpus] : {std::pair<const char*, int64_t>{"dgx-h100", 12}, {"gb200-nvl72", 74}}) {
    TrainSetup s = test::Setup(gpus, 4096, gpus * 4);
    const CostModel cm(LoadModel("llama3.1-8b"), LoadSystem(system), s);
    Layout l;
    l.dp = gpus;
    const Cost c = Score(cm, l);
    CHECK(std::isfinite(c.step_seconds));
    CHECK(c.step_seconds > 0);
  }
}

}  // namespace meshplan
