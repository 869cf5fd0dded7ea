// Requests: names parsed, numbers checked, model and system loaded, then everything that depends
// on them derived (BuildRequest) — the one way plan, its sweep points, check and explain build one.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "commands/internal.hpp"
#include "frameworks/megatron_bridge/space.hpp"

namespace meshplan {

namespace commands {


void FlagError(const std::string& flag, const std::string& message) {
  throw InputError({"<command line>", 0, 0}, flag, message);
}

int64_t CheckedCount(long long v, const std::string& flag, long long max, const std::string& prefix) {
  if (v < 1 || v > max) {
    FlagError(flag, prefix + "expected an integer in [1, " + std::to_string(max) + "], found " + std::to_string(v));
  }
  return v;
}

std::string FrameworksWith(bool FrameworkOps::*option, bool as_layout) {
  std::string names;
  for (const FrameworkOps* f : Frameworks()) {
    if (!(f->*option)) continue;
    names += (names.empty() ? "" : " or ") + (as_layout ? std::string(f->a_layout) : std::string("--framework ") + f->name);
  }
  return names;
}

std::string UnfittedNote(const PlanRequest& req) { return FrameworkOf(req.framework).unfitted_note(req); }

std::vector<RuleFailure> RuleFailures(const RuleContext& ctx) {
  std::vector<RuleFailure> out;
  for (const Rule* r : AllFailures(ctx)) out.push_back({r->name, r->explain(ctx), r->source});
  return out;
}

std::string ReplacesNote(const char* flag, const std::string& used, bool recipe_sets, const std::string& recipe) {
  if (!recipe_sets || used == recipe) return "";
  return std::string(flag) + " " + used + " replaces the recipe's " + recipe;
}

}  // namespace commands

using commands::FlagError;

AutoModelVersion ParseAutoModelVersion(const std::string& name) {
  if (name == "0.5") return AutoModelVersion::kV05;
  if (name == "0.4") return AutoModelVersion::kV04;
  FlagError("--automodel-version", "expected one of 0.5, 0.4; found '" + name + "'");
}

MBridgeVersion ParseMBridgeVersion(const std::string& name) {
  if (name == "main") return MBridgeVersion::kMain;
  if (name == "core0.15") return MBridgeVersion::kCore015;
  FlagError("--mbridge-version", "expected one of main, core0.15; found '" + name + "'");
}

Framework ParseFramework(const std::string& name) {
  if (const FrameworkOps* f = FindFramework(name)) return f->id;
  FlagError("--framework", "expected one of automodel, megatron-bridge; found '" + name + "'");
}

Strategy ParseStrategy(const std::string& name) {
  for (Strategy s : {Strategy::kFsdp2, Strategy::kMegatronFsdp, Strategy::kDdp}) {
    if (name == StrategyName(s)) return s;
  }
  FlagError("--strategy", "expected one of fsdp2, megatron_fsdp, ddp; found '" + name + "'");
}

const char* FrameworkTitle(Framework framework) { return commands::WordsOf(framework).title; }

const char* SeqLenKey(Framework framework) { return commands::WordsOf(framework).seq_len_key; }

std::pair<AutoModelVersion, MBridgeVersion> ResolveReleases(const ReleaseChoice& asked, Framework framework,
                                                            bool by_framework_flag) {
  // Each framework takes its own version flag only.
  const FrameworkOps& self = FrameworkOf(framework);
  for (const FrameworkOps* other : Frameworks()) {
    if (other == &self || !other->version_given(asked)) continue;
    FlagError(other->version_flag,
              by_framework_flag ? std::string("expected only with --framework ") + other->name +
                                      ", found --framework " + self.name
                                : std::string("expected only with ") + other->a_layout + " layout, found " +
                                      self.a_layout + " one");
  }
  return {asked.automodel.value_or(AutoModelVersion::kV05), asked.mbridge.value_or(MBridgeVersion::kMain)};
}

double CheckedReal(double v, const char* flag, double min, double max) {
  if (!std::isfinite(v) || v < min || v > max) {
    std::ostringstream os;
    os << "expected a number in [" << min << ", " << max << "], found " << v;
    FlagError(flag, os.str());
  }
  return v;
}

double ResolveHeadroom(double given, Framework framework) {
  if (given == kFrameworkHeadroom) return FrameworkOf(framework).default_headroom;
  return CheckedReal(given, "--headroom", 0.0, 0.9);
}

std::string GpuCountProblem(const SystemSpec& system, int64_t gpus) {
  const int64_t gpn = std::max(1, system.gpus_per_node);
  if (gpus <= gpn || gpus % gpn == 0) return "";
  return "expected a multiple of the " + std::to_string(gpn) + " GPUs per node of " + system.name +
         " (or at most one node), found " + std::to_string(gpus);
}

std::string SeqLenWarning(const ModelSpec& model, int64_t seq_len) {
  if (model.max_position_embeddings <= 0 || seq_len <= model.max_position_embeddings) return "";
  return "seq_len " + std::to_string(seq_len) + " is longer than the max_position_embeddings (" +
         std::to_string(model.max_position_embeddings) + ") of " + model.name +
         ": the model was not trained on positions that far; extend its context (e.g. rope_scaling) or shorten the "
         "sequence (planned anyway)";
}

std::chrono::steady_clock::time_point SearchDeadline(double max_seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(max_seconds));
}

LoadedInputs LoadInputs(const std::string& model, const std::string& system, const std::string& hwdb, int64_t gpus,
                        const PointSource& source, bool generic_decoder, bool rules_only_hybrid) {
  LoadedInputs in{LoadModel(model, ModelReadOptions{generic_decoder}), LoadSystem(system, hwdb)};
  // Block kinds no framework prices (check still judges such a recipe by the framework's rules);
  // the framework's own refusal waits for BuildRequest.
  if (const std::string why = HybridRefusal(in.model); !why.empty() && !rules_only_hybrid) {
    throw InputError(in.model.source, "model", why);
  }
  if (const std::string problem = GpuCountProblem(in.system, gpus); !problem.empty()) {
    FlagError(source.gpus_flag, source.gpus_prefix + problem);
  }
  return in;
}

PlanRequest BuildRequest(const RequestSettings& s, LoadedInputs loaded) {
  // A hybrid model is priced by the frameworks whose cost terms have its block kinds, and an
  // architecture only by the frameworks that train it. (Block kinds no framework prices were
  // refused, or let through for check's rules, by LoadInputs.)
  std::string why = HybridRefusal(loaded.model).empty() && !s.rules_only_hybrid
                        ? FrameworkHybridRefusal(FrameworkOf(s.framework), loaded.model)
                        : "";
  if (why.empty()) why = FrameworkOf(s.framework).unsupported_model(loaded.model);
  if (!why.empty()) {
    throw InputError(loaded.model.source, "model", why);
  }
  PlanRequest req;
  req.model = std::move(loaded.model);
  req.system = std::move(loaded.system);
  req.setup = s.setup;
  req.framework = s.framework;
  req.version = s.version;
  req.mb_version = s.mb_version;
  req.top_n = s.top_n;
  req.max_micro_batch = s.max_micro_batch;
  req.max_layouts = s.max_layouts;
  req.max_memory_bytes = s.max_memory_bytes;
  if (!s.strategies.empty()) {
    req.strategies = s.strategies;
    // Megatron-Bridge torch FSDP2 only when asked for (search.hpp PlanRequest::mb_torch_fsdp2).
    req.mb_torch_fsdp2 = std::find(s.strategies.begin(), s.strategies.end(), Strategy::kFsdp2) != s.strategies.end();
  }
  // The searched recompute_modules sets depend on the model's architecture (MLA, MoE).
  if (s.recompute_modules) req.mb_recompute_module_sets = search::SearchedRecomputeModules(req.model);
  req.mb_search_dispatchers = s.search_dispatchers;
  req.mb_recipe_function = s.mb_recipe_function;
  if (s.max_seconds > 0) req.deadline = SearchDeadline(s.max_seconds);
  return req;
}

PlanRequest BuildPlanRequest(const PlanInput& in, const PointSource& source) {
  const PlanOutputs& out = in.outputs;
  for (const auto& [path, name] : {std::pair{&out.out, "--out"}, {&out.report, "--report"}}) {
    if (*path && (*path)->empty()) FlagError(name, "expected a file path, found an empty string");
  }
  for (const auto& [given, name] : {std::pair{out.nodes.has_value(), "--nodes"},
                                    {out.gpus_per_node.has_value(), "--gpus-per-node"},
                                    {out.hf_model.has_value(), "--hf-model"}}) {
    if (given && !out.emit_launch) FlagError(name, "expected together with --emit-launch (it sets the launch files)");
  }
  RequestSettings s;
  s.framework = in.framework;
  std::tie(s.version, s.mb_version) = ResolveReleases(in.releases, in.framework, /*by_framework_flag=*/true);
  if (!in.gpus) FlagError("--gpus", "--gpus is required (or give --sweep-gpus)");
  if (!in.seq_len) FlagError("--seq-len", "--seq-len is required (or give --sweep-seq)");
  s.setup.num_gpus = commands::CheckedCount(*in.gpus, source.gpus_flag, 1LL << 20, source.gpus_prefix);
  s.setup.seq_len = commands::CheckedCount(*in.seq_len, source.seq_len_flag, 1LL << 24, source.seq_len_prefix);
  s.setup.global_batch = commands::CheckedCount(in.global_batch, "--global-batch", 1LL << 30);
  s.setup.precision = in.precision;
  s.setup.headroom = ResolveHeadroom(in.headroom, s.framework);
  s.max_seconds = CheckedReal(in.max_seconds, "--max-seconds", 0.001, 1e6);
  if (in.max_layouts < 0) {
    FlagError("--max-layouts",
              "expected a non-negative integer (0 = no limit), found " + std::to_string(in.max_layouts));
  }
  s.max_layouts = in.max_layouts;
  if (in.max_memory_mb < 0 || in.max_memory_mb > (1LL << 30)) {
    FlagError("--max-memory-mb",
              "expected an integer in [0, 1073741824] MiB (0 = no limit), found " + std::to_string(in.max_memory_mb));
  }
  s.max_memory_bytes = static_cast<int64_t>(in.max_memory_mb) << 20;
  s.top_n = static_cast<int>(commands::CheckedCount(in.top, "--top", 1000));
  s.max_micro_batch = commands::CheckedCount(in.max_micro_batch, "--max-micro-batch", 1024);
  s.recompute_modules = in.recompute_modules;
  s.search_dispatchers = in.search_dispatchers;
  s.mb_recipe_function = in.mb_recipe;
  for (size_t i = 0; i < in.strategies.size(); ++i) {
    if (std::find(in.strategies.begin(), in.strategies.begin() + i, in.strategies[i]) != in.strategies.begin() + i) {
      FlagError("--strategy", std::string("expected distinct values, found ") + StrategyName(in.strategies[i]) + " twice");
    }
  }
  s.strategies = in.strategies;
  LoadedInputs loaded = LoadInputs(in.model, in.system, in.hwdb, s.setup.num_gpus, source, in.generic_decoder);
  if (s.setup.precision == Precision::kFp8 && loaded.system.gpu.fp8_flops <= 0) {
    FlagError("--precision", "fp8 requested but " + loaded.system.gpu.display_name + " has no FP8 tensor cores; use bf16");
  }
  PlanRequest req = BuildRequest(s, std::move(loaded));
  req.risk_ranking = !in.rank_by_step;
  req.distinct_layouts = !in.all_variants;
  return req;
}

}  // namespace meshplan
