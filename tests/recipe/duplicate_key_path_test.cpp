// A duplicate key is named by its full path from the document (distributed.tp_size), not by
// the bare key, which can stand in several sections (tp_size under distributed: and, say,
// under a model's own parallel section); sequence items are named by their index.
#include <doctest/doctest.h>

#include <string>

#include "data/yaml_util.hpp"
#include "fixtures/input_error.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

// The InputError ParseMap throws for `text` (FAILs when there is none).
InputError ParseError(const std::string& text) {
  return test::ErrorOf([&] { (void)yamlutil::ParseMap(text, "t.yaml"); });
}

}  // namespace

TEST_CASE("duplicate keys are named by their full path") {
  // Top level: the key alone, as before.
  InputError e = ParseError("a: 1\nb: 2\na: 3\n");
  CHECK(e.field() == "a");
  CHECK(e.loc().line == 3);
  // Nested maps: every section on the way.
  e = ParseError("distributed:\n  tp_size: 2\n  pipeline:\n    pp_size: 2\n    pp_size: 4\n");
  CHECK(e.field() == "distributed.pipeline.pp_size");
  CHECK(e.loc().line == 5);
  CHECK(e.loc().column == 5);
  CHECK(std::string(e.what()) == "t.yaml:5:5: error: distributed.pipeline.pp_size: duplicate key");
  // Sequence items by index; a flow map as well as a block one.
  e = ParseError("runs:\n  - {name: a, gpus: 8}\n  - {name: b, gpus: 8, name: c}\n");
  CHECK(e.field() == "runs[1].name");
  CHECK(e.loc().line == 3);
  e = ParseError("x:\n  - [1, 2]\n  - - {k: 1}\n    - {k: 1, k: 2}\n");
  CHECK(e.field() == "x[1][1].k");
  // The same key in sibling sections is not a duplicate.
  CHECK_NOTHROW(yamlutil::ParseMap("a: {k: 1}\nb: {k: 1}\nc: [{k: 1}, {k: 2}]\n", "t.yaml"));
}

TEST_CASE("a duplicate in an AutoModel recipe names its section") {
  const std::string recipe =
      "step_scheduler:\n  global_batch_size: 64\n  local_batch_size: 1\n"
      "distributed:\n  strategy: fsdp2\n  tp_size: 2\n  cp_size: 1\n  tp_size: 4\n";
  try {
    (void)ParseAutoModelRecipe(recipe, "r.yaml", 8);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.field() == "distributed.tp_size");
    CHECK(e.loc().line == 8);
    CHECK(e.message() == "duplicate key");
  }
}
