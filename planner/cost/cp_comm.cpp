// The context-parallel exchange of a Megatron-Core attention layer per cp_comm_type
// (cp_comm.hpp has the formulas and their sources).
#include "cost/cp_comm.hpp"

#include <algorithm>

namespace meshplan::cost {

int64_t CpRingRanks(const CostView& v) {
  const int64_t cp = std::max<int64_t>(1, v.cp);
  if (cp <= 1) return 1;
  switch (v.cp_comm) {
    case CpCommType::kP2p: return cp;
    case CpCommType::kAllGather:
    case CpCommType::kA2a: return 1;
    case CpCommType::kA2aP2p: return v.cp_a2a > 1 && cp % v.cp_a2a == 0 ? cp / v.cp_a2a : cp;
  }
  return cp;
}

CpLinks CpLinksOf(const SystemSpec& sys, const LinkTable* table, const CostView& l, Group cp) {
  CpLinks links;
  switch (l.cp_comm) {
    case CpCommType::kP2p:
    case CpCommType::kAllGather: links.ring = RingLink(sys, table, cp); break;
    case CpCommType::kA2a: links.a2a = A2aLink(sys, table, cp); break;
    case CpCommType::kA2aP2p:
      links.ring = RingLink(sys, table, cp);
      links.inner_a2a = A2aLink(sys, table, Group{l.cp_a2a, cp.stride});
      links.outer_ring = RingLink(sys, table, Group{l.cp / std::max<int64_t>(1, l.cp_a2a), cp.stride * l.cp_a2a});
      break;
  }
  return links;
}

double CpLayerExposedSeconds(CpCommType type, const CpLayerInputs& in, const CpLinks& links) {
  if (in.cp <= 1) return 0.0;
  const double passes_a2a = in.full ? 3.0 : 2.0;    // forward, backward, recomputed forward
  const double passes_ring = in.full ? 4.0 : 3.0;   // forward K/V; backward K/V and dK/dV; recomputed forward
  auto ring_hidden = [&](int64_t n, const Link& link) {
    const double ring = double(n - 1) * P2pSeconds(in.kv_bytes, link);
    const double comm = passes_ring * ring;
    return std::max(0.0, comm - in.core_seconds);
  };
  auto a2a = [&](int64_t n, const Link& link) {
    return passes_a2a * (AllToAllSeconds(in.qkv_bytes, n, link) + AllToAllSeconds(in.o_bytes, n, link));
  };
  switch (type) {
    case CpCommType::kP2p: return ring_hidden(in.cp, links.ring);
    case CpCommType::kAllGather:
      return passes_ring * AllGatherSeconds(double(in.cp) * in.kv_bytes, in.cp, links.ring);
    case CpCommType::kA2a: return a2a(in.cp, links.a2a);
    case CpCommType::kA2aP2p: {
      if (in.a2a <= 1 || in.cp % in.a2a != 0) return ring_hidden(in.cp, links.ring);
      return a2a(in.a2a, links.inner_a2a) + ring_hidden(in.cp / in.a2a, links.outer_ring);
    }
  }
  return 0.0;
}

CpStepPieces CpLayerStepPieces(CpCommType type, const CpLayerInputs& in, const CpLinks& links) {
  CpStepPieces out;
  if (in.cp <= 1) return out;
  const double passes_a2a = in.full ? 3.0 : 2.0;
  const double passes_ring = in.full ? 4.0 : 3.0;
  auto per_byte = [](const Link& link) { return link.busbw_bytes_per_s > 0 ? 1.0 / link.busbw_bytes_per_s : 0.0; };
  // ring_hidden: passes·(n − 1)·(α + kv/bw) − core, its positive part.
  auto ring = [&](int64_t n, const Link& link) {
    out.ring_per_micro_batch = passes_ring * double(n - 1) * link.latency_s;
    out.ring_per_token = passes_ring * double(n - 1) * in.kv_bytes * per_byte(link) - in.core_seconds;
  };
  // a2a: passes·(2·α·(n − 1) + (qkv + o)·(n − 1)/n / bw), exposed.
  auto a2a = [&](int64_t n, const Link& link) {
    const double steps = double(n - 1);
    out.linear_per_micro_batch += passes_a2a * 2.0 * link.latency_s * steps;
    out.linear_per_token += passes_a2a * (in.qkv_bytes + in.o_bytes) * steps / double(n) * per_byte(link);
  };
  switch (type) {
    case CpCommType::kP2p: ring(in.cp, links.ring); break;
    case CpCommType::kAllGather: {
      const double steps = double(in.cp - 1);
      out.linear_per_micro_batch = passes_ring * links.ring.latency_s * steps;
      out.linear_per_token = passes_ring * double(in.cp) * in.kv_bytes * steps / double(in.cp) * per_byte(links.ring);
      break;
    }
    case CpCommType::kA2a: a2a(in.cp, links.a2a); break;
    case CpCommType::kA2aP2p:
      if (in.a2a <= 1 || in.cp % in.a2a != 0) {
        ring(in.cp, links.ring);
      } else {
        a2a(in.a2a, links.inner_a2a);
        ring(in.cp / in.a2a, links.outer_ring);
      }
      break;
  }
  return out;
}

}  // namespace meshplan::cost
