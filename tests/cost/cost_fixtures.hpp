#pragma once
// Hand-built systems and setups for the cost-model tests (the models: fixtures/models.hpp).
// Hardware numbers are from groundtruth.md C.1-C.3.

#include <doctest/doctest.h>

#include "fixtures/models.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"

namespace meshplan::test {

/// doctest::Approx scales its tolerance by max(1, |value|), so for values far below 1 (step
/// times in seconds) it is an absolute tolerance; Rel makes it relative to the value.
inline doctest::Approx Rel(double v) { return doctest::Approx(v).scale(0); }

/// DGX H100 (groundtruth.md C.1-C.3): H100 SXM 989 / 1979 TFLOP/s, 80 GB, 3.35 TB/s,
/// MAMF 80.3% / 70.9%; 8 GPUs per NVLink4 domain at 450 GB/s; 8 x 400 Gb/s NICs.
/// Efficiencies are round test values (0.8 NVLink, 0.9 NIC, 0.7 end-to-end).
inline SystemSpec DgxH100() {
  SystemSpec s;
  s.name = "dgx-h100";
  s.gpu.name = "h100-sxm";
  s.gpu.bf16_flops = 989e12;
  s.gpu.fp8_flops = 1979e12;
  s.gpu.memory_bytes = 80e9;
  s.gpu.hbm_bandwidth = 3.35e12;
  s.gpu.matmul_efficiency_bf16 = 0.803;
  s.gpu.matmul_efficiency_fp8 = 0.709;
  s.gpus_per_node = 8;
  s.scaleup_domain_gpus = 8;
  s.scaleup_bandwidth = 450e9;
  s.scaleup_latency = 5e-6;
  s.nics_per_node = 8;
  s.nic_bandwidth = 50e9;
  s.scaleout_latency = 10e-6;
  s.scaleup_busbw_efficiency = 0.8;
  s.scaleout_busbw_efficiency = 0.9;
  s.compute_efficiency = 0.7;
  return s;
}

inline TrainSetup Setup(int64_t gpus, int64_t seq, int64_t gbs) {
  TrainSetup t;
  t.num_gpus = gpus;
  t.seq_len = seq;
  t.global_batch = gbs;
  return t;
}

}  // namespace meshplan::test
