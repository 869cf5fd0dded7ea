#pragma once
// Settings of Megatron-Bridge's published performance runs that its performance table does
// not list (token dispatcher, expert-parallel overlap, recompute modules, CUDA graphs,
// gradient-reduction dtype, activation offloading), read from recipes/megatron-bridge-perf.yaml
// (extracted from the Megatron-Bridge recipes at each release's git tag; provenance in the
// file's header). `meshplan validate` applies them to the published layouts so that the cost
// model prices the run that was measured.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/yaml_util.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/search.hpp"

namespace meshplan::recipe {

/// One published run's recipe settings. Keys: release (the table's release string), model
/// (meshplan preset), system (hwdb system), precision (bf16 | fp8cs | fp8mx | nvfp4), gpus,
/// tokendrop.
struct PerfRecipeSettings {
  std::string release, model, system, precision;
  int64_t gpus = 0;
  bool tokendrop = false;
  int line = 0;  ///< 1-based line of the entry in the file
  /// Runtime settings (dispatcher, EP overlap, CUDA graphs, gradient dtype), as the search's
  /// MbRuntime so that the planner's own layouts can be priced with the same software.
  MbRuntime runtime;
  Recompute recompute = Recompute::kNone;  ///< selective with an empty module list reads as none
  uint32_t recompute_modules = 0;          ///< MbRecomputeModule bits (selective)
  MbRecomputeMethod recompute_method = MbRecomputeMethod::kUnset;  ///< full recompute: uniform or block
  int64_t recompute_num_layers = 0;        ///< full recompute: layers per group (uniform) or per stage (block)
  int64_t cpu_offloading_num_layers = 0;   ///< model.cpu_offloading_num_layers
  double optimizer_state_bytes = 12.0;     ///< MbSettings::optimizer_state_bytes (precision-aware optimizer)
  /// ddp.use_megatron_fsdp (optional key, default false): the run's data parallelism is
  /// Megatron FSDP (optim_grads_params), priced as MbSettings::use_megatron_fsdp.
  bool use_megatron_fsdp = false;
  /// ddp.num_distributed_optimizer_instances (optional, default 1): HSDP / partial distributed
  /// optimizer. Carried onto the layout (its divisibility rule applies); the memory model
  /// still shards over the whole data-parallel group (not priced: entries' notes say so).
  int64_t num_distributed_optimizer_instances = 1;
  /// model.offload_modules with fine_grained_activation_offloading (optional, default []):
  /// Megatron-Core transformer_config.py offload_modules names, kept as given. Read and
  /// reported, not priced (the memory model has no per-module offload term yet).
  std::vector<std::string> offload_modules;
};

struct PerfRecipeTable {
  std::string file;  ///< where it was read from ("recipes/megatron-bridge-perf.yaml" if embedded)
  std::vector<PerfRecipeSettings> recipes;
  /// The entry for a published row, or nullptr when the table has none.
  const PerfRecipeSettings* Find(const std::string& release, const std::string& model, const std::string& system,
                                 const std::string& precision, int64_t gpus, bool tokendrop) const;
};

/// Reads `path`, or the embedded recipes/megatron-bridge-perf.yaml when `path` is empty.
/// Throws InputError naming file, line and field for a missing or unknown key, a value
/// outside its set (e.g. "expected alltoall, flex, allgather or none; found 'a2a'"), or two
/// entries with the same key.
PerfRecipeTable LoadPerfRecipeSettings(const std::string& path);

/// Megatron-Core list keys read from `r` (a YAML list of names; an unknown name is an
/// InputError naming the known ones): model.recompute_modules -> MbRecomputeModule bits,
/// model.cuda_graph_scope -> MbGraphScope bits.
uint32_t ReadRecomputeModules(yamlutil::MapReader& r, const std::string& key);
uint32_t ReadCudaGraphScope(yamlutil::MapReader& r, const std::string& key);
/// Megatron-Core's CudaGraphScope names and their MbGraphScope bits, in the order recipes list them.
struct GraphScopeName {
  const char* name;
  uint32_t bit;
};
std::span<const GraphScopeName> CudaGraphScopeNames();
/// model.cuda_graph_impl as Megatron-Core spells it: none, transformer_engine, or local
/// (whole-layer graphs, like transformer_engine with an empty scope; the whole iteration when
/// `scope`, the MbGraphScope bits of cuda_graph_scope, has full_iteration). With
/// `full_iteration_spelling` (meshplan's perf-settings file) the value full_iteration is
/// accepted for that too. Under local, `scope` is cleared (local graphs take no module scope).
/// Throws InputError for other values and for full_iteration with transformer_engine.
MbCudaGraph ReadCudaGraphImpl(yamlutil::MapReader& r, const std::string& key, uint32_t& scope,
                              bool full_iteration_spelling = false);

/// A torch dtype as Megatron-Core's OptimizerConfig takes it ("torch.bfloat16", "bfloat16" or
/// Megatron-Bridge's short "bf16"), by its torch name without the prefix ("bfloat16"); the
/// short spellings bf16, fp16, fp32 and fp8 (torch.uint8) are mapped, other names returned as given.
std::string TorchDtypeName(const std::string& given);
/// Bytes of an element of the TorchDtypeName `name`: float32 4, uint8 1, others 2.
double TorchDtypeBytes(const std::string& name);
/// Bytes per parameter of the optimizer state the distributed optimizer shards, from the
/// element bytes of main_params_dtype, exp_avg_dtype and exp_avg_sq_dtype: their sum, except that
/// with use_precision_aware_optimizer and store_param_remainders (Megatron-Core's default) the
/// fp32 master weights of a bf16 model are kept as their 16-bit remainders (distrib_optimizer.py
/// init_shard(torch.int16)): fp32 master + bf16 moments = 2 + 2 + 2. Without the precision-aware
/// optimizer the state is fp32: 12.
double OptimizerStateBytes(bool precision_aware, bool store_param_remainders, double master, double exp_avg,
                           double exp_avg_sq);

/// The table's precision name of a performance-table precision cell: BF16 or empty -> bf16;
/// FP8, FP8-CS, "FP8-CS (FP8-MX)" -> fp8cs; MXFP8, FP8-MX -> fp8mx; NVFP4 -> nvfp4.
std::string PerfPrecisionKey(const std::string& cell);

}  // namespace meshplan::recipe
