// Megatron-Bridge software settings in the step-time and memory model, worked by hand: the flex
// dispatcher's token copies, CUDA graphs, recompute modules, bf16 gradient reduction and
// activation offloading; and the reader of recipes/megatron-bridge-perf.yaml.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "accuracy/measured_cases.hpp"
#include "cost/context.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "cost_fixtures.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "frameworks/megatron_bridge/perf_settings.hpp"

namespace meshplan {
namespace {

constexpr auto npos = std::string::npos;

Layout OneGpu() {
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.strategy = Strategy::kDdp;
  return l;
}

cost::MegatronTerms Terms(const Layout& l) {
  const ModelSpec m = test::TinyLlama();
  const ParamCounts p = CountParams(m);
  const TrainSetup setup = test::Setup(1, 2048, 1);
  const SystemSpec system = test::DgxH100();  // Ctx holds references: no temporaries
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, system, setup, p, c_view);
  return cost::MegatronRankTerms(c, 0, cost::RankMemory(c, 0));
}

MemoryBreakdown Memory(const Layout& l) {
  const ModelSpec m = test::TinyLlama();
  const ParamCounts p = CountParams(m);
  const TrainSetup setup = test::Setup(1, 2048, 1);
  const SystemSpec system = test::DgxH100();
  const CostView c_view = ToCostView(l, m, setup);
  const cost::Ctx c = cost::MakeCtx(m, system, setup, p, c_view);
  return cost::RankMemory(c, 0);
}

std::string LoadError(const std::string& yaml) {
  const std::string path = (std::filesystem::temp_directory_path() / "meshplan_perf_settings_test.yaml").string();
  std::ofstream(path) << yaml;
  try {
    recipe::LoadPerfRecipeSettings(path);
  } catch (const InputError& e) {
    std::remove(path.c_str());
    return e.what();
  }
  std::remove(path.c_str());
  return "";
}

const char* kEntry =
    "  - {release: '26.06', tag: v0.5.0, model: qwen3-30b-a3b, system: dgx-b200, precision: fp8mx, gpus: 8,\n"
    "     tokendrop: false, recipe: x, moe_token_dispatcher_type: flex, moe_flex_dispatcher_backend: hybridep,\n"
    "     overlap_moe_expert_parallel_comm: false, recompute_granularity: none, recompute_modules: [],\n"
    "     recompute_method: none, recompute_num_layers: 0,\n"
    "     cuda_graph_impl: none, cuda_graph_scope: [], grad_reduce_in_fp32: false, cpu_offloading_num_layers: 0,\n"
    "     notes: ''}\n";

// Qwen3-30B-A3B on 8 GPUs of a DGX H100 at seq 2048: EP 8, DDP, the alltoall dispatcher,
// micro-batch 1. Terms(x) prices layout x (held by reference in the Ctx: members, not temporaries).
struct Qwen3Ep8 {
  explicit Qwen3Ep8(int64_t global_batch)
      : m(test::Qwen3_30B_A3B()), p(CountParams(m)), setup(test::Setup(8, 2048, global_batch)),
        system(test::DgxH100()) {
    l.framework = Framework::kMegatronBridge;
    l.strategy = Strategy::kDdp;
    l.ep = 8;
    l.dp = 8;
    l.mb.token_dispatcher = MbDispatcher::kAlltoall;
    SetMegatronMicroBatch(l, 1, setup);
  }
  cost::MegatronTerms Terms(const Layout& x) const {
    const CostView c_view = ToCostView(x, m, setup);
    const cost::Ctx c = cost::MakeCtx(m, system, setup, p, c_view);
    return cost::MegatronRankTerms(c, 0, cost::RankMemory(c, 0));
  }
  ModelSpec m;
  ParamCounts p;
  TrainSetup setup;
  SystemSpec system;
  Layout l;
};

}  // namespace

TEST_CASE("megatron runtime: flex dispatch sends a token once per distinct EP rank") {
  // E 128, k 8, ep 8 (16 experts per rank): 8·(1 − Π_{i<8} (112 − i)/(128 − i)) = 5.339357.
  CHECK(cost::FlexDispatchCopies(128, 8, 8) == doctest::Approx(5.339357).epsilon(1e-6));
  // One expert per rank: every routed expert is its own rank, k copies; ep 1: no dispatch.
  CHECK(cost::FlexDispatchCopies(128, 8, 128) == doctest::Approx(8.0));
  CHECK(cost::FlexDispatchCopies(128, 8, 1) == doctest::Approx(8.0));
  // GPT-OSS-120B on 64 ranks (2 experts each, k 4): 64·(1 − 126·125·124·123/(128·127·126·125)) = 3.952756.
  CHECK(cost::FlexDispatchCopies(128, 4, 64) == doctest::Approx(3.952756).epsilon(1e-6));
}

TEST_CASE("megatron runtime: CUDA graphs weight the replayed kernels") {
  // TinyLlama, 4 dense layers, one micro-batch: 4 x 40 kernels without graphs.
  Layout l = OneGpu();
  CHECK(Terms(l).kernels == doctest::Approx(160.0));
  // Full-iteration graph: every kernel replayed at an eighth: 160 x 0.125 = 20.
  l.mb.cuda_graph = MbCudaGraph::kFullIteration;
  CHECK(Terms(l).kernels == doctest::Approx(20.0));
  // Transformer Engine graphs of the attention block only: 4 x (40 − 0.875 x 20) = 90.
  l.mb.cuda_graph = MbCudaGraph::kTransformerEngine;
  l.mb.cuda_graph_scope = kGraphAttn;
  CHECK(Terms(l).kernels == doctest::Approx(90.0));
  // An empty scope captures the whole layer: 20 again.
  l.mb.cuda_graph_scope = 0;
  CHECK(Terms(l).kernels == doctest::Approx(20.0));
}

TEST_CASE("megatron runtime: the graphed-kernel share is the median measured graph to eager ratio") {
  std::ifstream in(test::kMeasuredDir + "h200_launch.jsonl");
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);  // environment
  std::vector<double> eager, ratios;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("mode") == "eager") {
      eager.push_back(j.at("seconds_per_kernel").get<double>());
    } else {
      REQUIRE(!eager.empty());
      ratios.push_back(j.at("seconds_per_kernel").get<double>() / eager.back());
    }
  }
  REQUIRE(ratios.size() == 3);
  std::sort(ratios.begin(), ratios.end());
  CHECK(cost::kGraphedKernelShare == doctest::Approx(ratios[1]).epsilon(0.01));
}

TEST_CASE("megatron runtime: the head-dim-64 attention factor is the measured ratio to head dim 128") {
  // Same 64 heads and token counts, forward + backward TFLOP/s (tools/measure/kernels.py).
  std::ifstream in(test::kMeasuredDir + "h200_kernels.jsonl");
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);
  std::vector<std::pair<int64_t, double>> d128, d64;  // (seq, TFLOP/s)
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("kind") != "attention" || j.at("pass") != "forward+backward" || j.at("heads") != 64) continue;
    (j.at("head_dim") == 64 ? d64 : d128).emplace_back(j.at("seq").get<int64_t>(), j.at("tflops").get<double>());
  }
  REQUIRE(d64.size() == 2);
  REQUIRE(d128.size() == 2);
  double sum = 0;
  for (const auto& [seq, tf] : d64) {
    for (const auto& [seq128, tf128] : d128) sum += seq == seq128 ? tf / tf128 : 0.0;
  }
  CHECK(cost::AttentionHeadDimFactor(64) == doctest::Approx(sum / 2).epsilon(0.01));
  CHECK(cost::AttentionHeadDimFactor(128) == 1.0);
  CHECK(cost::AttentionHeadDimFactor(192) == 1.0);
  CHECK(cost::AttentionHeadDimFactor(96) == doctest::Approx((cost::AttentionHeadDimFactor(64) + 1.0) / 2));
}

TEST_CASE("megatron runtime: recompute modules add their forward pass") {
  const cost::MegatronTerms none = Terms(OneGpu());
  Layout l = OneGpu();
  l.recompute = Recompute::kSelective;
  // Megatron-Core's default module set is the attention core: a third of the attention time
  // more (2.47449e-4 s without recompute, megatron time test), no GEMM or HBM change.
  const cost::MegatronTerms core = Terms(l);
  CHECK(core.attention == test::Rel(none.attention * 4.0 / 3.0).epsilon(1e-9));
  CHECK(core.gemm == test::Rel(none.gemm).epsilon(1e-12));
  // mlp + layernorm: the dense MLP forward, 2048 tokens x 4 layers x 75,497,472 / 3 FLOP =
  // 2.0615843e11 at the linear rate (1.149977e12 FLOP in 1.66598e-3 s, time_megatron_test:
  // 6.90270e14 FLOP/s) = 2.98664e-4 s; the two norms re-read and re-write 4h = 4096 elements x 2 bytes x 2048
  // tokens x 4 layers = 67,108,864 bytes at 3.35e12 B/s = 2.00325e-5 s. No attention recompute.
  l.mb.recompute_modules = kRecomputeMlp | kRecomputeLayernorm;
  const cost::MegatronTerms mlp = Terms(l);
  CHECK(mlp.gemm - none.gemm == test::Rel(2.98664e-4).epsilon(1e-4));
  CHECK(mlp.memory_bound - none.memory_bound == test::Rel(2.00325e-5).epsilon(1e-4));
  CHECK(mlp.attention == test::Rel(none.attention).epsilon(1e-12));
}

TEST_CASE("megatron runtime: moe recompute repeats the MoE forward and its dispatch") {
  // Qwen3-30B-A3B, 8 GPUs, EP 8 (alltoall, no overlap), seq 2048, global batch 8, mbs 1:
  // recompute_modules [moe] runs each MoE layer's routed and shared experts forward again
  // (routed at the expert rate: a third of their forward-and-backward GEMM time) and its
  // dispatch and combine again: the EP time is 6/4 of the one without.
  Qwen3Ep8 q(8);
  Layout l = q.l;
  const cost::MegatronTerms none = q.Terms(l);
  l.recompute = Recompute::kSelective;
  l.mb.recompute_modules = kRecomputeMoe;
  const cost::MegatronTerms moe = q.Terms(l);
  REQUIRE(none.ep > 0);
  CHECK(moe.ep == test::Rel(1.5 * none.ep).epsilon(1e-12));
  CHECK(moe.gemm > none.gemm);
  CHECK(moe.attention == test::Rel(none.attention).epsilon(1e-12));  // no core_attn in the set
}

TEST_CASE("megatron runtime: hidden EP all-to-all costs the measured contention") {
  // Qwen3-30B-A3B, 8 GPUs of a DGX H100, EP 8, no PP: with overlap_moe_expert_parallel_comm
  // the first forward and last backward chunk are unpaired (MegatronEpUnpairedShare), the rest
  // hides behind compute and slows it by HiddenCommCost per hidden second.
  const Qwen3Ep8 q(64);
  Layout l = q.l;
  const cost::MegatronTerms plain = q.Terms(l);
  l.mb.ep_a2a_overlap = Tri::kTrue;
  const cost::MegatronTerms over = q.Terms(l);
  const CostView c1_view = ToCostView(l, q.m, q.setup);
  const cost::Ctx c1 = cost::MakeCtx(q.m, q.system, q.setup, q.p, c1_view);
  const double comm = plain.ep;  // exposed in full without overlap
  const double compute0 = over.gemm + over.attention + over.memory_bound;
  const double unpaired = cost::MegatronEpUnpairedShare(1, 1, c1.mb_per_step);
  const cost::Link link = cost::A2aLink(q.system, c1.links, cost::Group{8, 1});
  // NVLink inside the node: busbw above the measured reference, so the full kappa applies.
  REQUIRE(link.busbw_bytes_per_s > cost::kHiddenCommRefBusbw);
  CHECK(cost::HiddenCommCost(1.0, link) == doctest::Approx(cost::kHiddenCommKappa));
  const double expect = unpaired * comm + (1.0 - unpaired) * (std::max(0.0, comm - compute0) +
                                                              cost::kHiddenCommKappa * std::min(comm, compute0));
  REQUIRE(comm > 0);
  CHECK(over.ep == test::Rel(expect).epsilon(1e-12));
  CHECK(over.ep < comm);
  // A link at half the reference busbw costs half (the cost follows the bytes moved).
  CHECK(cost::HiddenCommCost(2.0, cost::Link{cost::kHiddenCommRefBusbw / 2, 0}) ==
        doctest::Approx(cost::kHiddenCommKappa));
  CHECK(cost::HiddenCommCost(-1.0, link) == 0.0);
}

TEST_CASE("megatron runtime: the hidden-communication constants are the measured contention") {
  // tools/measure/overlap.py on 2 H200: kappa = s_comm (1 - 1/s_compute) per 512 MiB point;
  // busbw = bytes / comm_alone_s x (n-1)/n.
  auto read = [](const std::string& name) {
    std::ifstream in(test::kMeasuredDir + name);
    REQUIRE(in.good());
    std::string line;
    std::getline(in, line);  // environment
    std::vector<double> kappa, busbw;
    while (std::getline(in, line)) {
      const nlohmann::json j = nlohmann::json::parse(line);
      const double bytes = j.at("bytes").get<double>();
      if (bytes < 512.0 * (1 << 20) - 4) continue;
      const double n = j.at("n").get<double>();
      kappa.push_back(j.at("s_comm").get<double>() * (1.0 - 1.0 / j.at("s_compute").get<double>()));
      busbw.push_back(bytes / j.at("comm_alone_s").get<double>() * (n - 1.0) / n);
    }
    REQUIRE(kappa.size() == 9);
    std::sort(kappa.begin(), kappa.end());
    std::sort(busbw.begin(), busbw.end());
    return std::pair<double, double>{kappa[4], busbw[4]};
  };
  const auto [k_full, bw_full] = read("h200_overlap.jsonl");
  CHECK(cost::kHiddenCommKappa == doctest::Approx(k_full).epsilon(0.01));
  CHECK(cost::kHiddenCommRefBusbw == doctest::Approx(bw_full).epsilon(0.03));
  // Fewer NCCL channels: less bandwidth and less contention, roughly in proportion (the model's
  // per-byte scaling predicts within 40% of the measured medians, and lower, not higher).
  for (const char* name : {"h200_overlap_ch8.jsonl", "h200_overlap_ch2.jsonl"}) {
    const auto [k, bw] = read(name);
    INFO(name);
    CHECK(k < k_full);
    const double predicted = cost::HiddenCommCost(1.0, cost::Link{bw, 0});
    CHECK(predicted == doctest::Approx(k).epsilon(0.40));
  }
}

TEST_CASE("megatron runtime: block full recompute repeats only its layers") {
  // Full recompute, uniform: every layer's forward again, kernels 160 x 4/3. Block with one
  // layer of TinyLlama's four on the single stage: a quarter of that, 160 x (1 + 1/12).
  Layout l = OneGpu();
  l.recompute = Recompute::kFull;
  l.mb.recompute_method = MbRecomputeMethod::kUniform;
  l.mb.recompute_num_layers = 1;
  CHECK(Terms(l).kernels == doctest::Approx(160.0 * 4.0 / 3.0));
  l.mb.recompute_method = MbRecomputeMethod::kBlock;
  CHECK(Terms(l).kernels == doctest::Approx(160.0 * 13.0 / 12.0));
}

TEST_CASE("megatron runtime: bf16 gradient reduction halves the gradient buffer and offloading the activations") {
  Layout l = OneGpu();
  l.use_distributed_optimizer = true;
  const MemoryBreakdown fp32 = Memory(l);
  l.mb.grad_reduce_in_fp32 = false;
  const MemoryBreakdown bf16 = Memory(l);
  CHECK(bf16.gradients == test::Rel(fp32.gradients / 2.0).epsilon(1e-12));
  CHECK(bf16.weights == test::Rel(fp32.weights).epsilon(1e-12));
  // 1 of TinyLlama's 4 layers offloaded: three quarters of the activations stay.
  l.mb.cpu_offloading = true;
  l.mb.cpu_offloading_num_layers = 1;
  CHECK(Memory(l).activations == test::Rel(0.75 * bf16.activations).epsilon(1e-12));
}

TEST_CASE("megatron runtime: the embedded published-recipe settings cover every row key once") {
  const recipe::PerfRecipeTable t = recipe::LoadPerfRecipeSettings("");
  CHECK(t.file == "recipes/megatron-bridge-perf.yaml");
  // 160 hand-read (every Pre-Training key of mbridge_perf_dev.csv) + 940 generated by
  // tools/mbridge-perf-settings for the perf configs' other (release, model, system, precision, gpus).
  CHECK(t.recipes.size() == 1100);
  // 25.11 DeepSeek-V3 with MTP on 256 B200 (v0.2.0 DEEPSEEK_V3_B200_BASE_CONFIG): the provider's
  // alltoall dispatcher, no CUDA graphs, selective recompute of mla_up_proj.
  const recipe::PerfRecipeSettings* ds = t.Find("25.11", "deepseek-v3", "dgx-b200", "fp8mx", 256, false);
  REQUIRE(ds != nullptr);
  CHECK(ds->runtime.dispatcher == MbDispatcher::kAlltoall);
  CHECK(ds->runtime.cuda_graph == MbCudaGraph::kNone);
  CHECK(ds->recompute == Recompute::kSelective);
  // Its canonical recipe's precision-aware optimizer (recipes/deepseek/deepseek_v3.py at v0.2.0,
  // lines 272-276): fp32 master weights kept as bf16 remainders (2) + bf16 exp_avg (2) + bf16 exp_avg_sq (2).
  CHECK(ds->optimizer_state_bytes == 6.0);
  // 26.06 GPT-OSS-120B on 64 GB200, MXFP8: HybridEP, full-iteration CUDA graph, EP overlap
  // (perf_recipes at v0.5.0).
  const recipe::PerfRecipeSettings* e = t.Find("26.06", "gpt-oss-120b", "gb200-nvl72", "fp8mx", 64, false);
  REQUIRE(e != nullptr);
  CHECK(e->runtime.dispatcher == MbDispatcher::kFlex);
  CHECK(e->runtime.cuda_graph == MbCudaGraph::kFullIteration);
  CHECK_FALSE(e->runtime.grad_reduce_in_fp32);
  CHECK(t.Find("26.06", "gpt-oss-120b", "gb200-nvl72", "fp8mx", 72, false) == nullptr);
  CHECK(recipe::PerfPrecisionKey("FP8-CS (FP8-MX)") == "fp8cs");
  CHECK(recipe::PerfPrecisionKey("MXFP8") == "fp8mx");
  CHECK(recipe::PerfPrecisionKey("FP8-MX") == "fp8mx");
  CHECK(recipe::PerfPrecisionKey("NVFP4") == "nvfp4");
  CHECK(recipe::PerfPrecisionKey("") == "bf16");
}

TEST_CASE("megatron runtime: bad recipe settings name the line and field and say what was expected and found") {
  const std::string head = "source: test\nrecipes:\n";
  CHECK(LoadError(head + kEntry) == "");
  std::string bad = kEntry;
  bad.replace(bad.find("flex,"), 5, "a2a, ");
  const std::string dispatcher = LoadError(head + bad);
  CHECK(dispatcher.find(":4:") != npos);  // the entry's second line
  CHECK(dispatcher.find("moe_token_dispatcher_type") != npos);
  CHECK(dispatcher.find("expected alltoall, flex, allgather or none; found 'a2a'") != npos);
  bad = kEntry;
  bad.replace(bad.find("cuda_graph_scope: []"), 20, "cuda_graph_scope: [atn]");
  CHECK(LoadError(head + bad).find("found 'atn'") != npos);
  const std::string twice = LoadError(head + kEntry + kEntry);
  CHECK(twice.find("duplicates the entry at line 3") != npos);
  bad = kEntry;
  bad.replace(bad.find("tokendrop"), 9, "tokendorp");
  CHECK(LoadError(head + bad).find("recipes[0].tokendrop: missing; expected true or false") != npos);
  // The optional keys: an offload module Megatron-Core does not know is refused with the known ones.
  bad = kEntry;
  bad.replace(bad.find("tokendrop: false"), 16, "tokendrop: false, offload_modules: [fused_grouped_mlp]");
  const std::string offload = LoadError(head + bad);
  CHECK(offload.find("recipes[0].offload_modules") != npos);
  CHECK(offload.find("found 'fused_grouped_mlp'") != npos);
  CHECK(offload.find("fused_group_mlp") != npos);
  bad = kEntry;
  bad.replace(bad.find("tokendrop: false"), 16, "tokendrop: false, num_distributed_optimizer_instances: 0");
  CHECK(LoadError(head + bad).find("num_distributed_optimizer_instances") != npos);
}

// The Nemotron 3 and DeepSeek-V4 entries (read by hand at v0.3.1 .. v0.6.0) carry the keys
// the older ones do not need: Megatron FSDP, HSDP instances, fine-grained offloading, the
// precision-aware optimizer's bytes.
TEST_CASE("megatron runtime: the Nemotron 3 Ultra and DeepSeek-V4 Flash entries read their optional keys") {
  const recipe::PerfRecipeTable t = recipe::LoadPerfRecipeSettings("");
  // perf_recipes/nemotronh/gb300/nemotronh.py (v0.6.0) + common.py _apply_nemotron_3_ultra_fsdp_hsdp:
  // use_megatron_fsdp, num_distributed_optimizer_instances 256 // 64, offload [fused_group_mlp],
  // selective [moe_act], no CUDA graphs, HybridEP.
  const recipe::PerfRecipeSettings* u = t.Find("26.08", "nemotron-3-ultra", "gb300-nvl72", "fp8mx", 256, false);
  REQUIRE(u != nullptr);
  CHECK(u->use_megatron_fsdp);
  CHECK(u->num_distributed_optimizer_instances == 4);
  CHECK(u->offload_modules == std::vector<std::string>{"fused_group_mlp"});
  CHECK(u->recompute == Recompute::kSelective);
  CHECK(u->recompute_modules == kRecomputeMoeAct);
  CHECK(u->runtime.cuda_graph == MbCudaGraph::kNone);
  CHECK(u->runtime.dispatcher == MbDispatcher::kFlex);
  CHECK(u->optimizer_state_bytes == 12.0);
  // Nemotron 3 Super on 64 B200, NVFP4, 26.04 (v0.4.0 B200_NVFP4_V1): recompute_modules None
  // replaces the B200 base's [moe_act, layernorm]: no recompute; TE graphs with the Mamba scope.
  const recipe::PerfRecipeSettings* s = t.Find("26.04", "nemotron-3-super", "dgx-b200", "nvfp4", 64, false);
  REQUIRE(s != nullptr);
  CHECK(s->recompute == Recompute::kNone);
  CHECK(s->runtime.cuda_graph == MbCudaGraph::kTransformerEngine);
  CHECK(s->runtime.cuda_graph_scope == (kGraphAttn | kGraphMamba | kGraphMoeRouter | kGraphMoePreprocess));
  CHECK_FALSE(s->use_megatron_fsdp);
  CHECK(s->num_distributed_optimizer_instances == 1);
  CHECK(s->offload_modules.empty());
  // DeepSeek-V4 Flash on 128 GB200: precision-aware optimizer, fp32 master kept as bf16
  // remainders + bf16 moments = OptimizerStateBytes(true, true, 4, 2, 2) = 6; full-iteration graph.
  const recipe::PerfRecipeSettings* v = t.Find("26.08", "deepseek-v4-flash", "gb200-nvl72", "fp8mx", 128, false);
  REQUIRE(v != nullptr);
  CHECK(v->optimizer_state_bytes == recipe::OptimizerStateBytes(true, true, 4.0, 2.0, 2.0));
  CHECK(v->optimizer_state_bytes == 6.0);
  CHECK(v->runtime.cuda_graph == MbCudaGraph::kFullIteration);
  CHECK(v->recompute_modules == kRecomputeMlaUpProj);
}

}  // namespace meshplan

namespace meshplan {

TEST_CASE("megatron runtime: a Megatron-Bridge recipe's recompute modules and CUDA graphs are read") {
  const std::string text =
      "model:\n  tensor_model_parallel_size: 1\n  pipeline_model_parallel_size: 1\n"
      "  recompute_granularity: selective\n  recompute_modules: [mla_up_proj, moe_act, moe]\n"
      "  cuda_graph_impl: transformer_engine\n  cuda_graph_scope: [attn, moe_router]\n"
      "  cpu_offloading: true\n  cpu_offloading_num_layers: 4\n";
  const ParsedRecipe r = ParseMegatronRecipe(text, "r.yaml", 8);
  CHECK(r.layout.recompute == Recompute::kSelective);
  CHECK(r.layout.mb.recompute_modules == (kRecomputeMlaUpProj | kRecomputeMoeAct | kRecomputeMoe));
  CHECK(r.layout.mb.cuda_graph == MbCudaGraph::kTransformerEngine);
  CHECK(r.layout.mb.cuda_graph_scope == (kGraphAttn | kGraphMoeRouter));
  CHECK(r.layout.mb.cpu_offloading_num_layers == 4);
  std::string bad = text;
  bad.replace(bad.find("moe_router"), 10, "moe_routr");
  try {
    ParseMegatronRecipe(bad, "r.yaml", 8);
    FAIL("a misspelt scope was accepted");
  } catch (const InputError& e) {
    const std::string m = e.what();
    CHECK(m.find("r.yaml:7") != std::string::npos);
    CHECK(m.find("model.cuda_graph_scope") != std::string::npos);
    CHECK(m.find("found 'moe_routr'") != std::string::npos);
  }
}

TEST_CASE("megatron runtime: CUDA graph settings as Megatron-Core spells them") {
  auto read = [](const std::string& impl, const std::string& scope) {
    return ParseMegatronRecipe("model:\n  cuda_graph_impl: " + impl + "\n  cuda_graph_scope: " + scope + "\n", "g.yaml", 8)
        .layout.mb;
  };
  // local with scope full_iteration: one graph of the whole iteration.
  CHECK(read("local", "[full_iteration]").cuda_graph == MbCudaGraph::kFullIteration);
  // local alone: whole-layer graphs (no module scope).
  const MbSettings layers = read("local", "[]");
  CHECK(layers.cuda_graph == MbCudaGraph::kTransformerEngine);
  CHECK(layers.cuda_graph_scope == 0u);
  // "moe" is a Transformer Engine scope (the whole MoE block).
  const MbSettings moe = read("transformer_engine", "[attn, moe]");
  CHECK(moe.cuda_graph == MbCudaGraph::kTransformerEngine);
  CHECK(moe.cuda_graph_scope == (kGraphAttn | kGraphMoe));
  // Megatron-Core main's own spelling: cuda_graph_impl full_iteration with no modules.
  CHECK(read("full_iteration", "[]").cuda_graph == MbCudaGraph::kFullIteration);
  // Refused: full_iteration with a module scope, and full_iteration scope with Transformer
  // Engine graphs.
  for (const auto& [impl, scope, expected] :
       {std::tuple<std::string, std::string, std::string>{"full_iteration", "[attn]", "expected an empty list"},
        {"transformer_engine", "[full_iteration]", "expected cuda_graph_impl: local with cuda_graph_scope full_iteration"}}) {
    CAPTURE(impl);
    try {
      read(impl, scope);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(expected) != std::string::npos);
    }
  }
  // Priced: the "moe" scope graphs every kernel of the MoE block, more than its router and
  // preprocessing parts.
  const ModelSpec m = test::Qwen3_30B_A3B();
  const TrainSetup setup = test::Setup(8, 4096, 8);
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.dp = l.ep = 8;  // EP 8 over DP 8, distributed optimizer
  l.use_distributed_optimizer = true;
  SetMegatronMicroBatch(l, 1, setup);
  l.mb.cuda_graph = MbCudaGraph::kTransformerEngine;
  l.mb.cuda_graph_scope = kGraphAttn | kGraphMoeRouter | kGraphMoePreprocess;
  const ParamCounts p = CountParams(m);
  const SystemSpec sys = test::DgxH100();  // the Ctx holds references: keep it alive
  auto kernels = [&](const Layout& x) {
    const CostView c_view = ToCostView(x, m, setup);
    const cost::Ctx c = cost::MakeCtx(m, sys, setup, p, c_view);
    return cost::MegatronRankTerms(c, 0, cost::RankMemory(c, 0)).kernels;
  };
  const double parts = kernels(l);
  l.mb.cuda_graph_scope = kGraphAttn | kGraphMoe;
  const double block = kernels(l);
  // 48 MoE layers x (70 + 16 experts x 6 - 20) kernels more replayed, each at 1 - 0.125 less.
  CHECK(parts - block == doctest::Approx(48.0 * (70.0 + 96.0 - 20.0) * (1.0 - cost::kGraphedKernelShare)));
}

TEST_CASE("megatron runtime: the eager-op slowdown is the measured ratio to the median elementwise kernel") {
  // tools/measure/unfused.py: the eager RoPE on GPT-OSS q (64 heads x 64, 4 x 4096 tokens),
  // forward + backward, against its 12 + 13 counted passes at the 4.8 TB/s HBM peak of H200;
  // tools/measure/kernels.py: the elementwise kernels' bytes at the same peak, median.
  const double peak = 4.8e12;
  std::string line;
  std::ifstream unfused(test::kMeasuredDir + "h200_unfused.jsonl");
  REQUIRE(unfused.good());
  std::getline(unfused, line);  // environment
  double rope = 0, bda_unfused = 0, bda_floor = 0, dropout = -1;
  while (std::getline(unfused, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("batch") != 4) continue;
    const double ideal_pass = j.at("elements").get<double>() * 2.0 / peak;
    const double passes = j.at("seconds").get<double>() / ideal_pass;
    const bool fwd = j.at("pass") == "forward";
    if (j.at("kind") == "rope_unfused" && j.at("tensor") == "q" && !fwd) rope = passes / 25.0;
    if (j.at("kind") == "bda_unfused" && fwd) bda_unfused = passes;
    if (j.at("kind") == "bda_fused_floor" && fwd) bda_floor = passes;
    if (j.at("kind") == "dropout_p0") dropout = passes;
  }
  std::ifstream kernels(test::kMeasuredDir + "h200_kernels.jsonl");
  REQUIRE(kernels.good());
  std::getline(kernels, line);
  std::vector<double> slowdowns;
  while (std::getline(kernels, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("kind") == "elementwise") slowdowns.push_back(peak / (j.at("gbps").get<double>() * 1e9));
  }
  REQUIRE(slowdowns.size() == 20);
  std::sort(slowdowns.begin(), slowdowns.end());
  const double median = 0.5 * (slowdowns[9] + slowdowns[10]);
  CHECK(median == doctest::Approx(1.48).epsilon(0.01));
  CHECK(rope == doctest::Approx(2.65).epsilon(0.01));
  CHECK(cost::kEagerOpSlowdown == doctest::Approx(rope / median).epsilon(0.01));
  // The unfused bias-dropout-add: dropout at p = 0 moves no data (under a fifth of a pass), and
  // the bias add's 2 counted passes run at 2.01x the median, within 15% of the constant.
  CHECK(dropout >= 0.0);
  CHECK(dropout < 0.2);
  const double bias_add = (bda_unfused - bda_floor) / 2.0 / median;
  CHECK(bias_add == doctest::Approx(2.01).epsilon(0.01));
  CHECK(bias_add == doctest::Approx(cost::kEagerOpSlowdown).epsilon(0.15));
}

TEST_CASE("megatron runtime: the attention length constants are the measured cuDNN rates") {
  // tools/measure/attn_len.py: cuDNN attention, forward + backward TFLOP/s at 32768 tokens per
  // call. K from two points, rate1/rate2 = r = [L1/(L1+K)]/[L2/(L2+K)]:
  // K = L1·L2·(1 − r)/(r·L2 − L1).
  std::ifstream in(test::kMeasuredDir + "h200_attn_len.jsonl");
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);
  std::map<std::pair<bool, int64_t>, double> tf;  // (causal, length) -> TFLOP/s
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("backend") == "cudnn") tf[{j.at("causal").get<bool>(), j.at("length").get<int64_t>()}] = j.at("tflops");
  }
  REQUIRE(tf.size() == 14);
  auto two_point = [](double l1, double y1, double l2, double y2) {
    const double r = y1 / y2;
    return l1 * l2 * (1.0 - r) / (r * l2 - l1);
  };
  CHECK(cost::kAttnCausalK == doctest::Approx(two_point(1024, tf[{true, 1024}], 16384, tf[{true, 16384}])).epsilon(0.01));
  CHECK(cost::kAttnFullK == doctest::Approx(two_point(1024, tf[{false, 1024}], 8192, tf[{false, 8192}])).epsilon(0.01));
  // Every point from 512 tokens within 10% of L/(L+K) scaled through the 8192-token point.
  for (const auto& [key, rate] : tf) {
    const auto [causal, length] = key;
    if (length < 512) continue;
    const double k = causal ? cost::kAttnCausalK : cost::kAttnFullK;
    const double model = tf[{causal, 8192}] * (double(length) / (double(length) + k)) / (8192.0 / (8192.0 + k));
    CHECK(rate == doctest::Approx(model).epsilon(0.10));
  }
}

}  // namespace meshplan

namespace meshplan {
namespace {

// Qwen3-30B-A3B (h 2048, 128 experts, top-8) on the DgxH100 fixture (NVLink 450 GB/s,
// 5 us; one 50 GB/s NIC per GPU, 10 us; ring efficiencies 0.8 / 0.9), 16 GPUs.
Layout Qwen30bEp(int64_t ep, MbDispatcher d, MbFlexBackend b) {
  Layout l = OneGpu();
  l.dp = 16;
  l.ep = ep;
  l.mb.token_dispatcher = d;
  l.mb.flex_backend = b;
  return l;
}

// EpAllToAllSeconds (or, with `terms`, the rank's MegatronTerms) of Qwen30bEp's layout `l`.
struct Qwen30b {
  ModelSpec m = LoadModel("qwen3-30b-a3b");
  ParamCounts p = CountParams(m);
  TrainSetup setup = test::Setup(16, 4096, 1024);
  SystemSpec system = test::DgxH100();
  cost::EpA2aSeconds A2a(const Layout& l, double tokens) const {
    const CostView v = ToCostView(l, m, setup);
    return cost::EpAllToAllSeconds(cost::MakeCtx(m, system, setup, p, v), tokens);
  }
  cost::MegatronTerms Terms(const Layout& l) const {
    const CostView v = ToCostView(l, m, setup);
    const cost::Ctx c = cost::MakeCtx(m, system, setup, p, v);
    return cost::MegatronRankTerms(c, 0, cost::RankMemory(c, 0));
  }
};

cost::EpA2aSeconds EpSeconds(int64_t ep, MbDispatcher d, MbFlexBackend b, double tokens) {
  return Qwen30b().A2a(Qwen30bEp(ep, d, b), tokens);
}

}  // namespace

TEST_CASE("megatron runtime: HybridEP across two nodes sends a token once per node over RDMA") {
  // EP 16 over 2 nodes, 4096 tokens. Distinct ranks 16·(1 − Π(120 − i)/(128 − i)) = 6.5965,
  // distinct nodes 2·(1 − Π(64 − i)/(128 − i)) = 1.9938 (own node included, as the benchmark counts).
  // Dispatch: RDMA 4096·1.9938·2048·2 B / (50 GB/s · 54.47/50) = 614.1 us; NVLink forward
  // 4096·6.5965·4096 B / (450 GB/s · 472.84/900) = 468.1 us; the slower + 10 us = 624.1 us.
  // Combine: RDMA at 53.35 GB/s 627.0 us (+ 10 us).
  const cost::EpA2aSeconds a = EpSeconds(16, MbDispatcher::kFlex, MbFlexBackend::kHybridEP, 4096);
  CHECK(a.domains == 2);
  CHECK(a.node_copies == doctest::Approx(1.993808).epsilon(1e-5));
  CHECK(a.dispatch == doctest::Approx(624.11e-6).epsilon(1e-4));
  CHECK(a.combine == doctest::Approx(637.00e-6).epsilon(1e-4));
  CHECK(a.rdma == doctest::Approx(1241.11e-6).epsilon(1e-4));
  CHECK(a.nvlink == doctest::Approx(934.61e-6).epsilon(1e-4));
}

TEST_CASE("megatron runtime: DeepEP inside a node runs at its measured NVLink share") {
  // EP 8: 4096·5.339357·4096 B at 450 GB/s · 153/200 (dispatch) = 260.2 us + 5 us, 158/200
  // (combine) 252.0 us + 5 us; no RDMA.
  const cost::EpA2aSeconds a = EpSeconds(8, MbDispatcher::kFlex, MbFlexBackend::kDeepEP, 4096);
  CHECK(a.domains == 1);
  CHECK(a.dispatch == doctest::Approx(265.22e-6).epsilon(1e-4));
  CHECK(a.combine == doctest::Approx(256.98e-6).epsilon(1e-4));
  CHECK(a.rdma == 0.0);
}

TEST_CASE("megatron runtime: alltoall over two nodes splits its bytes by link") {
  // S = 4096·8·4096 B per rank; 7 of 16 peers on NVLink, 8 on the NIC, dispatch + combine:
  // NVLink 2·S·7/16 / (450 GB/s · 0.8) = 326.2 us, NICs 2·S·8/16 / (50 GB/s · 0.9) = 2982.6 us.
  const cost::EpA2aSeconds a = EpSeconds(16, MbDispatcher::kAlltoall, MbFlexBackend::kNone, 4096);
  CHECK(a.domains == 2);
  CHECK(a.nvlink == doctest::Approx(326.22e-6).epsilon(1e-4));
  CHECK(a.rdma == doctest::Approx(2982.62e-6).epsilon(1e-4));
  CHECK(a.dispatch == a.combine);
}

TEST_CASE("megatron runtime: the flex backends' published bandwidths by EP size") {
  // DeepEP docs/legacy.md: 43 / 58 / 51 GB/s dispatch at EP 16 / 32 / 64 of a 50 GB/s NIC.
  CHECK(cost::DeepEpRdmaShare(16, false) == doctest::Approx(0.86));
  CHECK(cost::DeepEpRdmaShare(24, false) == doctest::Approx(0.86));  // largest measured size at most 24
  CHECK(cost::DeepEpRdmaShare(32, true) == doctest::Approx(1.14));
  CHECK(cost::DeepEpRdmaShare(256, false) == doctest::Approx(1.02));
  // HybridEP README: H100 64 ranks combine 46.57 GB/s; GB200 32 ranks dispatch 485.50 of 900.
  CHECK(cost::HybridEpRdmaShare(64, true) == doctest::Approx(46.57 / 50.0));
  CHECK(cost::HybridEpNvlinkShare(32, false) == doctest::Approx(485.50 / 900.0));
  CHECK(cost::HybridEpNvlinkShare(4, true) == doctest::Approx(530.86 / 900.0));  // below 8: EP 8's
}

TEST_CASE("megatron runtime: the EP term reports what overlap hides") {
  const Qwen30b q;
  Layout l = Qwen30bEp(16, MbDispatcher::kAlltoall, MbFlexBackend::kNone);
  auto terms = [&](bool overlap) {
    l.mb.ep_a2a_overlap = overlap ? Tri::kTrue : Tri::kFalse;
    return q.Terms(l);
  };
  const cost::MegatronTerms off = terms(false), on = terms(true);
  // Without overlap everything is exposed: 48 layers x 64 micro-batches x 4 all-to-alls.
  CHECK(off.ep_busy == doctest::Approx(4.0 * 48.0 * 64.0 * EpSeconds(16, MbDispatcher::kAlltoall, MbFlexBackend::kNone, 4096).dispatch));
  CHECK(off.ep == doctest::Approx(off.ep_busy));
  CHECK(on.ep_busy == doctest::Approx(off.ep_busy));
  CHECK(on.ep < on.ep_busy);
  // NIC busy seconds over the step: a forward and a backward pass (dispatch + combine each)
  // per layer per micro-batch, 2·48·64 of the per-pass split above.
  CHECK(off.ep_rdma == doctest::Approx(2.0 * 48.0 * 64.0 * 2982.62e-6).epsilon(1e-3));
}

}  // namespace meshplan

namespace meshplan {
namespace {

TEST_CASE("megatron runtime: a dropless MoE segment is host-bound where its host phases outlast the GPU's") {
  // max(0, H_A − G_A, H_A + H_B − G_A − G_B), hand-computed.
  CHECK(cost::MegatronSegmentHostBound(2.0, 1.0, 1.0, 3.0) == doctest::Approx(1.0));  // experts host-bound, attention hides nothing of it
  CHECK(cost::MegatronSegmentHostBound(1.0, 1.0, 2.0, 0.5) == doctest::Approx(0.0));  // the GPU is slower in both
  CHECK(cost::MegatronSegmentHostBound(1.0, 2.0, 1.0, 1.0) == doctest::Approx(1.0));  // the whole segment is host-bound
  // 10 segments of (H 2 + 1, G 1 + 3 at factor 1): 10 x 1; the other 10 s of host time race the
  // other 10 s of GPU time (50 − 10 x 4): nothing more.
  const cost::MegatronHostSync y{.segments = 10, .host_a = 2.0, .host_b = 1.0, .gemm_a = 1.0, .gemm_b = 3.0};
  MegatronTimeFit fit;
  fit.gemm_bf16 = fit.gemm_fp8 = fit.gemm_fp4 = 1.0;
  CHECK(cost::MegatronHostBound(40.0, 0.0, 50.0, y, fit, Precision::kBf16) == doctest::Approx(10.0));
  // Without segments it is the host time the GPU's does not cover.
  CHECK(cost::MegatronHostBound(40.0, 0.0, 30.0, cost::MegatronHostSync{}, fit, Precision::kBf16) == doctest::Approx(10.0));
}

TEST_CASE("megatron runtime: the dropless dispatcher syncs the host once per MoE layer forward") {
  const Qwen3Ep8 q(64);  // 8 micro-batches of one sequence per rank
  Layout l = q.l;
  const cost::MegatronTerms t = q.Terms(l);
  // 48 MoE layers x 8 micro-batches.
  CHECK(t.sync.segments == doctest::Approx(48.0 * 8.0));
  // 16 local experts, no graphs: 90 + 16 x 6 = 186 host kernels per layer, 20 + 10 + 10 of them
  // before the sync; a third of each in the forward at 36 us: 146 x 12 us and 40 x 12 us.
  CHECK(t.sync.host_a == doctest::Approx(146.0 * 12.0e-6));
  CHECK(t.sync.host_b == doctest::Approx(40.0 * 12.0e-6));
  // Graphs of the router and preprocessing leave the attention block's 20 kernels before the sync.
  l.mb.cuda_graph = MbCudaGraph::kTransformerEngine;
  l.mb.cuda_graph_scope = kGraphMoeRouter | kGraphMoePreprocess;
  CHECK(q.Terms(l).sync.host_b == doctest::Approx(20.0 * 12.0e-6));
  // Token drop with padding (apply_moe_token_drop) needs no counts on the host; a
  // whole-iteration graph issues nothing from the host.
  l = q.l;
  l.mb.moe_pad_to_capacity = true;
  CHECK(q.Terms(l).sync.segments == 0.0);
  l = q.l;
  l.mb.cuda_graph = MbCudaGraph::kFullIteration;
  CHECK(q.Terms(l).sync.segments == 0.0);
}

}  // namespace
}  // namespace meshplan
