#pragma once
/// \file topology.hpp
/// A system as a graph (Boost.Graph): GPUs, one NVSwitch vertex per scale-up (NVLink) domain,
/// NICs (one rail each), the leaf switches of a rail-optimised fat tree (one leaf per rail per
/// pod of nodes) and a spine. Edges are directed (one per direction) and carry a bandwidth
/// (bytes/s, one direction, already scaled by the system's measured bus-bandwidth efficiency)
/// and a latency (seconds). From the graph, Topology::Group derives the bandwidth each rank of
/// a communication group really gets when every group of the same shape communicates at once
/// (mesh groups of one axis run concurrently), including groups that share the NICs of a node.
/// Units: bytes, bytes/s, seconds.

#include <cstdint>
#include <memory>
#include <vector>

#include "meshplan/hardware.hpp"

namespace meshplan {

/// GPUs per scale-up (NVLink) domain as a job of `num_gpus` GPUs is placed on `system`: the
/// system's scaleup_domain_gpus (gpus_per_node when unset); when the job is larger, the largest
/// multiple of gpus_per_node at most that size that divides the job (NVL72 jobs use 64-GPU
/// blocks of a rack); never more than the job. At least 1.
int64_t PlacedDomainGpus(const SystemSpec& system, int64_t num_gpus);

/// What a group of one shape gets on a topology. Collective times that use it
/// (planner/cost/comm.cpp, sources: nccl-tests doc/PERFORMANCE.md):
///   ring all-reduce      t = 2(n−1)·α_ring + 2(n−1)/n · S / ring_busbw
///   all-gather / reduce-scatter  t = (n−1)·α_ring + (n−1)/n · S / ring_busbw
///   all-to-all           t = (n−1)·α_a2a + (n−1)/n · S / a2a_bw   (S = bytes one rank sends)
///   point-to-point       t = α_ring + S / ring_busbw (n = 2 ring: both directions at once)
struct GroupBandwidth {
  double ring_busbw = 0;    ///< bytes/s: 1 / (max over edges of ring-hop load / edge bandwidth)
  double ring_latency = 0;  ///< seconds per ring step: largest path latency of a ring hop
  double a2a_bw = 0;        ///< bytes/s: (n−1) / (max over edges of all-to-all load / bandwidth)
  double a2a_latency = 0;   ///< seconds per all-to-all step: largest path latency of a pair
};

/// The topology graph of `num_gpus` GPUs of one system and the per-group bandwidths derived
/// from it. Rank r runs on GPU r (torchrun / SLURM fill nodes in order); node = r / gpus_per_node.
/// Scale-up domains: GPUs [d·U, (d+1)·U) with U = scaleup_domain_gpus, or, when the job spans
/// several domains, the largest multiple of gpus_per_node <= scaleup_domain_gpus that divides
/// num_gpus (NVL72 jobs are allocated in 16-tray = 64-GPU blocks, e.g. SLURM --segment=16).
/// Fat tree: GPU i of a node attaches (PCIe, 2x the NIC rate: never the bottleneck) to NIC
/// i·nics_per_node/gpus_per_node; NIC k of every node in a pod of kPodNodes nodes connects to
/// that pod's leaf of rail k; leaves connect to one non-blocking spine. Routing is
/// rail-aligned (NCCL rings and PXN keep traffic on one rail; paths found by breadth-first
/// search on the graph). A cross-node ring hop or all-to-all flow leaving node A is spread
/// evenly over the rails of the group's members on node A (NCCL builds one channel per NIC).
/// Where a scale-up domain spans several nodes (NVL72), NCCL treats the domain as one node
/// (multi-node NVLink), so a ring hop leaving domain A is spread over the NICs of the group's
/// members in domain A, up to kMaxChannels of them (NCCL's MAXCHANNELS, src/include/device.h).
/// Assumptions (documented, not measured): no congestion in the spine; NVLink hops to the
/// rail GPU (PXN) are not charged; hierarchical/NVLS algorithms are not modelled separately
/// (their inter-node volume per NIC equals the ring's for the group shapes meshplan uses).
class Topology {
 public:
  static constexpr int64_t kPodNodes = 32;
  static constexpr size_t kMaxChannels = 32;  ///< NCCL rings per communicator (MAXCHANNELS)  ///< nodes under one leaf per rail (64-port leaves, half down)
  /// Builds the graph. `num_gpus` >= 1. Throws nothing for a loaded system.
  Topology(const SystemSpec& system, int64_t num_gpus);
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  /// Bandwidths of every group of `n` ranks with global-rank stride `stride` (groups tile the
  /// ranks in blocks of n·stride; all of them communicate at the same time). n·stride must
  /// divide num_gpus; otherwise, and for n <= 1, a zero GroupBandwidth is returned.
  /// Cost: O(num_gpus) graph work for the ring, O(num_gpus/k · nodes per group) for the
  /// all-to-all; cache the result (CostModel does).
  /// `all_to_all` false skips the all-to-all part (a2a fields stay 0; O(nodes²) per group).
  GroupBandwidth Group(int64_t n, int64_t stride, bool all_to_all = true) const;

  int64_t num_gpus() const;
  int64_t domain_gpus() const;   ///< GPUs per scale-up domain as placed (see above)
  int64_t num_vertices() const;
  int64_t num_edges() const;     ///< directed edges

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace meshplan
