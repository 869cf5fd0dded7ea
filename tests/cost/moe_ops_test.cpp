// AutoModel's MoE layers as the AutoModel time model prices them (time.hpp kMoe*, kHfMoe*,
// AutoModelEpPass): the constants are refitted from the H200 measurements
// (tests/data/measured/h200_moe_layer.jsonl, h200_eager_profile_moe.jsonl), the parts are
// checked to add up to the measured whole MoE block, and the EP dispatch is computed by hand
// from DeepEP's and HybridEP's published bandwidths, for the learned gate's uniform routing and
// the fake gate's consecutive experts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "accuracy/measured_cases.hpp"
#include "cost/comm.hpp"
#include "cost/time.hpp"
#include "meshplan/framework.hpp"

namespace meshplan {

namespace {

constexpr double kHbm = 4.8e12;  // H200 HBM3e peak, bytes/s (hwdb/gpus/h200.yaml)

std::vector<nlohmann::json> Lines(const std::string& file) {
  std::ifstream in(test::kMeasuredDir + file);
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);  // environment
  std::vector<nlohmann::json> out;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

TEST_CASE("moe ops: the per-part pass constants are the medians of the measured AutoModel-style MoE parts") {
  const std::vector<nlohmann::json> rows = Lines("h200_moe_layer.jsonl");
  std::map<std::string, std::vector<double>> passes;
  std::map<std::tuple<std::string, int, int>, std::pair<double, double>> router;  // (shape, T, run) -> (T·E, s)
  for (const nlohmann::json& j : rows) {
    const std::string part = j.at("part");
    const double s = j.at("kernel_seconds").get<double>() * kHbm / 2.0;  // element passes at the HBM peak
    const double t = j.at("tokens"), r = j.at("rows"), h = j.at("hidden"), f = j.at("ffn");
    if (part == "permute" || part == "unpermute") passes[part].push_back(s / (r * h));
    if (part == "act") passes[part].push_back(s / (r * f));
    if (part == "norms_adds") passes[part].push_back(s / (t * h));
    if (part == "router" || part == "index") {
      auto& p = router[{j.at("shape"), j.at("tokens"), j.at("run")}];
      p.first = t * j.at("experts").get<double>();
      p.second += j.at("kernel_seconds").get<double>();
    }
  }
  REQUIRE(passes["permute"].size() == 20);
  CHECK(cost::kMoePermutePasses == doctest::Approx(Median(passes["permute"])).epsilon(0.01));
  CHECK(cost::kMoeUnpermutePasses == doctest::Approx(Median(passes["unpermute"])).epsilon(0.01));
  CHECK(cost::kMoeActPasses == doctest::Approx(Median(passes["act"])).epsilon(0.01));
  CHECK(cost::kMoeNormAddPasses == doctest::Approx(Median(passes["norms_adds"])).epsilon(0.01));
  // Router: least squares of seconds = a + b·T·E over its 20 points.
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (const auto& [key, p] : router) {
    sx += p.first, sy += p.second, sxx += p.first * p.first, sxy += p.first * p.second, n += 1;
  }
  REQUIRE(n == 20);
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx), a = (sy - b * sx) / n;
  CHECK(cost::kMoeRouterFixedSeconds == doctest::Approx(a).epsilon(0.02));
  CHECK(cost::kMoeRouterPasses == doctest::Approx(b * kHbm / 2.0).epsilon(0.01));
}

TEST_CASE("moe ops: the priced parts add up to the measured whole MoE block") {
  // Per (shape, tokens, run): the block's kernel time against the sum of its measured GEMMs and
  // the eager passes the constants price (unfused permute: the measurement's path), router's
  // fixed time included. The shared experts' GEMMs are taken from the measured shared part.
  std::map<std::tuple<std::string, int, int>, std::map<std::string, double>> parts;
  std::map<std::tuple<std::string, int, int>, nlohmann::json> meta;
  for (const nlohmann::json& j : Lines("h200_moe_layer.jsonl")) {
    const auto key = std::make_tuple(j.at("shape").get<std::string>(), j.at("tokens").get<int>(), j.at("run").get<int>());
    parts[key][j.at("part").get<std::string>()] = j.at("kernel_seconds").get<double>();
    meta[key] = j;
  }
  int checked = 0;
  for (const auto& [key, p] : parts) {
    const nlohmann::json& j = meta[key];
    const double t = j.at("tokens"), r = j.at("rows"), h = j.at("hidden"), f = j.at("ffn"), e = j.at("experts");
    const double k = r / t;
    const double passes = k * (cost::kMoePermutePasses + cost::kMoeUnpermutePasses) * h + k * cost::kMoeActPasses * f +
                          cost::kMoeRouterPasses * e;
    double priced = p.at("fc1") + p.at("fc2") + 2.0 * t * passes / kHbm + cost::kMoeRouterFixedSeconds;
    if (p.count("shared")) priced += p.at("shared");
    CAPTURE(std::get<0>(key));
    CAPTURE(std::get<1>(key));
    CHECK(priced == doctest::Approx(p.at("block")).epsilon(0.15));
    ++checked;
  }
  CHECK(checked == 20);
}

TEST_CASE("moe ops: the Hugging Face MoE constants solve the two profiled HF MoE decoders") {
  const std::vector<nlohmann::json> rows = Lines("h200_eager_profile_moe.jsonl");
  REQUIRE(rows.size() == 2);
  double a[2][2], y[2];
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& j = rows[size_t(i)];
    // The expert width from the model's config (the profile records the dense intermediate_size).
    std::ifstream cfg(test::kMeasuredDir + "models/" + j.at("model").get<std::string>() + ".json");
    REQUIRE(cfg.good());
    const nlohmann::json c = nlohmann::json::parse(cfg);
    const double f = c.value("moe_intermediate_size", c.at("intermediate_size").get<double>());
    const double h = j.at("hidden"), k = j.at("top_k"), tokens = j.at("tokens");
    const bool qk = j.at("model").get<std::string>().rfind("qwen3", 0) == 0;
    const double qkv = qk ? j.at("q_dim").get<double>() + j.at("kv_dim").get<double>() : 0.0;
    a[i][0] = k * f;
    a[i][1] = k * h;
    y[i] = j.at("layer_other_s").get<double>() * kHbm / 2.0 / tokens - cost::kEagerHiddenPasses * h -
           cost::kEagerQkNormPasses * qkv;
  }
  const double det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
  CHECK(cost::kHfMoeCopyFfnPasses == doctest::Approx((y[0] * a[1][1] - a[0][1] * y[1]) / det).epsilon(0.01));
  CHECK(cost::kHfMoeCopyHiddenPasses == doctest::Approx((a[0][0] * y[1] - y[0] * a[1][0]) / det).epsilon(0.01));
  // Mixtral's measured layer (8192 tokens): 15.83 ms of eager kernels, priced by MoeLayerPasses.
  const ModelSpec mixtral = LoadModel("mixtral-8x7b");
  CHECK(cost::HfMoeModel(mixtral));
  CHECK_FALSE(cost::HfMoeModel(LoadModel("qwen3-30b-a3b")));
  CHECK(2.0 * 8192 * cost::MoeLayerPasses(mixtral, 1) / kHbm == doctest::Approx(0.015827).epsilon(0.01));
}

TEST_CASE("moe ops: fused permute passes counted for the DeepEP path") {
  // 5 + 3/k passes per copy at 1.48x the ideal time: k = 8 gives 5.375 x 1.48 = 7.955.
  CHECK(cost::kMoeFusedPermutePasses(8) == doctest::Approx(7.955).epsilon(1e-3));
  const ModelSpec q = LoadModel("qwen3-30b-a3b");  // h 2048, k 8, f_e 768, E 128, no shared experts
  const double common = 38.7 * 2048 + 8 * 47.3 * 768 + 640.0 * 128;
  CHECK(cost::MoeLayerPasses(q, 8) == doctest::Approx(common + 8 * 7.955 * 2048).epsilon(1e-4));
  CHECK(cost::MoeLayerPasses(q, 1) == doctest::Approx(common + 8 * (9.0 + 24.1) * 2048).epsilon(1e-4));
}

namespace {

// A CostView with EP `ep`, flex dispatch with `backend` and `routing`.
CostView FlexView(int64_t ep, FlexBackend backend, MoeRouting routing) {
  CostView v;
  v.ep = ep;
  v.dispatcher = TokenDispatch::kFlex;
  v.flex_backend = backend;
  v.routing = routing;
  return v;
}

}  // namespace

TEST_CASE("moe ops: the fake gate's consecutive experts reach fewer ranks and nodes than uniform routing") {
  // FakeBalancedGate (noise 0): token t -> experts (t·k + j) mod E, j < k; rank r holds experts
  // [r·E/ep, (r+1)·E/ep). Counted by hand over one period of starts t·k mod E:
  // DeepSeek-V3 (E 256, k 8) on EP 64: starts 0, 8, 16, ... cover experts 8i..8i+7 = ranks 2i and
  // 2i+1 (4 experts each), always one node of 8 ranks (32 experts).
  CHECK(cost::ConsecutiveDispatchCopies(256, 8, 64, 1) == doctest::Approx(2.0));
  CHECK(cost::ConsecutiveDispatchCopies(256, 8, 64, 8) == doctest::Approx(1.0));
  // Qwen3-30B-A3B (E 128, k 8) on EP 8: 16 experts per rank, starts multiples of 8: one rank.
  CHECK(cost::ConsecutiveDispatchCopies(128, 8, 8, 1) == doctest::Approx(1.0));
  // GPT-OSS-120B (E 128, k 4) on EP 64: 2 experts per rank: 2 ranks, one node.
  CHECK(cost::ConsecutiveDispatchCopies(128, 4, 64, 1) == doctest::Approx(2.0));
  CHECK(cost::ConsecutiveDispatchCopies(128, 4, 64, 8) == doctest::Approx(1.0));
  // Kimi-K2 (E 384, k 8) on EP 32: 12 experts per rank; starts 0, 8, 16 repeat mod 24: the
  // window 8..15 crosses the rank boundary at 12, 0..7 and 16..23 do not: (1 + 2 + 1) / 3.
  CHECK(cost::ConsecutiveDispatchCopies(384, 8, 32, 1) == doctest::Approx(4.0 / 3.0));
  CHECK(cost::ConsecutiveDispatchCopies(384, 8, 32, 8) == doctest::Approx(1.0));
  // E 8, k 3, EP 2 (4 experts per rank): starts 0 3 6 1 4 7 2 5 (gcd 1, period 8), windows
  // {0,1,2} 1, {3,4,5} 2, {6,7,0} 2 (wraps), {1,2,3} 1, {4,5,6} 1, {7,0,1} 2, {2,3,4} 2, {5,6,7} 1:
  // 12 / 8 = 1.5 = 1 + (k − 1)/(E/ep), each of the ep boundaries inside a window with probability
  // (k − 1)/E when every start is equally likely.
  CHECK(cost::ConsecutiveDispatchCopies(8, 3, 2, 1) == doctest::Approx(1.5));
  // One group holds every expert.
  CHECK(cost::ConsecutiveDispatchCopies(256, 8, 8, 8) == doctest::Approx(1.0));
  // Uniform routing (the learned gate) reaches about 5.3 of DeepSeek-V3's 8 nodes: 8·(1 − C(224, 8)/C(256, 8)).
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
  CHECK(cost::FlexDispatchCopies(256, 8, 8) == doctest::Approx(8.0 * (1.0 - miss)));
  CHECK(8.0 * (1.0 - miss) == doctest::Approx(5.26).epsilon(0.01));
}

TEST_CASE("moe ops: group-limited routing reaches at most the chosen groups' ranks and nodes") {
  // DeepSeek-V3: 256 experts in 8 groups of 32, 4 groups chosen per token, 8 experts, 2 per group.
  // A unit holding one whole group (EP 8 ranks, or EP 64's 8 nodes) gets the token exactly when
  // its group is chosen, and every chosen group supplies experts: 4 copies.
  CHECK(cost::GroupLimitedDispatchCopies(256, 8, 8, 4, 8) == doctest::Approx(4.0));
  // Two whole groups per unit (EP 4): the unit misses when neither is chosen, C(6, 4)/C(8, 4).
  CHECK(cost::GroupLimitedDispatchCopies(256, 8, 8, 4, 4) == doctest::Approx(4.0 * (1.0 - 15.0 / 70.0)));
  // Four ranks per group (EP 32, 8 experts each): chosen with 4/8, then hit unless both of the
  // group's 2 experts miss the rank's 8 of 32: 1 − C(24, 2)/C(32, 2) = 1 − 276/496.
  CHECK(cost::GroupLimitedDispatchCopies(256, 8, 8, 4, 32) == doctest::Approx(32.0 * 0.5 * (220.0 / 496.0)));
  // EP 64 (4 experts per rank): 32 · (1 − C(28, 2)/C(32, 2)), against 7.68 with uniform routing.
  CHECK(cost::GroupLimitedDispatchCopies(256, 8, 8, 4, 64) == doctest::Approx(32.0 * 118.0 / 496.0));
  CHECK(cost::FlexDispatchCopies(256, 8, 64) > cost::GroupLimitedDispatchCopies(256, 8, 8, 4, 64));
  // A unit straddling two groups (EP 3 is no valid EP size for 256 experts, but the domains an
  // odd EP group spans can be): units [0, 85), [85, 170), [170, 256) overlap groups in 32,32,21 |
  // 11,32,32,10 | 22,32,32 experts; the subset enumeration over the 70 choices of 4 groups,
  // computed outside meshplan (Python, itertools.combinations), gives 2.746348.
  CHECK(cost::GroupLimitedDispatchCopies(256, 8, 8, 4, 3) == doctest::Approx(2.746348).epsilon(1e-6));
  // No grouping, or every group chosen: uniform routing.
  CHECK(cost::GroupLimitedDispatchCopies(256, 8, 1, 1, 64) == doctest::Approx(cost::FlexDispatchCopies(256, 8, 64)));
  CHECK(cost::GroupLimitedDispatchCopies(256, 8, 8, 8, 64) == doctest::Approx(cost::FlexDispatchCopies(256, 8, 64)));
  // The preset reads n_group 8 / topk_group 4; Kimi K2's n_group 1 leaves routing uniform.
  const ModelSpec v3 = LoadModel("deepseek-v3"), k2 = LoadModel("kimi-k2");
  CHECK(v3.router_num_groups == 8);
  CHECK(v3.router_group_topk == 4);
  CHECK(cost::RoutedDispatchCopies(v3, 8) == doctest::Approx(4.0));
  CHECK_FALSE(k2.group_limited_routing());
  CHECK(cost::RoutedDispatchCopies(k2, 8) == doctest::Approx(cost::FlexDispatchCopies(k2.num_experts, 8, 8)));
}

TEST_CASE("moe ops: AutoModel's flex dispatch is priced at its own backend's published bandwidths") {
  const SystemSpec sys = LoadSystem("dgx-h100");  // 8 GPUs per node, NVLink 450 GB/s, one 50 GB/s NIC per GPU
  const ModelSpec m = LoadModel("deepseek-v3");   // h 7168, 256 experts, top-8
  const cost::Link a2a{100e9, 5e-6}, ring{80e9, 7e-6};
  const double row = 7168.0 * 2.0, T = 4096.0;
  // HybridEP, EP 64 over 8 nodes, fake gate: 1 node and 2 ranks per token. RDMA 41.24 / 46.57 GB/s
  // (HybridEP at 64 ranks); the NVLink forward of 2 copies at 469.96 / 418.27 of 900 (EP 36's
  // figures, the largest measured size at most 64) of 450 GB/s; the slower of the two each way.
  {
    const cost::AutoModelEp e =
        cost::AutoModelEpPass(sys, 256, a2a, ring, m, FlexView(64, FlexBackend::kHybridEP, MoeRouting::kConsecutive), T);
    const double rd = T * row / 41.24e9, rc = T * row / 46.57e9;
    const double nd = T * 2 * row / (450e9 * 469.96 / 900), nc = T * 2 * row / (450e9 * 418.27 / 900);
    CHECK(e.domains == 8);
    CHECK(e.node_copies == doctest::Approx(1.0));
    CHECK(e.rank_copies == doctest::Approx(2.0));
    CHECK(e.forward == doctest::Approx(2 * 5e-6 + std::max(rd, nd) + std::max(rc, nc)));
    CHECK(e.backward == doctest::Approx(e.forward));
    CHECK(e.rdma == doctest::Approx(2 * (rd + rc)));
    CHECK(e.nvlink == doctest::Approx(2 * (nd + nc)));
  }
  // DeepEP, the same job with the learned gate, node-limited (DeepSeek-V3 n_group 8, topk_group
  // 4; a node holds one group of 32 experts): 4 nodes per token at 51 / 50 GB/s (DeepEP at EP 64),
  // and 4 chosen groups x (1 − C(28, 2)/C(32, 2)) of their 8 ranks = 32 · 118/496 ranks.
  {
    const cost::AutoModelEp e =
        cost::AutoModelEpPass(sys, 256, a2a, ring, m, FlexView(64, FlexBackend::kDeepEP, MoeRouting::kUniform), T);
    const double nodes = 4.0, ranks = 32.0 * 118.0 / 496.0;
    CHECK(e.node_copies == doctest::Approx(nodes));
    CHECK(e.rank_copies == doctest::Approx(ranks));
    const double nd = T * ranks * row / (450e9 * 153.0 / 200), nc = T * ranks * row / (450e9 * 158.0 / 200);
    CHECK(e.forward == doctest::Approx(2 * 5e-6 + std::max(T * nodes * row / 51e9, nd) +
                                       std::max(T * nodes * row / 50e9, nc)));
  }
  // Inside one node (EP 8), DeepEP: the distinct ranks' copies over NVLink at 153 / 158 of 200
  // GB/s (DeepEP's intranode figures on H800) of 450 GB/s, no RDMA; a rank holds one group, so
  // a token reaches its 4 chosen groups' 4 ranks.
  {
    const cost::AutoModelEp e =
        cost::AutoModelEpPass(sys, 256, a2a, ring, m, FlexView(8, FlexBackend::kDeepEP, MoeRouting::kUniform), T);
    const double ranks = 4.0;
    CHECK(e.rank_copies == doctest::Approx(ranks));
    CHECK(e.domains == 1);
    CHECK(e.rdma == 0.0);
    CHECK(e.forward == doctest::Approx(2 * 5e-6 + T * ranks * row / (450e9 * 0.765) + T * ranks * row / (450e9 * 0.79)));
  }
  // torch: all-gather of the bf16 tokens and all-reduce of the fp32 output over EP 8 forward;
  // backward two all-reduces (fp32 output gradient, bf16 input gradient); ring formulas by hand.
  {
    CostView v;
    v.ep = 8;
    v.dispatcher = TokenDispatch::kAllgather;
    const cost::AutoModelEp e = cost::AutoModelEpPass(sys, 256, a2a, ring, m, v, T);
    const double gathered = 8 * T * 7168.0;
    const double ag = 7 * 7e-6 + gathered * 2 * 7 / 8 / 80e9;
    auto ar = [&](double bytes) { return 14 * 7e-6 + bytes * 14 / 8 / 80e9; };
    CHECK(e.forward == doctest::Approx(ag + ar(gathered * 4)));
    CHECK(e.backward == doctest::Approx(ar(gathered * 4) + ar(gathered * 2)));
  }
  CHECK(cost::AutoModelEpPass(sys, 256, a2a, ring, m, FlexView(1, FlexBackend::kDeepEP, MoeRouting::kUniform), T)
            .forward == 0.0);
}

TEST_CASE("moe ops: AutoModel's torch dispatcher runs the unfused permute of the ep 1 path") {
  const ModelSpec q = LoadModel("qwen3-30b-a3b");
  CHECK(cost::MoeLayerPasses(q, 8, TokenDispatch::kAllgather) == doctest::Approx(cost::MoeLayerPasses(q, 1)));
  CHECK(cost::MoeLayerPasses(q, 8, TokenDispatch::kFlex) < cost::MoeLayerPasses(q, 1));
}

}  // namespace meshplan
