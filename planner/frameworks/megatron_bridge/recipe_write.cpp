// Megatron-Bridge recipes: ConfigContainer YAML overrides, the same as dotted command-line
// overrides (model.tensor_model_parallel_size=4), and the launch environment.
// Keys: megatron.md 1.2-1.6 (MB training/config.py, comm_overlap.py; MCore configs).
#include <sstream>

#include "meshplan/recipe.hpp"
#include "recipe/format.hpp"
#include "frameworks/megatron_bridge/perf_settings.hpp"
#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "frameworks/megatron_bridge/space.hpp"

namespace meshplan {

using recipe::Fixed;
using recipe::GiB;
using recipe::OneLine;

namespace {

const char* Bool(bool b) { return b ? "true" : "false"; }
const char* TriValue(Tri t) { return t == Tri::kTrue ? "true" : "false"; }

// model.cuda_graph_scope as a Hydra list of Megatron-Core CudaGraphScope names.
std::string CudaGraphScopeValue(uint32_t bits) {
  std::string v;
  for (const recipe::GraphScopeName& s : recipe::CudaGraphScopeNames()) {
    if (bits & s.bit) v += (v.empty() ? "" : ",") + std::string(s.name);
  }
  return "[" + v + "]";
}

}  // namespace

const char* MegatronRecomputeGranularity(Recompute r) {
  return r == Recompute::kFull ? "full" : r == Recompute::kSelective ? "selective" : "null";
}

std::vector<std::string> RecipeFunctionNotes(const Layout& l, const PlanRequest& req) {
  std::vector<std::string> notes;
  const megatron_bridge::RecipeFunction* fn = megatron_bridge::RecipeFunctionOf(req);
  if (fn == nullptr) {
    const std::string name = !req.mb_recipe_function.empty() ? req.mb_recipe_function
                                                             : megatron_bridge::DefaultRecipeFunctionName(req.model.name);
    notes.push_back("recipe function: " + (name.empty() ? std::string("none for ") + OneLine(req.model.name) : OneLine(name)) +
                    ", not in recipes/megatron-bridge-recipe-functions.json: its own settings are not known, its "
                    "override paths are assumed flat (model.<key>)");
    return notes;
  }
  notes.push_back("recipe function: " + fn->name + " (its override paths and settings: recipes/megatron-bridge-recipe-functions.json)");
  if (!req.mb_runtime) megatron_bridge::RecipeRuntime(fn, req.system, &notes);
  const nlohmann::json& impl = fn->ModelValue("cuda_graph_impl");
  const bool recipe_graphs = impl.is_string() && (impl == "transformer_engine" || impl == "local");
  if (!req.mb_runtime && recipe_graphs && l.mb.cuda_graph == MbCudaGraph::kNone && l.recompute == Recompute::kFull) {
    notes.push_back(fn->name + "'s " + impl.get<std::string>() + " CUDA graphs are turned off: Megatron-Core allows full "
                    "recompute only with full-iteration graphs (transformer_config.py)");
  }
  return notes;
}

std::vector<std::pair<std::string, std::string>> MegatronOverrides(const Layout& l, const PlanRequest& req) {
  const MbSettings& s = l.mb;
  std::vector<std::pair<std::string, std::string>> o;
  auto add = [&](const std::string& k, const std::string& v) { o.emplace_back(k, v); };
  auto num = [](int64_t v) { return std::to_string(v); };
  add("model.tensor_model_parallel_size", num(l.tp));
  add("model.pipeline_model_parallel_size", num(l.pp));
  add("model.virtual_pipeline_model_parallel_size", l.vpp > 1 ? num(l.vpp) : "null");
  add("model.context_parallel_size", num(l.cp));
  add("model.expert_model_parallel_size", num(l.ep));
  add("model.expert_tensor_parallel_size", l.etp > 0 ? num(l.etp) : "null");
  add("model.sequence_parallel", Bool(l.sequence_parallel));
  if (l.pp > 1) add("model.pipeline_dtype", "bfloat16");
  // Both written, true or false: a recipe function's own true (Qwen3-235B-A22B, Llama 3.1 405B)
  // would otherwise split the layers otherwise than priced (transformer_config.py __post_init__).
  // A recipe's own layout as read (check's layouts), or meshplan's split written as one. A
  // recipe function with a layout builder gets every PP > 1 split written as a layout: Megatron-
  // Bridge's recipe_runner.py (sync_model_pipeline_layout) would otherwise replace the split priced
  // by the builder's own, or fail where the builder has no entry for the (PP, VP) pair. The
  // split written is the one priced (OwnPpLayoutString of the even or accounted split), and
  // Megatron-Core then takes no account_for_* (transformer_config.py: "cannot be set with other
  // pipeline layout arguments").
  std::string layout = PpLayoutValue(req.model.num_layers, l);
  const std::string function = !req.mb_recipe_function.empty() ? req.mb_recipe_function
                                                                : megatron_bridge::DefaultRecipeFunctionName(req.model.name);
  const bool builder_layout = l.pp > 1 && layout.empty() && !megatron_bridge::LayoutBuilderOf(function).empty();
  if (builder_layout) layout = OwnPpLayoutString(req.model.num_layers, l);
  const bool accounted = l.pp > 1 && l.pp_split == MbPpSplit::kAccountEmbeddingLoss && !builder_layout;
  add("model.account_for_embedding_in_pipeline_split", Bool(accounted));
  add("model.account_for_loss_in_pipeline_split", Bool(accounted));
  if (!layout.empty()) add("model.pipeline_model_parallel_layout", layout);
  // Megatron-Bridge's model provider sets mtp_num_layers from the checkpoint's config
  // (num_nextn_predict_layers); written out whenever the model has MTP layers, so that the
  // recipe says what was priced and matches its layout's m (null: none trained).
  if (req.model.mtp_num_layers > 0 || MtpLayers(l) > 0) {
    add("model.mtp_num_layers", MtpLayers(l) > 0 ? num(MtpLayers(l)) : "null");
  }
  // The attention's CP exchange priced, where it is not what the recipe function gives (its own
  // cp_comm_type, or None = p2p): a searched a2a, all_gather or a2a+p2p with its two levels.
  if (l.cp > 1) {
    const megatron_bridge::RecipeFunction* own_fn = megatron_bridge::RecipeFunctionOf(req);
    const MbRuntime own = megatron_bridge::RecipeRuntime(own_fn, req.system, nullptr);
    if (s.cp_comm != own.cp_comm) add("model.cp_comm_type", domain::CpCommValue(s.cp_comm));
    if (s.cp_comm == MbCpComm::kA2aP2p && s.hcp_levels == 2 && s.hcp_first > 0 &&
        (s.cp_comm != own.cp_comm || s.hcp_first != own.hcp_first)) {
      add("model.hierarchical_context_parallel_sizes", "[" + num(s.hcp_first) + "," + num(l.cp / s.hcp_first) + "]");
    }
  }
  if (s.use_torch_fsdp2) add("model.gradient_accumulation_fusion", "false");  // mb_fsdp2_no_grad_acc_fusion
  add("model.recompute_granularity", MegatronRecomputeGranularity(l.recompute));
  if (l.recompute == Recompute::kSelective) add("model.recompute_modules", RecomputeModulesValue(s.recompute_modules));
  if (l.recompute == Recompute::kFull) {
    add("model.recompute_method", s.recompute_method == MbRecomputeMethod::kBlock ? "block" : "uniform");
    add("model.recompute_num_layers", num(s.recompute_num_layers));
  }
  // The dispatcher priced, for every MoE model (a recipe function's own flex would otherwise
  // stay at EP 1, or on a GPU its backend is not built for).
  if (req.model.is_moe() || l.ep > 1) {
    add("model.moe_token_dispatcher_type", s.token_dispatcher == MbDispatcher::kFlex       ? "flex"
                                           : s.token_dispatcher == MbDispatcher::kAlltoall ? "alltoall"
                                                                                           : "allgather");
    if (s.token_dispatcher == MbDispatcher::kFlex) {
      add("model.moe_flex_dispatcher_backend", s.flex_backend == MbFlexBackend::kHybridEP ? "hybridep" : "deepep");
    }
  }
  // The loss kernel priced: TE's fused cross-entropy where the recipe function sets it (its
  // logits held in bf16; cost_view.cpp loss_bytes_per_logit), written so that a recipe read back
  // without its function (Megatron-Core's defaults: fusion on, impl native) prices the same.
  if (s.te_cross_entropy) {
    add("model.cross_entropy_loss_fusion", "true");
    add("model.cross_entropy_fusion_impl", "te");
  }
  // CUDA graphs as priced (the recipe function's, off where the recompute needs it:
  // FitCudaGraphsToRecompute).
  add("model.cuda_graph_impl", s.cuda_graph == MbCudaGraph::kTransformerEngine ? "transformer_engine"
                               : s.cuda_graph == MbCudaGraph::kFullIteration   ? "full_iteration"
                                                                               : "none");
  if (s.cuda_graph == MbCudaGraph::kTransformerEngine && s.cuda_graph_scope != 0) {
    add("model.cuda_graph_scope", CudaGraphScopeValue(s.cuda_graph_scope));
  }
  add("model.seq_length", num(req.setup.seq_len));
  add("train.global_batch_size", num(req.setup.global_batch));
  add("train.micro_batch_size", num(l.micro_batch()));
  // The recipe functions set the dataset's sequence length apart from the model's (Llama 3.1
  // 8B: 8192) and ConfigContainer.validate asserts they are equal: both are written.
  add("dataset.seq_length", num(req.setup.seq_len));
  add("ddp.use_distributed_optimizer", Bool(l.use_distributed_optimizer));
  add("ddp.use_megatron_fsdp", Bool(s.use_megatron_fsdp));
  if (s.use_megatron_fsdp) {
    // Unset: the recipe functions' optim_grads_params (MB recipes/common.py _pretrain_common).
    const MbSharding sharding = s.sharding == MbSharding::kUnset ? MbSharding::kOptimGradsParams : s.sharding;
    add("ddp.data_parallel_sharding_strategy", MbShardingName(sharding));
    add("ddp.average_in_collective", "false");
  }
  add("ddp.overlap_grad_reduce", TriValue(s.overlap_grad_reduce));
  add("ddp.overlap_param_gather", TriValue(s.overlap_param_gather));
  if (s.bucket_size > 0) add("ddp.bucket_size", num(s.bucket_size));
  add("optimizer.use_distributed_optimizer", Bool(l.use_distributed_optimizer));
  add("dist.use_megatron_fsdp", Bool(s.use_megatron_fsdp));
  add("dist.use_torch_fsdp2", Bool(s.use_torch_fsdp2));
  add("comm_overlap.tp_comm_overlap", TriValue(s.tp_comm_overlap));
  add("comm_overlap.overlap_p2p_comm", TriValue(s.overlap_p2p_comm));
  add("comm_overlap.batch_p2p_comm", TriValue(s.batch_p2p_comm));
  add("comm_overlap.overlap_grad_reduce", TriValue(s.overlap_grad_reduce));
  add("comm_overlap.overlap_param_gather", TriValue(s.overlap_param_gather));
  if (s.bucket_size > 0) add("comm_overlap.bucket_size", num(s.bucket_size));
  add("comm_overlap.align_param_gather", Bool(s.overlap_param_gather == Tri::kTrue && l.pp > 1 && l.vpp > 1));
  add("checkpoint.ckpt_format", s.ckpt_format == MbCkptFormat::kFsdpDtensor ? "fsdp_dtensor" : "torch_dist");
  // Precision the cost model priced (Megatron-Bridge training/mixed_precision.py names,
  // megatron.md 1.7): FP8 with current scaling on Hopper, MXFP8 on Blackwell (the perf
  // recipes' choice per GPU), NVFP4 for fp4. A top-level string, not a section.
  const char* mp = "bf16_mixed";
  if (req.setup.precision == Precision::kFp8) {
    mp = search::PreBlackwellGpu(req.system) ? "bf16_with_fp8_current_scaling_mixed" : "bf16_with_mxfp8_mixed";
  } else if (req.setup.precision == Precision::kFp4) {
    mp = "bf16_with_nvfp4_mixed";
  }
  add("mixed_precision", mp);
  // At the paths of the recipe function the overrides are for (model.transformer.* for the
  // Llama recipes' GPTModelConfig; recipes/megatron-bridge-recipe-functions.json).
  const megatron_bridge::RecipeFunction* fn = megatron_bridge::RecipeFunctionOf(req);
  for (auto& kv : o) kv.first = megatron_bridge::OverridePath(fn, kv.first);
  return o;
}

std::vector<std::pair<std::string, std::string>> MegatronLaunchEnv(const Layout& l) {
  std::vector<std::pair<std::string, std::string>> env;
  if (l.mb.cuda_device_max_connections > 0) {
    env.emplace_back("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(l.mb.cuda_device_max_connections));
  }
  if (l.mb.tp_comm_overlap == Tri::kTrue) {  // persistent LayerNorm kernels leave SMs for comm (perf guide)
    env.emplace_back("NVTE_FWD_LAYERNORM_SM_MARGIN", "16");
    env.emplace_back("NVTE_BWD_LAYERNORM_SM_MARGIN", "16");
  }
  return env;
}

std::string MegatronRecipeYaml(const Candidate& c, const PlanRequest& req, int rank) {
  const Layout& l = c.layout;
  const Cost& k = c.cost;
  std::ostringstream y;
  y << "# meshplan Megatron-Bridge recipe " << rank << ": " << OneLine(req.model.name) << " on " << req.setup.num_gpus
    << " GPUs of " << OneLine(req.system.name) << " (" << OneLine(req.system.gpu.display_name) << "), seq_len "
    << req.setup.seq_len
    << ", global batch " << req.setup.global_batch << ", " << PrecisionName(req.setup.precision) << "\n";
  y << "# layout: " << Describe(l) << " (dp " << l.dp;
  if (req.model.is_moe()) y << ", expert dp " << req.setup.num_gpus / (l.EffectiveEtp() * l.ep * l.pp);
  y << ", " << l.MicroBatchesPerStep(req.setup) << " micro-batches per step)\n";
  y << "# predicted memory per GPU: " << Fixed(GiB(k.memory.Total()), 1) << " GiB of " << Fixed(GiB(k.capacity_bytes), 1)
    << " GiB usable; step " << Fixed(k.step_seconds, 3) << " s, " << Fixed(k.tokens_per_s_per_gpu, 0)
    << " tokens/s/GPU, " << recipe::MfuText(k, req.system.gpu, req.setup.precision) << "\n";
  y << "# launch environment:";
  for (const auto& [name, value] : MegatronLaunchEnv(l)) y << " " << name << "=" << value;
  y << "\n";
  for (const std::string& note : RecipeFunctionNotes(l, req)) y << "# " << note << "\n";
  // The command line as run_recipe.py takes it: the comm_overlap keys force-added, in their
  // place, where the recipe function leaves comm_overlap None (ForceAddsCommOverlap), as the
  // launch script writes them.
  y << "# command line:";
  const auto overrides = MegatronOverrides(l, req);
  const bool force_comm = megatron_bridge::ForceAddsCommOverlap(req);
  bool forced_written = false;
  for (const auto& [key, value] : overrides) {
    if (force_comm && key.rfind("comm_overlap.", 0) == 0) {
      if (!forced_written) {
        for (const std::string& t : megatron_bridge::ForcedCommOverlapOverrides(overrides)) y << " " << t;
      }
      forced_written = true;
      continue;
    }
    y << " " << key << "=" << value;
  }
  y << "\n";
  // Nested maps, one level per dot ("model.transformer.tensor_model_parallel_size").
  std::vector<std::string> open;  // the maps written so far on the current path
  for (const auto& [key, value] : overrides) {
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
      const size_t dot = key.find('.', start);
      parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    size_t same = 0;
    while (same < open.size() && same + 1 < parts.size() && open[same] == parts[same]) ++same;
    open.resize(same);
    for (size_t i = same; i + 1 < parts.size(); ++i) {
      y << std::string(2 * i, ' ') << parts[i] << ":\n";
      open.push_back(parts[i]);
    }
    y << std::string(2 * (parts.size() - 1), ' ') << parts.back() << ": " << value;
    if (key.ends_with("bucket_size")) y << "  # parameters, not bytes";
    y << "\n";
  }
  return y.str();
}

}  // namespace meshplan
