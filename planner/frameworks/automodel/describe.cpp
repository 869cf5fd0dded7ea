// AutoModel layouts in words: Describe, RecomputeLabel and the DP flavour tables print.

#include "meshplan/framework.hpp"

namespace meshplan::automodel {

std::string RecomputeLabel(const Layout& l) { return RecomputeName(l.recompute); }

const char* DpFlavour(const Layout& l) { return StrategyName(l.strategy); }

std::string Describe(const Layout& l) {
  std::string s = StrategyName(l.strategy);
  // dp is 0 when the sizes do not divide the world: "?" rather than a size of 0.
  s += " tp" + std::to_string(l.tp) + " pp" + std::to_string(l.pp) + " cp" + std::to_string(l.cp) + " ep" +
       std::to_string(l.ep) + " dp" + (l.dp > 0 ? std::to_string(l.dp) : "?");
  if (l.dp_replicate > 1) s += " (rep" + std::to_string(l.dp_replicate) + ")";
  s += " lbs" + std::to_string(l.local_batch_size);
  if (l.pp > 1) {
    s += " mb" + std::to_string(l.pp_microbatch_size) + " " + PpScheduleName(l.pp_schedule);
    if (l.layers_per_stage > 0) s += " lps" + std::to_string(l.layers_per_stage);
    if (l.stage_rounding != StageRounding::kNone) s += std::string(" round=") + StageRoundingName(l.stage_rounding);
  }
  if (l.sequence_parallel) s += " sp";
  s += std::string(" ac=") + RecomputeName(l.recompute);
  return s;
}

}  // namespace meshplan::automodel
