// meshplan_read_recipe FILE WORLD_SIZE: reads an AutoModel recipe with ParseAutoModelRecipe
// (the reader `meshplan check` and `meshplan explain` use) and reports like the CLI does:
// the layout and exit 0, or the InputError and exit 2. Drives tests/bad_inputs/cases.txt
// until those commands take recipe files.
#include <cstdlib>
#include <iostream>

#include "meshplan/data.hpp"
#include "meshplan/recipe.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: meshplan_read_recipe FILE WORLD_SIZE\n";
    return 2;
  }
  try {
    const std::string text = meshplan::data::ReadFileOrThrow(argv[1]);
    const meshplan::ParsedRecipe r = meshplan::ParseAutoModelRecipe(text, argv[1], std::atoll(argv[2]));
    std::cout << meshplan::Describe(r.layout) << " global_batch " << r.global_batch << "\n";
  } catch (const meshplan::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  return 0;
}
