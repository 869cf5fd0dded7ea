// Every AutoModel rule has a layout it accepts and one it rejects, with the message checked.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include "fixtures/models.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/model.hpp"
#include "meshplan/rules.hpp"
#include "meshplan/search.hpp"

using namespace meshplan;

namespace {

ModelSpec Dense() { return test::Llama3_70B(); }
ModelSpec Moe() { return test::Qwen3_30B_A3B(); }
/// Qwen3-Next as planner/model/adapters/qwen3_next.cpp reads it (the committed config, 48
/// layers: Gated DeltaNet on 36, gated attention on every 4th).
ModelSpec Qwen3Next() { return LoadModel(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/arch/qwen3-next-80b-a3b.json"); }

TrainSetup Setup(int64_t gpus = 32, int64_t seq = 8192, int64_t gbs = 512) {
  TrainSetup s;
  s.num_gpus = gpus;
  s.seq_len = seq;
  s.global_batch = gbs;
  return s;
}

// 32 GPUs: fsdp2 tp4 pp2 cp1 dp4, lbs 8, 1f1b.
Layout Base() {
  Layout l;
  l.tp = 4;
  l.pp = 2;
  l.dp = 4;
  l.local_batch_size = 8;
  return l;
}

struct Case {
  const char* rule;
  const char* fragment;
  std::function<void(ModelSpec&, TrainSetup&, Layout&)> pass;
  std::function<void(ModelSpec&, TrainSetup&, Layout&)> fail;
  AutoModelVersion version = AutoModelVersion::kV05;
  const char* system = "dgx-h100";  ///< the system both layouts are checked on
};

void Nothing(ModelSpec&, TrainSetup&, Layout&) {}

const Case kCases[] = {
    {"axes_positive", "every mesh axis must be >= 1", Nothing, [](auto&, auto&, Layout& l) { l.cp = 0; }},
    {"world_divisible_by_model_parallel", "world_size (30) must be divisible by tp_size * cp_size * pp_size",
     Nothing, [](auto&, TrainSetup& s, auto&) { s.num_gpus = 30; }},
    {"ddp_data_parallel_only", "ddp does not support tensor parallelism",
     [](auto&, auto&, Layout& l) { l = Layout{}; l.strategy = Strategy::kDdp; l.dp = 32; l.local_batch_size = 4; },
     [](auto&, auto&, Layout& l) { l.strategy = Strategy::kDdp; }},
    {"megatron_fsdp_no_pp_ep", "megatron_fsdp does not support pipeline parallelism",
     [](auto&, auto&, Layout& l) { l = Layout{}; l.strategy = Strategy::kMegatronFsdp; l.dp = 32; l.local_batch_size = 4; },
     [](auto&, auto&, Layout& l) { l.strategy = Strategy::kMegatronFsdp; }},
    {"megatron_fsdp_pure_dp", "supported for pure data parallelism only",
     [](auto&, auto&, Layout& l) { l = Layout{}; l.strategy = Strategy::kMegatronFsdp; l.dp = 32; l.local_batch_size = 4; },
     [](auto&, auto&, Layout& l) { l.strategy = Strategy::kMegatronFsdp; l.pp = 1; l.dp = 8; }},
    {"hsdp_fsdp2_only", "dp_replicate_size=2 is only supported with strategy fsdp2",
     [](auto&, auto&, Layout& l) { l.dp_replicate = 2; },
     [](auto&, auto&, Layout& l) { l = Layout{}; l.strategy = Strategy::kDdp; l.dp = 32; l.dp_replicate = 2; }},
    {"hsdp_divides_dp", "dp_size=4 must be a multiple of dp_replicate_size=3", Nothing,
     [](auto&, auto&, Layout& l) { l.dp_replicate = 3; }},
    {"hsdp_not_pure_replication", "dp_replicate_size=4 must be less than dp_size=4",
     [](auto&, auto&, Layout& l) { l.dp_replicate = 2; }, [](auto&, auto&, Layout& l) { l.dp_replicate = 4; }},
    {"megatron_fsdp_no_checkpointing", "megatron_fsdp does not apply activation_checkpointing",
     [](auto&, auto&, Layout& l) { l = Layout{}; l.strategy = Strategy::kMegatronFsdp; l.dp = 32; l.local_batch_size = 4; },
     [](auto&, auto&, Layout& l) { l = Layout{}; l.strategy = Strategy::kMegatronFsdp; l.dp = 32; l.local_batch_size = 4; l.recompute = Recompute::kFull; }},
    {"selective_checkpointing_strategy", "selective is supported only for fsdp2, not ddp",
     [](auto&, auto&, Layout& l) { l.recompute = Recompute::kSelective; },
     [](auto&, auto&, Layout& l) { l = Layout{}; l.strategy = Strategy::kDdp; l.dp = 32; l.local_batch_size = 4; l.recompute = Recompute::kSelective; },
     AutoModelVersion::kV04},
    {"tp_divides_heads", "num_attention_heads (40) must be divisible by tp_size (16)",
     [](ModelSpec& m, auto&, auto&) { m.num_attention_heads = 40; m.num_key_value_heads = 40; },
     [](ModelSpec& m, auto&, Layout& l) { m.num_attention_heads = 40; m.num_key_value_heads = 80; l.tp = 16; l.pp = 1; l.dp = 2; }},
    {"tp_divides_kv_heads", "num_key_value_heads (8) must be divisible by tp_size (16)", Nothing,
     [](auto&, auto&, Layout& l) { l.tp = 16; l.pp = 1; l.dp = 2; }},
    {"moe_no_tensor_parallel", "tp_size=4 on MoE model Qwen3MoeForCausalLM",
     [](ModelSpec& m, auto&, Layout& l) { m = Moe(); l.tp = 1; l.dp = 16; },
     [](ModelSpec& m, auto&, auto&) { m = Moe(); }},
    {"ep_requires_moe", "Expert parallelism (ep_size=2) requires a MoE model", Nothing,
     [](auto&, auto&, Layout& l) { l.ep = 2; }},
    {"ep_divides_experts", "n_routed_experts 128 must be divisible by expert_parallel_degree (ep_size) 3",
     [](ModelSpec& m, auto&, Layout& l) { m = Moe(); l.tp = 1; l.pp = 1; l.dp = 32; l.ep = 32; },
     [](ModelSpec& m, TrainSetup& s, Layout& l) { m = Moe(); s.num_gpus = 24; l.tp = 1; l.pp = 1; l.dp = 24; l.ep = 3; }},
    {"ep_divides_non_pp_ranks", "non_pp_size=dp_size * cp_size * tp_size=4 * 1 * 1 = 4 must be a multiple of ep_size=8",
     [](ModelSpec& m, TrainSetup& s, Layout& l) { m = Moe(); s.num_gpus = 32; l.tp = 1; l.pp = 8; l.dp = 4; l.ep = 4; l.local_batch_size = 8; },
     [](ModelSpec& m, TrainSetup& s, Layout& l) { m = Moe(); s.num_gpus = 32; l.tp = 1; l.pp = 8; l.dp = 4; l.ep = 8; l.local_batch_size = 8; }},
    // DeepEP v1.2.1's kernel configurations: 24 ranks yes, 12 no (a 96-expert MoE on 24 GPUs);
    // hybridep at 12 is accepted.
    {"deepep_ep_ranks", "deepep (the default with DeepEP installed) has no kernel configuration for ep_size 12",
     [](ModelSpec& m, TrainSetup& s, Layout& l) { m = Moe(); m.num_experts = 96; s.num_gpus = 24; s.global_batch = 192;
                                                  l.tp = 1; l.pp = 1; l.dp = 24; l.ep = 24; },
     [](ModelSpec& m, TrainSetup& s, Layout& l) { m = Moe(); m.num_experts = 96; s.num_gpus = 24; s.global_batch = 192;
                                                  l.tp = 1; l.pp = 1; l.dp = 24; l.ep = 12; }},
    {"deepep_ep_ranks", "has no kernel configuration for ep_size 12",
     [](ModelSpec& m, TrainSetup& s, Layout& l) { m = Moe(); m.num_experts = 96; s.num_gpus = 24; s.global_batch = 192;
                                                  l.tp = 1; l.pp = 1; l.dp = 24; l.ep = 12;
                                                  l.am_backend.dispatcher = AmDispatcher::kHybridEP; },
     [](ModelSpec& m, TrainSetup& s, Layout& l) { m = Moe(); m.num_experts = 96; s.num_gpus = 24; s.global_batch = 192;
                                                  l.tp = 1; l.pp = 1; l.dp = 24; l.ep = 12; }},
    // DeepEP's NVLink peers share a node (CUDA IPC): on GB200's 4-GPU trays deepep at EP 4 is
    // valid (AutoModel has no GPU check; Megatron-Bridge's own refuses GB200), EP 8 is not.
    {"deepep_nvl_peers_in_node", "deepep with ep_size 8 needs its first 8 EP ranks on one node",
     [](ModelSpec& m, auto&, Layout& l) { m = Moe(); l.tp = 1; l.pp = 1; l.dp = 32; l.ep = 4; },
     [](ModelSpec& m, auto&, Layout& l) { m = Moe(); l.tp = 1; l.pp = 1; l.dp = 32; l.ep = 8; },
     AutoModelVersion::kV05, "gb200-nvl72"},
    {"cp_divides_sequence", "CP sequence length 8194 must be divisible by 2 * cp_size = 4",
     [](auto&, auto&, Layout& l) { l.cp = 2; l.dp = 2; },
     [](auto&, TrainSetup& s, Layout& l) { s.seq_len = 8194; l.cp = 2; l.dp = 2; }},
    {"cp_no_sliding_window", "cp_size=2 with sliding_window=128 on 18 layers",
     [](ModelSpec& m, auto&, Layout& l) { m.sliding_window = 128; m.num_sliding_window_layers = 18; l.dp = 4; },
     [](ModelSpec& m, auto&, Layout& l) { m.sliding_window = 128; m.num_sliding_window_layers = 18; l.cp = 2; l.dp = 2; }},
    // Llama 4: AutoModel trains the transformers module (capabilities.py::validate_for_mesh).
    {"ep_needs_automodel_moe", "requires a MoE model, but Llama4ForConditionalGeneration does not inherit from MoEFSDPSyncMixin",
     [](ModelSpec& m, auto&, Layout& l) { m = Moe(); m.architecture = Architecture::kLlama4; m.architecture_name = "Llama4ForConditionalGeneration"; l.tp = 1; l.pp = 1; l.dp = 32; },
     [](ModelSpec& m, auto&, Layout& l) { m = Moe(); m.architecture = Architecture::kLlama4; m.architecture_name = "Llama4ForConditionalGeneration"; l.tp = 1; l.pp = 1; l.dp = 32; l.ep = 2; }},
    {"pp_needs_pp_plan", "Pipeline parallelism (pp_size=2) requires a _pp_plan attribute on Llama4ForConditionalGeneration",
     [](ModelSpec& m, auto&, Layout& l) { m.architecture = Architecture::kLlama4; m.architecture_name = "Llama4ForConditionalGeneration"; l.pp = 1; l.dp = 8; },
     [](ModelSpec& m, auto&, Layout&) { m.architecture = Architecture::kLlama4; m.architecture_name = "Llama4ForConditionalGeneration"; }},
    {"cp_no_chunked_attention", "cp_size=2 with attention_chunk_size=8192 on 36 layers and seq_len 16384",
     [](ModelSpec& m, auto&, Layout& l) { m.attention_chunk_size = 8192; m.num_chunked_attention_layers = 36; l.cp = 2; l.dp = 2; },
     [](ModelSpec& m, TrainSetup& s, Layout& l) { m.attention_chunk_size = 8192; m.num_chunked_attention_layers = 36; s.seq_len = 16384; l.cp = 2; l.dp = 2; }},
    // Qwen3-Next: AutoModel's apply_cp skips its Gated DeltaNet layers (no CP-aware linear_attn).
    {"gdn_cp_needs_cp_aware_linear_attn",
     "cp_size=2 on Qwen3NextForCausalLM: apply_cp finds no CP-aware linear_attn on its 36 Gated DeltaNet layers",
     [](ModelSpec& m, auto&, Layout& l) { m = Qwen3Next(); l.tp = 1; l.dp = 16; },
     [](ModelSpec& m, auto&, Layout& l) { m = Qwen3Next(); l.tp = 1; l.cp = 2; l.dp = 8; }},
    // Nemotron 3 Nano (64 Mamba-2 heads, 8 groups): MambaContextParallel's head and group split.
    {"nemotron_h_cp_divides_mamba_heads", "mamba_num_heads (48) must be divisible by cp_size (32)",
     [](ModelSpec& m, auto&, Layout& l) { m = LoadModel("nemotron-3-nano"); l.tp = 1; l.pp = 1; l.cp = 2; l.dp = 16; },
     [](ModelSpec& m, auto&, Layout& l) { m = LoadModel("nemotron-3-nano"); m.mamba.num_heads = 48; l.tp = 1; l.pp = 1; l.cp = 32; l.dp = 1; }},
    {"nemotron_h_cp_mamba_groups", "n_groups (3) and cp_size (2) must divide one another",
     [](ModelSpec& m, auto&, Layout& l) { m = LoadModel("nemotron-3-nano"); l.tp = 1; l.pp = 1; l.cp = 2; l.dp = 16; },
     [](ModelSpec& m, auto&, Layout& l) { m = LoadModel("nemotron-3-nano"); m.mamba.n_groups = 3; l.tp = 1; l.pp = 1; l.cp = 2; l.dp = 16; }},
    {"nemotron_h_no_sequence_parallel", "Sequence parallelism is not supported for NemotronHForCausalLM",
     [](ModelSpec& m, auto&, Layout& l) { m = LoadModel("nemotron-3-nano"); l.tp = 1; l.pp = 1; l.dp = 32; },
     [](ModelSpec& m, auto&, Layout& l) { m = LoadModel("nemotron-3-nano"); l.tp = 2; l.pp = 1; l.dp = 16; l.sequence_parallel = true; }},
    // DeepSeek-V4 Flash: AutoModel's CP for it needs the TileLang attention backend.
    {"dsv4_cp_needs_tilelang", "Context parallelism (cp_size=2) for DeepseekV4ForCausalLM requires the TileLang attention backend",
     [](ModelSpec& m, auto&, Layout& l) { m = LoadModel("deepseek-v4-flash"); l.tp = 1; l.cp = 2; l.dp = 8; l.am_backend.attn_tilelang = true; },
     [](ModelSpec& m, auto&, Layout& l) { m = LoadModel("deepseek-v4-flash"); l.tp = 1; l.cp = 2; l.dp = 8; }},
    {"sequence_parallel_fsdp2_only", "Unknown options for strategy 'megatron_fsdp': ['sequence_parallel']",
     [](auto&, auto&, Layout& l) { l.sequence_parallel = true; },
     [](auto&, auto&, Layout& l) { l = Layout{}; l.strategy = Strategy::kMegatronFsdp; l.dp = 32; l.local_batch_size = 4; l.sequence_parallel = true; }},
    {"sequence_parallel_needs_tp", "sequence_parallel: true does nothing with tp_size 1", Nothing,
     [](auto&, auto&, Layout& l) { l.tp = 1; l.sequence_parallel = true; }},
    {"sequence_parallel_dense_only", "sequence_parallel=True is not supported by the custom MoE TP path",
     [](ModelSpec& m, auto&, Layout& l) { m = Moe(); l.tp = 1; l.dp = 16; },
     [](ModelSpec& m, auto&, Layout& l) { m = Moe(); l.tp = 1; l.dp = 16; l.sequence_parallel = true; }},
    {"batch_sizes_positive", "local_batch_size (0) and pp_microbatch_size (1) must be >= 1", Nothing,
     [](auto&, auto&, Layout& l) { l.local_batch_size = 0; }},
    {"global_batch_divisible", "global_batch_size (500) must be divisible by local_batch_size * dp_size (8 * 4 = 32)",
     Nothing, [](auto&, TrainSetup& s, auto&) { s.global_batch = 500; }},
    {"fp8_token_rows", "1 x 4097 / 1 = 4097 must be a multiple of 16 (torch._scaled_mm)",
     [](auto&, TrainSetup& s, auto&) { s.precision = Precision::kFp8; },
     [](auto&, TrainSetup& s, auto&) { s.precision = Precision::kFp8; s.seq_len = 4097; }},
    {"precision_supported", "fp8 requested but NVIDIA A100 SXM4 80GB has no FP8 tensor cores",
     Nothing, [](auto&, TrainSetup& s, auto&) { s.precision = Precision::kFp8; }, AutoModelVersion::kV05, "dgx-a100"},
    {"pp_no_tied_embeddings", "does not support tie_word_embeddings=True",
     [](ModelSpec& m, auto&, Layout& l) { m.tie_word_embeddings = true; l.pp = 1; l.dp = 8; },
     [](ModelSpec& m, auto&, auto&) { m.tie_word_embeddings = true; }},
    {"pp_microbatch_divides_local_batch", "Batch size 8 must be divisible by pp_microbatch_size 3",
     [](auto&, auto&, Layout& l) { l.pp_microbatch_size = 4; },
     [](auto&, auto&, Layout& l) { l.pp_microbatch_size = 3; }},
    {"pp_enough_microbatches", "pp_batch_size 8 // pp_microbatch_size 8 must be >= pp_size 2",
     [](auto&, auto&, Layout& l) { l.pp_microbatch_size = 4; },
     [](auto&, auto&, Layout& l) { l.pp_microbatch_size = 8; }},
    {"pp_stages_divisible", "Number of virtual stages (27 = ceil(80 layers / layers_per_stage 3)) must be divisible",
     [](auto&, auto&, Layout& l) { l.pp_schedule = PpSchedule::kInterleaved1F1B; l.layers_per_stage = 4; },
     [](auto&, auto&, Layout& l) { l.pp_schedule = PpSchedule::kInterleaved1F1B; l.layers_per_stage = 3; }},
    {"pp_stages_fit_layers", "Number of stages (0) cannot exceed number of layers (80)",
     [](auto&, auto&, Layout& l) { l.pp_schedule = PpSchedule::kInterleaved1F1B; l.layers_per_stage = 20; l.stage_rounding = StageRounding::kDown; },
     [](auto&, auto&, Layout& l) { l.pp_schedule = PpSchedule::kInterleaved1F1B; l.layers_per_stage = 41; l.stage_rounding = StageRounding::kDown; l.pp = 4; l.dp = 2; l.local_batch_size = 8; }},
    {"pp_single_stage_schedule", "Single stage schedule requires exactly 1 stage per rank",
     [](auto&, auto&, Layout& l) { l.layers_per_stage = 40; },
     [](auto&, auto&, Layout& l) { l.layers_per_stage = 4; }},
    {"pp_multi_stage_schedule", "Multi-stage schedule requires at least 2 stages per rank",
     [](auto&, auto&, Layout& l) { l.pp_schedule = PpSchedule::kInterleaved1F1B; },
     [](auto&, auto&, Layout& l) { l.pp_schedule = PpSchedule::kInterleaved1F1B; l.layers_per_stage = 40; }},
    // pp 2: 8 micro-batches are 4 rounds of 2; 5 are max(1, 5 // 2) = 2 rounds, 5 % 2 = 1.
    {"pp_interleaved_microbatch_rounds",
     "Interleaved 1F1B requires the number of microbatches to be a multiple of the number of rounds (2), but got 5",
     [](auto&, auto&, Layout& l) { l.pp_schedule = PpSchedule::kInterleaved1F1B; },
     [](auto&, TrainSetup& s, Layout& l) { l.pp_schedule = PpSchedule::kInterleaved1F1B; l.local_batch_size = 5; s.global_batch = 20; }},
};

}  // namespace

TEST_CASE("rules: the base layout is valid") {
  ModelSpec m = Dense();
  TrainSetup s = Setup();
  Layout l = Base();
  const Rule* r = FirstFailure({m, s, l});
  CHECK_MESSAGE(r == nullptr, (r ? r->name : ""));
}

TEST_CASE("rules: every rule accepts one layout and rejects another and with its message") {
  std::set<std::string> covered;
  for (const Case& c : kCases) {
    const std::string rule_name = c.rule;
    CAPTURE(rule_name);
    REQUIRE(FindRule(c.rule) != nullptr);
    covered.insert(c.rule);
    {
      ModelSpec m = Dense();
      TrainSetup s = Setup();
      Layout l = Base();
      c.pass(m, s, l);
      const SystemSpec sys = LoadSystem(c.system);
      RuleContext ctx{m, s, l, c.version, MBridgeVersion::kMain, &sys};
      const Rule* rule = FindRule(c.rule);
      CHECK(rule->check(ctx));
      const Rule* first = FirstFailure(ctx);
      if (c.version == AutoModelVersion::kV05) CHECK_MESSAGE(first == nullptr, std::string(first ? first->name : ""));
    }
    {
      ModelSpec m = Dense();
      TrainSetup s = Setup();
      Layout l = Base();
      c.fail(m, s, l);
      const SystemSpec sys = LoadSystem(c.system);
      RuleContext ctx{m, s, l, c.version, MBridgeVersion::kMain, &sys};
      const Rule* rule = FindRule(c.rule);
      REQUIRE_FALSE(rule->check(ctx));
      const std::string msg = rule->explain(ctx);
      CAPTURE(msg);
      CHECK(msg.find(c.fragment) != std::string::npos);
      bool listed = false;
      if (rule->severity == Severity::kError) {
        for (const Rule* f : AllFailures(ctx)) listed = listed || std::string(f->name) == c.rule;
      } else {  // a finding (warning, silently off): reported beside the verdict, never a failure
        for (const Rule* f : Findings(ctx, rule->severity)) listed = listed || std::string(f->name) == c.rule;
      }
      CHECK(listed);
    }
  }
  // No rule is left without a case.
  for (const Rule& r : AutoModelRules()) {
    CAPTURE(r.name);
    CHECK(covered.count(r.name) == 1);
    CHECK(std::string(r.source).size() > 5);
  }
}

TEST_CASE("rules: interleaved 1F1B needs whole rounds of micro-batches (torch ScheduleInterleaved1F1B)") {
  // GB200 NVL72, 72 GPUs: tp 4, pp 9, dp 2, interleaved1f1b (18 stages of Llama-3-70B's 80
  // layers), pp_microbatch_size 1. 64 micro-batches: rounds = max(1, 64 // 9) = 7, 64 % 7 = 1.
  const SystemSpec sys = LoadSystem("gb200-nvl72");
  ModelSpec m = Dense();
  Layout l;
  l.tp = 4;
  l.pp = 9;
  l.dp = 2;
  l.pp_schedule = PpSchedule::kInterleaved1F1B;
  l.pp_microbatch_size = 1;
  l.local_batch_size = 64;
  TrainSetup s = Setup(72, 4096, 128);
  const Rule* rule = FindRule("pp_interleaved_microbatch_rounds");
  REQUIRE(rule != nullptr);
  CHECK(std::string(rule->source) == "torch/distributed/pipelining/schedules.py::ScheduleInterleaved1F1B.__init__");
  RuleContext ctx{m, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
  CHECK(l.pp_microbatches() == 64);
  CHECK_FALSE(rule->check(ctx));
  const Rule* first = FirstFailure(ctx);
  REQUIRE(first != nullptr);
  CHECK(std::string(first->name) == "pp_interleaved_microbatch_rounds");
  CHECK(rule->explain(ctx) ==
        "Interleaved 1F1B requires the number of microbatches to be a multiple of the number of rounds (7), but got "
        "64: local_batch_size 64 // pp_microbatch_size 1 = 64 microbatches, rounds = max(1, 64 // pp_size 9) = 7; "
        "use a local_batch_size whose microbatch count is a multiple of pp_size (63 or 72 with pp_microbatch_size "
        "1), or pp_schedule: 1f1b with layers_per_stage: null");
  // 63 = 7 rounds of 9 and 72 = 8 rounds of 9 are whole; so is 16 (< 2 x 9: one round of 16).
  for (const int64_t n : {int64_t{63}, int64_t{72}, int64_t{16}}) {
    CAPTURE(n);
    l.local_batch_size = n;
    s.global_batch = 2 * n;
    CHECK(rule->check(ctx));
    const Rule* f = FirstFailure(ctx);
    CHECK_MESSAGE(f == nullptr, (f ? f->name : ""));
  }
  // With pp_microbatch_size 2, local_batch_size 128 is 64 micro-batches again: refused.
  l.pp_microbatch_size = 2;
  l.local_batch_size = 128;
  CHECK_FALSE(rule->check(ctx));
  // 1f1b runs any count of at least pp micro-batches (Schedule1F1B has no rounds).
  l.pp_microbatch_size = 1;
  l.local_batch_size = 64;
  l.pp_schedule = PpSchedule::k1F1B;
  CHECK(rule->check(ctx));
}

TEST_CASE("rules: the AutoModel plan on 72 GB200 GPUs emits no interleaved layout with a partial round") {
  // What issue #24 saw: Llama-3.1-70B, 72 GPUs, seq 4096, global batch 1024.
  PlanRequest req;
  req.model = LoadModel("llama3.1-70b");
  req.system = LoadSystem("gb200-nvl72");
  req.setup = Setup(72, 4096, 1024);
  req.top_n = 50;
  const PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  const Rule* rule = FindRule("pp_interleaved_microbatch_rounds");
  REQUIRE(rule != nullptr);
  for (const Candidate& c : r.top) {
    CAPTURE(Describe(c.layout));
    const RuleContext ctx{req.model, req.setup, c.layout, req.version, req.mb_version, &req.system};
    CHECK(rule->check(ctx));
    CHECK(FirstFailure(ctx) == nullptr);
  }
  // And no layout the space enumerates breaks it.
  for (const Layout& l : EnumerateLayouts(req)) {
    if (l.pp == 1 || l.pp_schedule != PpSchedule::kInterleaved1F1B) continue;
    const int64_t n = l.pp_microbatches();
    CHECK(n % std::max<int64_t>(1, n / l.pp) == 0);
  }
}

TEST_CASE("rules: EP rule by AutoModel version") {
  ModelSpec m = Moe();
  TrainSetup s = Setup(32);
  const Rule* r = FindRule("ep_divides_non_pp_ranks");
  REQUIRE(r != nullptr);
  // tp 2, dp 16, ep 32: current AutoModel folds tp into the EP ranks (16*1*2 = 32), v0.4 did not.
  Layout l;
  l.tp = 2;
  l.dp = 16;
  l.ep = 32;
  CHECK(r->check({m, s, l, AutoModelVersion::kV05}));
  CHECK_FALSE(r->check({m, s, l, AutoModelVersion::kV04}));
  CHECK(r->explain({m, s, l, AutoModelVersion::kV04}).find("v0.4 and earlier need tp_size == 1") != std::string::npos);
  // tp 1, cp 2, dp 16, ep 32: dp*cp = 32, valid in both.
  l.tp = 1;
  l.cp = 2;
  CHECK(r->check({m, s, l, AutoModelVersion::kV05}));
  CHECK(r->check({m, s, l, AutoModelVersion::kV04}));
}

TEST_CASE("layout: AutoModel stage split") {
  Layout l;
  l.pp = 4;
  l.pp_schedule = PpSchedule::kInterleaved1F1B;
  l.layers_per_stage = 4;  // 80 layers -> 20 stages, 5 per rank (automodel.md 1.5 A)
  StageSplit s = SplitStages(80, l);
  CHECK(s.num_stages == 20);
  CHECK(s.stages_per_rank == 5);
  CHECK(s.max_layers_per_rank == 20);
  // DeepSeek-V3 recipe: 61 layers, lps 2 -> 31 stages, rounded down to 28 = 7 per rank;
  // 61 = 28*2 + 5: stages 0..4 hold 3 layers, so rank 0 holds stages 0,4,8,...: 3+3+2*5 = 16.
  l.layers_per_stage = 2;
  l.stage_rounding = StageRounding::kDown;
  s = SplitStages(61, l);
  CHECK(s.num_stages == 28);
  CHECK(s.stages_per_rank == 7);
  CHECK(s.first_rank_layers == 16);
  CHECK(s.last_rank_layers == 15);
  CHECK(s.max_layers_per_rank == 16);
  // 1f1b default: 80 layers over 3 ranks -> 27, 27, 26.
  Layout one;
  one.pp = 3;
  s = SplitStages(80, one);
  CHECK(s.num_stages == 3);
  CHECK(s.first_rank_layers == 27);
  CHECK(s.last_rank_layers == 26);
}

TEST_CASE("layout: Megatron-Bridge VPP gives exactly vpp chunks per rank") {
  // DeepSeek-V3's 61 layers on PP 8: Megatron-Core builds vpp model chunks per rank for any
  // vpp (a pipeline_model_parallel_layout splits the layers unevenly). The cost view used to
  // borrow AutoModel's layers_per_stage arithmetic, which turned vpp 4, 5 and 6 into 7 chunks.
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.pp = 8;
  for (const int64_t vpp : {4, 5, 7}) {
    l.vpp = vpp;
    const StageSplit s = SplitStages(61, l);
    INFO("vpp " << vpp);
    CHECK(s.num_stages == 8 * vpp);
    CHECK(s.stages_per_rank == vpp);
    // 61 = 8·vpp·1 + (61 − 8·vpp): the first 61 − 8·vpp chunks hold 2 layers. Rank 0 holds
    // chunks 0, 8, ...: vpp 4 -> 29 two-layer chunks, all 4 of rank 0's: 8 layers; vpp 5 -> 21:
    // chunks 0, 8, 16 of rank 0: 5 + 3 = 8; vpp 7 -> 5: chunk 0 only: 7 + 1 = 8. The last rank
    // (chunks 7, 15, ...): vpp 4 -> 4 + 3 (7, 15, 23 < 29) = 7; vpp 5 -> 5 + 2 = 7; vpp 7 -> 7.
    CHECK(s.first_rank_layers == 8);
    CHECK(s.last_rank_layers == 7);
  }
  // No VPP: 1F1B, one chunk per rank.
  l.vpp = 1;
  CHECK(SplitStages(61, l).stages_per_rank == 1);
}

TEST_CASE("layout: closed-form stage split equals counting stage by stage") {
  for (int64_t layers = 1; layers <= 130; layers += 3) {
    for (int64_t pp : {2, 3, 4, 7, 8, 16}) {
      for (int64_t lps : {0, 1, 2, 3, 5}) {
        for (StageRounding round : {StageRounding::kNone, StageRounding::kUp, StageRounding::kDown}) {
          Layout l;
          l.pp = pp;
          l.pp_schedule = lps == 0 ? PpSchedule::k1F1B : PpSchedule::kInterleaved1F1B;
          l.layers_per_stage = lps;
          l.stage_rounding = round;
          const StageSplit s = SplitStages(layers, l);
          if (s.num_stages <= 0) continue;
          const int64_t base = layers / s.num_stages, extra = layers % s.num_stages;
          int64_t first = 0, last = 0, most = 0;
          for (int64_t r = 0; r < pp; ++r) {
            int64_t n = 0;
            for (int64_t st = r; st < s.num_stages; st += pp) n += base + (st < extra ? 1 : 0);
            if (r == 0) first = n;
            if (r == pp - 1) last = n;
            most = std::max(most, n);
          }
          CAPTURE(layers);
          CAPTURE(pp);
          CAPTURE(lps);
          CHECK(s.first_rank_layers == first);
          CHECK(s.last_rank_layers == last);
          CHECK(s.max_layers_per_rank == most);
        }
      }
    }
  }
}

TEST_CASE("rules: AutoModel CP on Gated DeltaNet layers: Qwen3.5's CP-aware module passes and Qwen3-Next's does not") {
  // nemo_automodel components/moe/parallelizer.py::apply_cp sets _cp_mesh on a linear_attn that
  // has one: Qwen3.5 MoE's CPAwareGatedDeltaNet (qwen3_5_moe/cp_linear_attn.py) has it.
  const Rule* rule = FindRule("gdn_cp_needs_cp_aware_linear_attn");
  REQUIRE(rule != nullptr);
  const TrainSetup s = Setup(32, 8192, 512);
  Layout l = Base();
  l.tp = 1;
  l.cp = 2;
  l.dp = 8;
  const ModelSpec qwen35 = LoadModel(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/models/arch/qwen3.5-35b-a3b.json");
  CHECK(rule->check(RuleContext{qwen35, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, nullptr}));
  const ModelSpec next = Qwen3Next();
  CHECK_FALSE(rule->check(RuleContext{next, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, nullptr}));
  l.cp = 1;
  l.dp = 16;
  CHECK(rule->check(RuleContext{next, s, l, AutoModelVersion::kV05, MBridgeVersion::kMain, nullptr}));
}

namespace meshplan {
TEST_CASE("automodel plans: deepep inside a node where DeepEP has a configuration for ep_size and else hybridep") {
  SystemSpec h100;
  h100.gpus_per_node = 8;
  const ModelSpec q = LoadModel("qwen3-30b-a3b");
  CHECK(automodel::DefaultBackend(q, h100, 8).dispatcher == AmDispatcher::kDeepEP);
  CHECK(automodel::DefaultBackend(q, h100, 4).dispatcher == AmDispatcher::kDeepEP);
  CHECK(automodel::DefaultBackend(q, h100, 6).dispatcher == AmDispatcher::kHybridEP);  // no DeepEP table entry for 6
  CHECK(automodel::DefaultBackend(q, h100, 16).dispatcher == AmDispatcher::kHybridEP);  // EP across nodes
  CHECK_FALSE(automodel::DefaultBackend(q, h100, 8).attn_tilelang);
  // DeepSeek-V4: the TileLang kernels of AutoModel's deepseek_v4 examples.
  CHECK(automodel::DefaultBackend(LoadModel("deepseek-v4-flash"), h100, 8).attn_tilelang);
}
}  // namespace meshplan
