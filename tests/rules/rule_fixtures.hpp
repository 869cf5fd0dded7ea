#pragma once
// Hand-built models shared by the AutoModel and Megatron-Bridge rule tests.
#include "meshplan/model.hpp"

namespace meshplan::test {

/// Llama-3-70B-like dense model: 80 layers, 64 heads, 8 KV heads, untied embeddings.
inline ModelSpec DenseModel() {
  ModelSpec m;
  m.name = "dense";
  m.architecture_name = "LlamaForCausalLM";
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

/// Qwen3-30B-A3B-like MoE: 48 layers, 128 experts, top-8, 32 heads, 4 KV heads, expert width 768.
inline ModelSpec MoeModel() {
  ModelSpec m = DenseModel();
  m.name = "moe";
  m.architecture_name = "Qwen3MoeForCausalLM";
  m.hidden_size = 2048;
  m.num_layers = 48;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 4;
  m.num_experts = 128;
  m.experts_per_token = 8;
  m.moe_intermediate_size = 768;
  m.num_dense_layers = 0;
  return m;
}

}  // namespace meshplan::test
