// Topology graph of a system (Boost.Graph) and the per-group bandwidths derived from it.
// Model and assumptions: include/meshplan/topology.hpp. Units: bytes, bytes/s, seconds.

#include "meshplan/topology.hpp"

#include <algorithm>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>

namespace meshplan {

namespace {

struct EdgeProp {
  double bw = 0;       // bytes/s, one direction
  double latency = 0;  // seconds
  int64_t index = 0;   // position in Impl::edges
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, EdgeProp>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

}  // namespace

struct Topology::Impl {
  SystemSpec sys;
  int64_t W = 1, G = 1, U = 1, nics = 1, nodes = 1, domains = 1, pods = 1;
  Graph g;
  std::vector<Edge> edges;
  // Leaf-to-leaf paths (edge indices) per (rail, pod a, pod b), found on first use by one BFS
  // from leaf (a, rail) to every pod (LeafPathsFrom); index (rail·pods + a)·pods + b.
  mutable std::vector<std::vector<int64_t>> leaf_paths;
  mutable std::vector<char> leaf_path_done;
  // The edges RailPath walks, by index (E would search the out-edges: a leaf has one per node of
  // its pod): GPU r -> its rail's NIC, and NIC (node, k) -> its leaf; the edge back is the next
  // index (Add).
  std::vector<int64_t> gpu_nic_up;   // [r]
  std::vector<int64_t> nic_leaf_up;  // [node·nics + k]

  Vertex Gpu(int64_t r) const { return Vertex(r); }
  Vertex Switch(int64_t d) const { return Vertex(W + d); }
  Vertex Nic(int64_t node, int64_t k) const { return Vertex(W + domains + node * nics + k); }
  Vertex Leaf(int64_t pod, int64_t rail) const { return Vertex(W + domains + nodes * nics + pod * nics + rail); }
  Vertex Spine() const { return Vertex(W + domains + nodes * nics + pods * nics); }
  int64_t Node(int64_t r) const { return r / G; }
  int64_t Domain(int64_t r) const { return r / U; }
  int64_t Rail(int64_t r) const { return (r % G) * nics / G; }
  int64_t Pod(int64_t node) const { return node / kPodNodes; }
  // First GPU of `node` attached to NIC `rail`.
  int64_t RailGpu(int64_t node, int64_t rail) const {
    return std::min(W - 1, node * G + (rail * G + nics - 1) / nics);
  }

  // Adds the edges a -> b and b -> a; returns the index of a -> b (b -> a is the next).
  int64_t Add(Vertex a, Vertex b, double bw, double lat) {
    const int64_t first = int64_t(edges.size());
    for (auto [u, v] : {std::pair{a, b}, std::pair{b, a}}) {
      EdgeProp p{bw, lat, int64_t(edges.size())};
      edges.push_back(boost::add_edge(u, v, p, g).first);
    }
    return first;
  }
  int64_t E(Vertex a, Vertex b) const { return g[boost::edge(a, b, g).first].index; }
  const std::vector<int64_t>& LeafPath(int64_t rail, int64_t pa, int64_t pb) const {
    const size_t key = size_t((rail * pods + pa) * pods + pb);
    if (leaf_path_done.empty()) {
      leaf_paths.assign(size_t(nics * pods * pods), {});
      leaf_path_done.assign(leaf_paths.size(), 0);
    }
    if (!leaf_path_done[key]) LeafPathsFrom(rail, pa);
    return leaf_paths[key];
  }

  // The paths from Leaf(pa, rail) to every leaf of the rail, from one BFS: its predecessor tree
  // does not depend on the destination, so each path is the one a search to that leaf finds.
  void LeafPathsFrom(int64_t rail, int64_t pa) const {
    std::vector<Vertex> pred(boost::num_vertices(g));
    const Vertex src = Leaf(pa, rail);
    for (size_t i = 0; i < pred.size(); ++i) pred[i] = Vertex(i);
    boost::breadth_first_search(
        g, src, boost::visitor(boost::make_bfs_visitor(boost::record_predecessors(pred.data(), boost::on_tree_edge()))));
    for (int64_t pb = 0; pb < pods; ++pb) {
      const size_t key = size_t((rail * pods + pa) * pods + pb);
      std::vector<int64_t> path;
      if (pb != pa) {
        const Vertex dst = Leaf(pb, rail);
        for (Vertex v = dst; v != src && pred[v] != v; v = pred[v]) path.push_back(E(pred[v], v));
        std::reverse(path.begin(), path.end());
      }
      leaf_paths[key] = std::move(path);
      leaf_path_done[key] = 1;
    }
  }

  // One rail-aligned path node_a/rail -> node_b/rail carrying `w` units; returns its latency.
  double RailPath(int64_t na, int64_t nb, int64_t rail, double w, std::vector<double>& load) const {
    const int64_t ra = RailGpu(na, rail), rb = RailGpu(nb, rail);
    double l = 0;
    // GPU-NIC hops are skipped when a partial last node has no GPU on `rail` (worlds that are
    // not whole nodes; the NIC-leaf hops still carry the traffic): the GPU RailGpu names is then
    // on another node or rail, and has no edge to this NIC.
    const int64_t up = Node(ra) == na && Rail(ra) == rail ? gpu_nic_up[size_t(ra)] : -1;
    const int64_t down = Node(rb) == nb && Rail(rb) == rail ? gpu_nic_up[size_t(rb)] + 1 : -1;
    for (int64_t e : {up, nic_leaf_up[size_t(na * nics + rail)]}) {
      if (e < 0) continue;
      load[e] += w;
      l += g[edges[e]].latency;
    }
    for (int64_t e : LeafPath(rail, Pod(na), Pod(nb))) {
      load[e] += w;
      l += g[edges[e]].latency;
    }
    for (int64_t e : {nic_leaf_up[size_t(nb * nics + rail)] + 1, down}) {
      if (e < 0) continue;
      load[e] += w;
      l += g[edges[e]].latency;
    }
    return l;
  }

  // Adds `w` units of traffic from rank a to rank b (a, b in different scale-up domains) over
  // the rails `rails` of node(a) (spread evenly); returns the path latency.
  double CrossNode(int64_t a, int64_t b, const std::vector<int64_t>& rails, double w, std::vector<double>& load) const {
    const double share = w / double(rails.size());
    double lat = 0;
    for (int64_t rail : rails) lat = std::max(lat, RailPath(Node(a), Node(b), rail, share, load));
    return lat;
  }

  // A ring hop between two scale-up domains that span several nodes (NVL72): NCCL treats the
  // NVLink domain as one node (multi-node NVLink) and opens one channel per NIC, so the hop is
  // spread over the (node, rail) NICs of the group's members in the sender's domain, at most
  // kMaxChannels of them, and lands on the same rails of the receiver's domain members.
  double CrossDomain(const std::vector<std::pair<int64_t, int64_t>>& src,
                     const std::vector<std::pair<int64_t, int64_t>>& dst, double w, std::vector<double>& load) const {
    const size_t k = std::min<size_t>(src.size(), kMaxChannels);
    const double share = w / double(k);
    double lat = 0;
    for (size_t i = 0; i < k; ++i) {
      const int64_t nb = dst[i % dst.size()].first;
      lat = std::max(lat, RailPath(src[i].first, nb, src[i].second, share, load));
    }
    return lat;
  }

  double InDomain(int64_t a, int64_t b, double w, std::vector<double>& load) const {
    const int64_t e1 = E(Gpu(a), Switch(Domain(a))), e2 = E(Switch(Domain(b)), Gpu(b));
    load[e1] += w;
    load[e2] += w;
    return g[edges[e1]].latency + g[edges[e2]].latency;
  }

  // max over edges of load / bandwidth (seconds per unit of traffic per hop).
  double Bottleneck(const std::vector<double>& load) const {
    double t = 0;
    for (size_t i = 0; i < load.size(); ++i) {
      if (load[i] > 0) t = std::max(t, load[i] / g[edges[i]].bw);
    }
    return t;
  }
};

int64_t PlacedDomainGpus(const SystemSpec& sys, int64_t num_gpus) {
  const int64_t W = std::max<int64_t>(1, num_gpus), G = std::max(1, sys.gpus_per_node);
  int64_t U = sys.scaleup_domain_gpus > 0 ? sys.scaleup_domain_gpus : G;
  if (W > U) {
    // Largest multiple of G <= U dividing W (NVL72 jobs use 64-GPU blocks of a rack).
    int64_t best = G;
    for (int64_t u = G; u <= U; u += G) {
      if (W % u == 0) best = u;
    }
    U = best;
  }
  return std::max<int64_t>(1, std::min(U, W));
}

Topology::Topology(const SystemSpec& sys, int64_t num_gpus) : impl_(std::make_unique<Impl>()) {
  Impl& t = *impl_;
  t.sys = sys;
  t.W = std::max<int64_t>(1, num_gpus);
  t.G = std::max(1, sys.gpus_per_node);
  t.nics = std::max(1, sys.nics_per_node);
  t.U = PlacedDomainGpus(sys, t.W);
  t.nodes = (t.W + t.G - 1) / t.G;
  t.domains = (t.W + t.U - 1) / t.U;
  t.pods = (t.nodes + kPodNodes - 1) / kPodNodes;
  const int64_t V = t.W + t.domains + t.nodes * t.nics + t.pods * t.nics + 1;
  // Vertices added to the empty graph: assigning or swapping a boost::adjacency_list copies it
  // (adjacency_list::swap goes through copies), which GCC -O2 flags -Wmaybe-uninitialized.
  for (int64_t v = 0; v < V; ++v) boost::add_vertex(t.g);
  const double nvl = sys.scaleup_bandwidth * (sys.scaleup_busbw_efficiency > 0 ? sys.scaleup_busbw_efficiency : 1.0);
  const double nic = sys.nic_bandwidth * (sys.scaleout_busbw_efficiency > 0 ? sys.scaleout_busbw_efficiency : 1.0);
  // NVLink: GPU <-> its domain's NVSwitch; the per-step latency split over the two edges.
  for (int64_t r = 0; r < t.W; ++r) t.Add(t.Gpu(r), t.Switch(t.Domain(r)), nvl, sys.scaleup_latency / 2);
  // PCIe GPU <-> NIC (every GPU to its rail's NIC), NIC <-> leaf, leaf <-> spine.
  t.gpu_nic_up.resize(size_t(t.W));
  for (int64_t r = 0; r < t.W; ++r) {
    t.gpu_nic_up[size_t(r)] = t.Add(t.Gpu(r), t.Nic(t.Node(r), t.Rail(r)), 2.0 * sys.nic_bandwidth, 0.0);
  }
  t.nic_leaf_up.resize(size_t(t.nodes * t.nics));
  for (int64_t node = 0; node < t.nodes; ++node) {
    for (int64_t k = 0; k < t.nics; ++k) {
      t.nic_leaf_up[size_t(node * t.nics + k)] =
          t.Add(t.Nic(node, k), t.Leaf(t.Pod(node), k), nic, sys.scaleout_latency / 2);
    }
  }
  for (int64_t p = 0; p < t.pods; ++p) {
    for (int64_t k = 0; k < t.nics; ++k) t.Add(t.Leaf(p, k), t.Spine(), nic * double(kPodNodes), 0.0);
  }
}

Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

int64_t Topology::num_gpus() const { return impl_->W; }
int64_t Topology::domain_gpus() const { return impl_->U; }
int64_t Topology::num_vertices() const { return int64_t(boost::num_vertices(impl_->g)); }
int64_t Topology::num_edges() const { return int64_t(impl_->edges.size()); }

/// Ring: every group's ring visits its members in rank order (node-contiguous, as NCCL's ring
/// does within and across nodes); each hop carries one unit per ring step, all groups at once.
/// ring_busbw = 1 / max_e(load_e / bw_e): the ring step time per byte of chunk, so that
/// all-reduce takes 2(n−1) steps of S/n bytes (nccl-tests PERFORMANCE.md: busbw = algbw·2(n−1)/n).
/// All-to-all: every member sends one unit to every other member at once; in-domain pairs load
/// the NVLink edges, pairs in different domains the rails of the sender's node.
/// a2a_bw = (n−1) / max_e(load_e / bw_e), so that S·(n−1)/n / a2a_bw is the time of S bytes
/// sent per rank (S/n to each peer).
GroupBandwidth Topology::Group(int64_t n, int64_t stride, bool all_to_all) const {
  const Impl& t = *impl_;
  GroupBandwidth out;
  if (n <= 1 || stride < 1 || t.W % (n * stride) != 0) return out;
  std::vector<double> ring(t.edges.size(), 0.0), a2a(t.edges.size(), 0.0);
  std::vector<int64_t> members(size_t(n), 0);
  // Per node / domain of the current group, indexed by node / domain and reset through
  // `nodes_seen` / `domains_seen` (nodes in increasing order: members are in rank order).
  std::vector<std::vector<int64_t>> rails_of_node(size_t(t.nodes));  // rails of the group's members
  std::vector<int64_t> count_of_node(size_t(t.nodes), 0), count_of_domain(size_t(t.domains), 0);
  std::vector<int64_t> nodes_seen, domains_seen;
  // Multi-node domains (NVL72): the (node, rail) NICs of the group's members per domain.
  const bool multi_node_domains = t.U > t.G;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> nics_of_domain(multi_node_domains ? size_t(t.domains) : 0);
  const int64_t blocks = t.W / (n * stride);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t o = 0; o < stride; ++o) {
      for (int64_t node : nodes_seen) {
        rails_of_node[size_t(node)].clear();
        count_of_node[size_t(node)] = 0;
      }
      for (int64_t d : domains_seen) {
        count_of_domain[size_t(d)] = 0;
        if (multi_node_domains) nics_of_domain[size_t(d)].clear();
      }
      nodes_seen.clear();
      domains_seen.clear();
      for (int64_t j = 0; j < n; ++j) {
        const int64_t r = b * n * stride + o + j * stride;
        members[size_t(j)] = r;
        const int64_t node = t.Node(r), domain = t.Domain(r);
        std::vector<int64_t>& rails = rails_of_node[size_t(node)];
        if (std::find(rails.begin(), rails.end(), t.Rail(r)) == rails.end()) rails.push_back(t.Rail(r));
        if (count_of_node[size_t(node)]++ == 0) nodes_seen.push_back(node);
        if (count_of_domain[size_t(domain)]++ == 0) domains_seen.push_back(domain);
        if (multi_node_domains) {
          auto& v = nics_of_domain[size_t(domain)];
          const std::pair<int64_t, int64_t> nic{node, t.Rail(r)};
          if (std::find(v.begin(), v.end(), nic) == v.end()) v.push_back(nic);
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        const int64_t a = members[size_t(j)], c = members[size_t((j + 1) % n)];
        const double lat =
            t.Domain(a) == t.Domain(c) ? t.InDomain(a, c, 1.0, ring)
            : multi_node_domains
                ? t.CrossDomain(nics_of_domain[size_t(t.Domain(a))], nics_of_domain[size_t(t.Domain(c))], 1.0, ring)
                : t.CrossNode(a, c, rails_of_node[size_t(t.Node(a))], 1.0, ring);
        out.ring_latency = std::max(out.ring_latency, lat);
      }
      if (!all_to_all) continue;
      // All-to-all, aggregated: in-domain peers per member; node pairs across domains.
      for (int64_t j = 0; j < n; ++j) {
        const int64_t a = members[size_t(j)];
        const int64_t peers = count_of_domain[size_t(t.Domain(a))] - 1;
        if (peers > 0) {
          const double lat = t.InDomain(a, a, double(peers), a2a);
          out.a2a_latency = std::max(out.a2a_latency, lat);
        }
      }
      for (int64_t na : nodes_seen) {
        const int64_t ca = count_of_node[size_t(na)];
        for (int64_t nb : nodes_seen) {
          const int64_t cb = count_of_node[size_t(nb)];
          const int64_t ra = na * t.G, rb = nb * t.G;
          if (t.Domain(ra) == t.Domain(rb)) continue;
          const double lat = t.CrossNode(ra, rb, rails_of_node[size_t(na)], double(ca * cb), a2a);
          out.a2a_latency = std::max(out.a2a_latency, lat);
        }
      }
    }
  }
  const double tr = t.Bottleneck(ring), ta = t.Bottleneck(a2a);
  out.ring_busbw = tr > 0 ? 1.0 / tr : 0.0;
  out.a2a_bw = ta > 0 ? double(n - 1) / ta : 0.0;
  return out;
}

}  // namespace meshplan
