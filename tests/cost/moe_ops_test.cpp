// AutoModel's MoE layers as the AutoModel time model prices them (time.hpp kMoe*, kHfMoe*,
// AutoModelEpSeconds): the constants are refitted from the H200 measurements
// (tests/data/measured/h200_moe_layer.jsonl, h200_eager_profile_moe.jsonl), the parts are
// checked to add up to the measured whole MoE block, and the EP dispatch is computed by hand
// from DeepEP's published bandwidths.
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

TEST_CASE("moe ops: AutoModel's DeepEP dispatch sends a token once per node at DeepEP's published RDMA rate") {
  const SystemSpec sys = LoadSystem("dgx-h100");  // 8 GPUs per node, one 400 Gb/s NIC per GPU
  const ModelSpec m = LoadModel("deepseek-v3");   // h 7168, 256 experts, top-8
  const cost::Link link{100e9, 5e-6};
  // EP 64 over 8 nodes: distinct nodes per token 8·(1 − Π_{i<8} (224 − i)/(256 − i)).
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
  const double nodes = 8.0 * (1.0 - miss);
  CHECK(nodes == doctest::Approx(5.26).epsilon(0.01));
  const double bytes = 4096.0 * nodes * 7168.0 * 2.0;
  CHECK(cost::AutoModelEpSeconds(sys, 256, link, m, 64, 4096, false) == doctest::Approx(5e-6 + bytes / 51e9));
  CHECK(cost::AutoModelEpSeconds(sys, 256, link, m, 64, 4096, true) == doctest::Approx(5e-6 + bytes / 50e9));
  // EP 32 over 4 nodes takes the EP 32 row; EP 128 the EP 64 row.
  double miss4 = 1.0;
  for (int i = 0; i < 8; ++i) miss4 *= (192.0 - i) / (256.0 - i);
  CHECK(cost::AutoModelEpSeconds(sys, 256, link, m, 32, 4096, false) ==
        doctest::Approx(5e-6 + 4096.0 * 4.0 * (1.0 - miss4) * 14336.0 / 58e9));
  // Inside one node (EP 8): distinct ranks' copies as an all-to-all on the link.
  const double ranks = cost::FlexDispatchCopies(256, 8, 8);
  CHECK(cost::AutoModelEpSeconds(sys, 256, link, m, 8, 4096, false) ==
        doctest::Approx(cost::AllToAllSeconds(4096.0 * ranks * 14336.0, 8, link)));
  CHECK(cost::AutoModelEpSeconds(sys, 256, link, m, 1, 4096, false) == 0.0);
}

}  // namespace meshplan
