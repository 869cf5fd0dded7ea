// `meshplan validate RUNS.csv` as a library function: predict the throughput of published runs
// at their published layouts, the error against the published throughput, and the rank of
// the published layout among the fitting layouts the planner finds for the same request.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <tuple>

#include "accuracy/least_squares.hpp"
#include "accuracy/megatron_fit.hpp"
#include "accuracy/published_runs.hpp"
#include "accuracy/transfer.hpp"
#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "meshplan/commands.hpp"  // GpuCountProblem
#include "meshplan/framework.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/rules.hpp"

namespace meshplan {

namespace {

// The planner's layouts for one request: the step times of the top layouts, the shown ones
// and the fastest.
struct Ranked {
  std::vector<double> steps;
  std::vector<Candidate> top;  // the first show_top of them
  std::optional<Candidate> fastest;
};

// The search of the request `run` was measured in: the run's model, system, setup and (the
// software settings are part of the request: runs of two releases with different
// dispatchers or CUDA graphs are ranked among differently priced layouts) recipe settings.
Ranked Rank(const ValidateRequest& req, const ModelSpec& m, const SystemSpec& sys, const accuracy::PublishedRun& r,
            const Layout& l, const recipe::PerfRecipeSettings* settings) {
  PlanRequest pr;
  pr.model = m;
  pr.model.mtp_num_layers = l.mtp_layers;  // the planner's layouts train what the run trained
  pr.system = sys;
  pr.setup = r.setup;
  pr.framework = l.framework;  // Megatron-Core runs, and AutoModel's own benchmark runs
  if (settings) {
    pr.mb_runtime = settings->runtime;
    // The performance table has no cp_comm_type: the run's recipe function's own, which the
    // published run ran with (the GPT-OSS recipes: a2a), else null (p2p).
    if (pr.mb_runtime->cp_comm == MbCpComm::kUnset) {
      const MbRuntime own = megatron_bridge::RecipeRuntime(megatron_bridge::RecipeFunctionOf(pr), sys, nullptr);
      pr.mb_runtime->cp_comm = own.cp_comm;
      pr.mb_runtime->hcp_first = own.hcp_first;
    }
  }
  // An AutoModel benchmark run: the planner's layouts take its recipe's model.backend
  // (Megatron-Core layouts do not read it).
  pr.am_moe_backend = l.am_backend;
  pr.top_n = std::max(req.rank_top, req.show_top);
  // The published layout's rank scores the model's own order: by predicted step alone.
  pr.risk_ranking = false;
  pr.threads = req.threads;
  pr.max_micro_batch = std::max<int64_t>(16, r.micro_batch);
  pr.deadline = std::chrono::steady_clock::now() +
                std::chrono::milliseconds(int64_t(std::max(0.1, req.rank_seconds) * 1000));
  const PlanResult res = Plan(pr);
  Ranked rk;
  for (const Candidate& cand : res.top) rk.steps.push_back(cand.cost.step_seconds);
  if (!res.top.empty()) rk.fastest = res.top.front();
  for (size_t i = 0; i < res.top.size() && int64_t(i) < req.show_top; ++i) rk.top.push_back(res.top[i]);
  return rk;
}

// Fits every system's constants (validate --fit), with in-sample and leave-one-out residuals.
void Fit(const ValidateRequest& req, const std::map<std::string, std::vector<accuracy::FitRow>>& fit_rows,
         ValidateReport& report) {
  std::vector<double> all, all_loo;
  for (const auto& [system, rows] : fit_rows) {
    SystemFit s;
    s.system = system;
    if (!req.fit_dir.empty()) s.file = req.fit_dir + "/systems/" + system + ".yaml";
    s.source = req.runs.substr(req.runs.find_last_of('/') + 1) + ", " + std::to_string(rows.size()) + " rows";
    for (const accuracy::FitRow& row : rows) s.labels.push_back(row.label);
    s.outcome = accuracy::FitMegatronTime(rows);
    std::vector<double> loo;
    for (double x : s.outcome.loo_residuals) loo.push_back(std::fabs(x));
    for (double x : s.outcome.residuals) all.push_back(std::fabs(x));
    all_loo.insert(all_loo.end(), loo.begin(), loo.end());
    s.loo_median = accuracy::Quantile(loo, 0.5);
    report.fits.push_back(std::move(s));
  }
  report.fit_median = accuracy::Quantile(all, 0.5);
  report.fit_p90 = accuracy::Quantile(all, 0.9);
  report.fit_loo_median = accuracy::Quantile(all_loo, 0.5);
  report.fit_loo_p90 = accuracy::Quantile(all_loo, 0.9);
}


/// The peak memory per GPU of a torchtitan run (PublishedRun::torchtitan), from the `pytorch`
/// profile (memory-model.md): torchtitan trains PyTorch's own modules (no Transformer Engine:
/// Megatron-Core's saved-tensor count does not apply) with FSDP2 over dp·cp, fp32 parameters
/// under MixedPrecisionPolicy(bf16, reduce fp32) (torchtitan `training.mixed_precision_param`
/// bf16 on fp32 weights: MemoryOptions::fp32_params), loss_parallel with TP, FSDP2 wrapped
/// even on one GPU (wrap_one_gpu), selective checkpointing by its per-op policy (the `pytorch`
/// profile's selective is torchtitan's), the local batch gbs/dp in one step (pipeline
/// micro-batches of 1 with PP, 1F1B), as tests/accuracy/memory_published_test.cpp prices
/// groundtruth.md B.1. Not modelled: Float8 linears, torch.compile's fusions, the allocator
/// reserve torchtitan reports (max_memory_reserved). Returns the heaviest rank's breakdown.
MemoryBreakdown TorchtitanMemory(const accuracy::PublishedRun& r, const ModelSpec& m, const SystemSpec& sys) {
  Layout l;  // AutoModel's PyTorch layout: FSDP2, DTensor TP, torch pipelining
  l.tp = std::max<int64_t>(1, r.tp);
  l.pp = std::max<int64_t>(1, r.pp);
  l.cp = std::max<int64_t>(1, r.cp);
  l.dp = std::max<int64_t>(1, r.setup.num_gpus / (l.tp * l.pp * l.cp));
  l.local_batch_size = std::max<int64_t>(1, r.setup.global_batch / l.dp);
  l.pp_microbatch_size = 1;
  l.pp_schedule = PpSchedule::k1F1B;
  l.recompute = r.recompute;
  l.sequence_parallel = l.tp > 1;  // torchtitan's Llama TP plan shards norms and residuals
  MemoryOptions o;
  o.profile = MemoryProfile::kPyTorch;
  o.fp32_params = true;
  o.loss_parallel = true;
  o.wrap_one_gpu = true;
  const CostModel cm(m, sys, r.setup, o);
  MemoryBreakdown worst;
  for (const MemoryBreakdown& b : cm.RankMemories(ToCostView(l, cm.model(), cm.setup()))) {
    if (b.Total() > worst.Total()) worst = b;
  }
  return worst;
}

}  // namespace

ValidateReport Validate(const ValidateRequest& req) {
  CheckHwdbDir(req.hwdb);
  const std::string text = accuracy::ReadRunsFile(req.runs);
  if (!req.fit_dir.empty() && !std::filesystem::is_directory(req.fit_dir + "/systems")) {
    throw InputError(SourceLoc{"<command line>", 0, 0}, "--fit",
                     "expected an hwdb directory with a systems/ folder (a copy of hwdb/), found '" + req.fit_dir + "'");
  }
  const accuracy::PublishedRuns runs =
      accuracy::ParsePublishedRuns(text, req.runs, req.system ? req.system->name : std::string());
  ValidateReport report;
  report.format = runs.format;
  const bool mbridge = runs.format == PublishedRunsFormat::kMegatronBridgePerf;
  // The perf table's settings apply to the perf table's rows and to survey rows sourced from
  // Megatron-Bridge's performance summary that name their container release (ContainerRelease).
  const auto release_row = [&](const accuracy::PublishedRun& r) {
    return mbridge || (r.megatron_bridge_source && !r.release.empty());
  };
  std::optional<recipe::PerfRecipeTable> settings_table;
  if (req.recipe_settings != "none" && std::any_of(runs.runs.begin(), runs.runs.end(), release_row)) {
    settings_table = recipe::LoadPerfRecipeSettings(req.recipe_settings);
    report.recipe_settings = true;
    report.recipe_settings_file = settings_table->file;
    report.recipe_settings_entries = settings_table->recipes.size();
  }
  if (req.on_start) req.on_start();
  std::map<std::string, ModelSpec> models;
  std::map<std::string, SystemSpec> systems;
  if (req.system) systems[req.system->name] = *req.system;
  // Rank cache: one search per distinct request.
  std::map<std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int, std::string>, Ranked> ranks;
  std::map<std::string, std::vector<accuracy::FitRow>> fit_rows;  // system -> rows
  std::vector<double> errors, memory_shares, memory_errors, moe_errors, moe_flat_errors;
  ValidateSummary& sum = report.summary;
  for (accuracy::PublishedRun r : runs.runs) {
    if (req.on_row_start) req.on_row_start(r.line);
    ValidateRow& row = report.rows.emplace_back();
    row.line = r.line;
    row.label = r.label;
    // Counts a skipped row under `reason`, shown with `shown` (the reason itself when empty).
    auto skip_row = [&](const std::string& reason, const std::string& shown) {
      ++sum.skipped;
      ++sum.skip_reasons[reason];
      row.skip = reason;
      row.skip_shown = shown.empty() ? reason : shown;
      if (req.on_row) req.on_row(row);
    };
    if (!r.skip.empty()) {
      skip_row(r.skip, r.skip_detail);
      continue;
    }
    // A row no preset describes is priced as the generic decoder of its shape columns.
    const std::string model_key = r.shape_model ? "shape: " + r.shape_model->name : r.preset;
    if (!models.count(model_key)) models[model_key] = r.shape_model ? *r.shape_model : LoadModel(r.preset);
    if (!systems.count(r.system)) systems[r.system] = LoadSystem(r.system, req.hwdb);
    const ModelSpec& m = models[model_key];
    row.generic_model = m.generic_note;
    if (const std::string why = HybridRefusal(m); !why.empty()) {
      skip_row("hybrid model with block kinds the cost model does not price", why);
      continue;
    }
    const SystemSpec& sys = systems[r.system];
    if (const std::string problem = GpuCountProblem(sys, r.setup.num_gpus); !problem.empty()) {
      skip_row("GPU count is not a whole number of nodes", "GPU count: " + problem);
      continue;
    }
    if (r.setup.precision == Precision::kFp4 && sys.gpu.fp4_flops <= 0) r.setup.precision = Precision::kFp8;
    if (r.setup.precision == Precision::kFp8 && sys.gpu.fp8_flops <= 0) r.setup.precision = Precision::kBf16;
    // The published run's recipe settings (Megatron-Bridge table rows only; the survey's rows
    // keep meshplan's emitted settings).
    const recipe::PerfRecipeTable* table = settings_table && release_row(r) ? &*settings_table : nullptr;
    const recipe::PerfRecipeSettings* settings =
        table ? table->Find(r.release, r.preset, r.system, recipe::PerfPrecisionKey(r.precision_cell),
                            r.setup.num_gpus, r.tokendrop)
              : nullptr;
    r.release_settings = settings && !mbridge;
    // A row the table has no entry for (or a survey row whose settings are unknown): the settings of Megatron-Bridge's performance recipe
    // function of the same model, system, GPU count and precision (its current snapshot,
    // recipes/megatron-bridge-recipe-functions.json), which the run launched as is.
    std::optional<recipe::PerfRecipeSettings> from_function;
    if (!settings && (table || ((r.settings_unknown || r.megatron_bridge_source) && !r.torch_fsdp2))) {
      const std::string name = megatron_bridge::PerfRecipeFunctionName(
          r.preset, r.system, recipe::PerfPrecisionKey(r.precision_cell), r.setup.num_gpus, r.task);
      if (const megatron_bridge::RecipeFunction* fn = megatron_bridge::FindRecipeFunction(name)) {
        from_function = megatron_bridge::PerfSettingsOfRecipeFunction(*fn, sys);
        settings = &*from_function;
        row.recipe_function = name;
        ++sum.from_recipe_function;
      }
    }
    row.without_recipe_settings = table && !settings;
    if (row.without_recipe_settings) ++sum.without_settings;
    // An AutoModel run is priced as the AutoModel layout of its benchmark recipe.
    std::optional<accuracy::AutoModelBenchmark> bench;
    if (r.automodel) {
      bench = accuracy::FindAutoModelBenchmark(r.preset, r.system, r.setup.num_gpus);
      if (!bench) {
        skip_row("AutoModel run without a benchmark recipe",
                 "AutoModel run: no recipes/automodel-benchmarks/ recipe names " + r.preset + " on " +
                     std::to_string(r.setup.num_gpus) + " GPUs of " + r.system);
        continue;
      }
      row.automodel_recipe = bench->file;
    }
    const Layout l = bench ? bench->layout : accuracy::PublishedLayout(r, m, sys, settings);
    if (!bench && r.gradient_accumulation > 0) {
      const int64_t model_ranks = r.tp * r.pp * r.cp;
      const int64_t dp = model_ranks > 0 ? r.setup.num_gpus / model_ranks : 0;
      const int64_t per_step = dp * r.micro_batch;
      if (per_step > 0 && r.setup.global_batch != r.gradient_accumulation * per_step) {
        const std::string expected = r.setup.global_batch % per_step == 0
                                         ? std::to_string(r.setup.global_batch / per_step)
                                         : "not a whole number";
        row.columns_note = "the row's ga " + std::to_string(r.gradient_accumulation) + " disagrees with gbs / (dp x mbs) = " +
                           std::to_string(r.setup.global_batch) + " / (" + std::to_string(dp) + " x " +
                           std::to_string(r.micro_batch) + ") = " + expected +
                           "; priced as its gbs, mbs and layout cells say (one of its cells is wrong, which one the "
                           "table does not tell)";
      }
    }
    const bool megatron_layout = l.framework == FindFramework("megatron-bridge")->id;
    if (const std::string why = FrameworkHybridRefusal(FrameworkOf(l.framework), m); !why.empty()) {
      skip_row("hybrid model not priced for this framework", why);
      continue;
    }
    // The usable memory of the framework the layout is priced under (its launches' allocator).
    r.setup.headroom = ResolveHeadroom(req.headroom, l.framework);
    // A layout the framework would refuse is not priced (the perf table's own rows all pass;
    // hand-made rows may not).
    {
      const RuleContext ctx{m, r.setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
      if (const Rule* broken = FirstFailure(ctx)) {
        const std::string reason = std::string("layout breaks rule ") + broken->name;
        skip_row(reason, reason + ": " + broken->explain(ctx));
        continue;
      }
    }
    Cost cost = Score(CostModel(m, sys, r.setup), l);
    // A torchtitan run's memory: the `pytorch` profile of its PyTorch modules, not the
    // Transformer Engine tensors of the Megatron-Core layout its step time is priced as.
    if (r.torchtitan) {
      // The usable memory of a PyTorch FSDP2 launch: AutoModel's headroom (memory-model.md).
      r.setup.headroom = ResolveHeadroom(req.headroom, FindFramework("automodel")->id);
      cost.memory = TorchtitanMemory(r, m, sys);
      cost.capacity_bytes = sys.gpu.memory_bytes * (1.0 - r.setup.headroom);
      cost.fits = cost.memory.Total() <= cost.capacity_bytes;
    }
    // The error is on tokens/s per GPU whenever the row publishes it: model TFLOP/s depend on
    // the release's FLOP formula (Megatron-Bridge's GPT-OSS rows up to 26.04.01 count 27.2
    // GFLOP per token, from 26.06 on 32.6 with the attention core and lm_head), tokens/s do
    // not. Survey rows and rows without tokens/s compare on model TFLOP/s.
    row.on_tokens = r.published_tokens > 0 && (mbridge || r.published_tflops <= 0 || r.hardware_flops);
    row.published = row.on_tokens ? r.published_tokens : r.published_tflops;
    row.predicted = row.on_tokens ? cost.tokens_per_s_per_gpu : cost.model_tflops_per_gpu;
    row.error = accuracy::RelativeError(row.predicted, row.published);
    row.published_tflops = r.published_tflops;
    row.published_step = row.predicted > 0 ? cost.step_seconds * row.predicted / row.published : 0.0;
    errors.push_back(std::fabs(row.error));
    row.moe = m.is_moe();
    row.hybrid = m.is_hybrid();
    if (row.moe) moe_errors.push_back(std::fabs(row.error));
    if (row.moe && !row.hybrid) moe_flat_errors.push_back(std::fabs(row.error));
    // Hybrid models' rows are evaluated, not fitted: the step-time constants stay those of the
    // flat decoders, and the hybrid rows' errors are out of sample.
    if ((!req.fit_dir.empty() || req.fit_in_memory || req.transfer) && row.predicted > 0 && megatron_layout && !m.is_hybrid()) {
      accuracy::FitRow fit = accuracy::MakeFitRow(m, sys, r.setup, l, row.published_step);
      // The release in parentheses, unless the label ends with it (the 25.09 rows' precision).
      const std::string tag = " (" + r.release + ")";
      const bool tagged = r.label.ends_with(tag);
      fit.label = r.label + (r.release.empty() || tagged ? "" : tag);
      fit.model = r.shape_model ? r.shape_model->name : r.preset;
      fit.pp = l.pp;
      fit_rows[r.system].push_back(fit);
    }
    ++sum.evaluated;
    if (!row.generic_model.empty()) ++sum.generic_models;
    if (!cost.fits) ++sum.over_capacity;
    if (cost.memory.Total() > sys.gpu.memory_bytes) ++sum.over_memory;
    if (sys.gpu.memory_bytes > 0) memory_shares.push_back(cost.memory.Total() / sys.gpu.memory_bytes);
    row.published_memory = r.published_memory;
    if (r.published_memory > 0) memory_errors.push_back(std::fabs(cost.memory.Total() / r.published_memory - 1.0));
    if (req.rank_top > 0) {
      std::string runtime = "emitted";
      if (settings) {
        const MbRuntime& rt = settings->runtime;
        runtime = std::to_string(int(rt.dispatcher)) + "/" + std::to_string(int(rt.ep_a2a_overlap)) + "/" +
                  std::to_string(int(rt.cuda_graph)) + "/" + std::to_string(rt.cuda_graph_scope) + "/" +
                  std::to_string(int(rt.grad_reduce_in_fp32)) + "/" + std::to_string(int(rt.te_cross_entropy)) + "/" + std::to_string(int(rt.pad_to_capacity));
      }
      const auto key = std::make_tuple(model_key, r.system, r.setup.num_gpus, r.setup.seq_len, r.setup.global_batch,
                                       int(r.setup.precision),
                                       runtime + "/mtp" + std::to_string(l.mtp_layers) + "/" + FrameworkOf(l).name);
      auto it = ranks.find(key);
      if (it == ranks.end()) it = ranks.emplace(key, Rank(req, m, sys, r, l, settings)).first;
      const std::vector<double>& steps = it->second.steps;
      row.top = it->second.top;
      row.fastest = it->second.fastest;
      // Rank = 1 + fitting layouts strictly faster (1e-9 relative tolerance: the published
      // layout itself is among them).
      int64_t faster = 0;
      for (double s : steps) faster += s < cost.step_seconds * (1 - 1e-9) ? 1 : 0;
      row.ranked = true;
      row.beyond = faster >= int64_t(steps.size()) && int64_t(steps.size()) >= req.rank_top;
      row.rank = faster + 1;
      if (!steps.empty() && steps.front() > 0) {
        row.gap = cost.step_seconds / steps.front() - 1.0;
        if (cost.step_seconds <= 1.05 * steps.front()) ++sum.within5;
        if (row.moe && cost.step_seconds <= 1.10 * steps.front()) ++sum.moe_within10;
        if (row.moe && !row.hybrid && cost.step_seconds <= 1.10 * steps.front()) ++sum.moe_flat_within10;
      }
      ++sum.ranked;
      if (row.moe) ++sum.moe_ranked;
      if (row.moe && !row.hybrid) ++sum.moe_flat_ranked;
      if (!row.beyond && row.rank <= 5) {
        ++sum.top5;
        if (!cost.fits) ++sum.top5_no_fit;  // ranked among fitting layouts, but predicted not to fit itself
      }
    }
    if (req.breakdown && mbridge && megatron_layout) {
      row.split = SplitMegatronCompute(m, sys, r.setup, l);
      if (row.fastest) row.fastest_split = SplitMegatronCompute(m, sys, r.setup, row.fastest->layout);
    }
    row.layout = l;
    row.cost = cost;
    if (req.on_row) req.on_row(row);
  }
  sum.median_error = accuracy::Quantile(errors, 0.5);
  sum.p90_error = accuracy::Quantile(errors, 0.9);
  sum.moe_rows = int(moe_errors.size());
  sum.moe_median_error = accuracy::Quantile(moe_errors, 0.5);
  sum.moe_p90_error = accuracy::Quantile(moe_errors, 0.9);
  sum.moe_flat_rows = int(moe_flat_errors.size());
  sum.moe_flat_median_error = accuracy::Quantile(moe_flat_errors, 0.5);
  sum.moe_flat_p90_error = accuracy::Quantile(moe_flat_errors, 0.9);
  sum.memory_share_median = accuracy::Quantile(memory_shares, 0.5);
  sum.memory_share_p90 = accuracy::Quantile(memory_shares, 0.9);
  sum.memory_rows = int(memory_errors.size());
  if (!memory_errors.empty()) {
    sum.memory_error_median = accuracy::Quantile(memory_errors, 0.5);
    sum.memory_error_max = *std::max_element(memory_errors.begin(), memory_errors.end());
  }
  if (!req.fit_dir.empty() || req.fit_in_memory || req.transfer) Fit(req, fit_rows, report);
  if (req.transfer) report.transfer = accuracy::MeasureTransfer(fit_rows, systems, report.fits);
  return report;
}

void CheckFitTargets(const ValidateRequest& req, const ValidateReport& report) {
  if (report.summary.evaluated == 0) {
    throw InputError(SourceLoc{req.runs, 0, 0}, "--fit", "no evaluated row to fit; nothing was written");
  }
  // Every target must be readable before any is written: all systems or none.
  for (const SystemFit& s : report.fits) {
    if (!std::ifstream(s.file).good()) {
      throw InputError(SourceLoc{s.file, 0, 0}, "--fit",
                       "expected the system file of " + s.system + " in " + req.fit_dir + "/systems/ (fitted from " +
                           std::to_string(s.labels.size()) + " rows); nothing was written");
    }
  }
}

}  // namespace meshplan
