// The commands behind JSON requests (include/meshplan/api.hpp): each request object becomes
// the commands layer's input (PlanInput, CheckInput, ExplainInput, ValidateRequest) and its
// report the JSON the CLI prints with --format json. Pasted files (a config.json, a recipe, a
// runs CSV) are written to a private temporary folder for the commands' readers and named in
// errors by their request key.
#include "meshplan/api.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <type_traits>

#include "api/json_out.hpp"
#include "api/request.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/commands.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/model.hpp"
#include "meshplan/recipe.hpp"
#include "render/text.hpp"

namespace meshplan::api {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A private folder for the pasted files of one request, removed with everything in it.
class Scratch {
 public:
  Scratch() {
    std::string tmpl = (fs::temp_directory_path() / "meshplan-api-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary folder in " + tmpl);
    dir_ = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // Writes `text` as `name` in the folder; returns its path.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (fs::path(dir_) / name).string();
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + path);
    return path;
  }
  // The folder with its final '/': what errors about its files lose.
  std::string Prefix() const { return dir_ + "/"; }

 private:
  std::string dir_;
};

// `s` without every occurrence of `prefix`.
std::string Without(std::string s, const std::string& prefix) {
  for (size_t i = s.find(prefix); i != std::string::npos; i = s.find(prefix, i)) s.erase(i, prefix.size());
  return s;
}

Answer JsonAnswer(int status, const json& j) { return {status, JsonText(j), "application/json"}; }

// The 400 answer of an InputError: ErrorJson with the field as a request key and the scratch
// folder's path left out of the file and the message.
Answer InputAnswer(const InputError& e, const std::string& scratch) {
  SourceLoc loc = e.loc();
  std::string message = e.message();
  if (!scratch.empty()) {
    loc.file = Without(loc.file, scratch);
    message = Without(message, scratch);
  }
  return JsonAnswer(400, ErrorJson("input", message, 2, loc, KeyOfFlag(e.field())));
}

// Refuses a path where only names are allowed (Limits::allow_paths off).
void RefusePath(const std::string& key, const std::string& value, const Limits& limits, const char* names) {
  if (limits.allow_paths) return;
  const bool path = value.find('/') != std::string::npos || value.find('\\') != std::string::npos ||
                    (value.size() > 5 && (value.ends_with(".json") || value.ends_with(".yaml") || value.ends_with(".yml")));
  if (path) RequestError(key, std::string("expected ") + names + "; found the path '" + value + "' (this server reads no files)");
}

// `key` when given: a number in [min, max].
template <typename T>
void InRange(const std::string& key, std::optional<T> v, double min, double max, T* into) {
  if (!v) return;
  if (!(*v >= min && *v <= max)) {
    const bool whole = std::is_integral_v<T>;
    const auto bound = [whole](double b) { return whole ? std::to_string(static_cast<int64_t>(b)) : json(b).dump(); };
    RequestError(key, std::string(whole ? "expected an integer in [" : "expected a number in [") + bound(min) + ", " +
                          bound(max) + "], found " + json(*v).dump());
  }
  *into = *v;
}

// "bf16" / "fp8"; RequestError otherwise.
Precision PrecisionOf(const std::string& key, const std::string& v) {
  if (v == "bf16") return Precision::kBf16;
  if (v == "fp8") return Precision::kFp8;
  RequestError(key, "expected one of bf16, fp8; found '" + v + "'");
}

// The model of a request: `model` (a preset; a path where allowed) or `model_config` (the
// text or the object of a config.json / meshplan model YAML), written as a file.
std::string ModelOf(Fields& f, Scratch& scratch, const Limits& limits) {
  const json* config = f.Raw("model_config");
  const std::optional<std::string> model = f.Str("model");
  if (config && model) RequestError("model_config", "expected either model or model_config, found both");
  if (config) {
    if (config->is_object()) return scratch.Write("model_config.json", config->dump(2));
    if (!config->is_string()) RequestError("model_config", "expected the text or the object of a config.json");
    const std::string text = config->get<std::string>();
    const size_t first = text.find_first_not_of(" \t\r\n");
    const bool is_json = first != std::string::npos && text[first] == '{';
    return scratch.Write(is_json ? "model_config.json" : "model_config.yaml", text);
  }
  if (!model) RequestError("model", "required: a preset name (GET /api/models) or model_config");
  RefusePath("model", *model, limits, "a preset name (GET /api/models) or model_config");
  return *model;
}

std::string SystemOf(Fields& f, const Limits& limits) {
  const std::optional<std::string> system = f.Str("system");
  if (!system) RequestError("system", "required: a system name (GET /api/systems)");
  RefusePath("system", *system, limits, "a system name (GET /api/systems)");
  return *system;
}

std::string HwdbOf(Fields& f, const Limits& limits) {
  const std::optional<std::string> hwdb = f.Str("hwdb");
  if (hwdb && !limits.allow_paths) RequestError("hwdb", "expected no hwdb: this server uses its own hardware database");
  return hwdb.value_or("");
}

ReleaseChoice ReleasesOf(Fields& f) {
  ReleaseChoice r;
  if (auto v = f.Str("automodel_version")) r.automodel = ParseAutoModelVersion(*v);
  if (auto v = f.Str("mbridge_version")) r.mbridge = ParseMBridgeVersion(*v);
  return r;
}

double SearchSeconds(Fields& f, const Limits& limits, double fallback) {
  double s = fallback;
  InRange<double>("max_seconds", f.Real("max_seconds"), 0.001, 1e6, &s);
  if (limits.max_seconds > 0 && s > limits.max_seconds) {
    if (f.Has("max_seconds")) {
      RequestError("max_seconds", "expected at most this server's limit of " + json(limits.max_seconds).dump() +
                                      " s (meshplan serve --max-seconds), found " + json(s).dump());
    }
    s = limits.max_seconds;
  }
  return s;
}

const std::vector<std::string> kPlanKeys = {
    "model", "model_config", "generic_decoder", "system", "hwdb", "gpus", "seq_len", "global_batch", "precision", "framework",
    "automodel_version", "mbridge_version", "strategy", "top", "headroom", "max_micro_batch", "recompute_modules",
    "search_dispatchers", "mb_recipe", "max_seconds", "max_layouts", "max_memory_mb", "sweep_gpus", "sweep_seq",
    "format", "scatter", "launch"};

Answer Plan(Fields& f, Scratch& scratch, const Limits& limits) {
  PlanInput in;
  in.model = ModelOf(f, scratch, limits);
  in.generic_decoder = f.Bool("generic_decoder").value_or(false);
  in.system = SystemOf(f, limits);
  in.hwdb = HwdbOf(f, limits);
  in.gpus = f.Int("gpus");
  in.seq_len = f.Int("seq_len");
  const std::optional<int64_t> gb = f.Int("global_batch");
  if (!gb) RequestError("global_batch", "required: sequences per optimizer step");
  in.global_batch = *gb;
  in.precision = PrecisionOf("precision", f.Str("precision").value_or("bf16"));
  in.framework = ParseFramework(f.Str("framework").value_or("automodel"));
  in.releases = ReleasesOf(f);
  for (const std::string& s : f.StrList("strategy")) in.strategies.push_back(ParseStrategy(s));
  const std::optional<int64_t> top = f.Int("top");
  InRange<int>("top", top, 1, 1000, &in.top);
  in.top_given = top.has_value();  // a sweep refuses it, as the CLI's does
  InRange<double>("headroom", f.Real("headroom"), 0, 0.9, &in.headroom);
  InRange<int64_t>("max_micro_batch", f.Int("max_micro_batch"), 1, 1024, &in.max_micro_batch);
  in.recompute_modules = f.Bool("recompute_modules").value_or(false);
  in.search_dispatchers = f.Bool("search_dispatchers").value_or(false);
  in.mb_recipe = f.Str("mb_recipe").value_or("");
  in.max_seconds = SearchSeconds(f, limits, in.max_seconds);
  in.max_layouts = f.Int("max_layouts").value_or(0);
  in.max_memory_mb = f.Int("max_memory_mb").value_or(0);
  in.sweep_gpus = f.IntList("sweep_gpus");
  in.sweep_seq = f.IntList("sweep_seq");
  const std::string format = f.Str("format").value_or("json");
  if (format != "json" && format != "yaml") RequestError("format", "expected one of json, yaml; found '" + format + "'");
  const bool scatter = f.Bool("scatter").value_or(false);
  const bool launch = f.Bool("launch").value_or(false);
  f.RefuseUnknown(kPlanKeys);

  if (!in.sweep_gpus.empty() || !in.sweep_seq.empty()) {
    const size_t points = std::max<size_t>(1, in.sweep_gpus.size()) * std::max<size_t>(1, in.sweep_seq.size());
    if (limits.max_sweep_points > 0 && points > static_cast<size_t>(limits.max_sweep_points)) {
      RequestError(in.sweep_gpus.empty() ? "sweep_seq" : "sweep_gpus",
                   "expected at most " + std::to_string(limits.max_sweep_points) + " sweep points, found " +
                       std::to_string(points));
    }
    if (format == "yaml") RequestError("format", "expected json for a sweep");
    if (scatter) RequestError("scatter", "expected no scatter with a sweep");
    if (launch) RequestError("launch", "expected no launch files with a sweep");
    SweepReport sweep = SweepLayouts(in);
    const std::string error = sweep.Failure();
    return {200, render::SweepJson(sweep, error), "application/json"};
  }
  // The scatter is the report's: PlanLayouts keeps the fitting layouts when a report is asked,
  // which is never written here.
  if (scatter) in.outputs.report = scratch.Prefix() + "report.html";
  const PlanReport rep = PlanLayouts(in);
  json j = json::parse(ResultJson(rep.result, rep.request));
  if (!rep.result.stopped.empty()) {
    // A partial answer is refused, also one with no layout: the layouts kept (or the verdict
    // that none is valid or fits) are those of the part searched only.
    const std::string& why = rep.result.stopped;
    const char* limit = why == "deadline" ? "max_seconds" : why == "max_layouts" ? "max_layouts" : "max_memory_mb";
    j.update(ErrorJson("search_stopped", StopWarning(in, rep.result), 1, {}, limit));
    return JsonAnswer(422, j);
  }
  if (!rep.failure.empty()) j.update(ErrorJson(rep.failure_kind, rep.failure, 1));
  if (format == "yaml") return {200, rep.failure.empty() ? RecipesYaml(rep.result, rep.request) : "", "application/yaml"};
  if (scatter) j["scatter"] = ScatterJson(rep.report_layouts, rep.request);
  if (launch) j["launch"] = LaunchJson(rep.result, rep.request);
  j["warnings"] = rep.warnings;
  return JsonAnswer(200, j);
}

// What check and explain share: the setup a recipe is judged in.
JudgeSetup JudgeSetupOf(Fields& f, Scratch& scratch, const Limits& limits) {
  JudgeSetup s;
  s.model = ModelOf(f, scratch, limits);
  s.system = SystemOf(f, limits);
  s.hwdb = HwdbOf(f, limits);
  const std::optional<int64_t> gpus = f.Int("gpus");
  if (!gpus) RequestError("gpus", "required: the number of GPUs (world size)");
  s.gpus = *gpus;
  s.seq_len = f.Int("seq_len");
  if (auto p = f.Str("precision")) s.precision = PrecisionOf("precision", *p);
  s.releases = ReleasesOf(f);
  s.mb_recipe = f.Str("mb_recipe").value_or("");
  InRange<double>("headroom", f.Real("headroom"), 0, 0.9, &s.headroom);
  s.generic_decoder = f.Bool("generic_decoder").value_or(false);
  return s;
}

const std::vector<std::string> kJudgeKeys = {"model", "model_config", "system", "hwdb", "gpus", "seq_len", "precision",
                                             "automodel_version", "mbridge_version", "mb_recipe", "headroom",
                                             "generic_decoder"};

std::vector<std::string> Keys(std::vector<std::string> keys, const std::vector<std::string>& more) {
  keys.insert(keys.end(), more.begin(), more.end());
  return keys;
}

// The recipe text of a request (`recipe`), written as recipe.yaml.
std::string RecipeOf(Fields& f, Scratch& scratch, bool required) {
  const std::optional<std::string> text = f.Str("recipe");
  if (!text) {
    if (required) RequestError("recipe", "required: the recipe's YAML text");
    return "";
  }
  return scratch.Write("recipe.yaml", *text);
}

Answer Check(Fields& f, Scratch& scratch, const Limits& limits) {
  CheckInput in;
  in.setup = JudgeSetupOf(f, scratch, limits);
  if (auto fw = f.Str("framework")) in.setup.framework = ParseFramework(*fw);
  in.recipe = RecipeOf(f, scratch, true);
  f.RefuseUnknown(Keys(kJudgeKeys, {"framework", "recipe"}));
  CheckReport rep = CheckRecipe(in);
  // Labels name the pasted file by its key, not its scratch path.
  rep.file = Without(rep.file, scratch.Prefix());
  for (CheckedDocument& d : rep.documents) {
    d.label = Without(d.label, scratch.Prefix());
    d.error = Without(d.error, scratch.Prefix());
  }
  return JsonAnswer(200, CheckJson(rep));
}

// A Megatron-Bridge override value that is an integer: the number, or its YAML text ("null").
std::optional<std::string> YamlCount(Fields& f, const std::string& key) {
  const json* v = f.Raw(key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (const std::optional<int64_t> n = f.Int(key)) return std::to_string(*n);
  return std::nullopt;
}

// The layout keys of explain: both frameworks', AutoModel's own, Megatron-Bridge's own (the
// CLI's flags of the same names, FrameworkOnlyLayoutFlags).
const std::vector<std::string> kExplainLayoutKeys = {
    "tp", "pp", "cp", "ep", "sequence_parallel", "recompute",
    "strategy", "dp_replicate", "local_batch", "pp_microbatch", "pp_schedule", "layers_per_stage",
    "vpp", "etp", "mbs", "dp_type", "fsdp_sharding", "recompute_modules", "recompute_method", "recompute_num_layers",
    "dispatcher", "flex_backend", "cp_comm_type", "pp_layout", "account_for_embedding_loss", "mtp_layers", "set"};

// `set`: a list of "KEY=VALUE" (the CLI's --set), or an object of dotted keys and their values.
std::vector<std::string> SetsOf(Fields& f) {
  const json* v = f.Raw("set");
  if (!v || !v->is_object()) return f.StrList("set");
  std::vector<std::string> sets;
  for (const auto& [key, value] : v->items()) sets.push_back(key + "=" + value.dump());  // JSON is YAML
  return sets;
}

// Megatron-Bridge layout keys: the override keys they give (MbFlagKeys), as the CLI's flags do.
std::vector<MbFlagKey> MegatronKeysOf(Fields& f) {
  MbLayoutFlags m;
  m.tp = f.Int("tp");
  m.pp = f.Int("pp");
  m.cp = f.Int("cp");
  m.ep = f.Int("ep");
  m.vpp = YamlCount(f, "vpp");
  m.etp = YamlCount(f, "etp");
  m.mbs = YamlCount(f, "mbs");
  m.sequence_parallel = f.Bool("sequence_parallel");
  m.recompute = f.Str("recompute");
  if (f.Has("recompute_modules")) m.recompute_modules = f.StrList("recompute_modules");
  m.recompute_method = f.Str("recompute_method");
  m.recompute_num_layers = YamlCount(f, "recompute_num_layers");
  m.dp_type = f.Str("dp_type");
  m.fsdp_sharding = f.Str("fsdp_sharding");
  m.dispatcher = f.Str("dispatcher");
  m.flex_backend = f.Str("flex_backend");
  m.cp_comm_type = f.Str("cp_comm_type");
  m.pp_layout = f.Str("pp_layout");
  m.account_for_embedding_loss = f.Bool("account_for_embedding_loss");
  m.mtp_layers = YamlCount(f, "mtp_layers");
  m.sets = SetsOf(f);
  return MbFlagKeys(m);
}

// AutoModel layout keys (LayoutKeys; defaults as the CLI's).
void AutoModelKeysOf(Fields& f, LayoutKeys& k) {
  if (auto s = f.Str("strategy")) k.strategy = ParseStrategy(*s);
  for (const auto& [key, into] : std::initializer_list<std::pair<const char*, int64_t*>>{
           {"tp", &k.tp}, {"pp", &k.pp}, {"cp", &k.cp}, {"ep", &k.ep}, {"dp_replicate", &k.dp_replicate},
           {"local_batch", &k.local_batch}, {"pp_microbatch", &k.pp_microbatch}}) {
    if (auto v = f.Int(key)) *into = *v;
  }
  if (auto s = f.Str("pp_schedule")) {
    if (*s != "1f1b" && *s != "interleaved1f1b") RequestError("pp_schedule", "expected one of 1f1b, interleaved1f1b; found '" + *s + "'");
    k.pp_schedule = *s == "interleaved1f1b" ? PpSchedule::kInterleaved1F1B : PpSchedule::k1F1B;
    k.pp_schedule_given = true;
  }
  k.layers_per_stage = f.Int("layers_per_stage");
  k.sequence_parallel = f.Bool("sequence_parallel").value_or(false);
  if (auto r = f.Str("recompute")) {
    if (*r != "none" && *r != "selective" && *r != "full") RequestError("recompute", "expected one of none, selective, full; found '" + *r + "'");
    k.recompute = *r == "full" ? Recompute::kFull : *r == "selective" ? Recompute::kSelective : Recompute::kNone;
  }
}

Answer Explain(Fields& f, Scratch& scratch, const Limits& limits) {
  ExplainInput in;
  in.setup = JudgeSetupOf(f, scratch, limits);
  in.setup.global_batch = f.Int("global_batch");
  in.recipe = RecipeOf(f, scratch, false);
  const std::optional<std::string> framework = f.Str("framework");
  if (framework && !in.recipe.empty()) {
    RequestError("framework", "expected either recipe (its framework is read from its keys) or framework, found both");
  }
  if (framework) in.setup.framework = ParseFramework(*framework);
  // The layout keys given, as the CLI's flags ("dp_type" is --dp-type): the other framework's
  // are refused as the CLI refuses them.
  std::set<std::string> given;
  for (const std::string& key : kExplainLayoutKeys) {
    if (!f.Has(key)) continue;
    if (!in.recipe.empty()) RequestError(key, "expected either recipe or the layout's keys, found both");
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    given.insert(flag);
  }
  const FrameworkOps& fw = FrameworkOf(in.setup.framework.value_or(kDefaultFramework));
  RefuseOtherFrameworkFlags(fw, given);
  if (fw.override_key_flags) {
    in.mb_keys = MegatronKeysOf(f);
  } else {
    AutoModelKeysOf(f, in.keys);
  }
  in.memory_profile = f.Str("memory_profile").value_or("");
  if (!in.memory_profile.empty() && in.memory_profile != "pytorch" && in.memory_profile != "megatron" &&
      in.memory_profile != "megatron-bridge") {
    RequestError("memory_profile", "expected one of pytorch, megatron, megatron-bridge; found '" + in.memory_profile + "'");
  }
  in.fp32_params = f.Bool("fp32_params").value_or(false);
  in.defer_fsdp_grad_sync = f.Bool("defer_fsdp_grad_sync");  // unset: the recipe's, else AutoModel's true
  in.adam_impl = f.Str("adam_impl").value_or("");
  if (!in.adam_impl.empty() && in.adam_impl != "foreach" && in.adam_impl != "fused" && in.adam_impl != "forloop") {
    RequestError("adam_impl", "expected one of foreach, fused, forloop; found '" + in.adam_impl + "'");
  }
  f.RefuseUnknown(Keys(Keys(kJudgeKeys, kExplainLayoutKeys), {"global_batch", "recipe", "framework", "memory_profile",
                                                              "fp32_params", "defer_fsdp_grad_sync", "adam_impl"}));
  return JsonAnswer(200, ExplainJson(ExplainLayout(in)));
}

Answer Validate(Fields& f, Scratch& scratch, const Limits& limits) {
  ValidateRequest req;
  const std::optional<std::string> runs = f.Str("runs");
  // runs_path (the Python module, which reads files): the CSV read where it lies, so that its
  // rows' meshplan_model paths resolve beside it as the CLI's do.
  const std::optional<std::string> runs_path = f.Str("runs_path");
  if (runs_path) {
    if (!limits.allow_paths) RequestError("runs_path", "expected the CSV text in runs; this server reads no files");
    if (runs) RequestError("runs_path", "expected runs or runs_path, not both");
  } else if (!runs) {
    RequestError("runs", "required: the CSV text of the published runs");
  }
  if (runs && limits.max_sweep_points > 0) {
    const int64_t lines = std::count(runs->begin(), runs->end(), '\n');
    if (lines > limits.max_sweep_points) {
      RequestError("runs", "expected at most " + std::to_string(limits.max_sweep_points) + " lines, found " +
                               std::to_string(lines));
    }
  }
  req.runs = runs_path ? *runs_path : scratch.Write("runs.csv", *runs);
  req.hwdb = HwdbOf(f, limits);
  InRange<int>("rank_top", f.Int("rank_top"), 0, 100000, &req.rank_top);
  req.rank_seconds = 20;
  if (limits.max_seconds > 0) req.rank_seconds = std::min(req.rank_seconds, limits.max_seconds);
  InRange<double>("rank_seconds", f.Real("rank_seconds"), 0.001, limits.max_seconds > 0 ? limits.max_seconds : 1e6,
                  &req.rank_seconds);
  InRange<double>("headroom", f.Real("headroom"), 0, 0.9, &req.headroom);
  req.recipe_settings = f.Str("recipe_settings").value_or("");
  if (!req.recipe_settings.empty() && req.recipe_settings != "none") {
    RefusePath("recipe_settings", req.recipe_settings, limits, "\"\" or \"none\"");
  }
  f.RefuseUnknown({"runs", "runs_path", "hwdb", "rank_top", "rank_seconds", "headroom", "recipe_settings"});
  ValidateReport rep = Validate(req);
  return JsonAnswer(200, ValidateJson(rep));
}

// The serialised commands run one at a time: a search uses every core already.
std::mutex& CommandMutex() {
  static std::mutex m;
  return m;
}

Answer Run(const std::string& command, const std::string& body, const Limits& limits, Scratch& scratch) {
  if (command == "models") return JsonAnswer(200, ModelsJson());
  if (command == "systems") return JsonAnswer(200, SystemsJson());
  if (command == "gpus") return JsonAnswer(200, GpusJson());
  json j;
  try {
    j = json::parse(body.empty() ? "{}" : body);
  } catch (const json::parse_error& e) {
    // nlohmann's byte offset: the request is one line or many; say both where known.
    throw InputError({"request", 0, 0}, "", std::string("expected a JSON object, found text that is not JSON: ") + e.what());
  }
  Fields f(j);
  if (command == "plan") return Plan(f, scratch, limits);
  if (command == "check") return Check(f, scratch, limits);
  if (command == "explain") return Explain(f, scratch, limits);
  if (command == "validate") return Validate(f, scratch, limits);
  throw InputError({"request", 0, 0}, "", "unknown command '" + command + "'");
}

}  // namespace

Answer Call(const std::string& command, const std::string& request, const Limits& limits) {
  std::string prefix;
  try {
    Scratch scratch;
    prefix = scratch.Prefix();
    const std::lock_guard<std::mutex> lock(CommandMutex());
    return Run(command, request, limits, scratch);
  } catch (const InputError& e) {
    return InputAnswer(e, prefix);
  } catch (const std::exception& e) {
    return JsonAnswer(500, ErrorJson("internal", Without(e.what(), prefix), 3));
  } catch (...) {
    return JsonAnswer(500, ErrorJson("internal", "unknown exception", 3));
  }
}

}  // namespace meshplan::api
