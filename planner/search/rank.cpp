// The ranking order of scored layouts (RanksBefore, include/meshplan/search.hpp).
#include <tuple>

#include "meshplan/search.hpp"

namespace meshplan {
namespace {

// The simpler layout first among equally fast, equally large ones: fewer model-parallel ranks,
// then the sizes, AutoModel's schedule fields, then Megatron-Bridge's (their defaults on
// AutoModel layouts): every field in which the layouts of a space differ, so that two of them
// never compare equal and the order does not depend on the search threads.
auto Key(const Layout& l) {
  return std::make_tuple(l.tp * l.pp * l.cp * l.ep, l.tp, l.pp, l.cp, l.ep, l.dp_replicate, static_cast<int>(l.strategy),
                         static_cast<int>(l.recompute), l.local_batch_size, l.pp_microbatch_size,
                         static_cast<int>(l.pp_schedule), l.layers_per_stage, l.sequence_parallel, l.vpp, l.etp,
                         l.use_distributed_optimizer, l.mb.use_megatron_fsdp, l.mb.use_torch_fsdp2,
                         l.mb.recompute_modules, static_cast<int>(l.pp_split), static_cast<int>(l.stage_rounding));
}

}  // namespace

bool RanksBefore(const Candidate& a, const Candidate& b) {
  if (a.cost.step_seconds != b.cost.step_seconds) return a.cost.step_seconds < b.cost.step_seconds;
  const double ma = a.cost.memory.Total(), mb = b.cost.memory.Total();
  if (ma != mb) return ma < mb;
  return Key(a.layout) < Key(b.layout);
}

}  // namespace meshplan
