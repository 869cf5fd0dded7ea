#pragma once
// "field: old -> new" lines of the nearest layouts (search/nearest.cpp and each framework's
// nearest_changes), or only the changed fields (LayoutDiff's modes). Private to planner/.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "meshplan/search.hpp"

namespace meshplan::search {

/// Decimal text of `v`.
inline std::string N(int64_t v) { return std::to_string(v); }

/// A count written "null" when unset (a layout field of 0 or 1 meaning "not set").
struct NullOr {
  bool set;
  int64_t value;
};

inline bool Same(int64_t a, int64_t b) { return a == b; }
inline bool Same(const char* a, const char* b) { return std::strcmp(a, b) == 0; }
inline bool Same(const std::string& a, const std::string& b) { return a == b; }
inline bool Same(NullOr a, NullOr b) { return a.set == b.set && (!a.set || a.value == b.value); }

inline std::string Text(int64_t v) { return N(v); }
inline std::string Text(const char* s) { return s; }
inline const std::string& Text(const std::string& s) { return s; }
inline std::string Text(NullOr v) { return v.set ? N(v.value) : "null"; }

/// Records `field` in `out` when a != b, with the line "field: a -> b" in text mode.
template <typename T>
inline void Diff(LayoutDiff& out, const char* field, const T& a, const T& b) {
  if (Same(a, b)) return;
  out.Add(field, [&] { return std::string(field) + ": " + Text(a) + " -> " + Text(b); });
}
inline void Diff(LayoutDiff& out, const char* field, const char* a, const char* b) {
  if (Same(a, b)) return;
  out.Add(field, [&] { return std::string(field) + ": " + a + " -> " + b; });
}

}  // namespace meshplan::search
