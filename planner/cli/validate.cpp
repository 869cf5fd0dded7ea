// `meshplan validate RUNS.csv`: CLI11 wiring and the printing of meshplan::Validate's report
// (planner/accuracy/validate.cpp): predicted vs published model TFLOP/s per GPU with the
// error, and the rank of the published layout among the planner's fitting layouts.
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/commands.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/diag.hpp"

namespace meshplan::cli {

namespace {

constexpr double kGiB = 1073741824.0;

// One layout's terms: the step (ms) and memory (GiB) lines, then the compute split.
void PrintTerms(std::FILE* out, const char* step_label, const Cost& k, const std::optional<MegatronComputeSplit>& c) {
  const TimeBreakdown& t = k.time;
  std::fprintf(out,
               "    %s %.1f = compute %.1f + tp %.1f + cp %.1f + dp %.1f + ep %.1f + pp %.1f + bubble %.1f + "
               "optimizer %.1f + host %.1f\n"
               "    memory GiB: %.1f of %.1f = weights %.1f + gradients %.1f + optimizer %.1f + activations %.1f + "
               "logits %.1f + buffers %.1f + other %.1f\n",
               step_label, 1e3 * k.step_seconds, 1e3 * t.compute, 1e3 * t.tp_comm, 1e3 * t.cp_comm, 1e3 * t.dp_comm,
               1e3 * t.ep_comm, 1e3 * t.pp_comm, 1e3 * t.bubble, 1e3 * t.optimizer, 1e3 * t.host,
               k.memory.Total() / kGiB, k.capacity_bytes / kGiB, k.memory.weights / kGiB, k.memory.gradients / kGiB,
               k.memory.optimizer / kGiB, k.memory.activations / kGiB, k.memory.logits / kGiB, k.memory.buffers / kGiB,
               (k.memory.workspace + k.memory.overhead) / kGiB);
  if (c) {
    std::fprintf(out,
                 "    compute ms: gemm %.1f + attention %.1f + memory-bound %.1f + kernel launches %.1f "
                 "(bubble fraction %.3f)\n",
                 1e3 * c->gemm, 1e3 * c->attention, 1e3 * c->memory_bound, 1e3 * c->kernels, c->bubble_fraction);
  }
}

void PrintRow(std::FILE* out, const ValidateOptions& o, const ValidateRow& row) {
  if (!row.skip.empty()) {
    std::fprintf(out, "%-52.52s skipped (line %d): %s\n", row.label.c_str(), row.line, row.skip_shown.c_str());
    return;
  }
  const Cost& cost = row.cost;
  std::string rank = "-", gap = "-";
  if (row.ranked) rank = row.beyond ? ">" + std::to_string(o.rank_top) : std::to_string(row.rank);
  char buf[96];
  if (row.gap) {
    std::snprintf(buf, sizeof buf, "%+.1f", 100.0 * *row.gap);
    gap = buf;
  }
  char tf_pub_cell[32] = "-";  // no published TFLOP/s: "-", not 0
  if (row.published_tflops > 0) std::snprintf(tf_pub_cell, sizeof tf_pub_cell, "%.0f", row.published_tflops);
  char mem_pub[64] = "";
  if (row.published_memory > 0) {
    std::snprintf(mem_pub, sizeof mem_pub, "  (memory published %.1f GiB, predicted %+.1f%%)", row.published_memory / kGiB,
                  100.0 * (cost.memory.Total() / row.published_memory - 1.0));
  }
  std::fprintf(out, "%-52.52s %8s %8.0f %+7.1f %6s %6s %5s %6.1f  %s%s%s%s\n", row.label.c_str(), tf_pub_cell,
               cost.model_tflops_per_gpu, 100 * row.error, rank.c_str(), gap.c_str(), cost.fits ? "yes" : "no",
               cost.memory.Total() / kGiB, Describe(row.layout).c_str(), row.on_tokens ? "" : "  (err% on TFLOP/s)",
               row.without_recipe_settings ? "  (no recipe settings: meshplan's emitted ones)"
               : !row.recipe_function.empty()   ? ("  (settings of " + row.recipe_function + ")").c_str()
               : !row.automodel_recipe.empty() ? ("  (AutoModel, " + row.automodel_recipe + ")").c_str()
                                               : "",
               mem_pub);
  if (!row.generic_model.empty()) std::fprintf(out, "    model: %s\n", row.generic_model.c_str());
  if (!row.columns_note.empty()) std::fprintf(out, "    columns: %s\n", row.columns_note.c_str());
  if (o.show_top > 0 && row.ranked) {
    std::fprintf(out, "    planner's %zu fastest fitting layouts (this row: %.1f ms, %.1f GiB):\n", row.top.size(),
                 1e3 * cost.step_seconds, cost.memory.Total() / kGiB);
    for (size_t i = 0; i < row.top.size(); ++i) {
      std::snprintf(buf, sizeof buf, "    #%-3zu %9.1f ms %6.1f GiB  ", i + 1, 1e3 * row.top[i].cost.step_seconds,
                    row.top[i].cost.memory.Total() / kGiB);
      std::fprintf(out, "%s%s\n", buf, Describe(row.top[i].layout).c_str());
    }
  }
  if (o.breakdown) {
    char label[64];
    std::snprintf(label, sizeof label, "step ms: published %.1f predicted", 1e3 * row.published_step);
    PrintTerms(out, label, cost, row.split);
    if (row.fastest) {
      std::fprintf(out, "    planner's fastest fitting layout: %s\n", Describe(row.fastest->layout).c_str());
      PrintTerms(out, "its step ms:", row.fastest->cost, row.fastest_split);
    }
  }
}

// The fit of every system, its in-sample and leave-one-out residuals, each written into its file.
void PrintAndWriteFits(std::FILE* out, const ValidateOptions& o, const ValidateReport& report) {
  std::fprintf(out, "\nfit of the Megatron-Core step-time constants (ridge %.2f toward the physical model):\n",
               kMegatronFitRidge);
  std::fprintf(out, "%-14s %5s %9s %8s %8s %8s %9s %9s %9s %9s\n", "system", "rows", "gemm_bf16", "gemm_fp8", "gemm_fp4",
               "mem_bound", "kernel_us", "med|res|", "p90|res|", "LOO med");
  for (const SystemFit& s : report.fits) {
    const MegatronTimeFit& f = s.outcome.fit;
    std::fprintf(out, "%-14s %5zu %9.3f %8.3f %8.3f %8.3f %9.2f %8.1f%% %8.1f%% %8.1f%%\n", s.system.c_str(),
                 s.labels.size(), f.gemm_bf16, f.gemm_fp8, f.gemm_fp4, f.memory_bound, f.kernel_overhead * 1e6,
                 100 * f.residual_median, 100 * f.residual_p90, 100 * s.loo_median);
    WriteSystemFit(s);
  }
  std::fprintf(out,
               "fit summary: median |residual| %.1f%%, p90 %.1f%%; leave-one-out median %.1f%%, p90 %.1f%% "
               "(written to %s/systems/)\n",
               100 * report.fit_median, 100 * report.fit_p90, 100 * report.fit_loo_median, 100 * report.fit_loo_p90,
               o.fit_dir.c_str());
}

// validate --transfer: the residual quantiles of every group under each scheme.
void PrintTransfer(std::FILE* out, const TransferReport& t) {
  std::fprintf(out,
               "\ntransfer of the fitted step-time constants: median / p90 |step-time residual| per group\n"
               "  in-sample: each system fitted on all its rows; LOO: without the row; LOSO borrow: the system's own\n"
               "  rows left out, constants borrowed from the other systems' fits (median of those of the same GPU\n"
               "  compute capability, else of all; the former rule for an unfitted system); LOSO pooled: one fit on\n"
               "  the other systems' rows; LOSO phys: no fit, the physical constants of the GPU generation (the rule\n"
               "  for an unfitted system); LOFO: the system fitted without the row's model family; LOMO: the system\n"
               "  fitted without the row's model (its other models, the same family's other sizes included)\n");
  std::fprintf(out, "%-22s %5s", "group", "rows");
  for (int s = 0; s < kTransferSchemes; ++s) std::fprintf(out, " %13s", TransferSchemeName(TransferScheme(s)));
  std::fprintf(out, "\n");
  for (const TransferGroup& g : t.groups) {
    const std::string name = g.kind == "all" ? g.name : g.kind + " " + g.name;
    std::fprintf(out, "%-22.22s %5d", name.c_str(), g.rows);
    for (int s = 0; s < kTransferSchemes; ++s) {
      char cell[32];
      std::snprintf(cell, sizeof cell, "%.1f/%.1f%%", 100 * g.median[s], 100 * g.p90[s]);
      std::fprintf(out, " %13s", cell);
    }
    std::fprintf(out, "\n");
  }
}

// Priced rows with (`published` true) or without a published peak memory; with `over`, only
// those predicted above the published peak (with one) or above the usable capacity (without).
int MemoryRows(const ValidateReport& report, bool published, bool over) {
  int n = 0;
  for (const ValidateRow& row : report.rows) {
    if (!row.skip.empty() || (row.published_memory > 0) != published) continue;
    const bool above = published ? row.cost.memory.Total() > row.published_memory : !row.cost.fits;
    n += !over || above ? 1 : 0;
  }
  return n;
}

// "10%" for a given --headroom; else each framework's default ("AutoModel 10%, Megatron-Bridge 2%").
std::string HeadroomWords(double headroom) {
  auto pct = [](double h) {
    char b[32];
    std::snprintf(b, sizeof b, "%g%%", 100 * h);
    return std::string(b);
  };
  if (headroom != kFrameworkHeadroom) return pct(headroom);
  std::string words;
  for (const FrameworkOps* f : Frameworks()) {
    words += (words.empty() ? "" : ", ") + std::string(f->title) + " " + pct(f->default_headroom);
  }
  return words;
}

}  // namespace

void AddValidateCommand(CLI::App& app, ValidateOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "predict published runs (Megatron-Bridge perf table or published-runs survey CSV) and rank their layouts");
  cmd->add_option("runs", o.runs, "CSV of published runs")->required();
  cmd->add_option("--hwdb", o.hwdb, "hardware database directory (default: the embedded hwdb/)");
  cmd->add_option("--rank-top", o.rank_top, "layouts searched for the rank (0 = do not rank)");
  cmd->add_option("--rank-seconds", o.rank_seconds, "search time limit per distinct request");
  cmd->add_option("--threads", o.threads, "search threads (default 0: one per core)");
  cmd->add_flag("--breakdown", o.breakdown, "print each row's predicted step time by term (ms)");
  cmd->add_option("--show-top", o.show_top,
                  "print the planner's N fastest fitting layouts under each row, with step time and memory "
                  "(default 0: none)");
  cmd->add_option("--headroom", o.headroom, "fraction of GPU memory kept free when deciding which layouts fit (0..0.9; default: each row's framework's, "
                  "0.02 for Megatron-Core layouts, 0.10 for AutoModel ones)")
      ->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--recipe-settings", o.recipe_settings,
                  "YAML of the published runs' recipe settings (dispatcher, EP overlap, recompute, CUDA graphs, "
                  "gradient dtype, offloading); default: the embedded recipes/megatron-bridge-perf.yaml; 'none': "
                  "meshplan's emitted settings");
  cmd->add_option("--fit", o.fit_dir,
                  "fit each system's Megatron-Core step-time constants to the rows and write them into "
                  "HWDB_DIR/systems/NAME.yaml (megatron_time_fit)");
  cmd->add_flag("--transfer", o.transfer,
                "fit each system's step-time constants in memory (nothing written) and print how they transfer: "
                "leave-one-system-out, leave-one-family-out and leave-one-model-out residuals per system, model family and pipeline depth");
}

int RunValidate(const ValidateOptions& o) { return RunValidate(o, stdout); }

int RunValidate(const ValidateOptions& o, std::FILE* out) {
  if (o.headroom != kFrameworkHeadroom) CheckedReal(o.headroom, "--headroom", 0.0, 0.9);
  if (o.show_top > 0 && o.rank_top == 0) {
    throw InputError({"<command line>", 0, 0}, "--show-top",
                     "expected with ranking on; found --rank-top 0, which searches no layouts to show");
  }
  auto option = [](bool ok, const char* flag, const std::string& expected, double found) {
    if (ok) return;
    std::ostringstream os;
    os << "expected " << expected << ", found " << found;
    throw InputError(SourceLoc{"<command line>", 0, 0}, flag, os.str());
  };
  option(o.rank_top >= 0 && o.rank_top <= 100000, "--rank-top", "an integer in [0, 100000]", o.rank_top);
  option(std::isfinite(o.rank_seconds) && o.rank_seconds > 0 && o.rank_seconds <= 86400, "--rank-seconds",
         "seconds in (0, 86400]", o.rank_seconds);
  option(o.show_top >= 0 && o.show_top <= 1000, "--show-top", "an integer in [0, 1000]", o.show_top);
  option(o.threads >= 0 && o.threads <= 1024, "--threads", "an integer in [0, 1024]", o.threads);
  Progress progress("validate", 0);
  ValidateRequest req = o;
  req.on_start = [&] {
    std::fprintf(out,
                 "# TF: model TFLOP/s per GPU (published: the release's FLOP formula; predicted: meshplan's); err%%: "
                 "predicted vs published tokens/s per GPU where published\n");
    std::fprintf(out, "%-52s %8s %8s %7s %6s %6s %5s %6s  %s\n", "run", "TF pub", "TF pred", "err%", "rank", "gap%",
                 "fits", "GiB", "published layout");
  };
  req.on_row_start = [&](int line) { progress.Step(line - 1, "planning CSV row " + std::to_string(line - 1)); };
  req.on_row = [&](const ValidateRow& row) {
    progress.Clear();
    PrintRow(out, o, row);
  };
  const ValidateReport report = Validate(req);
  const ValidateSummary& s = report.summary;
  std::fprintf(out, "skipped %d row%s%s", s.skipped, s.skipped == 1 ? "" : "s", s.skipped > 0 ? ":" : "");
  for (const auto& [why, n] : s.skip_reasons) std::fprintf(out, " [%s] x%d;", why.c_str(), n);
  std::fprintf(out, "\n");
  if (s.evaluated == 0) {
    std::fprintf(out, "summary: 0 rows evaluated, %d skipped; no error to report\n", s.skipped);
    if (!o.fit_dir.empty()) CheckFitTargets(req, report);  // throws: nothing to fit
    std::fflush(out);  // the table first when stdout and stderr share a pipe
    std::fprintf(stderr, "%s: no row could be evaluated (%s)\n", o.runs.c_str(),
                 s.skipped > 0 ? "the skip reasons are above" : "the file has no data rows after its header");
    return 1;
  }
  // Below 5 searched layouts a rank beyond them may still be in the top 5: not claimed.
  char top5_text[96];
  if (o.rank_top == 0) {
    std::snprintf(top5_text, sizeof top5_text, "not ranked (--rank-top 0)");
  } else if (o.rank_top < 5) {
    std::snprintf(top5_text, sizeof top5_text, "not determined (--rank-top %d searches fewer than 5)", o.rank_top);
  } else {
    std::snprintf(top5_text, sizeof top5_text, "%d of %d ranked (%.0f%%)", s.top5, s.ranked,
                  s.ranked > 0 ? 100.0 * s.top5 / s.ranked : 0.0);
  }
  std::fprintf(out,
               "summary: %d row%s evaluated, %d skipped; median |error| %.1f%%, p90 |error| %.1f%%; published layout "
               "in top 5: %s\n",
               s.evaluated, s.evaluated == 1 ? "" : "s", s.skipped, 100 * s.median_error, 100 * s.p90_error, top5_text);
  if (s.generic_models > 0) {
    std::fprintf(out, "models: %d of the evaluated rows priced as generic decoders of their shape columns (no preset "
                      "describes them)\n", s.generic_models);
  }
  if (s.ranked > 0 && o.rank_top >= 5) {
    // Near-ties: thousands of layouts sit within a few percent of the best, far below the
    // model's own error, so the rank alone overstates how far the published choice is.
    std::fprintf(out,
                 "ranking: published layout predicted within 5%% of the planner's fastest step time: %d of %d "
                 "ranked (%.0f%%); of the %d in the top 5, %d are predicted not to fit themselves\n",
                 s.within5, s.ranked, 100.0 * s.within5 / s.ranked, s.top5, s.top5_no_fit);
  }
  // One line per group: every MoE row, then (where hybrid rows are among them) the MoE rows
  // without hybrid mixers.
  auto moe_line = [&](const char* label, int rows, double median, double p90, int ranked, int within10) {
    std::fprintf(out, "%s: %d priced, median |error| %.1f%%, p90 |error| %.1f%%", label, rows, 100 * median, 100 * p90);
    if (ranked > 0 && o.rank_top >= 1) {
      std::fprintf(out, "; published layout predicted within 10%% of the planner's fastest: %d of %d ranked (%.0f%%)",
                   within10, ranked, 100.0 * within10 / ranked);
    }
    std::fprintf(out, "\n");
  };
  if (s.moe_rows > 0) {
    moe_line("MoE rows", s.moe_rows, s.moe_median_error, s.moe_p90_error, s.moe_ranked, s.moe_within10);
  }
  if (s.moe_flat_rows > 0 && s.moe_flat_rows < s.moe_rows) {
    moe_line("MoE rows without hybrid (Mamba-2 / Gated DeltaNet) layers", s.moe_flat_rows, s.moe_flat_median_error,
             s.moe_flat_p90_error, s.moe_flat_ranked, s.moe_flat_within10);
  }
  std::fprintf(out,
               "memory: %d of %d published layouts predicted above the usable capacity (headroom %s), %d above "
               "the GPU's whole memory; predicted share of the GPU's memory: median %.0f%%, p90 %.0f%%\n",
               s.over_capacity, s.evaluated, HeadroomWords(o.headroom).c_str(), s.over_memory,
               100 * s.memory_share_median, 100 * s.memory_share_p90);
  if (s.memory_rows > 0) {
    std::fprintf(out,
                 "memory against published peaks: %d row%s, median |error| %.1f%%, max %.1f%%; %d predicted above "
                 "the published peak\n",
                 s.memory_rows, s.memory_rows == 1 ? "" : "s", 100 * s.memory_error_median, 100 * s.memory_error_max,
                 MemoryRows(report, true, true));
  }
  // Rows that only ran (no published peak): a prediction above the usable capacity is a miss.
  if (const int unmeasured = MemoryRows(report, false, false); unmeasured > 0 && s.memory_rows > 0) {
    std::fprintf(out,
                 "memory without a published peak (the run fitted): %d of %d rows predicted above the usable "
                 "capacity\n",
                 MemoryRows(report, false, true), unmeasured);
  }
  if (report.recipe_settings) {
    std::fprintf(out,
                 "recipe settings: %s (%zu entries); %d evaluated rows without an entry use their Megatron-Bridge "
                 "recipe function's, %d neither, meshplan's emitted settings\n",
                 report.recipe_settings_file.c_str(), report.recipe_settings_entries, s.from_recipe_function,
                 s.without_settings);
  }
  if (!o.fit_dir.empty()) {
    CheckFitTargets(req, report);
    PrintAndWriteFits(out, o, report);
  }
  if (o.transfer) PrintTransfer(out, report.transfer);
  return 0;
}

}  // namespace meshplan::cli
