#pragma once
// Hand-built models and systems for the cost-model tests. Architecture numbers are the
// published HF config.json values; hardware numbers are from groundtruth.md C.1-C.3.

#include <doctest/doctest.h>

#include "meshplan/hardware.hpp"
#include "meshplan/layout.hpp"
#include "meshplan/model.hpp"

namespace meshplan::test {

/// doctest::Approx scales its tolerance by max(1, |value|), so for values far below 1 (step
/// times in seconds) it is an absolute tolerance; Rel makes it relative to the value.
inline doctest::Approx Rel(double v) { return doctest::Approx(v).scale(0); }

/// meta-llama/Meta-Llama-3-70B: h 8192, 80 layers, 64 heads / 8 KV heads of 128,
/// FFN 28672, vocab 128256, untied.
inline ModelSpec Llama3_70B() {
  ModelSpec m;
  m.name = "llama3-70b";
  m.architecture = Architecture::kLlama;
  m.hidden_size = 8192;
  m.num_layers = 80;
  m.num_attention_heads = 64;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  m.intermediate_size = 28672;
  m.vocab_size = 128256;
  m.num_dense_layers = 80;
  return m;
}

/// Qwen/Qwen3-30B-A3B: h 2048, 48 MoE layers, 32 heads / 4 KV heads of 128, 128 experts of
/// width 768, top-8, no shared experts, vocab 151936, untied.
inline ModelSpec Qwen3_30B_A3B() {
  ModelSpec m;
  m.name = "qwen3-30b-a3b";
  m.architecture = Architecture::kQwen3Moe;
  m.hidden_size = 2048;
  m.num_layers = 48;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 4;
  m.head_dim = 128;
  m.intermediate_size = 6144;
  m.vocab_size = 151936;
  m.qk_norm = true;
  m.num_experts = 128;
  m.experts_per_token = 8;
  m.moe_intermediate_size = 768;
  m.num_dense_layers = 0;
  return m;
}

/// deepseek-ai/DeepSeek-V3 (MTP layer excluded): h 7168, 61 layers (3 dense, FFN 18432),
/// 128 heads, MLA q_lora 1536 / kv_lora 512 / nope 128 / rope 64 / v 128, 256 experts of
/// width 2048, top-8, 1 shared expert of width 2048, vocab 129280.
inline ModelSpec DeepSeekV3() {
  ModelSpec m;
  m.name = "deepseek-v3";
  m.architecture = Architecture::kDeepseekV3;
  m.hidden_size = 7168;
  m.num_layers = 61;
  m.num_attention_heads = 128;
  m.num_key_value_heads = 128;
  m.head_dim = 192;
  m.intermediate_size = 18432;
  m.vocab_size = 129280;
  m.num_experts = 256;
  m.experts_per_token = 8;
  m.moe_intermediate_size = 2048;
  m.num_shared_experts = 1;
  m.shared_expert_intermediate_size = 2048;
  m.num_dense_layers = 3;
  m.router_bias = true;
  m.mla = true;
  m.mla_spec = MlaSpec{1536, 512, 128, 64, 128};
  return m;
}

/// A small Llama-like model for hand-worked numbers: h 1024, 4 layers, 16 heads / 4 KV
/// heads of 64, FFN 4096, vocab 32000.
inline ModelSpec TinyLlama() {
  ModelSpec m;
  m.name = "tiny";
  m.hidden_size = 1024;
  m.num_layers = 4;
  m.num_attention_heads = 16;
  m.num_key_value_heads = 4;
  m.head_dim = 64;
  m.intermediate_size = 4096;
  m.vocab_size = 32000;
  m.num_dense_layers = 4;
  return m;
}

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
