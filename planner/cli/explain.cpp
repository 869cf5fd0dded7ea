// `meshplan explain`: one layout (from AutoModel flags, an AutoModel recipe or a Megatron-Bridge
// override recipe) -> the rules it breaks, its memory per GPU term by term (per PP stage where
// stages differ) and its step time term by term (for Megatron-Bridge also the compute term's
// GEMM / attention / HBM-bound / launch split). Exit 0 valid and fits, 1 breaks a rule or does
// not fit, 2 bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/data.hpp"
#include "meshplan/recipe.hpp"
#include "recipe/format.hpp"

namespace meshplan::cli {

void AddExplainCommand(CLI::App& app, ExplainOptions& o) {
  CLI::App* cmd = app.add_subcommand("explain", "explain one layout: rules, memory and step time term by term");
  cmd->add_option("--model", o.model, "preset name or path to config.json / model YAML")->required();
  cmd->add_option("--system", o.system, "system name or path to a system YAML")->required();
  cmd->add_option("--gpus", o.gpus, "number of GPUs (world size)")->required();
  cmd->add_option("--seq-len", o.seq_len, "tokens per sequence (default: the recipe's, if it sets one)");
  cmd->add_option("--global-batch", o.global_batch, "sequences per optimizer step (default: the recipe's)");
  CLI::Option* recipe = cmd->add_option(
      "--recipe", o.recipe, "AutoModel recipe or Megatron-Bridge override YAML giving the layout (framework detected from its keys)");
  const std::vector<CLI::Option*> layout = {
      cmd->add_option("--strategy", o.strategy, "fsdp2, megatron_fsdp or ddp (default fsdp2)")
          ->check(CLI::IsMember({"fsdp2", "megatron_fsdp", "ddp"})),
      cmd->add_option("--tp", o.tp, "tensor-parallel size"),
      cmd->add_option("--pp", o.pp, "pipeline-parallel size"),
      cmd->add_option("--cp", o.cp, "context-parallel size"),
      cmd->add_option("--ep", o.ep, "expert-parallel size"),
      cmd->add_option("--dp-replicate", o.dp_replicate, "HSDP replicas (fsdp2)"),
      cmd->add_option("--local-batch", o.local_batch, "step_scheduler.local_batch_size"),
      cmd->add_option("--pp-microbatch", o.pp_microbatch, "pipeline.pp_microbatch_size"),
      cmd->add_option("--pp-schedule", o.pp_schedule, "1f1b or interleaved1f1b")
          ->check(CLI::IsMember({"1f1b", "interleaved1f1b"}))
          ->each([&o](const std::string&) { o.pp_schedule_given = true; }),
      cmd->add_option("--layers-per-stage", o.layers_per_stage, "pipeline.layers_per_stage (default null)"),
      cmd->add_flag("--sequence-parallel", o.sequence_parallel, "sequence_parallel: true"),
      cmd->add_option("--recompute", o.recompute, "activation checkpointing: none, selective or full")
          ->check(CLI::IsMember({"none", "selective", "full"})),
  };
  for (CLI::Option* opt : layout) recipe->excludes(opt);
  cmd->add_option("--precision", o.precision, "GEMM precision (default: the recipe's, else bf16)")
      ->check(CLI::IsMember({"bf16", "fp8"}));
  cmd->add_option("--automodel-version", o.automodel_version, "AutoModel rules (0.5 or 0.4)")
      ->check(CLI::IsMember({"0.5", "0.4"}));
  cmd->add_option("--mbridge-version", o.mbridge_version, "Megatron-Bridge rules (main or core0.15)")
      ->check(CLI::IsMember({"main", "core0.15"}));
  TrackVersionFlags(cmd, o.given);
  cmd->add_option("--memory-profile", o.memory_profile,
                  "pytorch (AutoModel, measured), megatron (Megatron-LM estimate) or megatron-bridge (its variant); "
                  "default: pytorch for AutoModel, megatron-bridge for Megatron-Bridge recipes")
      ->check(CLI::IsMember({"pytorch", "megatron", "megatron-bridge"}));
  cmd->add_flag("--fp32-params", o.fp32_params, "model loaded in fp32 (default bf16, AutoModel torch_dtype: bf16)");
  cmd->add_flag("--defer-fsdp-grad-sync", o.defer_fsdp_grad_sync,
                "AutoModel defer_fsdp_grad_sync: true (unsharded fp32 grads kept across micro-batches)");
  cmd->add_option("--headroom", o.headroom, "fraction of GPU memory kept free (0..0.9)")->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--hwdb", o.hwdb, "hardware database directory (default: the embedded hwdb/)");
}

namespace {

int64_t Count(long long v, const char* flag, long long max) {
  if (v < 1 || v > max) {
    throw InputError({"<command line>", 0, 0}, flag,
                     "expected an integer in [1, " + std::to_string(max) + "], found " + std::to_string(v));
  }
  return v;
}

Layout LayoutFromFlags(const ExplainOptions& o, int64_t gpus) {
  Layout l;
  l.strategy = o.strategy == "ddp" ? Strategy::kDdp : o.strategy == "megatron_fsdp" ? Strategy::kMegatronFsdp
                                                                                    : Strategy::kFsdp2;
  l.tp = Count(o.tp, "--tp", 1 << 20);
  l.pp = Count(o.pp, "--pp", 1 << 20);
  l.cp = Count(o.cp, "--cp", 1 << 20);
  l.ep = Count(o.ep, "--ep", 1 << 20);
  l.dp_replicate = Count(o.dp_replicate, "--dp-replicate", 1 << 20);
  l.local_batch_size = Count(o.local_batch, "--local-batch", 1 << 20);
  l.pp_microbatch_size = Count(o.pp_microbatch, "--pp-microbatch", 1 << 20);
  // Not given: null (0 in the layout). 0 typed is refused: AutoModel takes null or a positive count.
  l.layers_per_stage = o.layers_per_stage == kNotGiven ? 0 : Count(o.layers_per_stage, "--layers-per-stage", 1 << 20);
  l.pp_schedule = o.pp_schedule == "interleaved1f1b" ? PpSchedule::kInterleaved1F1B : PpSchedule::k1F1B;
  l.sequence_parallel = o.sequence_parallel;
  l.recompute = o.recompute == "full" ? Recompute::kFull : o.recompute == "selective" ? Recompute::kSelective
                                                                                      : Recompute::kNone;
  const int64_t model_ranks = l.tp * l.cp * l.pp;
  l.dp = gpus % model_ranks == 0 ? gpus / model_ranks : 0;  // as AutoModel infers dp_size
  return l;
}

std::string Pct(double part, double whole) { return whole > 0 ? recipe::Fixed(100.0 * part / whole, 1) + "%" : "-"; }

struct Term {
  const char* name;
  double MemoryBreakdown::*field;
};
const Term kTerms[] = {
    {"weights", &MemoryBreakdown::weights},         {"gradients", &MemoryBreakdown::gradients},
    {"optimizer state", &MemoryBreakdown::optimizer}, {"activations", &MemoryBreakdown::activations},
    {"logits + loss", &MemoryBreakdown::logits},    {"FSDP / optimizer buffers", &MemoryBreakdown::buffers},
    {"cuBLAS workspace", &MemoryBreakdown::workspace}, {"CUDA context + NCCL", &MemoryBreakdown::overhead},
};

bool SameMemory(const MemoryBreakdown& a, const MemoryBreakdown& b) {
  for (const Term& t : kTerms) {
    if (std::abs(a.*t.field - b.*t.field) > 0.5 * 1048576.0) return false;
  }
  return true;
}

void PrintMemory(const std::vector<MemoryBreakdown>& ranks, const Cost& c, const char* profile) {
  // Columns: every PP stage whose memory differs from the previous one shown.
  std::vector<size_t> cols = {0};
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (!SameMemory(ranks[r], ranks[cols.back()])) cols.push_back(r);
  }
  std::printf("memory per GPU (%s profile; GiB and share of the total):\n  %-26s", profile, "term");
  for (size_t r : cols) {
    const std::string head = ranks.size() > 1 ? "stage " + std::to_string(r) : "GiB";
    std::printf(" %10s %6s", head.c_str(), "share");
  }
  std::printf("\n");
  for (const Term& t : kTerms) {
    std::printf("  %-26s", t.name);
    for (size_t r : cols) {
      const MemoryBreakdown& m = ranks[r];
      std::printf(" %10s %6s", recipe::Fixed(recipe::GiB(m.*t.field), 2).c_str(), Pct(m.*t.field, m.Total()).c_str());
    }
    std::printf("\n");
  }
  std::printf("  %-26s", "total");
  for (size_t r : cols) std::printf(" %10s %6s", recipe::Fixed(recipe::GiB(ranks[r].Total()), 2).c_str(), "100%");
  std::printf("\n  %-26s", "peak moment");
  for (size_t r : cols) std::printf(" %17s", ranks[r].phase);
  std::printf("\n");
  if (ranks.size() > 1 && cols.size() < ranks.size()) std::printf("  (stages not shown equal the stage to their left)\n");
  std::printf("  most loaded GPU: %s GiB of %s GiB usable (the rest is headroom for the caching allocator's reserve)\n",
              recipe::Fixed(recipe::GiB(c.memory.Total()), 2).c_str(), recipe::Fixed(recipe::GiB(c.capacity_bytes), 2).c_str());
}

void PrintTime(const Cost& c) {
  const TimeBreakdown& t = c.time;
  const double step = t.Step();
  const std::pair<const char*, double> rows[] = {
      {"compute", t.compute},   {"TP communication", t.tp_comm}, {"CP communication", t.cp_comm},
      {"DP communication", t.dp_comm}, {"EP communication", t.ep_comm}, {"PP communication", t.pp_comm},
      {"pipeline bubble", t.bubble},   {"optimizer step", t.optimizer}, {"host-bound (CPU)", t.host},
  };
  std::printf("time per step (slowest rank; communication = exposed part):\n");
  for (const auto& [name, v] : rows) std::printf("  %-26s %10s s %6s\n", name, recipe::Fixed(v, 4).c_str(), Pct(v, step).c_str());
  std::printf("  %-26s %10s s   100%%\n", "step", recipe::Fixed(step, 4).c_str());
  std::printf("  %s tokens/s per GPU, %s model TFLOP/s per GPU, MFU %s\n", recipe::Fixed(c.tokens_per_s_per_gpu, 0).c_str(),
              recipe::Fixed(c.model_tflops_per_gpu, 1).c_str(), Pct(c.mfu, 1.0).c_str());
}

void PrintMegatronCompute(const MegatronComputeSplit& c, double compute) {
  std::printf("compute of the slowest rank (Megatron-Core time model, the system's fitted constants):\n");
  const std::pair<const char*, double> rows[] = {
      {"GEMMs", c.gemm}, {"attention core", c.attention}, {"HBM-bound kernels", c.memory_bound},
      {"kernel launches", c.kernels}};
  for (const auto& [name, v] : rows) {
    std::printf("  %-26s %10s s %6s\n", name, recipe::Fixed(v, 4).c_str(), Pct(v, compute).c_str());
  }
}

// The decoder layers per pipeline rank the cost model prices, and whose split they are.
void PrintPipelineSplit(const ModelSpec& model, const Layout& l) {
  const std::vector<int64_t> layers = DecoderLayersPerRank(model.num_layers, l);
  std::cout << "pipeline split: decoder layers per rank";
  for (int64_t n : layers) std::cout << " " << n;
  const PpLayerLayout* given = PricedPpLayout(model.num_layers, l);
  const PpLayerLayout* g = l.pp_layout.get();
  if (given != nullptr) {
    std::cout << " (as pipeline_model_parallel_layout places them; embedding on rank " << given->StageOf('E') % l.pp
              << ", loss on rank " << given->StageOf('L') % l.pp << ")";
  } else if (PpLayoutFits(model.num_layers, l)) {
    std::cout << " (as pipeline_model_parallel_layout places them: meshplan's own split)";
  } else if (g != nullptr) {
    std::cout << " (meshplan's even split: pipeline_model_parallel_layout does not fit the layout, see the rules)";
  } else if (l.framework == Framework::kMegatronBridge && l.pp > 1 && l.pp_split == MbPpSplit::kAccountEmbeddingLoss) {
    std::cout << " (Megatron-Core's split with account_for_embedding/loss_in_pipeline_split: (L + 2) / stages each, "
                 "one fewer on the first and the last)";
  } else if (l.framework == Framework::kMegatronBridge && l.pp > 1) {
    std::cout << " (Megatron-Core's even split)";
  } else {
    std::cout << " (meshplan's split)";
  }
  if (const int64_t mtp = MtpLayers(l); mtp > 0) {
    const int64_t rank = std::max<int64_t>(0, SplitStages(model.num_layers, l).mtp_rank);
    std::cout << "; " << mtp << " MTP layer" << (mtp > 1 ? "s" : "") << " (model.mtp_num_layers) on rank " << rank;
  }
  std::cout << "\n";
}

}  // namespace

int RunExplain(const ExplainOptions& o) {
  TrainSetup setup;
  setup.num_gpus = Count(o.gpus, "--gpus", 1LL << 20);
  setup.precision = o.precision == "fp8" ? Precision::kFp8 : Precision::kBf16;
  setup.headroom = CheckedReal(o.headroom, "--headroom", 0.0, 0.9);
  const ModelSpec model = LoadModel(o.model);
  Layout l;
  bool megatron = false;
  std::optional<ParsedRecipe> parsed;  // with --recipe
  if (!o.recipe.empty()) {
    const std::string text = data::ReadFileOrThrow(o.recipe);
    RefusePlanOutput(text, o.recipe);
    if (const size_t n = SplitDocuments(text).size(); n > 1) {
      throw InputError({o.recipe, 0, 0}, "--recipe",
                       "expected one recipe, found " + std::to_string(n) +
                           " YAML documents (plan --out writes one per recipe): explain one at a time, or check them all "
                           "with meshplan check");
    }
    megatron = IsMegatronRecipe(text, o.recipe);
    parsed = megatron ? ParseMegatronRecipe(text, o.recipe, setup.num_gpus, &model)
                      : ParseAutoModelRecipe(text, o.recipe, setup.num_gpus);
    l = parsed->layout;
    if (o.precision.empty() && parsed->precision_set) setup.precision = parsed->precision;
    setup.global_batch = o.global_batch > 0 ? o.global_batch : parsed->global_batch;
    if (setup.global_batch <= 0) {
      throw InputError({"<command line>", 0, 0}, "--global-batch",
                       std::string("required: the recipe sets no ") +
                           (megatron ? "train.global_batch_size" : "step_scheduler.global_batch_size"));
    }
  } else {
    if (o.global_batch == 0) throw InputError({"<command line>", 0, 0}, "--global-batch", "required without --recipe");
    setup.global_batch = o.global_batch;
    l = LayoutFromFlags(o, setup.num_gpus);
  }
  setup.global_batch = Count(setup.global_batch, "--global-batch", 1LL << 30);
  // --seq-len overrides the recipe's sequence length (said below when they differ).
  const int64_t recipe_seq_len = parsed ? parsed->seq_len : 0;
  if (o.seq_len == 0 && recipe_seq_len <= 0) {
    throw InputError({"<command line>", 0, 0}, "--seq-len",
                     o.recipe.empty() ? "--seq-len is required"
                                      : std::string("required: the recipe does not set ") +
                                            (megatron ? "model.seq_length" : "dataset.seq_len"));
  }
  setup.seq_len = o.seq_len != 0 ? Count(o.seq_len, "--seq-len", 1LL << 24) : recipe_seq_len;
  const SystemSpec system = LoadSystem(o.system, o.hwdb);
  CheckGpuCount(system, setup.num_gpus);
  const std::string profile = !o.memory_profile.empty() ? o.memory_profile : megatron ? "megatron-bridge" : "pytorch";
  MemoryOptions mo;
  mo.profile = profile == "pytorch" ? MemoryProfile::kPyTorch : MemoryProfile::kMegatron;
  mo.megatron_bridge_estimator = profile == "megatron-bridge";
  mo.fp32_params = o.fp32_params;
  mo.defer_fsdp_grad_sync = o.defer_fsdp_grad_sync;

  RefuseOtherFrameworkVersion(o.given, megatron);
  // AutoModel's memory options mean nothing for a Megatron-Bridge layout.
  if (megatron && (o.fp32_params || o.defer_fsdp_grad_sync)) {
    throw InputError({"<command line>", 0, 0}, o.fp32_params ? "--fp32-params" : "--defer-fsdp-grad-sync",
                     "expected only with an AutoModel layout, found a Megatron-Bridge one");
  }
  const Framework framework = megatron ? Framework::kMegatronBridge : Framework::kAutoModel;
  std::cout << "meshplan explain: " << (megatron ? "Megatron-Bridge" : "AutoModel") << " layout, " << model.name
            << " on " << setup.num_gpus << " GPUs of " << system.name << " (" << system.gpu.display_name
            << "), seq_len " << setup.seq_len << ", global batch " << setup.global_batch << ", "
            << PrecisionName(setup.precision) << "\n  layout: " << Describe(l) << "\n";
  if (parsed) PrintRecipeNotes(*parsed);
  if (megatron) {
    if (const std::string w = UnfittedMegatronWarning(system); !w.empty()) std::cout << "  " << w << "\n";
  }
  if (recipe_seq_len > 0 && recipe_seq_len != setup.seq_len) {
    std::cout << "  note: --seq-len " << setup.seq_len << " replaces the recipe's " << recipe_seq_len << "\n";
  }
  if (parsed && parsed->global_batch > 0 && parsed->global_batch != setup.global_batch) {
    std::cout << "  note: --global-batch " << setup.global_batch << " replaces the recipe's " << parsed->global_batch
              << "\n";
  }
  if (const std::string w = SeqLenWarning(model, setup.seq_len); !w.empty()) std::cout << "warning: " << w << "\n";
  if (!parsed && l.pp <= 1 && o.pp_schedule_given) {
    std::cout << "  note: --pp-schedule " << o.pp_schedule << " has no effect without pipeline parallelism (--pp 1)\n";
  }
  const AutoModelVersion version = o.automodel_version == "0.4" ? AutoModelVersion::kV04 : AutoModelVersion::kV05;
  const MBridgeVersion mb_version = o.mbridge_version == "core0.15" ? MBridgeVersion::kCore015 : MBridgeVersion::kMain;
  RuleContext ctx{model, setup, l, version, mb_version, &system};
  const std::vector<const Rule*> failures = AllFailures(ctx);
  if (failures.empty()) {
    std::cout << "rules: valid (passes all " << RulesFor(framework).size() << " "
              << (megatron ? "Megatron-Bridge" : "AutoModel") << " rules)\n";
  } else {
    std::cout << "rules: INVALID, " << failures.size() << " rule" << (failures.size() > 1 ? "s" : "") << " broken\n";
    for (const Rule* r : failures) std::cout << "  " << r->name << ": " << r->explain(ctx) << "\n    source: " << r->source << "\n";
  }
  if (megatron && l.pp > 1) PrintPipelineSplit(model, l);
  const bool scorable = l.dp >= 1 && l.tp * l.pp * l.cp * l.dp == setup.num_gpus && l.micro_batch() >= 1 &&
                        l.dp_replicate >= 1 && l.dp % l.dp_replicate == 0 && SplitStages(model.num_layers, l).num_stages > 0 &&
                        l.GradAccumSteps(setup) >= 1;
  if (!scorable) {
    std::cout << "memory and time: not predicted (the layout's sizes do not divide the GPU count or the batch)\n";
    return 1;
  }
  const CostModel cm(model, system, setup, mo);
  const Cost c = Score(cm, l);
  std::cout << "\n";
  PrintMemory(cm.RankMemories(ToCostView(l, cm.model(), cm.setup())), c, profile.c_str());
  std::cout << "\n";
  PrintTime(c);
  if (megatron) {
    std::cout << "\n";
    PrintMegatronCompute(SplitMegatronCompute(model, system, setup, l), c.time.compute);
  }
  const double gap = recipe::GiB(c.capacity_bytes - c.memory.Total());
  std::cout << "\n" << (c.fits ? "fits: " + recipe::Fixed(gap, 2) + " GiB to spare per GPU"
                               : "does NOT fit: " + recipe::Fixed(-gap, 2) + " GiB over the usable memory");
  // Priced as written, but the framework would not start it: said beside the verdict.
  if (!failures.empty()) {
    std::cout << " (as priced; the framework refuses this layout: " << failures.size() << " rule"
              << (failures.size() > 1 ? "s" : "") << " broken, above)";
  }
  std::cout << "\n";
  return failures.empty() && c.fits ? 0 : 1;
}

}  // namespace meshplan::cli
