#pragma once
/// \file adapters.hpp
/// Private to planner/model: one reader per Hugging Face architecture whose config the flat
/// readers of model_parse.cpp do not cover, each in its own file here (adapters/<arch>.cpp), and
/// the shared readers they call. A reader runs after ReadCommon (hidden_size, num_hidden_layers,
/// heads, KV heads with the architecture's default, vocab_size, max_position_embeddings,
/// tie_word_embeddings, intermediate_size) and fills the rest of the ModelSpec; errors go
/// through KeyReader::Fail (file, line, column, field).

#include <string>
#include <vector>

#include "model/key_reader.hpp"

namespace meshplan::model {

/// head_dim if given, else hidden_size / num_attention_heads (which must divide it).
void ReadHeadDim(KeyReader& r, ModelSpec& s);
/// num_experts (under `experts_key`) and num_experts_per_tok, top-k at most the experts.
void ReadExperts(KeyReader& r, ModelSpec& s, const std::string& experts_key);
/// n_group and topk_group (group-limited routing, ModelSpec::router_num_groups /
/// router_group_topk), after ReadExperts; the defaults where a key is missing. Throws
/// InputError for n_group not dividing the routed experts, topk_group above n_group, or chosen
/// groups holding fewer experts than num_experts_per_tok.
void ReadRouterGroups(KeyReader& r, ModelSpec& s, int64_t default_groups, int64_t default_topk);

/// MLA's ranks and head dims (q_lora_rank null: no low-rank Q); sets ModelSpec::mla.
void ReadMla(KeyReader& r, ModelSpec& s);
/// A non-null sliding_window applies to every layer (Mistral, Mixtral, Phi-3).
void ReadMistralWindow(KeyReader& r, ModelSpec& s);
/// Refuses any MoE key on a dense architecture.
void RejectMoeKeys(KeyReader& r, const ModelSpec& s);
/// Llama's attention and MLP keys (attention_bias on q,k,v,o; mlp_bias false; no MoE keys).
void ReadLlama(KeyReader& r, ModelSpec& s);
/// DeepSeek-V3's MLA + first_k_dense_replace / moe_layer_freq MoE keys.
void ReadDeepseekV3(KeyReader& r, ModelSpec& s);

/// NemotronHForCausalLM (adapters/nemotron_h.cpp).
void ReadNemotronH(KeyReader& r, ModelSpec& s);
/// Glm4MoeForCausalLM (adapters/glm4_moe.cpp).
void ReadGlm4Moe(KeyReader& r, ModelSpec& s);
/// DeepseekV2ForCausalLM (adapters/deepseek_v2.cpp).
void ReadDeepseekV2(KeyReader& r, ModelSpec& s);
/// Phi3ForCausalLM (adapters/phi3.cpp).
void ReadPhi3(KeyReader& r, ModelSpec& s);
/// GraniteForCausalLM (adapters/granite.cpp).
void ReadGranite(KeyReader& r, ModelSpec& s);
/// Olmo2ForCausalLM and OlmoeForCausalLM (adapters/olmo.cpp).
void ReadOlmo(KeyReader& r, ModelSpec& s);
/// Gemma2ForCausalLM and Gemma3ForCausalLM (adapters/gemma.cpp).
void ReadGemma(KeyReader& r, ModelSpec& s);
/// Qwen3NextForCausalLM and Qwen3.5 MoE's text backbone (adapters/qwen3_next.cpp).
void ReadQwen3Next(KeyReader& r, ModelSpec& s);
/// DeepseekV32ForCausalLM (adapters/deepseek_v32.cpp).
void ReadDeepseekV32(KeyReader& r, ModelSpec& s);
/// Llama4ForConditionalGeneration's text_config and Llama4ForCausalLM (adapters/llama4.cpp).
void ReadLlama4(KeyReader& r, ModelSpec& s);
/// DeepseekV4ForCausalLM (adapters/deepseek_v4.cpp).
void ReadDeepseekV4(KeyReader& r, ModelSpec& s);
/// The number of "sliding_attention" entries of layer_types, which must list every layer
/// ("full_attention" the others).
int64_t CountSlidingLayers(KeyReader& r, const ModelSpec& s, const std::vector<std::string>& types);

}  // namespace meshplan::model
