// Megatron-Bridge layouts in words: Describe and RecomputeLabel.

#include "meshplan/framework.hpp"
#include "meshplan/rule_domains.hpp"

namespace meshplan::megatron_bridge {

std::string RecomputeLabel(const Layout& l) {
  std::string s = RecomputeName(l.recompute);
  if (l.recompute == Recompute::kSelective) s += RecomputeModulesValue(l.mb.recompute_modules);
  return s;
}

std::string Describe(const Layout& l) {
  std::string s = MbDpFlavourName(l);
  s += " tp" + std::to_string(l.tp) + " pp" + std::to_string(l.pp);
  if (l.vpp > 1) s += " vpp" + std::to_string(l.vpp);
  s += " cp" + std::to_string(l.cp);
  // The CP exchange when it is not Megatron-Core's default ring (cp_comm_type null / p2p).
  if (l.cp > 1 && l.mb.cp_comm != MbCpComm::kUnset && l.mb.cp_comm != MbCpComm::kP2p) {
    s += std::string("[") + domain::CpCommValue(l.mb.cp_comm);
    if (l.mb.cp_comm == MbCpComm::kA2aP2p && l.mb.hcp_first > 0) s += " " + std::to_string(l.mb.hcp_first) + "x" + std::to_string(l.cp / l.mb.hcp_first);
    s += "]";
  }
  s += " ep" + std::to_string(l.ep);
  if (l.etp > 0) s += " etp" + std::to_string(l.etp);
  // dp is 0 when the sizes do not divide the world: "?" rather than a size of 0.
  s += " dp" + (l.dp > 0 ? std::to_string(l.dp) : std::string("?")) + " mbs" + std::to_string(l.micro_batch());
  if (l.sequence_parallel) s += " sp";
  s += " recompute=" + megatron_bridge::RecomputeLabel(l);
  return s;
}

}  // namespace meshplan::megatron_bridge
