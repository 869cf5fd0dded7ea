// Layout-independent tables of one CostModel (see tables.hpp).

#include "cost/tables.hpp"

#include <algorithm>

namespace meshplan::cost {

RankPlan BuildRankPlan(const ModelSpec& model, const ParamCounts& params, int64_t pp_size, int64_t num_stages) {
  RankPlan plan;
  const int64_t pp = std::max<int64_t>(1, pp_size);
  struct Seen {
    int64_t dense, moe;
    bool embedding, head;
  };
  Seen seen[8];
  int n_seen = 0;
  for (int64_t r = 0; r < pp; ++r) {
    const LayerMix mix = LayersOfRank(model, pp_size, num_stages, r);
    const Seen sig{mix.dense, mix.moe, r == 0, r == pp - 1};
    bool dup = false;
    for (int i = 0; i < n_seen && !dup; ++i) {
      dup = seen[i].dense == sig.dense && seen[i].moe == sig.moe && seen[i].embedding == sig.embedding &&
            seen[i].head == sig.head;
    }
    if (dup) continue;
    if (n_seen < 8) seen[n_seen++] = sig;
    plan.ranks.push_back({r, ParamsOfRank(model, params, pp_size, num_stages, r)});
  }
  return plan;
}

CostTables::CostTables(const ModelSpec& model, const ParamCounts& params) : model_(model), params_(params) {
  for (int moe = 0; moe < 2; ++moe) {
    for (AcWrap w : {AcWrap::kNone, AcWrap::kLayer, AcWrap::kSubmodule, AcWrap::kSelective}) {
      act_[moe][static_cast<int>(w)] = LayerActivationBytes(model, moe == 1, w);
    }
  }
  max_pp_ = std::max<int64_t>(1, model.num_layers);
  max_stages_ = 2 * std::max<int64_t>(0, model.num_layers) + 1;
  const size_t n = static_cast<size_t>(max_pp_ + 1) * static_cast<size_t>(max_stages_ + 1);
  plans_.reset(new std::atomic<const RankPlan*>[n]);
  for (size_t i = 0; i < n; ++i) plans_[i].store(nullptr, std::memory_order_relaxed);
}

CostTables::~CostTables() {
  const size_t n = static_cast<size_t>(max_pp_ + 1) * static_cast<size_t>(max_stages_ + 1);
  for (size_t i = 0; i < n; ++i) delete plans_[i].load(std::memory_order_relaxed);
}

const RankPlan* CostTables::Ranks(int64_t pp, int64_t num_stages) const {
  if (pp < 1 || pp > max_pp_ || num_stages < 0 || num_stages > max_stages_) return nullptr;
  std::atomic<const RankPlan*>& slot = plans_[static_cast<size_t>(pp) * static_cast<size_t>(max_stages_ + 1) +
                                              static_cast<size_t>(num_stages)];
  const RankPlan* plan = slot.load(std::memory_order_acquire);
  if (plan != nullptr) return plan;
  auto fresh = std::make_unique<const RankPlan>(BuildRankPlan(model_, params_, pp, num_stages));
  const RankPlan* expected = nullptr;
  if (slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) return fresh.release();
  return expected;  // another thread built it first
}

}  // namespace meshplan::cost
