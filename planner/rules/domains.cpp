// The rules' value domains (include/meshplan/rule_domains.hpp): the predicates the rules
// call, and the enumerators the layout spaces call, which list what the predicates accept.
#include "meshplan/rule_domains.hpp"

#include <algorithm>

namespace meshplan::domain {

bool FlexBackendRuns(MbFlexBackend backend, const GpuSpec& gpu) {
  const int major = static_cast<int>(gpu.compute_capability);
  if (backend == MbFlexBackend::kDeepEP) {
    return major == 8 || major == 9 || gpu.display_name.rfind("NVIDIA B200", 0) == 0 ||
           gpu.display_name.rfind("NVIDIA B300", 0) == 0;
  }
  if (backend == MbFlexBackend::kHybridEP) return major >= 8 && major <= 10;
  return true;
}

std::vector<int64_t> DeepEpRankSizes() { return {2, 4, 8, 16, 24, 32, 64, 128, 144, 160}; }

bool DeepEpRanksSupported(int64_t ranks) {
  const std::vector<int64_t> sizes = DeepEpRankSizes();
  return std::find(sizes.begin(), sizes.end(), ranks) != sizes.end();
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d == 0) {
      out.push_back(d);
      if (d != n / d) out.push_back(n / d);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool EpRequiresMoe(const ModelSpec& model, int64_t ep) { return ep == 1 || model.is_moe(); }

bool EpDividesExperts(const ModelSpec& model, int64_t ep) { return ep == 1 || model.num_experts % ep == 0; }

std::vector<int64_t> ExpertParallelSizes(const ModelSpec& model, int64_t num_gpus) {
  std::vector<int64_t> out = {1};
  if (!model.is_moe()) return out;
  for (int64_t e : Divisors(model.num_experts)) {
    if (e > 1 && e <= num_gpus && EpRequiresMoe(model, e) && EpDividesExperts(model, e)) out.push_back(e);
  }
  return out;
}

bool GlobalBatchDivides(int64_t global_batch, int64_t per_rank, int64_t dp) {
  const int64_t per_step = per_rank * dp;
  return per_step > 0 && global_batch % per_step == 0;
}

std::vector<int64_t> PerRankBatches(int64_t global_batch, int64_t dp) {
  std::vector<int64_t> out;
  if (global_batch < 1 || dp < 1 || global_batch % dp != 0) return out;
  for (int64_t b : Divisors(global_batch / dp)) {
    if (GlobalBatchDivides(global_batch, b, dp)) out.push_back(b);
  }
  return out;
}

int64_t CpSeqMultiple(int64_t cp) { return cp > 1 ? 2 * cp : 1; }

bool PpMicrobatchDividesLocalBatch(int64_t local_batch, int64_t microbatch, int64_t pp) {
  return pp == 1 || local_batch % microbatch == 0;
}

bool PpEnoughMicrobatches(int64_t local_batch, int64_t microbatch, int64_t pp) {
  return pp == 1 || local_batch / microbatch >= pp;
}

bool PpStagesDivisible(int64_t num_layers, int64_t pp, int64_t layers_per_stage, StageRounding rounding) {
  if (pp == 1 || layers_per_stage <= 0 || rounding != StageRounding::kNone) return true;
  return ((num_layers + layers_per_stage - 1) / layers_per_stage) % pp == 0;
}

bool PpStagesFitLayers(int64_t num_layers, int64_t pp, int64_t stages) {
  return pp == 1 || (stages >= pp && stages <= num_layers);
}

bool PpScheduleStages(int64_t pp, PpSchedule schedule, int64_t stages) {
  if (pp == 1) return true;
  return schedule == PpSchedule::k1F1B ? stages == pp : stages >= 2 * pp;
}

bool PpInterleavedRounds(int64_t local_batch, int64_t microbatch, int64_t pp, PpSchedule schedule) {
  if (pp == 1 || schedule != PpSchedule::kInterleaved1F1B || microbatch < 1) return true;
  const int64_t n = local_batch / microbatch;
  return n % std::max<int64_t>(1, n / pp) == 0;
}

std::vector<PpScheduleChoice> PpScheduleChoices(int64_t num_layers, int64_t pp) {
  std::vector<PpScheduleChoice> out;
  if (pp < 2) return out;
  // The stage count of a choice as the rules see it (SplitStages: calculate_virtual_stages).
  Layout probe;
  probe.pp = pp;
  auto stages = [&](const PpScheduleChoice& c) {
    probe.pp_schedule = c.schedule;
    probe.layers_per_stage = c.layers_per_stage;
    probe.stage_rounding = c.rounding;
    return SplitStages(num_layers, probe).num_stages;
  };
  auto allowed = [&](const PpScheduleChoice& c, int64_t s) {
    return PpStagesDivisible(num_layers, pp, c.layers_per_stage, c.rounding) && PpStagesFitLayers(num_layers, pp, s) &&
           PpScheduleStages(pp, c.schedule, s);
  };
  for (int64_t v = 1; v * pp <= num_layers; ++v) {
    const int64_t target = v * pp;
    std::vector<PpScheduleChoice> tries;
    if (v == 1) {
      tries = {{PpSchedule::k1F1B, 0, StageRounding::kNone}};
    } else if (v == 2) {
      tries = {{PpSchedule::kInterleaved1F1B, 0, StageRounding::kNone}};
    } else {
      // The smallest layers_per_stage with ceil(L / lps) <= target; below it ceil(L / lps) > target.
      const int64_t lps = (num_layers + target - 1) / target;
      tries = {{PpSchedule::kInterleaved1F1B, lps, StageRounding::kNone},
               {PpSchedule::kInterleaved1F1B, lps, StageRounding::kUp}};
      // ceil(L / (lps - 1)) is the least count above target: rounded down, it reaches target
      // when below target + pp (61 layers, pp 8: lps 1 gives 61, down to 56 = 7 x 8).
      if (lps > 1) tries.push_back({PpSchedule::kInterleaved1F1B, lps - 1, StageRounding::kDown});
    }
    for (const PpScheduleChoice& c : tries) {
      const int64_t s = stages(c);
      if (s == target && allowed(c, s)) {
        out.push_back(c);
        break;
      }
    }
  }
  return out;
}

int64_t MegatronSplitLayers(int64_t num_layers, MbPpSplit split) {
  return num_layers + (split == MbPpSplit::kAccountEmbeddingLoss ? 2 : 0);
}

bool MegatronPpDividesLayers(int64_t num_layers, int64_t pp, MbPpSplit split) {
  return split == MbPpSplit::kLayout || MegatronSplitLayers(num_layers, split) % pp == 0;
}

bool MegatronVppDividesLayers(int64_t num_layers, int64_t pp, MbPpSplit split, int64_t vpp) {
  return vpp == 1 || split == MbPpSplit::kLayout || (MegatronSplitLayers(num_layers, split) / pp) % vpp == 0;
}

bool MegatronVppNeedsPp(int64_t pp, int64_t vpp) { return vpp == 1 || pp > 1; }

bool MegatronLayoutStagesFit(int64_t num_layers, int64_t pp, int64_t vpp, MbPpSplit split) {
  return split != MbPpSplit::kLayout || pp * vpp <= num_layers;
}

std::vector<int64_t> MegatronVppDegrees(int64_t num_layers, int64_t pp, MbPpSplit split) {
  std::vector<int64_t> out;
  if (pp < 1 || !MegatronPpDividesLayers(num_layers, pp, split)) return out;
  // Every rule below caps vpp at the layers per rank (the split's, or the layout's stages).
  const int64_t most = std::max<int64_t>(1, MegatronSplitLayers(num_layers, split) / pp);
  for (int64_t v = 1; v <= most; ++v) {
    if (MegatronVppNeedsPp(pp, v) && MegatronVppDividesLayers(num_layers, pp, split, v) &&
        MegatronLayoutStagesFit(num_layers, pp, v, split)) {
      out.push_back(v);
    }
  }
  return out;
}

bool MegatronSpDividesSequence(int64_t seq_len, int64_t tp, int64_t cp) {
  return seq_len % SequenceParallelSeqMultiple(tp, cp) == 0;
}

bool MegatronSequenceParallelAllowed(int64_t tp, int64_t cp, int64_t seq_len) {
  return tp > 1 && MegatronSpDividesSequence(seq_len, tp, cp);
}

bool MegatronCpA2aHeadsDivide(const ModelSpec& m, int64_t tp, int64_t n) {
  if (n <= 1 || tp < 1) return true;
  const int64_t heads = m.num_attention_heads;
  const int64_t kv = m.mla ? m.num_attention_heads : (m.num_key_value_heads > 0 ? m.num_key_value_heads : heads);
  if (heads % tp != 0 || kv % tp != 0) return true;
  return (heads / tp) % n == 0 && (kv / tp) % n == 0;
}

bool MegatronCpCommTakesSlidingWindow(MbCpComm type) {
  return type == MbCpComm::kA2a || type == MbCpComm::kAllGather;
}

bool MegatronCpCommTakesSoftmaxSinks(MbCpComm type) { return type == MbCpComm::kA2a; }

const char* CpCommValue(MbCpComm type) {
  switch (type) {
    case MbCpComm::kAllGather: return "all_gather";
    case MbCpComm::kA2a: return "a2a";
    case MbCpComm::kA2aP2p: return "a2a+p2p";
    case MbCpComm::kUnset:
    case MbCpComm::kP2p: break;
  }
  return "p2p";
}

bool HasSlidingWindowLayers(const ModelSpec& m) {
  if (m.sliding_window > 0 && m.num_sliding_window_layers > 0) return true;
  for (const LayerBlock& b : m.layer_pattern) {
    if (b.mixer == MixerKind::kAttention && b.sliding_window > 0) return true;
  }
  return false;
}

}  // namespace meshplan::domain
