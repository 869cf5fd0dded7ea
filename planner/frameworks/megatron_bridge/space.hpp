#pragma once
// The Megatron-Bridge layout walk (frameworks/megatron_bridge/space.cpp) and the settings meshplan
// emits for its layouts (defaults.cpp); the framework registry dispatches to them.
#include <cstdint>
#include <memory>
#include <vector>

#include "meshplan/rule_domains.hpp"
#include "meshplan/search.hpp"

namespace meshplan::search {

class Space;  // search/driver.hpp

/// EnumerateLayouts for req.framework == kMegatronBridge.
std::vector<Layout> MegatronEnumerate(const PlanRequest& req);
/// MegatronEnumerate's layouts visited one by one (FrameworkOps::for_each_layout).
void MegatronForEachLayout(const PlanRequest& req, const std::function<bool(const Layout&)>& visit,
                           const MeshFilter& keep_mesh);
/// Plan for req.framework == kMegatronBridge.
PlanResult MegatronPlan(const PlanRequest& req);
/// The layout space MegatronPlan searches (`req` must outlive it).
std::unique_ptr<Space> MakeMegatronSpace(const PlanRequest& req);
// --- frameworks/megatron_bridge/defaults.cpp ---
/// The recipe settings meshplan emits for a Megatron layout (overlap flags, FSDP flags,
/// checkpoint format, CUDA_DEVICE_MAX_CONNECTIONS, recompute arguments), derived from its
/// axes and `system` as megatron.md 1.6, 2.8, 2.10 and 2.11 prescribe. Overwrites layout.mb.
/// `precision`: NVFP4 turns TP communication overlap off, as every NVFP4 perf recipe of
/// megatron.md's recipe table does (tp_comm_overlap False for all of them).
void ApplyEmittedSettings(Layout& layout, const SystemSpec& system, Precision precision = Precision::kBf16);
/// The recompute arguments ApplyEmittedSettings writes for `layout`'s recompute mode (the only
/// ones of its settings that read it): full recompute uniform, one layer per chunk; none
/// otherwise. Overwrites layout.mb.recompute_method and recompute_num_layers.
void ApplyRecomputeArguments(Layout& layout);
/// True for GPUs before Blackwell: GpuSpec::compute_capability below 10 (A100, H100, H200, MI300X).
bool PreBlackwellGpu(const SystemSpec& system);

/// Overrides `layout`'s software settings with `runtime` (a published recipe's): the token
/// dispatcher and EP overlap when ep > 1, CUDA graphs and the gradient dtype always. Call after
/// ApplyEmittedSettings.
void ApplyMbRuntime(Layout& layout, const MbRuntime& runtime);
/// The software settings `layout` carries, as ApplyMbRuntime would set them (its inverse, so a
/// new MbRuntime field is read where it is written): an allgather dispatcher (EP 1) reads as
/// MbRuntime's default, an unset EP overlap as off, a backend only with the flex dispatcher.
MbRuntime MbRuntimeOf(const Layout& layout);
/// The token dispatchers `plan` searches for MoE layouts with EP > 1: `own` (the recipe
/// function's, RecipeRuntime) first, then alltoall, flex with HybridEP and flex with DeepEP
/// where `gpu` runs that backend (domain::FlexBackendRuns: Megatron-Bridge's
/// validate_flex_dispatcher_backend), each with `own`'s other settings; duplicates dropped.
/// The recipe writer names the dispatcher of every MoE plan (recipe_write.cpp), so a searched
/// alternative is written into the recipe, never left to the function's default.
std::vector<MbRuntime> DispatcherChoices(const MbRuntime& own, const GpuSpec& gpu);
/// One model.cp_comm_type the Megatron-Bridge space emits, with the a2a level of a2a+p2p
/// (hierarchical_context_parallel_sizes [hcp_first, cp / hcp_first]; 0 otherwise).
struct CpCommChoice {
  MbCpComm type = MbCpComm::kUnset;
  int64_t hcp_first = 0;
};
/// The a2a level meshplan gives a2a+p2p: the CP ranks inside one scale-up (NVLink) domain,
/// domain / tp, when the CP group {cp, stride tp} spans several domains and that share is at
/// least 2 and divides cp; 0 when there is none. Megatron-Core transformer_config.py cp_comm_type
/// ("A2A communications in low-level CP groups (e.g., via NVLink), and P2P communications in
/// high-level CP groups (e.g., via IBLink)"); parallel_state.py create_hierarchical_groups puts
/// consecutive CP ranks in the first level.
int64_t HierarchicalCpA2aSize(const SystemSpec& system, int64_t tp, int64_t cp);
/// The CP group {cp, stride tp} lies inside one scale-up (NVLink) domain: tp·cp <= its GPUs.
bool CpGroupInsideDomain(const SystemSpec& system, int64_t tp, int64_t cp);
/// The cp_comm_types the space emits for a (tp, cp) mesh: with cp 1, or when `own` (the recipe
/// function's, or a fixed request's: PlanRequest::mb_runtime) sets one, only `own`'s; else null
/// (p2p, left unwritten) first, then a2a where the heads of a TP rank divide over cp and the CP
/// group stays inside one NVLink domain (across domains a2a+p2p keeps the all-to-all on NVLink;
/// a2a over all of it where there is no such split), all_gather,
/// and a2a+p2p at HierarchicalCpA2aSize where it exists and its heads divide; each also only where
/// the model's sliding windows and softmax sinks allow it (domain::MegatronCpCommTakes*).
std::vector<CpCommChoice> MegatronCpCommChoices(const PlanRequest& req, const MbRuntime& own, bool fixed, int64_t tp,
                                                int64_t cp);
/// Sets layout.mb's cp_comm_type and hierarchical_context_parallel_sizes to `choice` (a2a+p2p:
/// [hcp_first, cp / hcp_first]; otherwise null).
void ApplyCpComm(Layout& layout, const CpCommChoice& choice);
/// Turns off what Megatron-Core refuses of the layout's CUDA graphs with its recompute
/// (transformer_config.py __post_init__, Megatron-LM d98e8a64: with cuda_graph_impl
/// transformer_engine or local, full recompute asserts "full recompute is only supported with
/// full iteration CUDA graph"; selective recompute of "moe" asserts no moe_router graph): full
/// recompute runs without CUDA graphs, "moe" recompute without the router / preprocess graphs.
/// Call after ApplyMbRuntime.
void FitCudaGraphsToRecompute(Layout& layout);
/// The `recompute_modules` sets (MbRecomputeModule bits) the search tries with selective
/// recompute for model `m`: those of Megatron-Bridge's performance recipes that apply to it
/// ({mla_up_proj}, {mla_up_proj, mlp}, {mla_up_proj, layernorm, moe_act} with MLA;
/// {layernorm, moe_act}, {moe_act} with MoE; {mlp} for dense models). Never the default
/// {core_attn} (no memory saved under fused attention).
std::vector<uint32_t> SearchedRecomputeModules(const ModelSpec& m);
/// Sizes d of n in increasing order (the rules' domain::Divisors, named here for its callers).
using domain::Divisors;

}  // namespace meshplan::search
