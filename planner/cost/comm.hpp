#pragma once
/// \file comm.hpp
/// Collective-communication times (alpha-beta, ring algorithms) and the link tier a
/// process group spans in AutoModel's device mesh. Private to planner/cost.

#include <cstdint>
#include <memory>
#include <vector>

#include "meshplan/hardware.hpp"
#include "meshplan/cost.hpp"

namespace meshplan::cost {

/// Effective link of a group: bus bandwidth per rank (bytes/s) and latency per step (s).
struct Link {
  double busbw_bytes_per_s = 0;
  double latency_s = 0;
};

/// A process group: n ranks, global-rank stride between consecutive members.
struct Group {
  int64_t n = 1;
  int64_t stride = 1;
};

/// Link tier used by `group` on `system`. See comm.cpp for the rule. The closed-form
/// fallback when no LinkTable is given; the cost model uses the topology graph's LinkTable.
Link GroupLink(const SystemSpec& system, Group group);

/// Links of every group shape (n, stride) of one job, derived once from the topology graph
/// (meshplan::Topology, include/meshplan/topology.hpp) so that scoring a layout only looks
/// them up (a table lookup, no allocation). Built per CostModel (per model, system, setup).
struct LinkTable {
  struct Entry {
    int64_t n = 1, stride = 1;
    Link ring;  ///< all-reduce / all-gather / reduce-scatter / p2p
    Link a2a;   ///< all-to-all (zero busbw when not computed: stride != 1 or n > max_a2a_n)
  };
  std::vector<Entry> entries;  ///< sorted by (n, stride)
  const Entry* Find(Group g) const {
    if (slot_.empty()) return Search(g);
    if (g.n < 1 || g.n > world_ || g.stride < 1 || g.stride > world_) return nullptr;
    const int32_t pn = divisor_pos_[static_cast<size_t>(g.n)], ps = divisor_pos_[static_cast<size_t>(g.stride)];
    if (pn < 0 || ps < 0) return nullptr;
    const int32_t i = slot_[static_cast<size_t>(pn) * divisors_ + static_cast<size_t>(ps)];
    return i < 0 ? nullptr : &entries[static_cast<size_t>(i)];
  }
  /// Makes Find a table lookup instead of a binary search: n and stride of every entry
  /// divide `world`. Call after `entries` is complete.
  void Index(int64_t world);

 private:
  const Entry* Search(Group g) const;  ///< binary search (before Index)
  int64_t world_ = 0;
  std::vector<int32_t> divisor_pos_;  ///< value in [0, world] -> position among the divisors, or -1
  size_t divisors_ = 0;
  std::vector<int32_t> slot_;  ///< [pos(n)·divisors_ + pos(stride)] -> entry index, or -1
};
/// Every shape with n >= 2 and n·stride dividing `world`; all-to-all links for stride-1
/// shapes with n <= max_a2a_n (EP groups). Cost: O(world) graph work per shape.
LinkTable BuildLinkTable(const SystemSpec& system, int64_t world, int64_t max_a2a_n);
/// The same shapes with GroupLink's link-tier rule (ring and all-to-all alike): no graph,
/// so that lookups stay a table read for worlds above kMaxGraphWorld.
LinkTable BuildGroupLinkTable(const SystemSpec& system, int64_t world);
/// Largest world size whose groups are priced on the topology graph. Building the table
/// loads every group shape onto the graph, which grows faster than linearly with the world
/// (about 0.1 s at 1024 GPUs, 3.4 s at 8192 on the 2-core CI machine); larger jobs use the
/// link-tier rule of GroupLink so that a search stays interactive. Known limitation.
constexpr int64_t kMaxGraphWorld = 2048;
/// BuildLinkTable (world <= kMaxGraphWorld) or BuildGroupLinkTable (above) memoised per
/// (system's network numbers, world, max_a2a_n), thread-safe: searches and tests build many
/// CostModels for the same job.
std::shared_ptr<const LinkTable> SharedLinkTable(const SystemSpec& system, int64_t world, int64_t max_a2a_n);
/// Ring / all-to-all link of `group`: from `table` when it holds the shape, else GroupLink.
/// (This and the collective times below are inline: RankTime calls them per rank.)
inline Link RingLink(const SystemSpec& system, const LinkTable* table, Group group) {
  if (table != nullptr && group.n > 1) {
    const LinkTable::Entry* e = table->Find(group);
    if (e != nullptr && e->ring.busbw_bytes_per_s > 0) return e->ring;
  }
  return GroupLink(system, group);
}
inline Link A2aLink(const SystemSpec& system, const LinkTable* table, Group group) {
  if (table != nullptr && group.n > 1) {
    const LinkTable::Entry* e = table->Find(group);
    if (e != nullptr && e->a2a.busbw_bytes_per_s > 0) return e->a2a;
  }
  return GroupLink(system, group);
}

namespace detail {
inline double Transfer(double bytes, Link link) {
  return link.busbw_bytes_per_s > 0 ? bytes / link.busbw_bytes_per_s : 0.0;
}
}  // namespace detail

/// Ring all-reduce of `bytes` (full buffer) over n ranks:
/// t = α·2(n−1) + S·2(n−1)/n / busbw. Source: nccl-tests doc/PERFORMANCE.md.
inline double AllReduceSeconds(double bytes, int64_t n, Link link) {
  if (n <= 1 || bytes <= 0) return 0.0;
  const double steps = 2.0 * double(n - 1);
  return link.latency_s * steps + detail::Transfer(bytes * steps / double(n), link);
}
/// Ring all-gather / reduce-scatter, S = full (unsharded) size:
/// t = α·(n−1) + S·(n−1)/n / busbw. Source: nccl-tests doc/PERFORMANCE.md.
inline double AllGatherSeconds(double bytes, int64_t n, Link link) {
  if (n <= 1 || bytes <= 0) return 0.0;
  const double steps = double(n - 1);
  return link.latency_s * steps + detail::Transfer(bytes * steps / double(n), link);
}
inline double ReduceScatterSeconds(double bytes, int64_t n, Link link) { return AllGatherSeconds(bytes, n, link); }
/// All-to-all, S = bytes one rank sends in total (its own share included):
/// t = α·(n−1) + S·(n−1)/n / bw. Source: nccl-tests doc/PERFORMANCE.md (alltoall).
inline double AllToAllSeconds(double bytes, int64_t n, Link link) { return AllGatherSeconds(bytes, n, link); }
/// Point-to-point send of `bytes`: t = α + S/bw.
inline double P2pSeconds(double bytes, Link link) {
  if (bytes <= 0) return 0.0;
  return link.latency_s + detail::Transfer(bytes, link);
}

/// The process groups of one layout in AutoModel's meshes.
/// FSDP2 root mesh (pp, dp_replicate, dp_shard, cp, tp), row-major over torchrun ranks
/// (node-contiguous): components/distributed/mesh_utils.py::_create_fsdp2_device_mesh.
/// MoE mesh: the non-PP ranks flattened and reshaped to (ep_shard, ep), ep innermost:
/// mesh_utils.py::_create_moe_mesh (automodel.md 3).
struct MeshGroups {
  Group tp;            ///< n = tp, stride 1
  Group cp;            ///< n = cp, stride tp
  Group dp_shard_cp;   ///< FSDP shard group of dense params: n = dp_shard·cp, stride tp
  Group dp_replicate;  ///< HSDP replicas: n = dp_replicate, stride dp_shard·cp·tp
  Group ep;            ///< n = ep, stride 1 (ep consecutive non-PP ranks)
  Group ep_shard;      ///< FSDP shard group of experts: n = dp·cp·tp/ep, stride ep
  /// PP stages: n = pp, stride world/pp (n = 1 without PP). Its ring link prices the p2p
  /// sends: every stage sends to the next at once, so the slowest hop (a node boundary
  /// anywhere along the pipeline) sets the rate. A pair {2, world/pp} saw only the first
  /// hop: PP 4 on two 8-GPU nodes (stages 0, 4 | 8, 12) was priced on NVLink.
  Group pp;
  Group ddp;           ///< DDP: all ranks, stride 1
};
MeshGroups LayoutGroups(const CostView& layout, int64_t world);

}  // namespace meshplan::cost
