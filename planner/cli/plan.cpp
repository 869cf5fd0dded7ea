// `meshplan plan`: model + system + GPU count + training setup -> ranked AutoModel recipes.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <cerrno>
#include <unistd.h>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/list_option.hpp"
#include "meshplan/launch.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/report.hpp"
#include "recipe/format.hpp"
#include "recipe/term_signals.hpp"
#include "search/megatron_space.hpp"

namespace meshplan::cli {

void AddPlanCommand(CLI::App& app, PlanOptions& o) {
  CLI::App* cmd = app.add_subcommand("plan", "search every valid layout and print the best recipes");
  cmd->add_option("--model", o.model, "preset name (meshplan list models) or path to config.json / model YAML")
      ->required();
  cmd->add_option("--system", o.system, "system name (meshplan list systems) or path to a system YAML")->required();
  cmd->add_option("--gpus", o.gpus, "number of GPUs (world size); required unless --sweep-gpus");
  cmd->add_option("--seq-len", o.seq_len, "tokens per sequence; required unless --sweep-seq");
  cmd->add_option("--global-batch", o.global_batch, "sequences per optimizer step")->required();
  cmd->add_option("--precision", o.precision, "GEMM precision")->check(CLI::IsMember({"bf16", "fp8"}));
  cmd->add_option("--framework", o.framework, "framework whose rules and recipe format apply")
      ->check(CLI::IsMember({"automodel", "megatron-bridge"}));
  cmd->add_option("--automodel-version", o.automodel_version,
                  "AutoModel release whose rules apply (0.5 = current main; 0.4 = v0.3/v0.4 EP rule)")
      ->check(CLI::IsMember({"0.5", "0.4"}));
  cmd->add_option("--mbridge-version", o.mbridge_version,
                  "Megatron-Bridge release whose rules apply (main = current, on Megatron-Core >= 0.16; core0.15 = "
                  "a release on Megatron-Core <= 0.15, without KV-head replication)")
      ->check(CLI::IsMember({"main", "core0.15"}));
  AddListOption(cmd, "--strategy", o.strategies, "restrict to these strategies (default: all)",
                "a comma-separated list of fsdp2, megatron_fsdp, ddp",
                CLI::IsMember({"fsdp2", "megatron_fsdp", "ddp"}));
  cmd->add_option("--top", o.top, "number of recipes to print (1..1000)")->check(CLI::Range(1, 1000));
  cmd->add_option("--format", o.format, "stdout format")->check(CLI::IsMember({"table", "yaml", "json"}));
  cmd->add_option("--out", o.out, "write the top recipes to this file (YAML; JSON with --format json)");
  cmd->add_flag("--force", o.force, "replace --out if it exists");
  cmd->add_option("--headroom", o.headroom, "fraction of GPU memory kept free (0..0.9)")->check(CLI::Range(0.0, 0.9));
  cmd->add_flag("--recompute-modules", o.recompute_modules,
                "Megatron-Bridge: also search selective recompute with the recompute_modules sets of NVIDIA's perf "
                "recipes ([mla_up_proj], [layernorm,moe_act], ... as the model allows)");
  cmd->add_option("--max-micro-batch", o.max_micro_batch, "largest micro-batch enumerated (1..1024)")
      ->check(CLI::Range(1LL, 1024LL));
  AddListOption(cmd, "--sweep-gpus", o.sweep_gpus, "capacity planning: the best layout at each GPU count (8,16,...)",
                "a comma-separated list of integers");
  AddListOption(cmd, "--sweep-seq", o.sweep_seq, "capacity planning: the best layout at each sequence length",
                "a comma-separated list of integers");
  cmd->add_option("--hwdb", o.hwdb, "hardware database directory (default: the embedded hwdb/)");
  cmd->add_option("--max-seconds", o.max_seconds,
                  "stop the search after this many seconds and print the best layouts so far (default 300)");
  cmd->add_option("--max-layouts", o.max_layouts,
                  "stop the search after testing this many layouts (default: no limit)");
  cmd->add_option("--max-memory-mb", o.max_memory_mb,
                  "stop the search when meshplan's resident memory exceeds this many MiB and print the best "
                  "layouts so far (default: no limit)");
  cmd->add_flag("--emit-launch", o.emit_launch,
                "beside --out write OUT-stem.rankN.yaml, .launch.sh (torchrun) and .sbatch (Slurm) per recipe");
  cmd->add_flag("--full-recipe", o.full_recipe, "with --emit-launch: complete AutoModel recipes (model, dataset, ...)");
  cmd->add_option("--nodes", o.nodes, "launch: number of nodes (default: --gpus / GPUs per node)");
  cmd->add_option("--gpus-per-node", o.gpus_per_node, "launch: GPUs per node (default: the system's)");
  cmd->add_option("--hf-model", o.hf_model, "launch: Hugging Face model id of the full recipe (default: the preset's)");
  cmd->add_option("--report", o.report, "write a self-contained HTML report (tables and SVG charts) to this file");
  // Options whose default is also a valid value: recorded when given, so that a meaningless
  // combination (--nodes without --emit-launch, --mbridge-version with AutoModel) is refused.
  for (const char* name : {"--out", "--report", "--nodes", "--gpus-per-node", "--hf-model"}) {
    cmd->get_option(name)->each([&o, name](const std::string&) { o.given.insert(name); });
  }
  TrackVersionFlags(cmd, o.given);
}

namespace {

// `prefix` goes before the message (a sweep's "point 12: ").
int64_t CheckedCount(long long v, const std::string& flag, long long max, const std::string& prefix = "") {
  if (v < 1 || v > max) {
    throw InputError({"<command line>", 0, 0}, flag,
                     prefix + "expected an integer in [1, " + std::to_string(max) + "], found " + std::to_string(v));
  }
  return v;
}

Strategy ParseStrategy(const std::string& s) {
  if (s == "megatron_fsdp") return Strategy::kMegatronFsdp;
  if (s == "ddp") return Strategy::kDdp;
  return Strategy::kFsdp2;
}

// Every file a plan run writes, with the option that names it: --out, the launch files of
// `recipes` recipes beside it (--emit-launch), --report.
std::vector<std::pair<std::string, const char*>> OutputTargets(const PlanOptions& o, size_t recipes) {
  std::vector<std::pair<std::string, const char*>> targets;
  if (!o.out.empty()) targets.emplace_back(o.out, "--out");
  if (o.emit_launch) {
    for (size_t i = 0; i < recipes; ++i) {
      const LaunchPaths p = LaunchFilePaths(o.out, static_cast<int>(i + 1));
      for (const std::string& f : {p.recipe, p.launch, p.sbatch}) targets.emplace_back(f, "--emit-launch");
    }
  }
  if (!o.report.empty()) targets.emplace_back(o.report, "--report");
  return targets;
}

// Two outputs of one run that are one file: the later would replace the earlier (with --force)
// or stop the run half-written (without). Throws InputError on the later one. Compared by the
// weakly canonical path of the directory and the file name ("./a.yaml", "d/../a.yaml" and
// "link-to-this-dir/a.yaml" are a.yaml), after the symbolic links at the file itself, which
// WriteFileAtomically writes through.
void RefuseSameOutputs(const std::vector<std::pair<std::string, const char*>>& targets) {
  std::vector<std::filesystem::path> seen;
  for (const auto& [path, flag] : targets) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(ResolveOutputPath(path, flag), ec);
    std::filesystem::path p = std::filesystem::weakly_canonical(abs.parent_path(), ec) / abs.filename();
    if (ec) p = abs.lexically_normal();
    for (size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] != p) continue;
      const std::string what = targets[i].second == std::string("--emit-launch")
                                   ? "the launch file " + targets[i].first + " that --emit-launch writes beside --out"
                                   : std::string(targets[i].second) + " " + targets[i].first;
      throw InputError({path, 0, 0}, flag,
                       "is the same file as " + what +
                           "; expected a different path for each output (nothing was written)");
    }
    seen.push_back(p);
  }
}

std::string TopRules(const PlanResult& r, size_t n) {
  std::string s;
  for (size_t i = 0; i < r.rejected_by_rule.size() && i < n; ++i) {
    if (i) s += ", ";
    s += r.rejected_by_rule[i].first + " (" + std::to_string(r.rejected_by_rule[i].second) + ")";
  }
  return s;
}

}  // namespace

std::string UnfittedMegatronWarning(const SystemSpec& system) {
  if (system.megatron_fit.fitted) return "";
  if (!system.megatron_fit.borrowed_from.empty()) {
    return "note: " + system.name + " has no fitted Megatron-Core step-time constants (megatron_time_fit): its "
           "Megatron-Bridge step times use those of " + system.megatron_fit.borrowed_from +
           ", not checked against runs of this system (fit its own with validate --fit)";
  }
  return "warning: " + system.name + " has no fitted Megatron-Core step-time constants (megatron_time_fit): its "
         "Megatron-Bridge step times are the unfitted physical model, GEMMs at the measured best rate (MAMF), and "
         "read fast; the fitted systems' GEMM factors are 1.2-2.5 (hwdb/systems/dgx-h100.yaml and others; fit yours "
         "with validate --fit)";
}

double CheckedReal(double v, const char* flag, double min, double max) {
  if (!std::isfinite(v) || v < min || v > max) {
    std::ostringstream os;
    os << "expected a number in [" << min << ", " << max << "], found " << v;
    throw InputError({"<command line>", 0, 0}, flag, os.str());
  }
  return v;
}

std::string GpuCountProblem(const SystemSpec& system, int64_t gpus) {
  const int64_t gpn = std::max(1, system.gpus_per_node);
  if (gpus <= gpn || gpus % gpn == 0) return "";
  return "expected a multiple of the " + std::to_string(gpn) + " GPUs per node of " + system.name +
         " (or at most one node), found " + std::to_string(gpus);
}

void CheckGpuCount(const SystemSpec& system, int64_t gpus, const char* flag) {
  const std::string problem = GpuCountProblem(system, gpus);
  if (!problem.empty()) throw InputError({"<command line>", 0, 0}, flag, problem);
}

std::string SeqLenWarning(const ModelSpec& model, int64_t seq_len) {
  if (model.max_position_embeddings <= 0 || seq_len <= model.max_position_embeddings) return "";
  return "seq_len " + std::to_string(seq_len) + " is longer than the max_position_embeddings (" +
         std::to_string(model.max_position_embeddings) + ") of " + model.name +
         ": the model was not trained on positions that far; extend its context (e.g. rope_scaling) or shorten the "
         "sequence (planned anyway)";
}

void CheckOutputPath(const std::string& user_path, const char* flag, bool force) {
  if (user_path.empty()) return;
  const SourceLoc loc{user_path, 0, 0, /*output=*/true};
  // The file a symbolic link leads to, which WriteFileAtomically writes.
  const std::string path = ResolveOutputPath(user_path, flag);
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::absolute(path, ec).parent_path();
  if (!std::filesystem::is_directory(parent, ec)) {
    throw InputError(loc, flag, "expected a file in an existing directory; '" + parent.string() +
                                    "' is not a directory (nothing was written)");
  }
  if (std::filesystem::is_directory(path, ec)) throw InputError(loc, flag, "is a directory; expected a file path");
  // A device or FIFO is refused as such, not as an existing file that --force would replace.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw InputError(loc, flag, "expected a regular file to replace, found another kind of file (a device, FIFO or socket)");
  }
  if (!force && std::filesystem::exists(path, ec)) {
    throw InputError(loc, flag, "file exists; pass --force to replace it (nothing was written)");
  }
  // The file is written through a temporary beside it and a rename: try that now (a read-only
  // directory, /proc, a name too long), so the search is not run for nothing.
  // SIGINT / SIGTERM / SIGHUP are held back until the probe is gone, so that a run killed
  // here leaves no temporary file (a pending signal is delivered at the unblock).
  TermSignalsHeld held;
  std::string probe = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(probe.data());
  const int mkstemp_errno = errno;
  bool renamable = false;
  if (fd >= 0) {
    ::close(fd);
    renamable = std::rename(probe.c_str(), (probe + "x").c_str()) == 0;
    std::remove(renamable ? (probe + "x").c_str() : probe.c_str());
  }
  held.Release();
  if (fd < 0) {
    throw InputError(loc, flag, std::string("cannot create a file next to it: ") + std::strerror(mkstemp_errno) +
                                    " (nothing was written)");
  }
  if (!renamable) throw InputError(loc, flag, "cannot rename a file in its directory (nothing was written)");
}

void RefuseInputsAsOutputs(const std::vector<std::pair<std::string, const char*>>& targets,
                           const std::vector<std::pair<std::string, const char*>>& inputs) {
  for (const auto& [path, flag] : targets) {
    for (const auto& [in, in_flag] : inputs) {
      std::error_code ec;
      if (in.empty() || !std::filesystem::is_regular_file(in, ec) || !std::filesystem::exists(path, ec)) continue;
      if (!std::filesystem::equivalent(path, in, ec) || ec) continue;
      throw InputError({path, 0, 0, /*output=*/true}, flag,
                       std::string("is the ") + in_flag + " file " + in +
                           ", an input of this run; expected a different path (nothing was written)");
    }
  }
}

nlohmann::json ErrorJson(const std::string& kind, const std::string& message, int exit_status, const SourceLoc& loc,
                         const std::string& field) {
  auto or_null = [](auto v, bool known) { return known ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const bool file = !loc.file.empty() && loc.file != "<command line>";
  return {{"error",
           {{"kind", kind},
            {"message", message},
            {"exit_status", exit_status},
            {"file", or_null(loc.file, file && !loc.output)},
            {"output", or_null(loc.file, file && loc.output)},
            {"line", or_null(loc.line, loc.line > 0)},
            {"column", or_null(loc.column, loc.column > 0)},
            {"field", or_null(field, !field.empty())}}}};
}

std::string JsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string StopWarning(const PlanOptions& o, const PlanResult& result) {
  std::string why = "--max-layouts " + std::to_string(o.max_layouts) + " reached";
  if (result.stopped == "deadline") {
    std::ostringstream v;
    v << o.max_seconds;  // as given: 0.05, not a rounded 0.1
    why = "--max-seconds " + v.str() + " reached";
  }
  if (result.stopped == "memory") {
    why = "--max-memory-mb " + std::to_string(o.max_memory_mb) + " exceeded: meshplan holds " +
          recipe::Fixed(static_cast<double>(ResidentBytes()) / (1 << 20), 1) + " MiB resident";
  }
  return "meshplan: warning: search stopped early (" + why + ") after " + std::to_string(result.tested) +
         " layouts tested (" + std::to_string(result.enumerated) +
         " generated, counting the partial layouts of the mesh and feature rules); results are the best found so far";
}

PlanRequest MakePlanRequest(const PlanOptions& o, const PointSource& source) {
  for (const char* name : {"--out", "--report"}) {
    const std::string& path = std::string(name) == "--out" ? o.out : o.report;
    if (o.given.count(name) && path.empty()) {
      throw InputError({"<command line>", 0, 0}, name, "expected a file path, found an empty string");
    }
  }
  for (const char* name : {"--nodes", "--gpus-per-node", "--hf-model"}) {
    if (o.given.count(name) && !o.emit_launch) {
      throw InputError({"<command line>", 0, 0}, name, "expected together with --emit-launch (it sets the launch files)");
    }
  }
  RefuseOtherFrameworkVersion(o.given, o.framework == "megatron-bridge", /*by_framework_flag=*/true);
  if (o.gpus == kNotGiven) throw InputError({"<command line>", 0, 0}, "--gpus", "--gpus is required (or give --sweep-gpus)");
  if (o.seq_len == kNotGiven) throw InputError({"<command line>", 0, 0}, "--seq-len", "--seq-len is required (or give --sweep-seq)");
  PlanRequest req;
  req.setup.num_gpus = CheckedCount(o.gpus, source.gpus_flag, 1LL << 20, source.gpus_prefix);
  req.setup.seq_len = CheckedCount(o.seq_len, source.seq_len_flag, 1LL << 24, source.seq_len_prefix);
  req.setup.global_batch = CheckedCount(o.global_batch, "--global-batch", 1LL << 30);
  req.setup.precision = o.precision == "fp8" ? Precision::kFp8 : Precision::kBf16;
  req.setup.headroom = CheckedReal(o.headroom, "--headroom", 0.0, 0.9);
  const double max_seconds = CheckedReal(o.max_seconds, "--max-seconds", 0.001, 1e6);
  if (o.max_layouts < 0) {
    throw InputError({"<command line>", 0, 0}, "--max-layouts",
                     "expected a non-negative integer (0 = no limit), found " + std::to_string(o.max_layouts));
  }
  req.max_layouts = o.max_layouts;
  if (o.max_memory_mb < 0 || o.max_memory_mb > (1LL << 30)) {
    throw InputError({"<command line>", 0, 0}, "--max-memory-mb",
                     "expected an integer in [0, 1073741824] MiB (0 = no limit), found " +
                         std::to_string(o.max_memory_mb));
  }
  req.max_memory_bytes = static_cast<int64_t>(o.max_memory_mb) << 20;
  req.version = o.automodel_version == "0.4" ? AutoModelVersion::kV04 : AutoModelVersion::kV05;
  req.framework = o.framework == "megatron-bridge" ? Framework::kMegatronBridge : Framework::kAutoModel;
  req.mb_version = o.mbridge_version == "core0.15" ? MBridgeVersion::kCore015 : MBridgeVersion::kMain;
  req.top_n = static_cast<int>(CheckedCount(o.top, "--top", 1000));
  req.max_micro_batch = CheckedCount(o.max_micro_batch, "--max-micro-batch", 1024);
  if (!o.strategies.empty()) {
    req.strategies.clear();
    for (const std::string& s : o.strategies) {
      const Strategy st = ParseStrategy(s);
      if (std::find(req.strategies.begin(), req.strategies.end(), st) != req.strategies.end()) {
        throw InputError({"<command line>", 0, 0}, "--strategy", "expected distinct values, found " + s + " twice");
      }
      req.strategies.push_back(st);
    }
    // Megatron-Bridge torch FSDP2 only when asked for (search.hpp PlanRequest::mb_torch_fsdp2).
    req.mb_torch_fsdp2 = std::find(req.strategies.begin(), req.strategies.end(), Strategy::kFsdp2) != req.strategies.end();
  }
  req.model = LoadModel(o.model);
  req.system = LoadSystem(o.system, o.hwdb);
  // The searched recompute_modules sets depend on the model's architecture (MLA, MoE): after it is loaded.
  if (o.recompute_modules) req.mb_recompute_module_sets = search::SearchedRecomputeModules(req.model);
  const std::string gpus_problem = GpuCountProblem(req.system, req.setup.num_gpus);
  if (!gpus_problem.empty()) {
    throw InputError({"<command line>", 0, 0}, source.gpus_flag, source.gpus_prefix + gpus_problem);
  }
  if (req.setup.precision == Precision::kFp8 && req.system.gpu.fp8_flops <= 0) {
    throw InputError({"<command line>", 0, 0}, "--precision",
                     "fp8 requested but " + req.system.gpu.display_name + " has no FP8 tensor cores; use bf16");
  }

  req.deadline = SearchDeadline(max_seconds);
  return req;
}

std::chrono::steady_clock::time_point SearchDeadline(double max_seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(max_seconds));
}

int RunPlan(const PlanOptions& o) {
  if (!o.sweep_gpus.empty() || !o.sweep_seq.empty()) return RunSweep(o);
  PlanRequest req = MakePlanRequest(o);
  if (const std::string w = SeqLenWarning(req.model, req.setup.seq_len); !w.empty()) {
    std::cerr << "meshplan: warning: " << w << "\n";
  }
  if (o.emit_launch && o.out.empty()) {
    throw InputError({"<command line>", 0, 0}, "--emit-launch", "expected --out FILE (launch files are written beside it)");
  }
  if (o.full_recipe && !o.emit_launch) {
    throw InputError({"<command line>", 0, 0}, "--full-recipe", "expected together with --emit-launch");
  }
  if (o.given.count("--hf-model") && o.hf_model.empty()) {
    throw InputError({"<command line>", 0, 0}, "--hf-model", "expected a Hugging Face model id, found ''");
  }
  if (!o.hf_model.empty() && !o.full_recipe) {
    throw InputError({"<command line>", 0, 0}, "--hf-model",
                     "expected together with --full-recipe (only a full recipe has a model section to name it in)");
  }
  if (o.recompute_modules && req.framework != Framework::kMegatronBridge) {
    throw InputError({"<command line>", 0, 0}, "--recompute-modules",
                     "expected with --framework megatron-bridge only (AutoModel has no recompute_modules)");
  }
  if (o.full_recipe && req.framework == Framework::kMegatronBridge) {
    throw InputError({"<command line>", 0, 0}, "--full-recipe",
                     "expected with --framework automodel only (a Megatron-Bridge recipe is an override file; "
                     "--emit-launch writes it with its launch script)");
  }
  // The full AutoModel recipe builds the model from Hugging Face: a preset's id, a config.json
  // (AutoConfig.from_pretrained takes the file), or --hf-model. A meshplan model YAML has none.
  if (o.full_recipe && req.framework == Framework::kAutoModel && o.hf_model.empty() &&
      HuggingFaceId(req.model.name).empty()) {
    const std::string& f = req.model.source.file;
    if (f.size() < 5 || f.compare(f.size() - 5, 5, ".json") != 0) {
      throw InputError({"<command line>", 0, 0}, "--full-recipe",
                       "expected a Hugging Face model for the recipe's model section: a preset, a config.json, or "
                       "--hf-model ID; found the meshplan model file '" + f + "'");
    }
  }
  // 0 tells ResolveLaunchTopology to derive the value; typed, it is refused as -1 is.
  for (const auto& [flag, v] :
       {std::pair<const char*, long long>{"--nodes", o.nodes}, {"--gpus-per-node", o.gpus_per_node}}) {
    if (o.given.count(flag) && v == 0) {
      throw InputError({"<command line>", 0, 0}, flag, "expected a positive integer, found 0");
    }
  }
  LaunchTopology topo;
  if (o.emit_launch || o.nodes != 0 || o.gpus_per_node != 0) topo = ResolveLaunchTopology(req, o.nodes, o.gpus_per_node);
  if (const std::string note = LaunchTopologyNote(req, topo); o.emit_launch && !note.empty()) {
    std::cerr << "meshplan: warning: " << note << " (said in each launch file's header)\n";
  }
  // Output paths known before the search are checked before it: a long search must not end in
  // "file exists" or "no such directory" (the launch files, named per result, are checked after).
  // With as many launch files as --top asks for (the search may find fewer).
  const auto targets = OutputTargets(o, static_cast<size_t>(o.top));
  RefuseSameOutputs(targets);
  RefuseInputsAsOutputs(targets, {{o.model, "--model"}, {o.system, "--system"}});
  CheckOutputPath(o.out, "--out", o.force);
  CheckOutputPath(o.report, "--report", o.force);
  // Rank 1's launch files are written whenever a layout fits: refuse them before searching
  // (the other ranks' are checked once the number of recipes is known).
  if (o.emit_launch) {
    for (const auto& [path, flag] : OutputTargets(o, 1)) CheckOutputPath(path, flag, o.force);
  }
  // The report's scatter needs the fitting layouts: one search keeping the best kReportLayouts.
  if (!o.report.empty()) req.top_n = std::max(req.top_n, kReportLayouts);
  PlanResult result = Plan(req);
  std::vector<Candidate> all_top;
  if (!o.report.empty()) {
    all_top = result.top;
    req.top_n = static_cast<int>(o.top);
    if (result.top.size() > static_cast<size_t>(o.top)) result.top.resize(static_cast<size_t>(o.top));
  }
  if (!result.stopped.empty()) std::cerr << StopWarning(o, result) << "\n";
  if (req.framework == Framework::kMegatronBridge) {
    if (const std::string w = UnfittedMegatronWarning(req.system); !w.empty()) std::cerr << "meshplan: " << w << "\n";
    if (req.mb_torch_fsdp2) {
      std::cerr << "meshplan: warning: torch FSDP2 (dist.use_torch_fsdp2) is searched because --strategy names fsdp2; "
                   "Megatron-Bridge issue #2785 reports that it does not start (open), so it is left out by default: "
                   "prefer megatron_fsdp\n";
    }
  }
  // After an early stop only part of the space was searched: say so.
  const std::string part =
      result.stopped.empty() ? "" : " among the " + std::to_string(result.tested) + " layouts tested before the search stopped";
  if (result.valid == 0 || result.fitting == 0) {
    std::ostringstream why;
    if (result.valid == 0) {
      why << "no valid layout for " << req.model.name << " on " << req.setup.num_gpus << " GPUs with global batch "
          << req.setup.global_batch << " and seq_len " << req.setup.seq_len << part << ": every one of the "
          << result.enumerated << " candidates breaks a rule; most common: " << TopRules(result, 4);
    } else {
      const Candidate& c = *result.least_memory;
      // A shorter sequence shrinks activations and logits, not the gradients and Adam state of
      // an optimizer-step peak; lowering the headroom helps only when the need fits the whole GPU.
      const bool optimizer_peak = std::string(c.cost.memory.phase) == "optimizer step";
      const bool headroom = c.cost.memory.Total() <= req.system.gpu.memory_bytes;
      std::vector<std::string> fixes = {"add GPUs"};
      if (!optimizer_peak) fixes.push_back("shorten the sequence");
      if (headroom) fixes.push_back("lower --headroom");
      std::string fix;
      for (size_t i = 0; i < fixes.size(); ++i) fix += (i == 0 ? "" : i + 1 == fixes.size() ? " or " : ", ") + fixes[i];
      if (optimizer_peak) {
        fix += " (the peak is the optimizer step: weights, gradients and optimizer state, which a shorter sequence "
               "does not lower)";
      }
      why << "no layout fits in memory" << part << ": the smallest need is "
          << recipe::Fixed(recipe::GiB(c.cost.memory.Total()), 1) << " GiB per GPU (" << Describe(c.layout)
          << "), above the usable " << recipe::Fixed(recipe::GiB(c.cost.capacity_bytes), 1) << " GiB of "
          << req.system.gpu.display_name << " (" << recipe::Fixed(100 * req.setup.headroom, 0)
          << "% headroom kept free); "
          << (!part.empty() ? "raise the limit to search further" : fix);
    }
    std::cerr << "meshplan: " << why.str() << "\n";
    if (o.format == "json") {
      // The plan's JSON (request, counts, rejected_by_rule, no recipes) with the error.
      nlohmann::json j = nlohmann::json::parse(ResultJson(result, req));
      j.update(ErrorJson(result.valid == 0 ? "no_valid_layout" : "no_layout_fits", why.str(), 1));
      std::cout << JsonText(j);
    }
    return 1;
  }

  // JSON goes to stdout after the files are written, so that a failure to write them leaves
  // only the error's JSON there (main prints it).
  if (o.format == "yaml") {
    std::cout << RecipesYaml(result, req);
    std::cerr << "meshplan: " << SearchSummary(result, req) << "\n";  // stdout stays one YAML stream
  } else if (o.format == "table") {
    std::cout << RankTable(result, req);
  }
  // Files are written whole or not at all, and none is written unless every one can be: probe
  // every target (--out, each launch file, --report) before writing the first, so that a
  // directory in the way or an existing file without --force leaves nothing behind.
  for (const auto& [path, flag] : OutputTargets(o, result.top.size())) CheckOutputPath(path, flag, o.force);
  if (!o.out.empty()) {
    WriteFileAtomically(o.out, o.format == "json" ? ResultJson(result, req) : RecipesYaml(result, req), o.force);
    if (o.format == "table") {
      std::cout << "wrote " << result.top.size() << (result.top.size() == 1 ? " recipe to " : " recipes to ") << o.out
                << "\n";
    }
  }
  if (o.emit_launch) {
    const auto files = WriteLaunchFiles(result, req, topo, o.out, o.full_recipe, o.hf_model, o.force);
    if (o.format == "table") std::cout << "wrote " << files.size() << " launch files beside " << o.out << "\n";
  }
  if (!o.report.empty()) {
    WriteFileAtomically(o.report, ReportHtml(result, all_top, req), o.force, "--report");
    if (o.format == "table") std::cout << "wrote report " << o.report << "\n";
  }
  if (o.format == "json") std::cout << ResultJson(result, req);
  return 0;
}

}  // namespace meshplan::cli
