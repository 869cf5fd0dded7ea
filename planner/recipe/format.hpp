#pragma once
// Number formatting and per-candidate JSON shared by the output writers.
#include <nlohmann/json.hpp>

#include <string>

#include "meshplan/search.hpp"

namespace meshplan::recipe {

/// bytes -> GiB (2^30 bytes).
inline double GiB(double bytes) { return bytes / 1073741824.0; }

/// `v` with `digits` decimals.
std::string Fixed(double v, int digits);

/// One candidate: layout fields, memory (GiB) and time (s) breakdowns, throughput.
nlohmann::json CandidateJson(const Candidate& c, const PlanRequest& req, int rank);

}  // namespace meshplan::recipe
