// The recipe-function table as compiled (cmake/pack_recipe_functions.cpp splits it by entry,
// recipe_functions.cpp parses each entry on its first lookup) holds exactly what
// recipes/megatron-bridge-recipe-functions.json holds.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "frameworks/megatron_bridge/recipe_functions.hpp"

using namespace meshplan;

namespace {

nlohmann::json SourceTable() {
  std::ifstream in(std::string(MESHPLAN_SOURCE_DIR) + "/recipes/megatron-bridge-recipe-functions.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("recipe table: every recipe function and config class of the JSON file is found with its own values") {
  const nlohmann::json table = SourceTable();
  const auto names = megatron_bridge::RecipeFunctionNames();
  REQUIRE(names.size() == table.at("recipes").size());
  REQUIRE(names.size() > 300);
  size_t i = 0;
  for (const auto& [name, r] : table.at("recipes").items()) {
    CHECK(names[i++] == name);
    const auto* fn = megatron_bridge::FindRecipeFunction(name);
    REQUIRE(fn != nullptr);
    CHECK(fn->name == name);
    CHECK(fn->transformer_path == r.at("transformer_path").get<std::string>());
    CHECK(fn->values == r.at("values"));
    CHECK(fn->sections.size() == r.at("sections").size());
    // A second lookup returns the entry parsed the first time.
    CHECK(megatron_bridge::FindRecipeFunction(name) == fn);
  }
  for (const auto& [qualname, fields] : table.at("classes").items()) {
    const auto* c = megatron_bridge::ConfigClassFields(qualname);
    REQUIRE(c != nullptr);
    CHECK(c->size() == fields.size());
  }
  std::vector<std::string> vendored;
  for (const auto& line : table.at("vendored")) vendored.push_back(line.get<std::string>());
  CHECK(megatron_bridge::RecipeFunctionSnapshot() == vendored);
  for (const auto& [name, builder] : table.at("layout_builders").items()) {
    CHECK(megatron_bridge::LayoutBuilderOf(name) == builder.get<std::string>());
  }
}

TEST_CASE("recipe table: names it does not hold are not found") {
  CHECK(megatron_bridge::FindRecipeFunction("no_such_config") == nullptr);
  CHECK(megatron_bridge::FindRecipeFunction("") == nullptr);
  // A prefix of a real name and a name past the last one (the binary search's two edges).
  CHECK(megatron_bridge::FindRecipeFunction("llama3_70b") == nullptr);
  CHECK(megatron_bridge::FindRecipeFunction("zzzz") == nullptr);
  CHECK(megatron_bridge::ConfigClassFields("megatron.core.NoSuchConfig") == nullptr);
  CHECK(megatron_bridge::FindRecipeFunction("llama31_70b_pretrain_config") != nullptr);
}
