// Exhaustive walk of the Megatron-Bridge layout space (megatron.md sections 1.2-1.6, 2).
//
// Fields are chosen in rule-stage order (mesh: TP, CP, PP, layer split + VPP, EP, ETP, DP
// flavour; features: SP, recompute; batch: micro-batch); the search driver (driver.cpp) runs
// each stage's rules as soon as its fields are set and skips a failing subtree. Every layout
// that passes all rules is scored with CostModel::Evaluate on its CostView
// (megatron_bridge::ToCostView).
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "frameworks/megatron_bridge/space.hpp"
#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "search/driver.hpp"
#include "meshplan/framework.hpp"

namespace meshplan::search {

bool PreBlackwellGpu(const SystemSpec& s) { return !s.gpu.BlackwellOrNewer(); }

namespace {

// One layer split per PP size, meshplan's choice: even, else embedding + loss accounted, else
// an explicit layout; and the VPP sizes the pipeline rules allow for it (MegatronVppDegrees).
std::vector<std::pair<MbPpSplit, int64_t>> VppChoices(int64_t num_layers, int64_t pp) {
  MbPpSplit split = MbPpSplit::kLayout;
  if (domain::MegatronPpDividesLayers(num_layers, pp, MbPpSplit::kEven)) {
    split = MbPpSplit::kEven;
  } else if (domain::MegatronPpDividesLayers(num_layers, pp, MbPpSplit::kAccountEmbeddingLoss)) {
    split = MbPpSplit::kAccountEmbeddingLoss;
  }
  std::vector<std::pair<MbPpSplit, int64_t>> out;
  for (int64_t v : domain::MegatronVppDegrees(num_layers, pp, split)) out.push_back({split, v});
  return out;
}

// Sequence parallel with every TP > 1 (Megatron-Bridge's recipes pair them), except where it
// cannot split the sequence (the multiple rule mb_sp_divides_sequence checks): TP then runs without
// it (seq 4097 had no TP > 1 layout at all).
bool SequenceParallelFor(int64_t tp, int64_t cp, int64_t seq_len) {
  return domain::MegatronSequenceParallelAllowed(tp, std::max<int64_t>(1, cp), seq_len);
}

struct Flavour {
  bool distopt, mfsdp, fsdp2;
};

}  // namespace

std::vector<MbRuntime> DispatcherChoices(const MbRuntime& own, const GpuSpec& gpu) {
  std::vector<MbRuntime> out = {own};
  auto add = [&](MbDispatcher d, MbFlexBackend b) {
    if (d == MbDispatcher::kFlex && (!domain::FlexBackendRuns(b, gpu) || gpu.rocm)) return;  // CUDA libraries
    for (const MbRuntime& x : out) {
      if (x.dispatcher == d && (d != MbDispatcher::kFlex || x.flex_backend == b)) return;
    }
    MbRuntime rt = own;
    rt.dispatcher = d;
    rt.flex_backend = d == MbDispatcher::kFlex ? b : MbFlexBackend::kNone;
    out.push_back(rt);
  };
  add(MbDispatcher::kAlltoall, MbFlexBackend::kNone);
  add(MbDispatcher::kFlex, MbFlexBackend::kHybridEP);
  add(MbDispatcher::kFlex, MbFlexBackend::kDeepEP);
  return out;
}

bool CpGroupInsideDomain(const SystemSpec& system, int64_t tp, int64_t cp) {
  const int64_t domain = system.scaleup_domain_gpus > 0 ? system.scaleup_domain_gpus : system.gpus_per_node;
  return tp * cp <= domain;
}

int64_t HierarchicalCpA2aSize(const SystemSpec& system, int64_t tp, int64_t cp) {
  const int64_t domain = system.scaleup_domain_gpus > 0 ? system.scaleup_domain_gpus : system.gpus_per_node;
  if (tp < 1 || cp < 2 || domain < 1 || tp * cp <= domain || domain % tp != 0) return 0;
  const int64_t a = domain / tp;
  return a >= 2 && a < cp && cp % a == 0 ? a : 0;
}

std::vector<CpCommChoice> MegatronCpCommChoices(const PlanRequest& req, const MbRuntime& own, bool fixed, int64_t tp,
                                                int64_t cp) {
  const CpCommChoice kept{own.cp_comm, own.cp_comm == MbCpComm::kA2aP2p ? own.hcp_first : 0};
  if (cp <= 1 || fixed || own.cp_comm != MbCpComm::kUnset) return {kept};
  const ModelSpec& m = req.model;
  auto takes = [&](MbCpComm t) {
    return (!domain::HasSlidingWindowLayers(m) || domain::MegatronCpCommTakesSlidingWindow(t)) &&
           (!m.attention_sinks || domain::MegatronCpCommTakesSoftmaxSinks(t));
  };
  std::vector<CpCommChoice> out;
  if (takes(MbCpComm::kP2p)) out.push_back({MbCpComm::kUnset, 0});
  if (takes(MbCpComm::kA2a) && (CpGroupInsideDomain(req.system, tp, cp) || HierarchicalCpA2aSize(req.system, tp, cp) == 0) &&
      domain::MegatronCpA2aHeadsDivide(m, tp, cp)) {
    out.push_back({MbCpComm::kA2a, 0});
  }
  if (takes(MbCpComm::kAllGather)) out.push_back({MbCpComm::kAllGather, 0});
  const int64_t a = HierarchicalCpA2aSize(req.system, tp, cp);
  if (a > 0 && takes(MbCpComm::kA2aP2p) && domain::MegatronCpA2aHeadsDivide(m, tp, a)) {
    out.push_back({MbCpComm::kA2aP2p, a});
  }
  if (out.empty()) out.push_back({MbCpComm::kUnset, 0});  // the rules say why none runs
  return out;
}

void ApplyCpComm(Layout& l, const CpCommChoice& c) {
  l.mb.cp_comm = c.type;
  const bool hier = c.type == MbCpComm::kA2aP2p && c.hcp_first > 0;
  l.mb.hcp_levels = hier ? 2 : 0;
  l.mb.hcp_first = hier ? c.hcp_first : 0;
  l.mb.hcp_product = hier ? l.cp : 0;
}

namespace {
constexpr Flavour kFlavours[] = {{true, false, false}, {false, false, false}, {true, true, false}, {false, false, true}};

// The mesh rows every layout Block emits passes by construction (MegatronSpace::
// EmitsOnlyLayoutsPassing; tests/search/space_test.cpp walks spaces to check it):
//   - the pipeline-layout rows read a recipe's pipeline_model_parallel_layout, which Block never
//     sets (its uneven splits are MbPpSplit values, checked by mb_pp_layout_stages);
//   - the settings rows check values ApplyEmittedSettings writes itself from the flavour, the
//     axes and the GPU: Megatron FSDP's flags, sharding, averaging, checkpoint format, rank
//     mapping and CUDA_DEVICE_MAX_CONNECTIONS, torch FSDP2's optimizer, checkpoint format and
//     gradient-accumulation fusion, one distributed-optimizer instance, the DP and P2P overlap
//     flags and the pipeline dtype, and the flavours never set both FSDP wrappers.
constexpr std::string_view kRowsPassedByConstruction[] = {
    "mb_pp_layout_alone",
    "mb_pp_layout_stages_divisible_by_pp",
    "mb_pp_layout_vpp",
    "mb_pp_layout_embedding_first",
    "mb_pp_layout_loss_last",
    "mb_pp_layout_num_layers",
    "mb_pp_layout_mtp_count",
    "mb_pp_layout_mtp_placement",
    "mb_pp_layout_no_encoder",
    "mb_fsdp_exclusive",
    "mb_megatron_fsdp_flags",
    "mb_megatron_fsdp_weight_hash",
    "mb_megatron_fsdp_average_in_collective",
    "mb_megatron_fsdp_ckpt_format",
    "mb_fsdp_dtensor_needs_megatron_fsdp",
    "mb_megatron_fsdp_no_tp_pp_dp_mapping",
    "mb_megatron_fsdp_cdmc",
    "mb_fsdp2_no_distributed_optimizer",
    "mb_fsdp2_ckpt_format",
    "mb_fsdp2_no_grad_acc_fusion",
    "mb_torch_dcp_no_tp_pp",
    "mb_distopt_instances_divide_dp_cp",
    "mb_overlap_param_gather",
    "mb_p2p_comm_flags",
    "mb_pipeline_dtype",
    "mb_tp_pp_dp_mapping_edp",
    "mb_vpp_pp2_needs_p2p_overlap",
};

class MegatronSpace : public Space {
 public:
  explicit MegatronSpace(const PlanRequest& r)
      : req_(r),
        runtime_(r.mb_runtime ? *r.mb_runtime
                              : megatron_bridge::RecipeRuntime(megatron_bridge::RecipeFunctionOf(r), r.system, nullptr)),
        // A request that fixes the software (validate, check) keeps its dispatcher; plan with
        // --search-dispatchers searches the others the GPU runs, its recipe function's own first.
        dispatchers_(r.mb_runtime || !r.mb_search_dispatchers ? std::vector<MbRuntime>{runtime_}
                                                              : DispatcherChoices(runtime_, r.system.gpu)) {
    const int64_t n = req_.setup.num_gpus;
    for (int64_t tp : Divisors(n)) {
      for (int64_t cp : Divisors(n / tp)) {
        for (int64_t pp : Divisors(n / (tp * cp))) {
          // meshplan's choice, not a rule: a decoder layer for every pipeline rank. With
          // account_for_embedding/loss_in_pipeline_split, PP = L + 1 or L + 2 dividing L + 2
          // would pass mb_pp_divides_layers with empty first and last stages; not searched.
          if (pp > req_.model.num_layers) break;
          parts_.push_back({tp, cp, pp, MegatronCpCommChoices(req_, runtime_, r.mb_runtime.has_value(), tp, cp),
                            VppChoices(req_.model.num_layers, pp), {}});
        }
      }
    }
    // Each part's blocks of meshes (one per layer split and VPP, EP size and ETP) and the
    // position of each block's first mesh, so that MeshesAt builds only the meshes asked for.
    for (Part& part : parts_) {
      uint32_t position = 0;
      for (uint32_t v = 0; v < part.vpps.size(); ++v) {
        for (uint32_t e = 0; e < ep_options_.size(); ++e) {
          for (int64_t etp : {int64_t{0}, int64_t{1}}) {
            if (!BlockExists(part, etp)) continue;
            part.blocks.push_back({position, 0, v, e, etp});
            part.blocks.back().count = Block(part, part.blocks.back(), nullptr, nullptr);
            position += part.blocks.back().count;
          }
        }
      }
    }
  }

  // One part per (tp, cp, pp), in walk order.
  size_t MeshParts() const override { return parts_.size(); }

  void Meshes(size_t part, const std::function<void(const Layout&)>& emit) const override {
    const Part& p = parts_[part];
    for (const MeshBlock& b : p.blocks) Block(p, b, nullptr, &emit);
  }

  bool MeshesAtBuildsOnlyThose() const override { return true; }

  void MeshesAt(size_t part, const std::vector<uint32_t>& positions,
                const std::function<void(const Layout&)>& emit) const override {
    const Part& p = parts_[part];
    for (size_t i = 0; i < positions.size();) {
      // The block holding positions[i]: the last one starting at or before it.
      const auto it = std::upper_bound(p.blocks.begin(), p.blocks.end(), positions[i],
                                       [](uint32_t pos, const MeshBlock& b) { return pos < b.start; });
      if (it == p.blocks.begin()) return;
      const MeshBlock& b = *(it - 1);
      const uint32_t end = b.start + b.count;
      if (positions[i] >= end) {  // past the part's last mesh: no mesh there
        ++i;
        continue;
      }
      Block(p, b, &positions, &emit);
      while (i < positions.size() && positions[i] < end) ++i;
    }
  }

  void Features(const Layout& mesh, std::vector<Layout>& out) const override {
    // `mesh` is one Block emitted, with sequence parallel, ApplyEmittedSettings, its runtime
    // and its CP exchange already set: every feature set shares those (of what
    // ApplyEmittedSettings writes only ApplyRecomputeArguments reads the recompute mode, and
    // Block's mesh has none), so each is the mesh with its recompute settings.
    const Layout& base = mesh;
    auto add = [&](Recompute rc, uint32_t modules) {
      Layout& l = out.emplace_back(base);
      l.recompute = rc;
      l.mb.recompute_modules = modules;
      ApplyRecomputeArguments(l);
      FitCudaGraphsToRecompute(l);
    };
    add(Recompute::kNone, 0);
    for (uint32_t modules : req_.mb_recompute_module_sets) add(Recompute::kSelective, modules);
    add(Recompute::kFull, 0);
  }

  // Features sets the recompute mode and modules, and from them ApplyRecomputeArguments' method
  // and layer count and FitCudaGraphsToRecompute's CUDA graphs: nothing else.
  bool FeatureSetsDifferInRecomputeOnly() const override { return true; }
  // A part is one (tp, cp, pp), and Block sets dp = world / (tp·cp·pp).
  bool PartsFixTpCpPp() const override { return true; }

  // The rows kRowsPassedByConstruction names.
  bool EmitsOnlyLayoutsPassing(const Rule& rule) const override {
    for (std::string_view name : kRowsPassedByConstruction) {
      if (name == rule.name) return true;
    }
    return false;
  }

  // A mesh's feature sets differ in their recompute settings and CUDA graphs only (Features),
  // the fields SetRecomputeView derives.
  CostView FeatureView(const Layout& feature, const ModelSpec& model, const TrainSetup& setup,
                       const CostView* sibling) const override {
    if (sibling == nullptr) return megatron_bridge::ToCostView(feature, model, setup);
    CostView v = *sibling;
    megatron_bridge::SetRecomputeView(v, feature);
    return v;
  }

  void Leaves(const Layout& subtree, std::vector<Layout>& out) const override {
    Layout l = subtree;
    bool any = false;
    for (int64_t mbs = 1; mbs <= req_.max_micro_batch; mbs *= 2) {
      if (!domain::GlobalBatchDivides(req_.setup.global_batch, mbs, l.dp)) continue;
      any = true;
      SetMegatronMicroBatch(l, mbs, req_.setup);
      out.push_back(l);
    }
    if (!any) {  // no micro-batch divides: let mb_global_batch_divisible say so once
      SetMegatronMicroBatch(l, 1, req_.setup);
      out.push_back(l);
    }
  }

  // The smallest micro-batch holds the least activation memory; the schedule is fixed by
  // the subtree (VPP is a mesh field here).
  void MemoryBoundLayouts(const Layout& subtree, std::vector<Layout>& out) const override {
    Layout l = subtree;
    SetMegatronMicroBatch(l, 1, req_.setup);
    out.push_back(l);
  }

 private:
  struct MeshBlock {
    uint32_t start;         ///< position of its first mesh in the part's walk
    uint32_t count;         ///< its meshes
    uint32_t vpp;           ///< index in Part::vpps
    uint32_t ep;            ///< index in ep_options_
    int64_t etp;            ///< 0 (unset) or 1
  };
  struct Part {
    int64_t tp, cp, pp;
    std::vector<CpCommChoice> cp_comms;  ///< MegatronCpCommChoices of (tp, cp), computed once
    std::vector<std::pair<MbPpSplit, int64_t>> vpps;  ///< VppChoices(num_layers, pp)
    std::vector<MeshBlock> blocks;       ///< in walk order
  };
  // Meshes of one block, in walk order (its first at block.start): each emitted, or with
  // `only` (ascending positions) only those at its positions; with no `emit` none is built.
  // Returns the block's mesh count.
  uint32_t Block(const Part& part, const MeshBlock& block, const std::vector<uint32_t>* only,
                 const std::function<void(const Layout&)>* emit) const;
  bool BlockExists(const Part& part, int64_t etp) const {
    return !(etp == 1 && (part.tp == 1 || !req_.model.is_moe()));  // etp 1 with TP 1: the same as unset
  }

  const PlanRequest& req_;
  const MbRuntime runtime_;  ///< the request's, else the recipe function's (RecipeRuntime)
  const std::vector<MbRuntime> dispatchers_;  ///< runtime_ and the dispatchers plan searches besides (DispatcherChoices)
  const std::vector<int64_t> ep_options_ = domain::ExpertParallelSizes(req_.model, req_.setup.num_gpus);
  std::vector<Part> parts_;
};

uint32_t MegatronSpace::Block(const Part& part, const MeshBlock& block, const std::vector<uint32_t>* only,
                              const std::function<void(const Layout&)>* emit) const {
  const int64_t n = req_.setup.num_gpus;
  const int64_t tp = part.tp, cp = part.cp, pp = part.pp;
  const auto& [split, vpp] = part.vpps[block.vpp];
  const int64_t ep = ep_options_[block.ep], etp = block.etp;
  // With one data-parallel rank for the dense and the expert parameters, every DP flavour
  // shards over one rank: the same layout. Only the first allowed is emitted.
  const int64_t dense_dp = n / (tp * pp);  // dp·cp
  const int64_t expert_dp = n / (pp * std::max<int64_t>(1, ep) * (etp > 0 ? etp : tp));
  const bool one_dp_rank = dense_dp == 1 && (!req_.model.is_moe() || expert_dp == 1);
  bool emitted = false;
  uint32_t position = block.start;
  // The meshes of a flavour: one per dispatcher (EP > 1) and CP exchange type.
  const uint32_t per_flavour = static_cast<uint32_t>((ep > 1 ? dispatchers_.size() : 1) * part.cp_comms.size());
  auto wanted_in = [&](uint32_t begin, uint32_t end) {
    const auto it = std::lower_bound(only->begin(), only->end(), begin);
    return it != only->end() && *it < end;
  };
  for (const Flavour& f : kFlavours) {
    const Strategy st = f.mfsdp ? Strategy::kMegatronFsdp : f.fsdp2 ? Strategy::kFsdp2 : Strategy::kDdp;
    if (std::find(req_.strategies.begin(), req_.strategies.end(), st) == req_.strategies.end()) continue;
    if (f.fsdp2 && !req_.mb_torch_fsdp2) continue;
    if (one_dp_rank && emitted) continue;
    emitted = true;
    if (emit == nullptr || (only != nullptr && !wanted_in(position, position + per_flavour))) {
      position += per_flavour;
      continue;
    }
    Layout l;
    l.framework = Framework::kMegatronBridge;
    l.mtp_layers = req_.model.mtp_num_layers;  // as Megatron-Bridge's model provider sets it
    l.tp = tp;
    l.cp = cp;
    l.pp = pp;
    l.dp = n / (tp * cp * pp);
    l.vpp = vpp;
    l.pp_split = split;
    l.ep = ep;
    l.etp = etp;
    l.use_distributed_optimizer = f.distopt;
    l.mb.use_megatron_fsdp = f.mfsdp;
    l.mb.use_torch_fsdp2 = f.fsdp2;
    l.sequence_parallel = SequenceParallelFor(tp, cp, req_.setup.seq_len);
    ApplyEmittedSettings(l, req_.system, req_.setup.precision);
    // The dispatcher is a field of MoE layouts with EP > 1 only (ApplyMbRuntime). `l` is set in
    // place: ApplyMbRuntime writes every field a runtime sets (with EP > 1 the dispatcher's too,
    // else only the first runtime is emitted) and ApplyCpComm every CP-exchange field.
    for (const MbRuntime& rt : dispatchers_) {
      ApplyMbRuntime(l, rt);
      // The attention's CP exchange: one layout per type the mesh runs (cp_comms).
      for (const CpCommChoice& cc : part.cp_comms) {
        const uint32_t at = position++;
        if (only != nullptr && !std::binary_search(only->begin(), only->end(), at)) continue;
        ApplyCpComm(l, cc);
        (*emit)(l);
      }
      if (ep <= 1) break;
    }
  }
  return position - block.start;
}

}  // namespace

std::vector<Layout> MegatronEnumerate(const PlanRequest& req) { return ListLeaves(req, MegatronSpace(req)); }
void MegatronForEachLayout(const PlanRequest& req, const std::function<bool(const Layout&)>& visit,
                           const MeshFilter& keep_mesh) {
  VisitLeaves(req, MegatronSpace(req), visit, keep_mesh);
}

PlanResult MegatronPlan(const PlanRequest& req) { return RunSearch(req, MegatronSpace(req)); }
std::unique_ptr<Space> MakeMegatronSpace(const PlanRequest& req) { return std::make_unique<MegatronSpace>(req); }

}  // namespace meshplan::search
