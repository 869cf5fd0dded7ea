// Unsupported architectures: the error, its "did you mean" (near-miss spellings only), the
// --generic-decoder reading, and each architecture's num_key_value_heads default.

#include <doctest/doctest.h>

#include <string>

#include "meshplan/model.hpp"

using namespace meshplan;

namespace {

constexpr auto npos = std::string::npos;

std::string ErrorOf(const std::string& text, const ModelReadOptions& opts = {}) {
  try {
    ParseModel(text, "c.json", opts);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// A small config of architecture `arch`: h 64, 2 layers, 8 heads, FFN 128, vocab 100;
/// `extra` is spliced in before the closing brace.
std::string Config(const std::string& arch, const std::string& extra = ", \"num_key_value_heads\": 2") {
  return "{\"architectures\": [\"" + arch +
         "\"], \"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
         "\"intermediate_size\": 128, \"vocab_size\": 100, \"max_position_embeddings\": 256" +
         extra + "}";
}

}  // namespace

TEST_CASE("unsupported architecture: no did-you-mean across families") {
  // Gemma2ForCausalLM used to get "did you mean 'LlamaForCausalLM'" (it is supported now).
  for (const char* other : {"Starcoder2ForCausalLM", "Cohere2ForCausalLM", "PhiForCausalLM", "Qwen2MoeForCausalLM", "Glm4ForCausalLM",
                            "NemotronForCausalLM", "OlmoForCausalLM", "Qwen4ForCausalLM"}) {
    const std::string msg = ErrorOf(Config(other));
    CAPTURE(other);
    CHECK(msg.find(std::string("unsupported architecture '") + other + "'") != npos);
    CHECK(msg.find("did you mean") == npos);
    CHECK(msg.find("--generic-decoder") != npos);
    for (const std::string& a : SupportedArchitectures()) CHECK(msg.find(a) != npos);
  }
}

TEST_CASE("unsupported architecture: near-miss spellings of a supported name are hinted") {
  CHECK(ErrorOf(Config("LLamaForCausalLM")).find("did you mean 'LlamaForCausalLM'?") != npos);
  CHECK(ErrorOf(Config("Qwen3MoEForCausalLm")).find("did you mean 'Qwen3MoeForCausalLM'?") != npos);
  CHECK(ErrorOf(Config("MistralForCasualLM")).find("did you mean 'MistralForCausalLM'?") != npos);
  CHECK(ErrorOf(Config("DeepSeekV3ForCausalLM")).find("did you mean 'DeepseekV3ForCausalLM'?") != npos);
}

TEST_CASE("--generic-decoder plans an unsupported config from its standard fields") {
  ModelReadOptions generic;
  generic.generic_decoder = true;
  ModelSpec m = ParseModel(Config("Starcoder2ForCausalLM"), "c.json", generic);
  CHECK(m.architecture == Architecture::kGeneric);
  CHECK(m.architecture_name == "Starcoder2ForCausalLM");
  CHECK(m.generic_note.find("Starcoder2ForCausalLM is not supported") != npos);
  CHECK(m.generic_note.find("generic dense decoder") != npos);
  CHECK(GenericModelWarning(m).find("model c.json: architecture Starcoder2ForCausalLM") == 0);
  // By hand: attention 64*8*8*2 + 2*64*2*8 = 8192 + 2048 = 10240 per layer; MLP 3*64*128 = 24576;
  // norms 2*64; embedding and head 100*64 each; final norm 64.
  const ParamCounts p = CountParams(m);
  CHECK(p.attention_per_layer == 10240);
  CHECK(p.total == 2 * (10240 + 24576 + 128) + 2 * 6400 + 64);
  // A supported architecture is unaffected by the option.
  CHECK(ParseModel(Config("LlamaForCausalLM"), "c.json", generic).generic_note.empty());
  // MoE keys under any of the usual names make a generic MoE decoder.
  ModelSpec moe = ParseModel(Config("Qwen2MoeForCausalLM", ", \"num_experts\": 8, \"num_experts_per_tok\": 2"), "c.json",
                             generic);
  CHECK(moe.num_experts == 8);
  CHECK(moe.num_moe_layers() == 2);
  CHECK(moe.moe_intermediate_size == 128);
  CHECK(moe.generic_note.find("generic MoE decoder") != npos);
  CHECK(ErrorOf(Config("Qwen2MoeForCausalLM", ", \"num_experts\": 8, \"num_experts_per_tok\": 9"), generic)
            .find("num_experts_per_tok: expected at most num_experts (8), found 9") != npos);
}

TEST_CASE("shape-only model YAML: architecture generic") {
  ModelSpec m = ParseModel(
      "architecture: generic\nhidden_size: 4096\nnum_hidden_layers: 32\nnum_attention_heads: 32\n"
      "num_key_value_heads: 8\nintermediate_size: 14336\nvocab_size: 128256\nmax_position_embeddings: 131072\n",
      "shape.yaml");
  CHECK(m.architecture == Architecture::kGeneric);
  CHECK(m.generic_note.find("generic dense decoder given by its shape") != npos);
  // Llama 3.1 8B's shape: 8,030,261,248 parameters (meta-llama/Llama-3.1-8B safetensors total).
  CHECK(CountParams(m).total == 8030261248);
}

TEST_CASE("GenericDecoder: a published table's shape columns") {
  DecoderShape s;
  s.num_layers = 32;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_key_value_heads = 8;
  s.intermediate_size = 14336;
  s.vocab_size = 128256;
  ModelSpec m = GenericDecoder(s, "Llama 3 8B", SourceLoc{"runs.csv", 3, 1});
  CHECK(CountParams(m).total == 8030261248);
  CHECK(m.generic_note.find("generic dense decoder") != npos);
  // Mixtral 8x7B's shape: 46,702,792,704 parameters (mistralai/Mixtral-8x7B-v0.1).
  s.num_experts = 8;
  s.experts_per_token = 2;
  s.vocab_size = 32000;
  ModelSpec moe = GenericDecoder(s, "Mixtral", SourceLoc{"runs.csv", 4, 1});
  // Generic's router has no bias: Mixtral's has none either.
  CHECK(CountParams(moe).total == 46702792704);
  s.experts_per_token = 9;
  CHECK_THROWS_WITH_AS(GenericDecoder(s, "bad", SourceLoc{"runs.csv", 5, 1}),
                       doctest::Contains("num_experts_per_tok: expected at most the number of experts (8), found 9"),
                       InputError);
  s.experts_per_token = 2;
  s.num_key_value_heads = 5;
  CHECK_THROWS_WITH_AS(GenericDecoder(s, "bad", SourceLoc{"runs.csv", 5, 1}),
                       doctest::Contains("num_key_value_heads: expected a divisor of num_attention_heads (32), found 5"),
                       InputError);
}

TEST_CASE("num_key_value_heads defaults per architecture (transformers configuration classes)") {
  const std::string no_kv = "";
  struct Row {
    const char* arch;
    int64_t kv;  // with num_attention_heads 32
  };
  // LlamaConfig: None -> num_attention_heads; MistralConfig/MixtralConfig/GptOssConfig: 8;
  // Qwen2Config/Qwen3Config: 32; Qwen3MoeConfig: 4.
  const Row rows[] = {{"LlamaForCausalLM", 32}, {"MistralForCausalLM", 8}, {"Qwen2ForCausalLM", 32},
                      {"Qwen3ForCausalLM", 32}};
  for (const Row& r : rows) {
    CAPTURE(r.arch);
    std::string c = Config(r.arch, "");
    c.replace(c.find("\"num_attention_heads\": 8"), 24, "\"num_attention_heads\": 32");
    c.replace(c.find("\"hidden_size\": 64"), 17, "\"hidden_size\": 128");
    CHECK(ParseModel(c, "c.json").num_key_value_heads == r.kv);
  }
  std::string mixtral = Config("MixtralForCausalLM", ", \"num_local_experts\": 4, \"num_experts_per_tok\": 2");
  CHECK(ParseModel(mixtral, "c.json").num_key_value_heads == 8);
  std::string qmoe = Config("Qwen3MoeForCausalLM", ", \"num_experts\": 4, \"num_experts_per_tok\": 2, "
                                                   "\"moe_intermediate_size\": 32");
  CHECK(ParseModel(qmoe, "c.json").num_key_value_heads == 4);
  // A default that does not divide the heads is said to be the default.
  std::string mistral6 = Config("MistralForCausalLM", "");
  mistral6.replace(mistral6.find("\"num_attention_heads\": 8"), 24, "\"num_attention_heads\": 4");
  const std::string msg = ErrorOf(mistral6);
  CHECK(msg.find("num_attention_heads: expected a multiple of 8, the num_key_value_heads that MistralForCausalLM "
                 "takes when the key is missing") != npos);
}
