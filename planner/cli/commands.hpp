#pragma once
// Sub-commands of the meshplan CLI. Each Add* declares its options on the CLI11 app; each
// Run* turns them into a request of the commands library (meshplan/commands.hpp), renders its
// report and returns the process exit status: 0 success, 1 no layout satisfies the request,
// 2 unusable input (thrown as InputError and printed by main).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "meshplan/accuracy.hpp"
#include "meshplan/commands.hpp"

namespace meshplan::cli {

/// Value of an integer option the user did not give.
inline constexpr long long kNotGiven = -(1LL << 62);

/// `meshplan plan`. Options of the request's own types are bound to `in`; the others are read
/// into it when the command runs.
struct PlanOptions {
  PlanInput in;
  long long gpus = kNotGiven, seq_len = kNotGiven;  ///< in.gpus / in.seq_len when given
  std::string precision = "bf16", framework = "automodel";
  std::string rank_by = "expected";  ///< --rank-by: expected or step
  std::string automodel_version = "0.5", mbridge_version = "main";  ///< in.releases when given
  std::vector<std::string> strategies;
  std::string format = "table";                  ///< stdout: table, yaml or json
  std::string out, report, hf_model;             ///< in.outputs when given
  long long nodes = 0, gpus_per_node = 0;        ///< in.outputs when given
  std::set<std::string> given;  ///< options given on the command line (those whose defaults are valid values)
};

/// `meshplan check RECIPE`, bound to `in` like PlanOptions.
struct CheckOptions {
  CheckInput in;
  std::string format = "table";  ///< stdout: table (text) or json
  long long seq_len = 0;  ///< 0: from the recipe (Megatron model.seq_length, AutoModel dataset.seq_len)
  std::string precision;  ///< "": the recipe's (mixed_precision / fp8.enabled), else bf16
  std::string framework;  ///< empty: detected from the recipe's keys
  std::string automodel_version = "0.5", mbridge_version = "main";
  std::set<std::string> given;  ///< --automodel-version / --mbridge-version when given
};

/// `meshplan explain`: a layout from flags (AutoModel or Megatron-Bridge keys) or --recipe,
/// bound to `in` like PlanOptions.
struct ExplainOptions {
  ExplainInput in;
  long long seq_len = 0, global_batch = 0;  ///< 0: the recipe's
  std::string strategy = "fsdp2", pp_schedule = "1f1b", recompute = "none";
  long long layers_per_stage = kNotGiven;  ///< not given: null
  std::string precision;  ///< "": the recipe's, else bf16
  std::string framework;  ///< --framework: "" = AutoModel keys (a recipe's is detected)
  std::string format = "table";  ///< stdout: table (text) or json
  std::string automodel_version = "0.5", mbridge_version = "main";
  std::string defer_fsdp_grad_sync;  ///< "true", "false"; "": the recipe's, else AutoModel's default true
  /// Megatron-Bridge layout flags (strings: passed as YAML values to the override reader).
  std::string vpp, etp, mbs, dp_type, fsdp_sharding, recompute_method, recompute_num_layers,
      dispatcher, flex_backend, cp_comm_type, pp_layout, mtp_layers;
  std::vector<std::string> recompute_modules, sets;
  bool account_embedding_loss = false;
  /// Layout flags given on the command line (to refuse the other framework's), and
  /// --automodel-version / --mbridge-version when given.
  std::set<std::string> given;
};

struct ListOptions {
  std::string what;
  std::string hwdb;
};

/// `meshplan validate RUNS.csv` (planner/cli/validate.cpp): its options are the library's
/// request (include/meshplan/accuracy.hpp); RunValidate checks their ranges.
using ValidateOptions = ValidateRequest;

/// `meshplan calibrate` (planner/cli/calibrate.cpp).
struct CalibrateOptions {
  std::vector<std::string> files;  ///< tools/measure collectives.jsonl / gemm.jsonl
  std::string system, hwdb, out;
  double max_residual = 0.25;  ///< refuse above this RMS relative residual
  bool force = false;
};
void AddCalibrateCommand(CLI::App& app, CalibrateOptions& o);
/// Prints every point's residual; returns 1 (writing nothing) when the fit is refused.
int RunCalibrate(const CalibrateOptions& o);

void AddPlanCommand(CLI::App& app, PlanOptions& o);
/// `plan`: PlanLayouts, or with --sweep-gpus / --sweep-seq RunSweep.
int RunPlan(const PlanOptions& o);
/// `plan --sweep-gpus / --sweep-seq` (`in`: `o` as a request): one line per (GPU count, sequence
/// length) point with the best layout, printed as its search ends; with --format yaml / json the
/// best recipe of every point instead, and --out writes that (YAML, or JSON with --format json),
/// whole or not at all. Exit 0 if every point has a layout, 1 if some point has none (--out
/// still holds the points that have one).
int RunSweep(const PlanOptions& o, const PlanInput& in);
/// Records in `given` when --automodel-version or --mbridge-version of `cmd` is given.
void TrackVersionFlags(CLI::App* cmd, std::set<std::string>& given);
/// The releases asked on the command line: those of `given` (TrackVersionFlags), parsed.
ReleaseChoice AskedReleases(const std::set<std::string>& given, const std::string& automodel,
                            const std::string& mbridge);
void AddCheckCommand(CLI::App& app, CheckOptions& o);
int RunCheck(const CheckOptions& o);
void AddExplainCommand(CLI::App& app, ExplainOptions& o);
int RunExplain(const ExplainOptions& o);
void AddListCommand(CLI::App& app, ListOptions& o);
int RunList(const ListOptions& o);
void AddValidateCommand(CLI::App& app, ValidateOptions& o);
/// Prints meshplan::Validate's report to `out` as it goes: one line per CSV row (predicted vs
/// published model TFLOP/s per GPU, error, rank of the published layout among the planner's
/// fitting layouts), then the summary (median and p90 absolute error, share of ranked rows in
/// the top 5, memory) and, with --fit, each system's fit as it is written. Returns 0, or 1 when
/// no row could be evaluated; throws InputError for an option out of range and for what
/// Validate, CheckFitTargets and WriteSystemFit refuse.
int RunValidate(const ValidateOptions& o, std::FILE* out);
int RunValidate(const ValidateOptions& o);

}  // namespace meshplan::cli
