// The layout spaces are the rules' domains: on small worlds, for both frameworks, the complete
// layouts a space enumerates (EnumerateLayouts) that pass every rule are exactly the layouts
// that pass every rule among a brute-force walk over a box of field values: nothing valid
// missed, nothing outside the box emitted.
//
// The box. Every axis size 1..world (tp, cp, pp, dp; dp_replicate and ep too), every DP
// strategy / flavour, SP both ways, every recompute, every micro-batch and local batch below;
// AutoModel schedules with every layers_per_stage 0..L and rounding mode; Megatron VPP 1..L+2.
// Only these restrictions, which are the spaces' own choices rather than rules, narrow it:
//   both: micro-batches are powers of two up to max_micro_batch (AutoModel without PP: the
//     local batch is the micro-batch, any size up to max_micro_batch; pp_microbatch_size and
//     the schedule fields are unused without PP and stay at their defaults);
//   AutoModel: sequence_parallel only with TP > 1 (it means nothing without TP). The layer
//     split depends on the stage count S only, so layouts are compared by S, not by the
//     (layers_per_stage, rounding) pair that reaches it (the space emits one per S);
//   Megatron-Bridge: PP <= num_layers (a decoder layer for every pipeline rank: with
//     account_for_embedding/loss, PP = L + 1 or L + 2 would pass the rules with empty first
//     and last stages); one layer split per PP (even, else embedding and loss accounted, else
//     an explicit layout); ETP unset or 1, and 1 only with TP > 1 on a MoE model (else it is
//     the same as unset); with TP > 1 sequence parallel is on exactly where rule
//     mb_sp_divides_sequence allows it (NVIDIA's recipes pair SP with TP); with one
//     data-parallel rank for the dense and the expert parameters every DP flavour is the same
//     layout, so the comparison forgets the flavour there; recompute none, full (uniform, 1
//     layer: what ApplyEmittedSettings writes) or selective with the request's module sets;
//     mtp_layers the model's; with CP every cp_comm_type (p2p left null), a2a+p2p only with the
//     a2a level inside one NVLink domain (search::HierarchicalCpA2aSize), a2a only inside one
//     domain or where a2a+p2p has no such level. Brute-force Megatron layouts get ApplyEmittedSettings,
//     SetMegatronMicroBatch as the space's do.
// The brute force walks the box in rule-stage order and skips the rest of a layout once a rule
// of its stage fails: sound because a rule reads only the fields of its stage and earlier ones,
// the contract the search itself relies on (RuleStage). The tp*cp*pp*dp product is cut first
// with the world-size rule itself, which reads only those four sizes.
#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/models.hpp"
#include "meshplan/rules.hpp"
#include "meshplan/search.hpp"
#include "frameworks/megatron_bridge/space.hpp"

using namespace meshplan;

namespace {

using Key = std::vector<int64_t>;

// --- models: dense with few layers, GQA, MoE, tied embeddings ---

ModelSpec Dense(int64_t layers) {
  ModelSpec m = test::TinyLlama();
  m.name = "dense" + std::to_string(layers);
  m.architecture_name = "LlamaForCausalLM";
  m.num_layers = layers;
  m.num_dense_layers = layers;
  m.num_attention_heads = 8;
  m.num_key_value_heads = 8;
  m.head_dim = 128;
  return m;
}

ModelSpec Gqa() {  // 12 heads, 4 KV heads: TP 3 and 6 divide the heads, not the KV heads
  ModelSpec m = Dense(6);
  m.name = "gqa";
  m.num_attention_heads = 12;
  m.num_key_value_heads = 4;
  m.head_dim = 64;
  m.hidden_size = 768;
  m.intermediate_size = 3072;
  return m;
}

ModelSpec Moe() {  // 8 experts, 4 MoE layers
  ModelSpec m = test::Qwen3_30B_A3B();
  m.name = "moe";
  m.num_layers = 4;
  m.num_experts = 8;
  m.experts_per_token = 2;
  return m;
}

ModelSpec Tied() {  // AutoModel refuses PP with tied embeddings; Megatron-Bridge FSDP2 too
  ModelSpec m = Dense(4);
  m.name = "tied";
  m.tie_word_embeddings = true;
  return m;
}

struct Config {
  ModelSpec model;
  int64_t gpus, seq, gbs;
  Precision precision = Precision::kBf16;
  AutoModelVersion version = AutoModelVersion::kV05;
  MBridgeVersion mb_version = MBridgeVersion::kMain;
  bool modules = false;  ///< Megatron: search the module sets of SearchedRecomputeModules
  bool fsdp2 = false;    ///< Megatron: search torch FSDP2 (PlanRequest::mb_torch_fsdp2)
};

PlanRequest Request(const Config& c, Framework framework) {
  PlanRequest req;
  req.model = c.model;
  req.system = LoadSystem("dgx-h100");
  req.setup.num_gpus = c.gpus;
  req.setup.seq_len = c.seq;
  req.setup.global_batch = c.gbs;
  req.setup.precision = c.precision;
  req.version = c.version;
  req.mb_version = c.mb_version;
  req.framework = framework;
  req.max_micro_batch = 4;
  req.threads = 1;
  if (c.modules) req.mb_recompute_module_sets = search::SearchedRecomputeModules(c.model);
  req.mb_torch_fsdp2 = c.fsdp2;
  return req;
}

RuleContext Ctx(const PlanRequest& req, const Layout& l) {
  return {req.model, req.setup, l, req.version, req.mb_version, &req.system};
}

bool Passes(const PlanRequest& req, const Layout& l, RuleStage stage) {
  return FirstFailureAtStage(Ctx(req, l), stage) == nullptr;
}

// tp * cp * pp * dp == world as rule `world_rule` decides it (the rule reads those four only).
std::vector<Key> Grids(const PlanRequest& req, Framework framework, const char* world_rule) {
  const Rule* rule = FindRule(world_rule);
  REQUIRE(rule != nullptr);
  const int64_t n = req.setup.num_gpus;
  std::vector<Key> out;
  Layout l;
  l.framework = framework;
  for (l.tp = 1; l.tp <= n; ++l.tp) {
    for (l.cp = 1; l.cp <= n; ++l.cp) {
      for (l.pp = 1; l.pp <= n; ++l.pp) {
        for (l.dp = 1; l.dp <= n; ++l.dp) {
          if (rule->check(Ctx(req, l))) out.push_back({l.tp, l.cp, l.pp, l.dp});
        }
      }
    }
  }
  return out;
}

std::string Show(const Key& k) {
  std::ostringstream os;
  for (size_t i = 0; i < k.size(); ++i) os << (i ? " " : "") << k[i];
  return os.str();
}

// Layouts in one set and not the other, at most a few each, for the failure message.
std::string Difference(const std::set<Key>& space, const std::set<Key>& brute, const char* fields) {
  std::ostringstream os;
  int missed = 0, extra = 0;
  for (const Key& k : brute) {
    if (space.count(k) == 0 && missed++ < 5) os << "\n  valid, not enumerated: " << Show(k);
  }
  for (const Key& k : space) {
    if (brute.count(k) == 0 && extra++ < 5) os << "\n  enumerated, outside the box: " << Show(k);
  }
  os << "\n  (" << missed << " missed, " << extra << " extra; fields " << fields << ")";
  return os.str();
}

// --- AutoModel ---

constexpr const char* kAmFields = "strategy tp cp pp dp dp_replicate ep sp recompute lbs pp_mb schedule stages";

Key AmKey(const PlanRequest& req, const Layout& l) {
  const bool pp = l.pp > 1;
  return {int64_t(l.strategy), l.tp, l.cp, l.pp, l.dp, l.dp_replicate, l.ep, l.sequence_parallel, int64_t(l.recompute),
          l.local_batch_size, l.pp_microbatch_size, pp ? int64_t(l.pp_schedule) : 0,
          pp ? SplitStages(req.model.num_layers, l).num_stages : 0};
}

std::set<Key> AmBrute(const PlanRequest& req) {
  const int64_t n = req.setup.num_gpus, layers = req.model.num_layers;
  std::set<Key> out;
  for (const Key& g : Grids(req, Framework::kAutoModel, "world_divisible_by_model_parallel")) {
    for (Strategy st : req.strategies) {
      for (int64_t rep = 1; rep <= n; ++rep) {
        for (int64_t ep = 1; ep <= n; ++ep) {
          Layout mesh;
          mesh.strategy = st;
          mesh.tp = g[0], mesh.cp = g[1], mesh.pp = g[2], mesh.dp = g[3];
          mesh.dp_replicate = rep;
          mesh.ep = ep;
          if (!Passes(req, mesh, RuleStage::kMesh)) continue;
          for (bool sp : {false, true}) {
            if (sp && mesh.tp == 1) continue;  // box: SP only with TP
            for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
              Layout l = mesh;
              l.sequence_parallel = sp;
              l.recompute = rc;
              if (!Passes(req, l, RuleStage::kFeatures)) continue;
              auto leaf = [&](const Layout& x) {
                if (FirstFailure(Ctx(req, x)) == nullptr) out.insert(AmKey(req, x));
              };
              if (l.pp == 1) {
                for (l.local_batch_size = 1; l.local_batch_size <= req.max_micro_batch; ++l.local_batch_size) leaf(l);
                continue;
              }
              for (l.pp_microbatch_size = 1; l.pp_microbatch_size <= req.max_micro_batch; l.pp_microbatch_size *= 2) {
                for (l.local_batch_size = 1; l.local_batch_size <= req.setup.global_batch; ++l.local_batch_size) {
                  for (PpSchedule s : {PpSchedule::k1F1B, PpSchedule::kInterleaved1F1B}) {
                    for (l.layers_per_stage = 0; l.layers_per_stage <= layers; ++l.layers_per_stage) {
                      for (StageRounding r : {StageRounding::kNone, StageRounding::kUp, StageRounding::kDown}) {
                        l.pp_schedule = s;
                        l.stage_rounding = r;
                        leaf(l);
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

// --- Megatron-Bridge ---

constexpr const char* kMbFields =
    "tp cp pp dp vpp split ep etp flavour(-1: one DP rank) sp recompute modules mbs cp_comm hcp_first";

// Distributed optimizer, Megatron FSDP, torch FSDP2, as bits (after ApplyEmittedSettings).
int64_t Flavour(const Layout& l) {
  return int64_t(l.use_distributed_optimizer) | int64_t(l.mb.use_megatron_fsdp) << 1 | int64_t(l.mb.use_torch_fsdp2) << 2;
}

Key MbKey(const PlanRequest& req, const Layout& l) {
  const int64_t n = req.setup.num_gpus;
  const bool one_dp_rank = n / (l.tp * l.pp) == 1 && (!req.model.is_moe() || n / (l.pp * l.ep * l.EffectiveEtp()) == 1);
  return {l.tp, l.cp, l.pp, l.dp, l.vpp, int64_t(l.pp_split), l.ep, l.etp, one_dp_rank ? -1 : Flavour(l),
          l.sequence_parallel, int64_t(l.recompute), l.mb.recompute_modules, l.micro_batch(),
          int64_t(l.mb.cp_comm), l.mb.hcp_first};
}

// The box's layer split: even, else embedding and loss accounted, else an explicit layout.
MbPpSplit BoxSplit(int64_t layers, int64_t pp) {
  if (layers % pp == 0) return MbPpSplit::kEven;
  if ((layers + 2) % pp == 0) return MbPpSplit::kAccountEmbeddingLoss;
  return MbPpSplit::kLayout;
}

bool StrategyAsked(const PlanRequest& req, Strategy s) {
  for (Strategy x : req.strategies) {
    if (x == s) return true;
  }
  return false;
}

std::set<Key> MbBrute(const PlanRequest& req) {
  const int64_t n = req.setup.num_gpus, layers = req.model.num_layers;
  const Rule* sp_rule = FindRule("mb_sp_divides_sequence");
  REQUIRE(sp_rule != nullptr);
  std::vector<std::pair<Recompute, uint32_t>> recomputes = {{Recompute::kNone, 0}, {Recompute::kFull, 0}};
  for (uint32_t m : req.mb_recompute_module_sets) recomputes.push_back({Recompute::kSelective, m});
  std::set<Key> out;
  for (const Key& g : Grids(req, Framework::kMegatronBridge, "mb_world_divisible_by_tp_pp_cp")) {
    const int64_t tp = g[0], cp = g[1], pp = g[2], dp = g[3];
    if (pp > layers) continue;  // box: a decoder layer per pipeline rank
    for (int64_t vpp = 1; vpp <= layers + 2; ++vpp) {
      for (int64_t ep = 1; ep <= n; ++ep) {
        for (int64_t etp : {0, 1}) {
          if (etp == 1 && (tp == 1 || !req.model.is_moe())) continue;  // box: the same as unset
          for (int flavour = 0; flavour < 8; ++flavour) {
            const bool distopt = flavour & 1, mfsdp = flavour & 2, fsdp2 = flavour & 4;
            const Strategy st = mfsdp ? Strategy::kMegatronFsdp : fsdp2 ? Strategy::kFsdp2 : Strategy::kDdp;
            if (!StrategyAsked(req, st) || (fsdp2 && !req.mb_torch_fsdp2)) continue;  // box: the request's
            for (bool sp : {false, true}) {
              Layout mesh;
              mesh.framework = Framework::kMegatronBridge;
              mesh.mtp_layers = req.model.mtp_num_layers;
              mesh.tp = tp, mesh.cp = cp, mesh.pp = pp, mesh.dp = dp;
              mesh.vpp = vpp;
              mesh.pp_split = BoxSplit(layers, pp);
              mesh.ep = ep;
              mesh.etp = etp;
              mesh.use_distributed_optimizer = distopt;
              mesh.mb.use_megatron_fsdp = mfsdp;
              mesh.mb.use_torch_fsdp2 = fsdp2;
              mesh.sequence_parallel = true;
              // box: with TP, SP is on where its rule allows it (rule mb_sp_divides_sequence)
              if (tp > 1 && sp != sp_rule->check(Ctx(req, mesh))) continue;
              mesh.sequence_parallel = sp;
              search::ApplyEmittedSettings(mesh, req.system, req.setup.precision);
              // box: every cp_comm_type with CP (null for p2p), a2a+p2p at the space's a2a level
              std::vector<search::CpCommChoice> comms = {{MbCpComm::kUnset, 0}};
              if (cp > 1) {
                const int64_t a = search::HierarchicalCpA2aSize(req.system, tp, cp);
                if (search::CpGroupInsideDomain(req.system, tp, cp) || a == 0) comms.push_back({MbCpComm::kA2a, 0});
                comms.push_back({MbCpComm::kAllGather, 0});
                if (a > 0) comms.push_back({MbCpComm::kA2aP2p, a});
              }
              for (const search::CpCommChoice& cc : comms) {
              Layout with = mesh;
              search::ApplyCpComm(with, cc);
              if (!Passes(req, with, RuleStage::kMesh)) continue;
              for (const auto& [rc, modules] : recomputes) {
                Layout l = with;
                l.recompute = rc;
                l.mb.recompute_modules = modules;
                search::ApplyEmittedSettings(l, req.system, req.setup.precision);
                if (!Passes(req, l, RuleStage::kFeatures)) continue;
                for (int64_t mbs = 1; mbs <= req.max_micro_batch; mbs *= 2) {
                  SetMegatronMicroBatch(l, mbs, req.setup);
                  if (FirstFailure(Ctx(req, l)) == nullptr) out.insert(MbKey(req, l));
                }
              }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

// The space's valid layouts, keyed.
std::set<Key> SpaceValid(const PlanRequest& req) {
  std::set<Key> out;
  for (const Layout& l : EnumerateLayouts(req)) {
    if (FirstFailure(Ctx(req, l)) != nullptr) continue;
    out.insert(req.framework == Framework::kMegatronBridge ? MbKey(req, l) : AmKey(req, l));
  }
  return out;
}

std::string Label(const Config& c, Framework f) {
  return std::string(f == Framework::kMegatronBridge ? "megatron-bridge " : "automodel ") + c.model.name + " on " +
         std::to_string(c.gpus) + " GPUs, seq " + std::to_string(c.seq) + ", global batch " + std::to_string(c.gbs) +
         (c.precision == Precision::kFp8 ? ", fp8" : "") + (c.version == AutoModelVersion::kV04 ? ", v0.4" : "") +
         (c.mb_version == MBridgeVersion::kCore015 ? ", core0.15" : "");
}

void Compare(const Config& c, Framework f) {
  const PlanRequest req = Request(c, f);
  const std::set<Key> space = SpaceValid(req);
  const std::set<Key> brute = f == Framework::kMegatronBridge ? MbBrute(req) : AmBrute(req);
  CAPTURE(Label(c, f));
  CHECK(!brute.empty());
  CHECK_MESSAGE(space == brute, Difference(space, brute, f == Framework::kMegatronBridge ? kMbFields : kAmFields));
}

// Worlds 1, 2, 4, 8, 12, 16; sequence lengths that CP / SP divide and that they do not
// (4097: no CP, no SP; 6144 against TP 3 and CP 3); global batches with and without a factor
// 3, and one that no micro-batch divides over 16 data-parallel ranks; layer counts that PP
// divides, that it divides with the embedding and the loss, and that it does not (L = 2, 5, 7);
// versions where the rules differ (AutoModel v0.4: EP; core0.15: TP 8 over 4 KV heads); a
// global batch of 10 on two pipeline ranks, whose 5 micro-batches interleaved 1F1B cannot
// split into rounds of 2 (rule pp_interleaved_microbatch_rounds) while 10 can.
std::vector<Config> Configs() {
  constexpr Precision kBf16 = Precision::kBf16;
  constexpr AutoModelVersion kV05 = AutoModelVersion::kV05;
  return {
      {Dense(4), 1, 4096, 16},
      {Dense(4), 2, 4096, 16},
      {Dense(2), 4, 4096, 8},
      {Dense(4), 4, 4097, 16},
      {Dense(5), 8, 4096, 32},
      {Dense(7), 8, 4096, 24},
      {Dense(4), 16, 4096, 16},
      {Dense(6), 16, 8192, 8},
      {Gqa(), 12, 6144, 24},
      {Gqa(), 12, 4097, 12},
      {Gqa(), 8, 4096, 16, Precision::kFp8},
      {Gqa(), 8, 4096, 16, kBf16, kV05, MBridgeVersion::kCore015},
      {Moe(), 8, 4096, 16, kBf16, kV05, MBridgeVersion::kMain, true, true},
      {Moe(), 16, 4096, 16, kBf16, AutoModelVersion::kV04},
      {Moe(), 12, 6144, 24},
      {Tied(), 4, 4096, 8, kBf16, kV05, MBridgeVersion::kMain, false, true},
      {Dense(8), 2, 4096, 10},
  };
}

}  // namespace

TEST_CASE("rule domains: the AutoModel space is the set of rule-valid layouts in the box") {
  for (const Config& c : Configs()) Compare(c, Framework::kAutoModel);
}

TEST_CASE("rule domains: the Megatron-Bridge space is the set of rule-valid layouts in the box") {
  for (const Config& c : Configs()) Compare(c, Framework::kMegatronBridge);
}
