// `meshplan explain`: its options, the request they make (ExplainLayout, planner/commands/
// explain.cpp) and the report rendered: rules, memory per GPU term by term (per PP stage where
// stages differ), step time term by term. Exit 0 valid and fits, 1 breaks a rule or does not
// fit, 2 bad input.
#include <iostream>

#include "cli/commands.hpp"
#include "render/text.hpp"

namespace meshplan::cli {

void AddExplainCommand(CLI::App& app, ExplainOptions& o) {
  CLI::App* cmd = app.add_subcommand("explain", "explain one layout: rules, memory and step time term by term");
  cmd->add_option("--model", o.in.setup.model, "preset name or path to config.json / model YAML")->required();
  cmd->add_flag("--generic-decoder", o.in.setup.generic_decoder,
                "plan a config of an unsupported architecture as a generic dense/MoE decoder from its standard "
                "fields (said as a warning in every output)");
  cmd->add_option("--system", o.in.setup.system, "system name or path to a system YAML")->required();
  cmd->add_option("--gpus", o.in.setup.gpus, "number of GPUs (world size)")->required();
  cmd->add_option("--seq-len", o.seq_len, "tokens per sequence (default: the recipe's, if it sets one)");
  cmd->add_option("--global-batch", o.global_batch, "sequences per optimizer step (default: the recipe's)");
  CLI::Option* recipe = cmd->add_option(
      "--recipe", o.in.recipe, "AutoModel recipe or Megatron-Bridge override YAML giving the layout (framework detected from its keys)");
  const std::vector<CLI::Option*> layout = {
      cmd->add_option("--strategy", o.strategy, "fsdp2, megatron_fsdp or ddp (default fsdp2)")
          ->check(CLI::IsMember({"fsdp2", "megatron_fsdp", "ddp"})),
      cmd->add_option("--tp", o.in.keys.tp, "tensor-parallel size"),
      cmd->add_option("--pp", o.in.keys.pp, "pipeline-parallel size"),
      cmd->add_option("--cp", o.in.keys.cp, "context-parallel size"),
      cmd->add_option("--ep", o.in.keys.ep, "expert-parallel size"),
      cmd->add_option("--dp-replicate", o.in.keys.dp_replicate, "HSDP replicas (fsdp2)"),
      cmd->add_option("--local-batch", o.in.keys.local_batch, "step_scheduler.local_batch_size"),
      cmd->add_option("--pp-microbatch", o.in.keys.pp_microbatch, "pipeline.pp_microbatch_size"),
      cmd->add_option("--pp-schedule", o.pp_schedule, "1f1b or interleaved1f1b")
          ->check(CLI::IsMember({"1f1b", "interleaved1f1b"}))
          ->each([&o](const std::string&) { o.in.keys.pp_schedule_given = true; }),
      cmd->add_option("--layers-per-stage", o.layers_per_stage, "pipeline.layers_per_stage (default null)"),
      cmd->add_flag("--sequence-parallel", o.in.keys.sequence_parallel, "sequence_parallel: true"),
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
  cmd->add_option("--memory-profile", o.in.memory_profile,
                  "pytorch (AutoModel, measured), megatron (Megatron-LM estimate) or megatron-bridge (its variant); "
                  "default: pytorch for AutoModel, megatron-bridge for Megatron-Bridge recipes")
      ->check(CLI::IsMember({"pytorch", "megatron", "megatron-bridge"}));
  cmd->add_flag("--fp32-params", o.in.fp32_params, "model loaded in fp32 (default bf16, AutoModel torch_dtype: bf16)");
  cmd->add_option("--adam-impl", o.in.adam_impl,
                  "torch Adam(W) implementation: foreach (torch's default: a state-sized temporary at the step), "
                  "fused (optimizer fused: true) or forloop (foreach: false); default foreach")
      ->check(CLI::IsMember({"foreach", "fused", "forloop"}));
  cmd->add_flag("--defer-fsdp-grad-sync", o.in.defer_fsdp_grad_sync,
                "AutoModel defer_fsdp_grad_sync: true (unsharded fp32 grads kept across micro-batches)");
  cmd->add_option("--headroom", o.in.setup.headroom, "fraction of GPU memory kept free (0..0.9)")->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--hwdb", o.in.setup.hwdb, "hardware database directory (default: the embedded hwdb/)");
  cmd->add_option("--mb-recipe", o.in.setup.mb_recipe,
                  "Megatron-Bridge: the recipe function the overrides are for (its key paths and its own values of "
                  "the keys the file leaves unset; default: the file's '# recipe function:' header)");
}

int RunExplain(const ExplainOptions& o) {
  ExplainInput in = o.in;
  if (o.seq_len != 0) in.setup.seq_len = o.seq_len;
  if (o.global_batch != 0) in.setup.global_batch = o.global_batch;
  if (!o.precision.empty()) in.setup.precision = o.precision == "fp8" ? Precision::kFp8 : Precision::kBf16;
  in.setup.releases = AskedReleases(o.given, o.automodel_version, o.mbridge_version);
  LayoutKeys& k = in.keys;
  k.strategy = ParseStrategy(o.strategy);
  if (o.layers_per_stage != kNotGiven) k.layers_per_stage = o.layers_per_stage;
  k.pp_schedule = o.pp_schedule == "interleaved1f1b" ? PpSchedule::kInterleaved1F1B : PpSchedule::k1F1B;
  k.recompute = o.recompute == "full" ? Recompute::kFull : o.recompute == "selective" ? Recompute::kSelective
                                                                                      : Recompute::kNone;
  const ExplainReport rep = ExplainLayout(in);
  render::PrintExplanation(std::cout, rep);
  return rep.Status();
}

}  // namespace meshplan::cli
