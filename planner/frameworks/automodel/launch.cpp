// AutoModel's launch: torchrun -m nemo_automodel.recipes.llm.train_ft -c RECIPE, and the complete
// recipe it reads. Sources: automodel.md 1.4 (launching, step_scheduler, dist_env), 1.5 (example
// recipes) and AutoModel's config schema (recipe, seed, model, checkpoint, loss_fn, dataset,
// dataloader, optimizer, lr_scheduler, clip_grad_norm sections).
#include "meshplan/framework.hpp"
#include "meshplan/launch.hpp"

#include <filesystem>
#include <sstream>

#include "launch/shell.hpp"
#include "meshplan/recipe.hpp"
#include "recipe/format.hpp"

namespace meshplan {

std::string AutoModelFullRecipeYaml(const Candidate& c, const PlanRequest& req, int rank, const std::string& hf_model) {
  const std::string fragment = AutoModelRecipeYaml(c, req, rank);
  // The fragment is "# comments\nstep_scheduler:\n...\ndistributed:\n...\ndataset:\n  seq_len: N\n":
  // split it; the full recipe writes its own, complete dataset section.
  const size_t ss = fragment.find("\nstep_scheduler:\n");
  const size_t ds = fragment.find("\ndistributed:\n");
  const size_t dss = fragment.find("\ndataset:", ds);
  // The fragment's max_steps note does not apply: this recipe sets step_scheduler.max_steps.
  std::string comments = fragment.substr(0, ss + 1);
  if (const size_t note = comments.find(recipe::kAutoModelMaxStepsNote); note != std::string::npos) {
    comments.erase(note, std::string(recipe::kAutoModelMaxStepsNote).size());
  }
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
  // No rng: section. recipes/llm/train_ft.py setup() builds StatefulRNG(seed=cfg.seed, ranked=True)
  // from the top-level `seed` and reads no `rng:` key (AutoModel main, commit 36044ad3), so the
  // section of some of AutoModel's examples is read by nothing.
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
    // The dispatcher the layout is priced with (torch without EP, or on ROCm: DefaultBackend).
    const char* dispatcher = c.layout.ep <= 1 ? "torch" : AmDispatcherName(c.layout.am_backend.dispatcher);
    // DeepSeek-V4: AutoModel's deepseek_v4 recipes (examples/llm_finetune/deepseek_v4); its
    // attention projections are nn.Linear whatever backend.linear says, its q / kv norms fp32.
    if (req.model.architecture == Architecture::kDeepseekV4) {
      y << "  backend:\n    attn: " << (c.layout.am_backend.attn_tilelang ? "tilelang" : "torch")
        << "\n    linear: torch\n    rms_norm: torch_fp32\n";
    } else {
      y << "  backend:\n    attn: te\n    linear: te\n    rms_norm: te\n";
    }
    y << "    experts: torch_mm\n    dispatcher: " << dispatcher << "\n";
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

namespace automodel {

std::string LaunchCommand(const Candidate& /*c*/, const PlanRequest& /*req*/, const std::string& recipe_word) {
  return "-m nemo_automodel.recipes.llm.train_ft -c " + recipe_word;
}

std::string LaunchComment(const std::string& /*recipe_file*/) { return ""; }
std::string LaunchPrelude(const Candidate& /*c*/, const PlanRequest& /*req*/) { return ""; }

std::string LaunchRecipe(const Candidate& c, const PlanRequest& req, int rank, bool full_recipe,
                         const std::string& hf_model) {
  if (full_recipe) return AutoModelFullRecipeYaml(c, req, rank, hf_model);
  return "# Fragment: merge into a complete AutoModel recipe before launching (or use --full-recipe).\n" +
         AutoModelRecipeYaml(c, req, rank);
}

}  // namespace automodel
}  // namespace meshplan
