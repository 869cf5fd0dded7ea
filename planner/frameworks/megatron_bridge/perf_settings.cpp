// Reader of recipes/megatron-bridge-perf.yaml (see perf_settings.hpp).

#include "frameworks/megatron_bridge/perf_settings.hpp"

#include <map>
#include <tuple>

#include "data/yaml_util.hpp"
#include "meshplan/data.hpp"

namespace meshplan::recipe {

namespace {

constexpr const char* kEmbeddedPath = "recipes/megatron-bridge-perf.yaml";

std::string OneOf(yamlutil::MapReader& r, const std::string& key, std::initializer_list<const char*> allowed) {
  const std::string v = r.Str(key);
  std::string list;
  size_t i = 0;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::string(a);
    ++i;
  }
  r.Fail(key, "expected " + list + "; found '" + v + "'");
}

// A list of names, each mapped to a bit; an unknown name is an error at the list.
uint32_t Bits(yamlutil::MapReader& r, const std::string& key, const std::map<std::string, uint32_t>& names) {
  const YAML::Node list = r.Get(key);
  if (!list.IsSequence()) {
    const std::string found = !list.IsDefined() ? "nothing" : list.IsMap() ? "a map" : list.IsScalar() ? "'" + list.Scalar() + "'" : "null";
    r.Fail(key, "expected a list such as [" + names.begin()->first + "], found " + found);
  }
  uint32_t bits = 0;
  for (const YAML::Node& item : list) {
    const std::string name = item.IsScalar() ? item.Scalar() : std::string("(not a name)");
    const auto it = names.find(name);
    if (it == names.end()) {
      std::string known;
      for (const auto& [n, b] : names) known += (known.empty() ? "" : ", ") + n;
      r.Fail(key, "expected names among " + known + "; found '" + name + "'");
    }
    bits |= it->second;
  }
  return bits;
}

// model.offload_modules: the module names Megatron-Core's fine-grained activation offloading
// accepts (megatron/core/transformer/transformer_config.py __post_init__, allowed_modules:
// core_attn, attn_proj, expert_fc1, fused_group_mlp, moe_act, attn_norm, mlp_norm, qkv_linear,
// gdp_qkv).
std::vector<std::string> ReadOffloadModules(yamlutil::MapReader& r, const std::string& key) {
  static const std::map<std::string, uint32_t> kByName = {
      {"attn_norm", 1u << 0}, {"qkv_linear", 1u << 1}, {"core_attn", 1u << 2}, {"attn_proj", 1u << 3},
      {"mlp_norm", 1u << 4},  {"expert_fc1", 1u << 5}, {"moe_act", 1u << 6},   {"fused_group_mlp", 1u << 7},
      {"gdp_qkv", 1u << 8}};
  Bits(r, key, kByName);
  std::vector<std::string> names;
  for (const YAML::Node& item : r.Get(key)) names.push_back(item.Scalar());
  return names;
}

PerfRecipeSettings ReadEntry(yamlutil::MapReader& r) {
  PerfRecipeSettings e;
  e.line = r.Loc("release").line;
  e.release = r.Str("release");
  e.model = r.Str("model");
  e.system = r.Str("system");
  e.precision = OneOf(r, "precision", {"bf16", "fp8cs", "fp8mx", "nvfp4"});
  e.gpus = r.Int("gpus", 1, int64_t{1} << 24);
  e.tokendrop = r.Bool("tokendrop");
  // apply_moe_token_drop (training/utils/moe_token_drop.py) defaults: capacity factor 1.0 with
  // moe_pad_expert_input_to_capacity true.
  e.runtime.pad_to_capacity = e.tokendrop;
  r.Ignore({"tag", "recipe", "notes"});
  const std::string dispatcher = OneOf(r, "moe_token_dispatcher_type", {"alltoall", "flex", "allgather", "none"});
  e.runtime.dispatcher = dispatcher == "flex"        ? MbDispatcher::kFlex
                         : dispatcher == "allgather" ? MbDispatcher::kAllgather
                                                     : MbDispatcher::kAlltoall;
  const std::string backend = OneOf(r, "moe_flex_dispatcher_backend", {"deepep", "hybridep", "none"});
  if ((dispatcher == "flex") != (backend != "none")) {
    r.Fail("moe_flex_dispatcher_backend", "expected a backend (deepep or hybridep) exactly when "
                                          "moe_token_dispatcher_type is flex; found '" + backend + "'");
  }
  e.runtime.flex_backend = backend == "hybridep" ? MbFlexBackend::kHybridEP
                           : backend == "deepep"  ? MbFlexBackend::kDeepEP
                                                  : MbFlexBackend::kNone;
  e.runtime.ep_a2a_overlap = r.Bool("overlap_moe_expert_parallel_comm") ? Tri::kTrue : Tri::kFalse;
  const std::string granularity = OneOf(r, "recompute_granularity", {"none", "selective", "full"});
  e.recompute_modules = ReadRecomputeModules(r, "recompute_modules");
  const std::string method = OneOf(r, "recompute_method", {"none", "uniform", "block"});
  e.recompute_method = method == "block"     ? MbRecomputeMethod::kBlock
                       : method == "uniform" ? MbRecomputeMethod::kUniform
                                             : MbRecomputeMethod::kUnset;
  e.recompute_num_layers = r.Int("recompute_num_layers", 0, 1 << 20);
  if ((granularity == "full") != (method != "none")) {
    r.Fail("recompute_method", "expected uniform or block exactly when recompute_granularity is full; found '" +
                                   method + "'");
  }
  e.recompute = granularity == "full" ? Recompute::kFull
                : granularity == "selective" && e.recompute_modules != 0 ? Recompute::kSelective
                                                                         : Recompute::kNone;
  e.runtime.cuda_graph_scope = ReadCudaGraphScope(r, "cuda_graph_scope");
  e.runtime.cuda_graph =
      ReadCudaGraphImpl(r, "cuda_graph_impl", e.runtime.cuda_graph_scope, /*full_iteration_spelling=*/true);
  e.runtime.grad_reduce_in_fp32 = r.Bool("grad_reduce_in_fp32");
  e.cpu_offloading_num_layers = r.Int("cpu_offloading_num_layers", 0, 1 << 20);
  // Optional keys (entries of releases whose recipes set them; the older entries omit them).
  // optimizer_state_bytes: OptimizerStateBytes of the recipe's optimizer fields.
  e.optimizer_state_bytes = r.Num("optimizer_state_bytes", 4.0, 12.0, 12.0);
  e.use_megatron_fsdp = r.Bool("use_megatron_fsdp", false);
  e.num_distributed_optimizer_instances = r.Int("num_distributed_optimizer_instances", 1, 1 << 20, 1);
  if (r.HasValue("offload_modules")) e.offload_modules = ReadOffloadModules(r, "offload_modules");
  r.RejectUnknown();
  return e;
}

}  // namespace

uint32_t ReadRecomputeModules(yamlutil::MapReader& r, const std::string& key) {
  static const std::map<std::string, uint32_t> kByName = [] {
    std::map<std::string, uint32_t> m;
    for (const RecomputeModuleName& x : RecomputeModuleNames()) m.emplace(x.name, x.bit);
    return m;
  }();
  return Bits(r, key, kByName);
}

std::span<const GraphScopeName> CudaGraphScopeNames() {
  static const GraphScopeName kNames[] = {
      {"attn", kGraphAttn},       {"mlp", kGraphMlp}, {"moe_router", kGraphMoeRouter}, {"moe_preprocess", kGraphMoePreprocess},
      {"moe", kGraphMoe},         {"mamba", kGraphMamba}, {"full_iteration", kGraphFullIteration}};
  return kNames;
}

uint32_t ReadCudaGraphScope(yamlutil::MapReader& r, const std::string& key) {
  static const std::map<std::string, uint32_t> kByName = [] {
    std::map<std::string, uint32_t> m;
    for (const GraphScopeName& x : CudaGraphScopeNames()) m.emplace(x.name, x.bit);
    return m;
  }();
  return Bits(r, key, kByName);
}

// Megatron-Core's cuda_graph_impl is none, local (its CudaGraphManager: whole layers, or the
// whole iteration with cuda_graph_scope [full_iteration]) or transformer_engine (the modules of
// cuda_graph_scope, whole layers when it is empty). meshplan's perf-settings file also writes
// the whole-iteration capture as cuda_graph_impl: full_iteration.
MbCudaGraph ReadCudaGraphImpl(yamlutil::MapReader& r, const std::string& key, uint32_t& scope,
                              bool full_iteration_spelling) {
  const std::string graph =
      full_iteration_spelling ? OneOf(r, key, {"none", "transformer_engine", "local", "full_iteration"})
                              : OneOf(r, key, {"none", "transformer_engine", "local"});
  const uint32_t given = scope;
  // local graphs capture whole layers (or the iteration): the module scope does not apply.
  if (graph == "local") scope = 0;
  if (graph == "full_iteration" || (graph == "local" && (given & kGraphFullIteration))) return MbCudaGraph::kFullIteration;
  if ((scope & kGraphFullIteration) && graph == "transformer_engine") {
    r.Fail(key, "expected cuda_graph_impl: local with cuda_graph_scope full_iteration (Megatron-Core captures the "
                "whole iteration with its own graphs), found transformer_engine");
  }
  return graph == "none" ? MbCudaGraph::kNone : MbCudaGraph::kTransformerEngine;
}

const PerfRecipeSettings* PerfRecipeTable::Find(const std::string& release, const std::string& model,
                                                const std::string& system, const std::string& precision,
                                                int64_t gpus, bool tokendrop) const {
  for (const PerfRecipeSettings& e : recipes) {
    if (e.release == release && e.model == model && e.system == system && e.precision == precision &&
        e.gpus == gpus && e.tokendrop == tokendrop) {
      return &e;
    }
  }
  return nullptr;
}

PerfRecipeTable LoadPerfRecipeSettings(const std::string& path) {
  PerfRecipeTable t;
  std::string text;
  if (path.empty()) {
    const auto embedded = data::FindEmbedded(kEmbeddedPath);
    if (!embedded) throw InputError(SourceLoc{kEmbeddedPath, 0, 0}, "", "the embedded recipe settings are missing");
    text = std::string(*embedded);
    t.file = kEmbeddedPath;
  } else {
    text = data::ReadFileOrThrow(path);
    t.file = path;
  }
  const YAML::Node root = yamlutil::ParseMap(text, t.file);
  yamlutil::MapReader top(root, t.file);
  top.Str("source");
  const YAML::Node list = top.Get("recipes");
  if (!list.IsSequence()) {
    top.Fail("recipes", std::string("expected a list of recipe entries, found ") +
                            (!list.IsDefined() ? "nothing" : list.IsMap() ? "a map" : list.IsScalar() ? "a scalar" : "null"));
  }
  top.RejectUnknown();
  std::map<std::tuple<std::string, std::string, std::string, std::string, int64_t, bool>, int> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].IsMap()) {
      throw InputError(yamlutil::LocOf(list[i], t.file), "recipes[" + std::to_string(i) + "]",
                       "expected a map, found " + yamlutil::Shown(list[i]));
    }
    yamlutil::MapReader r(list[i], t.file, "recipes[" + std::to_string(i) + "]");
    PerfRecipeSettings e = ReadEntry(r);
    const auto key = std::make_tuple(e.release, e.model, e.system, e.precision, e.gpus, e.tokendrop);
    if (const auto it = seen.find(key); it != seen.end()) {
      r.Fail("release", "duplicates the entry at line " + std::to_string(it->second) +
                            " (same release, model, system, precision, gpus and tokendrop)");
    }
    seen.emplace(key, e.line);
    t.recipes.push_back(std::move(e));
  }
  return t;
}

std::string TorchDtypeName(const std::string& given) {
  const std::string v = given.rfind("torch.", 0) == 0 ? given.substr(6) : given;
  if (v == "fp32") return "float32";
  if (v == "bf16") return "bfloat16";
  if (v == "fp16") return "float16";
  if (v == "fp8") return "uint8";
  return v;
}

double TorchDtypeBytes(const std::string& name) { return name == "float32" ? 4.0 : name == "uint8" ? 1.0 : 2.0; }

double OptimizerStateBytes(bool precision_aware, bool store_param_remainders, double master, double exp_avg,
                           double exp_avg_sq) {
  if (!precision_aware) return 12.0;
  return (store_param_remainders && master == 4.0 ? 2.0 : master) + exp_avg + exp_avg_sq;
}

std::string PerfPrecisionKey(const std::string& cell) {
  std::string s;
  for (char ch : cell) s += char(std::tolower(static_cast<unsigned char>(ch)));
  const size_t paren = s.find('(');
  if (paren != std::string::npos) s = s.substr(0, paren);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  if (s.find("fp4") != std::string::npos) return "nvfp4";
  if (s == "mxfp8" || s == "fp8-mx") return "fp8mx";
  if (s.find("fp8") != std::string::npos) return "fp8cs";
  return "bf16";
}

}  // namespace meshplan::recipe
