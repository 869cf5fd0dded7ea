// `explain`: one layout (from its AutoModel keys, an AutoModel recipe or a Megatron-Bridge
// override recipe) -> the rules it breaks, its memory per GPU term by term (per pipeline rank)
// and its step time term by term (for Megatron-Bridge also the compute term's split).
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "meshplan/accuracy.hpp"
#include "meshplan/framework.hpp"
#include "commands/internal.hpp"
#include "recipe/format.hpp"

namespace meshplan {

namespace {

// How the cost model spreads a learned gate's tokens over the EP ranks (RoutedDispatchCopies).
std::string LearnedGateRouting(const ModelSpec& m) {
  if (!m.group_limited_routing()) return "learned gate: k experts uniformly at random";
  return "learned gate, group-limited: " + std::to_string(m.router_group_topk) + " of " +
         std::to_string(m.router_num_groups) + " expert groups per token (n_group / topk_group), " +
         std::to_string(m.experts_per_token) + " experts among them";
}

using commands::CheckedCount;

Layout LayoutFromKeys(const LayoutKeys& k, int64_t gpus) {
  Layout l;
  l.strategy = k.strategy;
  l.tp = CheckedCount(k.tp, "--tp", 1 << 20);
  l.pp = CheckedCount(k.pp, "--pp", 1 << 20);
  l.cp = CheckedCount(k.cp, "--cp", 1 << 20);
  l.ep = CheckedCount(k.ep, "--ep", 1 << 20);
  l.dp_replicate = CheckedCount(k.dp_replicate, "--dp-replicate", 1 << 20);
  l.local_batch_size = CheckedCount(k.local_batch, "--local-batch", 1 << 20);
  l.pp_microbatch_size = CheckedCount(k.pp_microbatch, "--pp-microbatch", 1 << 20);
  // Not given: null (0 in the layout). 0 typed is refused: AutoModel takes null or a positive count.
  l.layers_per_stage = k.layers_per_stage ? CheckedCount(*k.layers_per_stage, "--layers-per-stage", 1 << 20) : 0;
  l.pp_schedule = k.pp_schedule;
  l.sequence_parallel = k.sequence_parallel;
  l.recompute = k.recompute;
  const int64_t model_ranks = l.tp * l.cp * l.pp;
  l.dp = gpus % model_ranks == 0 ? gpus / model_ranks : 0;  // as AutoModel infers dp_size
  return l;
}

// The decoder layers per pipeline rank the cost model prices, and whose split they are
// (a Megatron-Bridge layout with PP > 1).
PipelineSplit SplitOf(const ModelSpec& model, const Layout& l) {
  PipelineSplit p;
  p.layers_per_rank = DecoderLayersPerRank(model.num_layers, l);
  if (const PpLayerLayout* given = PricedPpLayout(model.num_layers, l); given != nullptr) {
    p.kind = PipelineSplit::Kind::kGivenLayout;
    p.embedding_rank = given->StageOf('E') % l.pp;
    p.loss_rank = given->StageOf('L') % l.pp;
  } else if (PpLayoutFits(model.num_layers, l)) {
    p.kind = PipelineSplit::Kind::kOwnLayout;
  } else if (l.pp_layout != nullptr) {
    p.kind = PipelineSplit::Kind::kEvenFallback;
  } else if (l.pp_split == MbPpSplit::kAccountEmbeddingLoss) {
    p.kind = PipelineSplit::Kind::kAccountEmbeddingLoss;
  }
  p.mtp_layers = MtpLayers(l);
  if (p.mtp_layers > 0) p.mtp_rank = std::max<int64_t>(0, SplitStages(model.num_layers, l).mtp_rank);
  return p;
}

// The override file the Megatron-Bridge layout flags make: every key of `keys` at its dotted
// path, its value read as YAML. Throws InputError on the key's flag for a value that is no YAML.
std::string MbOverrideText(const std::vector<MbFlagKey>& keys) {
  YAML::Node root(YAML::NodeType::Map);
  for (const MbFlagKey& k : keys) {
    YAML::Node value;
    try {
      value = YAML::Load(k.value);
    } catch (const YAML::Exception& e) {
      commands::FlagError(k.flag, "expected a YAML value for " + k.key + ", found '" + k.value + "' (" + e.msg + ")");
    }
    std::vector<YAML::Node> path = {root};
    size_t start = 0;
    while (true) {
      const size_t dot = k.key.find('.', start);
      const std::string part = k.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (part.empty()) commands::FlagError(k.flag, "expected a dotted key such as model.seq_length, found '" + k.key + "'");
      if (dot == std::string::npos) {
        path.back()[part] = value;
        break;
      }
      YAML::Node child = path.back()[part];
      if (child && !child.IsMap()) commands::FlagError(k.flag, "'" + k.key + "': " + part + " is set to a value above");
      if (!child) path.back()[part] = YAML::Node(YAML::NodeType::Map);
      path.push_back(path.back()[part]);
      start = dot + 1;
    }
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

// The flag of `keys` that gave the key an error of the override reader names ("model.
// tensor_model_parallel_size" or its last part), or "" when none did.
std::string FlagOfKey(const std::vector<MbFlagKey>& keys, const std::string& field) {
  for (const MbFlagKey& k : keys) {
    const std::string last = k.key.substr(k.key.rfind('.') + 1);
    if (field == k.key || field == last || (field.size() > last.size() && field.compare(field.size() - last.size() - 1, std::string::npos, "." + last) == 0)) {
      return k.flag;
    }
  }
  return "";
}

// `value`, refused on `flag` unless it is one of `choices`.
const std::string& OneOf(const char* flag, const std::string& value, const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return value;
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  commands::FlagError(flag, "expected one of " + list + "; found '" + value + "'");
}

// Megatron-LM's estimate (--memory-profile megatron, memory_megatron.cpp) has no FSDP term, and
// the megatron-bridge variant adds one only for Megatron-Core layouts: for a layout whose data
// parallelism shards the weights and gradients (FSDP2, Megatron FSDP) either would price them
// unsharded, so the combination is refused (InputError naming --memory-profile).
void RefuseUnshardedEstimate(const std::string& profile, const CostView& view, const std::string& layout) {
  const bool fsdp = view.dp_impl == DpImpl::kFsdpPerModule || view.dp_impl == DpImpl::kMegatronFsdp;
  if (!fsdp || profile == "pytorch") return;
  const bool megatron_core = view.runtime == CostRuntime::kMegatronCore;
  if (profile == "megatron-bridge" && megatron_core) return;
  commands::FlagError("--memory-profile",
                      profile + (profile == "megatron" ? ": Megatron-LM's estimate (theoretical_memory_usage.py) has no FSDP term"
                                                       : ": its FSDP terms are Megatron-Core's (Megatron-Bridge layouts)") +
                          ", so it would price the weights and gradients of " + layout +
                          " unsharded; expected " + (megatron_core ? "--memory-profile megatron-bridge" : "--memory-profile pytorch") +
                          " for a layout with FSDP");
}

// The defer_fsdp_grad_sync an AutoModel layout is priced with: --defer-fsdp-grad-sync when
// given, else the recipe's own value, else AutoModel's default true (FSDP2Config
// defer_fsdp_grad_sync: bool = True, nemo_automodel/components/distributed/config.py). Said in
// `notes` where that default is priced on an FSDP2 layout with gradient accumulation (where it
// matters): plan's recipes write false.
bool DeferFsdpGradSync(const ExplainInput& in, const Layout& l, const FrameworkOps& fw, const TrainSetup& setup,
                       std::vector<std::string>& notes) {
  if (!fw.torch_memory_options) return false;
  if (in.defer_fsdp_grad_sync) return *in.defer_fsdp_grad_sync;
  if (!l.am.defer_fsdp_grad_sync.empty()) return l.am.defer_fsdp_grad_sync == "true";
  if (l.strategy == Strategy::kFsdp2 && l.GradAccumSteps(setup) > 1) {
    notes.push_back("defer_fsdp_grad_sync: true priced (AutoModel's default, left unset): unsharded fp32 gradients are "
                    "kept across the " + std::to_string(l.GradAccumSteps(setup)) +
                    " gradient-accumulation steps; plan's recipes write false (--defer-fsdp-grad-sync false)");
  }
  return true;
}

/// --flex-backend on a layout whose dispatcher is not flex: refused (exit 2) naming both flags.
/// Megatron-Core reads model.moe_flex_dispatcher_backend only under moe_token_dispatcher_type
/// flex (TransformerConfig.__post_init__, megatron/core/transformer/transformer_config.py: the
/// backend checks sit under `if self.moe_token_dispatcher_type == "flex"`; token_dispatcher.py
/// MoEFlexTokenDispatcher is the one reader), so a recipe file may carry it inertly; a flag given
/// for it would change nothing the user can see. The dispatcher is the layout's after the
/// --mb-recipe function's own values (a DeepSeek-V3 recipe function already sets flex).
/// Throws InputError (field --flex-backend).
void RefuseFlexBackendWithoutFlex(const std::vector<MbFlagKey>& keys, const Layout& l, const std::string& mb_recipe) {
  bool backend = false, dispatcher = false;
  for (const MbFlagKey& k : keys) {
    backend |= k.flag == "--flex-backend";
    dispatcher |= k.flag == "--dispatcher";
  }
  if (!backend || l.mb.token_dispatcher == MbDispatcher::kFlex) return;
  const std::string found = l.mb.token_dispatcher == MbDispatcher::kAlltoall ? "alltoall" : "allgather";
  const std::string from = dispatcher           ? "--dispatcher " + found
                           : mb_recipe.empty() ? found + ", Megatron-Core's default (no --dispatcher)"
                                               : found + " (the --mb-recipe function's, no --dispatcher)";
  commands::FlagError("--flex-backend",
                      "sets model.moe_flex_dispatcher_backend, which Megatron-Core reads only with "
                      "model.moe_token_dispatcher_type: flex; expected --dispatcher flex with it, found " + from);
}

}  // namespace

const std::vector<std::string>& FrameworkOnlyLayoutFlags(bool megatron) {
  static const std::vector<std::string> automodel = {"--strategy", "--dp-replicate", "--local-batch", "--pp-microbatch",
                                                     "--pp-schedule", "--layers-per-stage"};
  static const std::vector<std::string> mbridge = {
      "--vpp", "--etp", "--mbs", "--dp-type", "--fsdp-sharding", "--recompute-modules", "--recompute-method",
      "--recompute-num-layers", "--dispatcher", "--flex-backend", "--cp-comm-type", "--pp-layout", "--account-for-embedding-loss",
      "--mtp-layers", "--set"};
  return megatron ? mbridge : automodel;
}

void RefuseOtherFrameworkFlags(const FrameworkOps& fw, const std::set<std::string>& given) {
  for (const std::string& flag : FrameworkOnlyLayoutFlags(!fw.override_key_flags)) {
    if (given.count(flag) == 0) continue;
    const FrameworkOps* owner = nullptr;
    for (const FrameworkOps* f : Frameworks()) {
      if (f->override_key_flags != fw.override_key_flags) owner = f;
    }
    const bool owner_default = owner == &FrameworkOf(kDefaultFramework);
    commands::FlagError(flag, std::string("is ") + owner->a_layout + " layout flag; expected --framework " + owner->name +
                                  (owner_default ? " (or no --framework)" : "") + " with it");
  }
}

std::vector<MbFlagKey> MbFlagKeys(const MbLayoutFlags& f) {
  std::vector<MbFlagKey> keys;
  auto add = [&keys](const char* flag, const char* key, const std::optional<std::string>& value) {
    if (value) keys.push_back({flag, key, *value});
  };
  auto count = [](const std::optional<int64_t>& v) { return v ? std::optional<std::string>(std::to_string(*v)) : std::nullopt; };
  auto boolean = [](const std::optional<bool>& v) { return v ? std::optional<std::string>(*v ? "true" : "false") : std::nullopt; };
  add("--tp", "model.tensor_model_parallel_size", count(f.tp));
  add("--pp", "model.pipeline_model_parallel_size", count(f.pp));
  add("--vpp", "model.virtual_pipeline_model_parallel_size", f.vpp);
  add("--cp", "model.context_parallel_size", count(f.cp));
  add("--ep", "model.expert_model_parallel_size", count(f.ep));
  add("--etp", "model.expert_tensor_parallel_size", f.etp);
  add("--mbs", "train.micro_batch_size", f.mbs);
  add("--sequence-parallel", "model.sequence_parallel", boolean(f.sequence_parallel));
  if (f.recompute) {
    const std::string& r = OneOf("--recompute", *f.recompute, {"none", "selective", "full"});
    keys.push_back({"--recompute", "model.recompute_granularity", r == "none" ? "null" : r});
  }
  if (f.recompute_modules) {
    std::string list;
    for (const std::string& m : *f.recompute_modules) list += (list.empty() ? "" : ", ") + m;
    keys.push_back({"--recompute-modules", "model.recompute_modules", "[" + list + "]"});
  }
  if (f.recompute_method) OneOf("--recompute-method", *f.recompute_method, {"uniform", "block"});
  add("--recompute-method", "model.recompute_method", f.recompute_method);
  add("--recompute-num-layers", "model.recompute_num_layers", f.recompute_num_layers);
  if (f.dp_type) {
    const std::string& t = OneOf("--dp-type", *f.dp_type, {"ddp", "ddp+distopt", "megatron_fsdp", "torch_fsdp2"});
    const bool mfsdp = t == "megatron_fsdp";
    keys.push_back({"--dp-type", "ddp.use_distributed_optimizer", t == "ddp" ? "false" : "true"});
    keys.push_back({"--dp-type", "ddp.use_megatron_fsdp", mfsdp ? "true" : "false"});
    keys.push_back({"--dp-type", "dist.use_megatron_fsdp", mfsdp ? "true" : "false"});
    keys.push_back({"--dp-type", "dist.use_torch_fsdp2", t == "torch_fsdp2" ? "true" : "false"});
  }
  add("--fsdp-sharding", "ddp.data_parallel_sharding_strategy", f.fsdp_sharding);
  if (f.dispatcher) OneOf("--dispatcher", *f.dispatcher, {"allgather", "alltoall", "flex"});
  add("--dispatcher", "model.moe_token_dispatcher_type", f.dispatcher);
  if (f.flex_backend) OneOf("--flex-backend", *f.flex_backend, {"deepep", "hybridep"});
  add("--flex-backend", "model.moe_flex_dispatcher_backend", f.flex_backend);
  if (f.cp_comm_type) OneOf("--cp-comm-type", *f.cp_comm_type, {"p2p", "all_gather", "a2a", "a2a+p2p"});
  add("--cp-comm-type", "model.cp_comm_type", f.cp_comm_type);
  // A layout string is a YAML string whatever it holds ("t*4|..." is no YAML alias).
  if (f.pp_layout) keys.push_back({"--pp-layout", "model.pipeline_model_parallel_layout", recipe::YamlQuoted(*f.pp_layout)});
  if (f.account_for_embedding_loss) {
    const char* v = *f.account_for_embedding_loss ? "true" : "false";
    keys.push_back({"--account-for-embedding-loss", "model.account_for_embedding_in_pipeline_split", v});
    keys.push_back({"--account-for-embedding-loss", "model.account_for_loss_in_pipeline_split", v});
  }
  add("--mtp-layers", "model.mtp_num_layers", f.mtp_layers);
  for (const std::string& s : f.sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      commands::FlagError("--set", "expected KEY=VALUE (a dotted override key), found '" + s + "'");
    }
    keys.push_back({"--set", s.substr(0, eq), s.substr(eq + 1)});
  }
  return keys;
}

ExplainReport ExplainLayout(const ExplainInput& in) {
  JudgeSetup setup = in.setup;
  setup.gpus = CheckedCount(setup.gpus, "--gpus", 1LL << 20);
  if (setup.headroom != kFrameworkHeadroom) CheckedReal(setup.headroom, "--headroom", 0.0, 0.9);
  std::optional<RecipeFile> file;
  if (!in.recipe.empty()) {
    file = ReadRecipeFile(in.recipe);
    if (const size_t n = file->documents.size(); n > 1) {
      throw InputError({in.recipe, 0, 0}, "--recipe",
                       "expected one recipe, found " + std::to_string(n) +
                           " YAML documents (plan --out writes one per recipe): explain one at a time, or check them all "
                           "with meshplan check");
    }
  }
  const LoadedInputs loaded = LoadInputs(setup.model, setup.system, setup.hwdb, setup.gpus, {}, setup.generic_decoder);
  if (setup.seq_len) setup.seq_len = CheckedCount(*setup.seq_len, "--seq-len", 1LL << 24);
  ExplainReport rep;
  PlanRequest& req = rep.request;
  const bool mb_flags = !file && setup.framework && FrameworkOf(*setup.framework).override_key_flags;
  if (mb_flags) {
    // The layout flags as an override file, read as check and explain read one: the same rules
    // and messages; an error names the flag that gave the key.
    if (!setup.global_batch) commands::FlagError("--global-batch", "required without --recipe");
    if (!setup.seq_len) commands::FlagError("--seq-len", "--seq-len is required");
    std::vector<MbFlagKey> keys = in.mb_keys;
    // The layout flags are override keys of the --mb-recipe function, at its own paths (the
    // Llama recipes take model.transformer.*); --set keys are paths as the user wrote them.
    for (MbFlagKey& k : keys) {
      if (k.flag != "--set") k.key = megatron_bridge::FlagKeyPath(setup.mb_recipe, k.key);
    }
    keys.push_back({"--global-batch", "train.global_batch_size",
                    std::to_string(CheckedCount(*setup.global_batch, "--global-batch", 1LL << 30))});
    const std::string text = MbOverrideText(keys);
    JudgedRecipe judged;
    try {
      judged = LoadRecipeForJudging(setup, "<command line>", text, loaded);
    } catch (const InputError& e) {
      if (e.loc().file != "<command line>") throw;  // --mb-recipe, the model, the system
      const std::string flag = FlagOfKey(keys, e.field());
      throw InputError({"<command line>", 0, 0}, flag.empty() ? e.field() : flag,
                       flag.empty() || flag == "--set" ? e.message() : e.message() + " (" + e.field() + ")");
    }
    req = std::move(judged.request);
    rep.layout = judged.parsed.layout;
    rep.parsed = std::move(judged.parsed);
    RefuseFlexBackendWithoutFlex(keys, rep.layout, setup.mb_recipe);
  } else if (file) {
    setup.framework.reset();  // detected from the recipe's keys
    JudgedRecipe judged = LoadRecipeForJudging(setup, in.recipe, file->text, loaded);
    req = std::move(judged.request);
    rep.layout = judged.parsed.layout;
    rep.parsed = std::move(judged.parsed);
    if (req.setup.global_batch <= 0) {
      commands::FlagError("--global-batch", std::string("required: the recipe sets no ") +
                                                commands::WordsOf(req.framework).global_batch_key);
    }
    req.setup.global_batch = CheckedCount(req.setup.global_batch, "--global-batch", 1LL << 30);
  } else {
    if (!setup.global_batch) commands::FlagError("--global-batch", "required without --recipe");
    rep.layout = LayoutFromKeys(in.keys, setup.gpus);
    RequestSettings s;
    s.setup = {setup.gpus, setup.seq_len.value_or(0), CheckedCount(*setup.global_batch, "--global-batch", 1LL << 30),
               setup.precision.value_or(Precision::kBf16), ResolveHeadroom(setup.headroom, s.framework)};
    if (!setup.seq_len) commands::FlagError("--seq-len", "--seq-len is required");
    std::tie(s.version, s.mb_version) = ResolveReleases(setup.releases, s.framework);
    req = BuildRequest(s, loaded);
    // The keys name no model.backend: the planner's own (the dispatcher its recipe names).
    rep.layout.am_backend = automodel::DefaultBackend(req.model, req.system, rep.layout.ep);
  }
  const Layout& l = rep.layout;
  const FrameworkOps& fw = FrameworkOf(req.framework);
  // The PyTorch FSDP2 memory options mean nothing for a Megatron-Bridge layout.
  if (!fw.torch_memory_options && (in.fp32_params || in.defer_fsdp_grad_sync || !in.adam_impl.empty())) {
    commands::FlagError(in.fp32_params ? "--fp32-params" : in.defer_fsdp_grad_sync ? "--defer-fsdp-grad-sync" : "--adam-impl",
                        std::string("expected only with ") + commands::FrameworksWith(&FrameworkOps::torch_memory_options, true) +
                            " layout, found " + fw.a_layout + " one");
  }
  rep.unfitted = commands::UnfittedNote(req);
  if (rep.parsed && !mb_flags) {
    for (const std::string& note :
         {commands::ReplacesNote("--seq-len", std::to_string(req.setup.seq_len), rep.parsed->seq_len > 0,
                                 std::to_string(rep.parsed->seq_len)),
          commands::ReplacesNote("--global-batch", std::to_string(req.setup.global_batch),
                                 rep.parsed->global_batch > 0, std::to_string(rep.parsed->global_batch))}) {
      if (!note.empty()) rep.notes.push_back(note);
    }
  }
  rep.seq_len_warning = SeqLenWarning(req.model, req.setup.seq_len);
  rep.model_warning = GenericModelWarning(req.model);
  if (!rep.parsed && l.pp <= 1 && in.keys.pp_schedule_given) {
    rep.unused_schedule = std::string("--pp-schedule ") + PpScheduleName(in.keys.pp_schedule) +
                          " has no effect without pipeline parallelism (--pp 1)";
  }
  const RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
  rep.rules_checked = RulesFor(req.framework).size();
  rep.failures = commands::RuleFailures(ctx);
  if (fw.explains_pipeline_split && l.pp > 1) rep.pipeline = SplitOf(req.model, l);
  rep.scorable = l.dp >= 1 && l.tp * l.pp * l.cp * l.dp == req.setup.num_gpus && l.micro_batch() >= 1 &&
                 l.dp_replicate >= 1 && l.dp % l.dp_replicate == 0 &&
                 SplitStages(req.model.num_layers, l).num_stages > 0 && l.GradAccumSteps(req.setup) >= 1;
  if (!rep.scorable) return rep;
  rep.memory_profile = !in.memory_profile.empty() ? in.memory_profile : commands::WordsOf(req.framework).memory_profile;
  RefuseUnshardedEstimate(rep.memory_profile, ToCostView(l, req.model, req.setup), Describe(l));
  MemoryOptions mo;
  mo.profile = rep.memory_profile == "pytorch" ? MemoryProfile::kPyTorch : MemoryProfile::kMegatron;
  mo.megatron_bridge_estimator = rep.memory_profile == "megatron-bridge";
  mo.fp32_params = in.fp32_params;
  mo.defer_fsdp_grad_sync = DeferFsdpGradSync(in, l, fw, req.setup, rep.notes);
  // Priced from the layout (automodel::ToCostView reads its own setting): the flag, when given,
  // replaces the recipe's.
  if (in.defer_fsdp_grad_sync && fw.torch_memory_options) {
    rep.layout.am.defer_fsdp_grad_sync = *in.defer_fsdp_grad_sync ? "true" : "false";
  }
  mo.adam_impl = in.adam_impl == "fused"     ? AdamImpl::kFused
                 : in.adam_impl == "forloop" ? AdamImpl::kForLoop
                                             : AdamImpl::kForeach;
  const CostModel cm(req.model, req.system, req.setup, mo);
  rep.cost = Score(cm, l);
  const CostView view = ToCostView(l, cm.model(), cm.setup());
  rep.rank_memory = cm.RankMemories(view);
  // The Megatron-Core time model's own terms (the eager PyTorch model has no such split).
  if (view.runtime == CostRuntime::kMegatronCore) {
    const MegatronComputeSplit c = SplitMegatronCompute(req.model, req.system, req.setup, l);
    rep.compute = ComputeSplit{c.gemm, c.attention, c.memory_bound, c.kernels};
    if (view.cp > 1) {
      CpSplit x;
      x.type = view.cp_comm == CpCommType::kAllGather ? "all_gather"
               : view.cp_comm == CpCommType::kA2a     ? "a2a"
               : view.cp_comm == CpCommType::kA2aP2p  ? "a2a+p2p"
                                                      : "p2p";
      x.written = l.mb.cp_comm != MbCpComm::kUnset;
      x.cp = view.cp;
      x.a2a = view.cp_comm == CpCommType::kA2aP2p ? view.cp_a2a : 0;
      x.exposed = rep.cost.time.cp_comm;
      rep.cp = x;
    }
    if (view.ep > 1 && req.model.is_moe()) {
      EpSplit e;
      e.dispatcher = view.dispatcher == TokenDispatch::kFlex       ? "flex"
                     : view.dispatcher == TokenDispatch::kAlltoall ? "alltoall"
                                                                   : "allgather";
      e.backend = view.flex_backend == FlexBackend::kHybridEP ? "hybridep"
                  : view.flex_backend == FlexBackend::kDeepEP ? "deepep"
                                                              : "";
      e.overlap = view.ep_a2a_overlap;
      // The flex dispatcher sends a token once per destination, so its traffic depends on the
      // routing; alltoall sends top-k copies whatever the routing.
      if (view.dispatcher == TokenDispatch::kFlex) e.routing = LearnedGateRouting(req.model);
      e.ep = view.ep;
      e.traffic = c.ep;
      rep.ep = e;
    }
  } else if (view.ep > 1 && req.model.is_moe()) {
    // AutoModel: model.backend's dispatcher and gate, the slowest rank's dispatch (RankTime).
    const AmMoeBackend& b = l.am_backend;
    EpSplit e;
    e.automodel = true;
    e.dispatcher = b.dispatcher == AmDispatcher::kTorch      ? "torch"
                   : b.dispatcher == AmDispatcher::kHybridEP ? "hybridep"
                   : b.dispatcher == AmDispatcher::kUcclEp   ? "uccl_ep (priced as deepep)"
                   : b.dispatcher == AmDispatcher::kMok      ? "mok (priced as deepep)"
                                                             : "deepep";
    e.routing = b.ConsecutiveExperts() ? "fake_balanced_gate: token t to experts t*k .. t*k+k-1 mod E"
                : b.fake_balanced_gate ? "fake_balanced_gate with noise: priced as uniform routing"
                                       : LearnedGateRouting(req.model);
    e.ep = view.ep;
    e.traffic = rep.cost.time.ep;
    rep.ep = e;
  }
  return rep;
}

}  // namespace meshplan
