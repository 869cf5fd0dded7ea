// `meshplan plan`: its options, the request they make (PlanLayouts, planner/commands/plan.cpp)
// and the report rendered: ranked table, YAML or JSON on stdout, the files written.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/list_option.hpp"
#include "meshplan/report.hpp"

namespace meshplan::cli {

void AddPlanCommand(CLI::App& app, PlanOptions& o) {
  CLI::App* cmd = app.add_subcommand("plan", "search every valid layout and print the best recipes");
  cmd->add_option("--model", o.in.model, "preset name (meshplan list models) or path to config.json / model YAML")
      ->required();
  cmd->add_flag("--generic-decoder", o.in.generic_decoder,
                "plan a config of an unsupported architecture as a generic dense/MoE decoder from its standard "
                "fields (said as a warning in every output)");
  cmd->add_option("--system", o.in.system, "system name (meshplan list systems) or path to a system YAML")->required();
  cmd->add_option("--gpus", o.gpus, "number of GPUs (world size); required unless --sweep-gpus");
  cmd->add_option("--seq-len", o.seq_len, "tokens per sequence; required unless --sweep-seq");
  cmd->add_option("--global-batch", o.in.global_batch, "sequences per optimizer step")->required();
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
  cmd->add_option("--top", o.in.top, "number of recipes to print (1..1000)")->check(CLI::Range(1, 1000));
  cmd->add_flag("--all-variants", o.in.all_variants,
                "list every variant of a layout (micro-batch, local batch, schedule, VPP, recompute), not only the best of each mesh");
  cmd->add_option("--rank-by", o.rank_by,
                  "expected: expected throughput with the memory risk priced in, ties within the model's error ordered by robustness (docs/ranking.md); step: predicted step time alone")
      ->check(CLI::IsMember({"expected", "step"}));
  cmd->add_option("--format", o.format, "stdout format")->check(CLI::IsMember({"table", "yaml", "json"}));
  cmd->add_option("--out", o.out, "write the top recipes to this file (YAML; JSON with --format json)");
  cmd->add_flag("--force", o.in.outputs.force, "replace --out if it exists");
  cmd->add_option("--headroom", o.in.headroom, "fraction of GPU memory kept free (0..0.9; default: the framework's, 0.02 for Megatron-Bridge, 0.10 for AutoModel: docs/memory-model.md)")->check(CLI::Range(0.0, 0.9));
  cmd->add_flag("--recompute-modules", o.in.recompute_modules,
                "Megatron-Bridge: also search selective recompute with the recompute_modules sets of NVIDIA's perf "
                "recipes ([mla_up_proj], [layernorm,moe_act], ... as the model allows)");
  cmd->add_flag("--search-dispatchers", o.in.search_dispatchers,
                "Megatron-Bridge MoE: also search the token dispatchers the GPU runs besides the recipe function's own "
                "(alltoall, flex with HybridEP or DeepEP); about 2-3x the search time");
  cmd->add_option("--mb-recipe", o.in.mb_recipe,
                  "Megatron-Bridge: the recipe function the overrides are written for (run_recipe.py --recipe; "
                  "default: the model's, e.g. llama31_70b_pretrain_config)");
  cmd->add_option("--max-micro-batch", o.in.max_micro_batch, "largest micro-batch enumerated (1..1024)")
      ->check(CLI::Range(1LL, 1024LL));
  AddListOption(cmd, "--sweep-gpus", o.in.sweep_gpus, "capacity planning: the best layout at each GPU count (8,16,...)",
                "a comma-separated list of integers");
  AddListOption(cmd, "--sweep-seq", o.in.sweep_seq, "capacity planning: the best layout at each sequence length",
                "a comma-separated list of integers");
  cmd->add_option("--hwdb", o.in.hwdb, "hardware database directory (default: the embedded hwdb/)");
  cmd->add_option("--max-seconds", o.in.max_seconds,
                  "stop the search after this many seconds and print the best layouts so far (default 300)");
  cmd->add_option("--max-layouts", o.in.max_layouts,
                  "stop the search after testing this many layouts (default 0: no limit)");
  cmd->add_option("--max-memory-mb", o.in.max_memory_mb,
                  "stop the search when meshplan's resident memory exceeds this many MiB and print the best "
                  "layouts so far (default: no limit)");
  cmd->add_flag("--emit-launch", o.in.outputs.emit_launch,
                "beside --out write OUT-stem.rankN.yaml, .launch.sh (torchrun) and .sbatch (Slurm) per recipe");
  cmd->add_flag("--full-recipe", o.in.outputs.full_recipe, "with --emit-launch: complete AutoModel recipes (model, dataset, ...)");
  cmd->add_option("--nodes", o.nodes, "launch: number of nodes (default: --gpus / GPUs per node)");
  cmd->add_option("--gpus-per-node", o.gpus_per_node, "launch: GPUs per node (default: the system's)");
  cmd->add_option("--hf-model", o.hf_model, "launch: Hugging Face model id of the full recipe (default: the preset's)");
  cmd->add_option("--report", o.report, "write a self-contained HTML report (tables and SVG charts) to this file");
  // Options whose default is also a valid value: recorded when given, so that a meaningless
  // combination (--nodes without --emit-launch, --mbridge-version with AutoModel) is refused.
  for (const char* name : {"--out", "--report", "--nodes", "--gpus-per-node", "--hf-model", "--top"}) {
    cmd->get_option(name)->each([&o, name](const std::string&) { o.given.insert(name); });
  }
  TrackVersionFlags(cmd, o.given);
}

namespace {

// The request `o` makes: `o.in` with the options that are not of its types.
PlanInput MakeInput(const PlanOptions& o) {
  PlanInput in = o.in;
  if (o.gpus != kNotGiven) in.gpus = o.gpus;
  if (o.seq_len != kNotGiven) in.seq_len = o.seq_len;
  in.precision = o.precision == "fp8" ? Precision::kFp8 : Precision::kBf16;
  in.rank_by_step = o.rank_by == "step";
  in.framework = ParseFramework(o.framework);
  in.releases = AskedReleases(o.given, o.automodel_version, o.mbridge_version);
  for (const std::string& s : o.strategies) in.strategies.push_back(ParseStrategy(s));
  auto given = [&o](const char* flag, bool set) { return o.given.count(flag) > 0 || set; };
  in.top_given = given("--top", false);
  if (given("--out", !o.out.empty())) in.outputs.out = o.out;
  if (given("--report", !o.report.empty())) in.outputs.report = o.report;
  if (given("--nodes", o.nodes != 0)) in.outputs.nodes = o.nodes;
  if (given("--gpus-per-node", o.gpus_per_node != 0)) in.outputs.gpus_per_node = o.gpus_per_node;
  if (given("--hf-model", !o.hf_model.empty())) in.outputs.hf_model = o.hf_model;
  return in;
}

}  // namespace

int RunPlan(const PlanOptions& o) {
  const PlanInput in = MakeInput(o);
  if (!in.sweep_gpus.empty() || !in.sweep_seq.empty()) return RunSweep(o, in);
  const PlanReport rep = PlanLayouts(in);
  const PlanRequest& req = rep.request;
  const PlanResult& result = rep.result;
  for (const std::string& w : rep.warnings) std::cerr << "meshplan: " << w << "\n";
  if (!rep.failure.empty()) {
    std::cerr << "meshplan: " << rep.failure << "\n";
    if (o.format == "json") {
      // The plan's JSON (request, counts, rejected_by_rule, no recipes) with the error.
      nlohmann::json j = nlohmann::json::parse(ResultJson(result, req));
      j.update(ErrorJson(rep.failure_kind, rep.failure, 1));
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
  for (const auto& [path, flag] : PlanOutputTargets(in.outputs, result.top.size())) CheckOutputPath(path, flag, in.outputs.force);
  if (!o.out.empty()) {
    WriteFileAtomically(o.out, o.format == "json" ? ResultJson(result, req) : RecipesYaml(result, req), in.outputs.force);
    if (o.format == "table") {
      std::cout << "wrote " << result.top.size() << (result.top.size() == 1 ? " recipe to " : " recipes to ") << o.out
                << "\n";
    }
  }
  if (in.outputs.emit_launch) {
    const LaunchFilesWritten files =
        WriteLaunchFiles(result, req, rep.launch, o.out, in.outputs.full_recipe, o.hf_model, in.outputs.force);
    if (o.format == "table") std::cout << "wrote " << files.written.size() << " launch files beside " << o.out << "\n";
    // Removed files are said on stdout with the table, on stderr where stdout is YAML or JSON.
    std::ostream& said = o.format == "table" ? std::cout : std::cerr;
    if (!files.removed.empty()) {
      said << (o.format == "table" ? "" : "meshplan: ") << "removed " << files.removed.size()
           << " launch files of an earlier run beyond this run's " << result.top.size() << " recipes (--force):";
      for (const std::string& f : files.removed) said << " " << f;
      said << "\n";
    }
  }
  if (!o.report.empty()) {
    WriteFileAtomically(o.report, ReportHtml(result, rep.report_layouts, req), in.outputs.force, "--report");
    if (o.format == "table") std::cout << "wrote report " << o.report << "\n";
  }
  if (o.format == "json") std::cout << ResultJson(result, req);
  return 0;
}

}  // namespace meshplan::cli
