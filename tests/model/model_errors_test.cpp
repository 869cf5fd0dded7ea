// Bad model input: every message names file, line, column, field, expectation and finding.

#include <doctest/doctest.h>

#include <string>

#include "meshplan/model.hpp"

using namespace meshplan;

namespace {

constexpr auto npos = std::string::npos;

/// The InputError message for `text`, or "" if it parses.
std::string ErrorOf(const std::string& text, const std::string& file = "bad.json") {
  try {
    ParseModel(text, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string LoadError(const std::string& arg) {
  try {
    LoadModel(arg);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A valid tiny Llama, one key per line; line N holds the N-th entry below.
std::string Tiny(const std::string& replace_key = "", const std::string& with = "") {
  const char* lines[] = {
      "{",
      "  \"architectures\": [\"LlamaForCausalLM\"],",  // 2
      "  \"hidden_size\": 64,",                        // 3
      "  \"num_hidden_layers\": 2,",                   // 4
      "  \"num_attention_heads\": 8,",                 // 5
      "  \"num_key_value_heads\": 2,",                 // 6
      "  \"intermediate_size\": 128,",                 // 7
      "  \"vocab_size\": 100,",                        // 8
      "  \"max_position_embeddings\": 256,",           // 9
      "  \"rope_theta\": 500000.0",                    // 10
      "}",
  };
  std::string out;
  for (const char* l : lines) {
    std::string line = l;
    if (!replace_key.empty() && line.find("\"" + replace_key + "\"") != npos) line = with;
    out += line + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("model errors: the tiny base config parses") {
  CHECK(ErrorOf(Tiny()) == "");
  ModelSpec m = ParseModel(Tiny(), "t.json");
  CHECK(m.Loc("num_attention_heads").line == 5);
  CHECK(m.Loc("num_attention_heads").column == 3);
  CHECK(m.Loc("num_attention_heads").file == "t.json");
}

TEST_CASE("model errors: malformed JSON names the line") {
  // Missing colon on line 3.
  std::string msg = ErrorOf(Tiny("hidden_size", "  \"hidden_size\" 64,"));
  CHECK(msg.find("bad.json:3:17: error: malformed YAML/JSON") != npos);
  // Missing comma after line 3: the parser notices at the next key, on line 4.
  msg = ErrorOf(Tiny("hidden_size", "  \"hidden_size\": 64"));
  CHECK(msg.find("bad.json:4:") != npos);
  CHECK(msg.find("malformed") != npos);
  msg = ErrorOf("{\n  \"architectures\": [\"LlamaForCausalLM\"\n");
  CHECK(msg.find("bad.json:") != npos);
  CHECK(msg.find("malformed") != npos);
  CHECK(ErrorOf("[1, 2]").find("expected a map") != npos);
}

TEST_CASE("model errors: wrong type") {
  std::string msg = ErrorOf(Tiny("hidden_size", "  \"hidden_size\": \"big\","));
  CHECK(msg.find("bad.json:3:3") != npos);
  CHECK(msg.find("hidden_size") != npos);
  CHECK(msg.find("expected an integer") != npos);
  CHECK(msg.find("big") != npos);
  msg = ErrorOf(Tiny("hidden_size", "  \"hidden_size\": \"64\","));
  CHECK(msg.find("found the string \"64\"") != npos);
  msg = ErrorOf(Tiny("hidden_size", "  \"hidden_size\": [64],"));
  CHECK(msg.find("hidden_size: expected an integer, found a list") != npos);
  msg = ErrorOf(Tiny("rope_theta", "  \"tie_word_embeddings\": 3"));
  CHECK(msg.find("bad.json:10:3: error: tie_word_embeddings: expected true or false, found '3'") != npos);
}

TEST_CASE("model errors: zero and negative and huge sizes") {
  std::string msg = ErrorOf(Tiny("num_hidden_layers", "  \"num_hidden_layers\": 0,"));
  CHECK(msg.find("bad.json:4:3: error: num_hidden_layers: expected an integer in [1, 100000], found 0") != npos);
  msg = ErrorOf(Tiny("num_hidden_layers", "  \"num_hidden_layers\": -4,"));
  CHECK(msg.find(":4:3:") != npos);
  CHECK(msg.find("found -4") != npos);
  msg = ErrorOf(Tiny("vocab_size", "  \"vocab_size\": 99999999999,"));
  CHECK(msg.find(":8:3: error: vocab_size: expected an integer in [1, 16777216]") != npos);
  msg = ErrorOf(Tiny("hidden_size", "  \"hidden_size\": 1048576,") );
  CHECK(msg == "");  // at the bound; still a countable model
  msg = ErrorOf(Tiny("num_hidden_layers", "  \"num_hidden_layers\": 100000,")
                    .replace(Tiny().find("\"hidden_size\": 64"), 17, "\"hidden_size\": 1048576"));
  CHECK(msg.find("bad.json:1:1: error: expected at most 1e15 parameters in total, found about") != npos);
}

TEST_CASE("model errors: heads not divisible") {
  std::string msg = ErrorOf(Tiny("num_key_value_heads", "  \"num_key_value_heads\": 3,"));
  CHECK(msg.find("bad.json:6:3") != npos);
  CHECK(msg.find("num_key_value_heads: expected a divisor of num_attention_heads (8), found 3") != npos);
  msg = ErrorOf(Tiny("num_attention_heads", "  \"num_attention_heads\": 6,")
                    .replace(Tiny().find("\"num_key_value_heads\": 2"), 24, "\"num_key_value_heads\": 3"));
  CHECK(msg.find("bad.json:5:3: error: num_attention_heads: expected a divisor of hidden_size (64)") != npos);
  // With head_dim given, hidden_size need not be a multiple of the heads (Qwen3, GPT-OSS).
  msg = ErrorOf(Tiny("rope_theta", "  \"head_dim\": 16").replace(Tiny().find("\"num_attention_heads\": 8"), 24,
                                                              "\"num_attention_heads\": 6")
                    .replace(Tiny().find("\"num_key_value_heads\": 2"), 24, "\"num_key_value_heads\": 3"));
  CHECK(msg == "");
}

TEST_CASE("model errors: architectures") {
  std::string msg = ErrorOf(Tiny("architectures", "  \"architectures\": [\"GPT2LMHeadModel\"],"));
  CHECK(msg.find("bad.json:2:3: error: architectures: unsupported architecture 'GPT2LMHeadModel'") != npos);
  for (const std::string& a : SupportedArchitectures()) CHECK(msg.find(a) != npos);
  msg = ErrorOf(Tiny("architectures", "  \"architectures\": [\"LlamaForCausalLm\"],"));
  CHECK(msg.find("did you mean 'LlamaForCausalLM'?") != npos);
  msg = ErrorOf(Tiny("architectures", ""));
  CHECK(msg.find("bad.json:1:1: error: architectures: missing") != npos);
  CHECK(msg.find("DeepseekV3ForCausalLM") != npos);
  msg = ErrorOf(Tiny("architectures", "  \"architectures\": [],"));
  CHECK(msg.find("architectures: expected a non-empty list") != npos);
  msg = ErrorOf(Tiny("architectures", "  \"architectures\": \"LlamaForCausalLM\","));
  CHECK(msg.find("architectures: expected a list such as [\"LlamaForCausalLM\"]") != npos);
  // meshplan YAML alternative spelling.
  ModelSpec m = ParseModel(
      "architecture: MistralForCausalLM\nhidden_size: 64\nnum_hidden_layers: 2\nnum_attention_heads: 8\n"
      "num_key_value_heads: 2\nintermediate_size: 128\nvocab_size: 100\nmax_position_embeddings: 256\n"
      "sliding_window: 32\n",
      "m.yaml");
  CHECK(m.architecture == Architecture::kMistral);
  CHECK(m.num_sliding_window_layers == 2);
  CHECK(m.Loc("architecture").line == 1);
}

TEST_CASE("model errors: meshplan YAML gets the same checks and positions") {
  std::string msg = ErrorOf(
      "architecture: LlamaForCausalLM\nhidden_size: 64\nnum_hidden_layers: 2\n"
      "num_attention_heads: 8\nnum_key_value_heads: 2\nintermediate_size: 128\nvocab_size: 100\n"
      "max_position_embeddings: 256\ntie_word_embedings: true\n",
      "m.yaml");
  CHECK(msg == "m.yaml:9:1: error: tie_word_embedings: unknown key; did you mean 'tie_word_embeddings'?");
  msg = ErrorOf("architecture: LlamaForCausalLM\narchitectures: [LlamaForCausalLM]\n", "m.yaml");
  CHECK(msg.find("m.yaml:1:1: error: architecture: expected either 'architectures'") != npos);
  msg = ErrorOf("architecture: LlamaForCausalLM\nhidden_size: 64\nnum_hidden_layers: 2\n"
                "num_attention_heads: 8\nnum_key_value_heads: 2\nintermediate_size: 128\n"
                "vocab_size: 100\nmax_position_embeddings: 256\nmlp_bias: true\n",
                "m.yaml");
  CHECK(msg == "m.yaml:9:1: error: mlp_bias: expected false (MLP biases are not modelled), found true");
}

TEST_CASE("model errors: missing and duplicate keys") {
  std::string msg = ErrorOf(Tiny("vocab_size", ""));
  CHECK(msg.find("bad.json:1:1: error: vocab_size: missing; expected an integer") != npos);
  msg = ErrorOf(Tiny("rope_theta", "  \"hidden_size\": 32"));
  CHECK(msg.find("bad.json:10:3: error: hidden_size: duplicate key") != npos);
}

TEST_CASE("model errors: misspelt keys are rejected and unknown HF keys ignored") {
  std::string msg = ErrorOf(Tiny("rope_theta", "  \"num_attention_head\": 8"));
  CHECK(msg.find("bad.json:10:3: error: num_attention_head: unknown key; did you mean 'num_attention_heads'?") !=
        npos);
  msg = ErrorOf(Tiny("rope_theta", "  \"vocab_sise\": 8"));
  CHECK(msg.find("did you mean 'vocab_size'?") != npos);
  // Real HF keys that meshplan does not need, and keys far from any key read, pass.
  CHECK(ErrorOf(Tiny("rope_theta", "  \"rope_scaling\": {\"factor\": 8.0}, \"torch_dtype\": \"bfloat16\", "
                                   "\"bos_token_id\": 1, \"some_future_key\": 3")) == "");
}

TEST_CASE("model errors: mixture-of-experts consistency") {
  const std::string head = R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 64,
"num_hidden_layers": 2, "num_attention_heads": 8, "intermediate_size": 128, "vocab_size": 100,
"max_position_embeddings": 256,
)";
  std::string msg = ErrorOf(head + R"("num_local_experts": 8,
"num_experts_per_tok": 10})");
  CHECK(msg.find("bad.json:5:1: error: num_experts_per_tok: expected at most num_local_experts (8), found 10") !=
        npos);
  msg = ErrorOf(head + R"("num_local_experts": 8})");
  CHECK(msg.find("num_experts_per_tok: missing; the mixture-of-experts keys") != npos);
  msg = ErrorOf(head + R"("sliding_window": null})");
  CHECK(msg.find("num_local_experts: missing; MixtralForCausalLM is a mixture-of-experts architecture") != npos);
  // Expert keys in a dense architecture.
  msg = ErrorOf(Tiny("rope_theta", "  \"num_local_experts\": 8"));
  CHECK(msg.find("bad.json:10:3: error: num_local_experts: expected no mixture-of-experts keys") != npos);
  // DeepSeek: first_k_dense_replace beyond the layers; partial MoE group.
  const std::string ds = R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 64,
"num_hidden_layers": 2, "num_attention_heads": 8, "intermediate_size": 128, "vocab_size": 100,
"max_position_embeddings": 256, "kv_lora_rank": 16, "q_lora_rank": null, "qk_nope_head_dim": 8,
"qk_rope_head_dim": 4, "v_head_dim": 8,
)";
  msg = ErrorOf(ds + R"("n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
"first_k_dense_replace": 3})");
  CHECK(msg.find("bad.json:6:1: error: first_k_dense_replace: expected at most num_hidden_layers (2), found 3") !=
        npos);
  msg = ErrorOf(ds + R"("n_routed_experts": 4, "num_experts_per_tok": 2})");
  CHECK(msg.find("moe_intermediate_size: missing; the mixture-of-experts keys") != npos);
  // Router groups: n_group must divide the experts, topk_group at most n_group, and the chosen
  // groups must hold the top-k experts.
  const std::string moe = R"("n_routed_experts": 8, "num_experts_per_tok": 4, "moe_intermediate_size": 32,
)";
  msg = ErrorOf(ds + moe + R"("n_group": 3, "topk_group": 1})");
  CHECK(msg.find("bad.json:6:1: error: n_group: expected a divisor of the routed experts (8), found 3") != npos);
  msg = ErrorOf(ds + moe + R"("n_group": 4, "topk_group": 5})");
  CHECK(msg.find("error: topk_group: expected at most n_group (4), found 5") != npos);
  msg = ErrorOf(ds + moe + R"("n_group": 4, "topk_group": 1})");
  CHECK(msg.find("error: topk_group: expected the chosen groups to hold at least num_experts_per_tok (4) "
                 "experts; 1 of 4 groups hold 2") != npos);
  const ModelSpec grouped = ParseModel(ds + moe + R"("n_group": 4, "topk_group": 2})", "ds.json");
  CHECK(grouped.router_num_groups == 4);
  CHECK(grouped.router_group_topk == 2);
  // Left out: DeepseekV3Config's 8 groups of which 4 chosen, where 8 divides the experts.
  const ModelSpec by_default = ParseModel(ds + R"("n_routed_experts": 16, "num_experts_per_tok": 4,
"moe_intermediate_size": 32})", "ds.json");
  CHECK(by_default.router_num_groups == 8);
  CHECK(by_default.router_group_topk == 4);
  // All absent: a dense MLA model, as in HF (n_routed_experts: null).
  ModelSpec dense = ParseModel(ds + R"("n_routed_experts": null})", "ds.json");
  CHECK(dense.num_dense_layers == 2);
  CHECK(!dense.is_moe());
  CHECK(dense.mla_spec.q_lora_rank == 0);
  // Qwen3-MoE mlp_only_layers out of range names the list item.
  msg = ErrorOf(R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64,
"num_hidden_layers": 2, "num_attention_heads": 8, "intermediate_size": 128, "vocab_size": 100,
"max_position_embeddings": 256, "num_experts": 4, "num_experts_per_tok": 2,
"moe_intermediate_size": 32, "mlp_only_layers": [0, 7]})");
  CHECK(msg.find("bad.json:4:53: error: mlp_only_layers[1]: expected an integer in [0, 1], found 7") != npos);
  // GPT-OSS layer_types must cover every layer.
  msg = ErrorOf(R"({"architectures": ["GptOssForCausalLM"], "hidden_size": 64,
"num_hidden_layers": 2, "num_attention_heads": 8, "intermediate_size": 128, "vocab_size": 100,
"max_position_embeddings": 256, "num_local_experts": 4, "num_experts_per_tok": 2,
"sliding_window": 16, "layer_types": ["sliding_attention"]})");
  CHECK(msg.find("layer_types: expected one entry per layer (num_hidden_layers = 2), found 1") != npos);
}

TEST_CASE("model load: presets and paths and unknown names") {
  std::string msg = LoadError("lama3.1-8b");
  CHECK(msg.find("unknown model preset 'lama3.1-8b'") != npos);
  CHECK(msg.find("did you mean 'llama3.1-8b'?") != npos);
  CHECK(msg.find("deepseek-v3") != npos);
  CHECK(msg.find("gpt-oss-120b") != npos);
  const std::string dir = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/";
  ModelSpec m = LoadModel(dir + "tiny-llama.yaml");
  CHECK(m.name == dir + "tiny-llama.yaml");
  CHECK(m.source.file == dir + "tiny-llama.yaml");
  CHECK(CountParams(m).total == 1352);  // the tiny Llama of model_test.cpp
  msg = LoadError(dir + "bad-heads.json");
  CHECK(msg.find(dir + "bad-heads.json:6:3: error: num_key_value_heads") != npos);
  msg = LoadError(dir + "no-such-file.json");
  CHECK(msg.find("cannot open") != npos);
  CHECK(LoadError("nothing.yaml").find("nothing.yaml") != npos);  // a path, not a preset
}

TEST_CASE("model errors: bytes that are not UTF-8 are shown escaped and UTF-8 is kept") {
  const std::string bad = LoadError("llama\xff\xfe");
  CHECK(bad.find("'llama\\xff\\xfe'") != npos);
  const std::string accent = LoadError("llam\xc3\xa9");  // "llamé"
  CHECK(accent.find("'llam\xc3\xa9'") != npos);
  const std::string truncated = LoadError("llam\xc3");  // a lead byte without its continuation
  CHECK(truncated.find("'llam\\xc3'") != npos);
}

TEST_CASE("model errors: an unknown preset suggests the nearest and of ties the closest in length") {
  auto message = [](const std::string& name) {
    try {
      LoadModel(name);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // deepseek-v4-pro is 5 edits from deepseek-v3 and from deepseek-v4-flash.
  CHECK(message("deepseek-v4-pro").find("did you mean 'deepseek-v4-flash'?") != std::string::npos);
  CHECK(message("deepseek-v2").find("did you mean 'deepseek-v3'?") != std::string::npos);
  CHECK(message("Llama3.1-70B").find("did you mean 'llama3.1-70b'?") != std::string::npos);
  // A name cut short: the shortest preset it begins.
  CHECK(message("qwen3-30b").find("did you mean 'qwen3-30b-a3b'?") != std::string::npos);
  CHECK(message("deepseek-v4").find("did you mean 'deepseek-v4-flash'?") != std::string::npos);
  CHECK(message("gpt-oss").find("did you mean 'gpt-oss-20b'?") != std::string::npos);
}
