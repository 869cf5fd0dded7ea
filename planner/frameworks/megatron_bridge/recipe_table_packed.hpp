#pragma once
// recipes/megatron-bridge-recipe-functions.json as compiled into the binary: one minified JSON
// text per recipe function and per config class, written at build time by
// cmake/pack_recipe_functions.cpp, so that a command parses only what it reads. Private to
// planner/frameworks/megatron_bridge/ (recipe_functions.cpp is its one reader).

#include <span>
#include <string_view>

namespace meshplan::megatron_bridge::packed {

/// One top-level member of the table's "recipes" or "classes" object: its key and its value as
/// JSON text.
struct Entry {
  const char* name;
  const char* json;
};

/// The table's recipe functions, sorted by name (byte order).
std::span<const Entry> Functions();
/// The table's config classes (qualified name -> {field: type}), sorted by name.
std::span<const Entry> Classes();
/// The table's other keys ("vendored", "layout_builders", "errors", ...) as one JSON object.
std::string_view Head();

}  // namespace meshplan::megatron_bridge::packed
