// The AutoModel layout space (automodel::Plan, automodel::Enumerate).
//
// Fields are chosen in the order of the rule stages: mesh (strategy, tp, cp, pp, dp,
// dp_replicate, ep), then features (sequence_parallel, recompute), then batch and pipeline
// schedule. The driver (driver.cpp) checks each stage's rules as soon as its fields are set,
// so a failing mesh rule removes its whole subtree, and scores the leaves in parallel with
// branch-and-bound.
#include <algorithm>
#include <map>
#include <tuple>

#include "meshplan/framework.hpp"
#include "meshplan/rule_domains.hpp"
#include "meshplan/search.hpp"
#include "search/driver.hpp"

namespace meshplan {
namespace {

using domain::Divisors;
// Pipeline schedule variants for pp > 1: one per stage count the pipeline rules allow.
using domain::PpScheduleChoice;

class AutoModelSpace : public search::Space {
 public:
  explicit AutoModelSpace(const PlanRequest& req) : req_(req) {
    const int64_t n = req_.setup.num_gpus;
    for (Strategy strategy : req_.strategies) {
      for (int64_t tp : Divisors(n)) {
        for (int64_t cp : Divisors(n / tp)) {
          for (int64_t pp : Divisors(n / (tp * cp))) {
            if (pp > 1) {
              auto it = schedules_.find(pp);
              if (it == schedules_.end()) {
                it = schedules_.emplace(pp, domain::PpScheduleChoices(req_.model.num_layers, pp)).first;
              }
              if (it->second.empty()) break;  // no stage count fits (pp > layers), nor for any larger pp
            }
            parts_.push_back({strategy, tp, cp, pp});
            const int64_t dp = n / (tp * cp * pp);
            if (local_batches_.count(dp) == 0) {
              local_batches_.emplace(dp, domain::PerRankBatches(req_.setup.global_batch, dp));
            }
          }
        }
      }
    }
  }

  // One part per (strategy, tp, cp, pp), in walk order.
  size_t MeshParts() const override { return parts_.size(); }

  void Meshes(size_t part, const std::function<void(const Layout&)>& emit) const override {
    const auto [strategy, tp, cp, pp] = parts_[part];
    const int64_t dp = req_.setup.num_gpus / (tp * cp * pp);
    const std::vector<int64_t> reps = strategy == Strategy::kFsdp2 ? Divisors(dp) : std::vector<int64_t>{1};
    for (int64_t rep : reps) {
      for (int64_t ep : ep_options_) {
        if (req_.am_release_dispatcher && !Released(ep)) continue;
        Layout l;
        l.strategy = strategy;
        l.tp = tp;
        l.cp = cp;
        l.pp = pp;
        l.dp = dp;
        l.dp_replicate = rep;
        l.ep = ep;
        l.am_backend = Backend(ep);
        emit(l);
      }
    }
  }

  void Features(const Layout& mesh, std::vector<Layout>& out) const override {
    for (bool sp : {false, true}) {
      if (sp && mesh.tp == 1) continue;  // SP only means something with TP
      for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        Layout l = mesh;
        l.sequence_parallel = sp;
        l.recompute = rc;
        out.push_back(l);
      }
    }
  }

  void Leaves(const Layout& subtree, std::vector<Layout>& out) const override {
    Layout l = subtree;
    const std::vector<int64_t>& lbs_options = LocalBatches(l.dp);
    if (lbs_options.empty()) {  // no local batch can work; let global_batch_divisible say so once
      l.local_batch_size = 1;
      out.push_back(l);
      return;
    }
    const int64_t per_rank = lbs_options.back();  // global_batch / dp
    if (l.pp == 1) {
      for (int64_t lbs : lbs_options) {
        if (lbs > req_.max_micro_batch) break;
        l.local_batch_size = lbs;
        out.push_back(l);
      }
      return;
    }
    const std::vector<PpScheduleChoice>& schedules = Schedules(l.pp);
    for (int64_t mb = 1; mb <= req_.max_micro_batch && mb <= per_rank; mb *= 2) {
      l.pp_microbatch_size = mb;
      for (int64_t lbs : lbs_options) {
        if (!domain::PpMicrobatchDividesLocalBatch(lbs, mb, l.pp)) continue;
        if (!domain::PpEnoughMicrobatches(lbs, mb, l.pp)) continue;
        l.local_batch_size = lbs;
        for (const PpScheduleChoice& s : schedules) {
          if (!domain::PpInterleavedRounds(lbs, mb, l.pp, s.schedule)) continue;
          l.pp_schedule = s.schedule;
          l.layers_per_stage = s.layers_per_stage;
          l.stage_rounding = s.rounding;
          out.push_back(l);
        }
      }
    }
  }

  // One micro-batch of one sequence in flight: activations and logits at their least; for
  // pp > 1 every schedule, since the stage split moves layers (and the head) between ranks.
  void MemoryBoundLayouts(const Layout& subtree, std::vector<Layout>& out) const override {
    Layout l = subtree;
    l.local_batch_size = 1;
    l.pp_microbatch_size = 1;
    if (l.pp == 1) {
      out.push_back(l);
      return;
    }
    for (const PpScheduleChoice& s : Schedules(l.pp)) {
      l.pp_schedule = s.schedule;
      l.layers_per_stage = s.layers_per_stage;
      l.stage_rounding = s.rounding;
      out.push_back(l);
    }
  }

 private:
  // The request's model.backend settings, else automodel::DefaultBackend.
  // With am_release_dispatcher, the dispatcher DefaultBackend gives at `ep`.
  AmMoeBackend Backend(int64_t ep) const {
    if (!req_.am_moe_backend) return automodel::DefaultBackend(req_.model, req_.system, ep);
    AmMoeBackend b = *req_.am_moe_backend;
    if (req_.am_release_dispatcher) b.dispatcher = automodel::DefaultBackend(req_.model, req_.system, ep).dispatcher;
    return b;
  }
  // With am_release_dispatcher: whether `ep` is walked (the request's deepep cannot run there).
  bool Released(int64_t ep) const {
    return ep > 1 && req_.am_moe_backend && req_.am_moe_backend->dispatcher == AmDispatcher::kDeepEP &&
           !automodel::DeepEpRuns(req_.system, ep);
  }

  // PpScheduleChoices(num_layers, pp), from the table built with the parts.
  const std::vector<PpScheduleChoice>& Schedules(int64_t pp) const {
    const auto it = schedules_.find(pp);
    if (it != schedules_.end()) return it->second;
    thread_local std::vector<PpScheduleChoice> other;
    other = domain::PpScheduleChoices(req_.model.num_layers, pp);
    return other;
  }

  // PerRankBatches(global_batch, dp), from the table built with the parts.
  const std::vector<int64_t>& LocalBatches(int64_t dp) const {
    const auto it = local_batches_.find(dp);
    if (it != local_batches_.end()) return it->second;
    thread_local std::vector<int64_t> other;
    other = domain::PerRankBatches(req_.setup.global_batch, dp);
    return other;
  }

  struct Part {
    Strategy strategy;
    int64_t tp, cp, pp;
  };
  const PlanRequest& req_;
  const std::vector<int64_t> ep_options_ = domain::ExpertParallelSizes(req_.model, req_.setup.num_gpus);
  std::vector<Part> parts_;
  // Built once (the leaves of every subtree used to rebuild them): schedule variants per
  // pp and local batch sizes (divisors of global_batch / dp) per dp.
  std::map<int64_t, std::vector<PpScheduleChoice>> schedules_;
  std::map<int64_t, std::vector<int64_t>> local_batches_;
};

}  // namespace

AmMoeBackend automodel::DefaultBackend(const ModelSpec& model, const SystemSpec& system, int64_t ep) {
  AmMoeBackend b;
  // DeepSeek-V4: the TileLang kernels AutoModel's H100 examples run (examples/llm_finetune/
  // deepseek_v4: backend.attn tilelang), which its CP needs; the recipe writes the key.
  b.attn_tilelang = model.architecture == Architecture::kDeepseekV4;
  // HybridEP where EP spans nodes (Automodel PR #2630) or where DeepEP has no kernel
  // configuration for the group (domain::DeepEpRanksSupported: EP 3, 5, 6, 7 inside a node).
  const bool deepep = ep <= system.gpus_per_node && (ep <= 1 || domain::DeepEpRanksSupported(ep));
  b.dispatcher = deepep ? AmDispatcher::kDeepEP : AmDispatcher::kHybridEP;
  // DeepEP and HybridEP are CUDA libraries: on ROCm the torch dispatcher (BackendConfig's own
  // default without deep_ep installed), which the recipe names.
  if (system.gpu.rocm) b.dispatcher = AmDispatcher::kTorch;
  return b;
}

std::vector<Layout> automodel::Enumerate(const PlanRequest& req) { return search::ListLeaves(req, AutoModelSpace(req)); }
void automodel::ForEachLayout(const PlanRequest& req, const std::function<bool(const Layout&)>& visit,
                              const MeshFilter& keep_mesh) {
  search::VisitLeaves(req, AutoModelSpace(req), visit, keep_mesh);
}

PlanResult automodel::Plan(const PlanRequest& req) { return search::RunSearch(req, AutoModelSpace(req)); }

}  // namespace meshplan
