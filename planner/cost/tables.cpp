// Layout-independent tables of one CostModel (see tables.hpp).

#include "cost/tables.hpp"

#include <algorithm>
#include <atomic>

namespace meshplan::cost {

RankPlan BuildRankPlan(const ModelSpec& model, const ParamCounts& params, int64_t pp_size, int64_t num_stages,
                       const PpLayerLayout* given, int64_t mtp_layers, SplitPlaces places) {
  RankPlan plan;
  const int64_t pp = std::max<int64_t>(1, pp_size);
  struct Seen {
    int64_t dense, moe, mtp, attention, mamba, gdn;
    bool embedding, head;
  };
  Seen seen[8];
  int n_seen = 0;
  for (int64_t r = 0; r < pp; ++r) {
    const RankParams rp = ParamsOfRank(model, params, pp_size, num_stages, r, given, mtp_layers, places);
    const Seen sig{rp.dense_layers, rp.moe_layers, rp.mtp_layers, rp.attention_mixers, rp.mamba_mixers, rp.gdn_mixers,
                   rp.has_embedding, rp.has_head};
    bool dup = false;
    for (int i = 0; i < n_seen && !dup; ++i) {
      dup = seen[i].dense == sig.dense && seen[i].moe == sig.moe && seen[i].mtp == sig.mtp &&
            seen[i].attention == sig.attention && seen[i].mamba == sig.mamba && seen[i].gdn == sig.gdn &&
            seen[i].embedding == sig.embedding && seen[i].head == sig.head;
    }
    if (dup) continue;
    if (n_seen < 8) seen[n_seen++] = sig;
    plan.ranks.push_back({r, rp});
  }
  return plan;
}

namespace {
// What LayersOfRank and ParamsOfRank read of the model (not its names and source map).
ModelSpec LayerCounts(const ModelSpec& m) {
  ModelSpec s;
  s.num_layers = m.num_layers;
  s.num_dense_layers = m.num_dense_layers;
  s.num_experts = m.num_experts;
  s.hidden_size = m.hidden_size;  // MTP parameters
  s.layer_pattern = m.layer_pattern;  // a hybrid model's blocks per rank
  s.mtp_pattern = m.mtp_pattern;      // and its MTP layers' blocks (HybridBlocksOfRank)
  return s;
}
ModelSpec WithoutSourceMap(const ModelSpec& m) {
  ModelSpec s = m;
  s.field_locs.clear();
  return s;
}
uint64_t NextTablesId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

CostTables::CostTables(const ModelSpec& model, const ParamCounts& params)
    : model_(LayerCounts(model)), shape_(WithoutSourceMap(model)), id_(NextTablesId()), params_(params), unfused_(MegatronUnfusedOps(model)) {
  for (int moe = 0; moe < 2; ++moe) {
    for (AcWrap w : {AcWrap::kNone, AcWrap::kLayer, AcWrap::kSubmodule, AcWrap::kSelective}) {
      act_[moe][static_cast<int>(w)] = LayerActivationBytes(model, moe == 1, w);
    }
  }
  max_pp_ = std::max<int64_t>(1, model.num_layers);
  max_stages_ = 2 * std::max<int64_t>(0, model.num_layers) + 1;
  model_mtp_ = std::max<int64_t>(0, model.mtp_num_layers);
  for (auto& plans : plans_) {
    plans.reset(new std::atomic<std::atomic<const RankPlan*>*>[static_cast<size_t>(max_pp_) + 1]);
    for (int64_t pp = 0; pp <= max_pp_; ++pp) plans[static_cast<size_t>(pp)].store(nullptr, std::memory_order_relaxed);
  }
}

CostTables::~CostTables() {
  const size_t n = static_cast<size_t>(max_stages_) + 1;
  for (auto& plans : plans_) {
    for (int64_t pp = 0; pp <= max_pp_; ++pp) {
      std::atomic<const RankPlan*>* row = plans[static_cast<size_t>(pp)].load(std::memory_order_relaxed);
      if (row == nullptr) continue;
      for (size_t s = 0; s < n; ++s) delete row[s].load(std::memory_order_relaxed);
      delete[] row;
    }
  }
}

const RankPlan* CostTables::Ranks(int64_t pp, int64_t num_stages, int64_t mtp_layers, SplitPlaces places) const {
  if (pp < 1 || pp > max_pp_ || num_stages < 0 || num_stages > max_stages_) return nullptr;
  // The (MTP layers, places) of the variants: no MTP layers or the model's, with the places
  // OwnSplitPlaces gives (none, account_for_*: {1, 1}, a layout string with MTP: {0, 2m + 1}).
  const int64_t m = model_mtp_;
  const struct {
    int64_t mtp, first, last;
  } kinds[kVariants] = {{0, 0, 0}, {0, 1, 1}, {m, 0, 0}, {m, 1, 1}, {m, 0, 2 * m + 1}};
  int variant = -1;
  for (int v = 0; v < kVariants && variant < 0; ++v) {
    if (std::max<int64_t>(0, mtp_layers) == kinds[v].mtp && places.first == kinds[v].first && places.last == kinds[v].last) {
      variant = v;
    }
  }
  if (variant < 0) return nullptr;
  const int64_t mtp = kinds[variant].mtp;
  const SplitPlaces use{kinds[variant].first, kinds[variant].last};
  std::atomic<std::atomic<const RankPlan*>*>& row_slot = plans_[variant][static_cast<size_t>(pp)];
  std::atomic<const RankPlan*>* row = row_slot.load(std::memory_order_acquire);
  if (row == nullptr) {
    const size_t n = static_cast<size_t>(max_stages_) + 1;
    auto fresh = std::make_unique<std::atomic<const RankPlan*>[]>(n);
    for (size_t s = 0; s < n; ++s) fresh[s].store(nullptr, std::memory_order_relaxed);
    std::atomic<const RankPlan*>* expected = nullptr;
    if (row_slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) {
      row = fresh.release();
    } else {
      row = expected;  // another thread made the row first
    }
  }
  std::atomic<const RankPlan*>& slot = row[num_stages];
  const RankPlan* plan = slot.load(std::memory_order_acquire);
  if (plan != nullptr) return plan;
  auto fresh = std::make_unique<const RankPlan>(BuildRankPlan(model_, params_, pp, num_stages, nullptr, mtp, use));
  const RankPlan* expected = nullptr;
  if (slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) return fresh.release();
  return expected;  // another thread built it first
}

}  // namespace meshplan::cost
