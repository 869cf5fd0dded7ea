// Architecture adapters: each committed config (tests/data/models/arch/, written from the
// published config.json) read, and its parameter count pinned to the published total.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "meshplan/model.hpp"

using namespace meshplan;

namespace {

const std::string kDir = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/arch/";

ModelSpec Arch(const std::string& file) { return LoadModel(kDir + file); }

/// |counted / published - 1|.
double Off(int64_t counted, double published) { return std::fabs(double(counted) / published - 1.0); }

}  // namespace

TEST_CASE("adapter NemotronHForCausalLM: Nemotron 3 Nano 30B-A3B") {
  const ModelSpec m = Arch("nemotron-3-nano-30b-a3b.json");
  CHECK(m.architecture == Architecture::kNemotronH);
  REQUIRE(m.layer_pattern.size() == 52);
  int mamba = 0, attention = 0, moe = 0;
  for (const LayerBlock& b : m.layer_pattern) {
    mamba += b.mixer == MixerKind::kMamba2;
    attention += b.mixer == MixerKind::kAttention;
    moe += b.mlp == MlpKind::kMoe;
  }
  CHECK(mamba == 23);
  CHECK(attention == 6);
  CHECK(moe == 23);
  CHECK(m.mamba.d_inner() == 4096);
  const ParamCounts p = CountParams(m);
  // One Mamba-2 mixer by hand (mamba_mixer.py): in_proj 2688·(2·4096 + 2·8·128 + 64) =
  // 27,697,152; conv1d 6144·4 + 6144 = 30,720; dt_bias, A_log, D 3·64; norm 4096; out_proj
  // 4096·2688 = 11,010,048.
  CHECK(p.mamba_per_layer == 27697152 + 30720 + 192 + 4096 + 11010048);
  // NVIDIA's model card: 31.6B total parameters, about 3.6B active including embeddings.
  CHECK(Off(p.total, 31.6e9) < 0.005);
  CHECK(p.total == 31577940288);
  CHECK(Off(p.active, 3.6e9) < 0.01);
  // FLOPs per token at 8192 tokens (training.py hybrid_flops, d_in = 4096), by hand:
  // Mamba 2·2688·10304 + 7·4096·128 + 2·4096·2688 = 81,084,416 per layer; attention
  // 4·2688·(4096/2688)·(2688 + 2688·2/32 + 4096) = 113,901,568; MoE 4·2688·1856·6 +
  // 4·2688·3712 = 159,645,696; logits 2·2688·131072 = 704,643,072; all x3.
  const double expect = 3.0 * (23 * 81084416.0 + 6 * 113901568.0 + 23 * 159645696.0 + 704643072.0);
  CHECK(HybridFlopsPerToken(m, 8192) == doctest::Approx(expect).epsilon(1e-12));
  CHECK(HybridRefusal(m).empty());  // every block kind priced (Megatron-Core: tests/cost/hybrid_test.cpp)
}

TEST_CASE("adapter NemotronHForCausalLM: Nemotron 3 Super 120B-A12B (LatentMoE and MTP)") {
  const ModelSpec m = Arch("nemotron-3-super-120b-a12b.json");
  REQUIRE(m.layer_pattern.size() == 88);
  CHECK(m.moe_latent_size == 1024);
  CHECK(m.ExpertInputSize() == 1024);
  CHECK(m.mtp_num_layers == 1);
  REQUIRE(m.mtp_pattern.size() == 2);
  CHECK(m.mtp_pattern[0].mixer == MixerKind::kAttention);
  CHECK(m.mtp_pattern[1].mlp == MlpKind::kMoe);
  const ParamCounts p = CountParams(m);
  // By hand: one expert 2·1024·2688 (l -> f -> l, squared ReLU); the latent projections
  // 2·4096·1024; a MoE block 512 experts + 2·4096·1024 + shared 2·4096·5376 + router
  // 4096·512 + 512 = 2,873,098,752.
  CHECK(p.expert_per_layer == 2 * 1024 * 2688);
  CHECK(p.latent_proj_per_layer == 2 * 4096 * 1024);
  CHECK(p.total == 120668707840);
  // Megatron-Bridge's verification card (examples/model_verification_cards/
  // nemotron-3-super-120b-a12b/card.yaml, 067f987): the exported checkpoint holds
  // 123,611,033,088 elements, the MTP block ("*E", eh_proj, norms) included.
  CHECK(p.total + p.mtp == 123611033088);
  CHECK(Off(p.total + p.mtp, 123611033088.0) < 0.005);
  // FLOPs: the MoE block's routed experts in the latent space (flop_utils.py with
  // moe_latent_size): 4·1024·2688·22 + 4·4096·5376 + 4·4096·1024 per token forward.
  ModelSpec flat = m;
  flat.moe_latent_size = 0;
  const double latent_moe = 4.0 * 1024 * 2688 * 22 + 4.0 * 4096 * 5376 + 4.0 * 4096 * 1024;
  const double plain_moe = 4.0 * 4096 * 2688 * 22 + 4.0 * 4096 * 5376;
  CHECK(HybridFlopsPerToken(m, 8192) - HybridFlopsPerToken(flat, 8192) ==
        doctest::Approx(3.0 * 40 * (latent_moe - plain_moe)).epsilon(1e-9));
  // Two MTP depths: each its "*E" blocks, eh_proj 4·h² and logits 2·h·V forward, x3.
  const double attn = 4.0 * 4096 * 1.0 * (4096 + 4096.0 * 2 / 32 + 8192 / 2.0);
  const double depth = attn + latent_moe + 4.0 * 4096 * 4096 + 2.0 * 4096 * 131072;
  CHECK(HybridMtpFlopsPerToken(m, 8192, 2) == doctest::Approx(3.0 * 2 * depth).epsilon(1e-12));
  CHECK(HybridMtpFlopsPerToken(m, 8192, 0) == 0.0);
  CHECK(HybridRefusal(m).empty());
}

TEST_CASE("adapter NemotronHForCausalLM: Nemotron 3 Ultra 550B-A55B (shape from Megatron-LM's modelopt config)") {
  // hidden 8192, 108 layers, 64 heads / 2 groups, Mamba 256 x 64, 512 experts top-22 of 5120,
  // shared 10240, latent 2048: Megatron-LM examples/post_training/modelopt/conf/nvidia/
  // NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.sh (d98e8a6). ssm_state_size 128, n_groups 8 and
  // vocab 131072 are not in it (Megatron-Core's defaults and Super's values).
  const ModelSpec m = Arch("nemotron-3-ultra-550b-a55b.json");
  REQUIRE(m.layer_pattern.size() == 108);
  const ParamCounts p = CountParams(m);
  CHECK(p.total == 549308993536);
  CHECK(Off(p.total, 550e9) < 0.005);  // the published 550B (model name, NVIDIA's guide)
  CHECK(HybridRefusal(m).empty());
}

TEST_CASE("adapter NemotronHForCausalLM: MTP layers need their block pattern") {
  const std::string text =
      "{\"architectures\": [\"NemotronHForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 2, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"vocab_size\": 128, \"intermediate_size\": 64, "
      "\"max_position_embeddings\": 256, \"hybrid_override_pattern\": \"M*\", \"mamba_num_heads\": 8, \"mamba_head_dim\": 16, \"n_groups\": 2, "
      "\"num_nextn_predict_layers\": 1}";
  CHECK_THROWS_WITH_AS(ParseModel(text, "mtp.json"), doctest::Contains("mtp_hybrid_override_pattern"), InputError);
}

TEST_CASE("adapter NemotronHForCausalLM: bad patterns") {
  const std::string base =
      "{\"architectures\": [\"NemotronHForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 4, "
      "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"intermediate_size\": 128, \"vocab_size\": 100, "
      "\"max_position_embeddings\": 256, \"mamba_num_heads\": 4, \"mamba_head_dim\": 16, \"n_groups\": 2, "
      "\"ssm_state_size\": 16, ";
  auto error = [&](const std::string& tail) {
    try {
      ParseModel(base + tail + "}", "h.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error("\"hybrid_override_pattern\": \"M*-\"")
            .find("hybrid_override_pattern: expected one entry per layer (num_hidden_layers = 4), found 3") !=
        std::string::npos);
  CHECK(error("\"hybrid_override_pattern\": \"M*-X\"").find("found 'X' at position 3") != std::string::npos);
  CHECK(error("\"hybrid_override_pattern\": \"M*-E\"").find("n_routed_experts: missing") != std::string::npos);
  CHECK(error("\"hybrid_override_pattern\": \"M*--\", \"moe_latent_size\": 1024")
            .find("moe_latent_size: expected null or no key for a pattern without MoE") != std::string::npos);
  CHECK(error("\"hybrid_override_pattern\": \"M*--\"").empty());
  // Dense MLP layers: two matrices (relu2), one norm per block.
  ModelSpec m = ParseModel(base + "\"hybrid_override_pattern\": \"M*--\"}", "h.json");
  const ParamCounts p = CountParams(m);
  CHECK(p.dense_mlp == 2 * (2 * 64 * 128));
  CHECK(p.norms == 5 * 64);
}

TEST_CASE("adapter Glm4MoeForCausalLM: GLM-4.5-Air") {
  const ModelSpec m = Arch("glm-4.5-air.json");
  CHECK(m.architecture == Architecture::kGlm4Moe);
  CHECK(m.num_moe_layers() == 45);
  CHECK(m.mtp_num_layers == 1);
  const ParamCounts p = CountParams(m);
  // By hand: attention 109,066,240 per layer (q/k/v biases, none on o), MoE layer 2,341,492,864,
  // dense layer 243,554,304, embeddings 2·151552·4096.
  CHECK(p.attention_per_layer == 109066240);
  CHECK(p.total == 106852251264);
  // The GLM-4.5 report's "106B total, 12B activated" count no embeddings (2·151552·4096 =
  // 1.24B): 105.61B and 12.18B without them (with them 106.85B and 13.42B).
  const int64_t tables = p.embedding + p.output_head;
  CHECK(Off(p.total - tables, 106e9) < 0.005);
  CHECK(Off(p.active - tables, 12e9) < 0.02);
}

TEST_CASE("adapter DeepseekV2ForCausalLM: DeepSeek-V2-Lite") {
  const ModelSpec m = Arch("deepseek-v2-lite.json");
  CHECK(m.architecture == Architecture::kDeepseekV2);
  CHECK(!m.router_bias);
  CHECK(m.mla_spec.q_lora_rank == 0);
  const ParamCounts p = CountParams(m);
  // DeepSeek-V2 paper / model card: 15.7B total.
  CHECK(p.total == 15706484224);
  CHECK(Off(p.total, 15.7e9) < 0.005);
}

TEST_CASE("adapter DeepseekV3ForCausalLM config: Moonlight-16B-A3B") {
  const ParamCounts p = CountParams(Arch("moonlight-16b-a3b.json"));
  // Moonshot's model card: 16B total, 3B activated.
  CHECK(p.total == 15960110208);
  CHECK(Off(p.total, 16e9) < 0.005);
}

TEST_CASE("adapter Phi3ForCausalLM: Phi-3-mini-4k") {
  const ModelSpec m = Arch("phi-3-mini-4k.json");
  CHECK(m.architecture == Architecture::kPhi3);
  CHECK(m.num_sliding_window_layers == 32);
  // microsoft/Phi-3-mini-4k-instruct: 3.82B (3,821,079,552 in its safetensors).
  CHECK(CountParams(m).total == 3821079552);
}

TEST_CASE("adapter GraniteForCausalLM: Granite 3.0 8B") {
  const ModelSpec m = Arch("granite-3.0-8b.json");
  CHECK(m.tie_word_embeddings);
  // ibm-granite/granite-3.0-8b-base: 8.17B.
  CHECK(CountParams(m).total == 8170848256);
  CHECK(Off(CountParams(m).total, 8.17e9) < 0.005);
}

TEST_CASE("adapter Olmo2ForCausalLM and OlmoeForCausalLM") {
  const ModelSpec olmo2 = Arch("olmo-2-1124-7b.json");
  CHECK(olmo2.qk_norm_full);
  // allenai/OLMo-2-1124-7B: 7.30B; q_norm and k_norm over 4096 each.
  CHECK(CountParams(olmo2).total == 7298617344);
  CHECK(Off(CountParams(olmo2).total, 7.30e9) < 0.005);
  const ModelSpec olmoe = Arch("olmoe-1b-7b-0924.json");
  CHECK(olmoe.num_moe_layers() == 16);
  const ParamCounts p = CountParams(olmoe);
  // OLMoE paper (Muennighoff et al. 2024): 6.9B total, 1.3B active.
  CHECK(p.total == 6919161856);
  CHECK(Off(p.total, 6.9e9) < 0.005);
  CHECK(Off(p.active, 1.3e9) < 0.03);
}

TEST_CASE("MistralForCausalLM config: Mistral-Nemo 12B (head_dim 128 given)") {
  const ModelSpec m = Arch("mistral-nemo-12b.json");
  CHECK(m.head_dim == 128);
  // mistralai/Mistral-Nemo-Base-2407: 12.2B.
  CHECK(CountParams(m).total == 12247782400);
  CHECK(Off(CountParams(m).total, 12.2e9) < 0.005);
}

TEST_CASE("LayerPattern of a flat architecture") {
  const ModelSpec ds = LoadModel("deepseek-v3");
  const std::vector<LayerBlock> p = LayerPattern(ds);
  REQUIRE(p.size() == 61);
  CHECK(p[0].mlp == MlpKind::kDense);
  CHECK(p[2].mlp == MlpKind::kDense);
  CHECK(p[3].mlp == MlpKind::kMoe);
  CHECK(p[60].mixer == MixerKind::kAttention);
  const ModelSpec gpt = LoadModel("gpt-oss-20b");
  int sliding = 0;
  for (const LayerBlock& b : LayerPattern(gpt)) sliding += b.sliding_window > 0;
  CHECK(sliding == gpt.num_sliding_window_layers);
  CHECK(HybridRefusal(gpt).empty());
}

TEST_CASE("adapter Gemma2ForCausalLM and Gemma3ForCausalLM") {
  const ModelSpec g2 = Arch("gemma-2-2b.json");
  CHECK(g2.architecture == Architecture::kGemma2);
  CHECK(g2.sandwich_norms);
  CHECK(g2.tie_word_embeddings);
  CHECK(g2.num_sliding_window_layers == 13);  // the even layers of 26
  CHECK(g2.sliding_window == 4096);
  // By hand: attention 2304·2048·2 + 2·2304·1024 = 14,155,776; GeGLU 3·2304·9216; four norms;
  // tied 256000·2304 embedding. google/gemma-2-2b: 2.61B.
  CHECK(CountParams(g2).norms_per_layer == 4 * 2304);
  CHECK(CountParams(g2).total == 2614341888);
  CHECK(Off(CountParams(g2).total, 2.61e9) < 0.005);
  const ModelSpec g3 = Arch("gemma-3-1b.json");
  CHECK(g3.qk_norm);
  CHECK(g3.tie_word_embeddings);  // the key is absent: Gemma3TextConfig's default
  CHECK(g3.num_sliding_window_layers == 22);  // all but layers 5, 11, 17, 23
  // google/gemma-3-1b-pt: 1B (999,885,952 by hand).
  CHECK(CountParams(g3).total == 999885952);
  CHECK(Off(CountParams(g3).total, 1.0e9) < 0.005);
}

TEST_CASE("adapter Qwen3NextForCausalLM: Qwen3-Next-80B-A3B") {
  const ModelSpec m = Arch("qwen3-next-80b-a3b.json");
  CHECK(m.architecture == Architecture::kQwen3Next);
  REQUIRE(m.layer_pattern.size() == 48);
  int gdn = 0, attention = 0, moe = 0;
  for (size_t i = 0; i < m.layer_pattern.size(); ++i) {
    const LayerBlock& b = m.layer_pattern[i];
    gdn += b.mixer == MixerKind::kGatedDeltaNet;
    attention += b.mixer == MixerKind::kAttention;
    moe += b.mlp == MlpKind::kMoe;
    CHECK((b.mixer == MixerKind::kAttention) == ((i + 1) % 4 == 0));  // full_attention_interval 4
  }
  CHECK(gdn == 36);
  CHECK(attention == 12);
  CHECK(moe == 48);
  const ParamCounts p = CountParams(m);
  // One Gated DeltaNet mixer by hand (modeling_qwen3_next.py): in_proj_qkvz 2048·(2·2048 +
  // 2·4096) = 25,165,824; in_proj_ba 2048·64 = 131,072; conv1d 8192·4 = 32,768; dt_bias, A_log
  // 2·32; norm 128; out_proj 4096·2048 = 8,388,608.
  CHECK(p.gdn_per_layer == 25165824 + 131072 + 32768 + 64 + 128 + 8388608);
  // Gated attention: q_proj 2048·2·4096, k and v 2·2048·512, o 4096·2048, q/k norms 2·256.
  CHECK(p.attention_per_layer == 16777216 + 2097152 + 8388608 + 512);
  // Qwen's model card: 80B total, 3B activated (the MTP layer outside both).
  CHECK(Off(p.total, 80e9) < 0.005);
  CHECK(p.total == 79674391296);
  CHECK(Off(p.active, 3.0e9) < 0.3);
  CHECK(HybridRefusal(m).empty());  // priced (cost/hybrid.cpp Gated DeltaNet terms)
  // FLOPs per token (training.py gdn_layer_flops; x3): the Gated DeltaNet term by hand at any
  // sequence length: 2·(2048·12352 + 4·8192 + 4·32·128² + 4096·2048) = 71,630,848.
  ModelSpec only_gdn = m;
  for (LayerBlock& b : only_gdn.layer_pattern) b = {MixerKind::kGatedDeltaNet, MlpKind::kNone, 0};
  only_gdn.vocab_size = 0;
  CHECK(HybridFlopsPerToken(only_gdn, 4096) == doctest::Approx(3.0 * 48 * 71630848.0).epsilon(1e-12));
}

TEST_CASE("adapter Qwen3_5MoeForConditionalGeneration: Qwen3.5-35B-A3B text backbone with the vision tower left out") {
  const ModelSpec m = Arch("qwen3.5-35b-a3b.json");
  CHECK(m.architecture == Architecture::kQwen3_5Moe);
  CHECK(m.architecture_name == "Qwen3_5MoeForConditionalGeneration");
  CHECK(m.num_layers == 40);  // text_config's, not the vision tower's depth 27
  CHECK(m.hidden_size == 2048);
  CHECK(m.num_experts == 256);
  CHECK(m.attention_output_gate);
  const ParamCounts p = CountParams(m);
  // By hand: 30 Gated DeltaNet layers of 33,718,464, 10 gated attention layers of 27,263,488,
  // 40 MoE layers of 256·3,145,728 + 3,145,728 + 2,048 (shared expert and its gate) + 524,288
  // (router), norms 2·2048·40 + 2048, untied embeddings 2·248320·2048. The published "35B"
  // also holds the vision encoder (about 0.45B) and the MTP layer (about 0.85B), both left out.
  CHECK(p.total == 30LL * 33718464 + 10LL * 27263488 + 40LL * (256LL * 3145728 + 3145728 + 2048 + 524288) +
                       (2LL * 2048 * 40 + 2048) + 2LL * 248320 * 2048);
  CHECK(p.total == 34660610688);
  CHECK(GenericModelWarning(m).find("the vision tower (vision_config) is left out") != std::string::npos);
}

TEST_CASE("text_config: a vision-language class without one is refused with a hint") {
  const std::string gemma =
      "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"hidden_size\": 2560, \"num_hidden_layers\": 34}";
  try {
    ParseModel(gemma, "gemma3-vl.json");
    FAIL("expected an error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("text_config") != std::string::npos);
    CHECK(what.find("missing; a Gemma 3 vision-language config") != std::string::npos);
    CHECK(what.find("Gemma3ForCausalLM") != std::string::npos);
  }
  const std::string qwen = "{\"architectures\": [\"Qwen3_5MoeForConditionalGeneration\"], \"text_config\": 5}";
  CHECK_THROWS_WITH(ParseModel(qwen, "q.json"), doctest::Contains("expected a map of the text backbone's keys"));
}

TEST_CASE("adapter Gemma3ForConditionalGeneration: Gemma 3 4B's text backbone with Gemma3TextConfig defaults") {
  const ModelSpec m = Arch("gemma-3-4b-it.json");
  CHECK(m.architecture == Architecture::kGemma3);
  // text_config gives hidden_size, intermediate_size, num_hidden_layers, sliding_window; the rest
  // are Gemma3TextConfig's defaults: 8 heads, 4 KV heads, head_dim 256, vocab 262208.
  CHECK(m.num_attention_heads == 8);
  CHECK(m.num_key_value_heads == 4);
  CHECK(m.head_dim == 256);
  CHECK(m.vocab_size == 262208);
  CHECK(m.sliding_window == 1024);
  CHECK(m.num_sliding_window_layers == 29);  // 34 layers, every sixth full
  // By hand: tied embeddings 262208·2560 = 671,252,480; per layer q, k, v, o 4·5,242,880 + q/k
  // norms 512 + MLP 3·2560·10240 + four norms 4·2560 = 94,382,592; final norm 2560. Google's
  // 4.3B total adds the SigLIP vision tower (about 0.42B), left out with a warning.
  CHECK(CountParams(m).total == 671252480LL + 34LL * 94382592 + 2560);
  CHECK(GenericModelWarning(m).find("vision tower") != std::string::npos);
}

TEST_CASE("adapter DeepseekV32ForCausalLM: DeepSeek-V3.2-Exp") {
  const ModelSpec m = Arch("deepseek-v3.2-exp.json");
  const ModelSpec v3 = LoadModel("deepseek-v3");
  CHECK(m.architecture == Architecture::kDeepseekV32);
  CHECK(m.index_n_heads == 64);
  CHECK(m.index_topk == 2048);
  const ParamCounts p = CountParams(m);
  // The indexer per layer by hand: wq_b 1536·64·128 = 12,582,912, wk 7168·128 = 917,504,
  // k_norm 2·128, weights_proj 7168·64 = 458,752; x61 layers over DeepSeek-V3's count.
  CHECK(p.total - CountParams(v3).total == 61LL * (12582912 + 917504 + 256 + 458752));
  // DeepSeek's report: V3.2-Exp has V3.1-Terminus's 671B (MTP module excluded, as for V3).
  CHECK(Off(p.total, 671e9) < 0.005);
}

TEST_CASE("MistralForCausalLM config: Ministral-8B-Instruct-2410") {
  const ModelSpec m = Arch("ministral-8b-2410.json");
  CHECK(m.architecture == Architecture::kMistral);
  CHECK(m.head_dim == 128);
  // Hugging Face's safetensors total for mistralai/Ministral-8B-Instruct-2410: 8,019,808,256.
  CHECK(CountParams(m).total == 8019808256);
}

TEST_CASE("adapter Llama4ForConditionalGeneration: Llama 4 Scout with 16 experts on every layer") {
  const ModelSpec m = Arch("llama-4-scout-17b-16e.json");
  CHECK(m.architecture == Architecture::kLlama4);
  CHECK(m.num_layers == 48);  // text_config's, not the vision tower's 34
  CHECK(m.num_experts == 16);
  CHECK(m.num_dense_layers == 0);  // interleave_moe_layer_step 1
  CHECK(m.num_shared_experts == 1);
  CHECK(m.num_nope_layers == 12);  // no_rope_layers [] -> every 4th layer NoPE
  CHECK(m.num_chunked_attention_layers == 36);
  CHECK(m.attention_chunk_size == 8192);
  const ParamCounts p = CountParams(m);
  // By hand (modeling_llama4.py): per layer q, k, v, o 2·5120·5120 + 2·5120·1024 = 62,914,560;
  // 16 routed experts and the shared one 17·3·5120·8192 = 2,139,095,040; router 5120·16; two
  // RMSNorms 2·5120; final norm 5120; untied embeddings 2·202048·5120.
  const int64_t text = 48LL * (62914560LL + 2139095040LL + 81920 + 10240) + 5120 + 2LL * 202048 * 5120;
  CHECK(p.total == text);
  CHECK(p.total == 107769861120);
  // The vision tower by hand (Llama4VisionModel, vision_config): patch embedding 3·14²·1408,
  // class embedding 1408, positions 577·1408, pre/post LayerNorms 4·1408, 34 encoder layers of
  // 4·(1408² + 1408) + (1408·5632 + 5632) + (5632·1408 + 1408) + 4·1408 = 23,807,872, the pixel
  // shuffle MLP 5632·4096 + 4096·4096, the projector 4096·5120: 871,932,416. Text + vision is
  // Meta's published 109B total within 0.5%.
  const int64_t vision = 827904LL + 1408 + 577LL * 1408 + 4LL * 1408 + 34LL * 23807872 + 5632LL * 4096 +
                         4096LL * 4096 + 4096LL * 5120;
  CHECK(vision == 871932416);
  CHECK(Off(p.total + vision, 109e9) < 0.005);
  CHECK(Off(p.active, 17e9) < 0.02);  // "17B active"
  CHECK(GenericModelWarning(m).find("the vision tower (vision_config) is left out") != std::string::npos);
}

TEST_CASE("adapter Llama4ForConditionalGeneration: Llama 4 Maverick with MoE on every second layer") {
  const ModelSpec m = Arch("llama-4-maverick-17b-128e.json");
  CHECK(m.num_experts == 128);
  CHECK(m.num_dense_layers == 24);  // moe_layers 1, 3, ..., 47
  CHECK(m.intermediate_size == 16384);  // intermediate_size_mlp: the dense layers' width
  CHECK(m.moe_intermediate_size == 8192);
  const ParamCounts p = CountParams(m);
  // By hand: 24 MoE layers of 62,914,560 + 129·125,829,120 + 5120·128 + 10240 and 24 dense
  // layers of 62,914,560 + 3·5120·16384 + 10240, final norm, untied embeddings.
  const int64_t text = 24LL * (62914560 + 129LL * 125829120 + 655360 + 10240) +
                       24LL * (62914560 + 251658240 + 10240) + 5120 + 2LL * 202048 * 5120;
  CHECK(p.total == text);
  CHECK(Off(p.total, 400e9) < 0.005);  // Meta: 400B total (the vision tower's 0.87B aside)
  CHECK(Off(p.total + 871932416, 400e9) < 0.005);
  CHECK(Off(p.active, 17e9) < 0.03);
}

TEST_CASE("adapter Llama4: no_rope_layers and layer_types and a null attention_chunk_size") {
  const std::string base =
      "{\"architectures\": [\"Llama4ForCausalLM\"], \"hidden_size\": 512, \"num_hidden_layers\": 4, "
      "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"intermediate_size\": 256, \"vocab_size\": 1000, "
      "\"max_position_embeddings\": 4096, \"num_local_experts\": 4, \"num_experts_per_tok\": 1";
  ModelSpec m = ParseModel(base + ", \"no_rope_layers\": [1, 0, 1, 1]}", "l4.json");
  CHECK(m.num_nope_layers == 1);
  CHECK(m.num_chunked_attention_layers == 3);
  m = ParseModel(base + ", \"attention_chunk_size\": null}", "l4.json");
  CHECK(m.attention_chunk_size == 0);
  CHECK(m.num_chunked_attention_layers == 0);
  m = ParseModel(base + ", \"layer_types\": [\"full_attention\", \"chunked_attention\", \"full_attention\", "
                        "\"full_attention\"]}",
                 "l4.json");
  CHECK(m.num_chunked_attention_layers == 1);
  CHECK_THROWS_WITH(ParseModel(base + ", \"no_rope_layers\": [1, 0]}", "l4.json"),
                    doctest::Contains("expected one entry (1: RoPE, 0: NoPE) per layer, 4, found 2"));
}

TEST_CASE("adapter DeepseekV4ForCausalLM: DeepSeek-V4 Flash") {
  const ModelSpec m = Arch("deepseek-v4-flash.json");
  CHECK(m.architecture == Architecture::kDeepseekV4);
  CHECK(m.num_key_value_heads == 1);
  CHECK(m.intermediate_size == 2048);  // no key: moe_intermediate_size (AutoModel MoEConfig inter_dim)
  REQUIRE(m.layer_pattern.size() == 43);
  int window = 0, csa = 0, hca = 0;
  for (const LayerBlock& b : m.layer_pattern) {
    CHECK(b.mixer == MixerKind::kDeepseekV4Attention);
    CHECK(b.mlp == MlpKind::kMoe);
    window += b.compress_ratio == 0;
    csa += b.compress_ratio == 4;
    hca += b.compress_ratio == 128;
  }
  CHECK(window == 2);
  CHECK(csa == 21);
  CHECK(hca == 20);
  CHECK(m.mtp_num_layers == 1);
  REQUIRE(m.mtp_pattern.size() == 1);
  CHECK(m.mtp_pattern[0].compress_ratio == 0);  // compress_ratios[43]
  const ParamCounts p = CountParams(m);
  // By hand (AutoModel deepseek_v4/layers.py, model.py), h 4096, a 64, d 512, r_q = r_o 1024,
  // g 8, n_I 64, d_I 128, m 4: the window attention wq_a 4096·1024 + q_norm 1024 + wq_b
  // 1024·64·512 + wkv 4096·512 + kv_norm 512 + wo_a 64·512·1024 + wo_b 8·1024·4096 + sinks 64
  // = 106,956,352; a ratio-4 layer's compressor 2·4096·1024 + 4·1024 + 512 and indexer
  // 2·4096·256 + 4·256 + 128 + 1024·64·128 + 4096·64 = 19,142,272 more; a ratio-128 layer's
  // compressor 2·4096·512 + 128·512 + 512 = 4,260,352 more; two hyper-connections
  // 2·(24·(4·4096 + 1) + 3) = 786,486; the MoE 257·3·4096·2048 + router 4096·256 + bias 256 =
  // 6,468,665,600 (no bias on the 3 hash-routed layers); two norms 2·4096 per layer; untied
  // embeddings 2·129280·4096, final norm 4096, the hyper-head 4·4·4096 + 4 + 1.
  const int64_t layers = 43LL * (106956352 + 786486 + 6468665600LL + 8192) + 21LL * 19142272 + 20LL * 4260352 -
                         3LL * 256;
  CHECK(p.total == layers + 2LL * 129280 * 4096 + 4096 + 65536 + 5);
  // Published: 284B total parameters (DeepSeek-V4 Flash model card; MTP module excluded).
  CHECK(Off(p.total, 284e9) < 0.005);
  CHECK(LoadModel("deepseek-v4-flash").architecture == Architecture::kDeepseekV4);  // the preset
}

TEST_CASE("adapter DeepseekV4ForCausalLM: layer_types with compress_rates and the refusals") {
  // A 4-layer config of transformers' form: layer_types and compress_rates, no compress_ratios;
  // every other key at DeepseekV4Config's defaults (the Flash values).
  const std::string head = "{\"architectures\": [\"DeepseekV4ForCausalLM\"], \"hidden_size\": 4096, "
                           "\"num_hidden_layers\": 4, \"num_attention_heads\": 64, \"vocab_size\": 129280, "
                           "\"max_position_embeddings\": 1048576, ";
  const std::string types = "\"layer_types\": [\"sliding_attention\", \"compressed_sparse_attention\", "
                            "\"heavily_compressed_attention\", \"compressed_sparse_attention\"]";
  const ModelSpec m = ParseModel(head + types + ", \"compress_rates\": {\"compressed_sparse_attention\": 4, "
                                            "\"heavily_compressed_attention\": 128}}",
                                 "v4.json");
  REQUIRE(m.layer_pattern.size() == 4);
  CHECK(m.layer_pattern[0].compress_ratio == 0);
  CHECK(m.layer_pattern[1].compress_ratio == 4);
  CHECK(m.layer_pattern[2].compress_ratio == 128);
  CHECK(m.dsv4.q_lora_rank == 1024);
  CHECK(m.dsv4.index_topk == 512);
  CHECK(m.sliding_window == 128);
  CHECK(m.mtp_num_layers == 1);  // num_nextn_predict_layers' default
  // A compress rate Megatron-Core does not build (transformer_config.py: 0, 4 or 128 only).
  CHECK_THROWS_WITH_AS(ParseModel(head + types + ", \"compress_rates\": {\"heavily_compressed_attention\": 64}}",
                                  "v4.json"),
                       doctest::Contains("expected 0, 4 or 128 at index 2"), InputError);
  // Neither compress_ratios nor layer_types: per-layer ratios are required (the bridge refuses too).
  CHECK_THROWS_WITH_AS(ParseModel(head + "\"head_dim\": 512}", "v4.json"),
                       doctest::Contains("DeepSeek-V4 needs per-layer compression ratios"), InputError);
}
