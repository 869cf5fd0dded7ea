#pragma once
/// \file layout.hpp
/// A training setup (what the user asks for) and a layout (one point of the search
/// space: a complete AutoModel `distributed:` + `step_scheduler:` choice).

#include <cstdint>
#include <string>

namespace meshplan {

/// Numeric precision of the GEMMs. Weights, gradients and optimizer state keep the
/// mixed-precision dtypes of the strategy whatever this is.
enum class Precision { kBf16, kFp8 };

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

  int64_t dp_shard() const { return dp / dp_replicate; }
  /// Sequences in one forward pass.
  int64_t micro_batch() const { return pp > 1 ? pp_microbatch_size : local_batch_size; }
  /// Micro-batches per pipeline schedule call (1 without PP).
  int64_t pp_microbatches() const { return pp > 1 ? local_batch_size / pp_microbatch_size : 1; }
  /// Gradient-accumulation steps: global_batch / (local_batch_size * dp)
  /// (AutoModel components/training/step_scheduler.py).
  int64_t GradAccumSteps(const TrainSetup& s) const { return s.global_batch / (local_batch_size * dp); }
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
};

/// Stage count as AutoModel computes it. With layers_per_stage null: pp stages for 1f1b,
/// 2*pp for interleaved1f1b; else S = ceil(L / layers_per_stage), rounded to a multiple of
/// pp if a rounding mode is set. Layers are split with the first L % S stages one layer
/// larger; rank r holds stages r, r+pp, r+2pp, ... Does not check validity
/// (see rules); num_stages is 0 when S would be 0.
StageSplit SplitStages(int64_t num_layers, const Layout& layout);

const char* StrategyName(Strategy s);        ///< "fsdp2", "megatron_fsdp", "ddp"
const char* RecomputeName(Recompute r);      ///< "none", "selective", "full"
const char* PpScheduleName(PpSchedule s);    ///< "1f1b", "interleaved1f1b"
const char* PrecisionName(Precision p);      ///< "bf16", "fp8"
const char* StageRoundingName(StageRounding r);  ///< "null", "up", "down"

/// One-line description, e.g. "fsdp2 tp4 pp2 cp1 ep1 dp4 (rep1) lbs8 mb1 interleaved1f1b v2 sp ac=full".
std::string Describe(const Layout& layout);

}  // namespace meshplan
