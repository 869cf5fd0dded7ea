#pragma once
// A per-thread memo of a pure function's values for its last N distinct inputs (private to
// planner/cost/): a search asks the same question at every micro-batch and feature variant of a
// mesh. Keys are compared byte for byte, so a hit returns exactly what the computation would.

#include <algorithm>
#include <cstddef>
#include <cstdint>
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

/// The values of up to Slots keys (a power of two), one per slot of a hash of the key's bytes:
/// a key replaces the one in its slot. For keys that recur a few dozen lookups apart (a mesh's
/// data-parallel flavours, each walking the same feature sets and micro-batches), where
/// LastValues' linear scan would be long. Key: a trivially copyable type of 64-bit words
/// without padding (std::array of int64_t or double). Declare it thread_local at the call site.
template <typename Key, typename Value, size_t Slots>
struct HashedValues {
  static_assert((Slots & (Slots - 1)) == 0, "Slots: a power of two");
  static_assert(std::is_trivially_copyable_v<Key>, "keys are compared byte for byte");
  Key keys[Slots] = {};
  Value values[Slots] = {};
  bool used[Slots] = {};
  static_assert(sizeof(Key) % sizeof(uint64_t) == 0, "keys of 64-bit words");
  /// The slot of `key`: its 64-bit words (their bytes) folded by rotate-and-xor, then mixed by
  /// one multiplication. Any function of the key would do: Find compares the whole key.
  static size_t SlotOf(const Key& key) {
    uint64_t h = 0;
    for (size_t i = 0; i < sizeof(Key) / sizeof(uint64_t); ++i) {
      uint64_t w;
      std::memcpy(&w, reinterpret_cast<const char*>(&key) + i * sizeof(uint64_t), sizeof w);
      h = ((h << 7) | (h >> 57)) ^ w;
    }
    h *= 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 40) & (Slots - 1);
  }
  /// The stored value of `key`, or nullptr.
  const Value* Find(const Key& key, size_t slot) const {
    return used[slot] && std::memcmp(&keys[slot], &key, sizeof(Key)) == 0 ? &values[slot] : nullptr;
  }
  /// Stores `value` for `key` in `slot` (SlotOf(key)) and returns it.
  const Value& Store(const Key& key, size_t slot, const Value& value) {
    keys[slot] = key;
    values[slot] = value;
    used[slot] = true;
    return values[slot];
  }
};

}  // namespace meshplan::cost
