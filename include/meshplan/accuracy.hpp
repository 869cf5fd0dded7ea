#pragma once
/// \file accuracy.hpp
/// The accuracy of meshplan's cost model against measured runs. `meshplan validate RUNS.csv`
/// (Validate) prices every run of a Megatron-Bridge performance table or of the published-runs
/// survey at its published layout, compares the predicted throughput with the published one,
/// ranks the published layout among the fitting layouts the planner finds for the same
/// request, and (validate --fit) fits each system's Megatron-Core step-time constants to the
/// runs. The calibration of a system from microbenchmarks (`meshplan calibrate`) is
/// calibrate.hpp; both fits share one least-squares core (planner/accuracy/least_squares.hpp).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "meshplan/cost.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"
#include "meshplan/search.hpp"

namespace meshplan {

/// The compute term of a Megatron-Bridge layout's slowest pipeline rank, split as MegatronTime
/// scales it with the system's fitted constants (seconds per step): GEMMs, attention core,
/// HBM-bound kernels, kernel launches; and the rank's bubble fraction (bubble / compute).
struct MegatronComputeSplit {
  double gemm = 0, attention = 0, memory_bound = 0, kernels = 0, bubble_fraction = 0;
  EpTraffic ep;  ///< the same rank's EP all-to-all per step
};
/// MegatronComputeSplit of `layout` (a Megatron-Bridge layout) under `system.megatron_fit`.
MegatronComputeSplit SplitMegatronCompute(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup,
                                          const Layout& layout);

/// The two files Validate reads, told apart by their header (planner/accuracy/published_runs.hpp
/// lists their columns).
enum class PublishedRunsFormat {
  kMegatronBridgePerf,  ///< Megatron-Bridge performance table (release, task, model, system, gpus, ...)
  kSurvey,              ///< the published-runs survey (id, model, ..., gpu_type, TP, PP, ...)
};

/// One data row of the runs file as Validate priced it, or skipped it.
struct ValidateRow {
  int line = 0;            ///< 1-based line in the file
  std::string label;       ///< "model system gpus precision" (perf table), "#id model gpus" (survey)
  std::string skip;        ///< why the row was not priced, as counted in skip_reasons ("" = priced)
  std::string skip_shown;  ///< `skip` with this row's details (the cell, the rule's explanation)

  // A priced row:
  /// The model is the generic decoder of the row's shape columns (no preset describes it):
  /// its ModelSpec::generic_note, "" for a preset's model.
  std::string generic_model;
  /// The row's columns disagree with each other ("" = they agree): its ga cell against
  /// gbs / (dp x mbs) of its layout; the row is priced as its gbs, mbs and layout cells say.
  std::string columns_note;
  Layout layout;  ///< the published layout, with the release's recipe settings where known
  Cost cost;      ///< its predicted cost
  double published_tflops = 0;  ///< published model TFLOP/s per GPU (0 = not published)
  /// The error is on tokens/s per GPU whenever the perf table publishes it: model TFLOP/s
  /// depend on the release's FLOP formula, tokens/s do not. Survey rows, and rows without
  /// tokens/s, compare model TFLOP/s per GPU.
  bool on_tokens = false;
  double published = 0, predicted = 0;  ///< the compared values, tokens/s or TFLOP/s per GPU
  double error = 0;                     ///< (predicted - published) / published
  bool moe = false;                     ///< the model is a MoE model (the summary's MoE line counts it)
  bool hybrid = false;                  ///< the model has a layer pattern (ModelSpec::is_hybrid)
  double published_step = 0;  ///< seconds: the predicted step scaled to the published throughput (0 if predicted is 0)
  bool without_recipe_settings = false;  ///< perf-table row with no recipe-settings entry: meshplan's emitted settings
  /// Perf-table row without an entry, priced with the settings of this Megatron-Bridge
  /// performance recipe function of its model, system, GPU count and precision ("" = none).
  std::string recipe_function;
  /// Survey row of an AutoModel run: the benchmark recipe it is priced as
  /// (recipes/automodel-benchmarks/...; "" = a Megatron-Core run).
  std::string automodel_recipe;
  /// The run's published peak memory per GPU, bytes (0 = none); compared with the predicted
  /// Cost::memory.Total() (what the GPU holds: allocated memory, CUDA context and NCCL).
  double published_memory = 0;
  std::optional<MegatronComputeSplit> split;  ///< breakdown, perf table: the compute split of `layout`

  // A ranked row (ValidateRequest::rank_top > 0):
  bool ranked = false;
  int64_t rank = 0;     ///< 1 + the fitting layouts strictly faster (1e-9 relative: the layout itself is among them)
  bool beyond = false;  ///< slower than every one of rank_top layouts kept: the rank is beyond rank_top
  std::optional<double> gap;  ///< step / the planner's fastest step - 1 (none when it found no layout)
  std::vector<Candidate> top;         ///< the planner's show_top fastest fitting layouts, fastest first
  std::optional<Candidate> fastest;   ///< the planner's fastest fitting layout
  std::optional<MegatronComputeSplit> fastest_split;  ///< breakdown, perf table: its compute split
};

/// What `meshplan validate` is asked. Ranges are the CLI's to check (rank_top [0, 100000],
/// rank_seconds (0, 86400], show_top [0, 1000] and only with ranking, threads [0, 1024],
/// headroom [0, 0.9] or -1).
struct ValidateRequest {
  std::string runs;  ///< CSV path: a Megatron-Bridge perf table or the published-runs survey
  std::string hwdb;  ///< hardware database directory ("" = embedded)
  int rank_top = 20;         ///< layouts kept per search for the rank; 0 = do not rank
  double rank_seconds = 20;  ///< search time limit per distinct (model, system, gpus, seq, gbs, precision, settings)
  int threads = 0;           ///< search threads; 0 = one per core
  int show_top = 0;          ///< keep the planner's N fastest fitting layouts per ranked row
  bool breakdown = false;    ///< perf table: keep the compute splits of the published and fastest layouts
  std::string fit_dir;       ///< hwdb directory to fit each system's MegatronTimeFit for ("" = no fit)
  /// Fit each system's constants in memory (nothing is written) and measure how they transfer
  /// (ValidateReport::transfer): leave-one-system-out and leave-one-family-out beside the
  /// in-sample and leave-one-out residuals.
  bool transfer = false;
  /// Published recipe settings (recipes/megatron-bridge-perf.yaml schema): "" = the embedded
  /// file, "none" = price every row with meshplan's emitted settings instead.
  std::string recipe_settings;
  /// fraction of GPU memory kept free (as plan's --headroom); -1 (commands::kFrameworkHeadroom):
  /// each row's framework's FrameworkOps::default_headroom
  double headroom = -1.0;
  /// When set, every row is priced on this system, whatever its system cell says (calibrate
  /// --runs: a user's own runs on their own system); the rows' system is its name.
  std::optional<SystemSpec> system;
  /// Fit each system's constants (ValidateReport::fits) without writing anything, as fit_dir
  /// does (SystemFit::file stays empty).
  bool fit_in_memory = false;
  /// Called, when set, once the inputs are read and checked, before the first row.
  std::function<void()> on_start;
  /// Called, when set, with each non-blank data line before it is priced (a progress hook).
  std::function<void(int line)> on_row_start;
  /// Called, when set, with each row once it is priced or skipped, in file order, so that rows
  /// can be shown while the searches of later rows run.
  std::function<void(const ValidateRow&)> on_row;
};

/// Weight of validate --fit's ridge term toward the physical model's constants (1, 1, 4 us):
/// it keeps systems with few rows near the physical model.
inline constexpr double kMegatronFitRidge = 0.1;

/// Outcome of fitting one system's Megatron-Core step-time constants (FitMegatronTime).
struct MegatronFitOutcome {
  MegatronTimeFit fit;
  std::vector<double> residuals;      ///< (predicted − published) / published, per row
  std::vector<double> loo_residuals;  ///< the same with the row left out of the fit
  std::vector<std::string> fitted;    ///< names of the constants fitted (others stay at the prior)
  /// Per GEMM precision (bf16, fp8, fp4): the rows and distinct models of that precision, and
  /// whose GEMM constant its rows are fitted with (the index of gemm_bf16 / _fp8 / _fp4: its own
  /// when kFitMinModels models ran in it, else the identified precision with the most rows;
  /// -1: no row needs it, it stays at the prior).
  int gemm_rows[3] = {0, 0, 0}, gemm_models[3] = {0, 0, 0}, gemm_tie[3] = {-1, -1, -1};
};

/// validate --fit: one system's constants fitted to its priced rows.
struct SystemFit {
  std::string system;  ///< hwdb system name
  std::string file;    ///< fit_dir/systems/NAME.yaml, which WriteSystemFit rewrites
  std::string source;  ///< "RUNS.csv, N rows", the block's `source:`
  std::vector<std::string> labels;  ///< each row's label (with its release), in file order
  MegatronFitOutcome outcome;
  double loo_median = 0;  ///< median |leave-one-out residual|
  /// The command named in the block's header comment (who wrote it).
  std::string written_by = "`meshplan validate RUNS.csv --fit HWDB_DIR`";
};

/// The ways validate --transfer obtains the constants a row is predicted with, in the order
/// of TransferRow::residual and TransferGroup's quantiles.
enum TransferScheme {
  kInSample = 0,     ///< the row's system fitted on all its rows (validate --fit)
  kLeaveOneOut,      ///< the same fit without the row
  kLosoBorrowed,     ///< leave one system out: the system borrows from the other systems' fits
                     ///< as an unfitted system does (BorrowMegatronFitFrom: the median of those of
                     ///< the same GPU compute capability, else of all of them)
  kLosoPooled,       ///< leave one system out: one fit on the pooled rows of every other system
  kLosoPhysical,     ///< leave one system out, no fit at all: cost::MegatronPhysicalFit, the
                     ///< GPU generation's physical constants (no row of any system fitted)
  kLeaveFamilyOut,   ///< the row's system fitted on its rows of the other model families
  kLeaveModelOut,    ///< the row's system fitted on its rows of the other models (preset names)
  kTransferSchemes
};
/// Column names of the schemes, for tables ("in-sample", "LOO", "LOSO borrow", ...).
const char* TransferSchemeName(TransferScheme scheme);

/// One fitted row's relative step-time residual ((predicted - published) / published) under
/// each TransferScheme.
struct TransferRow {
  std::string system, family, label;
  int64_t pp = 1;  ///< pipeline stages of the published layout
  double residual[kTransferSchemes] = {};
};
/// A group of TransferRows (one system, one model family, one pipeline-depth bucket, or all)
/// with the median and 90th percentile of |residual| under each scheme.
struct TransferGroup {
  std::string kind;  ///< "system", "family", "pp" or "all"
  std::string name;  ///< "dgx-h100", "llama", "2-4", "all rows"
  int rows = 0;
  double median[kTransferSchemes] = {}, p90[kTransferSchemes] = {};
};
/// validate --transfer: every fitted row and the groups, systems first (by name), then families
/// (by name), pipeline depths (1, 2-4, 5+) and all rows.
struct TransferReport {
  std::vector<TransferRow> rows;
  std::vector<TransferGroup> groups;
};
/// The model family of a preset or model file name: its stem up to the first dash-separated
/// part that holds a digit, with a trailing version number removed ("llama3.1-405b" -> "llama",
/// "qwen3-235b-a22b" -> "qwen", "gpt-oss-120b" -> "gpt-oss", "deepseek-v3" -> "deepseek").
std::string ModelFamily(const std::string& model);

/// Counts and statistics over the rows of a ValidateReport (errors, shares: fractions).
struct ValidateSummary {
  int evaluated = 0, skipped = 0;
  int generic_models = 0;  ///< evaluated rows priced as generic decoders of their shape columns
  std::map<std::string, int> skip_reasons;  ///< skipped rows per reason, by reason
  double median_error = 0, p90_error = 0;   ///< of |error| over the priced rows
  int ranked = 0;       ///< rows ranked
  int top5 = 0;         ///< ranked rows whose published layout is among the planner's 5 fastest
  int top5_no_fit = 0;  ///< of those, layouts predicted not to fit themselves
  int within5 = 0;      ///< ranked rows predicted within 5% of the planner's fastest step
  /// Rows of MoE models (ModelSpec::is_moe): how many were priced, the median and p90 of their
  /// |error|, how many were ranked and how many of those predicted within 10% of the planner's
  /// fastest step.
  int moe_rows = 0, moe_ranked = 0, moe_within10 = 0;
  double moe_median_error = 0, moe_p90_error = 0;
  /// The same of the MoE rows whose every layer is attention + MLP (DeepSeek-V3, Qwen3, GPT-OSS,
  /// Kimi-K2, ...), without the hybrid models (Mamba-2 or Gated DeltaNet mixers: Nemotron 3,
  /// Qwen3-Next), whose own mixer terms would otherwise hide how the MoE terms do.
  int moe_flat_rows = 0, moe_flat_ranked = 0, moe_flat_within10 = 0;
  double moe_flat_median_error = 0, moe_flat_p90_error = 0;
  /// Published runs ran: a prediction above the usable capacity, or above the GPU's whole
  /// memory, is a memory-model miss (or a setting the recipe does not show).
  int over_capacity = 0, over_memory = 0;
  double memory_share_median = 0, memory_share_p90 = 0;  ///< predicted memory / the GPU's memory
  int without_settings = 0;  ///< priced perf-table rows with neither a recipe-settings entry nor a recipe function
  int from_recipe_function = 0;  ///< priced perf-table rows with the settings of their recipe function
  /// Rows with a published peak memory: how many, and the median and largest |predicted /
  /// published - 1|.
  int memory_rows = 0;
  double memory_error_median = 0, memory_error_max = 0;
};

/// Everything `meshplan validate` prints, as data.
struct ValidateReport {
  PublishedRunsFormat format = PublishedRunsFormat::kMegatronBridgePerf;
  std::vector<ValidateRow> rows;  ///< every non-blank data row, in file order
  ValidateSummary summary;
  bool recipe_settings = false;       ///< a recipe-settings table was applied (perf table, not "none")
  std::string recipe_settings_file;   ///< where it was read from
  size_t recipe_settings_entries = 0;
  std::vector<SystemFit> fits;  ///< fit_dir: one per system with priced rows, by system name
  /// fit_dir: |residual| quantiles over every system's rows, in sample and left out.
  double fit_median = 0, fit_p90 = 0, fit_loo_median = 0, fit_loo_p90 = 0;
  TransferReport transfer;  ///< ValidateRequest::transfer: the transfer residuals
};

/// Prices every row of `req.runs` (planner/accuracy/validate.cpp). Writes nothing. Rows that
/// cannot be priced are reported with their reason: those ParsePublishedRuns names, a GPU
/// count that is not a whole number of the system's nodes, a layout that breaks a rule.
/// Throws InputError for an unusable hwdb directory, runs file or recipe-settings file
/// (ReadRunsFile, ParsePublishedRuns, LoadPerfRecipeSettings) and, when fit_dir is set, for a
/// fit_dir without a systems/ folder.
ValidateReport Validate(const ValidateRequest& req);

/// validate --fit, before anything is written: throws InputError ("--fit", nothing written)
/// when no row was priced, or when a fitted system has no readable file in fit_dir/systems/
/// (all systems or none).
void CheckFitTargets(const ValidateRequest& req, const ValidateReport& report);

/// Replaces (or appends) the `megatron_time_fit:` block at the end of `fit.file` with the fit
/// (constants, row count, residual median / p90 and every row's residual), keeping the rest of
/// the file byte for byte; written atomically. Throws InputError when the file cannot be read
/// or written.
void WriteSystemFit(const SystemFit& fit);
/// `yaml` (a hwdb/systems file's text) with its `megatron_time_fit:` block, and the header
/// comments above it, replaced by `fit`'s (or appended when it has none); every other line kept
/// byte for byte. WriteSystemFit writes this of fit.file. Throws nothing.
std::string SystemYamlWithFit(const std::string& yaml, const SystemFit& fit);

}  // namespace meshplan
