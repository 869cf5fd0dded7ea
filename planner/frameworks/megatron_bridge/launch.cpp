// Megatron-Bridge's launch: run_recipe.py with the recipe function and the layout's dotted
// overrides. Sources: megatron.md 1.8 (run_recipe.py with dotted overrides); Megatron-Bridge main
// (commit 067f987d, 2026-08-22) scripts/training/run_recipe.py, recipe_runner.py.
#include "meshplan/framework.hpp"

#include <sstream>

#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "launch/shell.hpp"
#include "recipe/format.hpp"
#include "meshplan/recipe.hpp"

namespace meshplan::megatron_bridge {

using launch::Quote;
using launch::ShellWord;

// Before the command of a Megatron-Bridge launch whose default recipe leaves comm_overlap None
// (ForceAddsCommOverlap): the comm_overlap overrides as a bash array, force-added with the class
// to build when $MB_RECIPE is not set, plain when it is. "" otherwise.
std::string LaunchPrelude(const Candidate& c, const PlanRequest& req) {
  if (!ForceAddsCommOverlap(req)) return "";
  const std::string mb_recipe = MbRecipeName(req);
  const auto overrides = MegatronOverrides(c.layout, req);
  std::string forced, plain;
  for (const std::string& t : ForcedCommOverlapOverrides(overrides)) forced += (forced.empty() ? "" : " ") + Quote(t);
  for (const auto& [key, value] : overrides) {
    if (key.rfind("comm_overlap.", 0) == 0) plain += (plain.empty() ? "" : " ") + Quote(key + "=" + value);
  }
  std::ostringstream s;
  s << "# Megatron-Bridge's " << mb_recipe << " leaves comm_overlap None, where a Hydra override of\n"
    << "# comm_overlap.<key> fails: its keys are force-added (++) with the class to build. With your own\n"
    << "# MB_RECIPE (one that creates a CommOverlapConfig) they are plain overrides.\n"
    << "if [ -z \"${MB_RECIPE:-}\" ]; then\n  COMM_OVERLAP=(" << forced << ")\nelse\n  COMM_OVERLAP=(" << plain
    << ")\nfi\n";
  return s.str();
}

std::string LaunchCommand(const Candidate& c, const PlanRequest& req, const std::string& /*recipe_word*/) {
  std::ostringstream s;
  const std::string mb_recipe = MbRecipeName(req);
  s << "\"${MEGATRON_BRIDGE_DIR:-.}/scripts/training/run_recipe.py\" --recipe \"${MB_RECIPE:"
    << (mb_recipe.empty() ? "?set MB_RECIPE to a Megatron-Bridge recipe function: it has none for " + ShellWord(req.model.name)
                          : "-" + mb_recipe)
    << "}\"";
  // With the default recipe and a None comm_overlap the comm_overlap keys come from the
  // COMM_OVERLAP array that LaunchPrelude defines (force-added, or plain with $MB_RECIPE).
  const bool force_comm = ForceAddsCommOverlap(req);
  for (const auto& [key, value] : MegatronOverrides(c.layout, req)) {
    if (force_comm && key.rfind("comm_overlap.", 0) == 0) continue;
    s << " \\\n  " << Quote(key + "=" + value);
  }
  if (force_comm) s << " \\\n  \"${COMM_OVERLAP[@]}\"";
  return s.str();
}

std::string LaunchComment(const std::string& recipe_file) {
  return "# Recipe overrides (also in " + recipe::OneLine(recipe_file) +
         " beside this script); set MEGATRON_BRIDGE_DIR to a Megatron-Bridge checkout\n"
         "# and MB_RECIPE to another recipe function (required where Megatron-Bridge has no recipe for the model).\n"
         "# The overrides' key paths and settings are those of the recipe function planned (the recipe file's\n"
         "# header): for another, plan again with --mb-recipe NAME.\n";
}

std::string LaunchRecipe(const Candidate& c, const PlanRequest& req, int rank, bool /*full_recipe*/,
                         const std::string& /*hf_model*/) {
  return MegatronRecipeYaml(c, req, rank);
}

}  // namespace meshplan::megatron_bridge
