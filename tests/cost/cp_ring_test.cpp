// AutoModel's ring context parallelism (torch context_parallel, RingCpExposedSeconds): each
// ring step hides its K/V transfer only under the one chunk's attention computed meanwhile, so
// short chunks across nodes expose the difference. By hand, then on Llama 3.1 405B with
// TP1 PP64 CP16 on 1024 H100 (512-token chunks, the ring across two nodes), which printed
// "CP communication 0.0000 s" when the whole ring was set against the whole layer's attention.
#include <doctest/doctest.h>

#include "cost/comm.hpp"
#include "cost/time.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/framework.hpp"

using namespace meshplan;
using namespace meshplan::cost;

TEST_CASE("cost: ring CP exposes the transfer beyond the chunk attention of each ring step") {
  // 2 MiB per step over a 50 GB/s link with 10 us latency: 10 + 41.94 = 51.94 us per transfer.
  const cost::Link link{50e9, 10e-6};
  const double bytes = 2.0 * 1024 * 1024;
  // The layer's forward attention on the rank takes 0.64 ms: 40 us per step at cp 16.
  // Exposed: 3 (forward, backward twice) x 15 steps x (51.94 - 40) us = 537.4 us.
  CHECK(RingCpExposedSeconds(bytes, link, 0.64e-3, 16, false) == doctest::Approx(3 * 15 * 11.943e-6).epsilon(1e-3));
  // Full recompute repeats the forward ring: 4 x 15 x 11.94 us.
  CHECK(RingCpExposedSeconds(bytes, link, 0.64e-3, 16, true) == doctest::Approx(4 * 15 * 11.943e-6).epsilon(1e-3));
  // Chunks whose attention outlasts the transfer hide it completely (cp 4: 160 us a step).
  CHECK(RingCpExposedSeconds(bytes, link, 0.64e-3, 4, false) == 0.0);
  CHECK(RingCpExposedSeconds(bytes, link, 0.64e-3, 1, false) == 0.0);
  // The whole ring against the whole layer (15 x 51.94 = 779 us of transfer under 640 us of
  // compute forward) would expose 3 x 139 us; per step it is 537 us: each step's compute
  // hides only its own transfer.
}

TEST_CASE("cost: Llama 3.1 405B TP1 PP64 CP16 on 1024 H100 prices its cross-node ring") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  const ModelSpec m = LoadModel("llama3.1-405b");
  TrainSetup s;
  s.num_gpus = 1024;
  s.seq_len = 8192;
  s.global_batch = 1024;
  Layout l;
  l.pp = 64;
  l.cp = 16;
  l.dp = 1;
  l.local_batch_size = 1024;
  l.pp_microbatch_size = 1;
  l.recompute = Recompute::kSelective;
  const Cost c = Score(CostModel(m, sys, s), l);
  // CP ranks 0-15 span two 8-GPU nodes: the hop between them is one GPU's NIC (dgx-h100:
  // 400 Gb/s at the hwdb's scale-out efficiency, 47 GB/s, 14 us latency).
  const cost::Link nic = cost::GroupLink(sys, cost::Group{16, 1});
  CHECK(nic.busbw_bytes_per_s == doctest::Approx(47e9));
  // Chunk: 512 tokens x (K 1024 + V 1024) x 2 bytes = 2 MiB: 14 + 44.62 = 58.62 us a step.
  const double send = 14e-6 + 2097152.0 / 47e9;
  // Forward attention core of one layer on the rank: 512 tokens x 6·s·h_q / 3 = 512 x 2 x 8192
  // x 16384 = 1.374e11 FLOP at the SDPA rate of 512-token chunks (989.4 TFLOP/s x 0.43 x the
  // measured size and chunk factors): 0.782 ms, 48.87 us a step.
  const double rate = sys.gpu.bf16_flops * kSdpaAttentionEfficiency * AttentionHeadDimFactor(128) *
                      GemmSizeFactor(512, 0) * AttentionLengthFactor(8192, 16) / AttentionLengthFactor(8192, 1);
  const double chunk = 512.0 * 2 * 8192 * 16384 / rate / 16;
  CHECK(chunk == doctest::Approx(48.87e-6).epsilon(0.002));
  // The most loaded stage holds 2 of the 126 layers, 1024 micro-batches of one sequence:
  // 2 x 1024 x 3 x 15 x (58.62 - 48.87) us = 0.899 s (it was 0).
  CHECK(c.time.cp_comm == doctest::Approx(2 * 1024 * 45 * (send - chunk)).epsilon(0.002));
  CHECK(c.time.cp_comm == doctest::Approx(0.8986).epsilon(0.002));
}
