#pragma once
// The JSON writers of the API's answers that the CLI has no --format json for yet: check,
// explain and validate reports, the lists, and the plan's scatter. Each report has one
// function, so that a CLI writer, once there, replaces it in one place. Sizes in GiB (2^30
// bytes), times in seconds, throughputs in tokens/s per GPU, MFU as a fraction.
#include <nlohmann/json.hpp>

#include <vector>

#include "meshplan/accuracy.hpp"
#include "meshplan/commands.hpp"

namespace meshplan::api {

/// check's report: {"file", "documents": [{"label", "status", "verdict", "error", "framework",
/// "layout" (as plan's recipes: CandidateJson, with its cost when predicted), "rules_checked", "failures": [{"rule", "message", "source"}], "nearest_seq_len",
/// "cost", "not_predicted", "out_of_memory", "above_whole_memory", "warnings", "silently_off",
/// "notes", "nearest": [{"changes", "layout", "cost"}], "against_plan"}], "status"}.
nlohmann::json CheckJson(const CheckReport& rep);
/// explain's report: request, layout, rules broken, memory per pipeline rank, cost, status.
nlohmann::json ExplainJson(const ExplainReport& rep);
/// validate's report: every row (priced or skipped with its reason) and the summary.
nlohmann::json ValidateJson(const ValidateReport& rep);
/// `list models`, `list systems`, `list gpus` as arrays of objects (the tables' columns).
nlohmann::json ModelsJson();
nlohmann::json SystemsJson();
nlohmann::json GpusJson();
/// The fitting layouts of a plan's scatter: [{"layout", "memory_gib", "tokens_per_s_per_gpu",
/// "step_seconds", "mfu"}], fastest first.
nlohmann::json ScatterJson(const std::vector<Candidate>& layouts);

/// What `plan --emit-launch` writes beside each recipe, as text: [{"rank", "recipe_file",
/// "launch_sh", "sbatch"}] for the system's own node size (ResolveLaunchTopology with nothing
/// asked); recipe_file is MODEL_SYSTEM_GPUS.rankN.yaml, the name the scripts look for beside
/// themselves. Throws InputError from ResolveLaunchTopology.
nlohmann::json LaunchJson(const PlanResult& result, const PlanRequest& req);

}  // namespace meshplan::api
