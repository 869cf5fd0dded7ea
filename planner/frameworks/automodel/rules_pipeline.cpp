// Pipeline-parallel rules of NeMo AutoModel (main / v0.5).
// Source files are under nemo_automodel/ in NVIDIA-NeMo/Automodel.
#include <algorithm>

#include "meshplan/rule_domains.hpp"
#include "rules/rule_util.hpp"

namespace meshplan::rules {
namespace {

const Layout& L(const RuleContext& c) { return c.layout; }

/// PP cannot split a shared embedding / lm_head weight across stages.
/// Source: components/distributed/pipelining/hf_utils.py::validate_hf_model_for_pipeline_support.
bool PpNoTiedEmbeddings(const RuleContext& c) { return L(c).pp == 1 || !c.model.tie_word_embeddings; }
std::string PpNoTiedEmbeddingsMsg(const RuleContext& c) {
  return Cat("Pipeline parallelism (pp_size=", L(c).pp,
             ") does not support tie_word_embeddings=True; use pp_size: 1");
}

/// The schedule splits local_batch_size into micro-batches of pp_microbatch_size.
/// Source: components/distributed/pipelining/functional.py::build_pipeline_schedule.
bool PpMicrobatchDividesLocalBatch(const RuleContext& c) {
  return domain::PpMicrobatchDividesLocalBatch(L(c).local_batch_size, L(c).pp_microbatch_size, L(c).pp);
}
std::string PpMicrobatchDividesLocalBatchMsg(const RuleContext& c) {
  return Cat("Batch size ", L(c).local_batch_size, " must be divisible by pp_microbatch_size ",
             L(c).pp_microbatch_size);
}

/// Every stage needs a micro-batch in flight: local_batch_size / pp_microbatch_size >= pp.
/// Source: recipes/llm/train_ft.py ("pp_batch_size X // pp_microbatch_size Y must be >= pp_size Z").
/// For 1f1b torch asks the same of the schedule it builds (one stage per rank, so its stage
/// count is pp): torch/distributed/pipelining/schedules.py Schedule1F1B.__init__ ("Number of
/// microbatches (n) must be greater than or equal to the number of stages (S)").
bool PpEnoughMicrobatches(const RuleContext& c) {
  return domain::PpEnoughMicrobatches(L(c).local_batch_size, L(c).pp_microbatch_size, L(c).pp);
}
std::string PpEnoughMicrobatchesMsg(const RuleContext& c) {
  return Cat("pp_batch_size ", L(c).local_batch_size, " // pp_microbatch_size ", L(c).pp_microbatch_size,
             " must be >= pp_size ", L(c).pp, "; raise step_scheduler.local_batch_size to at least ",
             L(c).pp * L(c).pp_microbatch_size);
}

/// With layers_per_stage and no rounding mode, S = ceil(L / lps) must be a multiple of pp.
/// Source: components/distributed/pipelining/functional.py::calculate_virtual_stages.
bool PpStagesDivisible(const RuleContext& c) {
  const Layout& l = L(c);
  return domain::PpStagesDivisible(c.model.num_layers, l.pp, l.layers_per_stage, l.stage_rounding);
}
std::string PpStagesDivisibleMsg(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t s = (c.model.num_layers + l.layers_per_stage - 1) / l.layers_per_stage;
  return Cat("Number of virtual stages (", s, " = ceil(", c.model.num_layers, " layers / layers_per_stage ",
             l.layers_per_stage, ")) must be divisible by pipeline parallel size (", l.pp,
             "); set round_virtual_stages_to_pp_multiple: up or down");
}

/// At least one stage per rank, and no more stages than layers.
/// Source: components/distributed/pipelining/functional.py::generate_hf_model_fqn_per_model_part
/// ("Number of stages (S) cannot exceed number of layers (L)").
bool PpStagesFitLayers(const RuleContext& c) {
  if (L(c).pp == 1) return true;
  return domain::PpStagesFitLayers(c.model.num_layers, L(c).pp, SplitStages(c.model.num_layers, L(c)).num_stages);
}
std::string PpStagesFitLayersMsg(const RuleContext& c) {
  const StageSplit split = SplitStages(c.model.num_layers, L(c));
  return Cat("Number of stages (", split.num_stages, ") cannot exceed number of layers (", c.model.num_layers,
             ") and must be at least pp_size (", L(c).pp, ")");
}

/// 1F1B is a single-stage schedule: exactly one stage per rank.
/// Source: components/distributed/pipelining/functional.py::calculate_virtual_stages
/// ("Single stage schedule requires exactly 1 stage per rank").
bool PpSingleStageSchedule(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.pp == 1 || l.pp_schedule != PpSchedule::k1F1B) return true;
  return domain::PpScheduleStages(l.pp, l.pp_schedule, SplitStages(c.model.num_layers, l).num_stages);
}
std::string PpSingleStageScheduleMsg(const RuleContext& c) {
  return Cat("Single stage schedule requires exactly 1 stage per rank, but pp_schedule 1f1b with layers_per_stage ",
             L(c).layers_per_stage, " gives ", SplitStages(c.model.num_layers, L(c)).num_stages, " stages for pp_size ",
             L(c).pp, "; use interleaved1f1b or layers_per_stage: null");
}

/// Interleaved 1F1B is multi-stage: at least two stages per rank.
/// Source: components/distributed/pipelining/functional.py::calculate_virtual_stages
/// ("Multi-stage schedule requires at least 2 stages per rank").
bool PpMultiStageSchedule(const RuleContext& c) {
  const Layout& l = L(c);
  if (l.pp == 1 || l.pp_schedule != PpSchedule::kInterleaved1F1B) return true;
  return domain::PpScheduleStages(l.pp, l.pp_schedule, SplitStages(c.model.num_layers, l).num_stages);
}
std::string PpMultiStageScheduleMsg(const RuleContext& c) {
  return Cat("Multi-stage schedule requires at least 2 stages per rank, but interleaved1f1b has ",
             SplitStages(c.model.num_layers, L(c)).num_stages, " stages for pp_size ", L(c).pp,
             "; lower layers_per_stage or use 1f1b");
}

/// Interleaved 1F1B runs the micro-batches in rounds of pp: rounds = max(1, n // pp) must divide
/// n = local_batch_size // pp_microbatch_size. Source: torch/distributed/pipelining/schedules.py
/// ScheduleInterleaved1F1B.__init__ (pytorch/pytorch main at 00722e648b, the stored version
/// nearest torch 2.11: it has ScheduleDualPipeV and backward_requires_autograd; the condition
/// and its message are the same in every version read back to 2.5's flexible interleaved 1F1B),
/// which AutoModel's build_pipeline_schedule constructs with n_microbatches = local_batch_size
/// // microbatch_size (components/distributed/pipelining/functional.py).
bool PpInterleavedRounds(const RuleContext& c) {
  const Layout& l = L(c);
  return domain::PpInterleavedRounds(l.local_batch_size, l.pp_microbatch_size, l.pp, l.pp_schedule);
}
std::string PpInterleavedRoundsMsg(const RuleContext& c) {
  const Layout& l = L(c);
  const int64_t n = l.local_batch_size / l.pp_microbatch_size;
  const int64_t rounds = std::max<int64_t>(1, n / l.pp);
  // Whole rounds: n a multiple of pp (n / pp rounds of pp each), or n < 2 * pp (one round).
  const int64_t below = n / l.pp * l.pp * l.pp_microbatch_size, above = below + l.pp * l.pp_microbatch_size;
  return Cat("Interleaved 1F1B requires the number of microbatches to be a multiple of the number of rounds (",
             rounds, "), but got ", n, ": local_batch_size ", l.local_batch_size, " // pp_microbatch_size ",
             l.pp_microbatch_size, " = ", n, " microbatches, rounds = max(1, ", n, " // pp_size ", l.pp, ") = ",
             rounds, "; use a local_batch_size whose microbatch count is a multiple of pp_size (", below, " or ",
             above, " with pp_microbatch_size ", l.pp_microbatch_size, "), or pp_schedule: 1f1b with layers_per_stage: null");
}

constexpr const char* kFunctional = "components/distributed/pipelining/functional.py";

const Rule kRules[] = {
    {"pp_no_tied_embeddings", "components/distributed/pipelining/hf_utils.py::validate_hf_model_for_pipeline_support",
     RuleStage::kMesh, PpNoTiedEmbeddings, PpNoTiedEmbeddingsMsg, kNoDp},
    {"pp_microbatch_divides_local_batch", "components/distributed/pipelining/functional.py::build_pipeline_schedule",
     RuleStage::kBatch, PpMicrobatchDividesLocalBatch, PpMicrobatchDividesLocalBatchMsg, kNoDp},
    {"pp_enough_microbatches", "recipes/llm/train_ft.py (pp_batch_size // pp_microbatch_size >= pp_size)",
     RuleStage::kBatch, PpEnoughMicrobatches, PpEnoughMicrobatchesMsg, kNoDp},
    {"pp_stages_divisible", kFunctional, RuleStage::kBatch, PpStagesDivisible, PpStagesDivisibleMsg, kNoDp},
    {"pp_stages_fit_layers", kFunctional, RuleStage::kBatch, PpStagesFitLayers, PpStagesFitLayersMsg, kNoDp},
    {"pp_single_stage_schedule", kFunctional, RuleStage::kBatch, PpSingleStageSchedule, PpSingleStageScheduleMsg,
     kNoDp},
    {"pp_multi_stage_schedule", kFunctional, RuleStage::kBatch, PpMultiStageSchedule, PpMultiStageScheduleMsg, kNoDp},
    {"pp_interleaved_microbatch_rounds", "torch/distributed/pipelining/schedules.py::ScheduleInterleaved1F1B.__init__",
     RuleStage::kBatch, PpInterleavedRounds, PpInterleavedRoundsMsg, kNoDp},
};

}  // namespace

std::span<const Rule> PipelineRules() { return kRules; }

}  // namespace meshplan::rules
