#pragma once
/// \file layout.hpp
/// A training setup (what the user asks for) and a layout (one point of the search
/// space: a complete AutoModel `distributed:` + `step_scheduler:` choice).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meshplan {

/// Numeric precision of the GEMMs. Weights, gradients and optimizer state keep the
/// mixed-precision dtypes of the strategy whatever this is. kFp8 covers every FP8 recipe
/// (delayed / current scaling, MXFP8 blocks): all run at the GPU's FP8 tensor-core rate.
/// kFp4 is NVFP4 (Blackwell FP4 tensor cores, GpuSpec::fp4_flops).
enum class Precision { kBf16, kFp8, kFp4 };

/// What the user asks for.
struct TrainSetup {
  int64_t num_gpus = 0;      ///< world size
  int64_t seq_len = 0;       ///< tokens per sequence
  int64_t global_batch = 0;  ///< sequences per optimizer step
  Precision precision = Precision::kBf16;
  double headroom = 0.10;    ///< fraction of GPU memory kept free (allocator, fragmentation)
};

/// AutoModel `distributed.strategy`.
enum class Strategy { kFsdp2, kMegatronFsdp, kDdp };

/// `distributed.activation_checkpointing`.
enum class Recompute { kNone, kSelective, kFull };

/// `distributed.pipeline.pp_schedule` (torch schedule names, lower case as recipes write them).
enum class PpSchedule { k1F1B, kInterleaved1F1B };

/// `distributed.pipeline.round_virtual_stages_to_pp_multiple`.
enum class StageRounding { kNone, kUp, kDown };

/// Which framework's rules and recipe format a layout belongs to.
enum class Framework {
  kAutoModel,       ///< NeMo AutoModel (`distributed:` + `step_scheduler:`)
  kMegatronBridge,  ///< Megatron-Bridge ConfigContainer overrides (model:, train:, ddp:, dist:, ...)
};
/// The framework of a request or layout that names none (plan's --framework default).
inline constexpr Framework kDefaultFramework = Framework::kAutoModel;

/// Megatron-Bridge `ddp.data_parallel_sharding_strategy` (MCore DistributedDataParallelConfig;
/// megatron.md 1.3). Only read by Megatron FSDP.
enum class MbSharding { kUnset, kNoShard, kOptim, kOptimGrads, kOptimGradsParams };

/// Megatron-Bridge `checkpoint.ckpt_format` (megatron.md 1.5); kUnset = default torch_dist.
enum class MbCkptFormat { kUnset, kTorch, kTorchDist, kTorchDcp, kFsdpDtensor };

/// How the decoder layers are split over the pipeline stages (megatron.md 2.3).
enum class MbPpSplit {
  kEven,                  ///< num_layers / (pp*vpp) layers per model chunk
  kAccountEmbeddingLoss,  ///< account_for_embedding_in_pipeline_split and _loss_: (L + 2) / (pp*vpp)
  kLayout,                ///< explicit pipeline_model_parallel_layout (pp*vpp stages, any split)
};

/// A `model.pipeline_model_parallel_layout` as a recipe gives it, read the way Megatron-Core's
/// PipelineParallelLayerLayout reads it (Megatron-LM megatron/core/transformer/
/// pipeline_parallel_layer_layout.py, 2026-08-22): the stages in the order written, stage i
/// being virtual stage i / pp of pipeline rank i % pp (lines 48-55), each the string of its
/// layers in order: 'E' embedding, 't' decoder (transformer) layer, 'm' MTP layer, 'L' loss
/// (the string symbols, lines 303-308), and 'c' for an encoder layer, which only the list
/// form can name (LayerType.encoder; Megatron-Core refuses it, lines 148-149).
struct PpLayerLayout {
  std::vector<std::string> stages;
  std::string written;  ///< the value as the recipe writes it (a list in flow style, names lower-cased)
  std::string where;    ///< "file:line:column" of the value in the recipe; empty if none
  /// Recipe settings Megatron-Core checks against the layout: model.mtp_num_layers (-1: the
  /// recipe does not set it, so the model provider's value applies, which meshplan does not
  /// know; 0: null or 0) and the other pipeline-split keys the recipe also sets
  /// (transformer_config.py:2245-2259 refuses them beside a layout).
  int64_t mtp_num_layers = -1;
  std::vector<std::string> other_split_keys;

  /// Layers of `symbol` in the whole layout, or in stage `stage`.
  int64_t Count(char symbol) const;
  int64_t CountIn(size_t stage, char symbol) const;
  /// Index of the first stage holding `symbol`, or -1.
  int64_t StageOf(char symbol) const;
  /// The layout as one string of the grammar ("Ett|tt|tL"): what Megatron-Core reads back
  /// as the same stages (an encoder layer has no string symbol and is left out).
  std::string ToString() const;
};

/// The result of ParsePpLayoutString: the stages, or what is wrong.
struct PpLayoutParse {
  bool ok = false;
  std::vector<std::string> stages;  ///< as PpLayerLayout::stages
  std::string error;                ///< when !ok: what was expected and found
};

/// Megatron-Core's PipelineParallelLayerLayout.parse_str_to_list (pipeline_parallel_layer_
/// layout.py:282-321), step by step:
///   1. every ',' is removed (purely cosmetic, line 288);
///   2. re.sub(r'\(([^)]+)\)\*(\d+)', group1 * n): a parenthesised run (no ')' inside,
///      at least one character) followed by '*' and decimal digits is repeated n times,
///      left to right, once over the string (line 297; "(tt|)*2" -> "tt|tt|"; n may be 0);
///   3. re.sub(r'(.)\*(\d+)', ...): any one character but a newline followed by '*' and
///      digits is repeated n times, once over the result of 2 (line 298; "t*3" -> "ttt");
///   4. the string is split at every '|' into stages (so "" is one empty stage and "E|" ends
///      with an empty one), and each character of a stage must be E, L, t or m (lines
///      311-320): anything else, whitespace and a parenthesis or '*' left over by 2-3
///      included, is refused.
/// Differences: digits are ASCII only (Python's \d also takes other Unicode decimal digits),
/// and a layout expanding to more than 1,048,576 symbols is refused (Python would build it).
PpLayoutParse ParsePpLayoutString(std::string_view text);

/// Megatron `model.moe_token_dispatcher_type` (megatron.md 1.2).
enum class MbDispatcher { kAllgather, kAlltoall, kFlex };

/// Megatron-Core `model.moe_flex_dispatcher_backend` of the flex dispatcher: DeepEP or HybridEP
/// (kNone: not flex). Megatron-Bridge training/flex_dispatcher_backend.py says which GPUs take which.
enum class MbFlexBackend { kNone, kDeepEP, kHybridEP };

/// Transformer Engine's FP8 recipe of a Megatron-Bridge `mixed_precision`: per-tensor scaling
/// (delayed, current, subchannel: rows of a GEMM input divisible by 8) or MXFP8 (block scaling,
/// Blackwell only: rows divisible by 32). kUnset: as meshplan emits it, MXFP8 on Blackwell and
/// current scaling before (planner/frameworks/megatron_bridge/recipe_write.cpp).
enum class MbFp8Recipe { kUnset, kPerTensor, kMxfp8 };

/// Megatron-Core `model.cuda_graph_impl`: none, Transformer Engine graphs of the modules in
/// `cuda_graph_scope` (per layer), or one graph of the whole iteration ("full_iteration";
/// "local" with cuda_graph_modules full_iteration is the same capture).
enum class MbCudaGraph { kNone, kTransformerEngine, kFullIteration };

/// Bits of `model.cuda_graph_scope` (Megatron-Core CudaGraphScope): which parts of each layer
/// a Transformer Engine graph captures. No bit set = the whole layer.
enum MbGraphScope : uint32_t {
  kGraphAttn = 1u << 0,            ///< "attn": norm, QKV, attention core, projection
  kGraphMlp = 1u << 1,             ///< "mlp": the dense MLP
  kGraphMoeRouter = 1u << 2,       ///< "moe_router": router GEMM, softmax / top-k, aux loss
  kGraphMoePreprocess = 1u << 3,   ///< "moe_preprocess": token counts and permutation setup
  kGraphMoe = 1u << 4,             ///< "moe": the whole MoE block (drop-and-pad MoE layers)
  kGraphMamba = 1u << 5,           ///< "mamba": Mamba-2 blocks of a hybrid model
  kGraphFullIteration = 1u << 6,   ///< "full_iteration": with cuda_graph_impl local, the whole iteration
};

/// Bits of `model.recompute_modules` (selective recompute; Megatron-Core TransformerConfig).
/// Selective recompute with no bit set means Megatron-Core's default, {"core_attn"}.
enum MbRecomputeModule : uint32_t {
  kRecomputeCoreAttn = 1u << 0,     ///< attention core (QK^T, softmax, PV)
  kRecomputeMlp = 1u << 1,          ///< dense MLP of dense layers
  kRecomputeMoeAct = 1u << 2,       ///< the routed experts' activation function
  kRecomputeLayernorm = 1u << 3,    ///< input norms of attention and MLP
  kRecomputeMlaUpProj = 1u << 4,    ///< MLA's q and kv up-projections
  kRecomputeSharedExperts = 1u << 5,  ///< the shared experts of MoE layers
  kRecomputeMoe = 1u << 6,            ///< the whole MoE block: router, dispatch, experts, combine
};

/// Megatron-Core `model.cp_comm_type`: how the attention of a context-parallel group exchanges
/// its sequence chunks (megatron/core/transformer/transformer_config.py cp_comm_type; Transformer
/// Engine transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py
/// attn_forward_func_with_cp). kUnset: the recipe leaves it None, which Megatron-Core passes to
/// Transformer Engine as "p2p" (extensions/transformer_engine.py TEDotProductAttention).
enum class MbCpComm {
  kUnset,      ///< None: p2p
  kP2p,        ///< "p2p": K/V chunks passed around a ring, overlapped with the attention (AttnFuncWithCPAndKVP2P)
  kAllGather,  ///< "all_gather": K/V all-gathered before the attention, exposed (AttnFuncWithCPAndKVAllGather)
  kA2a,        ///< "a2a": Ulysses-style all-to-all of Q, K, V (heads scattered) and of the output (AttnFuncWithCPAndQKVOA2A)
  kA2aP2p,     ///< "a2a+p2p": a2a inside the first level of hierarchical_context_parallel_sizes, p2p ring over the second
};

/// Megatron `model.recompute_method` (full recompute only).
enum class MbRecomputeMethod { kUnset, kUniform, kBlock };

/// A boolean recipe key that may be absent (then the framework default or derivation applies).
enum class Tri { kUnset, kFalse, kTrue };

/// Megatron-Bridge settings beyond the mesh axes: what a recipe sets and the Megatron rules
/// read. The planner fills them with the values it emits; `meshplan check` with the values of
/// the recipe read. Sources: megatron.md 1.2-1.6, 2.7-2.12.
struct MbSettings {
  bool use_megatron_fsdp = false;      ///< ddp.use_megatron_fsdp
  Tri dist_use_megatron_fsdp = Tri::kUnset;  ///< dist.use_megatron_fsdp (MB forces both equal)
  bool use_torch_fsdp2 = false;        ///< dist.use_torch_fsdp2
  /// model.gradient_accumulation_fusion; unset reads as on (Megatron-Bridge's model providers
  /// enable it where the fused kernel is available), which torch FSDP2 does not allow.
  Tri grad_acc_fusion = Tri::kUnset;
  bool use_tp_pp_dp_mapping = false;   ///< dist.use_tp_pp_dp_mapping (rank order tp-cp-ep-pp-dp)
  MbSharding sharding = MbSharding::kUnset;  ///< ddp.data_parallel_sharding_strategy
  /// train.check_weight_hash_across_dp_replicas_interval is set (not null)
  bool weight_hash_check = false;
  Tri average_in_collective = Tri::kUnset;   ///< ddp.average_in_collective
  MbCkptFormat ckpt_format = MbCkptFormat::kUnset;  ///< checkpoint.ckpt_format
  bool checkpointing = false;          ///< checkpoint.save or checkpoint.load is set
  bool cpu_offloading = false;         ///< model.cpu_offloading
  int64_t cpu_offloading_num_layers = 0;  ///< model.cpu_offloading_num_layers: layers whose activations live in host memory
  /// model.cross_entropy_loss_fusion with cross_entropy_fusion_impl te: TE's
  /// parallel_cross_entropy writes the gradient into the bf16 logits and keeps them (2 bytes per
  /// logit); native (Megatron-Core's default) and the unfused loss keep fp32 exp-logits (4).
  bool te_cross_entropy = false;
  /// Bytes per parameter of the optimizer state the distributed optimizer shards: the master
  /// weights and Adam's two moments, 4 + 4 + 4 in fp32; with optimizer.use_precision_aware_optimizer
  /// the recipe's main_params_dtype, exp_avg_dtype and exp_avg_sq_dtype (Megatron-Core
  /// optimizer_config.py; the DeepSeek-V3 perf recipes: fp32 master, bf16 moments, 8 bytes).
  double optimizer_state_bytes = 12.0;
  bool pipeline_dtype_set = true;      ///< model.pipeline_dtype is not null
  bool transformer_engine = true;      ///< model.transformer_impl == transformer_engine
  Tri tp_comm_overlap = Tri::kUnset;   ///< comm_overlap.tp_comm_overlap as requested
  /// Megatron-Core attention_backend unfused (DotProductAttention: the s x s scores written
  /// to HBM, FusedScaleMaskSoftmax and attention dropout between two batched GEMMs), as
  /// Megatron-LM ran before FlashAttention; false: Transformer Engine's flash / fused kernels.
  /// Planner layouts leave it false; published runs set it from their megatron_settings.
  bool unfused_attention = false;
  /// Megatron-LM 2021's scatter_gather_tensors_in_pipeline (Narayanan et al. 2021 section 4.1):
  /// without sequence parallelism each TP rank sends 1/tp of the stage output over its own
  /// link and the receiver all-gathers it over NVLink. Megatron-Core has no such option
  /// (sequence parallelism shards the tensor instead); published 2021-2022 runs set it.
  bool pp_scatter_gather = false;
  Tri overlap_p2p_comm = Tri::kUnset;  ///< comm_overlap / model overlap_p2p_comm
  Tri batch_p2p_comm = Tri::kUnset;    ///< comm_overlap / model batch_p2p_comm
  Tri overlap_grad_reduce = Tri::kUnset;   ///< ddp / comm_overlap overlap_grad_reduce
  Tri overlap_param_gather = Tri::kUnset;  ///< ddp / comm_overlap overlap_param_gather
  Tri ep_a2a_overlap = Tri::kUnset;    ///< comm_overlap.overlap_moe_expert_parallel_comm
  MbDispatcher token_dispatcher = MbDispatcher::kAllgather;  ///< model.moe_token_dispatcher_type
  MbFlexBackend flex_backend = MbFlexBackend::kNone;  ///< model.moe_flex_dispatcher_backend (flex only)
  /// Token drop with padding: model.moe_expert_capacity_factor set and
  /// moe_pad_expert_input_to_capacity true (Megatron-Bridge's apply_moe_token_drop, the
  /// "tokendrop" performance runs). Every expert then gets its capacity of tokens, so the
  /// dispatcher needs no token counts on the host; false (Megatron-Core's default) is dropless.
  bool moe_pad_to_capacity = false;
  MbFp8Recipe fp8_recipe = MbFp8Recipe::kUnset;  ///< from mixed_precision (recipes read by check / explain)
  MbCudaGraph cuda_graph = MbCudaGraph::kNone;  ///< model.cuda_graph_impl
  uint32_t cuda_graph_scope = 0;       ///< MbGraphScope bits of model.cuda_graph_scope (0 = whole layer)
  uint32_t recompute_modules = 0;      ///< MbRecomputeModule bits under selective recompute (0 = core_attn)
  int64_t bucket_size = 0;             ///< ddp.bucket_size in parameters; 0 = unset
  int64_t num_distributed_optimizer_instances = 1;  ///< ddp.num_distributed_optimizer_instances
  int64_t recompute_num_layers = 0;    ///< model.recompute_num_layers; 0 = null
  MbRecomputeMethod recompute_method = MbRecomputeMethod::kUnset;  ///< model.recompute_method
  int64_t cuda_device_max_connections = 0;  ///< env CUDA_DEVICE_MAX_CONNECTIONS; 0 = not set
  /// mixed_precision / ddp grad_reduce_in_fp32: the main-gradient buffer and its DP reduction in
  /// fp32 (4 bytes per parameter) or, when false, in bf16 (2 bytes). MB's mixed-precision presets
  /// set true (training/mixed_precision.py, bf16_mixed) and MixedPrecisionConfig.setup() copies it
  /// over ddp.grad_reduce_in_fp32, so emitted recipes keep true; the published performance
  /// recipes set both to false (scripts/performance/configs/*: set_*_common_configs).
  bool grad_reduce_in_fp32 = true;
  MbCpComm cp_comm = MbCpComm::kUnset;  ///< model.cp_comm_type (one value for every layer)
  /// model.hierarchical_context_parallel_sizes: how many sizes the list holds (0: null), its first
  /// size (the a2a level of a2a+p2p) and the product of all of them (Megatron-Bridge requires it
  /// to equal context_parallel_size). meshplan's a2a+p2p layouts write [hcp_first, cp / hcp_first].
  int64_t hcp_levels = 0;
  int64_t hcp_first = 0;
  int64_t hcp_product = 0;
};

/// AutoModel settings of a recipe read by `meshplan check`, as written, where the Layout keeps
/// only their effect (dp) or meshplan does not read them for pricing: the nearest valid layouts
/// name them when the recipe they emit writes another value (nearest.cpp). The planner's own
/// layouts leave the defaults.
struct AmWritten {
  bool dp_size = false;  ///< distributed.dp_size given as a number (else null or absent: inferred)
  bool sequence_parallel = false;  ///< distributed.sequence_parallel written (fsdp2 only)
  // The values as written ("" when absent or null: AutoModel's default, in brackets).
  std::string defer_fsdp_grad_sync;       ///< distributed.defer_fsdp_grad_sync, fsdp2 only (true)
  std::string scale_grads_in_schedule;    ///< distributed.pipeline.scale_grads_in_schedule (false)
  std::string moe_reshard_after_forward;  ///< distributed.moe.reshard_after_forward (false)
  /// distributed.zero_dp_strategy, megatron_fsdp only: 0 no_shard, 1 optim, 2 optim_grads,
  /// 3 optim_grads_params (AutoModel MegatronFSDPConfig's default 3; priced: CostView::fsdp_sharding)
  int zero_dp_strategy = 3;
  /// The layout was read from a recipe (`check`, `explain --recipe`): a key it leaves unset
  /// takes AutoModel's default (defer_fsdp_grad_sync true), where a planned layout takes the
  /// value meshplan's recipes write.
  bool from_recipe = false;
};

/// AutoModel's MoE token dispatcher, `model.backend.dispatcher` (BackendConfig,
/// components/models/common/utils.py @36044ad; components/moe/layers.py MoE.__init__ picks the
/// experts module from it): torch = GroupedExperts (the EP group all-gathers the tokens and
/// all-reduces the output), deepep / hybridep / uccl_ep = GroupedExpertsDeepEP through
/// Megatron-Core's MoEFlexTokenDispatcher with that backend, mok = Mixture-of-Kittens.
enum class AmDispatcher { kTorch, kDeepEP, kHybridEP, kUcclEp, kMok };

/// The `model.backend` settings of an AutoModel layout that its MoE pricing reads
/// (BackendConfig @36044ad). A recipe read by `check` / `explain` / `validate` keeps its own;
/// the planner's layouts take PlanRequest::am_moe_backend when set, else the learned gate and
/// the dispatcher meshplan's recipe names (deepep with EP inside a node, hybridep across:
/// Automodel PR #2630; AutoModelSpace).
struct AmMoeBackend {
  /// BackendConfig's default with DeepEP installed is deepep (HAVE_DEEP_EP on CUDA).
  AmDispatcher dispatcher = AmDispatcher::kDeepEP;
  /// fake_balanced_gate: FakeBalancedGate instead of the learned Gate (layers.py): with
  /// fake_gate_noise 0 token t goes to experts (t·k .. t·k + k − 1) mod E.
  bool fake_balanced_gate = false;
  /// fake_gate_noise in [0, 1]: above 0 the fake gate picks top-k of random scores (routing
  /// spread like a learned gate's).
  double fake_gate_noise = 0.0;
  /// backend.attn is "tilelang" (BackendConfig's default is "te"): what DeepSeek-V4's context
  /// parallelism needs (_transformers/capabilities.py supports_cp).
  bool attn_tilelang = false;
  /// The fake gate as priced: consecutive experts per token (fake gate without noise).
  bool ConsecutiveExperts() const { return fake_balanced_gate && fake_gate_noise <= 0.0; }
};

/// One layout. Sizes are mesh-axis sizes; all are >= 1.
/// Mesh order (outer to inner): pp, dp_replicate, dp_shard, cp, tp
/// (AutoModel components/distributed/mesh_utils.py::_create_fsdp2_device_mesh);
/// ep is carved from the flattened (dp_replicate, dp_shard, cp, tp) ranks, ep innermost.
struct Layout {
  Strategy strategy = Strategy::kFsdp2;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t dp = 1;            ///< inferred: num_gpus / (tp * cp * pp); the `dp` axis = dp_replicate * dp_shard
  int64_t dp_replicate = 1;  ///< HSDP replicas (FSDP2 only); 1 = plain FSDP
  int64_t local_batch_size = 1;    ///< step_scheduler.local_batch_size, sequences per rank per schedule call
  int64_t pp_microbatch_size = 1;  ///< pipeline.pp_microbatch_size (used when pp > 1)
  PpSchedule pp_schedule = PpSchedule::k1F1B;
  int64_t layers_per_stage = 0;    ///< pipeline.layers_per_stage; 0 = null (framework default)
  StageRounding stage_rounding = StageRounding::kNone;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  /// AutoModel `loss_fn` MaskedCrossEntropy `fp32_upcast` (components/loss/masked_ce.py: default
  /// true casts the logits to fp32 before F.cross_entropy; AutoModel's MoE benchmark recipes set
  /// false). Read from a recipe; the planner's layouts keep the default.
  bool loss_fp32_upcast = true;
  /// AutoModel `loss_fn` FusedLinearCrossEntropy (components/loss/linear_ce.py): read from a
  /// recipe; the planner's layouts keep MaskedCrossEntropy.
  bool loss_fused_linear = false;
  /// AutoModel `model.backend` MoE settings (dispatcher, fake gate); Megatron layouts ignore it.
  AmMoeBackend am_backend;

  // --- Megatron-Bridge (framework == kMegatronBridge); AutoModel layouts leave the defaults. ---
  // A Megatron layout leaves strategy, pp_schedule, layers_per_stage and stage_rounding at
  // their defaults (its DP flavour is in mb and use_distributed_optimizer, its VPP in vpp) and
  // sets pp_microbatch_size = train.micro_batch_size and local_batch_size = micro_batch_size
  // (pp = 1) or global_batch / dp (pp > 1) (SetMegatronMicroBatch), so micro_batch() is
  // Megatron's MBS and GradAccumSteps() * pp_microbatches() is its number of micro-batches M.
  // The cost model reads it through megatron_bridge::ToCostView (include/meshplan/framework.hpp).
  Framework framework = kDefaultFramework;
  int64_t vpp = 1;  ///< model.virtual_pipeline_model_parallel_size; 1 = null (non-interleaved)
  int64_t etp = 0;  ///< model.expert_tensor_parallel_size; 0 = null, which Megatron-Core reads as tp
  bool use_distributed_optimizer = false;  ///< ddp/optimizer.use_distributed_optimizer
  MbPpSplit pp_split = MbPpSplit::kEven;
  /// The recipe's pipeline_model_parallel_layout (pp_split kLayout), as read; null for the
  /// layouts meshplan builds (their layout is meshplan's own split, MegatronOverrides). The
  /// mb_pp_layout_ rules check it, and the cost model prices its split (PricedPpLayout).
  std::shared_ptr<const PpLayerLayout> pp_layout;
  /// model.mtp_num_layers: multi-token prediction layers trained (ModelSpec::mtp_num_layers),
  /// Megatron-Bridge only; 0 = null (AutoModel layouts: 0). A recipe that does not set it takes
  /// the model provider's value, num_nextn_predict_layers (kMtpFromModel until
  /// ParseMegatronRecipe, given the model, resolves it). They sit in the last stage, before the loss.
  int64_t mtp_layers = 0;
  MbSettings mb;
  AmWritten am;  ///< AutoModel recipes read by `check`: settings as written

  /// Expert tensor parallel size in effect: etp, or tp when unset (MCore model_parallel_config.py:507).
  int64_t EffectiveEtp() const { return etp > 0 ? etp : tp; }
  int64_t dp_shard() const { return dp / dp_replicate; }
  /// Sequences in one forward pass.
  int64_t micro_batch() const { return pp > 1 ? pp_microbatch_size : local_batch_size; }
  /// Micro-batches per pipeline schedule call (1 without PP).
  int64_t pp_microbatches() const { return pp > 1 ? local_batch_size / pp_microbatch_size : 1; }
  /// Gradient-accumulation steps: global_batch / (local_batch_size * dp)
  /// (AutoModel components/training/step_scheduler.py).
  int64_t GradAccumSteps(const TrainSetup& s) const { return s.global_batch / (local_batch_size * dp); }
  /// Micro-batches per optimizer step per pipeline (per data-parallel rank): global_batch /
  /// (dp * micro_batch()) = GradAccumSteps() * pp_microbatches(); Megatron's number of
  /// micro-batches M. Without PP it equals GradAccumSteps().
  int64_t MicroBatchesPerStep(const TrainSetup& s) const { return s.global_batch / (dp * micro_batch()); }
};

/// Pipeline stage counts of a layout for a model of `num_layers` layers.
/// Source: AutoModel components/distributed/pipelining/functional.py
/// (calculate_virtual_stages, generate_hf_model_fqn_per_model_part).
struct StageSplit {
  int64_t num_stages = 1;       ///< S, total virtual stages; 0 if the layout is invalid
  int64_t stages_per_rank = 1;  ///< S / pp (VPP degree)
  int64_t max_layers_per_rank = 0;  ///< decoder layers on the most loaded PP rank
  int64_t first_rank_layers = 0;    ///< decoder layers on PP rank 0 (holds the embedding)
  int64_t last_rank_layers = 0;     ///< decoder layers on PP rank pp-1 (holds norm + lm_head)
  /// The recipe's layout when its split is priced (PricedPpLayout), else null: then the layers
  /// are split as above. Points into the Layout's pp_layout (valid as long as that Layout).
  const PpLayerLayout* given = nullptr;
  /// PP rank holding the MTP layers (Layout::mtp_layers; the given layout's 'm'), -1 if none.
  int64_t mtp_rank = -1;
  bool operator==(const StageSplit&) const = default;
};

/// Layout::mtp_layers of a Megatron-Bridge recipe that leaves model.mtp_num_layers unset.
inline constexpr int64_t kMtpFromModel = -1;

/// Decoder-layer equivalents of other work that the first and the last pipeline stage hold in
/// meshplan's own split (OwnStageSplit): OwnSplitPlaces.
struct SplitPlaces {
  int64_t first = 0;
  int64_t last = 0;
  bool operator==(const SplitPlaces&) const = default;
};

/// meshplan's own split of `num_layers` decoder layers over `num_stages` stages S whose first and
/// last stages also hold `places` decoder-layer equivalents of other work: the first and the last
/// stage get their even share of the L + first + last places, less their own places (never below
/// 0), and the S - 2 stages between share the other decoder layers evenly, the first ones one
/// more. With no places this is AutoModel's split (pipelining/functional.py
/// generate_hf_model_fqn_per_model_part: the first L % S stages one layer larger) and
/// Megatron-Core's even split; with {1, 1} Megatron-Core's account_for_embedding/loss_in_
/// pipeline_split (transformer_block.py get_num_layers_to_build: (L + 2) / S per stage, one fewer
/// on the first and the last); DeepSeek-V3 (61 layers, one MTP layer: {0, 3}) over 16 stages
/// gives Megatron-Bridge's own layout, 4 per stage and "t m L" last
/// (set_deepseek_v3_pipeline_model_parallel_layout).
struct OwnSplit {
  int64_t stages = 0; ///< S
  int64_t first = 0;  ///< decoder layers of stage 0 (all of them when S = 1)
  int64_t last = 0;   ///< decoder layers of stage S - 1 (S > 1)
  int64_t base = 0;   ///< decoder layers of each of stages 1 .. S - 2 ...
  int64_t extra = 0;  ///< ... plus one for the first `extra` of them
  /// Decoder layers of `stage`; 0 out of range.
  int64_t Layers(int64_t stage) const;
  /// Decoder layers of the stages before `stage` (the index of its first decoder layer).
  int64_t FirstLayer(int64_t stage) const;
};
OwnSplit OwnStageSplit(int64_t num_layers, SplitPlaces places, int64_t num_stages);
/// Decoder layers in stage `stage` (0-based) of OwnStageSplit; 0 when num_stages <= 0 or stage
/// is out of range.
int64_t OwnStageDecoderLayers(int64_t num_layers, SplitPlaces places, int64_t num_stages, int64_t stage);
/// Decoder layers in the stages before `stage` (the index of its first decoder layer).
int64_t OwnStageFirstLayer(int64_t num_layers, SplitPlaces places, int64_t num_stages, int64_t stage);

/// The pipeline_model_parallel_layout string of meshplan's own split of a Megatron-Bridge
/// layout (OwnStageSplit over pp·vpp stages with OwnSplitPlaces; "E" before the first stage's
/// layers, the MTP layers "m" and the loss "L" after the last's), quoted: what `plan` writes.
/// Empty for a layout of one stage.
std::string OwnPpLayoutString(int64_t num_layers, const Layout& layout);
/// The model.pipeline_model_parallel_layout a Megatron-Bridge layout sets, quoted: the recipe's as
/// read (Layout::pp_layout), else OwnPpLayoutString when its split is written as a layout (pp > 1,
/// MbPpSplit::kLayout); empty when it sets none.
std::string PpLayoutValue(int64_t num_layers, const Layout& layout);

/// MTP layers a layout trains: Layout::mtp_layers, never negative (AutoModel layouts leave it 0:
/// meshplan prices AutoModel's models without their MTP module; automodel::ToCostView says 0).
int64_t MtpLayers(const Layout& layout);
/// The places of a Megatron-Bridge layout's own split (OwnStageSplit), pp > 1:
///   - a split meshplan writes as a pipeline_model_parallel_layout (MbPpSplit::kLayout) with MTP
///     layers: {0, 2·m + 1}, 2 per MTP layer (its decoder layer and its own logits, which for
///     DeepSeek-V3 cost more than a decoder layer: 6·h·V = 5.6 GFLOP per token against 4.0) and 1
///     for the loss's logits, as Megatron-Bridge's DeepSeek-V3 layouts weigh them (4 decoder
///     layers per stage, 1 beside "m L");
///   - account_for_embedding/loss_in_pipeline_split (MbPpSplit::kAccountEmbeddingLoss): {1, 1};
///   - otherwise {0, 0}: Megatron-Core's even split, to whose last stage the MTP layers are added
///     (transformer_block.py get_num_layers_to_build counts decoder layers only).
/// AutoModel layouts: {0, 0}.
SplitPlaces OwnSplitPlaces(const Layout& layout);

/// Stage count as AutoModel computes it. With layers_per_stage null: pp stages for 1f1b,
/// 2*pp for interleaved1f1b; else S = ceil(L / layers_per_stage), rounded to a multiple of
/// pp if a rounding mode is set. Layers are split with the first L % S stages one layer
/// larger; rank r holds stages r, r+pp, r+2pp, ... Megatron-Bridge layouts with vpp > 1:
/// S = pp·vpp (Megatron-Core's model chunks; pipeline_model_parallel_layout may split the
/// layers unevenly, modelled the same way). Does not check validity (see rules); num_stages
/// is 0 when S would be 0. Megatron layouts are split by OwnStageSplit with OwnSplitPlaces; their
/// MTP layers (MtpLayers) sit in the last stage, whose rank is mtp_rank.
/// A Megatron layout whose recipe gives a pipeline_model_parallel_layout that PricedPpLayout
/// accepts is split as written: S = its stage count, the rank counts its own, `given` set,
/// mtp_rank the rank of its 'm' stage.
StageSplit SplitStages(int64_t num_layers, const Layout& layout);

/// True when the layout's pipeline_model_parallel_layout can be priced: pp·vpp stages (vpp as
/// Megatron-Core derives it), num_layers decoder layers, one embedding and one loss (else an
/// mb_pp_layout_ rule fails, and meshplan's own split prices the layout); its MTP layers ('m')
/// must number Layout::mtp_layers.
bool PpLayoutFits(int64_t num_layers, const Layout& layout);

/// The multiple of seq_length that Megatron-Bridge's sequence parallel needs with TP `tp` and CP
/// `cp`: each CP chunk split again over the TP ranks, cp·lcm(2, tp) with CP > 1, else tp.
/// Source: MB config.py:1353-1372 (collate_padding_multiple); rule mb_sp_divides_sequence.
int64_t SequenceParallelSeqMultiple(int64_t tp, int64_t cp);

/// The layout's pipeline_model_parallel_layout when the cost model prices its split, else null:
/// when it fits (PpLayoutFits) and splits otherwise than meshplan's own split (the same decoder
/// layers per stage as OwnStageSplit with OwnSplitPlaces, the embedding in the first stage, the MTP layers
/// and the loss in the last), so that a layout equal to what `plan` emits is priced exactly as
/// the planner priced it.
const PpLayerLayout* PricedPpLayout(int64_t num_layers, const Layout& layout);

/// Decoder layers on each pipeline rank (one entry per rank, pp entries) as the cost model
/// splits them: SplitStages, with the layout's priced pipeline_model_parallel_layout if any.
std::vector<int64_t> DecoderLayersPerRank(int64_t num_layers, const Layout& layout);

const char* StrategyName(Strategy s);        ///< "fsdp2", "megatron_fsdp", "ddp"
const char* RecomputeName(Recompute r);      ///< "none", "selective", "full"
/// Megatron-Core's name of each MbRecomputeModule bit, in the order of TransformerConfig's
/// allowed modules (transformer_config.py): what recipes are read and written with.
struct RecomputeModuleName {
  uint32_t bit;
  const char* name;
};
std::span<const RecomputeModuleName> RecomputeModuleNames();
/// Megatron-Core spelling of a `recompute_modules` bit set as a flow list, in the order of
/// RecomputeModuleNames: "[moe_act,mla_up_proj]"; 0 gives "[core_attn]" (Megatron-Core's
/// default). Valid YAML and a valid Hydra override value.
std::string RecomputeModulesValue(uint32_t modules);
/// A layout's recompute as meshplan prints it: RecomputeName, followed for a Megatron-Bridge
/// layout with selective recompute by its RecomputeModulesValue ("selective[mla_up_proj]").
std::string RecomputeLabel(const Layout& layout);
const char* PpScheduleName(PpSchedule s);    ///< "1f1b", "interleaved1f1b"
/// model.backend.dispatcher's value as AutoModel's BackendConfig spells it: "torch", "deepep",
/// "hybridep", "uccl_ep", "mok" (components/models/common/utils.py @36044ad).
const char* AmDispatcherName(AmDispatcher d);
const char* PrecisionName(Precision p);      ///< "bf16", "fp8", "fp4"
const char* StageRoundingName(StageRounding r);  ///< "null", "up", "down"

/// ddp.data_parallel_sharding_strategy's value: "no_shard", "optim", "optim_grads",
/// "optim_grads_params"; "" for kUnset.
const char* MbShardingName(MbSharding s);

/// Megatron-Bridge data-parallel flavour of a layout: "megatron_fsdp", "torch_fsdp2",
/// "ddp+distopt" (DDP with the distributed optimizer) or "ddp".
const char* MbDpFlavourName(const Layout& layout);

/// Sets a Megatron layout's micro-batch size `mbs` (train.micro_batch_size): pp_microbatch_size
/// = mbs; local_batch_size = mbs without PP, global_batch / dp with PP (all M micro-batches go
/// through one pipeline schedule call). Call after dp and pp are set.
void SetMegatronMicroBatch(Layout& layout, int64_t mbs, const TrainSetup& setup);

/// One-line description, e.g. "fsdp2 tp4 pp2 cp1 ep1 dp4 (rep1) lbs8 mb1 interleaved1f1b v2 sp ac=full";
/// Megatron layouts: "ddp+distopt tp4 pp4 vpp5 cp2 ep1 dp1 mbs1 sp recompute=none".
std::string Describe(const Layout& layout);

}  // namespace meshplan
