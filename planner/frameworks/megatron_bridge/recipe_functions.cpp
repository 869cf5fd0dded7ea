// Megatron-Bridge's recipe functions as data (recipes/megatron-bridge-recipe-functions.json).
#include "frameworks/megatron_bridge/recipe_functions.hpp"

#include <algorithm>
#include <mutex>
#include <span>
#include <stdexcept>

#include "frameworks/megatron_bridge/perf_settings.hpp"
#include "frameworks/megatron_bridge/recipe_table_packed.hpp"
#include "meshplan/rule_domains.hpp"
#include "meshplan/diag.hpp"

namespace meshplan::megatron_bridge {

namespace {

// The table as compiled (recipe_table_packed.hpp): the small keys parsed on first use, each
// recipe function and config class on its first lookup, once (std::call_once), then kept.
struct Head {
  std::vector<std::string> snapshot;
  std::map<std::string, std::string, std::less<>> layout_builders;
};

const Head& TheHead() {
  static const Head h = [] {
    Head out;
    const nlohmann::json j = nlohmann::json::parse(packed::Head());
    for (const auto& line : j.at("vendored")) out.snapshot.push_back(line.get<std::string>());
    if (const auto it = j.find("layout_builders"); it != j.end()) {
      for (const auto& [name, builder] : it->items()) out.layout_builders.emplace(name, builder.get<std::string>());
    }
    return out;
  }();
  return h;
}

// Index of `name` in a packed array sorted by name, or -1.
long IndexOf(std::span<const packed::Entry> entries, std::string_view name) {
  const auto it = std::lower_bound(entries.begin(), entries.end(), name,
                                   [](const packed::Entry& e, std::string_view n) { return std::string_view(e.name) < n; });
  return it != entries.end() && std::string_view(it->name) == name ? it - entries.begin() : -1;
}

// Entries parsed on demand: slot i holds entry i once built.
template <class T>
struct LazyEntries {
  explicit LazyEntries(std::span<const packed::Entry> e) : entries(e), once(e.size()), slots(e.size()) {}
  template <class Build>
  const T* Get(std::string_view name, Build build) {
    const long i = IndexOf(entries, name);
    if (i < 0) return nullptr;
    std::call_once(once[i], [&] { slots[i] = build(entries[i].name, nlohmann::json::parse(entries[i].json)); });
    return &slots[i];
  }
  std::span<const packed::Entry> entries;
  std::vector<std::once_flag> once;
  std::vector<T> slots;
};

RecipeFunction BuildFunction(const char* name, nlohmann::json r) {
  RecipeFunction f;
  f.name = name;
  f.transformer_path = r.at("transformer_path").get<std::string>();
  for (const auto& [sec, cls] : r.at("sections").items()) f.sections[sec] = cls.is_null() ? "" : cls.get<std::string>();
  f.values = std::move(r.at("values"));
  return f;
}

std::map<std::string, std::string> BuildClass(const char*, const nlohmann::json& fields) {
  std::map<std::string, std::string> c;
  for (const auto& [f, type] : fields.items()) c[f] = type.get<std::string>();
  return c;
}

LazyEntries<RecipeFunction>& Functions() {
  static LazyEntries<RecipeFunction> f(packed::Functions());
  return f;
}

LazyEntries<std::map<std::string, std::string>>& Classes() {
  static LazyEntries<std::map<std::string, std::string>> c(packed::Classes());
  return c;
}

const nlohmann::json kNull;

bool Has(const std::string& haystack, const char* needle) { return haystack.find(needle) != std::string::npos; }

}  // namespace

const nlohmann::json& RecipeFunction::ModelValue(const std::string& key) const {
  for (const std::string& path : {transformer_path + "." + key, "model." + key}) {
    if (auto it = values.find(path); it != values.end()) return *it;
  }
  return kNull;
}

bool RecipeFunction::CommOverlapNone() const {
  const auto it = sections.find("comm_overlap");
  return it != sections.end() && it->second.empty();
}

std::vector<std::string> RecipeFunctionNames() {
  std::vector<std::string> names;
  for (const packed::Entry& e : packed::Functions()) names.emplace_back(e.name);
  return names;
}

std::string LayoutBuilderOf(std::string_view name) {
  const auto& b = TheHead().layout_builders;
  const auto it = b.find(name);
  return it == b.end() ? "" : it->second;
}

const RecipeFunction* FindRecipeFunction(std::string_view name) { return Functions().Get(name, BuildFunction); }

const std::vector<std::string>& RecipeFunctionSnapshot() { return TheHead().snapshot; }

const std::map<std::string, std::string>* ConfigClassFields(const std::string& qualname) {
  return Classes().Get(qualname, BuildClass);
}

std::string DefaultRecipeFunctionName(const std::string& preset) {
  // Megatron-Bridge main (commit 067f987d, 2026-08-22): scripts/training/recipe_runner.py
  // find_library_recipe looks the name up in megatron.bridge.recipes, which exports each
  // family's `<family><size>_pretrain_config` as an alias of its H100 recipe (e.g. for
  // Llama-3.1-8B src/megatron/bridge/recipes/llama/llama3.py: llama31_8b_pretrain_config =
  // llama31_8b_pretrain_2gpu_h100_bf16_config in recipes/llama/h100/llama3.py), and
  // recipe_metadata.py infer_recipe_mode reads "pretrain" from the name. The aliases are used
  // rather than the H100 names because some H100 names (deepseek_v3_pretrain_1024gpu_h100_bf16_config,
  // gpt_oss_120b_pretrain_64gpu_h100_bf16_config) are also benchmark recipes, which run_recipe.py
  // prefers (BENCHMARK_RECIPE_PRECEDENCE_COLLISIONS). There is no Mixtral recipe. Nemotron 3:
  // recipes/nemotronh/nemotron_3_{nano,super,ultra}.py alias nemotron_3_<size>_pretrain_config to
  // the H100 recipes (nano 8 GPUs, super 64, ultra 24 in recipes/nemotronh/h100/), each building
  // its HybridModelProvider in the function (no Hugging Face config read). DeepSeek-V4 is left
  // out: deepseek_v4_flash_pretrain_config reads deepseek-ai/DeepSeek-V4-Flash with
  // trust_remote_code (recipes/deepseek/h100/deepseek_v4.py), which the acceptance harness cannot run offline.
  static const std::pair<const char*, const char*> kNames[] = {
      {"llama3-8b", "llama3_8b_pretrain_config"},          {"llama3-70b", "llama3_70b_pretrain_config"},
      {"llama3.1-8b", "llama31_8b_pretrain_config"},       {"llama3.1-70b", "llama31_70b_pretrain_config"},
      {"llama3.1-405b", "llama31_405b_pretrain_config"},   {"qwen3-8b", "qwen3_8b_pretrain_config"},
      {"qwen3-30b-a3b", "qwen3_30b_a3b_pretrain_config"},  {"qwen3-235b-a22b", "qwen3_235b_a22b_pretrain_config"},
      {"deepseek-v3", "deepseek_v3_pretrain_config"},      {"kimi-k2", "kimi_k2_pretrain_config"},
      {"gpt-oss-20b", "gpt_oss_20b_pretrain_config"},      {"gpt-oss-120b", "gpt_oss_120b_pretrain_config"},
      {"nemotron-3-nano", "nemotron_3_nano_pretrain_config"}, {"nemotron-3-super", "nemotron_3_super_pretrain_config"},
      {"nemotron-3-ultra", "nemotron_3_ultra_pretrain_config"},
  };
  for (const auto& [p, name] : kNames) {
    if (preset == p) return name;
  }
  return "";
}

const RecipeFunction* RecipeFunctionOf(const PlanRequest& req) {
  return FindRecipeFunction(!req.mb_recipe_function.empty() ? req.mb_recipe_function
                                                            : DefaultRecipeFunctionName(req.model.name));
}

std::string FlagKeyPath(const std::string& function, const std::string& key) {
  return function.empty() ? key : OverridePath(FindRecipeFunction(function), key);
}

std::string OverridePath(const RecipeFunction* fn, const std::string& key) {
  if (fn == nullptr || fn->transformer_path == "model" || key.rfind("model.", 0) != 0) return key;
  const std::string field = key.substr(6);
  const auto outer = fn->sections.find("model");
  const auto inner = fn->sections.find("model.transformer");
  const auto* outer_fields = outer == fn->sections.end() ? nullptr : ConfigClassFields(outer->second);
  const auto* inner_fields = inner == fn->sections.end() ? nullptr : ConfigClassFields(inner->second);
  if (outer_fields && outer_fields->count(field)) return key;
  if (inner_fields && inner_fields->count(field)) return "model.transformer." + field;
  return key;
}

std::string SchemaProblem(const RecipeFunction& fn, const std::string& key, const std::string& value) {
  const size_t dot = key.rfind('.');
  if (dot == std::string::npos) {
    if (key == "mixed_precision") return "";  // a registered recipe name (training/mixed_precision.py)
    return "'" + key + "' is not a ConfigContainer section holding a value";
  }
  const std::string section = key.substr(0, dot), field = key.substr(dot + 1);
  const auto sec = fn.sections.find(section);
  if (sec == fn.sections.end()) return "'" + section + "' is not a section of " + fn.name + "'s config";
  std::string cls = sec->second;
  if (cls.empty() && section == "comm_overlap") cls = "megatron.bridge.training.comm_overlap.CommOverlapConfig";
  if (cls.empty() || cls == "str") return "'" + section + "' of " + fn.name + " holds no fields (it is " + (cls.empty() ? "None" : "a string") + ")";
  const auto* fields = ConfigClassFields(cls);
  if (fields == nullptr) return "no schema for " + cls;
  const auto f = fields->find(field);
  if (f == fields->end()) return "'" + field + "' is not a field of " + cls + " (" + section + " of " + fn.name + ")";
  const std::string& type = f->second;
  auto takes = [&](const char* kind) { return Has(type, kind) || Has(type, "Any") || Has(type, "Literal") || Has(type, "Union"); };
  bool ok = true;
  if (value == "null") {
    ok = Has(type, "None") || Has(type, "Optional") || Has(type, "Any");
  } else if (value == "true" || value == "false") {
    ok = takes("bool");
  } else if (!value.empty() && value.front() == '[') {
    ok = takes("list") || takes("List") || takes("tuple");
  } else if (!value.empty() && (std::isdigit(static_cast<unsigned char>(value.front())) || value.front() == '-')) {
    ok = takes("int") || takes("float");
  } else {
    // A string (quoted or not): str, a Literal, an enum type (a class name), or a torch dtype
    // (Megatron-Bridge's override handling turns "bfloat16" into torch.bfloat16:
    // utils/omegaconf_utils.py).
    ok = takes("str") || type == "dtype" || Has(type, "torch.dtype") ||
         (type.find_first_of(".") != std::string::npos && !Has(type, "int") && !Has(type, "bool"));
  }
  if (!ok) return "'" + key + "=" + value + "' does not fit its type " + type + " (" + cls + ")";
  return "";
}

MbRuntime RecipeRuntime(const RecipeFunction* fn, const SystemSpec& system, std::vector<std::string>* note) {
  MbRuntime rt;  // alltoall, no EP overlap, no CUDA graphs, fp32 gradients
  if (fn == nullptr) return rt;
  auto str = [&](const char* key) {
    const nlohmann::json& v = fn->ModelValue(key);
    return v.is_string() ? v.get<std::string>() : std::string();
  };
  // Dispatcher. Megatron-Bridge training/flex_dispatcher_backend.py validate_flex_dispatcher_backend
  // (ConfigContainer.validate): DeepEP needs compute capability 8.x / 9.x or a GPU named
  // "NVIDIA B200" / "NVIDIA B300"; HybridEP 8.x-10.x; flex without a backend falls back to alltoall.
  if (str("moe_token_dispatcher_type") == "flex") {
    const std::string backend = str("moe_flex_dispatcher_backend");
    const std::string& gpu = system.gpu.display_name;
    // ROCm's torch reports MI300X as (9, 4), which Megatron-Bridge's check passes, but DeepEP and
    // HybridEP are built for CUDA alone (GpuSpec::rocm).
    const bool deepep_ok = domain::FlexBackendRuns(MbFlexBackend::kDeepEP, system.gpu) && !system.gpu.rocm;
    const bool hybridep_ok = domain::FlexBackendRuns(MbFlexBackend::kHybridEP, system.gpu) && !system.gpu.rocm;
    if (backend == "hybridep" && hybridep_ok) {
      rt.dispatcher = MbDispatcher::kFlex;
      rt.flex_backend = MbFlexBackend::kHybridEP;
    } else if (backend == "deepep" && deepep_ok) {
      rt.dispatcher = MbDispatcher::kFlex;
      rt.flex_backend = MbFlexBackend::kDeepEP;
    } else if (backend == "deepep" && hybridep_ok) {
      rt.dispatcher = MbDispatcher::kFlex;
      rt.flex_backend = MbFlexBackend::kHybridEP;
      if (note) note->push_back(fn->name + "'s DeepEP dispatcher backend is not built for " + gpu + ": HybridEP instead");
    } else if (note) {
      note->push_back(fn->name + "'s flex dispatcher (" + (backend.empty() ? "no backend" : backend) + ") does not run on " + gpu +
                      (system.gpu.rocm ? " (DeepEP and HybridEP are CUDA libraries; it runs ROCm)" : "") +
                      ": alltoall instead where EP > 1");
    }
  }
  // As ReadCudaGraphImpl reads a recipe: local graphs capture whole layers (no module scope),
  // or the iteration with cuda_graph_scope [full_iteration].
  const std::string impl = str("cuda_graph_impl");
  uint32_t scope = 0;
  if (const nlohmann::json& names = fn->ModelValue("cuda_graph_scope"); names.is_array()) {
    for (const auto& n : names) {
      for (const recipe::GraphScopeName& s : recipe::CudaGraphScopeNames()) {
        if (n.is_string() && n.get<std::string>() == s.name) scope |= s.bit;
      }
    }
  }
  if (impl == "full_iteration" || (impl == "local" && (scope & kGraphFullIteration))) {
    rt.cuda_graph = MbCudaGraph::kFullIteration;
  } else if (impl == "transformer_engine" || impl == "local") {
    rt.cuda_graph = MbCudaGraph::kTransformerEngine;
    rt.cuda_graph_scope = impl == "local" ? 0 : scope & ~kGraphFullIteration;
  }
  // The loss kernel: the recipe's cross_entropy_fusion_impl (MegatronOverrides writes it back when te).
  const nlohmann::json& fusion = fn->ModelValue("cross_entropy_loss_fusion");
  rt.te_cross_entropy = str("cross_entropy_fusion_impl") == "te" && !(fusion.is_boolean() && !fusion.get<bool>());
  // The attention's CP exchange where the function sets one (the GPT-OSS recipes: a2a, which their
  // sliding windows and softmax sinks need): kept by plan, which searches the types otherwise.
  const std::string cp_comm = str("cp_comm_type");
  rt.cp_comm = cp_comm == "p2p"          ? MbCpComm::kP2p
               : cp_comm == "all_gather" ? MbCpComm::kAllGather
               : cp_comm == "a2a"        ? MbCpComm::kA2a
               : cp_comm == "a2a+p2p"    ? MbCpComm::kA2aP2p
                                         : MbCpComm::kUnset;
  if (const nlohmann::json& h = fn->ModelValue("hierarchical_context_parallel_sizes"); h.is_array() && !h.empty() &&
                                                                                        h[0].is_number_integer()) {
    rt.hcp_first = h[0].get<int64_t>();
  }
  // grad_reduce_in_fp32 stays true: meshplan writes mixed_precision as a recipe name (bf16_mixed,
  // bf16_with_*_mixed), which replaces the function's own MixedPrecisionConfig and sets it true
  // (training/mixed_precision.py; MixedPrecisionConfig.setup copies it over the DDP config).
  return rt;
}

std::string PerfRecipeFunctionName(const std::string& preset, const std::string& system, const std::string& precision,
                                   int64_t gpus, const std::string& task) {
  static const std::map<std::string, std::string> kFamily = {
      {"llama3-8b", "llama3_8b"},         {"llama3-70b", "llama3_70b"},           {"llama3.1-405b", "llama31_405b"},
      {"qwen3-30b-a3b", "qwen3_30b_a3b"}, {"qwen3-235b-a22b", "qwen3_235b_a22b"}, {"deepseek-v3", "deepseek_v3"},
      {"gpt-oss-20b", "gpt_oss_20b"},     {"gpt-oss-120b", "gpt_oss_120b"}};
  static const std::map<std::string, std::string> kSystem = {{"dgx-h100", "h100"},    {"dgx-b200", "b200"},
                                                             {"dgx-b300", "b300"},    {"gb200-nvl72", "gb200"},
                                                             {"gb300-nvl72", "gb300"}};
  const auto f = kFamily.find(preset);
  const auto s = kSystem.find(system);
  if (f == kFamily.end() || s == kSystem.end() || precision.empty() || gpus <= 0) return "";
  return f->second + "_" + task + "_" + std::to_string(gpus) + "gpu_" + s->second + "_" + precision + "_config";
}

recipe::PerfRecipeSettings PerfSettingsOfRecipeFunction(const RecipeFunction& fn, const SystemSpec& system) {
  recipe::PerfRecipeSettings e;
  e.runtime = RecipeRuntime(&fn, system, nullptr);
  auto value = [&](const char* path, const char* model_key) -> const nlohmann::json& {
    static const nlohmann::json kNull;
    if (model_key != nullptr) return fn.ModelValue(model_key);
    const auto it = fn.values.find(path);
    return it != fn.values.end() ? *it : kNull;
  };
  const nlohmann::json& fp32 = value("mixed_precision.grad_reduce_in_fp32", nullptr);
  const nlohmann::json& ddp_fp32 = value("ddp.grad_reduce_in_fp32", nullptr);
  if (fp32.is_boolean()) e.runtime.grad_reduce_in_fp32 = fp32.get<bool>();
  else if (ddp_fp32.is_boolean()) e.runtime.grad_reduce_in_fp32 = ddp_fp32.get<bool>();
  const nlohmann::json& overlap = value("comm_overlap.overlap_moe_expert_parallel_comm", nullptr);
  if (overlap.is_boolean()) e.runtime.ep_a2a_overlap = overlap.get<bool>() ? Tri::kTrue : Tri::kFalse;
  if (const nlohmann::json& names = value(nullptr, "recompute_modules"); names.is_array()) {
    for (const auto& n : names) {
      for (const RecomputeModuleName& x : RecomputeModuleNames()) {
        if (n.is_string() && n.get<std::string>() == x.name) e.recompute_modules |= x.bit;
      }
    }
  }
  const nlohmann::json& granularity = value(nullptr, "recompute_granularity");
  const std::string g = granularity.is_string() ? granularity.get<std::string>() : "";
  e.recompute = g == "full" ? Recompute::kFull
                : g == "selective" && e.recompute_modules != 0 ? Recompute::kSelective
                                                               : Recompute::kNone;
  if (e.recompute == Recompute::kFull) {
    const nlohmann::json& method = value(nullptr, "recompute_method");
    const nlohmann::json& layers = value(nullptr, "recompute_num_layers");
    const std::string m = method.is_string() ? method.get<std::string>() : "";
    e.recompute_method = m == "block" ? MbRecomputeMethod::kBlock : MbRecomputeMethod::kUniform;
    e.recompute_num_layers = layers.is_number_integer() ? layers.get<int64_t>() : 1;
  }
  // The optimizer state's dtypes, where the table records them (torch dtype names), priced as
  // a recipe's are (recipe::OptimizerStateBytes).
  auto flag = [&](const char* path, bool unset) {
    const nlohmann::json& v = value(path, nullptr);
    return v.is_boolean() ? v.get<bool>() : unset;
  };
  auto bytes = [&](const char* path) {
    const nlohmann::json& v = value(path, nullptr);
    return recipe::TorchDtypeBytes(recipe::TorchDtypeName(v.is_string() ? v.get<std::string>() : "float32"));
  };
  e.optimizer_state_bytes = recipe::OptimizerStateBytes(
      flag("optimizer.use_precision_aware_optimizer", false), flag("optimizer.store_param_remainders", true),
      bytes("optimizer.main_params_dtype"), bytes("optimizer.exp_avg_dtype"), bytes("optimizer.exp_avg_sq_dtype"));
  const nlohmann::json& offload = value(nullptr, "cpu_offloading_num_layers");
  const nlohmann::json& offloading = value(nullptr, "cpu_offloading");
  if (offload.is_number_integer() && (!offloading.is_boolean() || offloading.get<bool>())) {
    e.cpu_offloading_num_layers = offload.get<int64_t>();
  }
  return e;
}

std::string MbRecipeName(const PlanRequest& req) {
  return !req.mb_recipe_function.empty() ? req.mb_recipe_function : DefaultRecipeFunctionName(req.model.name);
}

bool ForceAddsCommOverlap(const PlanRequest& req) {
  const std::string name = MbRecipeName(req);
  if (name.empty()) return false;
  const RecipeFunction* fn = FindRecipeFunction(name);
  return fn == nullptr || fn->CommOverlapNone();
}

std::vector<std::string> ForcedCommOverlapOverrides(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> out;
  for (const auto& [key, value] : overrides) {
    if (key.rfind("comm_overlap.", 0) != 0) continue;
    if (out.empty()) out.push_back("++comm_overlap._target_=megatron.bridge.training.comm_overlap.CommOverlapConfig");
    out.push_back("++" + key + "=" + value);
  }
  return out;
}

}  // namespace meshplan::megatron_bridge
