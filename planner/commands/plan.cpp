// `plan`: the request validated (output paths included), the search run, the outcome said.
#include <sstream>

#include "commands/internal.hpp"
#include "meshplan/report.hpp"
#include "recipe/format.hpp"

namespace meshplan {

std::string TopRules(const PlanResult& r, size_t n) {
  std::string s;
  for (size_t i = 0; i < r.rejected_by_rule.size() && i < n; ++i) {
    if (i) s += ", ";
    s += r.rejected_by_rule[i].first + " (" + std::to_string(r.rejected_by_rule[i].second) + ")";
  }
  return s;
}

namespace {

using commands::FlagError;

// The options that only make sense together, and the launch topology, checked once the
// request is built (they read its framework and model).
void CheckLaunchOptions(const PlanOutputs& o, const PlanInput& in, const PlanRequest& req) {
  if (o.emit_launch && !o.out) FlagError("--emit-launch", "expected --out FILE (launch files are written beside it)");
  if (o.full_recipe && !o.emit_launch) FlagError("--full-recipe", "expected together with --emit-launch");
  if (o.hf_model && o.hf_model->empty()) FlagError("--hf-model", "expected a Hugging Face model id, found ''");
  if (o.hf_model && !o.full_recipe) {
    FlagError("--hf-model", "expected together with --full-recipe (only a full recipe has a model section to name it in)");
  }
  const FrameworkOps& fw = FrameworkOf(req.framework);
  if (in.recompute_modules && !fw.recompute_modules_option) {
    FlagError("--recompute-modules", std::string("expected with ") + commands::FrameworksWith(&FrameworkOps::recompute_modules_option) +
                                         " only (" + fw.title + " has no recompute_modules)");
  }
  if (in.search_dispatchers && !fw.recipe_function_option) {
    FlagError("--search-dispatchers", std::string("expected with ") + commands::FrameworksWith(&FrameworkOps::recipe_function_option) +
                                          " only (" + fw.title + " has no Megatron-Core token dispatchers)");
  }
  if (!in.mb_recipe.empty() && !fw.recipe_function_option) {
    FlagError("--mb-recipe", std::string("expected with ") + commands::FrameworksWith(&FrameworkOps::recipe_function_option) +
                                 " only (" + fw.title + " has no recipe functions)");
  }
  if (o.full_recipe && !fw.full_recipe_option) {
    FlagError("--full-recipe",
              std::string("expected with ") + commands::FrameworksWith(&FrameworkOps::full_recipe_option) + " only (a " +
                  fw.title + " recipe is an override file; --emit-launch writes it with its launch script)");
  }
  // The full AutoModel recipe builds the model from Hugging Face: a preset's id, a config.json
  // (AutoConfig.from_pretrained takes the file), or --hf-model. A meshplan model YAML has none.
  if (o.full_recipe && !o.hf_model && HuggingFaceId(req.model.name).empty()) {
    const std::string& f = req.model.source.file;
    if (f.size() < 5 || f.compare(f.size() - 5, 5, ".json") != 0) {
      FlagError("--full-recipe",
                "expected a Hugging Face model for the recipe's model section: a preset, a config.json, or "
                "--hf-model ID; found the meshplan model file '" + f + "'");
    }
  }
  // 0 tells ResolveLaunchTopology to derive the value; typed, it is refused as -1 is.
  for (const auto& [flag, v] : {std::pair{"--nodes", o.nodes}, {"--gpus-per-node", o.gpus_per_node}}) {
    if (v == 0) FlagError(flag, "expected a positive integer, found 0");
  }
}

// Why no recipe came out of `r` (none valid, or none fits), with what to change.
std::string NoLayoutMessage(const PlanResult& r, const PlanRequest& req) {
  // After an early stop only part of the space was searched: say so.
  const std::string part =
      r.stopped.empty() ? "" : " among the " + std::to_string(r.tested) + " layouts tested before the search stopped";
  std::ostringstream why;
  if (r.valid == 0 && !r.stopped.empty() && r.enumerated == 0) {
    // Stopped before the walk reached a candidate (a --max-seconds shorter than the walk).
    why << "no layout for " << req.model.name << " on " << req.setup.num_gpus << " GPUs: the search stopped before "
        << "it tested any candidate; raise the limit to search";
    return why.str();
  }
  if (r.valid == 0) {
    why << "no valid layout for " << req.model.name << " on " << req.setup.num_gpus << " GPUs with global batch "
        << req.setup.global_batch << " and seq_len " << req.setup.seq_len << part << ": every one of the "
        << r.enumerated << " candidates breaks a rule; most common: " << TopRules(r, 4);
    return why.str();
  }
  const Candidate& c = *r.least_memory;
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
      << "% headroom kept free); " << (!part.empty() ? "raise the limit to search further" : fix);
  return why.str();
}

}  // namespace

std::string StopWarning(const PlanInput& in, const PlanResult& result) {
  std::string why = "--max-layouts " + std::to_string(in.max_layouts) + " reached";
  if (result.stopped == "deadline") {
    std::ostringstream v;
    v << in.max_seconds;  // as given: 0.05, not a rounded 0.1
    why = "--max-seconds " + v.str() + " reached";
  }
  if (result.stopped == "memory") {
    why = "--max-memory-mb " + std::to_string(in.max_memory_mb) + " exceeded: meshplan holds " +
          recipe::Fixed(static_cast<double>(result.stopped_resident_bytes) / (1 << 20), 1) + " MiB resident";
  }
  return "search stopped early (" + why + ") after " + std::to_string(result.tested) + " layouts tested (" +
         std::to_string(result.enumerated) +
         " generated, counting the partial layouts of the mesh and feature rules); results are the best found so far";
}

PlanReport PlanLayouts(const PlanInput& in) {
  PlanReport rep;
  PlanRequest& req = rep.request;
  req = BuildPlanRequest(in);
  const PlanOutputs& o = in.outputs;
  if (const std::string w = GenericModelWarning(req.model); !w.empty()) rep.warnings.push_back("warning: " + w);
  if (const std::string w = SeqLenWarning(req.model, req.setup.seq_len); !w.empty()) rep.warnings.push_back("warning: " + w);
  CheckLaunchOptions(o, in, req);
  if (o.emit_launch || o.nodes || o.gpus_per_node) {
    rep.launch = ResolveLaunchTopology(req, o.nodes.value_or(0), o.gpus_per_node.value_or(0));
  }
  if (const std::string note = LaunchTopologyNote(req, rep.launch); o.emit_launch && !note.empty()) {
    rep.warnings.push_back("warning: " + note + " (said in each launch file's header)");
  }
  // Output paths known before the search are checked before it (the launch files, named per
  // result, are checked after), with as many launch files as --top asks for.
  const auto targets = PlanOutputTargets(o, static_cast<size_t>(in.top));
  commands::RefuseSameOutputs(targets);
  RefuseInputsAsOutputs(targets, {{in.model, "--model"}, {in.system, "--system"}});
  CheckOutputPath(o.out.value_or(""), "--out", o.force);
  CheckOutputPath(o.report.value_or(""), "--report", o.force);
  // Rank 1's launch files are written whenever a layout fits: refuse them before searching.
  if (o.emit_launch) {
    for (const auto& [path, flag] : PlanOutputTargets(o, 1)) CheckOutputPath(path, flag, o.force);
  }
  // The report's scatter needs the fitting layouts: one search keeping the best kReportLayouts.
  if (o.report) req.top_n = std::max(req.top_n, kReportLayouts);
  rep.result = Plan(req);
  if (o.report) {
    rep.report_layouts = rep.result.top;
    req.top_n = static_cast<int>(in.top);
    if (rep.result.top.size() > static_cast<size_t>(in.top)) rep.result.top.resize(static_cast<size_t>(in.top));
  }
  if (!rep.result.stopped.empty()) rep.warnings.push_back("warning: " + StopWarning(in, rep.result));
  if (const std::string w = commands::UnfittedNote(req); !w.empty()) rep.warnings.push_back(w);
  for (std::string& w : FrameworkOf(req.framework).search_warnings(req)) rep.warnings.push_back(std::move(w));
  if (rep.result.valid == 0 || rep.result.fitting == 0) {
    rep.failure = NoLayoutMessage(rep.result, req);
    rep.failure_kind = rep.result.valid == 0 ? "no_valid_layout" : "no_layout_fits";
  }
  return rep;
}

}  // namespace meshplan
