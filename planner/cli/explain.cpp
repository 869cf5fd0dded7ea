// `meshplan explain`: its options, the request they make (ExplainLayout, planner/commands/
// explain.cpp) and the report rendered: rules, memory per GPU term by term (per PP stage where
// stages differ), step time term by term, as text or JSON. Exit 0 valid and fits, 1 breaks a
// rule or does not fit, 2 bad input.
#include <iostream>
#include <tuple>

#include "cli/commands.hpp"
#include "cli/list_option.hpp"
#include "render/json.hpp"
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
  cmd->add_option("--seq-len", o.seq_len, "tokens per sequence (default: the recipe's, if it sets one)")
      ->check(CLI::Range(int64_t{1}, (int64_t{1} << 24)));
  cmd->add_option("--global-batch", o.global_batch, "sequences per optimizer step (default: the recipe's)")
      ->check(CLI::Range(int64_t{1}, (int64_t{1} << 30)));
  cmd->add_option("--format", o.format, "stdout format")->check(CLI::IsMember({"table", "json"}));
  CLI::Option* recipe = cmd->add_option(
      "--recipe", o.in.recipe, "AutoModel recipe or Megatron-Bridge override YAML giving the layout (framework detected from its keys)");
  CLI::Option* framework =
      cmd->add_option("--framework", o.framework,
                      "framework of the layout flags: automodel (its distributed: keys) or megatron-bridge (its override "
                      "keys, read as an override file of them; default: automodel)")
          ->check(CLI::IsMember({"automodel", "megatron-bridge"}));
  recipe->excludes(framework);
  std::vector<CLI::Option*> layout = {
      cmd->add_option("--strategy", o.strategy, "AutoModel: fsdp2, megatron_fsdp or ddp")
          ->check(CLI::IsMember({"fsdp2", "megatron_fsdp", "ddp"})),
      cmd->add_option("--tp", o.in.keys.tp, "tensor-parallel size (Megatron-Bridge: model.tensor_model_parallel_size)"),
      cmd->add_option("--pp", o.in.keys.pp, "pipeline-parallel size (Megatron-Bridge: model.pipeline_model_parallel_size)"),
      cmd->add_option("--cp", o.in.keys.cp, "context-parallel size (Megatron-Bridge: model.context_parallel_size)"),
      cmd->add_option("--ep", o.in.keys.ep, "expert-parallel size (Megatron-Bridge: model.expert_model_parallel_size)"),
      cmd->add_option("--dp-replicate", o.in.keys.dp_replicate, "AutoModel: HSDP replicas (fsdp2)"),
      cmd->add_option("--local-batch", o.in.keys.local_batch, "AutoModel: step_scheduler.local_batch_size"),
      cmd->add_option("--pp-microbatch", o.in.keys.pp_microbatch, "AutoModel: pipeline.pp_microbatch_size"),
      cmd->add_option("--pp-schedule", o.pp_schedule, "AutoModel: 1f1b or interleaved1f1b")
          ->check(CLI::IsMember({"1f1b", "interleaved1f1b"}))
          ->each([&o](const std::string&) { o.in.keys.pp_schedule_given = true; }),
      cmd->add_option("--layers-per-stage", o.layers_per_stage, "AutoModel: pipeline.layers_per_stage (default null)"),
      cmd->add_flag("--sequence-parallel", o.in.keys.sequence_parallel,
                    "sequence_parallel: true (Megatron-Bridge: model.sequence_parallel)"),
      cmd->add_option("--recompute", o.recompute,
                      "activation checkpointing: none, selective or full (Megatron-Bridge: model.recompute_granularity)")
          ->check(CLI::IsMember({"none", "selective", "full"})),
      // Megatron-Bridge override keys (written only when given: the others keep the --mb-recipe
      // function's values, else Megatron-Core's defaults, as in an override file).
      cmd->add_option("--vpp", o.vpp, "Megatron-Bridge: model.virtual_pipeline_model_parallel_size (default null)")->type_name("INT"),
      cmd->add_option("--etp", o.etp, "Megatron-Bridge: model.expert_tensor_parallel_size (default null: --tp)")->type_name("INT"),
      cmd->add_option("--mbs", o.mbs, "Megatron-Bridge: train.micro_batch_size (default: the --mb-recipe function's, else Megatron-Bridge's common one; explain names it)")->type_name("INT"),
      cmd->add_option("--dp-type", o.dp_type,
                      "Megatron-Bridge data parallelism: ddp, ddp+distopt (ddp.use_distributed_optimizer), megatron_fsdp "
                      "(ddp/dist.use_megatron_fsdp) or torch_fsdp2 (dist.use_torch_fsdp2); default: not set (ddp)")
          ->check(CLI::IsMember({"ddp", "ddp+distopt", "megatron_fsdp", "torch_fsdp2"})),
      cmd->add_option("--fsdp-sharding", o.fsdp_sharding,
                      "Megatron-Bridge: ddp.data_parallel_sharding_strategy (no_shard, optim, optim_grads, "
                      "optim_grads_params; default: not set)"),
      AddListOption(cmd, "--recompute-modules", o.recompute_modules,
                    "Megatron-Bridge: model.recompute_modules under selective recompute (default: [core_attn])",
                    "a comma-separated list of core_attn, mlp, moe_act, layernorm, mla_up_proj, shared_experts, moe"),
      cmd->add_option("--recompute-method", o.recompute_method, "Megatron-Bridge: model.recompute_method (uniform or block; default null)")
          ->check(CLI::IsMember({"uniform", "block"})),
      cmd->add_option("--recompute-num-layers", o.recompute_num_layers, "Megatron-Bridge: model.recompute_num_layers (default null)")->type_name("INT"),
      cmd->add_option("--dispatcher", o.dispatcher,
                      "Megatron-Bridge: model.moe_token_dispatcher_type (allgather, alltoall or flex; default allgather)")
          ->check(CLI::IsMember({"allgather", "alltoall", "flex"})),
      cmd->add_option("--flex-backend", o.flex_backend, "Megatron-Bridge: model.moe_flex_dispatcher_backend (deepep or hybridep; needs --dispatcher flex; default: not set)")
          ->check(CLI::IsMember({"deepep", "hybridep"})),
      cmd->add_option("--cp-comm-type", o.cp_comm_type,
                      "Megatron-Bridge: model.cp_comm_type (p2p, all_gather, a2a or a2a+p2p; default: the recipe function's, else null = p2p)")
          ->check(CLI::IsMember({"p2p", "all_gather", "a2a", "a2a+p2p"})),
      cmd->add_option("--pp-layout", o.pp_layout,
                      "Megatron-Bridge: model.pipeline_model_parallel_layout as a string (\"Et*4|t*4|t*4L\"; default null)"),
      cmd->add_flag("--account-for-embedding-loss", o.account_embedding_loss,
                    "Megatron-Bridge: model.account_for_embedding_in_pipeline_split and _loss_ true"),
      cmd->add_option("--mtp-layers", o.mtp_layers, "Megatron-Bridge: model.mtp_num_layers (default: the model's)")->type_name("INT"),
      cmd->add_option("--set", o.sets,
                      "Megatron-Bridge: any other override KEY=VALUE (dotted key, YAML value; repeatable), e.g. "
                      "--set comm_overlap.tp_comm_overlap=true")
          ->allow_extra_args(false),
  };
  for (CLI::Option* opt : layout) {
    recipe->excludes(opt);
    const std::string name = opt->get_name();
    opt->each([&o, name](const std::string&) { o.given.insert(name); });
  }
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
  cmd->add_option("--defer-fsdp-grad-sync", o.defer_fsdp_grad_sync,
                  "AutoModel FSDP2 with gradient accumulation: distributed.defer_fsdp_grad_sync, true keeps unsharded "
                  "fp32 gradients across micro-batches (default: the recipe's, else true, AutoModel's own default: "
                  "FSDP2Config in nemo_automodel/components/distributed/config.py; plan's recipes write false)")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->add_option("--headroom", o.in.setup.headroom, "fraction of GPU memory kept free (0..0.9; default: the framework's, 0.02 for Megatron-Bridge, 0.10 for AutoModel: docs/memory-model.md)")->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--hwdb", o.in.setup.hwdb, "hardware database directory (default: the embedded hwdb/)");
  cmd->add_option("--mb-recipe", o.in.setup.mb_recipe,
                  "Megatron-Bridge: the recipe function the overrides are for (its key paths and its own values of "
                  "the keys the file or the flags leave unset; default: the file's '# recipe function:' header, none "
                  "for flags)");
}

namespace {

// The Megatron-Bridge layout flags `o` was given (the commands layer makes the override keys).
MbLayoutFlags MegatronFlags(const ExplainOptions& o) {
  MbLayoutFlags f;
  auto given = [&o](const char* flag) { return o.given.count(flag) > 0; };
  const LayoutKeys& k = o.in.keys;
  for (const auto& [flag, from, into] :
       {std::tuple{"--tp", &k.tp, &f.tp}, {"--pp", &k.pp, &f.pp}, {"--cp", &k.cp, &f.cp}, {"--ep", &k.ep, &f.ep}}) {
    if (given(flag)) *into = *from;
  }
  using Text = std::string ExplainOptions::*;
  using Into = std::optional<std::string> MbLayoutFlags::*;
  for (const auto& [flag, from, into] : std::initializer_list<std::tuple<const char*, Text, Into>>{
           {"--vpp", &ExplainOptions::vpp, &MbLayoutFlags::vpp},
           {"--etp", &ExplainOptions::etp, &MbLayoutFlags::etp},
           {"--mbs", &ExplainOptions::mbs, &MbLayoutFlags::mbs},
           {"--recompute", &ExplainOptions::recompute, &MbLayoutFlags::recompute},
           {"--recompute-method", &ExplainOptions::recompute_method, &MbLayoutFlags::recompute_method},
           {"--recompute-num-layers", &ExplainOptions::recompute_num_layers, &MbLayoutFlags::recompute_num_layers},
           {"--dp-type", &ExplainOptions::dp_type, &MbLayoutFlags::dp_type},
           {"--fsdp-sharding", &ExplainOptions::fsdp_sharding, &MbLayoutFlags::fsdp_sharding},
           {"--dispatcher", &ExplainOptions::dispatcher, &MbLayoutFlags::dispatcher},
           {"--flex-backend", &ExplainOptions::flex_backend, &MbLayoutFlags::flex_backend},
           {"--cp-comm-type", &ExplainOptions::cp_comm_type, &MbLayoutFlags::cp_comm_type},
           {"--pp-layout", &ExplainOptions::pp_layout, &MbLayoutFlags::pp_layout},
           {"--mtp-layers", &ExplainOptions::mtp_layers, &MbLayoutFlags::mtp_layers}}) {
    if (given(flag)) f.*into = o.*from;
  }
  if (given("--sequence-parallel")) f.sequence_parallel = k.sequence_parallel;
  if (given("--recompute-modules")) f.recompute_modules = o.recompute_modules;
  if (given("--account-for-embedding-loss")) f.account_for_embedding_loss = o.account_embedding_loss;
  f.sets = o.sets;
  return f;
}

}  // namespace

int RunExplain(const ExplainOptions& o) {
  ExplainInput in = o.in;
  if (o.seq_len != 0) in.setup.seq_len = o.seq_len;
  if (o.global_batch != 0) in.setup.global_batch = o.global_batch;
  if (!o.precision.empty()) in.setup.precision = o.precision == "fp8" ? Precision::kFp8 : Precision::kBf16;
  in.setup.releases = AskedReleases(o.given, o.automodel_version, o.mbridge_version);
  if (!o.framework.empty()) in.setup.framework = ParseFramework(o.framework);
  if (!o.defer_fsdp_grad_sync.empty()) in.defer_fsdp_grad_sync = o.defer_fsdp_grad_sync == "true";
  // --mb-recipe names the recipe function the layout flags are overrides for: without --recipe
  // and --framework it is that framework's layout.
  if (!in.setup.mb_recipe.empty() && in.recipe.empty()) {
    const FrameworkOps* with = nullptr;
    for (const FrameworkOps* f : Frameworks()) {
      if (f->recipe_function_option) with = f;
    }
    if (!in.setup.framework) {
      in.setup.framework = ParseFramework(with->name);
    } else if (!FrameworkOf(*in.setup.framework).recipe_function_option) {
      throw InputError({"<command line>", 0, 0}, "--mb-recipe",
                       std::string("names ") + with->a_layout + " recipe function; expected --framework " + with->name +
                           " (or no --framework) with it, found --framework " + o.framework);
    }
  }
  const FrameworkOps& fw = FrameworkOf(in.setup.framework.value_or(kDefaultFramework));
  // Each framework's own layout flags: the other's are refused, naming the framework they are for.
  RefuseOtherFrameworkFlags(fw, o.given);
  if (fw.override_key_flags) {
    in.mb_keys = MbFlagKeys(MegatronFlags(o));
  } else {
    LayoutKeys& k = in.keys;
    k.strategy = ParseStrategy(o.strategy);
    if (o.layers_per_stage != kNotGiven) k.layers_per_stage = o.layers_per_stage;
    k.pp_schedule = o.pp_schedule == "interleaved1f1b" ? PpSchedule::kInterleaved1F1B : PpSchedule::k1F1B;
    k.recompute = o.recompute == "full" ? Recompute::kFull : o.recompute == "selective" ? Recompute::kSelective
                                                                                        : Recompute::kNone;
  }
  const ExplainReport rep = ExplainLayout(in);
  if (o.format == "json") {
    std::cout << JsonText(render::ExplanationJson(rep));
  } else {
    render::PrintExplanation(std::cout, rep);
  }
  return rep.Status();
}

}  // namespace meshplan::cli
