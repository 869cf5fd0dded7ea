// ParseModel: HF config.json (or meshplan model YAML with the same keys) -> ModelSpec.
//
// Input rules (user-facing):
//  * architectures[0] selects the architecture. meshplan YAML may instead write the single
//    key `architecture: LlamaForCausalLM`; giving both is an error.
//  * Keys meshplan does not need (torch_dtype, bos_token_id, ...) are ignored,
//    except a key within edit distance 2 of a key that was read (and not itself a known HF
//    key): that is taken for a misspelling and rejected ("unknown key; did you mean ...").
//  * Numbers must be unquoted; sizes are range-checked; MoE keys come all together (a dense
//    architecture must have none; DeepSeek-V3 with none is a dense MLA model, as in HF).
//  * num_nextn_predict_layers (DeepSeek MTP) is read into mtp_num_layers; parameter counts
//    and num_layers are for the main model.
// Key names and defaults follow the transformers configuration classes of each
// architecture (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, Qwen3Config,
// Qwen3MoeConfig, DeepseekV3Config, GptOssConfig) and the layer-construction code of the
// matching modeling_*.py files.

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iomanip>
#include <optional>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include "model/adapters/adapters.hpp"
#include "model/key_reader.hpp"
#include "model/model_internal.hpp"

namespace meshplan {
namespace model {
namespace {

constexpr int64_t kMaxLayers = 100000;
constexpr int64_t kMaxHidden = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxHeads = int64_t{1} << 16;      // heads, head dims
constexpr int64_t kMaxWidth = int64_t{1} << 24;      // FFN widths, MLA ranks
constexpr int64_t kMaxExperts = int64_t{1} << 16;
constexpr int64_t kMaxPositions = int64_t{1} << 40;  // max_position_embeddings, sliding_window
constexpr long double kMaxTotalParams = 1e15L;       // 1000x the largest published model

// Every MoE key of every supported architecture; a dense architecture must not carry one.
const std::vector<std::string> kAllMoeKeys = {
    "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok",
    "experts_per_token", "moe_intermediate_size", "n_shared_experts"};

/// Hugging Face architectures meshplan does not implement but that users bring (transformers'
/// model classes and the trust_remote_code ones of NVIDIA, THUDM, Moonshot, Microsoft): a
/// name on this list is never "corrected" to a supported one, since it is a different family
/// (Gemma2ForCausalLM is not a misspelt LlamaForCausalLM, nor Qwen2MoeForCausalLM a misspelt
/// Qwen3MoeForCausalLM).
const std::vector<std::string> kKnownUnsupported = {
    "GemmaForCausalLM",
    "PhiForCausalLM", "PhiMoEForCausalLM", "Qwen2MoeForCausalLM", "Qwen3_5ForConditionalGeneration",
    "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration", "Glm4ForCausalLM", "GlmForCausalLM",
    "NemotronForCausalLM", "OlmoForCausalLM",
    "GraniteMoeForCausalLM",
    "MambaForCausalLM", "Mamba2ForCausalLM", "JambaForCausalLM", "FalconForCausalLM", "FalconH1ForCausalLM",
    "GPT2LMHeadModel", "GPTNeoXForCausalLM", "CohereForCausalLM", "Cohere2ForCausalLM", "Starcoder2ForCausalLM",
    "InternLM2ForCausalLM", "BaichuanForCausalLM", "ChatGLMModel", "KimiK2ForCausalLM", "Ernie4_5_MoeForCausalLM",
    "HunYuanMoEV1ForCausalLM", "MiniMaxM1ForCausalLM", "Exaone4ForCausalLM", "SmolLM3ForCausalLM"};

/// The digits of `name`, in order ("Qwen3MoeForCausalLM" -> "3"): a family's version.
std::string Digits(const std::string& name) {
  std::string d;
  for (char ch : name) {
    if (ch >= '0' && ch <= '9') d += ch;
  }
  return d;
}

}  // namespace

/// A supported architecture that `name` is a near-miss spelling of, or "": case and bytes
/// outside printable ASCII ignored, edit distance at most 2, the same version digits, and `name` not itself a known architecture
/// of another family (kKnownUnsupported).
std::string ArchitectureSpellingHint(const std::string& name) {
  if (std::find(kKnownUnsupported.begin(), kKnownUnsupported.end(), name) != kKnownUnsupported.end()) return "";
  if (name.size() > 200) return "";
  // Case and invisible bytes (a zero-width or non-breaking space pasted into the name) ignored.
  auto lower = [](const std::string& x) {
    std::string out;
    for (unsigned char ch : x) {
      if (ch > 0x20 && ch < 0x7f) out += char(std::tolower(ch));
    }
    return out;
  };
  std::string best;
  size_t best_d = 3;
  for (const std::string& c : SupportedArchitectures()) {
    if (Digits(c) != Digits(name)) continue;
    const size_t d = yamlutil::EditDistance(lower(name), lower(c));
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}


/// `architecture: generic` (meshplan YAML): a shape-only model.
bool IsGenericName(const std::string& name) { return name == "generic" || name == "GenericDecoder"; }

/// architectures[0] (HF) or `architecture:` (meshplan YAML alternative spelling). An
/// unsupported name is refused, unless `options.generic_decoder`: then kGeneric.
Architecture ReadArchitecture(KeyReader& r, ModelSpec& s, const ModelReadOptions& options) {
  const std::string supported = "supported: " + JoinNames(SupportedArchitectures()) +
                                " (or, in meshplan YAML, architecture: generic for a decoder given by its shape)";
  bool has_list = r.HasValue("architectures");
  bool has_one = r.HasValue("architecture");
  if (has_list && has_one) {
    r.Fail("architecture", "expected either 'architectures' (HF list) or 'architecture', found both");
  }
  if (!has_list && !has_one) {
    r.Fail("architectures", "missing; expected a list such as [\"LlamaForCausalLM\"] (or, in meshplan YAML, "
                            "architecture: LlamaForCausalLM); " + supported);
  }
  std::string key = has_list ? "architectures" : "architecture";
  std::string name;
  if (has_list) {
    if (r.Get(key).IsScalar()) {
      r.Fail(key, "expected a list such as [\"" + r.Get(key).Scalar() + "\"], found a plain string");
    }
    auto list = r.StrList(key);
    if (list->empty()) r.Fail(key, "expected a non-empty list of architecture names, found []");
    name = list->front();
  } else {
    name = r.Str(key);
  }
  s.architecture_name = name;
  if (!has_list && IsGenericName(name)) {
    s.generic_note = "planned as a generic decoder given by its shape (GQA attention, SwiGLU MLP, RMSNorm): "
                     "no architecture's own layers, biases or attention variants are modelled";
    return Architecture::kGeneric;
  }
  std::optional<Architecture> a = ArchitectureFromName(name);
  if (a) return *a;
  std::string shown = name.size() > 60 ? name.substr(0, 60) + "..." : name;
  if (options.generic_decoder) {
    s.generic_note = "architecture " + shown + " is not supported: planned with --generic-decoder as a generic "
                     "decoder from its standard fields (GQA attention, SwiGLU MLP, RMSNorm); its own layers "
                     "(attention variants, norms, biases, non-attention mixers) are not modelled";
    return Architecture::kGeneric;
  }
  std::string hint = ArchitectureSpellingHint(name);
  // Bytes outside printable ASCII (a zero-width space, a non-breaking space) shown escaped:
  // printed as they are, the name looked identical to its "did you mean".
  std::string note;
  if (std::any_of(shown.begin(), shown.end(), [](char ch) { return ch < 0x20 || ch > 0x7e; })) {
    std::string esc;
    for (unsigned char ch : shown) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      esc += (ch >= 0x20 && ch <= 0x7e) ? std::string(1, char(ch)) : std::string(buf);
    }
    shown = esc;
    note = " (bytes outside printable ASCII escaped)";
  }
  r.Fail(key, "unsupported architecture '" + shown + "'" + note +
                  (hint.empty() ? "" : "; did you mean '" + hint + "'?") + "; " + supported +
                  "; --generic-decoder plans it as a generic dense/MoE decoder from its standard fields");
}

/// The RoPE scaling type: rope_scaling (transformers < 5) or rope_parameters (>= 5), a map
/// whose `rope_type` (older configs: `type`) names it. Plain RoPE ("default", a null or
/// missing map) gives "". Only the name is read: the scaling factors change no parameter
/// count, and the cost model needs only to know which RoPE kernel Megatron-Core runs.
std::string ReadRopeScalingType(KeyReader& r) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!r.HasValue(key)) continue;
    const YAML::Node n = r.Get(key);
    if (!n.IsMap()) continue;
    for (const char* k : {"rope_type", "type"}) {
      const YAML::Node t = n[k];
      if (t && t.IsScalar() && !t.Scalar().empty() && t.Scalar() != "default") return t.Scalar();
    }
  }
  return "";
}

/// num_key_value_heads when a config omits it: the default of each transformers configuration
/// class (LlamaConfig: None, i.e. num_attention_heads; MistralConfig, MixtralConfig, GptOssConfig,
/// NemotronHConfig, Glm4MoeConfig: 8; Qwen3NextConfig, Qwen3_5MoeTextConfig: 2; Phi3Config, GraniteConfig, Olmo2Config, OlmoeConfig:
/// None, i.e. num_attention_heads; Qwen2Config, Qwen3Config: 32; Qwen3MoeConfig, Gemma2Config,
/// Gemma3TextConfig: 4). MLA
/// (DeepseekV2Config 32, DeepseekV3Config 128) has no KV-head groups: DeepseekV3Attention never
/// reads the key, so a missing one is taken as num_attention_heads, not as a default that
/// need not divide the heads. A generic decoder without the key is taken as MHA.
int64_t DefaultKeyValueHeads(Architecture a, int64_t num_attention_heads) {
  switch (a) {
    case Architecture::kMistral:
    case Architecture::kMixtral:
    case Architecture::kGptOss:
    case Architecture::kNemotronH:
    case Architecture::kGlm4Moe: return 8;
    case Architecture::kQwen3Next:
    case Architecture::kQwen3_5Moe: return 2;
    case Architecture::kQwen2:
    case Architecture::kQwen3: return 32;
    case Architecture::kQwen3Moe:
    case Architecture::kGemma2:
    case Architecture::kGemma3: return 4;
    case Architecture::kLlama4: return 8;  // Llama4TextConfig
    case Architecture::kDeepseekV4: return 1;  // DeepseekV4Config: one KV head (MQA)
    case Architecture::kDeepseekV2:  // MLA: no KV-head groups
    case Architecture::kDeepseekV3:
    case Architecture::kDeepseekV32:
    case Architecture::kLlama:
    case Architecture::kPhi3:
    case Architecture::kGranite:
    case Architecture::kOlmo2:
    case Architecture::kOlmoe:
    case Architecture::kGeneric: break;
  }
  return num_attention_heads;
}

/// Keys every architecture has (LlamaConfig names; HF defaults noted where used).
void ReadCommon(KeyReader& r, ModelSpec& s) {
  s.hidden_size = r.Int("hidden_size", 1, kMaxHidden);
  s.num_layers = r.Int("num_hidden_layers", 1, kMaxLayers);
  s.num_attention_heads = r.Int("num_attention_heads", 1, kMaxHeads);
  // A missing (or null) num_key_value_heads takes the architecture's transformers default.
  const int64_t kv_default = DefaultKeyValueHeads(s.architecture, s.num_attention_heads);
  const bool kv_given = r.HasValue("num_key_value_heads");
  s.num_key_value_heads = r.Int("num_key_value_heads", 1, kMaxHeads, kv_default);
  if (s.num_attention_heads % s.num_key_value_heads != 0) {
    r.Fail(kv_given ? "num_key_value_heads" : "num_attention_heads",
           kv_given ? "expected a divisor of num_attention_heads (" + std::to_string(s.num_attention_heads) +
                          "), found " + std::to_string(s.num_key_value_heads)
                    : "expected a multiple of " + std::to_string(kv_default) + ", the num_key_value_heads that " +
                          s.architecture_name + " takes when the key is missing (transformers' default), found " +
                          std::to_string(s.num_attention_heads) + "; give num_key_value_heads");
  }
  s.vocab_size = r.Int("vocab_size", 1, kMaxVocab);
  s.max_position_embeddings = r.Int("max_position_embeddings", 1, kMaxPositions);
  s.tie_word_embeddings = r.Bool("tie_word_embeddings", false);
  // Qwen3.5 MoE's text_config has no intermediate_size (every layer MoE unless
  // mlp_only_layers / decoder_sparse_step say otherwise: ReadQwen3Next requires it then).
  // DeepseekV4Config has no intermediate_size at all (every layer MoE: ReadDeepseekV4 sets it).
  const bool optional_ffn = (s.architecture == Architecture::kQwen3_5Moe || s.architecture == Architecture::kDeepseekV4) &&
                            !r.HasValue("intermediate_size");
  s.intermediate_size = optional_ffn ? 0 : r.Int("intermediate_size", 1, kMaxWidth);
  s.rope_scaling_type = ReadRopeScalingType(r);
}


/// head_dim if given (Qwen3, GPT-OSS, Mistral-Nemo), else hidden_size / num_attention_heads.
void ReadHeadDim(KeyReader& r, ModelSpec& s) {
  if (r.HasValue("head_dim")) {
    s.head_dim = r.Int("head_dim", 1, kMaxHeads);
    return;
  }
  if (s.hidden_size % s.num_attention_heads != 0) {
    r.Fail("num_attention_heads", "expected a divisor of hidden_size (" + std::to_string(s.hidden_size) +
                                      ") when head_dim is not given, found " +
                                      std::to_string(s.num_attention_heads));
  }
  s.head_dim = s.hidden_size / s.num_attention_heads;
}


/// Counts "sliding_attention" entries of layer_types (must list every layer).
int64_t CountSlidingLayers(KeyReader& r, const ModelSpec& s, const std::vector<std::string>& types) {
  if (static_cast<int64_t>(types.size()) != s.num_layers) {
    r.Fail("layer_types", "expected one entry per layer (num_hidden_layers = " + std::to_string(s.num_layers) +
                              "), found " + std::to_string(types.size()));
  }
  int64_t n = 0;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "sliding_attention") {
      ++n;
    } else if (types[i] != "full_attention") {
      throw InputError(r.ItemLoc("layer_types", i), "layer_types[" + std::to_string(i) + "]",
                       "expected 'sliding_attention' or 'full_attention', found '" + types[i] + "'");
    }
  }
  return n;
}

/// Mistral/Mixtral: a non-null sliding_window applies to every layer.
void ReadMistralWindow(KeyReader& r, ModelSpec& s) {
  s.sliding_window = r.Int("sliding_window", 1, kMaxPositions, 0);
  s.num_sliding_window_layers = s.sliding_window > 0 ? s.num_layers : 0;
}

/// Qwen2/Qwen3(Moe): sliding_window only with use_sliding_window; layers from
/// max_window_layers on slide (Qwen2Config.layer_types), unless layer_types is given.
void ReadQwenWindow(KeyReader& r, ModelSpec& s) {
  bool use = r.Bool("use_sliding_window", false);
  int64_t window = r.Int("sliding_window", 1, kMaxPositions, 0);
  int64_t full_layers = r.Int("max_window_layers", 0, kMaxLayers, s.num_layers);
  auto types = r.StrList("layer_types");
  if (!use || window == 0) return;
  int64_t n = types ? CountSlidingLayers(r, s, *types) : std::max<int64_t>(0, s.num_layers - full_layers);
  s.sliding_window = n > 0 ? window : 0;
  s.num_sliding_window_layers = n;
}

/// A dense architecture carrying an expert key is almost certainly the wrong architecture.
void RejectMoeKeys(KeyReader& r, const ModelSpec& s) {
  for (const std::string& k : kAllMoeKeys) {
    if (r.HasValue(k)) {
      r.Fail(k, "expected no mixture-of-experts keys for the dense architecture " + s.architecture_name +
                    "; found one (MoE architectures: MixtralForCausalLM, Qwen3MoeForCausalLM, "
                    "DeepseekV3ForCausalLM, GptOssForCausalLM)");
    }
  }
}

/// The MoE keys of an architecture are given together or (where allowed) not at all.
/// Returns whether they are present.
bool MoeGroupPresent(KeyReader& r, const ModelSpec& s, const std::vector<std::string>& keys, bool may_be_absent) {
  std::vector<std::string> present, missing;
  for (const std::string& k : keys) (r.HasValue(k) ? present : missing).push_back(k);
  if (missing.empty()) return true;
  if (present.empty()) {
    if (may_be_absent) return false;
    r.Fail(keys.front(), "missing; " + s.architecture_name + " is a mixture-of-experts architecture and needs " +
                             JoinNames(keys));
  }
  r.Fail(missing.front(), "missing; the mixture-of-experts keys " + JoinNames(keys) + " go together, found " +
                              present.front() + " without " + missing.front());
}


/// Number of routed experts and top-k; top-k must not exceed the expert count.
void ReadExperts(KeyReader& r, ModelSpec& s, const std::string& experts_key) {
  s.num_experts = r.Int(experts_key, 1, kMaxExperts);
  s.experts_per_token = r.Int("num_experts_per_tok", 1, kMaxExperts);
  if (s.experts_per_token > s.num_experts) {
    r.Fail("num_experts_per_tok", "expected at most " + experts_key + " (" + std::to_string(s.num_experts) +
                                      "), found " + std::to_string(s.experts_per_token));
  }
}


void ReadRouterGroups(KeyReader& r, ModelSpec& s, int64_t default_groups, int64_t default_topk) {
  // A config that leaves n_group out takes the architecture's default where it divides the
  // experts (DeepseekV3Config: 8 groups, 4 chosen), else no grouping (a small test config).
  if (!r.HasValue("n_group") && s.num_experts % default_groups != 0) default_groups = default_topk = 1;
  const int64_t groups = r.Int("n_group", 1, kMaxExperts, default_groups);
  if (s.num_experts % groups != 0) {
    r.Fail("n_group", "expected a divisor of the routed experts (" + std::to_string(s.num_experts) + "), found " +
                          std::to_string(groups));
  }
  const int64_t topk = r.Int("topk_group", 1, kMaxExperts, std::min(default_topk, groups));
  if (topk > groups) {
    r.Fail("topk_group", "expected at most n_group (" + std::to_string(groups) + "), found " + std::to_string(topk));
  }
  const int64_t reachable = topk * (s.num_experts / groups);
  if (s.experts_per_token > reachable) {
    r.Fail("topk_group", "expected the chosen groups to hold at least num_experts_per_tok (" +
                             std::to_string(s.experts_per_token) + ") experts; " + std::to_string(topk) + " of " +
                             std::to_string(groups) + " groups hold " + std::to_string(reachable));
  }
  s.router_num_groups = groups;
  s.router_group_topk = topk;
}

/// Llama: attention_bias on q,k,v,o; mlp_bias must be false (LlamaMLP biases not counted).
void ReadLlama(KeyReader& r, ModelSpec& s) {
  ReadHeadDim(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  if (r.Bool("mlp_bias", false)) r.Fail("mlp_bias", "expected false (MLP biases are not modelled), found true");
  RejectMoeKeys(r, s);
}

/// Qwen3: attention_bias on q,k,v,o and per-head RMSNorm on q and k (Qwen3Attention).
void ReadQwen3Attention(KeyReader& r, ModelSpec& s) {
  ReadHeadDim(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  s.qk_norm = true;
  ReadQwenWindow(r, s);
}

/// Qwen3MoeSparseMoeBlock on layer i unless i is in mlp_only_layers or
/// (i + 1) % decoder_sparse_step != 0 (Qwen3MoeDecoderLayer).
void ReadQwen3Moe(KeyReader& r, ModelSpec& s) {
  ReadQwen3Attention(r, s);
  MoeGroupPresent(r, s, {"num_experts", "num_experts_per_tok", "moe_intermediate_size"}, false);
  ReadExperts(r, s, "num_experts");
  s.moe_intermediate_size = r.Int("moe_intermediate_size", 1, kMaxWidth);
  int64_t step = r.Int("decoder_sparse_step", 1, kMaxLayers, 1);
  std::vector<int64_t> mlp_only = r.IntList("mlp_only_layers", 0, s.num_layers - 1);
  int64_t moe = 0;
  for (int64_t i = 0; i < s.num_layers; ++i) {
    bool only = std::find(mlp_only.begin(), mlp_only.end(), i) != mlp_only.end();
    if (!only && (i + 1) % step == 0) ++moe;
  }
  s.num_dense_layers = s.num_layers - moe;
}

/// MLA's ranks and head dims (DeepseekV3Attention; q_lora_rank null: no low-rank Q).
void ReadMla(KeyReader& r, ModelSpec& s) {
  s.mla = true;
  MlaSpec& m = s.mla_spec;
  m.q_lora_rank = r.HasValue("q_lora_rank") ? r.Int("q_lora_rank", 1, kMaxWidth) : 0;
  m.kv_lora_rank = r.Int("kv_lora_rank", 1, kMaxWidth);
  m.qk_nope_head_dim = r.Int("qk_nope_head_dim", 1, kMaxHeads);
  m.qk_rope_head_dim = r.Int("qk_rope_head_dim", 1, kMaxHeads);
  m.v_head_dim = r.Int("v_head_dim", 1, kMaxHeads);
  s.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  r.Get("head_dim");     // derived by newer transformers (= qk_rope_head_dim); ignored
  r.Get("qk_head_dim");  // derived (= nope + rope); ignored
}

/// DeepSeek-V3: MLA (DeepseekV3Attention) and DeepseekV3MoE on layer i when
/// i >= first_k_dense_replace and i % moe_layer_freq == 0. MTP layers
/// (num_nextn_predict_layers, default 0 as in DeepseekV3Config) are not part of the main
/// model: mtp_num_layers.
void ReadDeepseekV3(KeyReader& r, ModelSpec& s) {
  s.mtp_num_layers = r.Int("num_nextn_predict_layers", 0, 64, 0);
  ReadMla(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  int64_t first_dense = r.Int("first_k_dense_replace", 0, kMaxLayers, 0);
  if (first_dense > s.num_layers) {
    r.Fail("first_k_dense_replace", "expected at most num_hidden_layers (" + std::to_string(s.num_layers) +
                                        "), found " + std::to_string(first_dense));
  }
  int64_t freq = r.Int("moe_layer_freq", 1, kMaxLayers, 1);
  int64_t shared = r.Int("n_shared_experts", 0, 1024, 0);
  if (!MoeGroupPresent(r, s, {"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size"}, true)) {
    if (shared > 0) r.Fail("n_shared_experts", "expected no shared experts without n_routed_experts, found " + std::to_string(shared));
    s.num_dense_layers = s.num_layers;  // n_routed_experts: null means every layer is dense
    return;
  }
  ReadExperts(r, s, "n_routed_experts");
  s.moe_intermediate_size = r.Int("moe_intermediate_size", 1, kMaxWidth);
  s.num_shared_experts = shared;
  s.shared_expert_intermediate_size = shared * s.moe_intermediate_size;
  s.router_bias = true;  // DeepseekV3TopkRouter.e_score_correction_bias
  ReadRouterGroups(r, s, 8, 4);
  int64_t moe = 0;
  for (int64_t i = first_dense; i < s.num_layers; ++i) moe += (i % freq == 0);
  s.num_dense_layers = s.num_layers - moe;
}

/// GPT-OSS: biased q,k,v,o, one sink logit per head, biased router and experts
/// (GptOssExperts gate_up_proj_bias, down_proj_bias); layer_types defaults to alternating
/// sliding/full starting with sliding (GptOssConfig).
void ReadGptOss(KeyReader& r, ModelSpec& s) {
  ReadHeadDim(r, s);
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", true);
  s.attention_sinks = true;
  MoeGroupPresent(r, s, {"num_local_experts", "num_experts_per_tok"}, false);
  ReadExperts(r, s, "num_local_experts");
  if (r.HasValue("experts_per_token") &&
      r.Int("experts_per_token", 1, kMaxExperts) != s.experts_per_token) {
    r.Fail("experts_per_token", "expected the same value as num_experts_per_tok (" +
                                    std::to_string(s.experts_per_token) + ")");
  }
  s.moe_intermediate_size = s.intermediate_size;
  s.num_dense_layers = 0;
  s.router_bias = s.expert_bias = true;
  int64_t window = r.Int("sliding_window", 1, kMaxPositions, 0);
  auto types = r.StrList("layer_types");
  int64_t n = types ? CountSlidingLayers(r, s, *types) : s.num_layers / 2 + s.num_layers % 2;
  if (n > 0 && window == 0) {
    r.Fail("sliding_window", "missing; expected a window size because " + std::to_string(n) +
                                 " layers use sliding_attention");
  }
  s.sliding_window = n > 0 ? window : 0;
  s.num_sliding_window_layers = n;
}

/// "generic decoder" in generic_note becomes "generic dense decoder" / "generic MoE decoder".
void SayKind(ModelSpec& s, const std::string& kind) {
  const size_t at = s.generic_note.find("generic decoder");
  if (at != std::string::npos) s.generic_note.insert(at + 8, kind + " ");
}

/// A generic decoder from the standard keys (kGeneric): GQA attention (or MLA where
/// kv_lora_rank is given), attention_bias on q,k,v,o, SwiGLU MLP; MoE where an expert count is
/// given under any of the usual names (num_local_experts, num_experts, n_routed_experts), with
/// num_experts_per_tok, moe_intermediate_size (default intermediate_size), shared experts
/// (n_shared_experts of moe_intermediate_size, or one shared_expert_intermediate_size wide) and
/// the first first_k_dense_replace layers dense. Everything else (sliding windows, other
/// mixers, norms' placement) is ignored, as generic_note says.
void ReadGeneric(KeyReader& r, ModelSpec& s) {
  if (r.HasValue("kv_lora_rank")) {
    ReadMla(r, s);
  } else {
    ReadHeadDim(r, s);
  }
  s.attention_bias = s.attention_out_bias = r.Bool("attention_bias", false);
  s.mtp_num_layers = r.Int("num_nextn_predict_layers", 0, 64, 0);
  s.gated_mlp = r.Bool("gated_mlp", true);  // meshplan YAML: false for a GeLU / squared-ReLU MLP
  if (!s.gated_mlp) {
    const size_t at = s.generic_note.find("SwiGLU MLP");
    if (at != std::string::npos) s.generic_note.replace(at, 10, "two-matrix MLP (gated_mlp: false)");
  }
  std::string experts_key;
  for (const char* k : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (experts_key.empty() && r.HasValue(k)) experts_key = k;
  }
  if (experts_key.empty()) {
    SayKind(s, "dense");
    return;
  }
  ReadExperts(r, s, experts_key);
  s.moe_intermediate_size = r.Int("moe_intermediate_size", 1, kMaxWidth, s.intermediate_size);
  s.num_shared_experts = r.Int("n_shared_experts", 0, 1024, 0);
  s.shared_expert_intermediate_size = s.num_shared_experts * s.moe_intermediate_size;
  if (s.num_shared_experts == 0 && r.HasValue("shared_expert_intermediate_size")) {
    s.shared_expert_intermediate_size = r.Int("shared_expert_intermediate_size", 1, kMaxWidth);
    s.num_shared_experts = 1;
  }
  const int64_t first_dense = r.Int("first_k_dense_replace", 0, kMaxLayers, 0);
  if (first_dense > s.num_layers) {
    r.Fail("first_k_dense_replace", "expected at most num_hidden_layers (" + std::to_string(s.num_layers) +
                                        "), found " + std::to_string(first_dense));
  }
  s.num_dense_layers = first_dense;
  SayKind(s, "MoE");
}

/// Gemma3TextConfig's defaults (transformers models/gemma3/configuration_gemma3.py), which the
/// published Gemma 3 vision-language configs leave out of their text_config (gemma-3-4b-it gives
/// hidden_size, intermediate_size, num_hidden_layers and sliding_window only).
const std::vector<std::pair<std::string, int64_t>> kGemma3TextDefaults = {
    {"vocab_size", 262208},       {"hidden_size", 2304},      {"intermediate_size", 9216},
    {"num_hidden_layers", 26},    {"num_attention_heads", 8}, {"num_key_value_heads", 4},
    {"head_dim", 256},            {"max_position_embeddings", 131072}};

/// The text backbone of a vision-language class (architectures[0] ending in
/// ForConditionalGeneration): the `text_config` map, which must be there. Gemma 3's missing keys
/// take Gemma3TextConfig's defaults, as transformers does. A vision_config, when present, is left
/// out of the plan: ModelSpec::excluded_note says so in every output.
YAML::Node TextConfigOf(KeyReader& r, ModelSpec& s) {
  if (!r.HasValue("text_config") || !r.Get("text_config").IsMap()) {
    std::string hint = s.architecture == Architecture::kGemma3
                           ? "; a Gemma 3 vision-language config (gemma-3-4b / 12b / 27b) holds its Gemma3TextConfig "
                             "under text_config: download the checkpoint's own config.json, or for the text-only "
                             "gemma-3-1b write architectures: [\"Gemma3ForCausalLM\"] with its keys at the top level"
                           : "; the text backbone's keys (hidden_size, num_hidden_layers, ...) go under text_config "
                             "in " + s.architecture_name + "'s config.json";
    r.Fail("text_config", std::string(r.HasValue("text_config") ? "expected a map of the text backbone's keys, found "
                                                                  "something else"
                                                                : "missing") + hint);
  }
  YAML::Node text = r.Get("text_config");
  if (s.architecture == Architecture::kGemma3) {
    for (const auto& [key, value] : kGemma3TextDefaults) {
      if (!text[key] || text[key].IsNull()) text[key] = value;
    }
  }
  if (r.HasValue("vision_config")) {
    s.excluded_note = "the vision tower (vision_config) is left out: the plan, memory and step time are those of "
                      "the text backbone (text_config) on text tokens only; the vision encoder's parameters, "
                      "activations and FLOPs at any image-token count are not counted";
  }
  return text;
}

bool IsVisionLanguageClass(const std::string& name) {
  const std::string suffix = "ForConditionalGeneration";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace model

/// Parses and validates one model config; see model.hpp. Every key read gets a field_locs
/// entry; misspelt keys are rejected after all reading (KeyReader::CheckSpelling).
ModelSpec ParseModel(std::string_view text, const std::string& filename, const ModelReadOptions& options) {
  using namespace model;
  YAML::Node root = yamlutil::ParseMap(text, filename);
  ModelSpec s;
  s.name = filename;
  s.source = SourceLoc{filename, 0, 0};
  KeyReader top(root, filename, s);
  s.architecture = ReadArchitecture(top, s, options);
  // A vision-language class: its text backbone's keys are read from text_config.
  std::optional<KeyReader> text_reader;
  if (s.architecture != Architecture::kGeneric && IsVisionLanguageClass(s.architecture_name)) {
    text_reader.emplace(TextConfigOf(top, s), filename, s);
  }
  KeyReader& r = text_reader ? *text_reader : top;
  ReadCommon(r, s);
  s.num_dense_layers = s.num_layers;
  switch (s.architecture) {
    case Architecture::kLlama:
      ReadLlama(r, s);
      break;
    case Architecture::kMistral:
      ReadHeadDim(r, s);
      ReadMistralWindow(r, s);
      RejectMoeKeys(r, s);
      break;
    case Architecture::kMixtral:
      ReadHeadDim(r, s);
      ReadMistralWindow(r, s);
      MoeGroupPresent(r, s, {"num_local_experts", "num_experts_per_tok"}, false);
      ReadExperts(r, s, "num_local_experts");
      s.moe_intermediate_size = s.intermediate_size;  // MixtralBlockSparseTop2MLP uses intermediate_size
      s.num_dense_layers = 0;
      break;
    case Architecture::kQwen2:
      ReadHeadDim(r, s);
      s.attention_bias = true;  // Qwen2Attention: q,k,v always biased, o never
      ReadQwenWindow(r, s);
      RejectMoeKeys(r, s);
      break;
    case Architecture::kQwen3:
      ReadQwen3Attention(r, s);
      RejectMoeKeys(r, s);
      break;
    case Architecture::kQwen3Moe:
      ReadQwen3Moe(r, s);
      break;
    case Architecture::kDeepseekV3:
      ReadDeepseekV3(r, s);
      break;
    case Architecture::kGptOss:
      ReadGptOss(r, s);
      break;
    case Architecture::kNemotronH:
      ReadNemotronH(r, s);
      break;
    case Architecture::kGlm4Moe:
      ReadGlm4Moe(r, s);
      break;
    case Architecture::kDeepseekV2:
      ReadDeepseekV2(r, s);
      break;
    case Architecture::kPhi3:
      ReadPhi3(r, s);
      break;
    case Architecture::kGranite:
      ReadGranite(r, s);
      break;
    case Architecture::kOlmo2:
    case Architecture::kOlmoe:
      ReadOlmo(r, s);
      break;
    case Architecture::kGemma2:
    case Architecture::kGemma3:
      ReadGemma(r, s);
      break;
    case Architecture::kQwen3Next:
    case Architecture::kQwen3_5Moe:
      ReadQwen3Next(r, s);
      break;
    case Architecture::kDeepseekV32:
      ReadDeepseekV32(r, s);
      break;
    case Architecture::kLlama4:
      ReadLlama4(r, s);
      break;
    case Architecture::kDeepseekV4:
      ReadDeepseekV4(r, s);
      break;
    case Architecture::kGeneric:
      ReadGeneric(r, s);
      break;
  }
  r.CheckSpelling();
  if (text_reader) top.CheckSpelling();
  long double total = ApproxTotalParams(s);
  if (total > kMaxTotalParams) {
    std::ostringstream os;
    os << std::setprecision(3) << static_cast<double>(total);
    throw InputError(yamlutil::LocOf(root, filename), "",
                     "expected at most 1e15 parameters in total, found about " + os.str() +
                         " (check hidden_size, intermediate_size, num_hidden_layers and the expert counts)");
  }
  return s;
}

}  // namespace meshplan
