#pragma once
// A per-thread memo of a pure function's values for its last N distinct inputs (private to
// planner/cost/): a search asks the same question at every micro-batch and feature variant of a
// mesh. Keys are compared byte for byte, so a hit returns exactly what the computation would.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace meshplan::cost {

/// The values of the last N distinct keys, oldest replaced first. Key: a trivially copyable type
/// without padding (std::array of doubles or integers). Declare it thread_local at the call site.
template <typename Key, typename Value, size_t N>
struct LastValues {
  static_assert(std::is_trivially_copyable_v<Key>, "keys are compared byte for byte");
  Key keys[N] = {};
  Value values[N] = {};
  size_t filled = 0, next = 0;
  /// The stored value of `key`, or nullptr.
  const Value* Find(const Key& key) const {
    for (size_t i = 0; i < filled; ++i) {
      if (std::memcmp(&keys[i], &key, sizeof(Key)) == 0) return &values[i];
    }
    return nullptr;
  }
  /// Stores `value` for `key` (replacing the oldest entry when full) and returns it.
  const Value& Store(const Key& key, const Value& value) {
    const size_t at = next;
    keys[at] = key;
    values[at] = value;
    next = (next + 1) % N;
    filled = std::min(filled + 1, N);
    return values[at];
  }
};

}  // namespace meshplan::cost
