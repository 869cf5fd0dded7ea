// Megatron-Bridge's side of `meshplan check`'s nearest layouts: the keys a suggestion changes
// and the recipe's own settings the suggestions keep.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "frameworks/megatron_bridge/space.hpp"
#include "search/diff.hpp"

namespace meshplan::megatron_bridge {
namespace {

using search::Diff;

using search::NullOr;

// How a Megatron-Bridge recipe splits the layers over the pipeline stages, as its keys say it.
const char* PpSplitKeys(const Layout& l) {
  if (l.pp <= 1) return "none";
  switch (l.pp_split) {
    case MbPpSplit::kAccountEmbeddingLoss:
      return "account_for_embedding/loss_in_pipeline_split";
    case MbPpSplit::kLayout:
      return "pipeline_model_parallel_layout";
    case MbPpSplit::kEven:
      break;
  }
  return "even (num_layers / (pp x vpp))";
}

// The pipeline_model_parallel_layout a Megatron-Bridge layout sets, "null" for none. Kept per
// thread for the last inputs (what PpLayoutValue reads: the recipe's parsed layout, held so
// that its address is not reused, else the split's shape): check's nearest walk compares the
// recipe's string with those of thousands of layouts of a few shapes. The reference stays valid
// until the second call after this one (a returned entry is not replaced by the next call).
const std::string& LayoutValue(int64_t num_layers, const Layout& l) {
  struct Entry {
    std::shared_ptr<const PpLayerLayout> parsed;
    int64_t num_layers, pp, vpp, mtp;
    MbPpSplit split;
    std::string value;
  };
  constexpr size_t kEntries = 16;
  thread_local std::vector<Entry> cache;
  thread_local size_t next = 0, last = kEntries;
  const int64_t mtp = MtpLayers(l);
  for (size_t i = 0; i < cache.size(); ++i) {
    const Entry& e = cache[i];
    if (e.parsed == l.pp_layout && e.num_layers == num_layers && e.pp == l.pp && e.vpp == l.vpp && e.mtp == mtp &&
        e.split == l.pp_split) {
      last = i;
      return e.value;
    }
  }
  std::string v = PpLayoutValue(num_layers, l);
  Entry e{l.pp_layout, num_layers, l.pp, l.vpp, mtp, l.pp_split, v.empty() ? "null" : std::move(v)};
  if (cache.size() < kEntries) {
    cache.reserve(kEntries);  // never reallocated: the last reference returned stays valid
    cache.push_back(std::move(e));
    last = cache.size() - 1;
    return cache.back().value;
  }
  if (next == last) next = (next + 1) % kEntries;
  last = next;
  next = (next + 1) % kEntries;
  cache[last] = std::move(e);
  return cache[last].value;
}

const char* TrueFalse(bool b) { return b ? "true" : "false"; }

}  // namespace

void NearestChanges(const Layout& a, const Layout& b, int64_t num_layers, const TrainSetup& setup, LayoutDiff& c) {
  (void)setup;
  // The mesh's keys (MegatronSpace::Meshes sets them; features and micro-batch leave them).
  Diff(c, "tensor_model_parallel_size", a.tp, b.tp);
  Diff(c, "pipeline_model_parallel_size", a.pp, b.pp);
  Diff(c, "virtual_pipeline_model_parallel_size", NullOr{a.vpp > 1, a.vpp}, NullOr{b.vpp > 1, b.vpp});
  Diff(c, "pipeline layer split", PpSplitKeys(a), PpSplitKeys(b));
  if (a.pp_split == MbPpSplit::kLayout && b.pp_split == MbPpSplit::kLayout) {
    Diff(c, "pipeline_model_parallel_layout", LayoutValue(num_layers, a), LayoutValue(num_layers, b));
  }
  Diff(c, "mtp_num_layers", NullOr{MtpLayers(a) > 0, MtpLayers(a)}, NullOr{MtpLayers(b) > 0, MtpLayers(b)});
  Diff(c, "context_parallel_size", a.cp, b.cp);
  if (a.cp > 1 || b.cp > 1) {
    Diff(c, "cp_comm_type", std::string(domain::CpCommValue(a.mb.cp_comm)), std::string(domain::CpCommValue(b.mb.cp_comm)));
    Diff(c, "hierarchical_context_parallel_sizes", NullOr{a.mb.hcp_levels > 0, a.mb.hcp_first},
         NullOr{b.mb.hcp_levels > 0, b.mb.hcp_first});
  }
  Diff(c, "expert_model_parallel_size", a.ep, b.ep);
  // Unset, expert_tensor_parallel_size follows tensor_model_parallel_size (Megatron-Core
  // TransformerConfig). The key is an edit when the recipe's own setting, under the new TP,
  // would not give the new layout's ETP (TP 1 -> 8 with ETP left unset would give ETP 8, not 1).
  const int64_t kept_etp = a.etp > 0 ? a.etp : b.tp;
  if (kept_etp != b.EffectiveEtp()) {
    Diff(c, "expert_tensor_parallel_size", NullOr{a.etp > 0, a.etp}, NullOr{b.etp > 0, b.etp});
  }
  Diff(c, "data-parallel flavour", MbDpFlavourName(a), MbDpFlavourName(b));
  if (c.mesh_only()) return;
  Diff(c, "micro_batch_size", a.micro_batch(), b.micro_batch());
  Diff(c, "recompute_granularity", MegatronRecomputeGranularity(a.recompute), MegatronRecomputeGranularity(b.recompute));
  auto method = [](const Layout& x) {
    return x.mb.recompute_method == MbRecomputeMethod::kUniform ? "uniform"
           : x.mb.recompute_method == MbRecomputeMethod::kBlock ? "block"
                                                               : "null";
  };
  if (a.recompute == Recompute::kSelective && b.recompute == Recompute::kSelective) {
    Diff(c, "recompute_modules", RecomputeModulesValue(a.mb.recompute_modules),
         RecomputeModulesValue(b.mb.recompute_modules));
  }
  Diff(c, "recompute_method", method(a), method(b));
  Diff(c, "recompute_num_layers", NullOr{a.mb.recompute_num_layers > 0, a.mb.recompute_num_layers},
       NullOr{b.mb.recompute_num_layers > 0, b.mb.recompute_num_layers});
  Diff(c, "cpu_offloading", TrueFalse(a.mb.cpu_offloading), TrueFalse(b.mb.cpu_offloading));
  // Runtime settings the recipe wrote and the suggestion's recipe writes otherwise
  // (MegatronOverrides): a flex dispatcher turned alltoall, an overlap switched off.
  auto dispatcher = [](const Layout& x) {
    return x.mb.token_dispatcher == MbDispatcher::kFlex       ? "flex"
           : x.mb.token_dispatcher == MbDispatcher::kAlltoall ? "alltoall"
                                                              : "allgather";
  };
  // Allgather is also what an unset key reads as (the recipe functions' providers set alltoall):
  // only a dispatcher the recipe chose, alltoall or flex, is compared.
  if (b.ep > 1 && a.mb.token_dispatcher != MbDispatcher::kAllgather) {
    Diff(c, "moe_token_dispatcher_type", dispatcher(a), b.mb.token_dispatcher == MbDispatcher::kFlex ? "flex" : "alltoall");
  }
  auto tri = [&](const char* field, Tri MbSettings::*key) {
    const Tri was = a.mb.*key, now = b.mb.*key;
    // Not written by the recipe: the suggestion's value is new, not an edit of the layout. It is
    // still noted when it is on and the cost model prices it for `b` (an unset key is priced
    // off, cost_view.cpp On), since the prediction of the suggestion then depends on it.
    if (was == Tri::kUnset) {
      if (now == Tri::kTrue) {
        c.Note(field, "true", [&] {
          Layout as_recipe = b;
          as_recipe.mb.*key = Tri::kUnset;
          return as_recipe;
        });
      }
      return;
    }
    Diff(c, field, TrueFalse(was == Tri::kTrue), TrueFalse(now == Tri::kTrue));
  };
  tri("tp_comm_overlap", &MbSettings::tp_comm_overlap);
  tri("overlap_p2p_comm", &MbSettings::overlap_p2p_comm);
  tri("batch_p2p_comm", &MbSettings::batch_p2p_comm);
  tri("overlap_grad_reduce", &MbSettings::overlap_grad_reduce);
  tri("overlap_param_gather", &MbSettings::overlap_param_gather);
}

void NearestRequest(PlanRequest& req, const Layout& from) {
  // The nearest layouts train the MTP layers the recipe asks for (model.mtp_num_layers, or the
  // model provider's when unset: ParseMegatronRecipe resolves it), as Megatron-Bridge would.
  if (from.mtp_layers >= 0) req.model.mtp_num_layers = from.mtp_layers;
  // The recipe's own selective recompute is among the nearest layouts' choices.
  if (from.recompute == Recompute::kSelective &&
      std::find(req.mb_recompute_module_sets.begin(), req.mb_recompute_module_sets.end(), from.mb.recompute_modules) ==
          req.mb_recompute_module_sets.end()) {
    req.mb_recompute_module_sets.push_back(from.mb.recompute_modules);
  }
  // The recipe's own software settings (dispatcher and flex backend, EP overlap, CUDA graphs,
  // gradient dtype, TE cross-entropy)
  // price and go with the nearby layouts: a flex dispatcher stays flex (else every EP layout
  // would change it, and EP 1 ranked nearest).
  if (!req.mb_runtime) req.mb_runtime = search::MbRuntimeOf(from);
}

}  // namespace meshplan::megatron_bridge
