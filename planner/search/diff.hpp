#pragma once
// "field: old -> new" lines of the nearest layouts (search/nearest.cpp and each framework's
// nearest_changes). Private to planner/.
#include <cstdint>
#include <string>
#include <vector>

namespace meshplan::search {

/// Appends "field: a -> b" to `out` when a != b.
template <typename T>
inline void Diff(std::vector<std::string>& out, const char* field, const T& a, const T& b) {
  if (a != b) out.push_back(std::string(field) + ": " + a + " -> " + b);
}

/// Decimal text of `v`.
inline std::string N(int64_t v) { return std::to_string(v); }

}  // namespace meshplan::search
