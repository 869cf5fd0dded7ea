#pragma once
/// \file search.hpp
/// Exhaustive search of the AutoModel layout space: enumerate, check every rule, score
/// the valid layouts with the cost model, rank those that fit.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "meshplan/cost.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"
#include "meshplan/rules.hpp"

namespace meshplan {

/// What to search.
struct PlanRequest {
  ModelSpec model;
  SystemSpec system;
  TrainSetup setup;
  AutoModelVersion version = AutoModelVersion::kV05;
  std::vector<Strategy> strategies = {Strategy::kFsdp2, Strategy::kMegatronFsdp, Strategy::kDdp};
  int top_n = 5;
  int64_t max_micro_batch = 16;  ///< largest micro-batch (sequences per forward) enumerated
  /// Stop the walk at this time (checked every few hundred layouts) and return the best
  /// layouts found so far with PlanResult::stopped set. Default: no deadline.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// Stop after this many layouts (or subtrees) have been tested; bounds time and, for
  /// EnumerateLayouts, memory. 0 = no limit.
  int64_t max_layouts = 0;
};

/// A scored layout.
struct Candidate {
  Layout layout;
  Cost cost;
};

/// Outcome of a search.
struct PlanResult {
  std::vector<Candidate> top;   ///< best fitting layouts, fastest first (at most top_n)
  int64_t enumerated = 0;       ///< layouts generated
  int64_t valid = 0;            ///< passed every rule
  int64_t fitting = 0;          ///< valid and within memory capacity
  /// Rejections per rule name (first failing rule), most frequent first.
  std::vector<std::pair<std::string, int64_t>> rejected_by_rule;
  /// Among valid layouts, the one needing least memory (set when any layout was valid).
  std::optional<Candidate> least_memory;
  /// Why the walk stopped early ("" = it covered the whole space): "deadline" or
  /// "max_layouts". The counts and results above are those of the part searched.
  std::string stopped;
};

/// Every layout the planner considers for `req` (all strategies, sizes dividing the GPU
/// count, micro-batch and local batch sizes dividing the per-rank batch, schedules,
/// VPP degrees, SP, recompute). Not yet filtered by the rules.
std::vector<Layout> EnumerateLayouts(const PlanRequest& req);

/// Runs the search. Never throws for a request whose model and system loaded.
PlanResult Plan(const PlanRequest& req);

/// Ranking order: faster step first, then less memory, then the simpler layout.
bool RanksBefore(const Candidate& a, const Candidate& b);

}  // namespace meshplan
