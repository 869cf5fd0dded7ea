#pragma once
// Small helpers shared by the rule files.

#include <sstream>
#include <string>
#include <vector>

#include "meshplan/rules.hpp"

namespace meshplan::rules {

/// Concatenates its arguments with operator<< (messages are built only on failure).
template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Rule::needs_dp = false: the rule reads no dp_size (AllFailures evaluates it when dp is unknown).
inline constexpr bool kNoDp = false;

/// Rules of one topic, concatenated by registry.cpp in check order.
std::span<const Rule> MeshRules();
std::span<const Rule> ParallelRules();
std::span<const Rule> PipelineRules();
std::span<const Rule> BatchRules();

}  // namespace meshplan::rules
