// Rules of a recipe's model.pipeline_model_parallel_layout (Layout::pp_layout, read by
// planner/frameworks/megatron_bridge/recipe_read.cpp): what Megatron-Core asserts of a well-formed layout when
// TransformerConfig.__post_init__ builds and validates it. Sources (Megatron-LM at d98e8a64ddf3,
// 2026-08-22): MCore = megatron/core/, transformer_config.py:2241-2292 and
// transformer/pipeline_parallel_layer_layout.py (PipelineParallelLayerLayout.__init__ and
// validate_layer_layout). Every rule passes for the layouts meshplan builds (no pp_layout).
#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan::rules {
namespace {

using namespace mb;

const PpLayerLayout* Given(const RuleContext& c) {
  return L(c).framework == Framework::kMegatronBridge ? L(c).pp_layout.get() : nullptr;
}

int64_t Stages(const PpLayerLayout& g) { return int64_t(g.stages.size()); }

// "pipeline_model_parallel_layout "Ett|tt|tL" (lay.yaml:6:3)": the value, shortened, and
// where the recipe sets it.
std::string Named(const PpLayerLayout& g) {
  const std::string v = g.written.size() > 70 ? g.written.substr(0, 67) + "..." : g.written;
  return Cat("pipeline_model_parallel_layout ", v, g.where.empty() ? "" : " (" + g.where + ")");
}

// The first (`first`) or last layer of the layout in model order (the stages as written:
// pipeline_parallel_layer_layout.py:75-79 flattens the 2-D layout back into this order), or 0
// when it has none.
char EndLayer(const PpLayerLayout& g, bool first) {
  if (first) {
    for (const std::string& s : g.stages) {
      if (!s.empty()) return s.front();
    }
  } else {
    for (auto it = g.stages.rbegin(); it != g.stages.rend(); ++it) {
      if (!it->empty()) return it->back();
    }
  }
  return 0;
}

const char* SymbolName(char s) {
  switch (s) {
    case 'E': return "the embedding (E)";
    case 'L': return "the loss (L)";
    case 't': return "a decoder layer (t)";
    case 'm': return "an MTP layer (m)";
    case 'c': return "an encoder layer";
  }
  return "?";
}

// The embedding (`first`: E) or the loss (L) is the first / last layer and there is one.
bool EndsRight(const PpLayerLayout& g, bool first) {
  const char symbol = first ? 'E' : 'L';
  return EndLayer(g, first) == symbol && g.Count(symbol) == 1;
}
std::string EndsRightMsg(const PpLayerLayout& g, bool first) {
  const char symbol = first ? 'E' : 'L';
  const char* where = first ? "first" : "last";
  const char end = EndLayer(g, first);
  if (end == 0) return Cat(Named(g), " has no layers; expected ", SymbolName(symbol), " as the ", where, " layer");
  if (end != symbol) {
    return Cat(Named(g), first ? " starts with " : " ends with ", SymbolName(end), "; expected ", SymbolName(symbol),
               " as the ", where, " layer");
  }
  return Cat(Named(g), " has ", g.Count(symbol), first ? " embeddings (E)" : " losses (L)", "; expected exactly one, the ",
             where, " layer");
}

/// No other pipeline-split setting beside a layout.
/// Source: MCore transformer/transformer_config.py:2242-2259 (ValueError "cannot be set with
/// other pipeline layout arguments").
bool Alone(const RuleContext& c) {
  const PpLayerLayout* g = Given(c);
  return g == nullptr || g->other_split_keys.empty();
}
std::string AloneMsg(const RuleContext& c) {
  const PpLayerLayout& g = *Given(c);
  std::string keys;
  for (const std::string& k : g.other_split_keys) keys += (keys.empty() ? "" : ", ") + k;
  return Cat(Named(g), " cannot be set with other pipeline layout arguments; found ", keys,
             ": remove them (the layout places the layers, the embedding and the loss itself)");
}

/// The stage count is a multiple of PP (VPP = stages / PP).
/// Source: MCore transformer/pipeline_parallel_layer_layout.py:40-46.
bool StagesPp(const RuleContext& c) {
  const PpLayerLayout* g = Given(c);
  return g == nullptr || L(c).pp < 1 || Stages(*g) % L(c).pp == 0;
}
std::string StagesPpMsg(const RuleContext& c) {
  const PpLayerLayout& g = *Given(c);
  const Layout& l = L(c);
  return Cat(Named(g), " has ", Stages(g), " stage", Stages(g) == 1 ? "" : "s",
             " (model chunks); expected a multiple of pipeline_model_parallel_size ", l.pp,
             l.vpp > 1 ? Cat(" (", l.pp * l.vpp, " with virtual_pipeline_model_parallel_size ", l.vpp, ")") : "",
             ": one stage per pipeline rank and virtual stage, separated by '|'");
}

/// A VPP size given must be the layout's stages / PP; unset, Megatron-Core takes it.
/// Source: MCore transformer/transformer_config.py:2275-2287.
bool Vpp(const RuleContext& c) {
  const PpLayerLayout* g = Given(c);
  if (g == nullptr || L(c).pp < 1) return true;
  const int64_t n = Stages(*g);
  return n == 0 || n % L(c).pp != 0 || n / L(c).pp == L(c).vpp;
}
std::string VppMsg(const RuleContext& c) {
  const PpLayerLayout& g = *Given(c);
  const Layout& l = L(c);
  return Cat(Named(g), " has ", Stages(g), " stages = ", l.pp, " pipeline ranks x ", Stages(g) / l.pp,
             " virtual stages, but virtual_pipeline_model_parallel_size is ", l.vpp, ": expected ", l.pp * l.vpp,
             " stages (", l.pp, " x ", l.vpp, "), or set virtual_pipeline_model_parallel_size: ",
             Stages(g) / l.pp > 1 ? Cat(Stages(g) / l.pp, " (or null)") : std::string("null"));
}

/// The first layer is the embedding, and there is exactly one.
/// Source: MCore transformer/pipeline_parallel_layer_layout.py:94-105.
bool Embedding(const RuleContext& c) { return Given(c) == nullptr || EndsRight(*Given(c), true); }
std::string EmbeddingMsg(const RuleContext& c) { return EndsRightMsg(*Given(c), true); }

/// The last layer is the loss, and there is exactly one.
/// Source: MCore transformer/pipeline_parallel_layer_layout.py:98-100, 106.
bool Loss(const RuleContext& c) { return Given(c) == nullptr || EndsRight(*Given(c), false); }
std::string LossMsg(const RuleContext& c) { return EndsRightMsg(*Given(c), false); }

/// The decoder layers add up to num_layers.
/// Source: MCore transformer/pipeline_parallel_layer_layout.py:107-110.
bool NumLayers(const RuleContext& c) {
  const PpLayerLayout* g = Given(c);
  return g == nullptr || g->Count('t') == c.model.num_layers;
}
std::string NumLayersMsg(const RuleContext& c) {
  const PpLayerLayout& g = *Given(c);
  return Cat(Named(g), " holds ", g.Count('t'), " decoder layers (t); expected num_layers ", c.model.num_layers, " of ",
             c.model.name);
}

// mtp_num_layers in effect: the recipe's, else the model provider's (Layout::mtp_layers once
// ParseMegatronRecipe, given the model, resolved it from the model's num_nextn_predict_layers); -1 unknown.
int64_t MtpInEffect(const RuleContext& c, const PpLayerLayout& g) {
  if (g.mtp_num_layers >= 0) return g.mtp_num_layers;
  return L(c).mtp_layers >= 0 ? L(c).mtp_layers : -1;
}

/// As many MTP layers as mtp_num_layers (none when it is None): the recipe's model.
/// mtp_num_layers, or when unset the model provider's (Megatron-Bridge's AutoBridge sets it
/// from the checkpoint config's num_nextn_predict_layers: DeepSeek-V3 1, every other model 0).
/// Source: MCore transformer/pipeline_parallel_layer_layout.py:111-114.
bool MtpCount(const RuleContext& c) {
  const PpLayerLayout* g = Given(c);
  if (g == nullptr) return true;
  const int64_t want = MtpInEffect(c, *g);
  return want < 0 || g->Count('m') == want;
}
std::string MtpCountMsg(const RuleContext& c) {
  const PpLayerLayout& g = *Given(c);
  const int64_t want = MtpInEffect(c, g);
  return Cat(Named(g), " holds ", g.Count('m'), g.Count('m') == 1 ? " MTP layer" : " MTP layers", " (m); expected mtp_num_layers ", want,
             want == 0 ? " (null or 0: no m)" : "",
             g.mtp_num_layers < 0 ? Cat(" (model.mtp_num_layers unset: ", c.model.name,
                                        "'s num_nextn_predict_layers, as Megatron-Bridge's model provider sets it)")
                                  : std::string());
}

// What is wrong with where a layout's MTP layers stand (MtpMisplacement).
struct MtpProblem {
  enum Kind { kNone, kDecoderAfter, kNotLastVirtualStage, kSplit } kind = kNone;
  int64_t stage = 0, count = 0, all = 0;
};

// Decoder layers after the first MTP layer (lines 115-120); with stages that divide by PP, an
// MTP layer in a virtual stage of a rank that is not the rank's last (lines 121-126, and
// 132-136 for rank 0, which this covers), or a rank's last virtual stage holding some but not
// all of them (lines 127-131, against mtp_num_layers, which mb_pp_layout_mtp_count makes the
// layout's own count).
MtpProblem MtpMisplacement(const PpLayerLayout& g, int64_t pp) {
  MtpProblem p;
  bool seen_mtp = false;
  for (const std::string& s : g.stages) {
    for (char x : s) {
      if (x == 'm') seen_mtp = true;
      if (x == 't' && seen_mtp) {
        p.kind = MtpProblem::kDecoderAfter;
        return p;
      }
    }
  }
  if (!seen_mtp || pp < 1 || Stages(g) % pp != 0) return p;
  const int64_t vpp = Stages(g) / pp;
  p.all = g.Count('m');  // mb_pp_layout_mtp_count checks it against mtp_num_layers
  for (p.stage = 0; p.stage < Stages(g); ++p.stage) {
    p.count = g.CountIn(size_t(p.stage), 'm');
    if (p.count == 0) continue;
    if (p.stage / pp < vpp - 1) p.kind = MtpProblem::kNotLastVirtualStage;
    else if (p.count != p.all) p.kind = MtpProblem::kSplit;
    if (p.kind != MtpProblem::kNone) return p;
  }
  return p;
}

/// MTP layers come after every decoder layer, in the last virtual stage of a rank, all in one.
/// Source: MCore transformer/pipeline_parallel_layer_layout.py:115-136.
bool MtpPlacement(const RuleContext& c) {
  const PpLayerLayout* g = Given(c);
  return g == nullptr || MtpMisplacement(*g, L(c).pp).kind == MtpProblem::kNone;
}
std::string MtpPlacementMsg(const RuleContext& c) {
  const PpLayerLayout& g = *Given(c);
  const int64_t pp = L(c).pp;
  const MtpProblem p = MtpMisplacement(g, pp);
  if (p.kind == MtpProblem::kDecoderAfter) return Cat(Named(g), ": a decoder layer (t) comes after the first MTP layer (m)");
  if (p.kind == MtpProblem::kNotLastVirtualStage) {
    return Cat(Named(g), ": stage ", p.stage, " (pipeline rank ", p.stage % pp, ", virtual stage ", p.stage / pp, " of ",
               Stages(g) / pp, ") holds an MTP layer (m); expected MTP layers only in a rank's last virtual stage");
  }
  return Cat(Named(g), ": stage ", p.stage, " holds ", p.count, " of the ", p.all,
             " MTP layers (m); expected all of them in one stage");
}

/// No encoder layer (only the list form can name one).
/// Source: MCore transformer/pipeline_parallel_layer_layout.py:147-149 (NotImplementedError).
bool NoEncoder(const RuleContext& c) {
  const PpLayerLayout* g = Given(c);
  return g == nullptr || g->Count('c') == 0;
}
std::string NoEncoderMsg(const RuleContext& c) {
  const PpLayerLayout& g = *Given(c);
  return Cat(Named(g), " holds ", g.Count('c'),
             " encoder layers; Megatron-Core does not support encoder layers in a pipeline layout");
}

}  // namespace

std::span<const Rule> MegatronLayoutRules() {
  static const Rule kLayoutRules[] = {
      {"mb_pp_layout_alone", "MCore transformer/transformer_config.py:2242-2259", RuleStage::kMesh, Alone, AloneMsg, kNoDp},
      {"mb_pp_layout_stages_divisible_by_pp", "MCore transformer/pipeline_parallel_layer_layout.py:40-46",
       RuleStage::kMesh, StagesPp, StagesPpMsg, kNoDp},
      {"mb_pp_layout_vpp", "MCore transformer/transformer_config.py:2275-2287", RuleStage::kMesh, Vpp, VppMsg, kNoDp},
      {"mb_pp_layout_embedding_first", "MCore transformer/pipeline_parallel_layer_layout.py:94-105", RuleStage::kMesh,
       Embedding, EmbeddingMsg, kNoDp},
      {"mb_pp_layout_loss_last", "MCore transformer/pipeline_parallel_layer_layout.py:98-106", RuleStage::kMesh, Loss,
       LossMsg, kNoDp},
      {"mb_pp_layout_num_layers", "MCore transformer/pipeline_parallel_layer_layout.py:107-110", RuleStage::kMesh,
       NumLayers, NumLayersMsg, kNoDp},
      {"mb_pp_layout_mtp_count", "MCore transformer/pipeline_parallel_layer_layout.py:111-114", RuleStage::kMesh,
       MtpCount, MtpCountMsg, kNoDp},
      {"mb_pp_layout_mtp_placement", "MCore transformer/pipeline_parallel_layer_layout.py:115-136", RuleStage::kMesh,
       MtpPlacement, MtpPlacementMsg, kNoDp},
      {"mb_pp_layout_no_encoder", "MCore transformer/pipeline_parallel_layer_layout.py:147-149", RuleStage::kMesh,
       NoEncoder, NoEncoderMsg, kNoDp},
  };
  return kLayoutRules;
}

}  // namespace meshplan::rules
