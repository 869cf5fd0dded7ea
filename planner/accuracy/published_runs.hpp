#pragma once
/// \file published_runs.hpp
/// The published-runs CSV files `meshplan validate` reads, as typed runs, and the Megatron-Bridge
/// layout each run was measured at. Private to planner/accuracy (Validate, accuracy.hpp, is the
/// contract).
///
/// Two file formats, told apart by the header:
///   - Megatron-Bridge performance tables (shared/reference/mbridge_perf_dev.csv): release, task,
///     model, system, gpus, precision, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ep, ga,
///     tokens_per_s_per_gpu, model_tflops_per_gpu. Cells like "661 (624)" carry a second
///     configuration in parentheses; the first value is used.
///   - the published-runs survey (shared/reference/published_runs_dev.csv): id, model, ...,
///     num_gpus, gpu_type, TP, PP, VPP, CP, EP, DP, ..., recompute, precision, tflops_per_gpu,
///     ..., tokens_per_s_per_gpu. Rows whose sizes are not integers in range are skipped, naming
///     the column. Two optional survey columns (tests/data/published_dense_runs.csv): meshplan_model,
///     a preset or a model file (YAML / config.json; a relative path is relative to the CSV's
///     folder) for a model no preset describes, and megatron_settings (PublishedRun's Tri fields).
/// FLOP convention (groundtruth.md A.3): both files report *model* FLOPs (Megatron-Bridge,
/// NeMo, AutoModel) or are compared on tokens/s when no TFLOP/s is given; hardware-FLOP
/// sources (Narayanan 2021, BLOOM: flops_basis "HW FLOPs ...") compare on tokens/s.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/accuracy.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"
#include "frameworks/megatron_bridge/perf_settings.hpp"

namespace meshplan::accuracy {

/// One data row of a published-runs file, typed. Parallel sizes and the micro-batch the row
/// leaves empty ("", "n/a", "-") are 1; GPUs, global batch and sequence length must be given.
struct PublishedRun {
  int line = 0;               ///< 1-based line of the row in the file
  std::string label;          ///< "model system gpus precision" (perf table), "#id model gpus" (survey)
  /// Megatron-Bridge release of the row: the perf table's release cell; in the survey, the
  /// container release its source cell names ("... (26.04.01 container, DGX-H100)"; see
  /// ContainerRelease), "" when it names none.
  std::string release;
  std::string skip;           ///< why the row cannot be priced, the reason it is counted under ("" = it can)
  std::string skip_detail;    ///< the row's own words for `skip` ("" = `skip` itself)
  std::string gpu_cell;       ///< the GPU / system cell as written
  std::string preset;         ///< meshplan model preset ("" = none describes the model)
  /// The survey row's model as a generic decoder of its shape columns (layers, hidden, heads,
  /// kv_heads, ffn_hidden, vocab, experts, topk; GenericDecoder), where no preset describes it
  /// and every shape cell states its size.
  std::optional<ModelSpec> shape_model;
  std::string system;         ///< hwdb system ("" = none for the GPU)
  std::string precision_cell; ///< the perf table's precision cell (the recipe-settings key)
  TrainSetup setup;           ///< num_gpus, global_batch, seq_len, precision (headroom: the request's)
  int64_t tp = 1, pp = 1, cp = 1, vpp = 1, ep = 1, micro_batch = 1;
  /// The perf table's ga cell: gradient-accumulation steps (micro-batches per step) as the
  /// table states them, 0 where the cell is empty or not a positive whole number. Not used for
  /// pricing (the step's micro-batches are gbs / (dp x mbs)); `validate` notes a row whose ga
  /// disagrees with that.
  int64_t gradient_accumulation = 0;
  bool megatron_fsdp = false;             ///< fsdp cell > 0 / "Megatron-FSDP" in zero_fsdp_distopt
  /// "ZeRO-2" in the survey's zero_fsdp_distopt (gradients and optimizer state sharded, weights
  /// whole): priced as Megatron FSDP's optim_grads, Megatron-Core's ZeRO-2 (kUnset: the
  /// recipe's or the emitted sharding).
  MbSharding fsdp_sharding = MbSharding::kUnset;
  /// "FSDP2" in the survey's zero_fsdp_distopt (torchtitan, AutoModel): torch fully_shard, priced
  /// as Megatron-Bridge's dist.use_torch_fsdp2 where its rules allow it (PP 1, EP 1).
  bool torch_fsdp2 = false;
  /// The survey row is a NeMo AutoModel run (its source cell names NVIDIA-NeMo/Automodel):
  /// priced as the AutoModel layout of its benchmark recipe (FindAutoModelBenchmark).
  bool automodel = false;
  /// The survey row's source cell names pytorch/torchtitan: PyTorch's own Llama modules under
  /// FSDP2 / DTensor TP / torch pipelining (no Transformer Engine, no Megatron-Core), whose
  /// memory `validate` prices with the `pytorch` profile (TorchtitanMemory in validate.cpp).
  bool torchtitan = false;
  Recompute recompute = Recompute::kNone; ///< the survey's recompute cell (the perf table: none)
  /// The survey's recompute cell is unknown ("?", "? (see perf_recipes)"): the run's settings are
  /// its recipe's, where a Megatron-Bridge performance recipe function is known for it.
  bool settings_unknown = false;
  /// What the run trained: "pretrain" or "sft" (the perf table's task cell; a survey row whose
  /// notes start with "SFT"). Names the Megatron-Bridge recipe function the run launched
  /// (`<model>_sft_<N>gpu_<system>_<precision>_config` for SFT, perf_recipes/ at v0.6.0).
  std::string task = "pretrain";
  /// The survey row's source cell names NVIDIA-NeMo/Megatron-Bridge: the run launched one of its
  /// performance recipe functions, whose settings (gradient dtype, overlaps, CUDA graphs,
  /// dispatcher, recompute) it ran with; its own recompute cell, where stated, takes precedence.
  bool megatron_bridge_source = false;
  /// The row's settings are the perf table's entry for its release (set by `validate`): they are
  /// the run's own, so they take precedence over the survey's recompute cell.
  bool release_settings = false;
  double published_tflops = 0;  ///< model TFLOP/s per GPU (0 = not published)
  double published_tokens = 0;  ///< tokens/s per GPU (0 = not published)
  /// The survey's mem_per_gpu: the run's peak memory per GPU in bytes ("50.2 GB" 1e9, "47.96
  /// GiB" 2^30 per unit; 0 = not published or without a unit).
  double published_memory = 0;
  bool tokendrop = false;       ///< a "(tokendrop)" model row
  int64_t mtp = kMtpFromModel;  ///< MTP layers: "(w/o MTP)" 0, "(w/ MTP)" 1, else the model provider's
  /// The survey's flops_basis says hardware FLOPs ("HW FLOPs ...": the recompute forward
  /// counted, Narayanan 2021, BLOOM): the row compares on tokens/s (tokens_per_s_per_gpu, else
  /// derived_tokens_per_s_per_gpu), not on model TFLOP/s.
  bool hardware_flops = false;
  /// The survey's optional megatron_settings cell ("key=false; ..."): settings of the run's
  /// software that meshplan's emitted Megatron-Core settings would get wrong (Megatron-LM 2021
  /// had no distributed optimizer, no sequence parallelism, no TP or DP communication overlap).
  /// Then recipes/published-run-settings.yaml's entry for the row's source, and, where neither
  /// states them, the survey's cells: zero_fsdp_distopt "none ..." = no distributed optimizer;
  /// a recompute cell naming sequence parallelism ("full (no sequence parallel)", "... +
  /// sequence parallel", "(SP on)") sets sequence_parallel.
  /// kUnset: as emitted. Two more items name software Megatron-Core no longer has:
  /// attention_backend=unfused (the attention core before FlashAttention, MbSettings::
  /// unfused_attention) and scatter_gather_tensors_in_pipeline=true (Megatron-LM 2021's
  /// pipeline scatter / gather over TP, MbSettings::pp_scatter_gather).
  Tri distributed_optimizer = Tri::kUnset, sequence_parallel = Tri::kUnset, tp_comm_overlap = Tri::kUnset,
      overlap_grad_reduce = Tri::kUnset, pp_scatter_gather = Tri::kUnset;
  bool unfused_attention = false;  ///< attention_backend=unfused (default: flash / fused kernels)
  /// The run's main-gradient buffer and DP reduction dtype: megatron_settings
  /// grad_reduce_in_fp32=true / false, or the launcher configuration of the row's source
  /// (LauncherGradDtype in published_runs.cpp); kUnset: as emitted or as the recipe settings say.
  Tri grad_reduce_in_fp32 = Tri::kUnset;
};

/// A published-runs file: its format and one run per non-blank data line, in file order.
struct PublishedRuns {
  PublishedRunsFormat format = PublishedRunsFormat::kMegatronBridgePerf;
  std::vector<PublishedRun> runs;
};

/// The text of the runs file at `path`. Throws InputError (field "runs") for a directory, a
/// file that does not exist and one that cannot be read.
std::string ReadRunsFile(const std::string& path);

/// Parses the text of a published-runs file named `file` (for messages). Throws InputError
/// naming file and line for: a header of neither format (saying whether the file is empty,
/// starts with an empty line or holds binary data), a perf-table column out of its place, a
/// survey column missing, and a data line with an unterminated quote or another cell count
/// than the header (the whole file is refused: nothing is evaluated). A row that is well
/// formed but cannot be priced is returned with its `skip` reason instead: LoRA, an unknown
/// precision, a size that is not an integer in range (naming the column), another cell count
/// than 18 (perf table), a throughput that is not a positive number, no preset for the model,
/// no hwdb system for the GPU, no published throughput, sizes that do not divide the GPUs.
/// `system_override` (non-empty): every row's system is this one, whatever its cell says
/// (calibrate --runs: a user's runs on their own system), so no row is skipped for its GPU.
PublishedRuns ParsePublishedRuns(std::string_view text, const std::string& file,
                                 const std::string& system_override = "");

/// The Megatron-Bridge layout `run` was measured at on `system`, priced as the recipe ran it:
/// meshplan's emitted settings (search::ApplyEmittedSettings) overlaid with the release's
/// published recipe `settings` (nullptr: none), ETP 1 for MoE models with TP (the published
/// MoE recipes pin it), sequence parallelism with TP, the distributed optimizer, and the
/// run's own pipeline split: even when the layers divide by PP, else with the embedding and
/// loss as layers when that divides, else meshplan's own split (MbPpSplit::kLayout).
/// `run.setup` is the setup priced (its precision one the system has).
Layout PublishedLayout(const PublishedRun& run, const ModelSpec& model, const SystemSpec& system,
                       const recipe::PerfRecipeSettings* settings);

/// The NeMo container release a survey row's source cell names, as Megatron-Bridge's
/// performance summary labels its tables ("## 26.04.01 NeMo Container"; the survey writes
/// "docs/performance-summary-archive.md (26.04.01 container, DGX-H100)"): the first
/// YY.MM[.PP] followed by the word "container" (any case), or "" when there is none. It keys
/// recipes/megatron-bridge-perf.yaml as the perf table's release cell does. Never throws.
std::string ContainerRelease(const std::string& source);

/// An AutoModel benchmark recipe of recipes/automodel-benchmarks/ (embedded): the
/// step_scheduler:, distributed: and loss_fn: sections of one of AutoModel's
/// examples/llm_benchmark recipes, with the batch sizes of the published row it ran, and its
/// `published: {model, system, gpus}` key.
struct AutoModelBenchmark {
  std::string file;  ///< "recipes/automodel-benchmarks/<name>.yaml"
  Layout layout;     ///< as ParseAutoModelRecipe reads it
};
/// The benchmark recipe whose `published:` names `preset`, `system` and `gpus`, or nullopt.
/// Throws InputError for an embedded recipe AutoModel's reader refuses or whose published:
/// key is malformed (a defect of the embedded data).
std::optional<AutoModelBenchmark> FindAutoModelBenchmark(const std::string& preset, const std::string& system,
                                                         int64_t gpus);

}  // namespace meshplan::accuracy
