// Reading an AutoModel recipe (planner/recipe/read_automodel.cpp): integer fields as AutoModel's
// config loader reads them.
#include <doctest/doctest.h>

#include <string>

#include "fixtures/input_error.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

std::string Recipe(const std::string& tp, const std::string& local_batch) {
  return "step_scheduler:\n  global_batch_size: 64\n  local_batch_size: " + local_batch +
         "\ndistributed:\n  strategy: fsdp2\n  tp_size: " + tp + "\n";
}

}  // namespace

TEST_CASE("read_automodel: integer fields refuse floats and read quoted integers as AutoModel does") {
  // components/config/loader.py translate_value turns the string "2" into the integer 2.
  for (const std::string tp : {"2", "\"2\"", "'2'"}) {
    CAPTURE(tp);
    const ParsedRecipe r = ParseAutoModelRecipe(Recipe(tp, "\"4\""), "a.yaml", 16);
    CHECK(r.layout.tp == 2);
    CHECK(r.layout.dp == 8);
    CHECK(r.layout.local_batch_size == 4);
    CHECK(r.global_batch == 64);
  }
  // A float stays a float (plain, or quoted: literal_eval("2.0") is 2.0), which the device mesh
  // cannot take: refused at the key.
  for (const std::string tp : {"2.0", "\"2.0\"", "2e0"}) {
    CAPTURE(tp);
    const InputError e = test::ErrorOf([&] { (void)ParseAutoModelRecipe(Recipe(tp, "4"), "a.yaml", 16); });
    CHECK(e.loc().file == "a.yaml");
    CHECK(e.loc().line == 6);
    CHECK(e.loc().column == 3);
    CHECK(e.field() == "distributed.tp_size");
    CHECK(e.message() == "expected an integer, found '" + std::string(tp[0] == '"' ? "2.0" : tp) + "' (a float; write 2)");
  }
  const InputError e = test::ErrorOf([&] { (void)ParseAutoModelRecipe(Recipe("2", "4.5"), "a.yaml", 16); });
  CHECK(e.field() == "step_scheduler.local_batch_size");
  CHECK(e.loc().line == 3);
  CHECK(e.message() == "expected an integer, found '4.5'");
}
