// Rule::applies: a row that names the models it concerns passes every layout of any other
// model, so the search may leave it out (RulesApplyingAtStage) without changing a verdict or a
// rejection count. Rule::reads_recompute: a features row marked as reading no recompute or
// CUDA-graph field gives one verdict for all the recompute variants of a layout, so the search
// tests it on a mesh's first feature set only. Rule::part_axes_only: a mesh row marked as reading
// only tp, cp, pp and dp gives one verdict for every mesh of a walk part.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixtures/models.hpp"
#include "meshplan/model.hpp"
#include "meshplan/rules.hpp"

using namespace meshplan;

namespace {

// Layouts of `framework` over a grid of the fields the model-gated rows read (axis sizes,
// VPP, the layer split, SP, the EP overlap, CP exchange, Megatron FSDP, recompute), for `m`.
std::vector<Layout> Grid(Framework framework) {
  std::vector<Layout> out;
  for (int64_t tp : {1, 2, 3, 8}) {
    for (int64_t cp : {1, 2, 5}) {
      for (int64_t pp : {1, 2, 3}) {
        for (int64_t vpp : {0, 1, 2}) {
          for (bool sp : {false, true}) {
            for (MbPpSplit split : {MbPpSplit::kEven, MbPpSplit::kAccountEmbeddingLoss, MbPpSplit::kLayout}) {
              for (Tri overlap : {Tri::kUnset, Tri::kTrue}) {
                Layout l;
                l.framework = framework;
                l.tp = tp;
                l.cp = cp;
                l.pp = pp;
                l.vpp = vpp;
                l.dp = 2;
                l.ep = tp == 8 ? 8 : 1;
                l.sequence_parallel = sp;
                l.pp_split = split;
                l.mb.ep_a2a_overlap = overlap;
                l.mb.use_megatron_fsdp = tp == 3;
                l.recompute = pp == 3 ? Recompute::kFull : Recompute::kNone;
                out.push_back(l);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

void CheckGatedRowsPass(std::span<const Rule> table, Framework framework, size_t expect_gated) {
  const SystemSpec sys = LoadSystem("dgx-h100");
  size_t gated = 0;
  for (const Rule& r : table) {
    if (r.applies == nullptr) continue;
    ++gated;
    for (const ModelSpec& m : {test::Llama3_70B(), test::Qwen3_30B_A3B(), test::DeepSeekV3()}) {
      if (r.applies(m)) continue;
      for (Precision p : {Precision::kBf16, Precision::kFp8}) {
        TrainSetup setup;
        setup.num_gpus = 64;
        setup.seq_len = 4096;
        setup.global_batch = 256;
        setup.precision = p;
        for (const Layout& l : Grid(framework)) {
          const RuleContext ctx{m, setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
          INFO(r.name << " on " << m.name << " tp" << l.tp << " cp" << l.cp << " pp" << l.pp << " vpp" << l.vpp);
          CHECK(r.check(ctx));
        }
      }
    }
  }
  CHECK(gated == expect_gated);  // the rows tagged with ForModels
}

std::vector<std::string> Names(const std::vector<const Rule*>& rows) {
  std::vector<std::string> out;
  for (const Rule* r : rows) out.push_back(r->name);
  return out;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v) {
    if (x == s) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a rule gated by model passes every layout of the other models") {
  CheckGatedRowsPass(MegatronBridgeRules(), Framework::kMegatronBridge, 15);
  CheckGatedRowsPass(AutoModelRules(), Framework::kAutoModel, 5);
}

TEST_CASE("the search's rule rows are the stage's rows that apply to its model") {
  const ModelSpec dense = test::Llama3_70B();
  const std::vector<std::string> mesh = Names(RulesApplyingAtStage(Framework::kMegatronBridge, RuleStage::kMesh, dense));
  CHECK(Contains(mesh, "mb_axes_positive"));
  CHECK(Contains(mesh, "mb_tp_divides_heads"));
  CHECK_FALSE(Contains(mesh, "mb_mamba_tp_divides_heads"));
  CHECK_FALSE(Contains(mesh, "mb_dsv4_tp1"));
  CHECK_FALSE(Contains(mesh, "mb_gdn_tp_cp_key_heads"));
  // Every other mesh row of the table, in table order.
  std::vector<std::string> expected;
  for (const Rule& r : RulesFor(Framework::kMegatronBridge)) {
    if (r.stage == RuleStage::kMesh && r.applies == nullptr) expected.push_back(r.name);
  }
  CHECK(mesh == expected);

  ModelSpec dsv4 = test::DeepSeekV3();
  dsv4.architecture = Architecture::kDeepseekV4;
  const std::vector<std::string> v4 = Names(RulesApplyingAtStage(Framework::kMegatronBridge, RuleStage::kMesh, dsv4));
  CHECK(Contains(v4, "mb_dsv4_tp1"));
  CHECK(Contains(v4, "mb_dsv4_cp_needs_thd"));
  CHECK_FALSE(Contains(v4, "mb_mamba_tp_divides_heads"));
  const std::vector<std::string> v4_features =
      Names(RulesApplyingAtStage(Framework::kMegatronBridge, RuleStage::kFeatures, dsv4));
  CHECK(Contains(v4_features, "mb_dsv4_hash_layers_ep_overlap"));

  ModelSpec hybrid = test::Llama3_70B();
  LayerBlock mamba;
  mamba.mixer = MixerKind::kMamba2;
  hybrid.layer_pattern = {mamba};
  const std::vector<std::string> h = Names(RulesApplyingAtStage(Framework::kMegatronBridge, RuleStage::kMesh, hybrid));
  CHECK(Contains(h, "mb_mamba_tp_divides_heads"));
  CHECK(Contains(h, "mb_hybrid_pp_split"));
  const std::vector<std::string> am = Names(RulesApplyingAtStage(Framework::kAutoModel, RuleStage::kMesh, hybrid));
  CHECK(Contains(am, "nemotron_h_cp_divides_mamba_heads"));
  CHECK_FALSE(Contains(am, "dsv4_cp_needs_tilelang"));
}

TEST_CASE("a features rule that reads no recompute field has one verdict per mesh") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  // The recompute and CUDA-graph settings a Megatron-Bridge mesh's feature sets take
  // (MegatronSpace::Features, FitCudaGraphsToRecompute), and a few more.
  struct Variant {
    Recompute recompute;
    uint32_t modules;
    MbRecomputeMethod method;
    int64_t num_layers;
    MbCudaGraph graph;
    uint32_t scope;
  };
  const Variant variants[] = {
      {Recompute::kNone, 0, MbRecomputeMethod::kUnset, 0, MbCudaGraph::kNone, 0},
      {Recompute::kNone, 0, MbRecomputeMethod::kUnset, 0, MbCudaGraph::kTransformerEngine, kGraphAttn | kGraphMoeRouter},
      {Recompute::kSelective, kRecomputeCoreAttn, MbRecomputeMethod::kUnset, 0, MbCudaGraph::kNone, 0},
      {Recompute::kSelective, kRecomputeMoe | kRecomputeMoeAct, MbRecomputeMethod::kUnset, 0, MbCudaGraph::kTransformerEngine,
       kGraphAttn},
      {Recompute::kFull, 0, MbRecomputeMethod::kUniform, 1, MbCudaGraph::kNone, 0},
      {Recompute::kFull, 0, MbRecomputeMethod::kBlock, 2, MbCudaGraph::kFullIteration, 0},
      // Settings the recompute rows refuse, so that a row reading them gives both verdicts.
      {Recompute::kFull, 0, MbRecomputeMethod::kUnset, 0, MbCudaGraph::kTransformerEngine, 0},
      {Recompute::kSelective, kRecomputeMlaUpProj | kRecomputeMoe, MbRecomputeMethod::kUnset, 3,
       MbCudaGraph::kTransformerEngine, kGraphMoeRouter},
  };
  size_t marked = 0;
  for (const Rule& r : MegatronBridgeRules()) {
    if (r.reads_recompute) continue;
    ++marked;
    CHECK(r.stage == RuleStage::kFeatures);
    ModelSpec dsv4 = test::DeepSeekV3();
    dsv4.architecture = Architecture::kDeepseekV4;
    dsv4.dsv4.num_hash_layers = 3;
    for (const ModelSpec& m : {test::Llama3_70B(), test::Qwen3_30B_A3B(), dsv4}) {
      TrainSetup setup;
      setup.num_gpus = 64;
      setup.seq_len = 4100;
      setup.global_batch = 256;
      for (Layout base : Grid(Framework::kMegatronBridge)) {
        for (MbDispatcher d : {MbDispatcher::kAlltoall, MbDispatcher::kFlex}) {
          for (bool offload : {false, true}) {
            base.mb.token_dispatcher = d;
            base.mb.flex_backend = d == MbDispatcher::kFlex ? MbFlexBackend::kDeepEP : MbFlexBackend::kNone;
            base.mb.cpu_offloading = offload;
            base.mb.cpu_offloading_num_layers = offload ? 200 : 0;
            int verdicts = 0;
            for (const Variant& v : variants) {
              Layout l = base;
              l.recompute = v.recompute;
              l.mb.recompute_modules = v.modules;
              l.mb.recompute_method = v.method;
              l.mb.recompute_num_layers = v.num_layers;
              l.mb.cuda_graph = v.graph;
              l.mb.cuda_graph_scope = v.scope;
              const RuleContext ctx{m, setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
              verdicts |= r.check(ctx) ? 1 : 2;
            }
            INFO(r.name << " on " << m.name << " tp" << base.tp << " cp" << base.cp << " pp" << base.pp);
            CHECK(verdicts != 3);  // not both a pass and a failure
          }
        }
      }
    }
  }
  CHECK(marked == 7);
}

TEST_CASE("a mesh rule that reads only tp cp pp and dp has one verdict per walk part") {
  const SystemSpec sys = LoadSystem("dgx-h100");
  // Models on which every marked row applies: a dense and a MoE one, one with Mamba-2 and one
  // with Gated DeltaNet layers, DeepSeek-V4.
  ModelSpec mamba = test::Llama3_70B();
  mamba.name = "mamba";
  LayerBlock m2;
  m2.mixer = MixerKind::kMamba2;
  mamba.layer_pattern = {m2};
  mamba.mamba.num_heads = 96;
  mamba.mamba.head_dim = 80;
  mamba.mamba.state_size = 128;
  mamba.mamba.n_groups = 6;
  ModelSpec gdn = test::Qwen3_30B_A3B();
  gdn.name = "gdn";
  LayerBlock g;
  g.mixer = MixerKind::kGatedDeltaNet;
  gdn.layer_pattern = {g};
  gdn.gdn.num_key_heads = 12;
  gdn.gdn.num_value_heads = 24;
  ModelSpec dsv4 = test::DeepSeekV3();
  dsv4.name = "dsv4";
  dsv4.architecture = Architecture::kDeepseekV4;
  size_t marked = 0;
  for (const Rule& r : MegatronBridgeRules()) {
    if (!r.part_axes_only) continue;
    ++marked;
    CHECK(r.stage == RuleStage::kMesh);
    for (const ModelSpec& m : {test::Llama3_70B(), test::Qwen3_30B_A3B(), mamba, gdn, dsv4}) {
      if (r.applies != nullptr && !r.applies(m)) continue;
      for (Precision p : {Precision::kBf16, Precision::kFp8}) {
        TrainSetup setup;
        setup.num_gpus = 120;
        setup.seq_len = 4100;
        setup.global_batch = 240;
        setup.precision = p;
        for (int64_t tp : {1, 2, 3, 8}) {
          for (int64_t cp : {1, 2, 5}) {
            for (int64_t pp : {1, 2, 3}) {
              int verdicts = 0;
              // The fields Megatron-Bridge's walk chooses below (tp, cp, pp), dp fixed by them.
              for (int v = 0; v < 384; ++v) {
                Layout l;
                l.framework = Framework::kMegatronBridge;
                l.tp = tp;
                l.cp = cp;
                l.pp = pp;
                l.dp = setup.num_gpus % (tp * cp * pp) == 0 ? setup.num_gpus / (tp * cp * pp) : 1;
                l.vpp = v & 1 ? 2 : 0;
                l.ep = v & 2 ? 8 : 1;
                l.etp = v & 4 ? 1 : 0;
                l.pp_split = v & 8 ? MbPpSplit::kLayout : MbPpSplit::kEven;
                l.mb.token_dispatcher = v & 16 ? MbDispatcher::kFlex : MbDispatcher::kAlltoall;
                l.mb.cp_comm = v & 32 ? MbCpComm::kAllGather : MbCpComm::kUnset;
                l.sequence_parallel = v & 64;
                const int flavour = v >> 7;  // 0..2
                l.use_distributed_optimizer = flavour != 2;
                l.mb.use_megatron_fsdp = flavour == 1;
                l.mb.use_torch_fsdp2 = flavour == 2;
                const RuleContext ctx{m, setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
                verdicts |= r.check(ctx) ? 1 : 2;
              }
              INFO(r.name << " on " << m.name << " tp" << tp << " cp" << cp << " pp" << pp);
              CHECK(verdicts != 3);  // not both a pass and a failure
            }
          }
        }
      }
    }
  }
  CHECK(marked == 16);
}
