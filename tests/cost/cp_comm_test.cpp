// The attention's context-parallel exchange per Megatron-Core cp_comm_type
// (cost::CpLayerExposedSeconds, cost/cp_comm.hpp), by hand on made-up links; the attention
// core's length factor of each type (CpRingRanks); and a Megatron-Bridge layout priced with
// each type on DGX H100.
#include <doctest/doctest.h>

#include "cost/comm.hpp"
#include "cost/cp_comm.hpp"
#include "cost/time.hpp"
#include "frameworks/megatron_bridge/space.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/framework.hpp"

using namespace meshplan;
using namespace meshplan::cost;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// CP 4: K+V 4 MiB, Q+K+V 12 MiB, output 8 MiB per rank per micro-batch.
CpLayerInputs Inputs(double core_seconds, bool full = false) {
  CpLayerInputs in;
  in.kv_bytes = 4 * kMiB;
  in.qkv_bytes = 12 * kMiB;
  in.o_bytes = 8 * kMiB;
  in.core_seconds = core_seconds;
  in.cp = 4;
  in.full = full;
  return in;
}


// Llama 3 70B's Megatron-Bridge layout TP 8, CP 2 (DP 1, full recompute, sequence parallel,
// distributed optimizer) with `pp` pipeline ranks and the given cp_comm_type and micro-batch.
Layout Tp8Cp2(const SystemSpec& sys, const TrainSetup& s, int64_t pp, MbCpComm type, int64_t mbs) {
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.tp = 8;
  l.cp = 2;
  l.pp = pp;
  l.dp = 1;
  l.sequence_parallel = true;
  l.use_distributed_optimizer = true;
  l.recompute = Recompute::kFull;
  search::ApplyEmittedSettings(l, sys);
  l.mb.cp_comm = type;
  SetMegatronMicroBatch(l, mbs, s);
  return l;
}

}  // namespace

TEST_CASE("cost: cp_comm_type p2p hides its ring behind the attention core") {
  CpLinks links;
  links.ring = Link{100e9, 5e-6};
  // One send: 5 + 4 MiB / 100 GB/s = 5 + 41.943 = 46.943 us; 3 sends forward, twice that backward:
  // 3 x 3 x 46.943 = 422.49 us under the core.
  CHECK(CpLayerExposedSeconds(CpCommType::kP2p, Inputs(1e-3), links) == 0.0);
  CHECK(CpLayerExposedSeconds(CpCommType::kP2p, Inputs(0.3e-3), links) == doctest::Approx(122.49e-6).epsilon(1e-3));
  // Full recompute sends the forward's again: 4 x 140.83 - 300 = 263.32 us.
  CHECK(CpLayerExposedSeconds(CpCommType::kP2p, Inputs(0.3e-3, true), links) == doctest::Approx(263.32e-6).epsilon(1e-3));
}

TEST_CASE("cost: cp_comm_type all_gather moves the ring bytes exposed") {
  CpLinks links;
  links.ring = Link{100e9, 5e-6};
  // All-gather of 4 x 4 MiB over 4 ranks: 3 x 5 us + 16 MiB x 3/4 / 100 GB/s = 15 + 125.83 = 140.83 us;
  // forward gather, backward gather and reduce-scatter: 422.49 us, whatever the core.
  CHECK(CpLayerExposedSeconds(CpCommType::kAllGather, Inputs(1e-3), links) == doctest::Approx(422.49e-6).epsilon(1e-3));
  CHECK(CpLayerExposedSeconds(CpCommType::kAllGather, Inputs(1e-3, true), links) ==
        doctest::Approx(563.32e-6).epsilon(1e-3));
}

TEST_CASE("cost: cp_comm_type a2a exchanges Q K V and the output exposed") {
  CpLinks links;
  links.a2a = Link{100e9, 5e-6};
  // Q, K, V: 15 + 12 MiB x 3/4 / 100 GB/s = 15 + 94.37 = 109.37 us; output: 15 + 62.91 = 77.91 us;
  // forward and backward: 2 x 187.28 = 374.57 us; full recompute 3 x = 561.85 us.
  CHECK(CpLayerExposedSeconds(CpCommType::kA2a, Inputs(1e-3), links) == doctest::Approx(374.57e-6).epsilon(1e-3));
  CHECK(CpLayerExposedSeconds(CpCommType::kA2a, Inputs(1e-3, true), links) == doctest::Approx(561.85e-6).epsilon(1e-3));
}

TEST_CASE("cost: cp_comm_type a2a+p2p runs a2a inside the first level and the ring over the second") {
  CpLinks links;
  links.inner_a2a = Link{300e9, 3e-6};  // NVLink-like
  links.outer_ring = Link{50e9, 10e-6};  // one NIC
  CpLayerInputs in = Inputs(0.1e-3);
  in.a2a = 2;
  // a2a over 2: Q, K, V 3 + 12 MiB / 2 / 300 GB/s = 3 + 20.97 = 23.97 us; output 3 + 13.98 = 16.98 us;
  // x 2 = 81.90 us. Ring over 2: one send of 4 MiB, 10 + 83.89 = 93.89 us, x 3 = 281.66 us,
  // 100 us of core under it: 181.66 us. Together 263.56 us.
  CHECK(CpLayerExposedSeconds(CpCommType::kA2aP2p, in, links) == doctest::Approx(263.56e-6).epsilon(1e-3));
  // No CP: nothing.
  in.cp = 1;
  CHECK(CpLayerExposedSeconds(CpCommType::kA2aP2p, in, links) == 0.0);
}

TEST_CASE("cost: the CP exchange of a step in closed form equals n micro-batches' exchanges") {
  // CpLayerStepPieces per token, at T tokens in n micro-batches, against n x
  // CpLayerExposedSeconds of T/n tokens; p2p both with its ring hidden (no exposure) and
  // exposed, by hand: at 1 MiB of K+V per 1024 tokens on Link{100e9, 5e-6} the ring's 3 sends
  // of 3 steps cost 9 x (5 us + 10.49 us) per micro-batch of 1024 tokens.
  CpLinks links;
  links.ring = Link{100e9, 5e-6};
  links.a2a = Link{200e9, 4e-6};
  links.inner_a2a = Link{300e9, 3e-6};
  links.outer_ring = Link{50e9, 10e-6};
  const double tokens = 32768;
  for (CpCommType type : {CpCommType::kP2p, CpCommType::kAllGather, CpCommType::kA2a, CpCommType::kA2aP2p}) {
    for (double core_per_token : {0.0, 1e-9, 1e-7}) {
      for (bool full : {false, true}) {
        CpLayerInputs one = Inputs(0.0, full);
        one.kv_bytes = 1024.0;
        one.qkv_bytes = 3072.0;
        one.o_bytes = 2048.0;
        one.core_seconds = core_per_token;
        one.a2a = 2;
        const CpStepPieces p = CpLayerStepPieces(type, one, links);
        CHECK(p.ring_per_micro_batch >= 0.0);
        for (double n : {1.0, 4.0, 32.0}) {
          CAPTURE(int(type));
          CAPTURE(core_per_token);
          CAPTURE(n);
          CpLayerInputs mb = one;
          const double t = tokens / n;
          mb.kv_bytes *= t;
          mb.qkv_bytes *= t;
          mb.o_bytes *= t;
          mb.core_seconds *= t;
          CHECK(p.At(tokens, n) == doctest::Approx(n * CpLayerExposedSeconds(type, mb, links)).epsilon(1e-12));
        }
      }
    }
  }
  // p2p, 32 micro-batches of 1024 tokens, no core under the ring: 32 x 9 x (5 + 1024·1024/1e11 s).
  CpLayerInputs one = Inputs(0.0);
  one.kv_bytes = 1024.0;
  one.core_seconds = 0.0;
  const CpStepPieces p = CpLayerStepPieces(CpCommType::kP2p, one, links);
  CHECK(p.At(tokens, 32.0) == doctest::Approx(32.0 * 9.0 * (5e-6 + 1024.0 * 1024.0 / 100e9)).epsilon(1e-12));
}

TEST_CASE("cost: the attention core's length factor follows the chunks each type attends") {
  CostView v;
  v.cp = 8;
  CHECK(CpRingRanks(v) == 8);
  v.cp_comm = CpCommType::kA2a;
  CHECK(CpRingRanks(v) == 1);
  v.cp_comm = CpCommType::kAllGather;
  CHECK(CpRingRanks(v) == 1);
  v.cp_comm = CpCommType::kA2aP2p;
  v.cp_a2a = 4;
  CHECK(CpRingRanks(v) == 2);
  v.cp = 1;
  CHECK(CpRingRanks(v) == 1);
}

TEST_CASE("cost: Llama 3 70B TP 8 CP 2 on 16 H100 priced per cp_comm_type") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  const ModelSpec m = LoadModel("llama3-70b");
  TrainSetup s;
  s.num_gpus = 16;
  s.seq_len = 65536;
  s.global_batch = 8;
  auto with = [&](MbCpComm t) { return Tp8Cp2(sys, s, 1, t, 1); };
  const CostModel cm(m, sys, s);
  const Cost p2p = Score(cm, with(MbCpComm::kUnset));
  const Cost a2a = Score(cm, with(MbCpComm::kA2a));
  const Cost ag = Score(cm, with(MbCpComm::kAllGather));
  // The ring's 32768-token chunks: one NIC between the two nodes moves K+V of 32768 tokens
  // (2 x 1024 / 8 x 2 bytes a token: 16 MiB) in about 0.36 ms, under the layer's core of tens of ms.
  CHECK(p2p.time.cp_comm == 0.0);
  // all_gather moves the same bytes exposed; a2a moves Q, K, V and the output (64 + 8 + 8 + 64
  // heads of 128: 9 times K+V) over the same NIC: both are exposed, a2a more.
  CHECK(ag.time.cp_comm > 0.0);
  CHECK(a2a.time.cp_comm > 3.0 * ag.time.cp_comm);
  // a2a and all_gather attend the whole sequence: the attention core runs at the unsplit
  // sequence's length factor (AttentionLengthFactor(65536, 1) / AttentionLengthFactor(65536, 2)).
  const double a_p2p = SplitMegatronCompute(m, sys, s, with(MbCpComm::kUnset)).attention;
  const double a_a2a = SplitMegatronCompute(m, sys, s, with(MbCpComm::kA2a)).attention;
  CHECK(a_p2p / a_a2a == doctest::Approx(AttentionLengthFactor(65536, 1) / AttentionLengthFactor(65536, 2)));
  CHECK(AttentionLengthFactor(65536, 1) / AttentionLengthFactor(65536, 2) == doctest::Approx(1.00539).epsilon(1e-4));  // by hand: K 520 causal, 178 unmasked
}

TEST_CASE("cost: the cp_comm_type variants of a layout hold the same memory whichever is scored first") {
  // CostModel keeps the per-rank memories of a scored CP layout for its other cp_comm_type
  // variants (cost_model.cpp CpVariantMemories): a variant scored after another must cost what
  // it costs scored first, under a CostModel of its own.
  const SystemSpec sys = LoadSystem("dgx-h100");
  const ModelSpec m = LoadModel("llama3-70b");
  TrainSetup s;
  s.num_gpus = 32;
  s.seq_len = 65536;
  s.global_batch = 16;
  auto with = [&](MbCpComm t, int64_t mbs) { return Tp8Cp2(sys, s, 2, t, mbs); };
  const Cost alone = Score(CostModel(m, sys, s), with(MbCpComm::kA2a, 1));
  const CostModel cm(m, sys, s);
  const Cost p2p = Score(cm, with(MbCpComm::kUnset, 1));
  const Cost a2a = Score(cm, with(MbCpComm::kA2a, 1));
  // The premise: no memory term reads the type (the two pipeline ranks' most loaded alike).
  CHECK(p2p.memory.Total() == alone.memory.Total());
  CHECK(p2p.memory.activations == alone.memory.activations);
  // The variant scored second: the same memory and step as scored alone, and not the first's step.
  CHECK(a2a.memory.Total() == alone.memory.Total());
  CHECK(a2a.memory.optimizer == alone.memory.optimizer);
  CHECK(a2a.step_seconds == alone.step_seconds);
  CHECK(a2a.time.cp_comm == alone.time.cp_comm);
  CHECK(a2a.step_seconds != p2p.step_seconds);
  CHECK(cm.MemoryTotal(ToCostView(with(MbCpComm::kA2a, 1), m, s)) == alone.memory.Total());
  // Another micro-batch is another layout: its own (larger) activations.
  const Cost two = Score(cm, with(MbCpComm::kAllGather, 2));
  CHECK(two.memory.activations > a2a.memory.activations);
  CHECK(two.memory.activations == Score(CostModel(m, sys, s), with(MbCpComm::kUnset, 2)).memory.activations);
}
