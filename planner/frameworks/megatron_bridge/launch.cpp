// Megatron-Bridge's launch: run_recipe.py with the recipe function and the layout's dotted
// overrides. Sources: megatron.md 1.8 (run_recipe.py with dotted overrides); Megatron-Bridge main
// (commit 067f987d, 2026-08-22) scripts/training/run_recipe.py, recipe_runner.py.
#include "meshplan/framework.hpp"

#include <sstream>

#include "launch/shell.hpp"
#include "recipe/format.hpp"
#include "meshplan/recipe.hpp"

namespace meshplan::megatron_bridge {

namespace {

using launch::Quote;
using launch::ShellWord;

// The recipe function passed to Megatron-Bridge's run_recipe.py --recipe for a model preset
// ("" when Megatron-Bridge has none: the scripts then require $MB_RECIPE). Checked against
// Megatron-Bridge main (commit 067f987d, 2026-08-22): scripts/training/recipe_runner.py
// find_library_recipe looks the name up in megatron.bridge.recipes, which exports each family's
// `<family><size>_pretrain_config` as an alias of its H100 recipe (e.g. for Llama-3.1-8B
// src/megatron/bridge/recipes/llama/llama3.py: llama31_8b_pretrain_config =
// llama31_8b_pretrain_2gpu_h100_bf16_config in recipes/llama/h100/llama3.py), and
// recipe_metadata.py infer_recipe_mode reads "pretrain" from the name. The aliases are used
// rather than the H100 names because some H100 names (deepseek_v3_pretrain_1024gpu_h100_bf16_config,
// gpt_oss_120b_pretrain_64gpu_h100_bf16_config) are also benchmark recipes, which run_recipe.py
// prefers (BENCHMARK_RECIPE_PRECEDENCE_COLLISIONS). There is no Mixtral recipe.
std::string MbRecipeName(const std::string& model) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"llama3-8b", "llama3_8b_pretrain_config"},          {"llama3-70b", "llama3_70b_pretrain_config"},
      {"llama3.1-8b", "llama31_8b_pretrain_config"},       {"llama3.1-70b", "llama31_70b_pretrain_config"},
      {"llama3.1-405b", "llama31_405b_pretrain_config"},   {"qwen3-8b", "qwen3_8b_pretrain_config"},
      {"qwen3-30b-a3b", "qwen3_30b_a3b_pretrain_config"},  {"qwen3-235b-a22b", "qwen3_235b_a22b_pretrain_config"},
      {"deepseek-v3", "deepseek_v3_pretrain_config"},      {"kimi-k2", "kimi_k2_pretrain_config"},
      {"gpt-oss-20b", "gpt_oss_20b_pretrain_config"},      {"gpt-oss-120b", "gpt_oss_120b_pretrain_config"},
  };
  for (const auto& [preset, name] : kNames) {
    if (model == preset) return name;
  }
  return "";
}

// The default recipe functions above that leave ConfigContainer.comm_overlap None
// (recipes/common.py _pretrain_common sets comm_overlap=None; these H100 recipes never create a
// CommOverlapConfig: recipes/llama/h100/llama3.py llama3_8b / llama31_8b_pretrain_2gpu,
// recipes/qwen/h100/qwen3.py qwen3_8b_pretrain_16gpu and _4gpu, qwen3_moe.py
// qwen3_235b_a22b_pretrain_256gpu, gpt_oss.py gpt_oss_20b / 120b; Megatron-Bridge main
// 067f987d). run_recipe.py applies the overrides with Hydra on a struct config
// (utils/omegaconf_utils.py parse_hydra_overrides), where `comm_overlap.tp_comm_overlap=...`
// under a None node fails. For them the overrides are written `++comm_overlap.<key>=...` (force
// add: the None node becomes a map) with `++comm_overlap._target_=...CommOverlapConfig`, which
// apply_overrides instantiates into the config object.
bool MbRecipeLeavesCommOverlapNone(const std::string& model) {
  static const char* const kNone[] = {"llama3-8b", "llama3.1-8b", "qwen3-8b", "qwen3-235b-a22b", "gpt-oss-20b",
                                      "gpt-oss-120b"};
  for (const char* m : kNone) {
    if (model == m) return true;
  }
  return false;
}

constexpr const char* kCommOverlapTarget = "megatron.bridge.training.comm_overlap.CommOverlapConfig";

// Before the command of a Megatron-Bridge launch whose default recipe leaves comm_overlap None
// (MbRecipeLeavesCommOverlapNone): the comm_overlap overrides as a bash array, force-added with
// the class to build when $MB_RECIPE is not set, plain when it is. "" otherwise.
}  // namespace

std::string LaunchPrelude(const Candidate& c, const PlanRequest& req) {
  const std::string mb_recipe = MbRecipeName(req.model.name);
  if (mb_recipe.empty() || !MbRecipeLeavesCommOverlapNone(req.model.name)) return "";
  std::string forced = Quote(std::string("++comm_overlap._target_=") + kCommOverlapTarget), plain;
  for (const auto& [key, value] : MegatronOverrides(c.layout, req)) {
    if (key.rfind("comm_overlap.", 0) != 0) continue;
    forced += " " + Quote("++" + key + "=" + value);
    plain += (plain.empty() ? "" : " ") + Quote(key + "=" + value);
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
  const std::string mb_recipe = MbRecipeName(req.model.name);
  s << "\"${MEGATRON_BRIDGE_DIR:-.}/scripts/training/run_recipe.py\" --recipe \"${MB_RECIPE:"
    << (mb_recipe.empty() ? "?set MB_RECIPE to a Megatron-Bridge recipe function: it has none for " + ShellWord(req.model.name)
                          : "-" + mb_recipe)
    << "}\"";
  // With the default recipe and a None comm_overlap the comm_overlap keys come from the
  // COMM_OVERLAP array that LaunchPrelude defines (force-added, or plain with $MB_RECIPE).
  const bool force_comm = !mb_recipe.empty() && MbRecipeLeavesCommOverlapNone(req.model.name);
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
         "# and MB_RECIPE to another recipe function (required where Megatron-Bridge has no recipe for the model).\n";
}

std::string LaunchRecipe(const Candidate& c, const PlanRequest& req, int rank, bool /*full_recipe*/,
                         const std::string& /*hf_model*/) {
  return MegatronRecipeYaml(c, req, rank);
}

}  // namespace meshplan::megatron_bridge
