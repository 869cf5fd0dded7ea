// DeepseekV32ForCausalLM: DeepSeek-V3.2 (-Exp): DeepSeek-V3's layers (MLA, first_k_dense_replace
// dense layers, then MoE with a shared expert and a biased router; ReadDeepseekV3) plus the
// DeepSeek Sparse Attention (DSA) lightning indexer in every layer's attention
// (DeepSeek-AI 2025, "DeepSeek-V3.2-Exp: Boosting Long-Context Efficiency with DeepSeek Sparse
// Attention", §2.1; the checkpoint's inference/model.py Indexer and NeMo AutoModel's
// components/models/deepseek_v32/layers.py DeepseekV32Indexer, config.py DeepseekV32Config):
//  * index_n_heads (64), index_head_dim (128): wq_b from the q_lora_rank latent, wk from h,
//    k_norm (LayerNorm), weights_proj h -> index_n_heads; index_topk (2048) keys per query.
// The indexer needs the low-rank Q latent (q_lora_rank set).

#include <string>

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadDeepseekV32(KeyReader& r, ModelSpec& s) {
  ReadDeepseekV3(r, s);
  s.index_n_heads = r.Int("index_n_heads", 1, 1 << 16, 64);
  s.index_head_dim = r.Int("index_head_dim", 1, 1 << 16, 128);
  s.index_topk = r.Int("index_topk", 1, int64_t{1} << 40, 2048);
  if (s.mla_spec.q_lora_rank == 0) {
    r.Fail("q_lora_rank", "expected a rank (the DSA indexer's wq_b reads the low-rank Q latent), found null");
  }
}

}  // namespace meshplan::model
