#pragma once
/// \file commands.hpp
/// The commands as library functions: `plan`, its sweep, `check` and `explain` each take a
/// request (what a front end was asked, typed) and return a report (what it found); none prints.
/// The contract between the commands and their front ends: the CLI (planner/cli/) turns options
/// into these requests and renders the reports; an HTTP server or a Python module would too.
/// Unusable input is thrown as InputError whose field is the option as the CLI spells it
/// ("--gpus", "--seq-len"), with file, line and column where the input is a file.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "meshplan/diag.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/launch.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/search.hpp"

namespace meshplan {

// ---------------------------------------------------------------- names and small checks

/// "0.5" (v0.5 / main) or "0.4" (v0.3 / v0.4). Throws InputError on --automodel-version otherwise.
AutoModelVersion ParseAutoModelVersion(const std::string& name);
/// "main" or "core0.15". Throws InputError on --mbridge-version otherwise.
MBridgeVersion ParseMBridgeVersion(const std::string& name);
/// "automodel" or "megatron-bridge". Throws InputError on --framework otherwise.
Framework ParseFramework(const std::string& name);
/// "fsdp2", "megatron_fsdp" or "ddp". Throws InputError on --strategy otherwise.
Strategy ParseStrategy(const std::string& name);
/// The framework as a verdict names it: "AutoModel", "Megatron-Bridge".
const char* FrameworkTitle(Framework framework);
/// The recipe key holding the sequence length: "dataset.seq_len", "model.seq_length".
const char* SeqLenKey(Framework framework);

/// The releases that apply to `framework`'s rules (unset: kV05, kMain). Throws InputError on the
/// other framework's version flag when it was asked: a Megatron-Bridge run takes no
/// --automodel-version, an AutoModel one no --mbridge-version. `by_framework_flag`: the
/// framework came from --framework (plan), not from a recipe or the layout flags.
std::pair<AutoModelVersion, MBridgeVersion> ResolveReleases(const ReleaseChoice& asked, Framework framework,
                                                            bool by_framework_flag = false);

/// `v` when finite and in [min, max]; else throws InputError on the command line's `flag`.
double CheckedReal(double v, const char* flag, double min, double max);
/// --headroom left out: the inputs' headroom fields hold this, and ResolveHeadroom gives the
/// framework's measured default (FrameworkOps::default_headroom).
inline constexpr double kFrameworkHeadroom = -1.0;
/// The share of GPU memory kept free: `given` checked to [0, 0.9] (InputError on --headroom),
/// or `framework`'s default_headroom when `given` is kFrameworkHeadroom.
double ResolveHeadroom(double given, Framework framework);
/// "" when `gpus` is a whole number of `system`'s nodes or at most one node (what the planner,
/// its topology graph and the frameworks' launchers assume); otherwise the reason, "expected a
/// multiple of the 8 GPUs per node of dgx-h100 (or at most one node), found 12".
std::string GpuCountProblem(const SystemSpec& system, int64_t gpus);
/// "" when `seq_len` is within `model`'s max_position_embeddings; otherwise a warning (not an
/// error: the plan is still made) that the model was not trained on positions that far.
std::string SeqLenWarning(const ModelSpec& model, int64_t seq_len);
/// now + `max_seconds` (seconds): the deadline of a search that starts now.
std::chrono::steady_clock::time_point SearchDeadline(double max_seconds);

/// The JSON of a failed command (what `plan --format json` prints on stdout, the human message
/// going to stderr):
/// {"error": {"kind", "message", "exit_status", "file", "output", "line", "column", "field"}}.
/// kind is "input" (exit 2, InputError), "no_valid_layout" or "no_layout_fits" (exit 1) or
/// "internal" (exit 3); file, output, line, column and field are null where the error has none
/// (a command-line error has no file: its field is the option). A path meshplan was to write
/// (SourceLoc::output: --out, --report, --emit-launch) is under output, not file.
nlohmann::json ErrorJson(const std::string& kind, const std::string& message, int exit_status,
                         const SourceLoc& loc = {}, const std::string& field = "");
/// `j` as JSON text indented by 2, with a final newline; invalid UTF-8 in its strings (a message
/// quoting binary input) becomes U+FFFD instead of an exception.
std::string JsonText(const nlohmann::json& j);

// ---------------------------------------------------------------- output files

/// Checks, before a search, that an output file can be written: its directory exists, it is
/// not a directory nor a device, it does not exist unless `force`, and a file can be created
/// and renamed beside it. Nothing for an empty `path`. Throws InputError naming `flag`.
void CheckOutputPath(const std::string& path, const char* flag, bool force);
/// Refuses an output (path, option) that is one of the run's input files (path, option; an
/// input that is not an existing regular file, such as a preset name, is passed over): with
/// --force it would replace the input. Compared with std::filesystem::equivalent, so links
/// and other spellings of the path count. Throws InputError naming the output's option.
void RefuseInputsAsOutputs(const std::vector<std::pair<std::string, const char*>>& outputs,
                           const std::vector<std::pair<std::string, const char*>>& inputs);

// ---------------------------------------------------------------- requests

/// A model and a system loaded, the world size checked against the system's nodes.
struct LoadedInputs {
  ModelSpec model;
  SystemSpec system;
};
/// Where the GPU count and the sequence length of a request came from, for error messages: the
/// option (--gpus / --seq-len, or a sweep's --sweep-gpus / --sweep-seq) and a prefix naming the
/// sweep point ("point 12: "; empty for a plain plan).
struct PointSource {
  std::string gpus_flag = "--gpus";
  std::string gpus_prefix;
  std::string seq_len_flag = "--seq-len";
  std::string seq_len_prefix;
};
/// Loads `model` (preset name or file, LoadModel) and `system` (name or file, with the hardware
/// database `hwdb`, "" = embedded; LoadSystem), then checks GpuCountProblem for `gpus`.
/// Throws InputError: the loaders', or the GPU count's on `source.gpus_flag`.
/// `generic_decoder`: an unsupported architecture is read as a generic decoder
/// (ModelReadOptions::generic_decoder). A model the cost model does not price (HybridRefusal)
/// is refused (InputError on "model") unless `rules_only_hybrid`: check then runs the framework's
/// rules on it and says why no memory or step time is predicted.
LoadedInputs LoadInputs(const std::string& model, const std::string& system, const std::string& hwdb,
                        int64_t gpus, const PointSource& source = {}, bool generic_decoder = false,
                        bool rules_only_hybrid = false);

/// What a search request holds besides its model and system, validated by the caller.
struct RequestSettings {
  TrainSetup setup;
  Framework framework = kDefaultFramework;
  AutoModelVersion version = AutoModelVersion::kV05;
  MBridgeVersion mb_version = MBridgeVersion::kMain;
  std::vector<Strategy> strategies;  ///< empty: every strategy (PlanRequest's default)
  int top_n = 5;
  int64_t max_micro_batch = 16;
  /// Megatron-Bridge: also search the selective recompute_modules sets that NVIDIA's recipes
  /// use for the model (search::SearchedRecomputeModules).
  bool recompute_modules = false;
  bool search_dispatchers = false;  ///< Megatron-Bridge: PlanRequest::mb_search_dispatchers
  std::string mb_recipe_function;  ///< Megatron-Bridge: PlanRequest::mb_recipe_function
  double max_seconds = 0;         ///< search time limit from now (seconds); 0 = none
  int64_t max_layouts = 0;        ///< PlanRequest::max_layouts; 0 = none
  int64_t max_memory_bytes = 0;   ///< PlanRequest::max_memory_bytes; 0 = none
  /// check: a hybrid model the framework does not price (FrameworkHybridRefusal) is let
  /// through, for its rules only; else BuildRequest refuses it.
  bool rules_only_hybrid = false;
};
/// The one request builder of plan, sweep points, check and explain: the model and system are loaded
/// first (`loaded`), then everything that depends on them is derived (the recompute_modules sets
/// of the model's architecture, torch FSDP2 when --strategy names fsdp2, the deadline).
/// Throws nothing.
PlanRequest BuildRequest(const RequestSettings& settings, LoadedInputs loaded);

/// Where `plan` writes its results besides stdout. Unset optionals: the option was not given.
struct PlanOutputs {
  std::optional<std::string> out;     ///< --out: the top recipes (YAML; JSON with --format json)
  std::optional<std::string> report;  ///< --report: the HTML report
  bool force = false;                 ///< --force: replace existing files
  bool emit_launch = false;           ///< --emit-launch: recipe, launch script and sbatch per recipe beside --out
  bool full_recipe = false;           ///< --full-recipe: with emit_launch, complete AutoModel recipes
  std::optional<int64_t> nodes, gpus_per_node;  ///< --nodes / --gpus-per-node of the launch files
  std::optional<std::string> hf_model;          ///< --hf-model: the full recipe's HF model id
};
/// Every file a plan writes with the option that names it: --out, the launch files of `recipes`
/// recipes beside it (emit_launch), --report.
std::vector<std::pair<std::string, const char*>> PlanOutputTargets(const PlanOutputs& outputs, size_t recipes);

/// What `plan` is asked (the CLI's options, typed). Unset optionals: the option was not given.
struct PlanInput {
  std::string model;   ///< preset name or path to config.json / model YAML
  bool generic_decoder = false;  ///< --generic-decoder: plan an unsupported architecture as a generic decoder
  std::string system;  ///< system name or path to a system YAML
  std::string hwdb;    ///< hardware database directory; "" = the embedded one
  std::optional<int64_t> gpus;     ///< world size, [1, 2^20]; required without sweep_gpus
  std::optional<int64_t> seq_len;  ///< tokens per sequence, [1, 2^24]; required without sweep_seq
  int64_t global_batch = 0;        ///< sequences per optimizer step, [1, 2^30]
  Precision precision = Precision::kBf16;
  Framework framework = kDefaultFramework;
  ReleaseChoice releases;
  std::vector<Strategy> strategies;  ///< --strategy; empty: all; a repeated one is refused
  int top = 5;                       ///< recipes kept, [1, 1000]
  bool top_given = false;            ///< --top was given (a sweep, which keeps each point's best, refuses it)
  /// --all-variants: every variant of a mesh in the top (PlanRequest::distinct_layouts false)
  bool all_variants = false;
  /// --rank-by step: by the predicted step alone (PlanRequest::risk_ranking false)
  bool rank_by_step = false;
  /// fraction of GPU memory kept free, [0, 0.9]; kFrameworkHeadroom: the framework's default
  double headroom = kFrameworkHeadroom;
  int64_t max_micro_batch = 16;      ///< [1, 1024]
  bool recompute_modules = false;    ///< Megatron-Bridge only
  bool search_dispatchers = false;   ///< --search-dispatchers, Megatron-Bridge only
  /// --mb-recipe: the Megatron-Bridge recipe function the overrides are written for ("": the
  /// model preset's default). Megatron-Bridge only.
  std::string mb_recipe;
  double max_seconds = 300;          ///< search time limit (seconds, per sweep point), [0.001, 1e6]
  int64_t max_layouts = 0;           ///< search work limit; 0 = none
  int64_t max_memory_mb = 0;         ///< search memory budget (resident MiB), [0, 2^30]; 0 = none
  PlanOutputs outputs;
  std::vector<int64_t> sweep_gpus;  ///< non-empty: a sweep over these GPU counts (SweepLayouts)
  std::vector<int64_t> sweep_seq;   ///< non-empty: a sweep over these sequence lengths
};
/// Validates `in` (the options a plan point reads; errors about the GPU count and the sequence
/// length name `source`'s option), loads its model and system, then BuildRequest. Throws InputError.
PlanRequest BuildPlanRequest(const PlanInput& in, const PointSource& source = {});

// ---------------------------------------------------------------- plan

/// What `plan` found.
struct PlanReport {
  PlanRequest request;  ///< as searched, top_n = the asked top
  PlanResult result;    ///< the best fitting layouts (at most `top`) and the search's counts
  std::vector<Candidate> report_layouts;  ///< with outputs.report: up to kReportLayouts fitting layouts (its scatter)
  LaunchTopology launch;  ///< the launch files' nodes (with emit_launch or nodes / gpus_per_node)
  /// Remarks in the order they arose, each starting "warning: " or "note: ".
  std::vector<std::string> warnings;
  /// Why no recipe came out ("" when result.top is not empty) and its kind ("no_valid_layout",
  /// "no_layout_fits"): every layout breaks a rule, or none fits in memory.
  std::string failure, failure_kind;
};
/// Validates `in` (including the output paths, before the search: a long search must not end in
/// "file exists"), builds the request, searches. Writes nothing; PlanOutputTargets and the
/// recipe writers are the front end's. Throws InputError for unusable input.
PlanReport PlanLayouts(const PlanInput& in);

/// The text after "warning: " when a search stopped early (result.stopped set): the limit of
/// `in` reached and the number of layouts tested.
std::string StopWarning(const PlanInput& in, const PlanResult& result);
/// The `n` rules that refused the most candidates of `result`, "name (count), ...", most first
/// (PlanResult::rejected_by_rule's order); "" when none did.
std::string TopRules(const PlanResult& result, size_t n);

// ---------------------------------------------------------------- sweep

/// One point of a sweep and its search.
struct SweepPoint {
  int64_t gpus = 0, seq_len = 0;
  PlanRequest request;                ///< top_n 1
  PlanResult result;                  ///< empty until searched
  std::vector<std::string> warnings;  ///< "warning: ..." when built (sequence length) and searched (stopped early)
};
/// What a sweep found, point by point (every GPU count times every sequence length).
struct SweepReport {
  std::vector<SweepPoint> points;
  /// "" when every point has a layout; else "N of M sweep points have no layout ...".
  std::string Failure() const;
};
/// Validates a sweep (`in.sweep_gpus` / `in.sweep_seq`; --report and --emit-launch refused) and
/// builds every point's request (BuildPlanRequest; its errors name the sweep option) before any
/// search, then checks --out. Throws InputError.
SweepReport PrepareSweep(const PlanInput& in);
/// Searches `point` with a deadline of `in.max_seconds` from now; adds a stop warning. A front
/// end that shows each point as it is done calls it point by point.
void SearchSweepPoint(SweepPoint& point, const PlanInput& in);
/// SearchSweepPoint for every point of `sweep`, several at a time: min(points, cores) points
/// run at once, each search on cores / that many threads (a search's answer and counts do not
/// depend on its thread count, PlanRequest::threads). `done(i)` is called on the calling thread
/// for each point in order, as soon as that point and every one before it are searched. An
/// exception of a point's search is rethrown after the points before it are reported (the
/// points after it are still searched and then dropped).
void SearchSweepPoints(SweepReport& sweep, const PlanInput& in, const std::function<void(size_t)>& done = {});
/// PrepareSweep, then SearchSweepPoints.
SweepReport SweepLayouts(const PlanInput& in);

// ---------------------------------------------------------------- recipes read back (check, explain)

/// One YAML document of a multi-document file: its first line in the file and its text,
/// preceded by first_line - 1 newlines so that parser line numbers are the file's.
struct Document {
  int first_line = 1;
  std::string text;
};
/// Splits a YAML stream into its documents ("---" starts one, "..." ends one); documents with
/// only blank lines, comments and markers are left out, and when `empty` is given it counts
/// those that a "---" started (the text before the first marker is not one).
std::vector<Document> SplitDocuments(const std::string& text, int* empty = nullptr);
/// Throws InputError when `text` (the file `file` given as a recipe) is the JSON of plan
/// --format json (or of a sweep): it holds layouts and predictions, not a recipe.
void RefusePlanOutput(const std::string& text, const std::string& file);

/// A recipe file read: its text and YAML documents.
struct RecipeFile {
  std::string path;
  std::string text;
  std::vector<Document> documents;
  int empty_documents = 0;  ///< documents with only a --- line
};
/// Reads `path`, refuses plan output (RefusePlanOutput) and splits it (SplitDocuments).
/// Throws InputError for an unreadable file or plan output.
RecipeFile ReadRecipeFile(const std::string& path);

/// What check and explain are asked besides the layout. Unset optionals: from the recipe (a
/// count replaces the recipe's only when positive).
struct JudgeSetup {
  std::string model, system, hwdb;  ///< as in PlanInput
  bool generic_decoder = false;     ///< as in PlanInput
  int64_t gpus = 0;                 ///< world size, [1, 2^20]
  std::optional<int64_t> seq_len;       ///< replaces the recipe's (model.seq_length / dataset.seq_len)
  std::optional<int64_t> global_batch;  ///< replaces the recipe's (train / step_scheduler global_batch_size)
  std::optional<Precision> precision;   ///< replaces the recipe's (mixed_precision / fp8); else bf16
  std::optional<Framework> framework;   ///< check: the recipe's framework; unset: detected from its keys
  ReleaseChoice releases;
  /// --mb-recipe: the Megatron-Bridge recipe function the overrides are for (ParseMegatronRecipe).
  std::string mb_recipe;
  double headroom = kFrameworkHeadroom;  ///< as PlanInput::headroom
};
/// A recipe read for judging: what it says and the request it is judged in.
struct JudgedRecipe {
  ParsedRecipe parsed;   ///< layout (a Megatron layout's unset mtp_num_layers resolved from the model), notes
  PlanRequest request;   ///< framework, releases, model, system, setup from the recipe and `setup`
};
/// Check's and explain's one way to read a recipe document `text` of the file `file`: detects its
/// framework (unless given; IsMegatronRecipe), refuses the other framework's version flag, parses
/// it (ParseMegatronRecipe / ParseAutoModelRecipe), fills the setup from `setup` or the recipe,
/// builds the request (BuildRequest) and syncs a Megatron layout's cost view. Throws InputError for
/// an unusable document, or when neither the recipe nor `setup` gives a sequence length.
/// `rules_only_hybrid`: RequestSettings::rules_only_hybrid (check).
JudgedRecipe LoadRecipeForJudging(const JudgeSetup& setup, const std::string& file, const std::string& text,
                                  const LoadedInputs& loaded, bool rules_only_hybrid = false);

/// A rule a layout breaks, with its message (recipe keys, values and fix) and its source.
struct RuleFailure {
  std::string name, message, source;
};

// ---------------------------------------------------------------- check

/// What `check` is asked: a recipe file and the setup it is judged in.
struct CheckInput {
  std::string recipe;  ///< path: an AutoModel recipe or a Megatron-Bridge override YAML, one or more documents
  JudgeSetup setup;    ///< global_batch is the recipe's
};
/// The verdict on one recipe document.
struct CheckedDocument {
  std::string label;  ///< the file, or file:line of one document among several
  std::string error;  ///< non-empty: unusable (InputError::what()); nothing below is set
  /// With `error`: the InputError's place, field and message (for check --format json's error object).
  SourceLoc error_loc;
  std::string error_field, error_message;
  JudgedRecipe recipe;
  std::vector<std::string> notes;  ///< "--seq-len 8192 replaces the recipe's 4096", ...
  std::string unfitted;            ///< FrameworkOps::unfitted_note
  size_t rules_checked = 0;        ///< rules of the framework
  std::vector<RuleFailure> failures;
  int64_t nearest_seq_len = 0;     ///< NearestValidSeqLen when a rule fails; 0 = none
  /// When a rule fails or the recipe is above the usable memory: the fewest GPUs on which the
  /// recipe's layout as written passes every rule and fits (FewestGpusFor); unset when none.
  std::optional<MoreGpus> more_gpus;
  std::optional<Cost> cost;        ///< unset: memory not predicted (`not_predicted` says why)
  std::string not_predicted;
  bool out_of_memory = false;      ///< predicted above the usable memory
  /// Predicted above the GPU's whole memory (not only its headroom): the check fails.
  bool above_whole_memory = false;
  /// A valid, predicted recipe placed among the planner's fastest layouts for the same job
  /// (CompareWithPlan, top kCheckComparedLayouts): how good it is, not only whether it is legal.
  std::optional<PlanComparison> against_plan;
  std::vector<std::string> warnings;      ///< SeqLenWarning, then the warning rows (Findings, Severity::kWarning)
  std::vector<std::string> silently_off;  ///< the silently-off rows that fire (Findings, Severity::kSilentlyOff)
  std::vector<NearbyLayout> nearest;      ///< searched when a rule fails or out_of_memory
  /// 0 valid, 1 a rule fails or the recipe is predicted above the GPU's whole memory, 2
  /// unusable. Above the usable memory but within the whole one (the headroom is short) is a
  /// warning, exit 0: the headroom is an allowance for the allocator, not a measured need.
  int Status() const { return !error.empty() ? 2 : failures.empty() && !above_whole_memory ? 0 : 1; }
};
/// How many of the planner's first layouts `check` compares a valid recipe with (its job's
/// step-time band, StepErrorBand, decides whether a gap is within the model's error).
inline constexpr int kCheckComparedLayouts = 20;
/// What `check` found.
struct CheckReport {
  std::string file;
  int empty_documents = 0;
  bool several = false;  ///< the file holds several documents, each judged on its own
  std::vector<CheckedDocument> documents;
  int Status() const;    ///< the worst of the documents' (2 > 1 > 0)
};
/// Reads the recipe, loads model and system, judges every document: rules, memory, warnings,
/// silently-off settings, nearest valid layouts. Throws InputError for unusable input; with
/// several documents an unusable one is reported (CheckedDocument::error), the others judged.
CheckReport CheckRecipe(const CheckInput& in);
/// The nearest sequence length (within 1/8 of it, a multiple of 8 ... 1024) at which `ctx`'s
/// layout passes every rule unchanged, or 0: a recipe broken only by its sequence length gets
/// that one change named instead of a reshaped layout.
int64_t NearestValidSeqLen(const RuleContext& ctx);

// ---------------------------------------------------------------- explain

/// An AutoModel layout given by its keys (explain without a recipe).
struct LayoutKeys {
  Strategy strategy = Strategy::kFsdp2;
  int64_t tp = 1, pp = 1, cp = 1, ep = 1, dp_replicate = 1, local_batch = 1, pp_microbatch = 1;
  std::optional<int64_t> layers_per_stage;  ///< unset: null
  PpSchedule pp_schedule = PpSchedule::k1F1B;
  bool pp_schedule_given = false;  ///< a note when PP is 1
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
};
/// One Megatron-Bridge override key given on explain's command line: the option that gave it
/// ("--tp", "--set"), the dotted key of the override file ("model.tensor_model_parallel_size")
/// and its value as YAML text ("4", "true", "[core_attn,mlp]").
struct MbFlagKey {
  std::string flag, key, value;
};
/// explain's Megatron-Bridge layout flags as given (the CLI's options, the API's and the Python
/// module's keys of the same names); an unset one writes no key, so that the --mb-recipe
/// function's value, else Megatron-Core's default, stays. Text values are YAML ("2", "null").
struct MbLayoutFlags {
  std::optional<int64_t> tp, pp, cp, ep;
  std::optional<std::string> vpp, etp, mbs, recompute_num_layers, mtp_layers;  ///< YAML integers (or null)
  std::optional<bool> sequence_parallel, account_for_embedding_loss;
  std::optional<std::string> recompute;  ///< none, selective or full
  std::optional<std::vector<std::string>> recompute_modules;
  std::optional<std::string> recompute_method;  ///< uniform or block
  std::optional<std::string> dp_type;           ///< ddp, ddp+distopt, megatron_fsdp or torch_fsdp2
  std::optional<std::string> fsdp_sharding, pp_layout;
  std::optional<std::string> dispatcher;    ///< allgather, alltoall or flex
  std::optional<std::string> flex_backend;  ///< deepep or hybridep
  /// p2p, all_gather, a2a or a2a+p2p (a2a+p2p: with --set model.hierarchical_context_parallel_sizes=[A,P])
  std::optional<std::string> cp_comm_type;
  std::vector<std::string> sets;            ///< --set KEY=VALUE, in order
};
/// The override keys `flags` give, in the order of explain's flags (docs/cli.md#explain): --tp
/// is model.tensor_model_parallel_size, --dp-type the four ddp./dist. switches, --set its own
/// dotted key. Throws InputError on the flag of a value outside its choices, or on --set for
/// an entry that is not KEY=VALUE.
std::vector<MbFlagKey> MbFlagKeys(const MbLayoutFlags& flags);
/// The layout flags of explain that belong to one framework only: AutoModel's keys
/// (--strategy, --dp-replicate, ...) when `megatron` is false, Megatron-Bridge's override
/// flags (--vpp, --etp, --mbs, --dp-type, ..., --set) when true.
const std::vector<std::string>& FrameworkOnlyLayoutFlags(bool megatron);
/// Throws InputError on the first of `given` (flags, "--vpp") that belongs to the other
/// framework's layout than `fw`'s, naming the --framework it needs.
void RefuseOtherFrameworkFlags(const FrameworkOps& fw, const std::set<std::string>& given);
/// What `explain` is asked: a layout from a recipe or from its keys, the setup and the memory model.
struct ExplainInput {
  JudgeSetup setup;    ///< framework: --framework (a recipe's is detected; unset: AutoModel keys)
  std::string recipe;  ///< "" = the layout of `keys` (AutoModel) or of `mb_keys` (Megatron-Bridge)
  LayoutKeys keys;
  /// --framework megatron-bridge without a recipe: the override keys the layout flags give, read
  /// as an override file of them would be (ParseMegatronRecipe, with --mb-recipe's function):
  /// the same rules, defaults and messages as a recipe, errors naming the flag.
  std::vector<MbFlagKey> mb_keys;
  /// "pytorch", "megatron" or "megatron-bridge"; "" = pytorch for AutoModel, megatron-bridge for
  /// Megatron-Bridge layouts.
  std::string memory_profile;
  bool fp32_params = false;  ///< AutoModel only
  /// AutoModel FSDP2 only: distributed.defer_fsdp_grad_sync (MemoryOptions::defer_fsdp_grad_sync).
  /// Unset: the recipe's value, else AutoModel's default true (FSDP2Config.defer_fsdp_grad_sync:
  /// bool = True, nemo_automodel/components/distributed/config.py).
  std::optional<bool> defer_fsdp_grad_sync;
  /// AutoModel only: the Adam(W) implementation, "foreach" (torch's default), "fused" or
  /// "forloop" (MemoryOptions::adam_impl); "" = foreach.
  std::string adam_impl;
};
/// The compute term of a Megatron-Bridge layout's slowest rank, split (seconds per step).
struct ComputeSplit {
  double gemm = 0, attention = 0, memory_bound = 0, kernels = 0;
};
/// The EP all-to-all of a Megatron-Bridge MoE layout's slowest rank (seconds per step).
struct EpSplit {
  /// Megatron-Core moe_token_dispatcher_type (alltoall, allgather or flex); AutoModel
  /// model.backend.dispatcher (torch, deepep, hybridep, uccl_ep, mok)
  std::string dispatcher;
  std::string backend;     ///< flex: deepep or hybridep; "" otherwise
  /// AutoModel: the routing the dispatch is priced for (the learned gate or fake_balanced_gate); "" for Megatron-Core
  std::string routing;
  bool automodel = false;  ///< an AutoModel layout (its dispatch blocks the compute stream: nothing hidden)
  bool overlap = false;    ///< overlap_moe_expert_parallel_comm
  int64_t ep = 1;          ///< EP size
  EpTraffic traffic;       ///< its seconds per step, links and token copies
};
/// The attention's context-parallel exchange of a Megatron-Bridge layout with CP > 1.
struct CpSplit {
  std::string type;     ///< model.cp_comm_type priced: p2p, all_gather, a2a or a2a+p2p
  bool written = false; ///< the recipe sets cp_comm_type (false: null, Megatron-Core's p2p)
  int64_t cp = 1;       ///< context_parallel_size
  int64_t a2a = 0;      ///< a2a+p2p: ranks of the a2a level (the p2p ring spans cp / a2a); 0 otherwise
  double exposed = 0;   ///< s per step left exposed (the CP communication term)
};
/// How the decoder layers of a Megatron-Bridge layout with PP > 1 are split over its ranks.
struct PipelineSplit {
  enum class Kind {
    kGivenLayout,    ///< its pipeline_model_parallel_layout, as priced
    kOwnLayout,      ///< its pipeline_model_parallel_layout, equal to meshplan's own split
    kEvenFallback,   ///< meshplan's even split: the given layout does not fit
    kAccountEmbeddingLoss,  ///< Megatron-Core's split with account_for_embedding/loss
    kEven,           ///< Megatron-Core's even split
  };
  std::vector<int64_t> layers_per_rank;
  Kind kind = Kind::kEven;
  int64_t embedding_rank = 0, loss_rank = 0;  ///< kGivenLayout
  int64_t mtp_layers = 0, mtp_rank = 0;
};
/// What `explain` found.
struct ExplainReport {
  PlanRequest request;  ///< framework, releases, model, system, setup
  Layout layout;
  std::optional<ParsedRecipe> parsed;  ///< with a recipe: its notes
  std::string unfitted;                ///< FrameworkOps::unfitted_note
  std::vector<std::string> notes;      ///< "--seq-len X replaces the recipe's Y", "--global-batch ..."
  std::string seq_len_warning;         ///< SeqLenWarning
  std::string model_warning;           ///< GenericModelWarning
  std::string unused_schedule;         ///< "--pp-schedule X has no effect ..." (keys with PP 1)
  size_t rules_checked = 0;
  std::vector<RuleFailure> failures;
  std::optional<PipelineSplit> pipeline;  ///< Megatron-Bridge with PP > 1
  bool scorable = false;  ///< sizes divide the GPU count and the batch; false: nothing below is set
  std::string memory_profile;             ///< the profile used
  std::vector<MemoryBreakdown> rank_memory;  ///< per pipeline rank
  Cost cost;
  std::optional<ComputeSplit> compute;    ///< Megatron-Bridge
  std::optional<EpSplit> ep;              ///< Megatron-Bridge MoE layouts with EP > 1
  std::optional<CpSplit> cp;              ///< Megatron-Bridge layouts with CP > 1
  /// 0 valid and fits, 1 breaks a rule, does not fit or cannot be priced.
  int Status() const { return scorable && failures.empty() && cost.fits ? 0 : 1; }
};
/// Reads the layout (LoadRecipeForJudging, or the keys), checks every rule, prices it term by
/// term. Throws InputError for unusable input.
ExplainReport ExplainLayout(const ExplainInput& in);

}  // namespace meshplan
