// Megatron-Bridge layouts in words: Describe and RecomputeLabel.

#include "meshplan/framework.hpp"

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
  s += " cp" + std::to_string(l.cp) + " ep" + std::to_string(l.ep);
  if (l.etp > 0) s += " etp" + std::to_string(l.etp);
  // dp is 0 when the sizes do not divide the world: "?" rather than a size of 0.
  s += " dp" + (l.dp > 0 ? std::to_string(l.dp) : std::string("?")) + " mbs" + std::to_string(l.micro_batch());
  if (l.sequence_parallel) s += " sp";
  s += " recompute=" + megatron_bridge::RecomputeLabel(l);
  return s;
}

}  // namespace meshplan::megatron_bridge
