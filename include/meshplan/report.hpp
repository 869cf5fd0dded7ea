#pragma once
/// \file report.hpp
/// `meshplan plan --report FILE`: one self-contained HTML page (inline CSS and SVG, no
/// script, nothing fetched) with the ranked table, a stacked memory bar and a step-time bar
/// per recommended layout, and a scatter of the fitting layouts (memory against tokens/s).

#include <vector>

#include "meshplan/search.hpp"

namespace meshplan {

/// How many of the fastest fitting layouts the report's scatter shows: `plan --report` runs
/// its one search with top_n = max(--top, kReportLayouts).
inline constexpr int kReportLayouts = 1000;

/// The report page. `result.top` are the recommended layouts (marked in the scatter);
/// `scatter` are the fitting layouts to plot (usually a superset of result.top, fastest
/// first; may be empty). Memory bars: weights, gradients, optimizer, activations (with
/// logits), buffers (buffers, workspace, CUDA context and NCCL) and the headroom left below
/// the usable capacity (GiB; the bar's full length is the GPU's memory). Time bars: compute,
/// exposed TP / CP / DP / EP / PP communication, pipeline bubble, optimizer (seconds).
/// Throws nothing.
std::string ReportHtml(const PlanResult& result, const std::vector<Candidate>& scatter, const PlanRequest& req);

}  // namespace meshplan
