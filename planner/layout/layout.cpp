#include "meshplan/layout.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace meshplan {

// Source: AutoModel components/distributed/pipelining/functional.py
//   calculate_virtual_stages: layers_per_stage null -> pp (single-stage schedules) or
//   2*pp (multi-stage); else S = ceil(L / lps), rounded up/down to a multiple of pp when
//   round_virtual_stages_to_pp_multiple is set.
//   generate_hf_model_fqn_per_model_part: L layers over S stages, the first L % S stages
//   one layer larger; stage s lives on rank s % pp (looped placement).
namespace {

// Decoder layers of each PP rank under OwnStageSplit: rank r holds stages r, r + pp, ...
std::vector<int64_t> OwnRankLayers(int64_t num_layers, SplitPlaces places, int64_t num_stages, int64_t pp) {
  std::vector<int64_t> rank(static_cast<size_t>(pp), 0);
  const OwnSplit own = OwnStageSplit(num_layers, places, num_stages);
  for (int64_t s = 0; s < num_stages; ++s) rank[static_cast<size_t>(s % pp)] += own.Layers(s);
  return rank;
}

// The first, last and largest of the decoder layers per rank.
void SetRankLayers(StageSplit& out, const std::vector<int64_t>& rank) {
  out.first_rank_layers = rank.front();
  out.last_rank_layers = rank.back();
  out.max_layers_per_rank = *std::max_element(rank.begin(), rank.end());
}

StageSplit ComputeSplitStages(int64_t num_layers, const Layout& layout) {
  StageSplit out;
  const int64_t pp = std::max<int64_t>(1, layout.pp);
  const bool multi = layout.pp > 1 && layout.pp_schedule == PpSchedule::kInterleaved1F1B;
  int64_t s = 0;
  if (layout.pp <= 1) {
    s = 1;
  } else if (layout.vpp > 1) {  // only Megatron-Bridge layouts set a VPP
    // Megatron-Core: exactly vpp model chunks per rank (virtual_pipeline_model_parallel_size);
    // when pp·vpp does not divide the layers, the layout string meshplan writes splits them
    // as OwnStageSplit does. Not AutoModel's layers_per_stage arithmetic, which
    // cannot reach every pp·vpp (61 layers: no layers_per_stage gives 32 or 40 stages).
    s = pp * layout.vpp;
  } else if (layout.layers_per_stage <= 0) {
    s = multi ? 2 * pp : pp;
  } else {
    s = (num_layers + layout.layers_per_stage - 1) / layout.layers_per_stage;
    if (s % pp != 0) {
      if (layout.stage_rounding == StageRounding::kUp) s = (s / pp + 1) * pp;
      if (layout.stage_rounding == StageRounding::kDown) s = (s / pp) * pp;
    }
  }
  out.num_stages = s;
  if (s <= 0 || num_layers <= 0) {
    out.num_stages = 0;
    out.stages_per_rank = 0;
    return out;
  }
  out.stages_per_rank = s / pp;
  out.mtp_rank = MtpLayers(layout) > 0 ? (s - 1) % pp : -1;
  SetRankLayers(out, OwnRankLayers(num_layers, OwnSplitPlaces(layout), s, pp));
  return out;
}

// Megatron-Core's split of a pipeline_model_parallel_layout: stage i is virtual stage i / pp
// of rank i % pp (pipeline_parallel_layer_layout.py:48-55), with the decoder layers it names.
std::vector<int64_t> GivenRankLayers(const PpLayerLayout& g, int64_t pp) {
  std::vector<int64_t> rank(static_cast<size_t>(pp), 0);
  for (size_t s = 0; s < g.stages.size(); ++s) rank[s % static_cast<size_t>(pp)] += g.CountIn(s, 't');
  return rank;
}

StageSplit GivenSplit(const PpLayerLayout& g, int64_t pp) {
  StageSplit out;
  out.num_stages = int64_t(g.stages.size());
  out.stages_per_rank = out.num_stages / pp;
  SetRankLayers(out, GivenRankLayers(g, pp));
  out.given = &g;
  const int64_t m = g.StageOf('m');
  out.mtp_rank = m >= 0 ? m % pp : -1;
  return out;
}

}  // namespace

int64_t MtpLayers(const Layout& l) {
  return std::max<int64_t>(0, l.mtp_layers);  // AutoModel layouts leave it 0
}

std::string OwnPpLayoutString(int64_t num_layers, const Layout& l) {
  const int64_t stages = std::max<int64_t>(1, l.pp) * std::max<int64_t>(1, l.vpp);
  if (stages <= 1) return "";
  const int64_t mtp = MtpLayers(l);
  const OwnSplit own = OwnStageSplit(num_layers, OwnSplitPlaces(l), stages);
  std::string s = "\"";
  for (int64_t i = 0; i < stages; ++i) {
    if (i) s += "|";
    if (i == 0) s += "E";
    s += std::string(static_cast<size_t>(own.Layers(i)), 't');
    if (i == stages - 1) s += std::string(static_cast<size_t>(mtp), 'm') + "L";
  }
  return s + "\"";
}

std::string PpLayoutValue(int64_t num_layers, const Layout& l) {
  if (l.pp_layout != nullptr) return "\"" + l.pp_layout->ToString() + "\"";
  if (l.pp > 1 && l.pp_split == MbPpSplit::kLayout) return OwnPpLayoutString(num_layers, l);
  return "";
}

SplitPlaces OwnSplitPlaces(const Layout& l) {
  if (l.pp <= 1) return {};  // AutoModel layouts: kEven and no MTP, so {} below too
  if (l.pp_split == MbPpSplit::kAccountEmbeddingLoss) return {1, 1};
  const int64_t mtp = MtpLayers(l);
  if (l.pp_split == MbPpSplit::kLayout && mtp > 0) return {0, 2 * mtp + 1};
  return {};
}

OwnSplit OwnStageSplit(int64_t num_layers, SplitPlaces places, int64_t num_stages) {
  OwnSplit o;
  const int64_t L = std::max<int64_t>(0, num_layers), S = num_stages;
  if (S <= 0) return o;
  o.stages = S;
  if (S == 1) {
    o.first = L;
    return o;
  }
  const int64_t fp = std::max<int64_t>(0, places.first), lp = std::max<int64_t>(0, places.last);
  const int64_t total = L + fp + lp;
  auto share = [&](int64_t st) { return total / S + (st < total % S ? 1 : 0); };
  o.first = std::min(L, std::max<int64_t>(0, share(0) - fp));
  o.last = std::min(L - o.first, std::max<int64_t>(0, share(S - 1) - lp));
  const int64_t rest = L - o.first - o.last;
  if (S == 2) {
    o.first += rest;  // no stage between: the first takes what the shares leave
    return o;
  }
  o.base = rest / (S - 2);
  o.extra = rest % (S - 2);
  return o;
}

int64_t OwnSplit::Layers(int64_t stage) const {
  if (stage < 0 || stage >= stages) return 0;
  if (stage == 0) return first;
  if (stage == stages - 1) return last;
  return base + (stage - 1 < extra ? 1 : 0);
}

int64_t OwnSplit::FirstLayer(int64_t stage) const {
  if (stages <= 0 || stage <= 0) return 0;
  if (stage >= stages) return first + (stages - 2) * base + extra + last;
  const int64_t between = stage - 1;  // middle stages before `stage`
  return first + between * base + std::min(between, extra);
}

int64_t OwnStageDecoderLayers(int64_t num_layers, SplitPlaces places, int64_t num_stages, int64_t stage) {
  return OwnStageSplit(num_layers, places, num_stages).Layers(stage);
}

int64_t OwnStageFirstLayer(int64_t num_layers, SplitPlaces places, int64_t num_stages, int64_t stage) {
  return OwnStageSplit(num_layers, places, num_stages).FirstLayer(stage);
}

int64_t SequenceParallelSeqMultiple(int64_t tp, int64_t cp) {
  // lcm(2, tp) without std::lcm's gcd loop (the search asks at every mesh and feature set).
  const int64_t t = tp < 0 ? -tp : tp;
  return cp > 1 ? cp * (t % 2 == 0 ? t : 2 * t) : tp;
}

bool PpLayoutFits(int64_t num_layers, const Layout& l) {
  const PpLayerLayout* g = l.pp_layout.get();
  if (g == nullptr || l.pp < 1 || l.vpp < 1) return false;  // only Megatron-Bridge recipes give one
  const int64_t n = int64_t(g->stages.size());
  return n > 0 && n == l.pp * l.vpp && g->Count('t') == num_layers && g->Count('E') == 1 && g->Count('L') == 1 &&
         g->Count('m') == std::max<int64_t>(0, l.mtp_layers);
}

const PpLayerLayout* PricedPpLayout(int64_t num_layers, const Layout& l) {
  if (!PpLayoutFits(num_layers, l)) return nullptr;
  const PpLayerLayout* g = l.pp_layout.get();
  const int64_t n = int64_t(g->stages.size());
  // meshplan's own split of pp·vpp stages (MegatronOverrides writes it as the layout string):
  // OwnStageSplit's decoder layers each, E first, the MTP layers and L last.
  const OwnSplit split = OwnStageSplit(num_layers, OwnSplitPlaces(l), n);
  bool own = g->CountIn(0, 'E') == 1 && g->CountIn(size_t(n - 1), 'L') == 1 && g->CountIn(size_t(n - 1), 'm') == MtpLayers(l);
  for (int64_t s = 0; own && s < n; ++s) own = g->CountIn(size_t(s), 't') == split.Layers(s);
  return own ? nullptr : g;
}

// The search asks for few distinct splits, once per layout from the cost model and from
// several pipeline rules, and the computation is integer divisions: a per-thread memo keyed
// by every field it reads (num_layers, pp, pp_schedule, layers_per_stage, stage_rounding,
// framework, vpp, mtp_layers, pp_split).
StageSplit SplitStages(int64_t num_layers, const Layout& layout) {
  if (layout.pp_layout != nullptr) {  // only layouts read from a recipe: not memoised
    if (const PpLayerLayout* g = PricedPpLayout(num_layers, layout)) return GivenSplit(*g, layout.pp);
  }
  struct Slot {
    bool used = false;
    int64_t layers = 0, pp = 0, lps = 0, vpp = 0, mtp = 0;
    PpSchedule schedule = PpSchedule::k1F1B;
    StageRounding rounding = StageRounding::kNone;
    MbPpSplit pp_split = MbPpSplit::kEven;
    StageSplit split;
  };
  thread_local Slot memo[64];
  const uint64_t h = uint64_t(num_layers) * 7 + uint64_t(layout.pp) * 31 + uint64_t(layout.layers_per_stage) * 5 +
                     uint64_t(layout.pp_schedule) * 3 + uint64_t(layout.stage_rounding) + uint64_t(layout.vpp) * 11 +
                     uint64_t(layout.mtp_layers) * 13;
  Slot& s = memo[h & 63];
  if (!s.used || s.layers != num_layers || s.pp != layout.pp || s.lps != layout.layers_per_stage ||
      s.vpp != layout.vpp || s.mtp != layout.mtp_layers ||
      s.schedule != layout.pp_schedule || s.rounding != layout.stage_rounding || s.pp_split != layout.pp_split) {
    s = Slot{true,
             num_layers,
             layout.pp,
             layout.layers_per_stage,
             layout.vpp,
             layout.mtp_layers,
             layout.pp_schedule,
             layout.stage_rounding,
             layout.pp_split,
             ComputeSplitStages(num_layers, layout)};
  }
  return s.split;
}

std::vector<int64_t> DecoderLayersPerRank(int64_t num_layers, const Layout& layout) {
  const int64_t pp = std::max<int64_t>(1, layout.pp);
  const StageSplit split = SplitStages(num_layers, layout);
  if (split.given != nullptr) return GivenRankLayers(*split.given, pp);
  return OwnRankLayers(num_layers, OwnSplitPlaces(layout), split.num_stages, pp);  // zeros without stages
}

const char* StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kFsdp2: return "fsdp2";
    case Strategy::kMegatronFsdp: return "megatron_fsdp";
    case Strategy::kDdp: return "ddp";
  }
  return "?";
}

const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

const char* PpScheduleName(PpSchedule s) {
  return s == PpSchedule::k1F1B ? "1f1b" : "interleaved1f1b";
}

const char* AmDispatcherName(AmDispatcher d) {
  switch (d) {
    case AmDispatcher::kTorch: return "torch";
    case AmDispatcher::kDeepEP: return "deepep";
    case AmDispatcher::kHybridEP: return "hybridep";
    case AmDispatcher::kUcclEp: return "uccl_ep";
    case AmDispatcher::kMok: return "mok";
  }
  return "?";
}

const char* PrecisionName(Precision p) {
  return p == Precision::kBf16 ? "bf16" : p == Precision::kFp8 ? "fp8" : "fp4";
}

const char* StageRoundingName(StageRounding r) {
  switch (r) {
    case StageRounding::kNone: return "null";
    case StageRounding::kUp: return "up";
    case StageRounding::kDown: return "down";
  }
  return "?";
}

const char* MbShardingName(MbSharding s) {
  switch (s) {
    case MbSharding::kUnset: return "";
    case MbSharding::kNoShard: return "no_shard";
    case MbSharding::kOptim: return "optim";
    case MbSharding::kOptimGrads: return "optim_grads";
    case MbSharding::kOptimGradsParams: return "optim_grads_params";
  }
  return "";
}

const char* MbDpFlavourName(const Layout& l) {
  if (l.mb.use_megatron_fsdp || l.mb.dist_use_megatron_fsdp == Tri::kTrue) return "megatron_fsdp";
  if (l.mb.use_torch_fsdp2) return "torch_fsdp2";
  return l.use_distributed_optimizer ? "ddp+distopt" : "ddp";
}

void SetMegatronMicroBatch(Layout& l, int64_t mbs, const TrainSetup& setup) {
  l.pp_microbatch_size = mbs;
  const int64_t d = mbs * l.dp;
  l.local_batch_size = (l.pp > 1 && d > 0 && setup.global_batch % d == 0) ? setup.global_batch / l.dp : mbs;
}

std::span<const RecomputeModuleName> RecomputeModuleNames() {
  static constexpr RecomputeModuleName kNames[] = {
      {kRecomputeCoreAttn, "core_attn"}, {kRecomputeMoeAct, "moe_act"},       {kRecomputeLayernorm, "layernorm"},
      {kRecomputeMlaUpProj, "mla_up_proj"}, {kRecomputeMlp, "mlp"},          {kRecomputeMoe, "moe"},
      {kRecomputeSharedExperts, "shared_experts"}};
  return kNames;
}

std::string RecomputeModulesValue(uint32_t modules) {
  if (modules == 0) modules = kRecomputeCoreAttn;
  std::string s = "[";
  for (const RecomputeModuleName& m : RecomputeModuleNames()) {
    if ((modules & m.bit) == 0) continue;
    if (s.size() > 1) s += ",";
    s += m.name;
  }
  return s + "]";
}

}  // namespace meshplan
