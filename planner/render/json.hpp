#pragma once
// JSON rendering of check's and explain's reports (meshplan/commands.hpp), in the schema style of
// plan --format json (ResultJson): the same "request" object, each layout as one of plan's
// "recipes" entries (recipe::CandidateJson and the framework's annotate_json), memory in GiB,
// times in seconds, mfu (against the BF16 dense peak) and mfu_precision_peak (against the run's
// own precision's) as fractions. Every number the text output prints is in it.
#include <nlohmann/json.hpp>

#include "meshplan/commands.hpp"

namespace meshplan::render {

/// explain's report: request, layout and its description, notes and warnings, rules (checked,
/// failures), pipeline split, memory per GPU (most loaded rank and each pipeline rank, GiB),
/// time per step term by term (s), throughput, the Megatron-Core compute split and the EP
/// all-to-all, the verdict (fits, spare_gib) and exit_status. Memory and time are null when
/// the layout cannot be priced (ExplainReport::scorable false).
nlohmann::json ExplanationJson(const ExplainReport& rep);
/// check's verdict on one document: label, request, layout, notes, rules, memory verdict,
/// prediction, comparison with the planner (against_plan), warnings, silently-off rows,
/// nearest valid layouts (each as a plan recipe with its changes) and exit_status. An
/// unusable document is {"label", "error": ErrorJson's error object, "exit_status": 2}.
nlohmann::json CheckedDocumentJson(const CheckedDocument& d);
/// check's report: file, several, empty_documents, documents (CheckedDocumentJson) and the
/// exit status of the whole file.
nlohmann::json CheckJson(const CheckReport& rep);

}  // namespace meshplan::render
