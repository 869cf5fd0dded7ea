// GraniteForCausalLM: IBM Granite 3 dense models (transformers models/granite: GraniteConfig,
// modeling_granite.py). Llama's layers and keys (attention_bias, mlp_bias); the embedding,
// residual, attention and logits multipliers scale activations and change no parameter count.
// Granite 3's configs tie the embeddings (tie_word_embeddings: true, read by ReadCommon).

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadGranite(KeyReader& r, ModelSpec& s) { ReadLlama(r, s); }

}  // namespace meshplan::model
