// Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5) under Megatron-Core: the block's FLOPs, saved
// activation bytes and parameters on a rank, checked against values worked out by hand from
// the formulas' sources (cost/hybrid.hpp), and the framework rules a GPTModel with Gated
// DeltaNet layers follows.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cost/context.hpp"
#include "cost/cost_fixtures.hpp"
#include "cost/hybrid.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "meshplan/cost.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"

using namespace meshplan;
using test::Rel;

namespace {

// h 64, 4 layers: three Gated DeltaNet (2 key heads, 4 value heads, head dims 8, conv 4) and
// one gated attention layer (4 heads of 16, 2 KV heads), each with a MoE of 4 experts of 32,
// top 2, and a shared expert of 32.
ModelSpec TinyQwen3Next() {
  const std::string text =
      "{\"architectures\": [\"Qwen3NextForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 4, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"intermediate_size\": 128, "
      "\"vocab_size\": 100, \"max_position_embeddings\": 4096, \"linear_num_key_heads\": 2, "
      "\"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8, \"linear_value_head_dim\": 8, "
      "\"linear_conv_kernel_dim\": 4, \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
      "\"shared_expert_intermediate_size\": 32, \"full_attention_interval\": 4}";
  return ParseModel(text, "tiny-qwen3-next.json");
}

Layout Read(const std::string& model_keys, int64_t gpus, int64_t gbs = 8) {
  const std::string text = "model: {seq_length: 256, " + model_keys + "}\ntrain: {global_batch_size: " +
                           std::to_string(gbs) + ", micro_batch_size: 1}\nddp: {use_distributed_optimizer: true}\n";
  return ParseMegatronRecipe(text, "r.yaml", gpus).layout;
}

}  // namespace

TEST_CASE("gdn: projection and chunked gated delta rule FLOPs by hand") {
  const ModelSpec m = TinyQwen3Next();
  // in_proj 64 -> 2·16 + 2·32 + 2·4 = 104, out_proj 32 -> 64, x6.
  CHECK(cost::GdnLinearFlops(m) == 6.0 * 64 * 104 + 6.0 * 32 * 64);
  // C = 64, d_k = d_v = 8, per value head forward: K·Kᵀ 2·64·8 = 1024, solve_tril 2·64²/3 =
  // 2730.67, w and u 2·64·16 = 2048, the states 4·64 = 256, o 2·64 + 2·64·16 = 2176:
  // 8234.67; x3, plus the backward's recomputed states and w, u 256 + 2048; 4 heads.
  CHECK(cost::GdnChunkFlops(m) == doctest::Approx(4.0 * (3.0 * (1024 + 2048.0 * 4 / 3 + 2048 + 256 + 2176) + 2304)));
  CHECK(cost::GdnChunkFlops(m) == doctest::Approx(108032.0));
  const cost::FlopsPerToken f = cost::ComputeFlopsPerToken(m, 256);
  CHECK(f.gdn_linear_flops == cost::GdnLinearFlops(m));
  // Gated attention: q_proj h -> 2·q: 6·[64·(64 + 2·32) + 64·64] + 6·64·64 for the gate.
  CHECK(f.attn_linear_flops == 6.0 * (64 * (64 + 64) + 64 * 64) + 6.0 * 64 * 64);
}

TEST_CASE("gdn: saved activation bytes per token of the block by hand") {
  const ModelSpec m = TinyQwen3Next();
  auto bytes = [&](MixerKind x, uint32_t rm = 0) {
    const cost::TeLayerBytes b = cost::HybridBlockSavedBytes(m, x, MlpKind::kNone, Precision::kBf16, 1, rm);
    return std::vector<double>{b.sequence, b.split};
  };
  // qk = 16, v = 32, q and k repeated to the 4 value heads: 32. Norm input 2h + in_proj input
  // 2h = 256. conv1d input 2·(32 + 32) = 128; L2 norm outputs 4·16 and rstd 8·2: 80; softplus
  // input 4·4 = 16; the chunk kernel's q, k 4·32, v 2·32, g 4·4, beta 2·4, A 2·64·4: 728;
  // output norm input 2·32 and rstd 4·4: 80; gate fp32 4·32 = 128; product 2·32 + 4·32 = 192;
  // out_proj input 2·32 = 64. Sum 1416.
  CHECK(bytes(MixerKind::kGatedDeltaNet) == std::vector<double>{256, 1416});
  CHECK(bytes(MixerKind::kGatedDeltaNet, kRecomputeLayernorm) == std::vector<double>{128, 1416});
  // Gated attention: q, k, v, output 2·(2·64 + 2·32) = 384, log-sum-exp 16, q/k norm inputs
  // 2·(64 + 32) = 192, the gate's sigmoid 2·64 and linear_proj's input 2·64: 848.
  CHECK(bytes(MixerKind::kAttention) == std::vector<double>{256, 848});
}

TEST_CASE("gdn: the rank's memory sums its blocks and its Gated DeltaNet parameters") {
  const ModelSpec m = TinyQwen3Next();
  const CostModel cm(m, test::DgxH100(), test::Setup(1, 256, 8));
  const auto r = cm.RankMemories(ToCostView(Read("tensor_model_parallel_size: 1", 1), cm.model(), cm.setup()));
  REQUIRE(r.size() == 1);
  const cost::TeLayerBytes moe = cost::HybridBlockSavedBytes(m, MixerKind::kNone, MlpKind::kMoe, Precision::kBf16, 1, 0);
  // 256 tokens x (3 Gated DeltaNet blocks of 1672, one attention block of 1104, 4 MoE blocks).
  CHECK(r[0].activations == Rel(256.0 * (3 * 1672.0 + 1104.0 + 4 * (moe.sequence + moe.split))));
  // bf16 weights of every parameter, the vocabulary padded to 128 (embedding and output layer).
  CHECK(r[0].weights == Rel(2.0 * (double(CountParams(m).total) + 2.0 * 64.0 * 28.0)));
  const cost::RankParams rp = cost::ParamsOfRank(m, CountParams(m), 1, 1, 0, nullptr, 0, SplitPlaces{});
  CHECK(rp.gdn_mixers == 3);
  CHECK(rp.attention_mixers == 1);
  CHECK(rp.moe_layers == 4);
}

TEST_CASE("gdn: priced by Megatron-Bridge as a GPTModel so VPP and the flat split rules apply") {
  const ModelSpec m = TinyQwen3Next();
  CHECK(HybridRefusal(m).empty());
  CHECK(FrameworkHybridRefusal(*FindFramework("megatron-bridge"), m).empty());
  // AutoModel (components/models/qwen3_next) is priced by the eager terms' Gated DeltaNet layers.
  CHECK(FrameworkHybridRefusal(*FindFramework("automodel"), m).empty());
  const SystemSpec sys = test::DgxH100();
  const TrainSetup setup = test::Setup(2, 256, 8);
  const Layout l = Read("pipeline_model_parallel_size: 2, pipeline_dtype: bfloat16, "
                        "virtual_pipeline_model_parallel_size: 2", 2);
  const RuleContext ctx{m, setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  CHECK(meshplan::FirstFailure(ctx) == nullptr);  // 4 layers over 2 x 2 virtual stages
  const CostModel cm(m, sys, setup);
  const Cost c = cm.Evaluate(ToCostView(l, cm.model(), cm.setup()));
  CHECK(c.step_seconds > 0);
  // TP 4 splits the 2 key heads of each Gated DeltaNet layer unevenly: Megatron-Core's assert.
  const Layout t4 = Read("tensor_model_parallel_size: 4", 4);
  const TrainSetup setup4 = test::Setup(4, 256, 8);
  const RuleContext ctx4{m, setup4, t4, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  const Rule* f = meshplan::FirstFailure(ctx4);
  REQUIRE(f != nullptr);
  CHECK(std::string(f->name) == "mb_gdn_tp_cp_key_heads");
}

// AutoModel (pytorch profile): the layers of Qwen3NextForCausalLM as AutoModel's modules and the
// kernels they call save them (memory_pytorch.cpp GdnMixerNoAc, AttentionNoAc), bf16, per token.
// Tiny model: h 64, qk = 2·8 = 16, v = 4·8 = 32, q and k repeated to 4 value heads: qk' = 32,
// chunk C = 64; attention 4 heads of 16 (q 64), 2 KV heads (k = v = 32); MoE top 2 of 4 experts
// of 32, shared expert 32 with a sigmoid gate.
TEST_CASE("gdn: AutoModel layers' saved bytes per token by hand") {
  const ModelSpec m = TinyQwen3Next();
  using cost::AcWrap;
  const cost::ActBytes g = cost::LayerActivationBytes(m, true, AcWrap::kNone, {}, MixerKind::kGatedDeltaNet);
  const cost::ActBytes a = cost::LayerActivationBytes(m, true, AcWrap::kNone, {});
  // Both layers: two Qwen3NextRMSNorm of h (fp32 input 4h, rsqrt 4, fp32 normalised 4h: 516
  // each) and their bf16 outputs 2·2h = 256: 1288; the shared expert's gate, z and the sigmoid
  // 2·(64 + 1) = 130: 1418 replicated.
  CHECK(g.rep == 1418.0);
  CHECK(a.rep == 1418.0);
  // Routed (EP-owned): k·2·(h + 3·f_e) = 2·2·160 = 640, fp32 router logits 4·4 = 16.
  CHECK(g.unsplit == 656.0);
  CHECK(a.unsplit == 656.0);
  // Gated DeltaNet: conv1d input 2·(2·16 + 32) = 128; beta 2·4 = 8; fp32 gate (softplus input
  // and output) 8·4 = 32; fla: l2-normalised q, k 2·2·32 = 128, their rstd 8·4 = 32, v 2·32 =
  // 64, g cumsum 4·4 = 16, A 2·64·4 = 512; output norm input o and gate z 2·2·32 = 128, rstd
  // 4·4 = 16; out_proj input 2·32 = 64: 1128. Shared expert's SwiGLU 4·2·32 = 256.
  CHECK(g.split == 1128.0 + 256.0);
  // Gated attention: q, k, v, out 2·(64 + 32 + 32 + 64) = 384, lse 4·4 = 16; q_norm and k_norm
  // (Qwen3NextRMSNorm per head) 8·64 + 4·4 = 528 and 8·32 + 4·2 = 264; the output gate's sigmoid
  // and product 2·2·64 = 256: 1448.
  CHECK(a.split == 1448.0 + 256.0);
  // Full AC keeps the checkpointed layer input, 2h, for either mixer.
  CHECK(cost::LayerActivationBytes(m, true, AcWrap::kLayer, {}, MixerKind::kGatedDeltaNet).rep == 128.0);
  // Selective AC: the layer input 128 and every other matmul output, in order in_proj_qkvz 96
  // (saved), in_proj_ba 8, out_proj 64 (saved), router 4, grouped gate+up 2·64 (saved), grouped
  // down 2·64, shared gate 32 (saved), up 32, down 64 (saved); plus the all-to-all outputs 2·2·2·64.
  const cost::ActBytes s = cost::LayerActivationBytes(m, true, AcWrap::kSelective, {}, MixerKind::kGatedDeltaNet);
  CHECK(s.rep == 128.0 + 2.0 * 64 + 2.0 * 64);
  CHECK(s.split == 2.0 * 96 + 2.0 * 32);
  CHECK(s.unsplit == 2.0 * 128 + 512.0);
  // One GPU, 256 tokens: 4 layers (one attention, three Gated DeltaNet) of 1418 + 656 + split,
  // RoPE cos and sin 2·2·16 = 64, the final norm (HF RMSNorm 6·64 + 4, its output 2·64) 516:
  // 256·(3778 + 3·3458 + 64 + 516) = 3,771,392 B.
  const CostModel cm(m, test::DgxH100(), test::Setup(1, 256, 8));
  Layout l;
  const auto r = cm.RankMemories(ToCostView(l, cm.model(), cm.setup()));
  REQUIRE(r.size() == 1);
  CHECK(r[0].activations == Rel(256.0 * (3778.0 + 3.0 * 3458.0 + 64.0 + 516.0)));
  CHECK(r[0].activations == Rel(3771392.0));
}

TEST_CASE("gdn: AutoModel step time prices the Gated DeltaNet layers") {
  const ModelSpec m = TinyQwen3Next();
  // Eager passes of the mixer (Qwen3-Next): the qkvz / ba reorder copies 2·(32 + 64) + 4·4 and
  // the concat 2·(32 + 32): 336; conv1d 2·64 = 128; gates 17·4 = 68; repeat to the value heads
  // and the v copy 32 + 64 + 64 = 160; fla: L2 norm 4·32, cumsum 4·4, reads 2·32 + 32, A 2·64·4,
  // w and u 2·64, fp32 states 4·4·8·8/64, v_new 2·32, o 32: 992; the gated norm 3·32 = 96: 1780
  // elements forward, x3 for the backward, at kElementwiseSlowdown.
  CHECK(cost::GdnMixerPasses(m) == doctest::Approx(3.0 * 1780.0 * cost::kElementwiseSlowdown));
  // The layers' time is the AutoModel eager model's (RankTime), not zero and not Megatron-Core's.
  const CostModel cm(m, test::DgxH100(), test::Setup(1, 256, 8));
  Layout l;
  const Cost c = cm.Evaluate(ToCostView(l, cm.model(), cm.setup()));
  const double chunk_s = 256.0 * 3.0 * cost::GdnChunkFlops(m) /
                         (test::DgxH100().gpu.bf16_flops * cost::kFlashAttentionEfficiency);
  CHECK(chunk_s > 0);
  CHECK(c.time.compute > chunk_s);
  CHECK(c.step_seconds >= c.time.compute);
}

TEST_CASE("gdn: AutoModel Qwen3-Next-80B layer bytes per token as docs/memory-model.md states them") {
  const ModelSpec m = LoadModel(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/arch/qwen3-next-80b-a3b.json");
  using cost::AcWrap;
  const cost::ActBytes g = cost::LayerActivationBytes(m, true, AcWrap::kNone, {}, MixerKind::kGatedDeltaNet);
  const cost::ActBytes a = cost::LayerActivationBytes(m, true, AcWrap::kNone, {});
  // h 2048; the mixer: conv input 2·(4096 + 4096) = 16,384, q and k repeated 2·2·4096 = 16,384,
  // v, o, z, out_proj input 4·2·4096 = 32,768, beta 64, A 2·64·32 = 4,096, fp32 rstd and gates
  // 24·32 = 768: 70,464; norms 2·(8·2048 + 4) + 2·2·2048 = 40,968; shared gate 2·2049 = 4,098;
  // routed 2·10·(2048 + 3·512) + 4·512 = 73,728; shared SwiGLU 8·512 = 4,096: 193,354.
  CHECK(g.rep + g.split + g.unsplit == 193354.0);
  // Gated attention (16 heads of 256, 2 KV heads): q, k, v, out 2·(4096 + 512 + 512 + 4096) +
  // lse 64 = 18,496, q/k norms 8·4096 + 64 + 8·512 + 8 = 36,936, gate 4·4096 = 16,384: 71,816.
  CHECK((a.rep + a.split + a.unsplit) - (g.rep + g.split + g.unsplit) == 71816.0 - 70464.0);
  // Eager passes (docs/cost-model.md): reorder copies and concat 2·(4096 + 8192) + 128 +
  // 2·(4096 + 4096) = 41,088; conv1d 16,384; gates 544; repeat and v copy 20,480; fla 16,384 +
  // 128 + 12,288 + 4,096 + 16,384 + 32,768 + 8,192 + 4,096 = 94,336; gated norm 12,288: 185,120.
  CHECK(cost::GdnMixerPasses(m) == doctest::Approx(3.0 * 185120.0 * cost::kElementwiseSlowdown));
}
