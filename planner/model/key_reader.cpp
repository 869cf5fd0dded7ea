#include "model/key_reader.hpp"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace meshplan::model {
namespace {

// Keys of transformers' PretrainedConfig and of the supported model configs that do not
// change the parameter count or the planner's decisions. Listed so that they are never
// mistaken for misspellings of a key meshplan reads.
constexpr std::string_view kKnownIgnored[] = {
    "_name_or_path", "model_type", "torch_dtype", "dtype", "transformers_version",
    "auto_map", "quantization_config", "use_cache", "bos_token_id", "eos_token_id",
    "pad_token_id", "sep_token_id", "decoder_start_token_id", "hidden_act",
    "initializer_range", "rms_norm_eps", "layer_norm_eps", "rope_theta", "rope_scaling",
    "rope_parameters", "rope_interleave", "partial_rotary_factor", "attention_dropout",
    "hidden_dropout", "embd_pdrop", "resid_pdrop", "pretraining_tp", "output_router_logits",
    "router_aux_loss_coef", "router_jitter_noise", "norm_topk_prob", "aux_loss_alpha",
    "seq_aux", "ep_size", "n_group", "topk_group", "topk_method", "routed_scaling_factor",
    "scoring_func", "num_nextn_predict_layers", "swiglu_limit", "initial_context_length",
    "tokenizer_class", "is_encoder_decoder", "is_decoder", "output_attentions",
    "output_hidden_states", "return_dict", "id2label", "label2id", "problem_type",
    "torchscript", "use_bfloat16", "pruned_heads", "tie_encoder_decoder", "prefix",
    "finetuning_task", "task_specific_params", "chunk_size_feed_forward",
    "add_cross_attention", "cross_attention_hidden_size", "max_length", "min_length",
    "num_beams", "do_sample", "temperature", "top_k", "top_p", "use_flash_attn",
    "attn_implementation", "_attn_implementation", "rope_type", "use_return_dict",
    "original_max_position_embeddings",
};

std::string Shown(const YAML::Node& n) {
  std::string s = n.Scalar();
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return s;
}

}  // namespace

bool IsKnownIgnoredKey(const std::string& key) {
  return std::find(std::begin(kKnownIgnored), std::end(kKnownIgnored), key) != std::end(kKnownIgnored);
}

KeyReader::KeyReader(YAML::Node root, std::string filename, ModelSpec& spec)
    : root_(root), map_(root, std::move(filename)), spec_(spec) {}

void KeyReader::Note(const std::string& key) {
  if (std::find(read_.begin(), read_.end(), key) == read_.end()) read_.push_back(key);
  if (root_[key].IsDefined()) spec_.field_locs[key] = map_.Loc(key);
}

bool KeyReader::HasValue(const std::string& key) {
  Note(key);
  return map_.HasValue(key);
}

YAML::Node KeyReader::Get(const std::string& key) {
  Note(key);
  return map_.Get(key);
}

SourceLoc KeyReader::Loc(const std::string& key) const { return map_.Loc(key); }

SourceLoc KeyReader::ItemLoc(const std::string& key, size_t n) const {
  YAML::Node list = root_[key];
  if (list.IsSequence() && n < list.size()) return yamlutil::LocOf(list[n], map_.filename());
  return Loc(key);
}

void KeyReader::Fail(const std::string& key, const std::string& message) const { map_.Fail(key, message); }

void KeyReader::RejectQuoted(const std::string& key, const char* expected) const {
  YAML::Node n = root_[key];
  // yaml-cpp tags quoted scalars "!"; plain scalars (JSON numbers, true/false) "?".
  if (n.IsDefined() && n.IsScalar() && n.Tag() == "!") {
    Fail(key, std::string("expected ") + expected + ", found the string \"" + Shown(n) + "\"");
  }
}

int64_t KeyReader::Int(const std::string& key, int64_t min, int64_t max, std::optional<int64_t> fallback) {
  Note(key);
  return map_.Int(key, min, max, fallback);  // refuses a quoted "4096" itself
}

bool KeyReader::Bool(const std::string& key, std::optional<bool> fallback) {
  Note(key);
  RejectQuoted(key, "true or false");
  return map_.Bool(key, fallback);
}

std::string KeyReader::Str(const std::string& key, std::optional<std::string> fallback) {
  Note(key);
  return map_.Str(key, fallback);
}

std::vector<int64_t> KeyReader::IntList(const std::string& key, int64_t min, int64_t max) {
  std::vector<int64_t> out;
  YAML::Node list = Get(key);
  if (!list.IsDefined() || list.IsNull()) return out;
  if (!list.IsSequence()) Fail(key, "expected a list of integers, found " + (list.IsMap() ? std::string("a map") : "'" + Shown(list) + "'"));
  for (size_t i = 0; i < list.size(); ++i) {
    YAML::Node item = list[i];
    int64_t v = 0;
    bool ok = item.IsScalar() && item.Tag() != "!";
    if (ok) {
      try {
        v = item.as<int64_t>();
      } catch (const YAML::Exception&) {
        ok = false;
      }
    }
    std::string field = map_.Field(key) + "[" + std::to_string(i) + "]";
    if (!ok) {
      throw InputError(ItemLoc(key, i), field,
                       "expected an integer, found " + (item.IsScalar() ? "'" + Shown(item) + "'" : std::string("a list or map")));
    }
    if (v < min || v > max) {
      throw InputError(ItemLoc(key, i), field,
                       "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], found " +
                           std::to_string(v));
    }
    out.push_back(v);
  }
  return out;
}

std::optional<std::vector<std::string>> KeyReader::StrList(const std::string& key) {
  YAML::Node list = Get(key);
  if (!list.IsDefined() || list.IsNull()) return std::nullopt;
  if (!list.IsSequence()) {
    Fail(key, "expected a list of strings, found " + (list.IsMap() ? std::string("a map") : "'" + Shown(list) + "'"));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].IsScalar()) {
      throw InputError(ItemLoc(key, i), map_.Field(key) + "[" + std::to_string(i) + "]",
                       "expected a string, found a list or map");
    }
    out.push_back(list[i].Scalar());
  }
  return out;
}

void KeyReader::CheckSpelling() const {
  for (const auto& kv : root_) {
    if (!kv.first.IsScalar()) {
      throw InputError(yamlutil::LocOf(kv.first, map_.filename()), "", "keys must be strings");
    }
    const std::string& key = kv.first.Scalar();
    if (std::find(read_.begin(), read_.end(), key) != read_.end() || IsKnownIgnoredKey(key)) continue;
    std::string best;
    size_t best_d = 3;  // only distance <= 2 counts as a misspelling
    for (const std::string& r : read_) {
      // Distance >= length difference: skip the O(n*m) work for keys that cannot be close.
      if (key.size() > r.size() + 2 || r.size() > key.size() + 2) continue;
      size_t d = yamlutil::EditDistance(key, r);
      if (d < best_d) {
        best_d = d;
        best = r;
      }
    }
    if (!best.empty()) {
      throw InputError(yamlutil::LocOf(kv.first, map_.filename()), key,
                       "unknown key; did you mean '" + best + "'?");
    }
  }
}

}  // namespace meshplan::model
