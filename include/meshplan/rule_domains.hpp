#pragma once
/// \file rule_domains.hpp
/// The values the validity rules allow for the fields the layout spaces enumerate, exported
/// so that a rule and the space that would otherwise re-derive it call one function (the
/// shape of Timeloop's constraints object, which both prunes the mapspace and checks one
/// mapping, and of torchtitan's seq_len_divisor). Each predicate names the rule that calls it
/// and cites that rule's framework source; each enumerator lists the values its predicates
/// accept. Implemented in planner/rules/domains.cpp.
///
/// What stays the spaces' own choice (not a rule) is said there: micro-batches in powers of
/// two up to PlanRequest::max_micro_batch, one layer split per PP size, ETP unset or 1,
/// sequence parallel with every TP > 1 that allows it (Megatron-Bridge), and so on
/// (EnumerateLayouts, tests/rules/space_equals_rules_test.cpp).

#include <cstdint>
#include <vector>

#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"

namespace meshplan::domain {

/// Whether the flex dispatcher's `backend` runs on `gpu`. Source: Megatron-Bridge
/// training/flex_dispatcher_backend.py validate_flex_dispatcher_backend (067f987d): DeepEP needs
/// compute capability 8.x or 9.x or a GPU named "NVIDIA B200" / "NVIDIA B300" (not GB200 /
/// GB300); HybridEP compute capability 8.x-10.x. kNone: true.
bool FlexBackendRuns(MbFlexBackend backend, const GpuSpec& gpu);
/// Whether DeepEP's normal-mode kernels have a configuration for a communication group of
/// `ranks` GPUs (the flex dispatcher's group: expert-TP x EP, Megatron-Core token_dispatcher.py
/// MoEFlexTokenDispatcher tp_ep_group). Source: DeepEP v1.2.1 deep_ep/buffer.py
/// Buffer.get_dispatch_config / get_combine_config, whose tables hold 2, 4, 8, 16, 24, 32, 64,
/// 128, 144 and 160 ranks and assert "Unsupported number of EP ranks" otherwise (Megatron-Core
/// fused_a2a.py get_buffer calls both at the first dispatch); DeepEP's unreleased main adds 48
/// and 96 (deep_ep/buffers/legacy.py, 94a9f8f's parent dd758ca).
bool DeepEpRanksSupported(int64_t ranks);
/// The sizes DeepEpRanksSupported accepts, in increasing order.
std::vector<int64_t> DeepEpRankSizes();

/// Sizes d of n in increasing order (empty for n < 1).
std::vector<int64_t> Divisors(int64_t n);

// --- Both frameworks ------------------------------------------------------------------

/// Expert parallelism needs experts: ep 1, or a MoE model.
/// Rules ep_requires_moe (AutoModel _transformers/capabilities.py::validate_for_mesh) and
/// mb_ep_requires_moe (MCore transformer/transformer_config.py:1595-1596).
bool EpRequiresMoe(const ModelSpec& model, int64_t ep);

/// Every EP rank holds as many experts: ep 1, or num_experts % ep == 0.
/// Rules ep_divides_experts (AutoModel components/moe/parallelizer.py) and
/// mb_ep_divides_experts (MCore transformer/moe/moe_layer.py:186).
bool EpDividesExperts(const ModelSpec& model, int64_t ep);

/// The EP sizes up to `num_gpus` that EpRequiresMoe and EpDividesExperts allow, increasing: 1,
/// and for a MoE model every divisor of num_experts in 2..num_gpus. Both layout spaces search
/// these (the world-size rules then cut those that do not fit the mesh).
std::vector<int64_t> ExpertParallelSizes(const ModelSpec& model, int64_t num_gpus);

/// Whole optimizer steps: `per_rank` sequences on each of `dp` data-parallel ranks divide
/// `global_batch` (per_rank * dp > 0).
/// Rules global_batch_divisible (AutoModel components/training/step_scheduler.py, per_rank =
/// local_batch_size) and mb_global_batch_divisible (MCore num_microbatches_calculator.py:381-391,
/// per_rank = micro_batch_size). The Megatron-Bridge space's micro-batch filter.
bool GlobalBatchDivides(int64_t global_batch, int64_t per_rank, int64_t dp);

/// The per-rank batch sizes GlobalBatchDivides allows for `dp` ranks: the divisors of
/// global_batch / dp, increasing; empty when dp does not divide global_batch (or either is
/// below 1). The AutoModel space's local_batch_size values.
std::vector<int64_t> PerRankBatches(int64_t global_batch, int64_t dp);

/// The multiple of the sequence length that context parallelism needs: 2 * cp with CP > 1 (the
/// load-balanced split into 2*CP chunks), else 1.
/// Rules cp_divides_sequence (AutoModel components/distributed/context_parallel/utils.py) and
/// mb_cp_divides_sequence (MB training/config.py:1574-1577; MLM arguments.py:1335-1338).
int64_t CpSeqMultiple(int64_t cp);

// --- NeMo AutoModel pipeline -----------------------------------------------------------

/// pp 1, or the local batch splits into whole micro-batches: local_batch % microbatch == 0.
/// Rule pp_microbatch_divides_local_batch (components/distributed/pipelining/functional.py::
/// build_pipeline_schedule).
bool PpMicrobatchDividesLocalBatch(int64_t local_batch, int64_t microbatch, int64_t pp);

/// pp 1, or a micro-batch for every stage in flight: local_batch / microbatch >= pp.
/// Rule pp_enough_microbatches (recipes/llm/train_ft.py, "pp_batch_size // pp_microbatch_size
/// must be >= pp_size").
bool PpEnoughMicrobatches(int64_t local_batch, int64_t microbatch, int64_t pp);

/// pp 1, layers_per_stage null (<= 0) or a rounding mode set, or S = ceil(num_layers /
/// layers_per_stage) a multiple of pp.
/// Rule pp_stages_divisible (components/distributed/pipelining/functional.py::calculate_virtual_stages).
bool PpStagesDivisible(int64_t num_layers, int64_t pp, int64_t layers_per_stage, StageRounding rounding);

/// pp 1, or pp <= stages <= num_layers (at least one stage per rank, no stage without a layer).
/// Rule pp_stages_fit_layers (components/distributed/pipelining/functional.py::
/// generate_hf_model_fqn_per_model_part).
bool PpStagesFitLayers(int64_t num_layers, int64_t pp, int64_t stages);

/// pp 1, or the stage count suits the schedule: 1f1b exactly pp stages (one per rank),
/// interleaved1f1b at least 2 * pp. Rules pp_single_stage_schedule and pp_multi_stage_schedule
/// (components/distributed/pipelining/functional.py::calculate_virtual_stages).
bool PpScheduleStages(int64_t pp, PpSchedule schedule, int64_t stages);

/// The micro-batches of one schedule call, n = local_batch / microbatch (AutoModel
/// components/distributed/pipelining/functional.py::build_pipeline_schedule:
/// n_microbatches = local_batch_size // microbatch_size, with local_batch_size the recipe's
/// step_scheduler.local_batch_size, recipes/llm/train_ft.py), split into whole rounds of pp:
/// pp 1, a schedule other than interleaved1f1b, or n % max(1, n / pp) == 0. Rule
/// pp_interleaved_microbatch_rounds, from torch's ScheduleInterleaved1F1B.__init__
/// (torch/distributed/pipelining/schedules.py: number_of_rounds = max(1, n_microbatches //
/// pp_group_size); "Interleaved 1F1B requires the number of microbatches to be a multiple of
/// the number of rounds"). The AutoModel space's filter of interleaved schedules per batch.
bool PpInterleavedRounds(int64_t local_batch, int64_t microbatch, int64_t pp, PpSchedule schedule);

/// An AutoModel `distributed.pipeline` schedule setting.
struct PpScheduleChoice {
  PpSchedule schedule = PpSchedule::k1F1B;
  int64_t layers_per_stage = 0;  ///< 0 = null (the framework default)
  StageRounding rounding = StageRounding::kNone;
};

/// For pp > 1, one setting per stage count S that the pipeline rules allow (PpStagesDivisible,
/// PpStagesFitLayers, PpScheduleStages, with S as SplitStages computes it) and AutoModel's
/// calculate_virtual_stages can reach, in increasing S: 1f1b with layers_per_stage null (S =
/// pp), interleaved1f1b with null (S = 2 * pp), then for each S = v * pp (v >= 3, S <=
/// num_layers) the smallest layers_per_stage whose ceil(num_layers / layers_per_stage) is S,
/// else that one rounded up to S, else the layers_per_stage one below rounded down to S
/// (round_virtual_stages_to_pp_multiple: down); an S none of these reach, no setting reaches.
/// The layer split depends on S only, so no other setting is a different layout. Empty when
/// pp > num_layers. The AutoModel space's schedules.
std::vector<PpScheduleChoice> PpScheduleChoices(int64_t num_layers, int64_t pp);

// --- Megatron-Bridge pipeline and sequence parallel -----------------------------------

/// Decoder layers the pipeline split divides: num_layers, plus the embedding and the loss
/// with account_for_embedding/loss_in_pipeline_split (MbPpSplit::kAccountEmbeddingLoss).
/// Source: MCore transformer/transformer_block.py:148-158 (get_num_layers_to_build).
int64_t MegatronSplitLayers(int64_t num_layers, MbPpSplit split);

/// An explicit layout, or MegatronSplitLayers % pp == 0.
/// Rule mb_pp_divides_layers (MCore transformer/transformer_block.py:148-158).
bool MegatronPpDividesLayers(int64_t num_layers, int64_t pp, MbPpSplit split);

/// vpp 1, an explicit layout, or the layers per PP rank divisible by vpp.
/// Rule mb_vpp_divides_layers (MCore transformer/transformer_block.py:172-176; MB
/// models/gpt_provider.py:240-255).
bool MegatronVppDividesLayers(int64_t num_layers, int64_t pp, MbPpSplit split, int64_t vpp);

/// vpp 1 or pp > 1. Rule mb_vpp_requires_pp (MCore parallel_state.py:826-830).
bool MegatronVppNeedsPp(int64_t pp, int64_t vpp);

/// Not an explicit layout, or one meshplan writes with pp * vpp stages of at least one decoder
/// layer each: pp * vpp <= num_layers. Rule mb_pp_layout_stages for layouts without a recipe's
/// own pipeline_model_parallel_layout (MCore transformer/transformer_config.py:2241-2258).
bool MegatronLayoutStagesFit(int64_t num_layers, int64_t pp, int64_t vpp, MbPpSplit split);

/// The VPP degrees that MegatronVppNeedsPp, MegatronPpDividesLayers, MegatronVppDividesLayers
/// and MegatronLayoutStagesFit allow for `split` (meshplan's own layout when kLayout),
/// increasing; empty when the split cannot divide the layers over pp ranks. The Megatron-Bridge
/// space's VPP values.
std::vector<int64_t> MegatronVppDegrees(int64_t num_layers, int64_t pp, MbPpSplit split);

/// Without CP the sequence splits over the TP ranks, with CP each of the 2*CP chunks does:
/// seq_len % SequenceParallelSeqMultiple(tp, cp) == 0.
/// Rule mb_sp_divides_sequence (MB training/config.py:1353-1372, collate_padding_multiple).
bool MegatronSpDividesSequence(int64_t seq_len, int64_t tp, int64_t cp);

/// Sequence parallel is allowed: TP > 1 (rule mb_sp_requires_tp, MCore
/// model_parallel_config.py:504) and MegatronSpDividesSequence. The Megatron-Bridge space turns
/// SP on exactly where this holds.
bool MegatronSequenceParallelAllowed(int64_t tp, int64_t cp, int64_t seq_len);

// --- Megatron-Bridge context-parallel communication (model.cp_comm_type) -------------------

/// Attention heads of one TP rank divide over `n` ranks: (num_attention_heads / tp) % n and
/// (key/value heads / tp) % n (MLA: the key heads are the attention heads). Transformer Engine's
/// all-to-all scatters the heads over the a2a group: n = cp for "a2a", the first
/// hierarchical_context_parallel_sizes level for "a2a+p2p". Source: TE
/// pytorch/attention/dot_product_attention/context_parallel.py AttnFuncWithCPAndQKVOA2A.forward
/// ("cp_comm_type='a2a' requires num_heads % cp_size == 0"). True when n <= 1 or tp does not
/// divide the heads (rules mb_tp_divides_heads / mb_tp_query_groups report that).
bool MegatronCpA2aHeadsDivide(const ModelSpec& model, int64_t tp, int64_t n);

/// `type` runs sliding-window attention under CP: "a2a" and "all_gather" only. Source: TE
/// context_parallel.py attn_forward_func_with_cp ("Context parallelism does not support sliding
/// window attention with cp_comm_type"); utils.py get_attention_backend disables FusedAttention
/// for p2p / a2a+p2p with a window.
bool MegatronCpCommTakesSlidingWindow(MbCpComm type);

/// `type` runs a softmax with learned sinks (softmax_type "learnable", GPT-OSS: Megatron-Bridge
/// models/gpt_oss/gpt_oss_bridge.py) under CP: "a2a" only. Source: TE context_parallel.py
/// attn_forward_func_with_cp ("Context parallelism only supports softmax_type with cp_comm_type =
/// 'a2a'"); utils.py get_attention_backend: only FusedAttention takes such a softmax.
bool MegatronCpCommTakesSoftmaxSinks(MbCpComm type);

/// model.cp_comm_type as Megatron-Core and Transformer Engine spell it: "p2p", "all_gather",
/// "a2a", "a2a+p2p"; kUnset: "p2p" (what None means).
const char* CpCommValue(MbCpComm type);

/// The model has sliding-window attention layers (num_sliding_window_layers > 0, or a pattern
/// block with a window).
bool HasSlidingWindowLayers(const ModelSpec& model);

}  // namespace meshplan::domain
