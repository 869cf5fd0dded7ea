#pragma once
// Text rendering of the commands' reports (meshplan/commands.hpp): what the CLI prints on stdout,
// written to any stream.
#include <ostream>
#include <string>

#include "meshplan/commands.hpp"

namespace meshplan::render {

/// check's verdict on one document: header, recipe notes, rules, memory, warnings, silently-off
/// settings and, when it fails or is predicted out of memory, the nearest valid layouts as recipes.
void PrintCheckedDocument(std::ostream& out, const CheckedDocument& d);
/// explain's report: header, notes, rules, pipeline split, memory per GPU and time per step term
/// by term (and the Megatron-Bridge compute split), and the verdict.
void PrintExplanation(std::ostream& out, const ExplainReport& rep);
/// "8 GPUs, seq_len 4096".
std::string PointName(const SweepPoint& p);
/// The sweep table's header line, and the line of a searched point (its best layout, or why it
/// has none), the layout last (points print as they finish, so its width is not known). MFU% is
/// against the BF16 dense peak; an FP8 or FP4 sweep adds MFU8% (MFU4%)
/// against its own precision's peak (Cost::mfu_precision_peak).
std::string SweepHeader(const SweepReport& sweep);
std::string SweepLine(const SweepPoint& p);
/// The best recipe of every point as YAML documents (one per point that has a layout), after a
/// comment listing every point.
std::string SweepYaml(const SweepReport& sweep);
/// Every point with its plan result (ResultJson, best layout only) or why it has none; with a
/// non-empty `error` (some point has no layout: exit 1) also the error object of ErrorJson.
std::string SweepJson(const SweepReport& sweep, const std::string& error = "");

}  // namespace meshplan::render
