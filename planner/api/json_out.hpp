#pragma once
// The JSON writers of the API's answers: check and explain exactly as `meshplan check|explain
// --format json` writes them (render/json.hpp); validate, the lists and the plan's scatter,
// which the CLI prints as text only. Sizes in GiB (2^30
// bytes), times in seconds, throughputs in tokens/s per GPU, MFU as a fraction (mfu against the
// BF16 dense peak, mfu_precision_peak against the run's own precision's).
#include <nlohmann/json.hpp>

#include <vector>

#include "meshplan/accuracy.hpp"
#include "meshplan/commands.hpp"

namespace meshplan::api {

/// check's report: render::CheckJson, the JSON of `meshplan check --format json`.
nlohmann::json CheckJson(const CheckReport& rep);
/// explain's report: render::ExplanationJson, the JSON of `meshplan explain --format json`.
nlohmann::json ExplainJson(const ExplainReport& rep);
/// validate's report: every row (priced or skipped with its reason) and the summary.
nlohmann::json ValidateJson(const ValidateReport& rep);
/// `list models`, `list systems`, `list gpus` as arrays of objects (the tables' columns).
nlohmann::json ModelsJson();
nlohmann::json SystemsJson();
nlohmann::json GpusJson();
/// The fitting layouts of a plan's scatter: [{"layout", "memory_gib", "tokens_per_s_per_gpu",
/// "step_seconds", "mfu", "mfu_precision_peak", "precision_peak"}], fastest first;
/// precision_peak names the peak of mfu_precision_peak (recipe::PrecisionPeakName of `req`).
nlohmann::json ScatterJson(const std::vector<Candidate>& layouts, const PlanRequest& req);

/// What `plan --emit-launch` writes beside each recipe, as text: [{"rank", "recipe_file",
/// "launch_sh", "sbatch"}] for the system's own node size (ResolveLaunchTopology with nothing
/// asked); recipe_file is MODEL_SYSTEM_GPUS.rankN.yaml, the name the scripts look for beside
/// themselves. Throws InputError from ResolveLaunchTopology.
nlohmann::json LaunchJson(const PlanResult& result, const PlanRequest& req);

}  // namespace meshplan::api
