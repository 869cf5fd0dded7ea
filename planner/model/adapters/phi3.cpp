// Phi3ForCausalLM: Phi-3 (mini, small, medium) and Phi-4 (transformers models/phi3:
// Phi3Config, modeling_phi3.py). Llama's layers with fused qkv_proj (h -> (a + 2g)·d) and
// gate_up_proj (h -> 2f), the same parameter count, no biases; a non-null sliding_window
// applies to every layer (Phi3Attention passes it to every layer's attention, as Mistral).
// num_key_value_heads defaults to num_attention_heads (ReadCommon).

#include "model/adapters/adapters.hpp"

namespace meshplan::model {

void ReadPhi3(KeyReader& r, ModelSpec& s) {
  ReadHeadDim(r, s);
  ReadMistralWindow(r, s);
  RejectMoeKeys(r, s);
}

}  // namespace meshplan::model
