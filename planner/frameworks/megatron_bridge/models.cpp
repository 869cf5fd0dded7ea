// Which architectures Megatron-Bridge trains: a Hugging Face class needs a bridge
// (MegatronModelBridge.register_bridge(source=...) under src/megatron/bridge/models/).

#include <string>

#include "meshplan/framework.hpp"
#include "meshplan/model.hpp"

namespace meshplan::megatron_bridge {

/// Megatron-Bridge 067f987 (2026-08-22): its DeepSeek bridges are deepseek_v2_bridge.py,
/// deepseek_v3_bridge.py and deepseek_v4_bridge.py; no source DeepseekV32ForCausalLM (DSA is
/// bridged only for GlmMoeDsaForCausalLM). Every other architecture meshplan reads that plans
/// at all has a bridge of its class or is planned as before; MixtralForCausalLM has no
/// bridge at 067f987 either (no file under src/megatron/bridge/ names it) and is not refused yet.
/// Llama 4: no bridge registers Llama4ForConditionalGeneration or Llama4ForCausalLM (the
/// Llama bridge, llama/llama_bridge.py, is LlamaForCausalLM's; llama/llama4_utils.py holds a
/// chunked-attention Llama4SelfAttention that no bridge or provider uses).
std::string UnsupportedModel(const ModelSpec& model) {
  if (model.architecture == Architecture::kLlama4) {
    return "Megatron-Bridge (067f987) has no bridge for " + model.architecture_name +
           " (src/megatron/bridge/models/llama/ bridges LlamaForCausalLM only; llama4_utils.py's chunked attention "
           "is used by no bridge): --framework automodel trains it through transformers";
  }
  // Phi-3, Granite, OLMo 2: no file under src/megatron/bridge/ names Phi3ForCausalLM,
  // GraniteForCausalLM or Olmo2ForCausalLM (olmoe/olmoe_bridge.py bridges OlmoeForCausalLM only).
  if (model.architecture == Architecture::kPhi3 || model.architecture == Architecture::kGranite ||
      model.architecture == Architecture::kOlmo2) {
    return "Megatron-Bridge (067f987) has no bridge for " + model.architecture_name +
           " (no MegatronModelBridge.register_bridge under src/megatron/bridge/models/ takes it as its source): "
           "--framework automodel trains it through transformers";
  }
  if (model.architecture != Architecture::kDeepseekV32) return "";
  return "Megatron-Bridge (067f987) has no bridge for " + model.architecture_name +
         " (src/megatron/bridge/models/deepseek/ bridges DeepseekV2ForCausalLM, DeepseekV3ForCausalLM and "
         "DeepseekV4ForCausalLM only): it cannot train DeepSeek-V3.2's sparse attention (DSA indexer); "
         "--framework automodel trains it (nemo_automodel/components/models/deepseek_v32)";
}

}  // namespace meshplan::megatron_bridge
