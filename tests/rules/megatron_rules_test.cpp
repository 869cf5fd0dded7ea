// Every Megatron-Bridge rule has a layout it accepts and one it rejects, with the message checked.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fixtures/models.hpp"
#include "meshplan/model.hpp"
#include "meshplan/rules.hpp"
#include "frameworks/megatron_bridge/space.hpp"

using namespace meshplan;

namespace {

// The messages of mb_ep_requires_moe and mb_fsdp2_untied_embeddings below name the model:
// "dense" there.
ModelSpec Dense() {
  ModelSpec m = test::Llama3_70B();
  m.name = "dense";
  return m;
}
ModelSpec Moe() { return test::Qwen3_30B_A3B(); }

SystemSpec H100() {
  SystemSpec s;
  s.name = "h100-test";
  s.gpu.name = "h100-sxm";
  s.gpu.display_name = "NVIDIA H100 SXM5 80GB";
  s.gpu.fp8_flops = 1979e12;  // FP8, no FP4 (mb_precision_supported)
  s.gpu.compute_capability = 9.0;
  s.gpus_per_node = 8;
  return s;
}

// 32 GPUs, seq 8192, GBS 512: DDP + distributed optimizer, tp4 pp2 dp4, SP, mbs 1.
Layout Base() {
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.tp = 4;
  l.pp = 2;
  l.dp = 4;
  l.sequence_parallel = true;
  l.use_distributed_optimizer = true;
  search::ApplyEmittedSettings(l, H100());
  l.mb.overlap_p2p_comm = Tri::kUnset;  // as a recipe that leaves them to CommOverlapConfig
  l.mb.batch_p2p_comm = Tri::kUnset;
  l.pp_microbatch_size = 1;
  return l;
}

using Edit = std::function<void(ModelSpec&, TrainSetup&, Layout&)>;
struct Case {
  const char* rule;
  const char* fragment;
  Edit pass;
  Edit fail;
  MBridgeVersion version = MBridgeVersion::kMain;
  const char* system = "";  ///< a system of hwdb/ ("" = H100())
};

void Nothing(ModelSpec&, TrainSetup&, Layout&) {}
void MoeEp8(ModelSpec& m, TrainSetup&, Layout& l) {
  m = Moe();
  l.ep = 8;
  l.etp = 1;
}
void Mfsdp(ModelSpec&, TrainSetup&, Layout& l) {
  l.mb.use_megatron_fsdp = true;
  l.mb.dist_use_megatron_fsdp = Tri::kTrue;
  l.mb.ckpt_format = MbCkptFormat::kFsdpDtensor;
  l.mb.average_in_collective = Tri::kFalse;
  l.mb.cuda_device_max_connections = 8;
}
void Fsdp2(ModelSpec&, TrainSetup&, Layout& l) {
  l.pp = 1;
  l.dp = 8;
  l.mb.use_torch_fsdp2 = true;
  l.use_distributed_optimizer = false;
  l.mb.overlap_param_gather = Tri::kUnset;
  l.mb.cuda_device_max_connections = 8;
  l.mb.grad_acc_fusion = Tri::kFalse;
}

// A recipe's pipeline_model_parallel_layout (as frameworks/megatron_bridge/recipe_read.cpp keeps it) on the base layout
// (pp 2; 80 layers): its text, mtp_num_layers, VPP, the other pipeline-split keys set beside it,
// and an encoder layer after the embedding (only the list form can name one).
struct LayoutSpec {
  std::string text;
  int64_t mtp_num_layers = -1;
  int64_t vpp = 1;
  std::vector<std::string> other_keys = {};
  bool encoder = false;
};
void WithLayout(Layout& l, const LayoutSpec& spec) {
  auto g = std::make_shared<PpLayerLayout>();
  const PpLayoutParse p = ParsePpLayoutString(spec.text);
  REQUIRE(p.ok);
  g->stages = p.stages;
  if (spec.encoder) g->stages[0].insert(1, "c");
  g->written = "\"" + spec.text + "\"";
  g->where = "r.yaml:4:3";
  g->mtp_num_layers = spec.mtp_num_layers;
  g->other_split_keys = spec.other_keys;
  l.pp_split = MbPpSplit::kLayout;
  l.pp_layout = g;
  l.vpp = spec.vpp;
}
Case LayoutCase(const char* rule, const char* fragment, const LayoutSpec& pass, const LayoutSpec& fail) {
  return {rule, fragment, [pass](auto&, auto&, Layout& l) { WithLayout(l, pass); },
          [fail](auto&, auto&, Layout& l) { WithLayout(l, fail); }};
}
const LayoutSpec kBalanced{"Et*40|t*40L"};
const LayoutSpec kInterleaved{"Et*20|t*20|t*20|t*20L", -1, 2};
const LayoutSpec kWithMtp{"Et*40|t*40mL", 1};

// Nemotron 3 Nano (52 layers "MEMEM*E...": 64 Mamba-2 heads, 8 groups) on the base layout.
void Nano(ModelSpec& m, TrainSetup&, Layout&) { m = LoadModel("nemotron-3-nano"); }
void NanoCp4(ModelSpec& m, TrainSetup& s, Layout& l) {
  Nano(m, s, l);
  l.cp = 4;
  l.dp = 1;
}
Edit NanoWith(const std::function<void(ModelSpec&, TrainSetup&, Layout&)>& more) {
  return [more](ModelSpec& m, TrainSetup& s, Layout& l) {
    Nano(m, s, l);
    more(m, s, l);
  };
}

// Qwen3-Next-80B-A3B (36 Gated DeltaNet layers: 16 key heads, 32 value heads) on the base layout (tp 4).
void Qwen3Next(ModelSpec& m, TrainSetup&, Layout&) {
  m = LoadModel(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/arch/qwen3-next-80b-a3b.json");
}

// DeepSeek-V4 Flash (43 layers, the first 3 hash-routed, one MTP layer) at tp 1 pp 1 dp 32,
// then with `more`.
Edit Dsv4With(const std::function<void(Layout&)>& more) {
  return [more](ModelSpec& m, TrainSetup&, Layout& l) {
    m = LoadModel("deepseek-v4-flash");
    l.tp = 1;
    l.pp = 1;
    l.dp = 32;
    l.sequence_parallel = false;
    l.mtp_layers = 1;
    more(l);
  };
}
// pp 2 with a recipe's layout of `text` (its MTP layer in the last stage).
void Dsv4Layout(Layout& l, const char* text) {
  l.pp = 2;
  l.dp = 16;
  WithLayout(l, {text, 1});
}

// Context parallelism over 2 (4) ranks on the base layout, with a cp_comm_type.
Edit CpWith(int64_t cp, MbCpComm type, int64_t hcp_first = 0) {
  return [=](ModelSpec&, TrainSetup&, Layout& l) {
    l.cp = cp;
    l.dp = 4 / cp;
    l.mb.cp_comm = type;
    l.mb.hcp_levels = hcp_first > 0 ? 2 : 0;
    l.mb.hcp_first = hcp_first;
    l.mb.hcp_product = hcp_first > 0 ? cp : 0;
  };
}
Edit Then(const Edit& a, const std::function<void(ModelSpec&, Layout&)>& b) {
  return [=](ModelSpec& m, TrainSetup& s, Layout& l) {
    a(m, s, l);
    b(m, l);
  };
}
void SlidingWindow(ModelSpec& m, Layout&) {
  m.sliding_window = 4096;
  m.num_sliding_window_layers = 40;
}
void Sinks(ModelSpec& m, Layout&) { m.attention_sinks = true; }

const Case kCases[] = {
    {"mb_dsv4_tp1", "DSv4 Hybrid Attention only supports TP size 1 (tensor_model_parallel_size=2)",
     Dsv4With([](Layout&) {}), Dsv4With([](Layout& l) { l.tp = 2; l.dp = 16; })},
    {"mb_dsv4_cp_needs_thd", "BSHD inputs are not supported (context_parallel_size=2",
     Dsv4With([](Layout&) {}), Dsv4With([](Layout& l) { l.cp = 2; l.dp = 16; })},
    {"mb_dsv4_hash_layers_need_pp_layout", "must be set when using hash MoE layers with pipeline parallelism",
     Dsv4With([](Layout& l) { Dsv4Layout(l, "Et*22|t*21mL"); }), Dsv4With([](Layout& l) { l.pp = 2; l.dp = 16; })},
    {"mb_dsv4_hash_layers_first_stage", "moe_n_hash_layers=3 but that stage holds 2 decoder layers",
     Dsv4With([](Layout& l) { Dsv4Layout(l, "Et*3|t*40mL"); }), Dsv4With([](Layout& l) { Dsv4Layout(l, "Et*2|t*41mL"); })},
    {"mb_dsv4_hash_layers_ep_overlap", "overlap_moe_expert_parallel_comm does not support moe_n_hash_layers > 0",
     Dsv4With([](Layout&) {}), Dsv4With([](Layout& l) { l.mb.ep_a2a_overlap = Tri::kTrue; })},
    {"mb_gdn_tp_cp_key_heads", "self.linear_num_key_heads=16 must be a multiple of (self.tensor_model_parallel_size=4 * self.context_parallel_size=8)",
     Qwen3Next, [](ModelSpec& m, TrainSetup& s, Layout& l) { Qwen3Next(m, s, l); l.cp = 8; }},
    {"mb_gdn_tp_cp_value_heads", "self.linear_num_value_heads=32 must be a multiple of (self.tensor_model_parallel_size=4 * self.context_parallel_size=16)",
     Qwen3Next, [](ModelSpec& m, TrainSetup& s, Layout& l) { Qwen3Next(m, s, l); l.cp = 16; }},
    // Llama 3 70B: 64 heads, 8 KV heads; over TP 4, 2 KV heads a rank divide over CP 2, not 4.
    {"mb_cp_needs_te_attention", "needs Transformer Engine's fused or flash attention", CpWith(2, MbCpComm::kUnset),
     Then(CpWith(2, MbCpComm::kUnset), [](ModelSpec&, Layout& l) { l.mb.unfused_attention = true; })},
    {"mb_cp_comm_a2a_heads", "key/value heads 8 over TP 4 must each divide by 4", CpWith(2, MbCpComm::kA2a),
     CpWith(4, MbCpComm::kA2a)},
    {"mb_cp_comm_sliding_window", "runs them with cp_comm_type a2a or all_gather only, found p2p (null)",
     Then(CpWith(2, MbCpComm::kAllGather), SlidingWindow), Then(CpWith(2, MbCpComm::kUnset), SlidingWindow)},
    {"mb_cp_comm_softmax_sinks", "runs it with cp_comm_type a2a only, found all_gather",
     Then(CpWith(2, MbCpComm::kA2a), Sinks), Then(CpWith(2, MbCpComm::kAllGather), Sinks)},
    {"mb_cp_comm_hierarchical_sizes", "needs hierarchical_context_parallel_sizes", CpWith(4, MbCpComm::kA2aP2p, 2),
     CpWith(4, MbCpComm::kA2aP2p)},
    {"mb_mamba_tp_divides_heads", "nheads must be evenly divisble by tp_size: mamba_num_heads (66)", Nano,
     NanoWith([](ModelSpec& m, auto&, auto&) { m.mamba.num_heads = 66; })},
    {"mb_mamba_tp_divides_groups", "ngroups must be evenly divisible by tp_size: n_groups (2) is not a multiple", Nano,
     NanoWith([](ModelSpec& m, auto&, auto&) { m.mamba.n_groups = 2; })},
    {"mb_mamba_cp_divides_heads", "nheads must be evenly divisible by tp_size * cp_size: mamba_num_heads (24)", NanoCp4,
     [](ModelSpec& m, TrainSetup& s, Layout& l) { NanoCp4(m, s, l); m.mamba.num_heads = 24; }},
    {"mb_mamba_cp_groups", "cp_size must be evenly divisible by ngroups/tp_size: context_parallel_size 4", NanoCp4,
     [](ModelSpec& m, TrainSetup& s, Layout& l) { NanoCp4(m, s, l); m.mamba.n_groups = 12; }},
    {"mb_mamba_fp8_in_proj", "For FP8, the innermost dimension of the Mamba layer input projection output tensor",
     NanoWith([](auto&, TrainSetup& s, auto&) { s.precision = Precision::kFp8; }),
     NanoWith([](ModelSpec& m, TrainSetup& s, auto&) { s.precision = Precision::kFp8; m.mamba.num_heads = 68; })},
    {"mb_hybrid_pp_divides_layers", "Number of layers (52) must be evenly divisible by pipeline-model-parallel-size (8)",
     Nano, NanoWith([](auto&, auto&, Layout& l) { l.pp = 8; l.dp = 1; })},
    {"mb_hybrid_vpp_needs_pipes", "Virtual pipeline parallelism (vp_stage != None) is not supported", Nano,
     NanoWith([](auto&, auto&, Layout& l) { l.vpp = 2; })},
    {"mb_hybrid_pp_split", "account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split with a hybrid",
     Nano, NanoWith([](auto&, auto&, Layout& l) { l.pp_split = MbPpSplit::kAccountEmbeddingLoss; })},
    {"mb_axes_positive", "every parallel size must be >= 1", Nothing, [](auto&, auto&, Layout& l) { l.cp = 0; }},
    {"mb_world_divisible_by_tp_pp_cp", "world_size (30) is not divisible by tensor x pipeline x context parallel (4 x 2 x 1 = 8)",
     Nothing, [](auto&, TrainSetup& s, auto&) { s.num_gpus = 30; }},
    {"mb_world_divisible_by_etp_ep_pp",
     "(4 x 8 x 2 = 64); expert_tensor_parallel_size is unset, so it equals tensor_model_parallel_size (4)", MoeEp8,
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.etp = 0; }},
    // ETP already 1 in effect: the message must not offer "set expert_tensor_parallel_size: 1".
    {"mb_world_divisible_by_etp_ep_pp",
     "(1 x 3 x 2 = 6); even with expert_tensor_parallel_size 1, expert x pipeline parallel (6) does not divide it",
     MoeEp8, [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.etp = 0; l.tp = 1; l.ep = 3; }},
    {"mb_tp_pp_dp_mapping_edp", "needs expert data parallel (2) == data parallel (4)", MoeEp8,
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.mb.use_tp_pp_dp_mapping = true; }},
    {"mb_tp_divides_heads", "num_attention_heads (66) must be a multiple of tensor_model_parallel_size (4)", Nothing,
     [](ModelSpec& m, auto&, auto&) { m.num_attention_heads = 66; }},
    {"mb_tp_query_groups", "num_query_groups (3) and tensor_model_parallel_size (4) must divide one another",
     [](ModelSpec& m, auto&, auto&) { m.num_key_value_heads = 2; }, [](ModelSpec& m, auto&, auto&) { m.num_key_value_heads = 3; }},
    {"mb_tp_query_groups", "Megatron-Core <= 0.15 cannot replicate KV heads",
     Nothing, [](ModelSpec& m, auto&, auto&) { m.num_key_value_heads = 2; }, MBridgeVersion::kCore015},
    {"mb_tp_divides_ffn", "ffn_hidden_size (28670) must be a multiple of tensor_model_parallel_size (4)", Nothing,
     [](ModelSpec& m, auto&, auto&) { m.intermediate_size = 28670; }},
    {"mb_etp_divides_moe_ffn", "moe_ffn_hidden_size (770) must be a multiple of expert_tensor_parallel_size (4, unset so equal to TP)",
     [](auto& m, auto&, Layout& l) { m = Moe(); l.ep = 4; },
     [](auto& m, auto&, Layout& l) { m = Moe(); m.moe_intermediate_size = 770; l.ep = 4; }},
    {"mb_ep_requires_moe", "expert_model_parallel_size=2 needs num_moe_experts, but dense is a dense model", Nothing,
     [](auto&, auto&, Layout& l) { l.ep = 2; }},
    {"mb_ep_divides_experts", "num_moe_experts (128) must be a multiple of expert_model_parallel_size (3)", MoeEp8,
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.ep = 3; }},
    {"mb_expert_bias_etp1", "has biased expert linears (add_bias_linear), which need expert_tensor_parallel_size 1; found 4",
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); m.expert_bias = true; },
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); m.expert_bias = true; l.etp = 0; }},
    {"mb_pipeline_dtype", "pipeline_model_parallel_size 2 needs model.pipeline_dtype", Nothing,
     [](auto&, auto&, Layout& l) { l.mb.pipeline_dtype_set = false; }},
    {"mb_vpp_requires_pp", "virtual_pipeline_model_parallel_size 2 with pipeline_model_parallel_size 1", Nothing,
     [](auto&, auto&, Layout& l) { l.pp = 1; l.dp = 8; l.vpp = 2; }},
    {"mb_pp_divides_layers", "num_layers 81 is not divisible by pipeline_model_parallel_size 2", Nothing,
     [](ModelSpec& m, auto&, auto&) { m.num_layers = 81; }},
    {"mb_vpp_divides_layers", "layers per pipeline rank (40) must be divisible by virtual_pipeline_model_parallel_size 3",
     [](auto&, auto&, Layout& l) { l.vpp = 5; }, [](auto&, auto&, Layout& l) { l.vpp = 3; }},
    {"mb_pp_layout_stages", "pipeline_model_parallel_layout with 2 x 41 = 82 stages",
     [](auto&, auto&, Layout& l) { l.pp_split = MbPpSplit::kLayout; l.vpp = 40; },
     [](auto&, auto&, Layout& l) { l.pp_split = MbPpSplit::kLayout; l.vpp = 41; }},
    // A recipe's layout (frameworks/megatron_bridge/rules_layout.cpp): pp 2, 80 decoder layers.
    LayoutCase("mb_pp_layout_alone",
               "pipeline_model_parallel_layout \"Et*40|t*40L\" (r.yaml:4:3) cannot be set with other pipeline layout "
               "arguments; found account_for_embedding_in_pipeline_split: true, num_layers_in_first_pipeline_stage: 39",
               kBalanced,
               {"Et*40|t*40L", -1, 1,
                {"account_for_embedding_in_pipeline_split: true", "num_layers_in_first_pipeline_stage: 39"}}),
    LayoutCase("mb_pp_layout_stages_divisible_by_pp",
               "pipeline_model_parallel_layout \"Et*40|t*39|tL\" (r.yaml:4:3) has 3 stages (model chunks); expected a "
               "multiple of pipeline_model_parallel_size 2",
               kBalanced, {"Et*40|t*39|tL"}),
    LayoutCase("mb_pp_layout_vpp",
               "has 4 stages = 2 pipeline ranks x 2 virtual stages, but virtual_pipeline_model_parallel_size is 3: "
               "expected 6 stages (2 x 3), or set virtual_pipeline_model_parallel_size: 2 (or null)",
               kInterleaved, {"Et*20|t*20|t*20|t*20L", -1, 3}),
    LayoutCase("mb_pp_layout_embedding_first",
               "pipeline_model_parallel_layout \"t*40|Et*40L\" (r.yaml:4:3) starts with a decoder layer (t); expected "
               "the embedding (E) as the first layer",
               kBalanced, {"t*40|Et*40L"}),
    LayoutCase("mb_pp_layout_embedding_first", "has 2 embeddings (E); expected exactly one, the first layer", kBalanced,
               {"Et*40|Et*40L"}),
    LayoutCase("mb_pp_layout_embedding_first",
               "pipeline_model_parallel_layout \"|\" (r.yaml:4:3) has no layers; expected the embedding (E) as the first",
               kBalanced, {"|"}),
    LayoutCase("mb_pp_layout_loss_last",
               "pipeline_model_parallel_layout \"Et*40|Lt*40\" (r.yaml:4:3) ends with a decoder layer (t); expected the "
               "loss (L) as the last layer",
               kBalanced, {"Et*40|Lt*40"}),
    LayoutCase("mb_pp_layout_loss_last", "has 2 losses (L); expected exactly one, the last layer", kBalanced,
               {"Et*40L|t*40L"}),
    LayoutCase("mb_pp_layout_num_layers",
               "pipeline_model_parallel_layout \"Et*40|t*39L\" (r.yaml:4:3) holds 79 decoder layers (t); expected "
               "num_layers 80 of dense",
               kBalanced, {"Et*40|t*39L"}),
    LayoutCase("mb_pp_layout_mtp_count",
               "pipeline_model_parallel_layout \"Et*40|t*40L\" (r.yaml:4:3) holds 0 MTP layers (m); expected "
               "mtp_num_layers 1",
               kWithMtp, {"Et*40|t*40L", 1}),
    LayoutCase("mb_pp_layout_mtp_count", "holds 1 MTP layer (m); expected mtp_num_layers 0 (null or 0: no m)", kBalanced,
               {"Et*40|t*40mL", 0}),
    LayoutCase("mb_pp_layout_mtp_placement",
               "pipeline_model_parallel_layout \"Et*40|t*39mtL\" (r.yaml:4:3): a decoder layer (t) comes after the "
               "first MTP layer (m)",
               kWithMtp, {"Et*40|t*39mtL", 1}),
    LayoutCase("mb_pp_layout_mtp_placement",
               "stage 1 (pipeline rank 1, virtual stage 0 of 2) holds an MTP layer (m); expected MTP layers only in a "
               "rank's last virtual stage",
               kWithMtp, {"Et*40|t*40m|L|", 1, 2}),
    LayoutCase("mb_pp_layout_mtp_placement", "stage 2 holds 1 of the 2 MTP layers (m); expected all of them in one stage",
               {"Et*40|t*40||mmL", 2, 2}, {"Et*40|t*40|m|mL", 2, 2}),
    LayoutCase("mb_pp_layout_no_encoder",
               "holds 1 encoder layers; Megatron-Core does not support encoder layers in a pipeline layout", kBalanced,
               {"Et*40|t*40L", -1, 1, {}, true}),
    {"mb_vpp_pp2_needs_p2p_overlap", "at pipeline_model_parallel_size 2 needs overlap_p2p_comm: true",
     [](auto&, auto&, Layout& l) { l.vpp = 2; l.mb.overlap_p2p_comm = Tri::kTrue; l.mb.batch_p2p_comm = Tri::kFalse; },
     [](auto&, auto&, Layout& l) { l.vpp = 2; l.mb.overlap_p2p_comm = Tri::kFalse; }},
    {"mb_cp_divides_sequence", "seq_length 8190 must be divisible by 2 x context_parallel_size = 4",
     [](auto&, auto&, Layout& l) { l.cp = 2; l.dp = 2; l.sequence_parallel = false; },
     [](auto&, TrainSetup& s, Layout& l) { l.cp = 2; l.dp = 2; l.sequence_parallel = false; s.seq_len = 8190; }},
    {"mb_sp_requires_tp", "sequence_parallel: true with tensor_model_parallel_size 1", Nothing,
     [](auto&, auto&, Layout& l) { l.tp = 1; l.dp = 16; }},
    {"mb_sp_divides_sequence", "seq_length 8194 must be a multiple of 4 with sequence_parallel", Nothing,
     [](auto&, TrainSetup& s, auto&) { s.seq_len = 8194; }},
    {"mb_fsdp_exclusive", "use_megatron_fsdp and use_torch_fsdp2 are both on", Mfsdp,
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.use_torch_fsdp2 = true; }},
    {"mb_megatron_fsdp_flags", "found dist=false ddp=true", Mfsdp,
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.dist_use_megatron_fsdp = Tri::kFalse; }},
    {"mb_megatron_fsdp_weight_hash", "check_weight_hash_across_dp_replicas_interval is not supported",
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.sharding = MbSharding::kOptimGrads; l.mb.weight_hash_check = true; },
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.weight_hash_check = true; }},
    {"mb_megatron_fsdp_average_in_collective", "write average_in_collective: false", Mfsdp,
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.average_in_collective = Tri::kTrue; }},
    {"mb_megatron_fsdp_ckpt_format", "checkpoint.ckpt_format must be fsdp_dtensor, found torch_dist", Mfsdp,
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.ckpt_format = MbCkptFormat::kTorchDist; }},
    {"mb_megatron_fsdp_ckpt_format", "must be fsdp_dtensor, found unset (torch_dist)",
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.ckpt_format = MbCkptFormat::kUnset; },
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.ckpt_format = MbCkptFormat::kUnset; l.mb.checkpointing = true; }},
    {"mb_fsdp_dtensor_needs_megatron_fsdp", "fsdp_dtensor is only allowed with Megatron FSDP", Nothing,
     [](auto&, auto&, Layout& l) { l.mb.ckpt_format = MbCkptFormat::kFsdpDtensor; }},
    {"mb_megatron_fsdp_no_tp_pp_dp_mapping", "use_tp_pp_dp_mapping is not supported with Megatron FSDP", Mfsdp,
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.use_tp_pp_dp_mapping = true; }},
    {"mb_megatron_fsdp_cdmc", "CUDA_DEVICE_MAX_CONNECTIONS=1 with FSDP", Mfsdp,
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.cuda_device_max_connections = 1; }},
    {"mb_fsdp2_no_pp_ep", "use_torch_fsdp2 does not support pipeline or expert parallelism; found PP 2, EP 1", Fsdp2,
     [](auto& m, auto& s, Layout& l) { Fsdp2(m, s, l); l.pp = 2; l.dp = 4; }},
    {"mb_fsdp2_no_distributed_optimizer", "FSDP2 already shards the optimizer", Fsdp2,
     [](auto& m, auto& s, Layout& l) { Fsdp2(m, s, l); l.use_distributed_optimizer = true; }},
    {"mb_fsdp2_untied_embeddings", "use_torch_fsdp2 needs untied embeddings, but dense ties", Fsdp2,
     [](auto& m, auto& s, Layout& l) { Fsdp2(m, s, l); m.tie_word_embeddings = true; }},
    {"mb_fsdp2_ckpt_format", "found ckpt_format torch", Fsdp2,
     [](auto& m, auto& s, Layout& l) { Fsdp2(m, s, l); l.mb.ckpt_format = MbCkptFormat::kTorch; }},
    {"mb_fsdp2_no_grad_acc_fusion", "use_torch_fsdp2 needs model.gradient_accumulation_fusion: false; found it unset",
     Fsdp2, [](auto& m, auto& s, Layout& l) { Fsdp2(m, s, l); l.mb.grad_acc_fusion = Tri::kUnset; }},
    {"mb_torch_dcp_no_tp_pp", "torch_dcp needs TP 1 and PP 1; found TP 4, PP 2", Nothing,
     [](auto&, auto&, Layout& l) { l.mb.ckpt_format = MbCkptFormat::kTorchDcp; }},
    {"mb_distopt_instances_divide_dp_cp", "(4 x 1) must be divisible by num_distributed_optimizer_instances (3)",
     [](auto&, auto&, Layout& l) { l.mb.num_distributed_optimizer_instances = 2; },
     [](auto&, auto&, Layout& l) { l.mb.num_distributed_optimizer_instances = 3; }},
    {"mb_overlap_param_gather", "overlap_param_gather: true needs use_distributed_optimizer: true", Nothing,
     [](auto&, auto&, Layout& l) { l.use_distributed_optimizer = false; l.mb.overlap_param_gather = Tri::kTrue; }},
    {"mb_p2p_comm_flags", "overlap_p2p_comm: true needs an interleaved pipeline (PP > 1 and VPP > 1); found PP 2, VPP 1",
     Nothing, [](auto&, auto&, Layout& l) { l.mb.overlap_p2p_comm = Tri::kTrue; l.mb.batch_p2p_comm = Tri::kFalse; }},
    {"mb_megatron_fsdp_cpu_offloading", "needs pipeline_model_parallel_size 1 and no recompute; found PP 2",
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.pp = 1; l.dp = 8; l.mb.cpu_offloading = true; },
     [](auto& m, auto& s, Layout& l) { Mfsdp(m, s, l); l.mb.cpu_offloading = true; }},
    {"mb_cpu_offloading_no_recompute", "cpu_offloading cannot be combined with recompute_granularity selective", Nothing,
     [](auto&, auto&, Layout& l) { l.mb.cpu_offloading = true; l.recompute = Recompute::kSelective; }},
    {"mb_cpu_offloading_num_layers", "cpu_offloading_num_layers must be less than the model's 80 layers; found 80",
     [](auto&, auto&, Layout& l) { l.pp = 1; l.dp = 8; l.mb.cpu_offloading = true; l.mb.cpu_offloading_num_layers = 79; },
     [](auto&, auto&, Layout& l) { l.pp = 1; l.dp = 8; l.mb.cpu_offloading = true; l.mb.cpu_offloading_num_layers = 80; }},
    {"mb_cpu_offloading_no_pp", "cpu_offloading does not support pipeline parallelism; found pipeline_model_parallel_size 2",
     [](auto&, auto&, Layout& l) { l.pp = 1; l.dp = 8; l.mb.cpu_offloading = true; },
     [](auto&, auto&, Layout& l) { l.mb.cpu_offloading = true; }},
    {"mb_recompute_arguments", "recompute_granularity: full needs recompute_method (uniform or block)",
     [](auto&, auto&, Layout& l) { l.recompute = Recompute::kFull; l.mb.recompute_method = MbRecomputeMethod::kUniform; l.mb.recompute_num_layers = 1; },
     [](auto&, auto&, Layout& l) { l.recompute = Recompute::kFull; }},
    {"mb_recompute_modules_model", "recompute_modules has mla_up_proj, which needs multi_latent_attention",
     [](auto&, auto&, Layout& l) { l.recompute = Recompute::kSelective; l.mb.recompute_modules = kRecomputeLayernorm | kRecomputeMlp; },
     [](auto&, auto&, Layout& l) { l.recompute = Recompute::kSelective; l.mb.recompute_modules = kRecomputeMlaUpProj; }},
    {"mb_recompute_modules_model", "recompute_modules has moe_act, which needs moe_grouped_gemm (MoE experts)",
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.recompute = Recompute::kSelective; l.mb.recompute_modules = kRecomputeMoeAct; },
     [](auto&, auto&, Layout& l) { l.recompute = Recompute::kSelective; l.mb.recompute_modules = kRecomputeMoeAct; }},
    {"mb_ep_overlap_requirements", "moe_token_dispatcher_type alltoall or flex (found allgather)",
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.vpp = 2; l.mb.overlap_p2p_comm = Tri::kTrue;
                                       l.mb.batch_p2p_comm = Tri::kFalse; l.mb.ep_a2a_overlap = Tri::kTrue;
                                       l.mb.token_dispatcher = MbDispatcher::kAlltoall; },
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.mb.ep_a2a_overlap = Tri::kTrue; l.mb.token_dispatcher = MbDispatcher::kAllgather; }},
    {"mb_ep_overlap_requirements", "no full recompute and no moe in recompute_modules",
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.vpp = 2; l.mb.overlap_p2p_comm = Tri::kTrue;
                                       l.mb.batch_p2p_comm = Tri::kFalse; l.mb.ep_a2a_overlap = Tri::kTrue;
                                       l.mb.token_dispatcher = MbDispatcher::kAlltoall;
                                       l.recompute = Recompute::kSelective; l.mb.recompute_modules = kRecomputeMoeAct; },
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.vpp = 2; l.mb.overlap_p2p_comm = Tri::kTrue;
                                       l.mb.batch_p2p_comm = Tri::kFalse; l.mb.ep_a2a_overlap = Tri::kTrue;
                                       l.mb.token_dispatcher = MbDispatcher::kAlltoall;
                                       l.recompute = Recompute::kSelective; l.mb.recompute_modules = kRecomputeMoe; }},
    // transformer_config.py:2854-2870: per-layer graphs with full recompute; moe recompute with a router graph.
    {"mb_cuda_graph_recompute", "full recompute is only supported with full iteration CUDA graph",
     [](auto&, auto&, Layout& l) { l.mb.cuda_graph = MbCudaGraph::kFullIteration; l.recompute = Recompute::kFull;
                                   l.mb.recompute_method = MbRecomputeMethod::kUniform; l.mb.recompute_num_layers = 1; },
     [](auto&, auto&, Layout& l) { l.mb.cuda_graph = MbCudaGraph::kTransformerEngine; l.recompute = Recompute::kFull;
                                   l.mb.recompute_method = MbRecomputeMethod::kUniform; l.mb.recompute_num_layers = 1; }},
    {"mb_cuda_graph_recompute", "drop moe_router / moe_preprocess from cuda_graph_scope",
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.mb.cuda_graph = MbCudaGraph::kTransformerEngine;
                                       l.mb.cuda_graph_scope = kGraphAttn; l.recompute = Recompute::kSelective;
                                       l.mb.recompute_modules = kRecomputeMoe; },
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.mb.cuda_graph = MbCudaGraph::kTransformerEngine;
                                       l.mb.cuda_graph_scope = kGraphMoeRouter | kGraphMoePreprocess;
                                       l.recompute = Recompute::kSelective; l.mb.recompute_modules = kRecomputeMoe; }},
    // flex_dispatcher_backend.py: DeepEP is not built for GB200 (compute capability 10, not named B200 / B300).
    {"mb_flex_backend_gpu", "deepep is not supported on NVIDIA GB200",
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.mb.token_dispatcher = MbDispatcher::kFlex;
                                       l.mb.flex_backend = MbFlexBackend::kHybridEP; },
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.mb.token_dispatcher = MbDispatcher::kFlex;
                                       l.mb.flex_backend = MbFlexBackend::kDeepEP; },
     MBridgeVersion::kMain, "gb200-nvl72"},
    // DeepEP v1.2.1 has kernel configurations for 2, 4, 8, 16, 24, 32, 64, 128, 144, 160 ranks: a
    // 96-expert MoE on 48 GPUs (tp4 pp2 dp6) at EP 24 runs, at EP 12 stops at the first dispatch.
    {"mb_deepep_ep_ranks", "deepep has no kernel configuration for 12 ranks (expert_tensor_parallel_size 1 x "
     "expert_model_parallel_size 12)",
     [](auto& m, TrainSetup& s, Layout& l) { MoeEp8(m, s, l); m.num_experts = 96; s.num_gpus = 48; s.global_batch = 384; l.dp = 6; l.ep = 24;
                                             l.mb.token_dispatcher = MbDispatcher::kFlex;
                                             l.mb.flex_backend = MbFlexBackend::kDeepEP; },
     [](auto& m, TrainSetup& s, Layout& l) { MoeEp8(m, s, l); m.num_experts = 96; s.num_gpus = 48; s.global_batch = 384; l.dp = 6; l.ep = 12;
                                             l.mb.token_dispatcher = MbDispatcher::kFlex;
                                             l.mb.flex_backend = MbFlexBackend::kDeepEP; }},
    {"mb_global_batch_divisible", "global_batch_size (510) must be divisible by micro_batch_size x data parallel (1 x 4 = 4)",
     Nothing, [](auto&, TrainSetup& s, auto&) { s.global_batch = 510; }},
    {"mb_interleaved_microbatches", "the number of micro-batches (1 = global_batch / (micro_batch_size x DP))",
     [](auto&, auto&, Layout& l) { l.vpp = 5; }, [](auto&, TrainSetup& s, Layout& l) { l.vpp = 5; s.global_batch = 4; }},
    {"mb_precision_supported", "fp4 requested but NVIDIA H100 SXM5 80GB has no FP4 tensor cores (the framework stops "
     "at start-up); expected bf16 or fp8",
     [](auto&, TrainSetup& s, auto&) { s.precision = Precision::kFp8; },
     [](auto&, TrainSetup& s, auto&) { s.precision = Precision::kFp4; }},
    // tp 4 with sequence parallel: the rank's rows are 8224 / 4 = 2056 (a multiple of 8) and
    // 8200 / 4 = 2050 (not), though 8200 itself is a multiple of 8.
    {"mb_fp8_token_rows", "/ tensor_model_parallel_size (the sequence shard) = 2050 tokens (micro_batch_size 1, "
     "seq_length 8200, cp 1, tp 4), to be a multiple of 8",
     [](auto&, TrainSetup& s, auto&) { s.precision = Precision::kFp8; s.seq_len = 8224; },
     [](auto&, TrainSetup& s, auto&) { s.precision = Precision::kFp8; s.seq_len = 8200; }},
    {"mb_mxfp8_needs_blackwell", "the MXFP8 recipe needs a Blackwell GPU (compute capability 10.0+), found NVIDIA "
     "H100 SXM5 80GB (9)",
     [](auto&, TrainSetup& s, Layout& l) { s.precision = Precision::kFp8; l.mb.fp8_recipe = MbFp8Recipe::kPerTensor; },
     [](auto&, TrainSetup& s, Layout& l) { s.precision = Precision::kFp8; l.mb.fp8_recipe = MbFp8Recipe::kMxfp8; }},
    // Findings rows (Severity::kWarning, kSilentlyOff): "fail" is a layout they report on.
    {"mb_cuda_device_max_connections_before_blackwell", "CUDA_DEVICE_MAX_CONNECTIONS=8 on h100-sxm with TP 4", Nothing,
     [](auto&, auto&, Layout& l) { l.mb.cuda_device_max_connections = 8; }},
    {"mb_ep_with_tp_wants_sequence_parallel", "should use sequence_parallel: true", MoeEp8,
     [](auto& m, auto& s, Layout& l) { MoeEp8(m, s, l); l.sequence_parallel = false; }},
    {"mb_tp_comm_overlap_needs_tp_sp_te", "TP overlap needs sequence_parallel: true", Nothing,
     [](auto&, auto&, Layout& l) { l.sequence_parallel = false; }},
    {"mb_dp_overlap_needs_dp", "nothing to overlap with data parallel size 1", Nothing,
     [](auto&, auto&, Layout& l) { l.pp = 8; l.dp = 1; }},
    {"mb_dp_overlap_default_needs_distributed_optimizer", "only turned on by default with the distributed optimizer",
     Nothing, [](auto&, auto&, Layout& l) {
       l.use_distributed_optimizer = false;
       l.mb.overlap_grad_reduce = Tri::kUnset;
     }},
};

TrainSetup Setup() {
  TrainSetup s;
  s.num_gpus = 32;
  s.seq_len = 8192;
  s.global_batch = 512;
  return s;
}

// The base layout at micro-batch 1 on H100, with its rule context (tests edit m, s, l in place).
struct BaseCase {
  ModelSpec m = Dense();
  TrainSetup s = Setup();
  Layout l = Base();
  SystemSpec sys = H100();
  RuleContext ctx{m, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  BaseCase() { SetMegatronMicroBatch(l, 1, s); }
};

bool Fails(const Case& c, const Edit& e, std::string* msg) {
  ModelSpec m = Dense();
  TrainSetup s = Setup();
  Layout l = Base();
  e(m, s, l);
  SetMegatronMicroBatch(l, l.pp_microbatch_size, s);
  const SystemSpec sys = *c.system ? LoadSystem(c.system) : H100();
  RuleContext ctx{m, s, l, AutoModelVersion::kV05, c.version, &sys};
  const Rule* r = FindRule(c.rule);
  REQUIRE(r != nullptr);
  const bool failed = !r->check(ctx);
  if (failed && msg) *msg = r->explain(ctx);
  if (!failed) {
    const Rule* first = FirstFailure(ctx);
    const std::string why = std::string(c.rule) + ": passing layout breaks " + (first ? first->name : "");
    CHECK_MESSAGE(first == nullptr, why);
  }
  return failed;
}

}  // namespace

TEST_CASE("megatron rules: the base layout is valid and uses the mb_ registry") {
  ModelSpec m = Dense();
  TrainSetup s = Setup();
  Layout l = Base();
  SetMegatronMicroBatch(l, 1, s);
  const SystemSpec sys = H100();
  RuleContext ctx{m, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  const Rule* r = FirstFailure(ctx);
  CHECK_MESSAGE(r == nullptr, (r ? r->name : ""));
  // The table: the error rows (what RulesFor gives by default), then 2 warning and 3 silently-off rows.
  CHECK(RulesFor(Framework::kMegatronBridge).size() + 5 == MegatronBridgeRules().size());
  CHECK(RulesFor(Framework::kMegatronBridge, Severity::kWarning).size() == 2);
  CHECK(RulesFor(Framework::kMegatronBridge, Severity::kSilentlyOff).size() == 3);
  for (const Rule& rule : RulesFor(Framework::kMegatronBridge)) CHECK(rule.severity == Severity::kError);
  for (const Rule& rule : MegatronBridgeRules()) CHECK(std::string(rule.name).rfind("mb_", 0) == 0);
}

TEST_CASE("megatron rules: every rule accepts one layout and rejects another with its message") {
  std::set<std::string> covered;
  for (const Case& c : kCases) {
    CAPTURE(std::string(c.rule));
    std::string msg;
    CHECK_FALSE(Fails(c, c.pass, nullptr));
    REQUIRE(Fails(c, c.fail, &msg));
    CHECK_MESSAGE(msg.find(c.fragment) != std::string::npos, msg);
    covered.insert(c.rule);
  }
  for (const Rule& r : MegatronBridgeRules()) CHECK_MESSAGE(covered.count(r.name) == 1, r.name);
}

TEST_CASE("megatron rules: framework warnings (CUDA_DEVICE_MAX_CONNECTIONS on Hopper and EP with TP without SP)") {
  BaseCase base;
  auto& [m, s, l, sys, ctx] = base;
  CHECK(FindingMessages(ctx, Severity::kWarning).empty());  // emitted: CDMC 1 for TP 4 on H100
  l.mb.cuda_device_max_connections = 8;
  auto w = FindingMessages(ctx, Severity::kWarning);
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("CUDA_DEVICE_MAX_CONNECTIONS=8 on h100-sxm with TP 4") != std::string::npos);
  SystemSpec b200 = sys;
  b200.gpu.compute_capability = 10.0;  // the generation is the capability, not the name
  RuleContext on_b200{m, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &b200};
  CHECK(FindingMessages(on_b200, Severity::kWarning).empty());
  // A Hopper GPU under another name (a site's own file) and MI300X (ROCm reports 9.4) are
  // before Blackwell: the warning stays (it named the GPU "b200" and passed, before).
  SystemSpec renamed = sys;
  renamed.gpu.name = "b200-looking-name";
  RuleContext on_renamed{m, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &renamed};
  CHECK(FindingMessages(on_renamed, Severity::kWarning).size() == 1);
  const SystemSpec mi300x = LoadSystem("mi300x-8");
  CHECK(mi300x.gpu.compute_capability == doctest::Approx(9.4));
  RuleContext on_mi300x{m, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &mi300x};
  CHECK(FindingMessages(on_mi300x, Severity::kWarning).size() == 1);
  m = Moe();
  l.mb.cuda_device_max_connections = 1;
  l.ep = 8;
  l.etp = 1;
  l.sequence_parallel = false;
  w = FindingMessages(ctx, Severity::kWarning);
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("should use sequence_parallel: true") != std::string::npos);
}

TEST_CASE("megatron rules: warnings and silently-off settings are findings with their source and never failures") {
  BaseCase base;
  auto& [m, s, l, sys, ctx] = base;
  CHECK(FindingMessages(ctx, Severity::kSilentlyOff).empty());
  l.sequence_parallel = false;  // tp_comm_overlap stays true as emitted for TP 4 with SP
  const std::vector<std::string> off = FindingMessages(ctx, Severity::kSilentlyOff);
  REQUIRE(off.size() == 1);
  CHECK(off[0] == "comm_overlap.tp_comm_overlap: true is switched off silently: TP overlap needs sequence_parallel: "
                  "true (its all-gather/reduce-scatter is what overlaps) [MB training/comm_overlap.py:441-451]");
  CHECK(Findings(ctx, Severity::kSilentlyOff)[0]->name == std::string("mb_tp_comm_overlap_needs_tp_sp_te"));
  CHECK(AllFailures(ctx).empty());  // a finding does not make the layout invalid
  l.mb.cuda_device_max_connections = 8;
  CHECK(FindingMessages(ctx, Severity::kWarning).size() == 1);
  CHECK(FirstFailure(ctx) == nullptr);
  // The AutoModel table has one findings row (sequence_parallel_needs_tp, silently off), not
  // among its rules; a TP 4 layout with sequence parallelism has no finding.
  Layout am;
  am.tp = 4;
  am.dp = 8;
  am.sequence_parallel = true;
  RuleContext am_ctx{m, s, am, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  CHECK(RulesFor(Framework::kAutoModel).size() + 1 == AutoModelRules().size());
  CHECK(Findings(am_ctx, Severity::kWarning).empty());
  CHECK(Findings(am_ctx, Severity::kSilentlyOff).empty());
  am.tp = 1;
  am.dp = 32;
  REQUIRE(Findings(am_ctx, Severity::kSilentlyOff).size() == 1);
  CHECK(Findings(am_ctx, Severity::kSilentlyOff)[0]->name == std::string("sequence_parallel_needs_tp"));
}

TEST_CASE("megatron rules: ApplyEmittedSettings derives overlap flags and the launch environment") {
  Layout l = Base();
  l.vpp = 5;
  search::ApplyEmittedSettings(l, H100());
  CHECK(l.mb.overlap_p2p_comm == Tri::kTrue);
  CHECK(l.mb.batch_p2p_comm == Tri::kFalse);
  CHECK(l.mb.tp_comm_overlap == Tri::kTrue);
  CHECK(l.mb.overlap_grad_reduce == Tri::kTrue);
  CHECK(l.mb.bucket_size == 134217728);
  CHECK(l.mb.cuda_device_max_connections == 1);
  l.vpp = 1;
  l.tp = 1;
  l.sequence_parallel = false;
  l.mb.use_megatron_fsdp = true;
  SystemSpec gb200 = H100();
  gb200.gpu.compute_capability = 10.0;
  search::ApplyEmittedSettings(l, gb200);
  CHECK(l.mb.overlap_p2p_comm == Tri::kFalse);
  CHECK(l.mb.batch_p2p_comm == Tri::kTrue);
  CHECK(l.mb.tp_comm_overlap == Tri::kFalse);
  CHECK(l.mb.dist_use_megatron_fsdp == Tri::kTrue);
  CHECK(l.mb.ckpt_format == MbCkptFormat::kFsdpDtensor);
  CHECK(l.mb.average_in_collective == Tri::kFalse);
  CHECK(l.mb.cuda_device_max_connections == 32);
  search::ApplyEmittedSettings(l, H100());
  CHECK(l.mb.cuda_device_max_connections == 8);  // never 1 under Megatron FSDP
}

TEST_CASE("megatron rules: no TP overlap for a TP group larger than the NVLink domain") {
  // Transformer Engine's userbuffers need NVLink peer memory: TP 16 over two 8-GPU DGX nodes
  // is not overlapped; TP 16 inside a 72-GPU NVL72 domain is.
  Layout l = Base();
  l.tp = 16;
  l.dp = 1;
  SystemSpec dgx = H100();
  dgx.scaleup_domain_gpus = 8;
  search::ApplyEmittedSettings(l, dgx);
  CHECK(l.mb.tp_comm_overlap == Tri::kFalse);
  SystemSpec nvl = dgx;
  nvl.scaleup_domain_gpus = 72;
  search::ApplyEmittedSettings(l, nvl);
  CHECK(l.mb.tp_comm_overlap == Tri::kTrue);
}
