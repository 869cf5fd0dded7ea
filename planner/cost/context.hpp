#pragma once
/// \file context.hpp
/// What the memory and time models share for one layout: the inputs, the process groups,
/// the micro-batch arithmetic and the parameters held by a pipeline rank. Private to
/// planner/cost. Nothing here allocates.

#include <cstdint>

#include "cost/comm.hpp"
#include "cost/flops.hpp"
#include "meshplan/cost.hpp"

namespace meshplan::cost {

struct RankParams;
struct PytorchRankTerms;  // cost/memory.hpp
class CostTables;  // cost/tables.hpp

/// Inputs and layout-derived quantities. References must outlive the Ctx.
struct Ctx {
  const ModelSpec& model;
  const SystemSpec& system;
  const TrainSetup& setup;
  const ParamCounts& params;
  const CostView& view;
  StageSplit split;
  MeshGroups groups;
  int64_t grad_accum = 1;     ///< schedule calls per optimizer step (GradAccumSteps)
  int64_t mb_per_call = 1;    ///< micro-batches per schedule call (pp_microbatches)
  int64_t mb_per_step = 1;    ///< grad_accum · mb_per_call
  double tokens_per_mb = 0;   ///< micro_batch · seq_len / cp: tokens of one forward on a rank
  FlopsPerToken flops;        ///< per-token FLOP terms at setup.seq_len
  const LinkTable* links = nullptr;  ///< group links from the topology graph (null: GroupLink)
  /// Layout-independent tables of the CostModel (activation bytes per layer, unfused
  /// Megatron-Core ops); null: computed.
  const CostTables* tables = nullptr;
  /// ParamsOfRank(*this, params_rank) precomputed by the caller (CostModel::Evaluate);
  /// null: computed on each call.
  const RankParams* rank_params = nullptr;
  int64_t params_rank = -1;
  /// PytorchTerms(*this, options) precomputed by the caller; null: computed per RankMemory.
  const PytorchRankTerms* pytorch_terms = nullptr;
  /// MemoryOptions::defer_fsdp_grad_sync: FSDP2 reduce-scatters only in the last micro-batch
  /// of a step (RankTime's DP term).
  bool defer_fsdp_grad_sync = false;
  /// MemoryOptions::fp32_params: the model and its gradients are fp32 (DDP all-reduces 4-byte
  /// gradients instead of 2-byte ones).
  bool fp32_params = false;
};
/// `flops`: the model's precomputed per-token FLOP terms, or nullptr to compute them here.
Ctx MakeCtx(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup,
            const ParamCounts& params, const CostView& layout, const FlopsPerToken* flops = nullptr);

/// Layers and parameters (elements) on one pipeline rank, before any sharding.
struct RankParams {
  int64_t dense_layers = 0;
  int64_t moe_layers = 0;
  bool has_embedding = false;  ///< PP rank 0 (a recipe's layout: the rank of its E stage)
  bool has_head = false;       ///< PP rank pp-1 (lm_head, or the tied embedding when pp = 1; a
                               ///< recipe's layout: the rank of its L stage)
  double layer_dense = 0;      ///< non-expert params of the rank's layers (attention, MLP,
                               ///< shared experts, router, norms)
  double layer_expert = 0;     ///< all routed experts of the rank's MoE layers
  double root = 0;             ///< embedding / final norm / lm_head held by this rank
  double max_layer_dense = 0;  ///< non-expert params of the largest layer
  double max_layer_expert = 0; ///< routed experts of the largest (MoE) layer
  /// MTP layers on this rank (Layout::mtp_layers on the rank of the last stage, or of the
  /// given layout's 'm'). Their decoder layers are counted in dense_layers / moe_layers (the
  /// model's last layer type) and their parameters in layer_dense / layer_expert; eh_proj and
  /// the three norms of each are in layer_dense, an embedding copy in root.
  int64_t mtp_layers = 0;
  /// Hybrid models (ModelSpec::is_hybrid): the rank's layers are single blocks, dense_layers
  /// and moe_layers count its MLP ('-') and MoE ('E') blocks, these its attention ('*') and
  /// Mamba-2 ('M') blocks (HybridBlocksIn); 0 for the flat models, whose every layer has
  /// attention.
  int64_t attention_mixers = 0;
  int64_t mamba_mixers = 0;
  int64_t gdn_mixers = 0;  ///< Gated DeltaNet blocks (Qwen3-Next, Qwen3.5)
  int64_t Layers() const { return dense_layers + moe_layers; }
  /// Megatron-Core layers on the rank: Layers(), or a hybrid model's blocks.
  int64_t Blocks() const { return dense_layers + moe_layers + attention_mixers + mamba_mixers + gdn_mixers; }
};
/// `pp_rank` in [0, pp). Dense layers are the first num_dense_layers of the model; stage s
/// holds layers [s·base + min(s, extra), ...) with base = L / S, extra = L % S and rank r
/// holds stages r, r+pp, ... (SplitStages, AutoModel pipelining/functional.py). With a
/// recipe's pipeline_model_parallel_layout (StageSplit::given), stage s holds the decoder
/// layers it names, after those of the stages before it, and the embedding / head sit on the
/// ranks of its E / L stages.
RankParams ParamsOfRank(const Ctx& c, int64_t pp_rank);
/// Dense and MoE decoder layers on `pp_rank` (the layer split of ParamsOfRank alone), the
/// decoder layers of the rank's MTP layers included.
LayerMix LayersOfRank(const Ctx& c, int64_t pp_rank);
/// The same from the model, the PP size, the total stage count S (StageSplit::num_stages), the
/// priced layout (StageSplit::given; null: meshplan's own split, OwnStageSplit), the MTP layers
/// trained (MtpLayers) and the places of the first and last stage (OwnSplitPlaces).
LayerMix LayersOfRank(const ModelSpec& model, int64_t pp, int64_t num_stages, int64_t pp_rank,
                      const PpLayerLayout* given = nullptr, int64_t mtp_layers = 0, SplitPlaces places = {});
/// ParamsOfRank from the model, its parameter counts, the PP size, the stage count, the
/// priced layout and the MTP layers trained and in the split.
RankParams ParamsOfRank(const ModelSpec& model, const ParamCounts& params, int64_t pp, int64_t num_stages,
                        int64_t pp_rank, const PpLayerLayout* given = nullptr, int64_t mtp_layers = 0,
                        SplitPlaces places = {});


/// Model dims used by activation and communication terms (elements per token).
int64_t QDim(const ModelSpec& m);        ///< query width: a·d, or a·(d_nope + d_rope) for MLA
int64_t QkHeadDim(const ModelSpec& m);   ///< one head's query/key width: d, or d_nope + d_rope for MLA
int64_t KDim(const ModelSpec& m);        ///< key width: g·d, or a·(d_nope + d_rope) for MLA
int64_t VDim(const ModelSpec& m);        ///< value width: g·d, or a·d_v for MLA
int64_t AttnOutDim(const ModelSpec& m);  ///< attention output (o_proj input): a·d or a·d_v

}  // namespace meshplan::cost
