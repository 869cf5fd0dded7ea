// Launch files: complete AutoModel recipes, torchrun / Megatron-Bridge commands, Slurm scripts.
// Sources: automodel.md 1.4 (launching, step_scheduler, dist_env), 1.5 (example recipes) and
// AutoModel's config schema (recipe, seed, model, checkpoint, loss_fn, dataset, dataloader,
// optimizer, lr_scheduler, clip_grad_norm sections); megatron.md 1.8 (run_recipe.py with dotted
// overrides), 2.11 (CUDA_DEVICE_MAX_CONNECTIONS must be set before CUDA starts, MB PR #925).
#include "meshplan/framework.hpp"
#include "meshplan/launch.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "meshplan/diag.hpp"
#include "meshplan/recipe.hpp"
#include "launch/shell.hpp"
#include "recipe/format.hpp"

namespace meshplan {

namespace {

using launch::ShellWord;
using recipe::OneLine;

const SourceLoc kCmdLine{"<command line>", 0, 0};

// The launcher command (without the environment), one argument per continued line.
std::string Command(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo,
                    const std::string& recipe_path, bool slurm) {
  std::ostringstream s;
  s << "torchrun --nnodes " << (slurm ? "\"$SLURM_NNODES\"" : std::to_string(topo.nodes)) << " --nproc-per-node "
    << topo.gpus_per_node;
  if (slurm) {
    s << " \\\n  --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" --rdzv-id \"$SLURM_JOB_ID\"";
  } else if (topo.nodes > 1) {
    s << " \\\n  --node-rank \"${NODE_RANK:?set NODE_RANK (0.." << topo.nodes - 1
      << ") on each node}\" --master-addr \"${MASTER_ADDR:?set MASTER_ADDR to node 0}\" --master-port \"${MASTER_PORT:-29500}\"";
  }
  s << " \\\n  " << FrameworkOf(req.framework).launch_command(c, req, recipe_path) << "\n";
  return s.str();
}

std::string Header(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo, int rank) {
  std::ostringstream s;
  s << "# meshplan " << FrameworkOf(req.framework).title << " launch of recipe " << rank << ": "
    << OneLine(req.model.name) << " on " << topo.nodes << " node(s) x " << topo.gpus_per_node << " GPUs of "
    << OneLine(req.system.name) << "\n# layout: " << Describe(c.layout) << "\n# predicted: " << c.cost.step_seconds
    << " s/step, " << recipe::Fixed(c.cost.tokens_per_s_per_gpu, 0) << " tokens/s/GPU\n";  // rounded as the table
  if (const std::string note = LaunchTopologyNote(req, topo); !note.empty()) s << "# " << note << "\n";
  return s.str();
}

// The shell word every command uses for the recipe: $recipe, which FindRecipeBesideScript or
// FindRecipeUnderSlurm sets.
constexpr const char* kRecipeVar = "\"$recipe\"";

// Bash lines that set $recipe to `recipe_file` in the folder $here, and stop with a message
// naming the path and `where` to run from when it is not there.
std::string RecipeIn(const std::string& recipe_file, const std::string& where) {
  std::ostringstream s;
  s << "recipe=\"$here\"/" << launch::Quote(recipe_file) << "\n";
  s << "if [ ! -f \"$recipe\" ]; then\n  echo \"meshplan: recipe $recipe not found (" << where
    << ")\" >&2\n  exit 1\nfi\n";
  return s.str();
}

// The launch script finds its recipe beside itself, wherever the folder was moved.
std::string FindRecipeBesideScript(const std::string& recipe_file) {
  return "# The recipe is the file beside this script: the folder can be moved or copied whole.\n"
         "here=$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\n" +
         RecipeIn(recipe_file, "keep this script beside its recipe");
}

// Slurm runs a copy of the batch script from its spool directory (slurmd's SlurmdSpoolDir), so
// BASH_SOURCE does not lead to the recipe: the folder is that of the submitted script, which
// `scontrol show job` prints as Command=, else the folder sbatch was run in ($SLURM_SUBMIT_DIR).
std::string FindRecipeUnderSlurm(const std::string& recipe_file) {
  return "# Slurm runs a copy of this script from its spool directory: the recipe is looked up in the\n"
         "# folder of the submitted script (scontrol show job's Command=), else in the submission\n"
         "# directory ($SLURM_SUBMIT_DIR). That folder must be the plan folder, the one holding " +
         OneLine(recipe_file) +
         ".\n"
         "here=\nscript=$(scontrol show job \"${SLURM_JOB_ID:-}\" 2>/dev/null | sed -n 's/^[[:space:]]*Command=//p' | head -n 1) "
         "|| true\n"
         "if [ -n \"$script\" ] && [ -f \"$script\" ]; then here=$(cd \"$(dirname \"$script\")\" && pwd); fi\n"
         "here=${here:-${SLURM_SUBMIT_DIR:-$PWD}}\n" +
         RecipeIn(recipe_file, "submit this script from the plan folder: sbatch <plan folder>/" +
                                   launch::ShellWord(recipe_file.substr(0, recipe_file.rfind('.'))) + ".sbatch");
}

std::string Exports(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo) {
  std::ostringstream s;
  for (const auto& [name, value] : LaunchEnv(c, req)) s << "export " << name << "=\"${" << name << ":-" << value << "}\"\n";
  if (topo.nodes > 1) {
    s << "# Across nodes NCCL picks the InfiniBand / RoCE NICs itself; pin them if it does not:\n"
      << "# export NCCL_SOCKET_IFNAME=<bootstrap interface> NCCL_IB_HCA=<compute HCAs>\n";
  }
  return s.str();
}

}  // namespace

LaunchTopology ResolveLaunchTopology(const PlanRequest& req, int64_t nodes, int64_t gpus_per_node) {
  const int64_t world = req.setup.num_gpus;
  const int64_t sys_gpn = req.system.gpus_per_node;
  if (nodes < 0) throw InputError(kCmdLine, "--nodes", "expected a positive integer, found " + std::to_string(nodes));
  if (gpus_per_node < 0) {
    throw InputError(kCmdLine, "--gpus-per-node", "expected a positive integer, found " + std::to_string(gpus_per_node));
  }
  LaunchTopology t;
  const bool derived = gpus_per_node == 0;
  if (derived) {
    gpus_per_node = nodes > 0 && world % nodes == 0 ? world / nodes : std::min<int64_t>(sys_gpn, world);
  }
  if (derived && gpus_per_node > sys_gpn) {
    // Derived from --nodes: name the flag that was given.
    throw InputError(kCmdLine, "--nodes",
                     "expected at least " + std::to_string((world + sys_gpn - 1) / sys_gpn) + " nodes for " +
                         std::to_string(world) + " GPUs at the " + std::to_string(sys_gpn) + " GPUs per node of " +
                         req.system.name + ", found " + std::to_string(nodes) + " (" + std::to_string(gpus_per_node) +
                         " GPUs per node)");
  }
  if (gpus_per_node > sys_gpn) {
    throw InputError(kCmdLine, "--gpus-per-node",
                     "expected at most the " + std::to_string(sys_gpn) + " GPUs per node of " + req.system.name +
                         ", found " + std::to_string(gpus_per_node));
  }
  if (nodes == 0) nodes = (world + gpus_per_node - 1) / gpus_per_node;
  if (nodes * gpus_per_node != world) {
    throw InputError(kCmdLine, "--nodes",
                     "expected --nodes x --gpus-per-node = --gpus (" + std::to_string(world) + "), found " +
                         std::to_string(nodes) + " x " + std::to_string(gpus_per_node) + " = " +
                         std::to_string(nodes * gpus_per_node));
  }
  t.nodes = nodes;
  t.gpus_per_node = gpus_per_node;
  return t;
}

std::string LaunchTopologyNote(const PlanRequest& req, const LaunchTopology& topo) {
  const int64_t planned = std::min<int64_t>(req.system.gpus_per_node, req.setup.num_gpus);
  if (topo.gpus_per_node == planned) return "";
  return "the prediction assumes " + OneLine(req.system.name) + "'s own nodes of " +
         std::to_string(req.system.gpus_per_node) + " GPUs (" + std::to_string(req.setup.num_gpus / planned) +
         " node(s) x " + std::to_string(planned) + "), not these " + std::to_string(topo.nodes) + " x " +
         std::to_string(topo.gpus_per_node) + ": traffic that crosses the extra node boundaries is not priced";
}

std::vector<std::pair<std::string, std::string>> LaunchEnv(const Candidate& c, const PlanRequest& req) {
  std::vector<std::pair<std::string, std::string>> env = FrameworkOf(req.framework).launch_env(c.layout);
  env.emplace_back("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");
  env.emplace_back("NCCL_DEBUG", "WARN");
  return env;
}

std::string HuggingFaceId(const std::string& preset) {
  static const std::vector<std::pair<std::string, std::string>> kIds = {
      {"llama3-8b", "meta-llama/Meta-Llama-3-8B"},
      {"llama3-70b", "meta-llama/Meta-Llama-3-70B"},
      {"llama3.1-8b", "meta-llama/Llama-3.1-8B"},
      {"llama3.1-70b", "meta-llama/Llama-3.1-70B"},
      {"llama3.1-405b", "meta-llama/Llama-3.1-405B"},
      {"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"},
      {"mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1"},
      {"qwen3-8b", "Qwen/Qwen3-8B"},
      {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"},
      {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"},
      {"deepseek-v3", "deepseek-ai/DeepSeek-V3"},
      {"kimi-k2", "moonshotai/Kimi-K2-Base"},
      {"gpt-oss-20b", "openai/gpt-oss-20b"},
      {"gpt-oss-120b", "openai/gpt-oss-120b"},
      // Megatron-Bridge's recipes/nemotronh/h100/nemotron_3_{nano,super,ultra}.py and
      // recipes/deepseek/h100/deepseek_v4.py name these.
      {"nemotron-3-nano", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"},
      {"nemotron-3-super", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16"},
      {"nemotron-3-ultra", "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"},
      {"deepseek-v4-flash", "deepseek-ai/DeepSeek-V4-Flash"},
  };
  for (const auto& [k, v] : kIds) {
    if (k == preset) return v;
  }
  return "";
}

const std::vector<std::string>& AutoModelRequiredRecipeKeys() {
  static const std::vector<std::string> kKeys = {
      "recipe",  "seed",    "step_scheduler",  "dist_env",   "model",     "checkpoint",   "distributed",
      "loss_fn", "dataset", "packed_sequence", "dataloader", "optimizer", "lr_scheduler", "clip_grad_norm"};
  return kKeys;
}

std::string LaunchScript(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo,
                         const std::string& recipe_file, int rank) {
  std::ostringstream s;
  s << "#!/usr/bin/env bash\n" << Header(c, req, topo, rank);
  if (topo.nodes > 1) s << "# Run this script on each of the " << topo.nodes << " nodes with NODE_RANK and MASTER_ADDR set.\n";
  const FrameworkOps& fw = FrameworkOf(req.framework);
  s << fw.launch_comment(recipe_file);
  s << "set -euo pipefail\n" << FindRecipeBesideScript(recipe_file) << Exports(c, req, topo)
    << fw.launch_prelude(c, req) << "exec " << Command(c, req, topo, kRecipeVar, false);
  return s.str();
}

std::string SlurmScript(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo,
                        const std::string& recipe_file, int rank) {
  std::ostringstream s;
  s << "#!/usr/bin/env bash\n";
  s << "#SBATCH --job-name=meshplan-" << ShellWord(req.model.name) << "-r" << rank << "\n";
  s << "#SBATCH --nodes=" << topo.nodes << "\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=" << topo.gpus_per_node
    << "\n#SBATCH --exclusive\n";
  s << Header(c, req, topo, rank);
  s << "set -euo pipefail\n" << FindRecipeUnderSlurm(recipe_file) << Exports(c, req, topo)
    << FrameworkOf(req.framework).launch_prelude(c, req);
  s << "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n";
  s << "export MASTER_PORT=\"${MASTER_PORT:-29500}\"\n";
  s << "srun --kill-on-bad-exit=1 " << Command(c, req, topo, kRecipeVar, true);
  return s.str();
}

LaunchPaths LaunchFilePaths(const std::string& out, int rank) {
  std::filesystem::path p(out);
  const std::string stem = (p.parent_path() / p.stem()).string();
  const std::string r = ".rank" + std::to_string(rank);
  return {stem + r + ".yaml", stem + r + ".launch.sh", stem + r + ".sbatch"};
}

namespace {

// Whether `file` starts as the launch files meshplan writes: a "# meshplan " comment within its
// first lines (recipes begin with it; scripts after "#!/usr/bin/env bash", Slurm scripts after
// their #SBATCH lines; a full recipe after its "recipe:" line), or a fragment's note.
bool WrittenByMeshplan(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  for (int i = 0; i < 10 && std::getline(in, line); ++i) {
    if (line.rfind("# meshplan ", 0) == 0 || line.rfind("# Fragment: merge into", 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> StaleLaunchFiles(const std::string& out, size_t ranks) {
  const std::filesystem::path p(out);
  const std::filesystem::path dir = p.parent_path();
  const std::string prefix = p.stem().string() + ".rank";
  static const char* const kKinds[] = {".yaml", ".launch.sh", ".sbatch"};  // LaunchFilePaths' order
  std::vector<std::tuple<size_t, int, std::string>> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    size_t digits = prefix.size();
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
    const std::string number = name.substr(prefix.size(), digits - prefix.size());
    if (number.empty() || number.size() > 9 || number[0] == '0') continue;
    const size_t n = std::stoul(number);
    if (n <= ranks) continue;
    for (int kind = 0; kind < 3; ++kind) {
      if (name.substr(digits) != kKinds[kind]) continue;
      std::error_code dir_ec;
      if (it->is_directory(dir_ec)) continue;
      if (!WrittenByMeshplan(it->path())) continue;  // a file of the user's that happens to match
      found.emplace_back(n, kind, (dir / name).string());
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out_paths;
  for (auto& f : found) out_paths.push_back(std::move(std::get<2>(f)));
  return out_paths;
}

LaunchFilesWritten WriteLaunchFiles(const PlanResult& result, const PlanRequest& req, const LaunchTopology& topo,
                                    const std::string& out, bool full_recipe, const std::string& hf_model,
                                    bool force) {
  LaunchFilesWritten done;
  std::vector<std::string>& written = done.written;
  for (size_t i = 0; i < result.top.size(); ++i) {
    const int rank = static_cast<int>(i + 1);
    const Candidate& c = result.top[i];
    const LaunchPaths p = LaunchFilePaths(out, rank);
    // The scripts name the recipe by its file name only and find it beside themselves.
    const std::string recipe_file = std::filesystem::path(p.recipe).filename().string();
    const std::string recipe = FrameworkOf(req.framework).launch_recipe(c, req, rank, full_recipe, hf_model);
    WriteFileAtomically(p.recipe, recipe, force, "--emit-launch");
    WriteFileAtomically(p.launch, LaunchScript(c, req, topo, recipe_file, rank), force, "--emit-launch");
    chmod(p.launch.c_str(), 0755);
    WriteFileAtomically(p.sbatch, SlurmScript(c, req, topo, recipe_file, rank), force, "--emit-launch");
    written.insert(written.end(), {p.recipe, p.launch, p.sbatch});
  }
  if (!force) return done;
  for (const std::string& stale : StaleLaunchFiles(out, result.top.size())) {
    std::error_code ec;
    std::filesystem::remove(stale, ec);
    if (ec) {
      throw InputError(SourceLoc{stale, 0, 0, /*output=*/true}, "--force",
                       "expected to remove this launch file of an earlier run (beyond this run's " +
                           std::to_string(result.top.size()) + " recipes); found: " + ec.message());
    }
    done.removed.push_back(stale);
  }
  return done;
}

}  // namespace meshplan
