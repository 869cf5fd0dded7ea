// Launch files: complete AutoModel recipes, torchrun / Megatron-Bridge commands, Slurm scripts.
// Sources: automodel.md 1.4 (launching, step_scheduler, dist_env), 1.5 (example recipes) and
// AutoModel's config schema (recipe, seed, model, checkpoint, loss_fn, dataset, dataloader,
// optimizer, lr_scheduler, clip_grad_norm sections); megatron.md 1.8 (run_recipe.py with dotted
// overrides), 2.11 (CUDA_DEVICE_MAX_CONNECTIONS must be set before CUDA starts, MB PR #925).
#include "meshplan/framework.hpp"
#include "meshplan/launch.hpp"

#include <sys/stat.h>

#include <cctype>
#include <filesystem>
#include <sstream>

#include "meshplan/diag.hpp"
#include "meshplan/recipe.hpp"
#include "recipe/format.hpp"

namespace meshplan {

namespace {

using recipe::OneLine;

const SourceLoc kCmdLine{"<command line>", 0, 0};

bool IsMegatron(const PlanRequest& req) { return IsMegatronBridge(req.framework); }

// Single-quotes a value for bash.
std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) {
    if (ch == '\'') q += "'\\''";
    else q += ch;
  }
  return q + "'";
}

// `s` with every character outside [A-Za-z0-9._-] replaced by '_' (safe inside "${V:?...}").
std::string ShellWord(const std::string& s) {
  std::string w;
  for (char ch : s) w += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-') ? ch : '_';
  return w;
}

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
  if (IsMegatron(req)) {
    const std::string mb_recipe = MbRecipeName(req.model.name);
    s << " \\\n  \"${MEGATRON_BRIDGE_DIR:-.}/scripts/training/run_recipe.py\" --recipe \"${MB_RECIPE:"
      << (mb_recipe.empty() ? "?set MB_RECIPE to a Megatron-Bridge recipe function: it has none for " + ShellWord(req.model.name)
                            : "-" + mb_recipe)
      << "}\"";
    // With the default recipe and a None comm_overlap the comm_overlap keys come from the
    // COMM_OVERLAP array that CommOverlapPrelude defines (force-added, or plain with $MB_RECIPE).
    const bool force_comm = !mb_recipe.empty() && MbRecipeLeavesCommOverlapNone(req.model.name);
    for (const auto& [key, value] : MegatronOverrides(c.layout, req)) {
      if (force_comm && key.rfind("comm_overlap.", 0) == 0) continue;
      s << " \\\n  " << Quote(key + "=" + value);
    }
    if (force_comm) s << " \\\n  \"${COMM_OVERLAP[@]}\"";
    s << "\n";
  } else {
    s << " \\\n  -m nemo_automodel.recipes.llm.train_ft -c " << Quote(recipe_path) << "\n";
  }
  return s.str();
}

// Before the command of a Megatron-Bridge launch whose default recipe leaves comm_overlap None
// (MbRecipeLeavesCommOverlapNone): the comm_overlap overrides as a bash array, force-added with
// the class to build when $MB_RECIPE is not set, plain when it is. "" otherwise.
std::string CommOverlapPrelude(const Candidate& c, const PlanRequest& req) {
  if (!IsMegatron(req)) return "";
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

std::string Header(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo, int rank) {
  std::ostringstream s;
  s << "# meshplan " << FrameworkOf(req.framework).title << " launch of recipe " << rank << ": "
    << OneLine(req.model.name) << " on " << topo.nodes << " node(s) x " << topo.gpus_per_node << " GPUs of "
    << OneLine(req.system.name) << "\n# layout: " << Describe(c.layout) << "\n# predicted: " << c.cost.step_seconds
    << " s/step, " << static_cast<long long>(c.cost.tokens_per_s_per_gpu) << " tokens/s/GPU\n";
  if (const std::string note = LaunchTopologyNote(req, topo); !note.empty()) s << "# " << note << "\n";
  return s.str();
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
  if (gpus_per_node == 0) {
    gpus_per_node = nodes > 0 && world % nodes == 0 ? world / nodes : std::min<int64_t>(sys_gpn, world);
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
  };
  for (const auto& [k, v] : kIds) {
    if (k == preset) return v;
  }
  return "";
}

const std::vector<std::string>& AutoModelRequiredRecipeKeys() {
  static const std::vector<std::string> kKeys = {
      "recipe",  "seed",      "step_scheduler",  "dist_env",   "rng",       "model",        "checkpoint",
      "distributed", "loss_fn", "dataset", "packed_sequence", "dataloader", "optimizer", "lr_scheduler",
      "clip_grad_norm"};
  return kKeys;
}

std::string AutoModelFullRecipeYaml(const Candidate& c, const PlanRequest& req, int rank, const std::string& hf_model) {
  const std::string fragment = AutoModelRecipeYaml(c, req, rank);
  // The fragment is "# comments\nstep_scheduler:\n...\ndistributed:\n...\ndataset:\n  seq_len: N\n":
  // split it; the full recipe writes its own, complete dataset section.
  const size_t ss = fragment.find("\nstep_scheduler:\n");
  const size_t ds = fragment.find("\ndistributed:\n");
  const size_t dss = fragment.find("\ndataset:", ds);
  const std::string comments = fragment.substr(0, ss + 1);
  const std::string step_body = fragment.substr(ss + 17, ds + 1 - (ss + 17));
  const std::string distributed = fragment.substr(ds + 1, dss - ds);
  const std::string id = hf_model.empty() ? HuggingFaceId(req.model.name) : hf_model;
  const bool moe = req.model.num_experts > 0;
  std::ostringstream y;
  y << "recipe: TrainFinetuneRecipeForNextTokenPrediction  # nemo_automodel.recipes.llm.train_ft\n";
  y << comments;
  y << "seed: 1234\n";
  y << "step_scheduler:\n" << step_body;
  y << "  max_steps: 100\n  num_epochs: 1\n  ckpt_every_steps: 1000000\n  val_every_steps: 1000000\n";
  y << "dist_env:\n  backend: nccl\n  timeout_minutes: 10\n";
  // rng: the section of AutoModel's examples (examples/llm_finetune/llama3_1/llama3_1_8b_hellaswag_pp.yaml),
  // whose target is the class StatefulRNG(seed, ranked) of nemo_automodel/components/training/rng.py.
  // recipes/llm/train_ft.py setup() itself builds StatefulRNG(seed=cfg.seed, ranked=True) from the
  // top-level `seed` (AutoModel main, commit 36044ad3, 2026-08-22), so both seeds are the same.
  y << "rng:\n  _target_: nemo_automodel.components.training.rng.StatefulRNG\n  seed: 1234\n  ranked: true\n";
  y << "model:\n";
  if (!id.empty()) {
    y << "  _target_: nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained\n";
    y << "  pretrained_model_name_or_path: " << recipe::YamlQuoted(id) << "\n";
  } else {
    // transformers' from_pretrained takes a configuration JSON file as well as a directory.
    const std::string file =
        std::filesystem::absolute(req.model.source.file.empty() ? req.model.name : req.model.source.file).string();
    y << "  _target_: nemo_automodel.NeMoAutoModelForCausalLM.from_config\n";
    y << "  config:\n    _target_: transformers.AutoConfig.from_pretrained\n";
    y << "    pretrained_model_name_or_path: " << recipe::YamlQuoted(file) << "  # the model's config JSON\n";
  }
  y << "  torch_dtype: bfloat16\n";
  if (c.layout.cp > 1) y << "  attn_implementation: sdpa  # required for cp > 1 (automodel.md 1.4)\n";
  if (moe) {
    y << "  backend:\n    attn: te\n    linear: te\n    rms_norm: te\n    experts: torch_mm\n    dispatcher: "
      << (c.layout.ep > req.system.gpus_per_node ? "hybridep" : c.layout.ep > 1 ? "deepep" : "torch") << "\n";
  }
  y << "checkpoint:\n  enabled: false\n  checkpoint_dir: checkpoints/\n";
  y << distributed;
  y << "loss_fn:\n  _target_: nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy\n";
  y << "dataset:  # synthetic tokens of the planned shape; swap in a named HF dataset, e.g.\n"
       "          # _target_: nemo_automodel.components.datasets.llm.squad.make_squad_dataset, dataset_name: rajpurkar/squad\n";
  y << "  _target_: nemo_automodel.components.datasets.llm.mock_iterable_dataset.MockIterableDataset\n";
  y << "  vocab_size: " << req.model.vocab_size << "\n";
  y << "  seq_len: " << req.setup.seq_len << "\n";
  y << "  num_samples: 1000000\n";
  y << "  batch_size: " << c.layout.local_batch_size << "\n";
  y << "packed_sequence:\n  packed_sequence_size: 0\n";
  // dataloader.batch_size must be null: MockIterableDataset already yields batches of
  // dataset.batch_size = local_batch_size sequences. AutoModel main (commit 36044ad3):
  // nemo_automodel/recipes/_typed_config.py RecipeConfig._resolve_dataloader takes `batch_size`
  // from this block, defaulting to step_scheduler.local_batch_size when absent (which would batch
  // the batches); nemo_automodel/components/datasets/loader.py DataloaderConfig.batch_size is
  // `int | None`, None collates with default_convert, and ParallelAwareDataloader passes None on
  // for an IterableDataset. AutoModel's mock-data benchmark recipes do the same
  // (examples/llm_benchmark/deepseek/deepseek_v3_torch.yaml: "batch_size: null  # Dataset already
  // yields batches"). _target_ and num_workers are among the fields _resolve_dataloader accepts.
  y << "dataloader:\n  _target_: torch.utils.data.DataLoader\n  batch_size: null  # the dataset yields batches\n"
       "  num_workers: 0\n";
  y << "optimizer:\n  _target_: torch.optim.AdamW\n  lr: 1.0e-5\n  betas: [0.9, 0.95]\n  eps: 1.0e-8\n"
       "  weight_decay: 0.01\n  foreach: "
    << (moe ? "false" : "true") << "\n";
  y << "lr_scheduler:\n  lr_decay_style: cosine\n  lr_warmup_steps: 10\n  min_lr: 1.0e-6\n";
  y << "clip_grad_norm:\n  max_norm: 1.0\n";
  return y.str();
}

std::string LaunchScript(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo,
                         const std::string& recipe_path, int rank) {
  std::ostringstream s;
  s << "#!/usr/bin/env bash\n" << Header(c, req, topo, rank);
  if (topo.nodes > 1) s << "# Run this script on each of the " << topo.nodes << " nodes with NODE_RANK and MASTER_ADDR set.\n";
  if (IsMegatron(req)) {
    s << "# Recipe overrides (also in " << OneLine(recipe_path)
      << "); set MEGATRON_BRIDGE_DIR to a Megatron-Bridge checkout\n"
      << "# and MB_RECIPE to another recipe function (required where Megatron-Bridge has no recipe for the model).\n";
  }
  s << "set -euo pipefail\n" << Exports(c, req, topo) << CommOverlapPrelude(c, req) << "exec "
    << Command(c, req, topo, recipe_path, false);
  return s.str();
}

std::string SlurmScript(const Candidate& c, const PlanRequest& req, const LaunchTopology& topo,
                        const std::string& recipe_path, int rank) {
  std::ostringstream s;
  s << "#!/usr/bin/env bash\n";
  s << "#SBATCH --job-name=meshplan-" << ShellWord(req.model.name) << "-r" << rank << "\n";
  s << "#SBATCH --nodes=" << topo.nodes << "\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=" << topo.gpus_per_node
    << "\n#SBATCH --exclusive\n";
  s << Header(c, req, topo, rank);
  s << "set -euo pipefail\n" << Exports(c, req, topo) << CommOverlapPrelude(c, req);
  s << "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n";
  s << "export MASTER_PORT=\"${MASTER_PORT:-29500}\"\n";
  s << "srun --kill-on-bad-exit=1 " << Command(c, req, topo, recipe_path, true);
  return s.str();
}

LaunchPaths LaunchFilePaths(const std::string& out, int rank) {
  std::filesystem::path p(out);
  const std::string stem = (p.parent_path() / p.stem()).string();
  const std::string r = ".rank" + std::to_string(rank);
  return {stem + r + ".yaml", stem + r + ".launch.sh", stem + r + ".sbatch"};
}

std::vector<std::string> WriteLaunchFiles(const PlanResult& result, const PlanRequest& req, const LaunchTopology& topo,
                                          const std::string& out, bool full_recipe, const std::string& hf_model,
                                          bool force) {
  std::vector<std::string> written;
  for (size_t i = 0; i < result.top.size(); ++i) {
    const int rank = static_cast<int>(i + 1);
    const Candidate& c = result.top[i];
    const LaunchPaths p = LaunchFilePaths(out, rank);
    const std::string abs_recipe = std::filesystem::absolute(p.recipe).lexically_normal().string();
    std::string recipe;
    if (IsMegatron(req)) {
      recipe = MegatronRecipeYaml(c, req, rank);
    } else {
      recipe = full_recipe ? AutoModelFullRecipeYaml(c, req, rank, hf_model) : AutoModelRecipeYaml(c, req, rank);
      if (!full_recipe) {
        recipe = "# Fragment: merge into a complete AutoModel recipe before launching (or use --full-recipe).\n" + recipe;
      }
    }
    WriteFileAtomically(p.recipe, recipe, force, "--emit-launch");
    WriteFileAtomically(p.launch, LaunchScript(c, req, topo, abs_recipe, rank), force, "--emit-launch");
    chmod(p.launch.c_str(), 0755);
    WriteFileAtomically(p.sbatch, SlurmScript(c, req, topo, abs_recipe, rank), force, "--emit-launch");
    written.insert(written.end(), {p.recipe, p.launch, p.sbatch});
  }
  return written;
}

}  // namespace meshplan
