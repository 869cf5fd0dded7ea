// Reading a Megatron-Bridge override YAML (ConfigContainer sections) into a Layout.
// Keys: megatron.md 1.2-1.6 (MCore ModelParallelConfig / TransformerConfig /
// DistributedDataParallelConfig, MB DistributedInitConfig, CommOverlapConfig, CheckpointConfig).
#include <algorithm>
#include <cctype>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "data/yaml_util.hpp"
#include "recipe/key_places.hpp"
#include "frameworks/megatron_bridge/perf_settings.hpp"
#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "meshplan/recipe.hpp"

namespace meshplan {
namespace {

using yamlutil::MapReader;

constexpr const char* kSections[] = {"model", "train", "ddp", "dist", "optimizer", "comm_overlap", "checkpoint"};

// Python's None in an override file is YAML null (null, ~ or no value): absent or null reads as
// unset. Megatron-Bridge loads override files with OmegaConf.load, a PyYAML SafeLoader, which
// reads `none` and `None` as the strings "none" / "None" and hands them to the config field as
// they are (training/utils/omegaconf_utils.py, process_config_with_overrides and
// _apply_overrides); Megatron-Core refuses them where it checks the value (recompute_granularity:
// transformer_config.py:1901-1906 raises ValueError). So they are values here, checked like any
// other, not None. (AutoModel differs: its loader turns "none" / "None" into None.)
bool IsNull(MapReader& r, const char* key) { return !r.HasValue(key); }

// "found 'v'", and for the string none / None, that it is not null.
std::string Found(const std::string& v) {
  return "found '" + v + "'" +
         (v == "none" || v == "None" ? " (a string, not None: Megatron-Bridge's YAML loader reads it as the string; "
                                       "write null)"
                                     : "");
}

int64_t Size(MapReader& r, const char* key, int64_t fallback) {
  if (IsNull(r, key)) {
    r.Ignore({key});
    return fallback;
  }
  return r.Int(key, 1, 1LL << 20);
}

Tri TriKey(MapReader& r, const char* key) {
  if (IsNull(r, key)) {
    r.Ignore({key});
    return Tri::kUnset;
  }
  return r.Bool(key) ? Tri::kTrue : Tri::kFalse;
}

void Merge(Tri& into, Tri v) {
  if (v != Tri::kUnset) into = v;
}

// A section as a reader; an absent section reads as an empty map. Integers must be written as
// integers (MapReader::Int): OmegaConf reads 4.0 as a float and "4" as a string, and
// _apply_overrides sets either on the config as it is (omegaconf_utils.py:454-515), where
// Megatron-Core fails on it. Only env_vars takes strings (ConfigContainer.env_vars:
// dict[str, str | int | float | bool], exported with str(value): config.py:965, 1984-1989).
MapReader Section(MapReader& top, const char* name, const std::string& filename,
                  yamlutil::QuotedScalars quoted = yamlutil::QuotedScalars::kRefused) {
  if (!top.HasValue(name)) return MapReader(YAML::Node(YAML::NodeType::Map), filename, name, quoted);
  YAML::Node n = top.Get(name);
  if (!n.IsMap()) top.Fail(name, "expected a map of overrides, found " + yamlutil::Shown(n));
  return MapReader(n, filename, name, quoted);
}

/// The mixed-precision recipes Megatron-Bridge registers (training/mixed_precision.py,
/// MIXED_PRECISION_RECIPES; megatron.md 1.7), each under its function name; hyphens may
/// replace the underscores (get_mixed_precision_config). fp16 GEMMs are priced as bf16.
constexpr std::pair<const char*, Precision> kMixedPrecisionRecipes[] = {
    {"bf16_mixed", Precision::kBf16},
    {"fp16_mixed", Precision::kBf16},
    {"bf16_with_fp8_delayed_scaling_mixed", Precision::kFp8},
    {"fp16_with_fp8_delayed_scaling_mixed", Precision::kFp8},
    {"bf16_with_fp8_current_scaling_mixed", Precision::kFp8},
    {"fp16_with_fp8_current_scaling_mixed", Precision::kFp8},
    {"nemotron_h_bf16_with_fp8_current_scaling_mixed", Precision::kFp8},
    {"nanov2_bf16_with_fp8_current_scaling_mixed", Precision::kFp8},
    {"bf16_with_fp8_subchannel_scaling_mixed", Precision::kFp8},
    {"fp16_with_fp8_subchannel_scaling_mixed", Precision::kFp8},
    {"bf16_with_mxfp8_mixed", Precision::kFp8},
    {"fp16_with_mxfp8_mixed", Precision::kFp8},
    {"bf16_with_nvfp4_mixed", Precision::kFp4},
    {"nemotron_3_super_bf16_with_nvfp4_mixed", Precision::kFp4},
};

/// The GEMM precision of the recipe named by top-level mixed_precision; any other value is
/// refused (Megatron-Bridge raises "Unknown mixed-precision recipe" for it).
Precision MixedPrecisionRecipe(MapReader& top) {
  const YAML::Node n = top.Get("mixed_precision");
  std::string name = n.IsScalar() ? n.Scalar() : "";
  std::replace(name.begin(), name.end(), '-', '_');
  std::vector<std::string> names;
  for (const auto& [known, precision] : kMixedPrecisionRecipes) {
    if (n.IsScalar() && name == known) return precision;
    names.emplace_back(known);
  }
  std::string expected = "expected a mixed-precision recipe Megatron-Bridge registers (";
  for (size_t i = 0; i < names.size(); ++i) expected += (i ? ", " : "") + names[i];
  expected += ") or a MixedPrecisionConfig map, found ";
  if (!n.IsScalar()) top.Fail("mixed_precision", expected + "a list");
  const std::string hint = yamlutil::DidYouMean(name, names);
  top.Fail("mixed_precision",
           expected + "'" + n.Scalar() + "'" + (hint.empty() ? std::string() : "; did you mean '" + hint + "'?"));
}

/// MixedPrecisionConfig's fields other than those ReadMixedPrecisionMap reads
/// (training/mixed_precision.py:33-75; the same from v0.2.0 to main, fp4_param and
/// fp4_param_gather since v0.5.0). meshplan does not price them (fp32 has no counterpart in the
/// configs setup() copies to, so it changes nothing).
constexpr const char* kMixedPrecisionUnpriced[] = {
    "fp32", "params_dtype", "pipeline_dtype", "autocast_dtype", "autocast_enabled", "first_last_layers_bf16",
    "fp8_margin", "fp8_amax_history_len", "fp8_amax_compute_algo", "fp8_wgrad", "fp8_dot_product_attention",
    "fp8_multi_head_attention", "fp8_param", "fp8_param_gather", "fp4_param", "fp4_param_gather", "loss_scale",
    "initial_loss_scale", "min_loss_scale", "loss_scale_window", "hysteresis", "num_layers_at_start_in_bf16",
    "num_layers_at_end_in_bf16", "reuse_grad_buf_for_mxfp8_param_ag"};

// `key` as one of `allowed`, or "" when null or absent.
std::string Choice(MapReader& r, const char* key, std::initializer_list<const char*> allowed) {
  if (IsNull(r, key)) return "";
  const std::string v = r.Str(key);
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  r.Fail(key, "expected " + list + " or null; " + Found(v));
}

/// A mixed_precision map: Megatron-Bridge sets its keys on the recipe's MixedPrecisionConfig
/// (omegaconf_utils.py _apply_overrides), or, with _target_ MixedPrecisionConfig, builds one of
/// them alone. The GEMM precision is what fp8 / fp4 select (Megatron-Core transformer_config.py:
/// fp8 e4m3 | hybrid at 587 with fp8_recipe tensorwise | delayed | mxfp8 | blockwise | custom at
/// 594, priced as FP8 as the registered fp8 and mxfp8 recipes are; fp4 e2m1 at 673 with
/// fp4_recipe nvfp4 | custom at 679, FP4); bf16 / fp16 GEMMs are priced as bf16. A key that is
/// not a field is refused: Megatron-Bridge skips it with only a logged warning, so a misspelt
/// fp8_recipe would quietly keep the recipe's own.
void ReadMixedPrecisionMap(MapReader& r, ParsedRecipe& out) {
  bool whole = false;
  if (r.Has("_target_")) {
    const std::string target = r.Str("_target_");
    if (target != "megatron.bridge.training.mixed_precision.MixedPrecisionConfig") {
      r.Fail("_target_", "expected megatron.bridge.training.mixed_precision.MixedPrecisionConfig (or no _target_: the "
                         "keys then apply to the recipe's mixed-precision config); found '" + target + "'");
    }
    whole = true;
  }
  const std::string fp8 = Choice(r, "fp8", {"e4m3", "hybrid"});
  const std::string fp8_recipe = Choice(r, "fp8_recipe", {"tensorwise", "delayed", "mxfp8", "blockwise", "custom"});
  if (!fp8_recipe.empty()) {
    out.layout.mb.fp8_recipe = fp8_recipe == "mxfp8" ? MbFp8Recipe::kMxfp8 : MbFp8Recipe::kPerTensor;
  }
  const std::string fp4 = Choice(r, "fp4", {"e2m1"});
  Choice(r, "fp4_recipe", {"nvfp4", "custom"});
  r.Bool("bf16", false);
  r.Bool("fp16", false);
  if (!fp8.empty() && !fp4.empty()) {
    // MixedPrecisionConfig.finalize: "fp4 and fp8 cannot be used simultaneously" (mixed_precision.py:107-108).
    r.Fail("fp4", "expected fp8 or fp4, not both (Megatron-Bridge raises: fp4 and fp8 cannot be used "
                  "simultaneously); found fp8: " + fp8 + " and fp4: " + fp4);
  }
  if (!fp8.empty() || !fp4.empty() || whole || (r.Has("fp8") && r.Has("fp4"))) {
    out.precision = !fp4.empty() ? Precision::kFp4 : !fp8.empty() ? Precision::kFp8 : Precision::kBf16;
    out.precision_set = true;
  } else {
    out.defaults_used.push_back(
        "mixed_precision.fp8 / fp4 = the recipe's own (the map sets neither, and Megatron-Bridge applies it over the "
        "recipe's mixed-precision config): priced as bf16 unless --precision says otherwise; fp8: e4m3 or hybrid "
        "prices FP8, fp4: e2m1 FP4");
  }
  for (const char* k : kMixedPrecisionUnpriced) r.Ignore({k});
}

// What PyYAML's SafeLoader, under OmegaConf.load's resolvers (YAML 1.1 booleans and integers,
// YAML 1.2-style floats, no timestamps), makes of a plain scalar that is not null: "an
// integer", "a number", "a boolean", or "" for a string (also for any quoted scalar).
std::string PlainScalarType(const YAML::Node& n) {
  if (!n.IsScalar() || n.Tag() != "?") return "";
  static const std::regex kBool("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF");
  static const std::regex kInt(
      R"([-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)");
  static const std::regex kFloat(
      R"([-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))");
  const std::string& v = n.Scalar();
  if (std::regex_match(v, kBool)) return "a boolean";
  if (std::regex_match(v, kInt)) return "an integer";
  if (std::regex_match(v, kFloat)) return "a number";
  return "";
}

std::string Shorten(const std::string& s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; }

constexpr const char* kLayoutKey = "pipeline_model_parallel_layout";

/// model.pipeline_model_parallel_layout, read as Megatron-Core reads it (TransformerConfig.
/// __post_init__, transformer_config.py:2261-2273, into PipelineParallelLayerLayout,
/// pipeline_parallel_layer_layout.py:25-84): a string of the grammar of ParsePpLayoutString,
/// or a list of lists (one per stage) of layer names, each str.strip().lower()'d and a
/// LayerType name: embedding, decoder, mtp, loss or encoder (lines 35-38 and 57-73; "E" or "t"
/// are not names there, whatever the TransformerConfig docstring says). Anything else reaches
/// Megatron-Core as a value it cannot use (an int has no virtual_pipeline_model_parallel_size:
/// transformer_config.py:2276-2278 raises) and is an InputError here, as is a string outside the
/// grammar. What a well-formed layout must satisfy is left to the mb_pp_layout_ rules.
std::shared_ptr<PpLayerLayout> ReadPpLayout(MapReader& m) {
  auto out = std::make_shared<PpLayerLayout>();
  const YAML::Node n = m.Get(kLayoutKey);
  const std::string field = m.Field(kLayoutKey);
  const char* expected_list =
      "expected a layout string (\"Ett|tt|tL\") or a list of stages, each a list of layer names (embedding, "
      "decoder, mtp, loss)";
  if (n.IsScalar()) {
    if (const std::string type = PlainScalarType(n); !type.empty()) {
      m.Fail(kLayoutKey, std::string(expected_list) + "; found " + type + ", " + n.Scalar() +
                             " (quote a layout string: \"...\")");
    }
    const PpLayoutParse p = ParsePpLayoutString(n.Scalar());
    if (!p.ok) m.Fail(kLayoutKey, p.error + "; the layout is \"" + Shorten(n.Scalar()) + "\"");
    out->stages = p.stages;
    out->written = "\"" + n.Scalar() + "\"";
  } else if (n.IsSequence()) {
    out->written = "[";
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node row = n[i];
      const std::string row_field = field + "[" + std::to_string(i) + "]";
      if (!row.IsSequence()) {
        // pipeline_parallel_layer_layout.py:35-38: "must be a list of lists".
        throw InputError(yamlutil::LocOf(row, m.filename()), row_field,
                         std::string(expected_list) + "; found " +
                             (row.IsMap() ? std::string("a map") : row.IsNull() ? std::string("null")
                                                                   : "'" + Shorten(row.Scalar()) + "'") +
                             " as stage " + std::to_string(i) + " (every stage is a list, [] when empty)");
      }
      out->stages.emplace_back();
      out->written += std::string(i ? ", " : "") + "[";
      for (size_t j = 0; j < row.size(); ++j) {
        const YAML::Node e = row[j];
        const std::string e_field = row_field + "[" + std::to_string(j) + "]";
        std::string found;
        if (!e.IsScalar()) found = e.IsMap() ? "a map" : e.IsSequence() ? "a list" : "null";
        else if (const std::string type = PlainScalarType(e); !type.empty()) found = type + ", " + e.Scalar();
        // layer_type.strip().lower() in LayerType.__members__ (lines 62-71).
        std::string name = found.empty() ? e.Scalar() : "";
        const size_t b = name.find_first_not_of(" \t\n\r\v\f"), z = name.find_last_not_of(" \t\n\r\v\f");
        name = b == std::string::npos ? "" : name.substr(b, z - b + 1);
        for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        char symbol = 0;
        if (found.empty()) {
          symbol = name == "embedding" ? 'E' : name == "decoder" ? 't' : name == "mtp" ? 'm' : name == "loss" ? 'L'
                   : name == "encoder" ? 'c' : 0;
          if (symbol == 0) found = "'" + Shorten(e.Scalar()) + "'";
        }
        if (symbol == 0) {
          throw InputError(yamlutil::LocOf(e, m.filename()), e_field,
                           "expected a Megatron-Core LayerType name: embedding, decoder, mtp, loss (or encoder, which "
                           "Megatron-Core does not support here); found " + found);
        }
        out->stages.back() += symbol;
        out->written += std::string(j ? ", " : "") + name;
      }
      out->written += "]";
    }
    out->written += "]";
  } else {
    m.Fail(kLayoutKey, std::string(expected_list) + "; found a map");
  }
  out->where = FormatLoc(m.Loc(kLayoutKey));
  return out;
}

void ReadModel(MapReader& m, ParsedRecipe& out) {
  Layout& l = out.layout;
  l.tp = Size(m, "tensor_model_parallel_size", 1);
  l.pp = Size(m, "pipeline_model_parallel_size", 1);
  l.vpp = Size(m, "virtual_pipeline_model_parallel_size", 1);
  l.cp = Size(m, "context_parallel_size", 1);
  l.ep = Size(m, "expert_model_parallel_size", 1);
  l.etp = Size(m, "expert_tensor_parallel_size", 0);
  l.sequence_parallel = m.Bool("sequence_parallel", false);
  // Absent: the recipe's mixed-precision config sets it (MixedPrecisionConfig.setup); null: unset.
  l.mb.pipeline_dtype_set = !m.Has("pipeline_dtype") || !IsNull(m, "pipeline_dtype");
  m.Ignore({"pipeline_dtype"});
  // model.mtp_num_layers (null or 0: none); unset, the model provider's value applies
  // (AutoBridge: num_nextn_predict_layers), resolved by ParseMegatronRecipe when it is given the model.
  l.mtp_layers = !m.Has("mtp_num_layers")       ? kMtpFromModel
                 : IsNull(m, "mtp_num_layers") ? 0
                                               : m.Int("mtp_num_layers", 0, 64);
  const bool emb = m.Bool("account_for_embedding_in_pipeline_split", false);
  const bool loss = m.Bool("account_for_loss_in_pipeline_split", false);
  if (!IsNull(m, kLayoutKey)) {
    // An explicit layout (Megatron-Core reads it whenever it is not None, whatever PP is).
    l.pp_split = MbPpSplit::kLayout;
    std::shared_ptr<PpLayerLayout> p = ReadPpLayout(m);
    // transformer_config.py:2245-2259: no other pipeline-split setting beside it (mb_pp_layout_alone).
    if (emb) p->other_split_keys.push_back("account_for_embedding_in_pipeline_split: true");
    if (loss) p->other_split_keys.push_back("account_for_loss_in_pipeline_split: true");
    for (const char* k : {"num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"}) {
      if (!IsNull(m, k)) p->other_split_keys.push_back(std::string(k) + ": " + m.Get(k).Scalar());
      m.Ignore({k});
    }
    // validate_layer_layout(num_layers, mtp_num_layers) (transformer_config.py:2290-2292) with
    // the recipe's mtp_num_layers; unset, the model provider's applies (mb_pp_layout_mtp).
    if (l.mtp_layers != kMtpFromModel) p->mtp_num_layers = l.mtp_layers;
    // transformer_config.py:2279-2287: VPP None takes the layout's stages / PP when above 1; a
    // VPP given must equal it (mb_pp_layout_vpp).
    const int64_t stages = int64_t(p->stages.size());
    if (IsNull(m, "virtual_pipeline_model_parallel_size") && stages % l.pp == 0 && stages / l.pp > 1) {
      l.vpp = stages / l.pp;
    }
    l.pp_layout = std::move(p);
  } else {
    if (emb != loss) {
      m.Fail(emb ? "account_for_loss_in_pipeline_split" : "account_for_embedding_in_pipeline_split",
             "meshplan models account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split together; "
             "set both");
    }
    if (emb) l.pp_split = MbPpSplit::kAccountEmbeddingLoss;
  }
  m.Ignore({kLayoutKey});
  if (!IsNull(m, "recompute_granularity")) {
    const std::string g = m.Str("recompute_granularity");
    if (g == "full") {
      l.recompute = Recompute::kFull;
    } else if (g == "selective") {
      l.recompute = Recompute::kSelective;
    } else {
      // Megatron-Core: None, "full" or "selective" (transformer_config.py:532, checked at 1901-1906).
      m.Fail("recompute_granularity", "expected full, selective or null (no recompute); " + Found(g));
    }
  }
  m.Ignore({"recompute_granularity"});
  // Megatron-Core's selective recompute modules and CUDA graphs, priced by the time model.
  if (!IsNull(m, "recompute_modules")) {
    l.mb.recompute_modules = recipe::ReadRecomputeModules(m, "recompute_modules");
    if (l.recompute == Recompute::kSelective && l.mb.recompute_modules == 0) l.recompute = Recompute::kNone;
  }
  if (!IsNull(m, "cuda_graph_impl")) {
    l.mb.cuda_graph_scope = IsNull(m, "cuda_graph_scope") ? 0u : recipe::ReadCudaGraphScope(m, "cuda_graph_scope");
    // Megatron-Core main (transformer_config.py:1075, :2795) spells the whole-iteration graph
    // cuda_graph_impl: full_iteration, its modules list empty; releases up to core 0.15 spell
    // it local + cuda_graph_scope [full_iteration] (still migrated by main). Both are read.
    const uint32_t modules = l.mb.cuda_graph_scope & ~kGraphFullIteration;  // scopes other than the iteration
    l.mb.cuda_graph = recipe::ReadCudaGraphImpl(m, "cuda_graph_impl", l.mb.cuda_graph_scope,
                                                /*full_iteration_spelling=*/true);
    if (l.mb.cuda_graph == MbCudaGraph::kFullIteration && modules != 0) {
      m.Fail("cuda_graph_scope", "expected an empty list with cuda_graph_impl: full_iteration (Megatron-Core: "
                                 "'cuda_graph_modules must be empty'), found a module scope");
    }
    // Megatron-Core: the scope has no effect with cuda_graph_impl "none" (transformer_config.py).
    if (l.mb.cuda_graph == MbCudaGraph::kNone) l.mb.cuda_graph_scope = 0;
  }
  m.Ignore({"cuda_graph_scope"});
  if (!IsNull(m, "cpu_offloading_num_layers")) {
    l.mb.cpu_offloading_num_layers = m.Int("cpu_offloading_num_layers", 0, 1 << 20);
  }
  if (!IsNull(m, "recompute_method")) {
    const std::string v = m.Str("recompute_method");
    if (v != "uniform" && v != "block") m.Fail("recompute_method", "expected uniform, block or null; " + Found(v));
    l.mb.recompute_method = v == "block" ? MbRecomputeMethod::kBlock : MbRecomputeMethod::kUniform;
  }
  m.Ignore({"recompute_method"});
  l.mb.recompute_num_layers = IsNull(m, "recompute_num_layers") ? 0 : m.Int("recompute_num_layers", 1, 1LL << 20);
  if (!IsNull(m, "moe_token_dispatcher_type")) {
    const std::string d = m.Str("moe_token_dispatcher_type");
    if (d != "allgather" && d != "alltoall" && d != "flex") {
      m.Fail("moe_token_dispatcher_type", "expected allgather, alltoall or flex; " + Found(d));
    }
    l.mb.token_dispatcher = d == "flex" ? MbDispatcher::kFlex : d == "alltoall" ? MbDispatcher::kAlltoall
                                                                                 : MbDispatcher::kAllgather;
  }
  // model.cp_comm_type: one string for every layer (Megatron-Core also takes a list per layer,
  // which meshplan does not price), as Transformer Engine spells the types (DotProductAttention).
  if (!IsNull(m, "cp_comm_type")) {
    if (m.Get("cp_comm_type").IsSequence()) {
      m.Fail("cp_comm_type", "a list of one type per layer is not priced by meshplan; expected one of p2p, all_gather, "
                             "a2a, a2a+p2p");
    }
    const std::string t = m.Str("cp_comm_type");
    if (t != "p2p" && t != "all_gather" && t != "a2a" && t != "a2a+p2p") {
      m.Fail("cp_comm_type", "expected p2p, all_gather, a2a or a2a+p2p (Transformer Engine DotProductAttention "
                             "cp_comm_type); " + Found(t));
    }
    l.mb.cp_comm = t == "all_gather" ? MbCpComm::kAllGather
                   : t == "a2a"      ? MbCpComm::kA2a
                   : t == "a2a+p2p"  ? MbCpComm::kA2aP2p
                                     : MbCpComm::kP2p;
  }
  if (!IsNull(m, "hierarchical_context_parallel_sizes")) {
    YAML::Node v = m.Get("hierarchical_context_parallel_sizes");
    if (v.IsScalar()) {
      try {
        v = YAML::Load(v.as<std::string>());
      } catch (const YAML::Exception&) {
      }
    }
    if (!v.IsSequence() || v.size() == 0) {
      m.Fail("hierarchical_context_parallel_sizes", "expected a list of positive sizes, e.g. [8, 2]");
    }
    int64_t product = 1, first = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t x = 0;
      try {
        x = v[i].as<int64_t>();
      } catch (const YAML::Exception&) {
        x = 0;
      }
      if (x < 1 || x > (1 << 20)) {
        m.Fail("hierarchical_context_parallel_sizes", "expected a list of positive sizes, e.g. [8, 2]; entry " +
                                                          std::to_string(i) + " is not one");
      }
      if (i == 0) first = x;
      product = std::min<int64_t>(product * x, int64_t{1} << 40);
    }
    l.mb.hcp_levels = static_cast<int64_t>(v.size());
    l.mb.hcp_first = first;
    l.mb.hcp_product = product;
  }
  if (!IsNull(m, "moe_flex_dispatcher_backend")) {
    const std::string b = m.Str("moe_flex_dispatcher_backend");
    if (b != "deepep" && b != "hybridep" && b != "ncclep") {
      m.Fail("moe_flex_dispatcher_backend", "expected deepep, hybridep or ncclep (Megatron-Core TransformerConfig); " + Found(b));
    }
    l.mb.flex_backend = b == "hybridep" ? MbFlexBackend::kHybridEP : MbFlexBackend::kDeepEP;
  }
  if (l.mb.token_dispatcher != MbDispatcher::kFlex) l.mb.flex_backend = MbFlexBackend::kNone;
  // Token drop with padding (MoEAlltoAllTokenDispatcher drop_and_pad): padding needs a capacity
  // factor (Megatron-Core TransformerConfig asserts it); a negative factor is unset.
  {
    const bool pad = m.Bool("moe_pad_expert_input_to_capacity", false);
    const bool factor = !IsNull(m, "moe_expert_capacity_factor") && m.Num("moe_expert_capacity_factor", -1e9, 1e9) >= 0.0;
    l.mb.moe_pad_to_capacity = pad && factor;
  }
  l.mb.cpu_offloading = m.Bool("cpu_offloading", false);
  // The loss kernel (Megatron-Core language_module.py compute_language_model_loss): fusion on
  // (GPTModelProvider default) with impl te (TE parallel_cross_entropy) or native
  // (model_parallel_config.py default).
  {
    // null is Python's None: the loss runs unfused (language_module.py tests the flag's truth).
    const bool fusion = m.Has("cross_entropy_loss_fusion") && !m.HasValue("cross_entropy_loss_fusion")
                            ? false
                            : m.Bool("cross_entropy_loss_fusion", true);
    std::string impl = "native";
    if (m.HasValue("cross_entropy_fusion_impl")) impl = m.Str("cross_entropy_fusion_impl");
    if (impl != "native" && impl != "te") {
      m.Fail("cross_entropy_fusion_impl", "expected native or te (Megatron-Core ModelParallelConfig); " + Found(impl));
    }
    l.mb.te_cross_entropy = fusion && impl == "te";
  }
  if (m.HasValue("transformer_impl")) l.mb.transformer_engine = m.Str("transformer_impl") == "transformer_engine";
  Merge(l.mb.overlap_p2p_comm, TriKey(m, "overlap_p2p_comm"));
  Merge(l.mb.batch_p2p_comm, TriKey(m, "batch_p2p_comm"));
  Merge(l.mb.tp_comm_overlap, TriKey(m, "tp_comm_overlap"));
  l.mb.grad_acc_fusion = TriKey(m, "gradient_accumulation_fusion");
  out.seq_len = IsNull(m, "seq_length") ? 0 : m.Int("seq_length", 1, 1LL << 24);
}

void ReadDdp(MapReader& d, MapReader& opt, Layout& l) {
  // MB recipes/common.py::_pretrain_common turns the distributed optimizer on; MB config.py:2101
  // makes ddp. and optimizer. agree (either True makes both True).
  const Tri a = TriKey(d, "use_distributed_optimizer"), b = TriKey(opt, "use_distributed_optimizer");
  l.use_distributed_optimizer = (a == Tri::kUnset && b == Tri::kUnset) || a == Tri::kTrue || b == Tri::kTrue;
  l.mb.use_megatron_fsdp = d.Bool("use_megatron_fsdp", false);
  if (!IsNull(d, "data_parallel_sharding_strategy")) {
    const std::string s = d.Str("data_parallel_sharding_strategy");
    bool known = false;
    for (MbSharding v : {MbSharding::kNoShard, MbSharding::kOptim, MbSharding::kOptimGrads, MbSharding::kOptimGradsParams}) {
      if (s != MbShardingName(v)) continue;
      l.mb.sharding = v;
      known = true;
    }
    if (!known) {
      d.Fail("data_parallel_sharding_strategy", "expected no_shard, optim, optim_grads or optim_grads_params; " + Found(s));
    }
  }
  d.Ignore({"data_parallel_sharding_strategy"});
  l.mb.average_in_collective = TriKey(d, "average_in_collective");
  l.mb.overlap_grad_reduce = TriKey(d, "overlap_grad_reduce");
  l.mb.overlap_param_gather = TriKey(d, "overlap_param_gather");
  Merge(l.mb.overlap_param_gather, TriKey(opt, "overlap_param_gather"));
  if (!IsNull(d, "bucket_size")) l.mb.bucket_size = d.Int("bucket_size", 1, 1LL << 40);
  l.mb.num_distributed_optimizer_instances = d.Int("num_distributed_optimizer_instances", 1, 1LL << 20, 1);
}

void ReadCommOverlap(MapReader& c, Layout& l) {
  Merge(l.mb.tp_comm_overlap, TriKey(c, "tp_comm_overlap"));
  Merge(l.mb.overlap_p2p_comm, TriKey(c, "overlap_p2p_comm"));
  Merge(l.mb.batch_p2p_comm, TriKey(c, "batch_p2p_comm"));
  Merge(l.mb.overlap_grad_reduce, TriKey(c, "overlap_grad_reduce"));
  Merge(l.mb.overlap_param_gather, TriKey(c, "overlap_param_gather"));
  l.mb.ep_a2a_overlap = TriKey(c, "overlap_moe_expert_parallel_comm");
  if (!IsNull(c, "bucket_size")) l.mb.bucket_size = c.Int("bucket_size", 1, 1LL << 40);
}

// The keys this reader reads, under the ConfigContainer sections whose configs have them (the
// dataclass fields of Megatron-Bridge main and Megatron-Core main of 2026-08-22: GPTModelProvider
// / TransformerConfig / ModelParallelConfig, TrainingConfig, DistributedDataParallelConfig,
// OptimizerConfig, DistributedInitConfig, CommOverlapConfig, CheckpointConfig,
// MixedPrecisionConfig). In any other section _apply_overrides skips them (omegaconf_utils.py:
// `if not hasattr(config_obj, key)`: a logged warning), and so does ConfigContainer at the top level.
const std::vector<recipe::KeyPlace>& KeyPlaces() {
  static const std::vector<recipe::KeyPlace> places = [] {
    std::vector<recipe::KeyPlace> p;
    for (const char* k :
         {"tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
          "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size", "sequence_parallel",
          "mtp_num_layers", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
          kLayoutKey, "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage",
          "recompute_granularity", "recompute_modules", "cuda_graph_impl", "cuda_graph_scope",
          "cpu_offloading_num_layers", "recompute_method", "recompute_num_layers", "moe_token_dispatcher_type",
          "moe_flex_dispatcher_backend", "moe_pad_expert_input_to_capacity", "moe_expert_capacity_factor",
          "cpu_offloading", "transformer_impl", "gradient_accumulation_fusion", "cross_entropy_loss_fusion",
          "cross_entropy_fusion_impl", "cp_comm_type", "hierarchical_context_parallel_sizes"}) {
      p.push_back({k, {"model"}});
    }
    p.push_back({"seq_length", {"model", "dataset"}});  // both, equal (ConfigContainer.validate)
    p.push_back({"pipeline_dtype", {"model", "mixed_precision"}});
    for (const char* k : {"overlap_p2p_comm", "batch_p2p_comm", "tp_comm_overlap"}) {
      p.push_back({k, {"model", "comm_overlap"}});
    }
    p.push_back({"overlap_moe_expert_parallel_comm", {"comm_overlap", "model"}});
    for (const char* k : {"global_batch_size", "micro_batch_size"}) p.push_back({k, {"train"}});
    for (const char* k : {"data_parallel_sharding_strategy", "average_in_collective", "num_distributed_optimizer_instances"}) {
      p.push_back({k, {"ddp"}});
    }
    p.push_back({"grad_reduce_in_fp32", {"ddp", "mixed_precision"}});
    p.push_back({"use_distributed_optimizer", {"ddp", "optimizer"}});
    p.push_back({"use_megatron_fsdp", {"ddp", "dist"}});
    p.push_back({"overlap_grad_reduce", {"ddp", "comm_overlap"}});
    p.push_back({"overlap_param_gather", {"ddp", "optimizer", "comm_overlap"}});
    p.push_back({"bucket_size", {"ddp", "comm_overlap"}});
    for (const char* k : {"use_torch_fsdp2", "use_tp_pp_dp_mapping"}) p.push_back({k, {"dist"}});
    for (const char* k : {"ckpt_format", "save", "load"}) p.push_back({k, {"checkpoint"}});
    p.push_back({"CUDA_DEVICE_MAX_CONNECTIONS", {"env_vars"}});
    return p;
  }();
  return places;
}

// The recipe function the overrides are for: `asked` (check --mb-recipe), else the
// "# recipe function: NAME" header meshplan writes; nullptr for neither. An unknown asked name
// is refused; an unknown header name is ignored (a recipe written for a function the table lacks).
const megatron_bridge::RecipeFunction* RecipeFunctionFor(std::string_view text, std::string_view asked,
                                                         std::string* unknown_header) {
  if (!asked.empty()) {
    const auto* fn = megatron_bridge::FindRecipeFunction(asked);
    if (fn == nullptr) {
      const std::vector<std::string> known = megatron_bridge::RecipeFunctionNames();
      const std::string hint = yamlutil::DidYouMean(std::string(asked), known);
      throw InputError(SourceLoc{"<command line>", 0, 0}, "--mb-recipe",
                       "expected a recipe function of recipes/megatron-bridge-recipe-functions.json (" +
                           std::to_string(known.size()) + " of them, e.g. llama31_70b_pretrain_config), found '" +
                           std::string(asked) + "'" + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    return fn;
  }
  constexpr std::string_view kHeader = "# recipe function: ";
  bool in_header = false;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    // The header: the leading comment lines, after the blank lines and the "---" that start a
    // document of a multi-document file (plan --out writes one per recipe, each with its own
    // header; SplitDocuments pads a document with blank lines to keep its line numbers).
    if (!in_header && (line.empty() || line == "---" || line.rfind("--- ", 0) == 0)) {
      pos = end + 1;
      continue;
    }
    if (line.empty() || line.front() != '#') break;
    in_header = true;
    if (line.rfind(kHeader, 0) == 0) {
      const std::string_view rest = line.substr(kHeader.size());
      // "NAME (its override paths ...)" or, for a function the table lacks, "NAME, not in ...".
      const std::string_view name = rest.substr(0, rest.find_first_of(" ,"));
      const auto* fn = megatron_bridge::FindRecipeFunction(name);
      if (fn == nullptr) *unknown_header = std::string(name);
      return fn;
    }
    pos = end + 1;
  }
  return nullptr;
}

// The value of a scalar as SchemaProblem compares it: null, true / false, a number or a string.
std::string SchemaValue(const YAML::Node& n) {
  if (!n || n.IsNull()) return "null";
  if (n.IsSequence()) return "[";
  if (!n.IsScalar()) return "";
  const std::string& s = n.Scalar();
  if (n.Tag() != "!" ) {
    long long i;
    double d;
    bool b;
    if (YAML::convert<long long>::decode(n, i) || YAML::convert<double>::decode(n, d)) return "0";
    if (YAML::convert<bool>::decode(n, b)) return b ? "true" : "false";
  }
  return s.empty() ? "\"\"" : "\"" + s + "\"";
}

// Every key of the ConfigContainer sections must be a field of `fn`'s config at its path:
// Megatron-Bridge's Hydra overrides refuse the others ("Could not override ..."), and a key
// of the Llama recipes' nested TransformerConfig written flat is the commonest.
void RefuseOffSchema(const YAML::Node& root, const megatron_bridge::RecipeFunction& fn, const std::string& filename) {
  auto fail = [&](const YAML::Node& key, const std::string& path, const std::string& why) {
    std::string fix;
    const std::string moved = megatron_bridge::OverridePath(&fn, path);
    if (moved != path) fix = "; write it as " + moved;
    throw InputError(SourceLoc{filename, key.Mark().line + 1, key.Mark().column + 1}, path,
                     why + " (Megatron-Bridge's Hydra overrides refuse it: \"Could not override\")" + fix);
  };
  for (const char* section : {"model", "train", "dataset", "ddp", "optimizer", "dist", "comm_overlap", "checkpoint"}) {
    const YAML::Node sec = root[section];
    if (!sec || !sec.IsMap()) continue;
    for (const auto& kv : sec) {
      const std::string key = kv.first.Scalar();
      if (std::string(section) == "model" && key == "transformer" && kv.second.IsMap()) {
        for (const auto& inner : kv.second) {
          const std::string path = "model.transformer." + inner.first.Scalar();
          if (const std::string p = megatron_bridge::SchemaProblem(fn, path, SchemaValue(inner.second)); !p.empty()) {
            fail(inner.first, path, p);
          }
        }
        continue;
      }
      const std::string path = std::string(section) + "." + key;
      if (const std::string p = megatron_bridge::SchemaProblem(fn, path, SchemaValue(kv.second)); !p.empty()) {
        fail(kv.first, path, p);
      }
    }
  }
}

// The layout keys the file leaves unset take the recipe function's own values, as in a run
// (run_recipe.py applies the overrides on the function's ConfigContainer). Returns one line per
// key filled, for ParsedRecipe::defaults_used.
std::vector<std::string> FillFromFunction(YAML::Node& root, const megatron_bridge::RecipeFunction& fn) {
  static const char* const kModelKeys[] = {
      "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
      "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size", "sequence_parallel",
      "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
      "pipeline_model_parallel_layout", "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage",
      "recompute_granularity", "recompute_method", "recompute_num_layers", "recompute_modules", "cuda_graph_impl",
      "cuda_graph_scope", "moe_token_dispatcher_type", "moe_flex_dispatcher_backend", "mtp_num_layers", "seq_length",
      "cp_comm_type", "hierarchical_context_parallel_sizes"};
  std::vector<std::string> filled;
  auto to_node = [](const nlohmann::json& v) {
    if (v.is_boolean()) return YAML::Node(v.get<bool>());
    if (v.is_number_integer()) return YAML::Node(v.get<long long>());
    if (v.is_number()) return YAML::Node(v.get<double>());
    if (v.is_string()) return YAML::Node(v.get<std::string>());
    YAML::Node list(YAML::NodeType::Sequence);
    if (v.is_array()) {
      for (const auto& e : v) list.push_back(e.is_string() ? e.get<std::string>() : e.dump());
      return list;
    }
    return YAML::Node(YAML::NodeType::Null);
  };
  auto fill = [&](const char* section, const std::string& key, const nlohmann::json& v) {
    if (v.is_null() || (v.is_string() && v.get<std::string>().rfind("<", 0) == 0)) return;  // unset, or not plain
    if (!root[section]) root[section] = YAML::Node(YAML::NodeType::Map);
    YAML::Node sec = root[section];
    if (!sec.IsMap() || sec[key]) return;
    sec[key] = to_node(v);
    filled.push_back(megatron_bridge::OverridePath(&fn, std::string(section) + "." + key) + "=" +
                     (v.is_string() ? v.get<std::string>() : v.dump()));
  };
  for (const char* k : kModelKeys) {
    const nlohmann::json& v = fn.ModelValue(k);
    // A scope other than a list (Megatron-Core's "full" default) means nothing without graphs.
    if (std::string_view(k) == "cuda_graph_scope" && !v.is_array()) continue;
    fill("model", k, v);
  }
  for (const char* k : {"global_batch_size", "micro_batch_size"}) {
    const auto it = fn.values.find(std::string("train.") + k);
    if (it != fn.values.end()) fill("train", k, *it);
  }
  if (filled.empty()) return {};
  std::string line = "recipe function " + fn.name + "'s own values:";
  for (const std::string& f : filled) line += " " + f;
  return {line};
}

// A recipe function whose model config is a GPTModelConfig (the Llama 3 / 3.1 recipes) takes
// its TransformerConfig keys under model.transformer (Megatron-Bridge models/gpt/model_config.py;
// recipes/megatron-bridge-recipe-functions.json "transformer_path"): read them as model keys.
// A key under both is refused (which one Megatron-Bridge would use depends on the recipe).
YAML::Node FlattenTransformer(const YAML::Node& root, const std::string& filename) {
  const YAML::Node model = root["model"];
  if (!model || !model.IsMap()) return root;
  const YAML::Node inner = model["transformer"];
  if (!inner) return root;
  if (!inner.IsMap()) {
    throw InputError(SourceLoc{filename, inner.Mark().line + 1, inner.Mark().column + 1}, "model.transformer",
                     "expected a map of TransformerConfig overrides, found " + yamlutil::Shown(inner));
  }
  YAML::Node flat(YAML::NodeType::Map);
  for (const auto& kv : model) {
    if (kv.first.Scalar() != "transformer") flat[kv.first] = kv.second;
  }
  for (const auto& kv : inner) {
    if (model[kv.first.Scalar()]) {
      throw InputError(SourceLoc{filename, kv.first.Mark().line + 1, kv.first.Mark().column + 1},
                       "model.transformer." + kv.first.Scalar(),
                       "expected once, under model or under model.transformer, found under both");
    }
    flat[kv.first] = kv.second;
  }
  // A new root: assigning `flat` over root["model"] would alias the nodes it was built from.
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : root) out[kv.first] = kv.first.Scalar() == "model" ? flat : kv.second;
  return out;
}

// "model.tensor_model_parallel_size": a top-level key that names a ConfigContainer section and
// a field of it with a dot.
bool DottedSectionKey(const std::string& key) {
  const size_t dot = key.find('.');
  if (dot == std::string::npos || dot + 1 >= key.size()) return false;
  const std::string section = key.substr(0, dot);
  for (const char* s : kSections) {
    if (section == s) return true;
  }
  return false;
}

}  // namespace

bool IsMegatronRecipe(std::string_view text, const std::string& filename) {
  YAML::Node root = yamlutil::ParseMap(text, filename);
  if (root["distributed"] || root["step_scheduler"]) return false;
  for (const char* s : kSections) {
    if (root[s]) return true;
  }
  // Dotted keys (model.tensor_model_parallel_size: 2), the command-line form of the overrides:
  // Megatron-Bridge's, refused by ParseMegatronRecipe with how to nest them.
  for (const auto& kv : root) {
    if (DottedSectionKey(kv.first.Scalar())) return true;
  }
  return false;
}

ParsedRecipe ParseMegatronRecipe(std::string_view text, const std::string& filename, int64_t num_gpus,
                                 const ModelSpec* model_spec, std::string_view recipe_function) {
  const YAML::Node parsed = yamlutil::ParseMap(text, filename);
  std::string unknown_header;
  const megatron_bridge::RecipeFunction* fn = RecipeFunctionFor(text, recipe_function, &unknown_header);
  if (fn != nullptr) RefuseOffSchema(parsed, *fn, filename);
  YAML::Node root = FlattenTransformer(parsed, filename);
  std::vector<std::string> from_function;
  if (fn != nullptr) from_function = FillFromFunction(root, *fn);
  MapReader top(root, filename);
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (!DottedSectionKey(key)) continue;
    const size_t dot = key.find('.');
    top.Fail(key, "is a dotted override (run_recipe.py's command-line form); an override YAML nests it: " +
                      key.substr(0, dot) + ": {" + key.substr(dot + 1) + ": ...}");
  }
  // An AutoModel recipe read as Megatron-Bridge overrides would silently lose its layout.
  for (const char* automodel_key : {"distributed", "step_scheduler"}) {
    if (top.Has(automodel_key)) {
      top.Fail(automodel_key, "is an AutoModel section, not a Megatron-Bridge override; check this recipe with "
                              "--framework automodel (or without --framework)");
    }
  }
  // Before anything is read: a key in the wrong section would otherwise read as its default.
  // env_vars is not checked: every key there is an environment variable.
  recipe::RefuseMisplacedKeys(root,
                              {"", "model", "train", "ddp", "optimizer", "dist", "comm_overlap", "checkpoint",
                               "mixed_precision"},
                              KeyPlaces(), filename,
                              "Megatron-Bridge would not apply it there (it skips a key its config does not have, "
                              "with only a logged warning)");
  ParsedRecipe out;
  out.defaults_used = std::move(from_function);
  if (fn == nullptr) {
    out.defaults_used.push_back(
        (unknown_header.empty() ? std::string("no recipe function named (--mb-recipe)")
                                : "the header's recipe function '" + unknown_header + "' is not in recipes/megatron-bridge-recipe-functions.json") +
        ": key paths are not checked against one (the Llama recipes take model.transformer.*) and its own values "
        "of the keys left unset are not known");
  }
  Layout& l = out.layout;
  l.framework = Framework::kMegatronBridge;
  MapReader model = Section(top, "model", filename);
  if (!top.HasValue("model")) {
    // The recipe function's own model sizes apply in a real run; meshplan cannot know them.
    out.defaults_used.push_back(
        "model: (no section) tensor/pipeline/context/expert parallel sizes 1 and no sequence parallel "
        "(Megatron-Core defaults); a recipe function's own sizes would apply in a real run");
  }
  ReadModel(model, out);
  MapReader train = Section(top, "train", filename);
  // Absent: MB recipes/common.py::_pretrain_common defaults (GBS 32, MBS 2; megatron.md 1.8).
  // recipes/common.py::_pretrain_common: GBS 32, MBS 2 when the recipe does not say.
  if (!train.HasValue("global_batch_size")) {
    out.defaults_used.push_back("train.global_batch_size = 32 (Megatron-Bridge _pretrain_common default)");
  }
  if (!train.HasValue("micro_batch_size")) {
    out.defaults_used.push_back("train.micro_batch_size = 2 (Megatron-Bridge _pretrain_common default)");
  }
  out.global_batch = train.Int("global_batch_size", 1, 1LL << 30, 32);
  const int64_t mbs = train.Int("micro_batch_size", 1, 1LL << 20, 2);
  if (!IsNull(train, "check_weight_hash_across_dp_replicas_interval")) {
    train.Int("check_weight_hash_across_dp_replicas_interval", 1, 1LL << 40);
    l.mb.weight_hash_check = true;
  }
  // Megatron-Bridge's ConfigContainer.validate (training/config.py) asserts model.seq_length ==
  // dataset.seq_length for its GPT / SFT dataset configs: a recipe that sets both apart does
  // not start. The model's value absent, the dataset's is the sequence length of the run.
  MapReader dataset = Section(top, "dataset", filename);
  if (!IsNull(dataset, "seq_length")) {
    const int64_t data_seq = dataset.Int("seq_length", 1, 1LL << 24);
    if (out.seq_len > 0 && data_seq != out.seq_len) {
      dataset.Fail("seq_length", "expected model.seq_length's " + std::to_string(out.seq_len) +
                                     " (Megatron-Bridge's ConfigContainer.validate asserts the two are equal), found " +
                                     std::to_string(data_seq));
    }
    if (out.seq_len == 0) out.seq_len = data_seq;
  }
  MapReader ddp = Section(top, "ddp", filename);
  MapReader opt = Section(top, "optimizer", filename);
  ReadDdp(ddp, opt, l);
  // The optimizer state's dtypes (Megatron-Core optimizer_config.py OptimizerConfig: each
  // torch.float32 by default; __post_init__ allows others only with use_precision_aware_optimizer,
  // which needs optimizer adam); their bytes per parameter: recipe::OptimizerStateBytes.
  {
    const bool aware = opt.Bool("use_precision_aware_optimizer", false);
    if (aware && opt.HasValue("optimizer") && opt.Str("optimizer") != "adam") {
      opt.Fail("use_precision_aware_optimizer", "expected optimizer: adam with it (Megatron-Core OptimizerConfig: "
                                               "'--use-precision-aware-optimizer only supported with adam'), found "
                                               "optimizer '" + opt.Str("optimizer") + "'");
    }
    // Bytes of a dtype key; `allowed` lists the dtypes Megatron-Core takes for it.
    auto bytes = [&](const char* key, std::initializer_list<const char*> allowed) {
      if (!opt.HasValue(key)) return 4.0;
      const std::string given = opt.Str(key);
      const std::string v = recipe::TorchDtypeName(given);
      std::string names;
      bool ok = false;
      for (const char* a : allowed) {
        names += std::string(names.empty() ? "" : " or ") + "torch." + a;
        ok = ok || v == a;
      }
      if (!ok) opt.Fail(key, "expected " + names + "; found '" + given + "'");
      if (!aware && v != "float32") {
        opt.Fail(key, "expected torch.float32 without use_precision_aware_optimizer (Megatron-Core OptimizerConfig: '" +
                          std::string(key) + " can only be fp32 when not using precision-aware optimizer'); found '" +
                          given + "'");
      }
      return recipe::TorchDtypeBytes(v);
    };
    const double master = bytes("main_params_dtype", {"float32", "float16"});
    const double m1 = bytes("exp_avg_dtype", {"float32", "float16", "bfloat16", "uint8"});
    const double m2 = bytes("exp_avg_sq_dtype", {"float32", "float16", "bfloat16", "uint8"});
    bytes("main_grads_dtype", {"float32", "bfloat16"});
    const bool remainders = !opt.HasValue("store_param_remainders") || opt.Bool("store_param_remainders", true);
    l.mb.optimizer_state_bytes = recipe::OptimizerStateBytes(aware, remainders, master, m1, m2);
  }
  MapReader dist = Section(top, "dist", filename);
  l.mb.dist_use_megatron_fsdp = TriKey(dist, "use_megatron_fsdp");
  l.mb.use_torch_fsdp2 = dist.Bool("use_torch_fsdp2", false);
  l.mb.use_tp_pp_dp_mapping = dist.Bool("use_tp_pp_dp_mapping", false);
  MapReader comm = Section(top, "comm_overlap", filename);
  ReadCommOverlap(comm, l);
  MapReader ckpt = Section(top, "checkpoint", filename);
  if (!IsNull(ckpt, "ckpt_format")) {
    const std::string f = ckpt.Str("ckpt_format");
    if (f == "torch") l.mb.ckpt_format = MbCkptFormat::kTorch;
    else if (f == "torch_dist") l.mb.ckpt_format = MbCkptFormat::kTorchDist;
    else if (f == "torch_dcp") l.mb.ckpt_format = MbCkptFormat::kTorchDcp;
    else if (f == "fsdp_dtensor") l.mb.ckpt_format = MbCkptFormat::kFsdpDtensor;
    else ckpt.Fail("ckpt_format", "expected torch, torch_dist, torch_dcp or fsdp_dtensor; " + Found(f));
  }
  l.mb.checkpointing = !IsNull(ckpt, "save") || !IsNull(ckpt, "load");
  ckpt.Ignore({"save", "load"});
  if (l.mb.dist_use_megatron_fsdp == Tri::kTrue && !ddp.Has("use_megatron_fsdp")) l.mb.use_megatron_fsdp = true;
  MapReader env = Section(top, "env_vars", filename, yamlutil::QuotedScalars::kRead);
  if (!IsNull(env, "CUDA_DEVICE_MAX_CONNECTIONS")) {
    l.mb.cuda_device_max_connections = env.Int("CUDA_DEVICE_MAX_CONNECTIONS", 1, 1024);
  }
  // A typo of a key meshplan checks would silently fall back to its default: refuse keys
  // one or two edits from a read one (other keys of Megatron-Bridge's large schema pass), and
  // top-level names near a ConfigContainer section (megatron.md 1.1).
  for (MapReader* r : {&model, &train, &dataset, &ddp, &opt, &dist, &comm, &ckpt, &env}) r->RejectNearMisses();
  top.Ignore({"model", "train", "ddp", "dist", "optimizer", "comm_overlap", "checkpoint", "env_vars",
              "mixed_precision", "scheduler", "dataset", "logger", "tokenizer", "rng", "profiling", "ft",
              "straggler", "nvrx_straggler", "peft", "rerun_state_machine", "inprocess_restart"});
  top.RejectNearMisses();
  // mixed_precision: a registered recipe name (megatron.md 1.7) or a MixedPrecisionConfig map.
  // grad_reduce_in_fp32: MixedPrecisionConfig.setup() copies every field it shares with the
  // DDP config over it (training/mixed_precision.py, update_config_with_precision_overrides),
  // so the mixed-precision value wins: True for bf16_mixed and the recipes built on it, False
  // for fp16_mixed and its fp16_* variants, a map's own grad_reduce_in_fp32 (default True).
  {
    bool fp32 = true;
    if (!IsNull(top, "mixed_precision")) {
      const YAML::Node mp = top.Get("mixed_precision");
      if (mp.IsMap()) {
        MapReader mpr(mp, filename, "mixed_precision");
        ReadMixedPrecisionMap(mpr, out);
        fp32 = mpr.Bool("grad_reduce_in_fp32", true);
        mpr.RejectUnknown();
      } else {
        out.precision = MixedPrecisionRecipe(top);
        out.precision_set = true;
        fp32 = mp.Scalar().rfind("fp16", 0) != 0;
        if (out.precision == Precision::kFp8) {
          out.layout.mb.fp8_recipe =
              mp.Scalar().find("mxfp8") != std::string::npos ? MbFp8Recipe::kMxfp8 : MbFp8Recipe::kPerTensor;
        }
      }
    }
    const Tri asked = TriKey(ddp, "grad_reduce_in_fp32");
    if (asked != Tri::kUnset && (asked == Tri::kTrue) != fp32) {
      out.overridden.push_back(std::string("ddp.grad_reduce_in_fp32: ") + (asked == Tri::kTrue ? "true" : "false") +
                               " is overwritten by mixed_precision's grad_reduce_in_fp32 = " + (fp32 ? "true" : "false") +
                               " (MixedPrecisionConfig.setup copies it over the DDP config; set it in a mixed_precision map)");
    }
    l.mb.grad_reduce_in_fp32 = fp32;
  }
  // DP = W / (TP*PP*CP) (get_data_parallel_size). Not dividing: keep dp >= 1, as the AutoModel
  // reader does, so that mb_world_divisible_by_tp_pp_cp names the problem (dp 0 failed
  // mb_axes_positive, which hid it) and the other rules can still be evaluated.
  const int64_t model_ranks = l.tp * l.pp * l.cp;
  l.dp = std::max<int64_t>(1, num_gpus / model_ranks);
  SetMegatronMicroBatch(l, mbs, TrainSetup{num_gpus, 0, out.global_batch});
  if (model_spec != nullptr && l.mtp_layers == kMtpFromModel) l.mtp_layers = std::max<int64_t>(0, model_spec->mtp_num_layers);
  return out;
}

}  // namespace meshplan
