#pragma once
/// \file tables.hpp
/// What CostModel::Evaluate needs that depends on the model but not on the layout, computed
/// once per CostModel: the per-token activation bytes of a dense and an MoE layer for each
/// checkpointing wrap, the unfused Megatron-Core ops of a layer, and, per (PP size, stage
/// count), the pipeline ranks Evaluate scores with their parameter counts. Private to
/// planner/cost. The values are those of the functions they cache (LayerActivationBytes,
/// MegatronUnfusedOps, ParamsOfRank), bit for bit.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "cost/memory.hpp"
#include "cost/time.hpp"

namespace meshplan::cost {

/// One pipeline rank to score and its parameters (ParamsOfRank).
struct RankEntry {
  int64_t rank = 0;
  RankParams params;
};

/// The ranks of one (pp, S) that CostModel::Evaluate scores: rank 0, then every rank whose
/// (dense layers, MoE layers, embedding, head) signature differs from the first eight
/// distinct signatures seen (a later rank of a seen signature holds no more memory and
/// takes the same time). `given`: a recipe's priced layout (StageSplit::given), and layouts
/// that train MTP layers (`mtp_layers` > 0, MtpLayers), whose plans are built per layout, not
/// cached here.
struct RankPlan {
  std::vector<RankEntry> ranks;
};
RankPlan BuildRankPlan(const ModelSpec& model, const ParamCounts& params, int64_t pp, int64_t num_stages,
                       const PpLayerLayout* given = nullptr, int64_t mtp_layers = 0, SplitPlaces places = {});

class CostTables {
 public:
  CostTables(const ModelSpec& model, const ParamCounts& params);
  ~CostTables();
  CostTables(const CostTables&) = delete;
  CostTables& operator=(const CostTables&) = delete;

  /// LayerActivationBytes(model, moe_layer, wrap).
  const ActBytes& Act(bool moe_layer, AcWrap wrap) const { return act_[moe_layer ? 1 : 0][static_cast<int>(wrap)]; }
  /// MegatronUnfusedOps(model): read per Megatron-Bridge layout scored, computed here once (it
  /// compares the model's rope_scaling_type string).
  const MegatronUnfused& Unfused() const { return unfused_; }
  /// The model without its source map (ModelSpec::field_locs, which no cost formula reads): the
  /// copy a per-rank estimate starts from (MegatronRankMemory), so that copying it allocates
  /// nothing but the model's few strings.
  const ModelSpec& Shape() const { return shape_; }
  /// A number no other CostTables of this process has (from 1): a per-thread copy of Shape()
  /// made for one table is known to be that table's without comparing the models.
  uint64_t Id() const { return id_; }
  /// BuildRankPlan(model, params, pp, num_stages, nullptr, mtp_layers, places), built on first
  /// use (thread-safe) for 1 <= pp <= num_layers and 0 <= num_stages <= 2·num_layers + 1, with no
  /// MTP layers or the model's own (ModelSpec::mtp_num_layers) and the places OwnSplitPlaces
  /// gives; nullptr otherwise.
  const RankPlan* Ranks(int64_t pp, int64_t num_stages, int64_t mtp_layers = 0, SplitPlaces places = {}) const;

 private:
  ModelSpec model_;  ///< layer and expert counts of the model (a copy: a CostModel may move)
  ModelSpec shape_;  ///< the whole model but its field_locs (Shape)
  uint64_t id_;      ///< Id()
  ParamCounts params_;
  ActBytes act_[2][4];
  MegatronUnfused unfused_;
  int64_t max_pp_ = 0, max_stages_ = 0;
  int64_t model_mtp_ = 0;  ///< ModelSpec::mtp_num_layers
  /// Built on first use: plans_[variant][pp] -> row of max_stages_ + 1 plans (so that
  /// constructing a CostModel stays cheap; the search builds one per memory probe setup).
  /// Variants: (no MTP layers, the model's) x (no places, account_for_*), and the model's MTP
  /// layers with their places in a layout string (Ranks).
  static constexpr int kVariants = 5;
  mutable std::unique_ptr<std::atomic<std::atomic<const RankPlan*>*>[]> plans_[kVariants];
};

}  // namespace meshplan::cost
