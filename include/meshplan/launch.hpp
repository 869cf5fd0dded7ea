#pragma once
/// \file launch.hpp
/// From a plan to a launched job: complete AutoModel recipes, the torchrun / Megatron-Bridge
/// command that starts each recipe, a Slurm batch script and the launch environment.
/// Launch forms: automodel.md 1.4 (torchrun -m nemo_automodel.recipes.llm.train_ft -c),
/// megatron.md 1.8 (run_recipe.py + dotted overrides), 2.11 (CUDA_DEVICE_MAX_CONNECTIONS).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "meshplan/search.hpp"

namespace meshplan {

/// Nodes and GPUs per node of the launched job.
struct LaunchTopology {
  int64_t nodes = 0;          ///< torchrun --nnodes, #SBATCH --nodes
  int64_t gpus_per_node = 0;  ///< torchrun --nproc-per-node, #SBATCH --gpus-per-node
};

/// Resolves --nodes / --gpus-per-node (0 = derive) against the system and the GPU count:
/// gpus_per_node defaults to min(system GPUs per node, num_gpus), nodes to num_gpus /
/// gpus_per_node. Throws InputError (field "--nodes" or "--gpus-per-node", "<command line>")
/// when gpus_per_node exceeds the system's GPUs per node, or nodes * gpus_per_node differs
/// from req.setup.num_gpus, or a value is negative.
LaunchTopology ResolveLaunchTopology(const PlanRequest& req, int64_t nodes, int64_t gpus_per_node);

/// "" when `topo` has the system's own node size (min(GPUs per node, --gpus), what the plan
/// priced); otherwise a one-line note for the launch files' headers and a warning: the
/// predicted step times assume the system's nodes, not this split across more nodes.
std::string LaunchTopologyNote(const PlanRequest& req, const LaunchTopology& topo);

/// Environment variables to export before the launcher starts (name, value), in order.
/// Megatron-Bridge: MegatronLaunchEnv (CUDA_DEVICE_MAX_CONNECTIONS, LayerNorm SM margins where
/// TP overlap is on). Both frameworks: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the
/// memory headroom was measured with it, cost.hpp MemoryBreakdown) and NCCL_DEBUG=WARN.
std::vector<std::pair<std::string, std::string>> LaunchEnv(const Candidate& c, const PlanRequest& req);

/// Hugging Face repository id of a model preset ("llama3.1-8b" -> "meta-llama/Llama-3.1-8B"),
/// or "" when the model is not a preset. Source: the model cards of models/*.json.
std::string HuggingFaceId(const std::string& preset);

/// A complete AutoModel recipe (TrainFinetuneRecipeForNextTokenPrediction, launched by
/// nemo_automodel.recipes.llm.train_ft): recipe, seed, step_scheduler, dist_env, model
/// (from_pretrained of the HF id, or from_config of a config file), checkpoint, distributed
/// (AutoModelRecipeYaml), loss_fn (MaskedCrossEntropy), dataset (MockIterableDataset of the
/// planned seq_len and vocabulary), packed_sequence, dataloader, optimizer (AdamW),
/// lr_scheduler, clip_grad_norm. Keys: automodel.md 1.4-1.5 and AutoModel's config schema.
/// `hf_model` overrides the model id ("" = HuggingFaceId of the preset, else from_config).
std::string AutoModelFullRecipeYaml(const Candidate& c, const PlanRequest& req, int rank,
                                    const std::string& hf_model = "");

/// Top-level keys every complete AutoModel recipe written by AutoModelFullRecipeYaml has,
/// in file order (used by tests and by `meshplan check`-style validation).
const std::vector<std::string>& AutoModelRequiredRecipeKeys();

/// A bash script that exports LaunchEnv and starts the recipe `recipe_file`, a file name that
/// the script looks up beside itself at run time (here=$(cd "$(dirname "${BASH_SOURCE[0]}")" &&
/// pwd), recipe="$here/<recipe_file>"; it stops with a message when the file is not there), so
/// the folder can be moved; no absolute path is written, in the commands or the comments.
/// AutoModel `torchrun --nnodes N --nproc-per-node G -m nemo_automodel.recipes.llm.train_ft
/// -c "$recipe"` (multi-node: --node-rank $NODE_RANK, rendezvous at $MASTER_ADDR:$MASTER_PORT);
/// Megatron-Bridge `torchrun ... scripts/training/run_recipe.py --recipe $MB_RECIPE` followed
/// by the layout's dotted overrides (MegatronOverrides).
std::string LaunchScript(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo,
                         const std::string& recipe_file, int rank);

/// A Slurm batch script (#SBATCH --nodes, --ntasks-per-node=1, --gpus-per-node, --exclusive)
/// running the same command under srun with a c10d rendezvous on the first node. slurmd runs a
/// copy of the script from its spool directory, so it cannot find the recipe by its own path:
/// it looks `recipe_file` up in the folder of the submitted script, the Command= of
/// `scontrol show job "$SLURM_JOB_ID"` when that is a file, else in "$SLURM_SUBMIT_DIR" (Slurm's
/// sbatch(1): SLURM_SUBMIT_DIR is the directory sbatch was invoked from; scontrol(1) show job
/// prints the batch script's path as Command=); that folder must be the plan folder.
std::string SlurmScript(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo,
                        const std::string& recipe_file, int rank);

/// Paths written beside `out` for recipe `rank` (1-based): stem = `out` without its
/// extension; recipe = stem.rankN.yaml, launch = stem.rankN.launch.sh, sbatch = stem.rankN.sbatch.
struct LaunchPaths {
  std::string recipe, launch, sbatch;
};
LaunchPaths LaunchFilePaths(const std::string& out, int rank);

/// The launch files of an earlier run beside `out` that a run of `ranks` recipes does not
/// write: every existing stem.rankN.yaml, stem.rankN.launch.sh and stem.rankN.sbatch (stem as in
/// LaunchFilePaths, N written without leading zeros) with N > ranks that is not a directory,
/// ordered by N, then recipe, launch, sbatch; spelled as LaunchFilePaths spells them.
std::vector<std::string> StaleLaunchFiles(const std::string& out, size_t ranks);

/// What WriteLaunchFiles did: the files written (recipe, launch, sbatch of rank 1, then 2, ...)
/// and the stale files of an earlier run it removed (StaleLaunchFiles; only with `force`).
struct LaunchFilesWritten {
  std::vector<std::string> written;
  std::vector<std::string> removed;
};

/// Writes, for every recipe of `result.top`, its recipe file (the complete AutoModel recipe
/// when `full_recipe` or the fragment otherwise; Megatron-Bridge: the override YAML), the
/// launch script (mode 0755) and the Slurm script, each with WriteFileAtomically(…, force).
/// With `force`, then removes StaleLaunchFiles(out, result.top.size()), so that a folder
/// rewritten with fewer recipes holds no scripts of layouts this plan did not choose; without
/// it, files beyond this run's ranks are left as they are. Throws InputError as
/// WriteFileAtomically does, and (field "--force", the file as the output) when a stale file
/// cannot be removed.
LaunchFilesWritten WriteLaunchFiles(const PlanResult& result, const PlanRequest& req, const LaunchTopology& topo,
                                    const std::string& out, bool full_recipe, const std::string& hf_model,
                                    bool force);

}  // namespace meshplan
