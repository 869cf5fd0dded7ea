// GenericDecoder: a ModelSpec from a decoder's shape alone (published tables' columns), the
// same generic dense / MoE decoder that `architecture: generic` and --generic-decoder give.

#include <string>

#include "model/model_internal.hpp"

namespace meshplan {

/// See model.hpp. The sizes are checked as ParseModel checks a config's (the field named is
/// the config key the size stands for).
ModelSpec GenericDecoder(const DecoderShape& shape, const std::string& name, const SourceLoc& where) {
  auto need = [&](int64_t v, const char* field) {
    if (v < 1) throw InputError(where, field, "expected a positive size, found " + std::to_string(v));
  };
  need(shape.num_layers, "num_hidden_layers");
  need(shape.hidden_size, "hidden_size");
  need(shape.num_attention_heads, "num_attention_heads");
  need(shape.intermediate_size, "intermediate_size");
  need(shape.vocab_size, "vocab_size");
  ModelSpec s;
  s.name = name;
  s.source = where;
  s.architecture = Architecture::kGeneric;
  s.architecture_name = ArchitectureName(Architecture::kGeneric);
  s.hidden_size = shape.hidden_size;
  s.num_layers = shape.num_layers;
  s.num_attention_heads = shape.num_attention_heads;
  s.num_key_value_heads = shape.num_key_value_heads > 0 ? shape.num_key_value_heads : shape.num_attention_heads;
  if (s.hidden_size % s.num_attention_heads != 0) {
    throw InputError(where, "num_attention_heads",
                     "expected a divisor of hidden_size (" + std::to_string(s.hidden_size) + "), found " +
                         std::to_string(s.num_attention_heads));
  }
  if (s.num_attention_heads % s.num_key_value_heads != 0) {
    throw InputError(where, "num_key_value_heads",
                     "expected a divisor of num_attention_heads (" + std::to_string(s.num_attention_heads) +
                         "), found " + std::to_string(s.num_key_value_heads));
  }
  s.head_dim = s.hidden_size / s.num_attention_heads;
  s.intermediate_size = shape.intermediate_size;
  s.gated_mlp = shape.gated_mlp;
  s.vocab_size = shape.vocab_size;
  s.max_position_embeddings = shape.max_position_embeddings > 0 ? shape.max_position_embeddings : int64_t{1} << 40;
  s.num_dense_layers = s.num_layers;
  std::string kind = "dense";
  if (shape.num_experts > 0) {
    need(shape.experts_per_token, "num_experts_per_tok");
    if (shape.experts_per_token > shape.num_experts) {
      throw InputError(where, "num_experts_per_tok",
                       "expected at most the number of experts (" + std::to_string(shape.num_experts) + "), found " +
                           std::to_string(shape.experts_per_token));
    }
    s.num_experts = shape.num_experts;
    s.experts_per_token = shape.experts_per_token;
    s.moe_intermediate_size = shape.moe_intermediate_size > 0 ? shape.moe_intermediate_size : shape.intermediate_size;
    s.num_shared_experts = shape.num_shared_experts;
    s.shared_expert_intermediate_size = shape.num_shared_experts * s.moe_intermediate_size;
    s.num_dense_layers = 0;
    kind = "MoE";
  }
  s.generic_note = "planned as a generic " + kind + " decoder given by its shape (GQA attention without biases, " +
                   (shape.gated_mlp ? "SwiGLU MLP" : "two-matrix GeLU MLP") +
                   ", RMSNorm, untied embeddings): no architecture's own layers, biases or attention variants "
                   "are modelled";
  return s;
}

}  // namespace meshplan
