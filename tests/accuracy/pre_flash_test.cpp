// The 2021-2022 Megatron-LM software of the published A100 runs (tests/data/published_dense_runs.csv):
// the unfused attention core (cost::MegatronUnfusedCore, attention_backend=unfused) and the
// pipeline scatter / gather over TP (scatter_gather_tensors_in_pipeline), worked by hand.
#include <doctest/doctest.h>

#include <string>

#include "accuracy/megatron_fit.hpp"
#include "cost/comm.hpp"
#include "cost/time.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/model.hpp"

using namespace meshplan;

TEST_CASE("pre-flash: the unfused attention core of GPT-3 175B on one A100 TP rank by hand") {
  // GPT-3 175B with TP 8: 12 heads of d = 128 per rank, s = 2048, micro-batch 1; A100 BF16 at
  // MAMF 271.2 TFLOP/s, HBM 2.039 TB/s; the core recomputed once (full or selective recompute).
  const double rate = 271.2e12, hbm = 2.039e12;
  const cost::MegatronUnfusedCoreSeconds u = cost::MegatronUnfusedCore(1, 12, 2048, 128, 1, rate, hbm);
  // Scores: 12 x 2048 x 2048 = 50,331,648 elements; softmax + dropout 9 bytes each forward (twice:
  // the recompute), 11 backward: 29 bytes = 1.4596 GB, 0.716 ms at the datasheet bandwidth.
  CHECK(u.scores_bytes == doctest::Approx(50331648.0 * 29.0));
  // QK^T: (12·2048) x 128 x 2048; PV: (12·2048) x 2048 x 128; each 12.88 GFLOP (47.5 us at MAMF)
  // but writing / reading 100.7 MB of scores: HBM-bound (92.5 us at 0.57 of 2.039 TB/s, + 2.9 us).
  const double qk = cost::GemmSeconds(24576, 128, 2048, rate, hbm, false);
  const double pv = cost::GemmSeconds(24576, 2048, 128, rate, hbm, false);
  CHECK(qk == doctest::Approx(((24576.0 * 128 + 128 * 2048) * 2 + 24576.0 * 2048 * 2) / (0.570 * hbm) + 2.93e-6));
  CHECK(qk > 2.0 * 24576 * 128 * 2048 / rate);
  // Forward, 3 x for forward + backward (dgrad and wgrad of both), + 1 recompute = 4 x.
  CHECK(u.gemm == doctest::Approx(4.0 * (qk + pv)));
  // Nothing without a shape.
  CHECK(cost::MegatronUnfusedCore(1, 12, 0, 128, 1, rate, hbm).gemm == 0.0);
}

TEST_CASE("pre-flash: published A100 runs priced with the unfused core and the pipeline scatter / gather") {
  ValidateRequest req;
  req.runs = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/published_dense_runs.csv";
  req.rank_top = 0;
  const ValidateReport report = Validate(req);
  const SystemSpec a100 = LoadSystem("dgx-a100");
  int seen = 0;
  for (const ValidateRow& row : report.rows) {
    if (!row.skip.empty()) continue;
    const bool a100_row = row.label.rfind("#L", 0) != 0;
    CHECK(row.layout.mb.unfused_attention == a100_row);
    // Sequence parallel shards the pipeline tensor already; the scatter / gather is set on the
    // rows without it, except BLOOM (DeepSpeed's pipeline engine).
    if (row.label == "#K7 GPT-1T 512") {
      ++seen;
      CHECK(row.layout.mb.pp_scatter_gather);
      CHECK_FALSE(row.layout.sequence_parallel);
      // GPT-1T, TP 8 PP 64, 512 micro-batches of 2048 x 25600 BF16 = 104.86 MB per send, 1F1B:
      // 1024 exchanges. Whole: latency + 104.86 MB over the GPU's own HDR NIC; scattered: 1/8 of
      // it, then an all-gather over NVLink on the receiver (Narayanan et al. 2021 section 4.1).
      ModelSpec model = LoadModel(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/paper/gpt-1t.yaml");
      TrainSetup setup;
      setup.num_gpus = 512;
      setup.seq_len = 2048;
      setup.global_batch = 512;
      Layout with = row.layout, without = row.layout;
      without.mb.pp_scatter_gather = false;
      const double fixed_with = accuracy::MakeFitRow(model, a100, setup, with, 1.0).fixed;
      const double fixed_without = accuracy::MakeFitRow(model, a100, setup, without, 1.0).fixed;
      const double bytes = 2048.0 * 25600 * 2;
      const cost::Link nic{25e9 * 0.86, 14e-6}, nvl{300e9 * 0.775, 3.4e-6};
      const double saved = 1024.0 * (cost::P2pSeconds(bytes, nic) - cost::P2pSeconds(bytes / 8, nic) -
                                     cost::AllGatherSeconds(bytes, 8, nvl));
      CHECK(saved == doctest::Approx(3.94).epsilon(0.02));  // 5.01 s of sends against 1.07 s
      CHECK(fixed_without - fixed_with == doctest::Approx(saved).epsilon(0.02));
    }
    if (row.label == "#K8 GPT-1T 512") {
      ++seen;
      CHECK(row.layout.sequence_parallel);
      CHECK_FALSE(row.layout.mb.pp_scatter_gather);
    }
    if (row.label == "#B1 BLOOM 176B 384") {
      ++seen;
      CHECK_FALSE(row.layout.mb.pp_scatter_gather);
    }
  }
  CHECK(seen == 3);
}
