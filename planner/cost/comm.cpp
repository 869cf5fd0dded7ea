// Collective times and group spans. Units: bytes, bytes/s, seconds.

#include "cost/comm.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "meshplan/topology.hpp"

namespace meshplan::cost {

/// A group of n ranks with stride k covers a block of n·k consecutive global ranks
/// (mesh groups tile the ranks in such blocks). It stays inside one scale-up (NVLink)
/// domain when n·k <= scaleup_domain_gpus and the block cannot straddle two domains,
/// i.e. domain % (n·k) == 0; it then uses
///   busbw = scaleup_bandwidth · scaleup_busbw_efficiency,  α = scaleup_latency.
/// Otherwise the ring crosses the scale-out network and is limited by the NICs:
///   busbw = NicBandwidthPerGpu() · scaleout_busbw_efficiency,  α = scaleout_latency.
/// Assumption (documented, not measured): every rank of a node is in some group of the same
/// kind at the same time (mesh groups of one axis run concurrently), so a rank gets only
/// its own share of the node's NICs even when several members of its group share a node;
/// no hierarchical/NVLS speed-up is modelled.
Link GroupLink(const SystemSpec& sys, Group g) {
  const int64_t domain = sys.scaleup_domain_gpus > 0 ? sys.scaleup_domain_gpus : sys.gpus_per_node;
  const int64_t span = g.n * g.stride;
  Link link;
  if (domain > 0 && span <= domain && domain % span == 0) {
    link.busbw_bytes_per_s = sys.scaleup_bandwidth * sys.scaleup_busbw_efficiency;
    link.latency_s = sys.scaleup_latency;
  } else {
    link.busbw_bytes_per_s = sys.NicBandwidthPerGpu() * sys.scaleout_busbw_efficiency;
    link.latency_s = sys.scaleout_latency;
  }
  return link;
}

const LinkTable::Entry* LinkTable::Search(Group g) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), g, [](const Entry& e, const Group& k) {
    return e.n != k.n ? e.n < k.n : e.stride < k.stride;
  });
  return it != entries.end() && it->n == g.n && it->stride == g.stride ? &*it : nullptr;
}

void LinkTable::Index(int64_t world) {
  slot_.clear();
  divisor_pos_.clear();
  divisors_ = 0;
  world_ = world;
  if (world < 1 || world > (int64_t{1} << 24)) return;
  for (const Entry& e : entries) {
    if (e.n < 1 || e.stride < 1 || world % e.n != 0 || world % e.stride != 0) return;  // keep the search
  }
  divisor_pos_.assign(static_cast<size_t>(world) + 1, -1);
  for (int64_t d = 1; d <= world; ++d) {
    if (world % d == 0) divisor_pos_[static_cast<size_t>(d)] = static_cast<int32_t>(divisors_++);
  }
  slot_.assign(divisors_ * divisors_, -1);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    int32_t& s = slot_[static_cast<size_t>(divisor_pos_[static_cast<size_t>(e.n)]) * divisors_ +
                       static_cast<size_t>(divisor_pos_[static_cast<size_t>(e.stride)])];
    if (s < 0) s = static_cast<int32_t>(i);  // the first, as the binary search finds it
  }
}

LinkTable BuildLinkTable(const SystemSpec& sys, int64_t world, int64_t max_a2a_n) {
  LinkTable t;
  if (world <= 1) return t;
  for (int64_t n = 2; n <= world; ++n) {
    if (world % n != 0) continue;
    for (int64_t stride = 1; stride <= world / n; ++stride) {
      if ((world / n) % stride != 0) continue;
      LinkTable::Entry e;
      e.n = n;
      e.stride = stride;
      t.entries.push_back(e);
    }
  }
  // The groups are priced independently, on one thread per core, each with its own Topology
  // (its path cache is not shared); every entry's value is the same on any thread.
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), (t.entries.size() + 7) / 8);
  std::atomic<size_t> next{0};
  auto work = [&] {
    const Topology topo(sys, world);
    for (size_t i = next.fetch_add(1); i < t.entries.size(); i = next.fetch_add(1)) {
      LinkTable::Entry& e = t.entries[i];
      const bool a2a = e.stride == 1 && e.n <= max_a2a_n;
      const GroupBandwidth b = topo.Group(e.n, e.stride, a2a);
      e.ring = {b.ring_busbw, b.ring_latency};
      e.a2a = {b.a2a_bw, b.a2a_latency};
    }
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  t.Index(world);
  return t;
}

LinkTable BuildGroupLinkTable(const SystemSpec& sys, int64_t world) {
  LinkTable t;
  if (world <= 1) return t;
  for (int64_t n = 2; n <= world; ++n) {
    if (world % n != 0) continue;
    for (int64_t stride = 1; stride <= world / n; ++stride) {
      if ((world / n) % stride != 0) continue;
      LinkTable::Entry e;
      e.n = n;
      e.stride = stride;
      e.ring = e.a2a = GroupLink(sys, Group{n, stride});
      t.entries.push_back(e);
    }
  }
  t.Index(world);
  return t;
}

std::shared_ptr<const LinkTable> SharedLinkTable(const SystemSpec& sys, int64_t world, int64_t max_a2a_n) {
  using Key = std::tuple<int, int, int, double, double, double, double, double, double, int64_t, int64_t>;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const LinkTable>> cache;
  const Key key{sys.gpus_per_node, sys.scaleup_domain_gpus, sys.nics_per_node, sys.scaleup_bandwidth,
                sys.scaleup_latency, sys.nic_bandwidth, sys.scaleout_latency, sys.scaleup_busbw_efficiency,
                sys.scaleout_busbw_efficiency, world, max_a2a_n};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto table = std::make_shared<const LinkTable>(world <= kMaxGraphWorld ? BuildLinkTable(sys, world, max_a2a_n)
                                                                        : BuildGroupLinkTable(sys, world));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 256) cache.clear();  // bound the memory of long-running processes
  return cache.emplace(key, table).first->second;
}

MeshGroups LayoutGroups(const CostView& l, int64_t world) {
  MeshGroups g;
  const int64_t tp = std::max<int64_t>(1, l.tp), cp = std::max<int64_t>(1, l.cp);
  const int64_t pp = std::max<int64_t>(1, l.pp), ep = std::max<int64_t>(1, l.ep);
  const int64_t dp = std::max<int64_t>(1, l.dp);
  const int64_t rep = std::max<int64_t>(1, l.dp_replicate);
  const int64_t shard = std::max<int64_t>(1, dp / rep);
  g.tp = {tp, 1};
  g.cp = {cp, tp};
  g.dp_shard_cp = {shard * cp, tp};
  g.dp_replicate = {rep, shard * cp * tp};
  const int64_t non_pp = dp * cp * tp;
  g.ep = {ep, 1};
  g.ep_shard = {std::max<int64_t>(1, non_pp / ep), ep};
  g.pp = pp > 1 ? Group{pp, world / pp} : Group{1, 1};
  g.ddp = {world, 1};
  return g;
}

}  // namespace meshplan::cost
