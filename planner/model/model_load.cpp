// LoadModel and the small lookups of model.hpp: presets (models/, embedded at build time by
// cmake/embed_data.cmake), architecture names and field locations.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "data/yaml_util.hpp"
#include "meshplan/data.hpp"
#include "model/model_internal.hpp"

namespace meshplan {
namespace model {
namespace {

constexpr Architecture kAllArchitectures[] = {
    Architecture::kLlama, Architecture::kMistral,  Architecture::kMixtral,    Architecture::kQwen2,
    Architecture::kQwen3, Architecture::kQwen3Moe, Architecture::kDeepseekV3, Architecture::kGptOss,
    Architecture::kNemotronH, Architecture::kGlm4Moe, Architecture::kDeepseekV2, Architecture::kPhi3,
    Architecture::kGranite, Architecture::kOlmo2, Architecture::kOlmoe, Architecture::kGemma2,
    Architecture::kGemma3, Architecture::kQwen3Next, Architecture::kQwen3_5Moe, Architecture::kDeepseekV32,
    Architecture::kLlama4, Architecture::kDeepseekV4,
};

/// Other Hugging Face names of a supported architecture: a vision-language class whose text
/// backbone (text_config) is the architecture (TextConfigOf in model_parse.cpp), or the text-only
/// class of the same backbone (Megatron-Bridge's qwen35_bridge.py registers Qwen3_5MoeForCausalLM).
struct ArchitectureAlias {
  const char* name;
  Architecture architecture;
};
constexpr ArchitectureAlias kAliases[] = {
    {"Gemma3ForConditionalGeneration", Architecture::kGemma3},
    {"Qwen3_5MoeForCausalLM", Architecture::kQwen3_5Moe},
    {"Llama4ForCausalLM", Architecture::kLlama4},  // Llama4TextConfig at the top level
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

/// The config.json of a Hugging Face snapshot directory (`huggingface-cli download --local-dir`)
/// or of a hub cache folder (models--ORG--NAME: snapshots/<refs/main>/, or its only snapshot);
/// "" when `arg` is neither.
std::string SnapshotConfig(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(arg, ec)) return "";
  const fs::path dir(arg);
  if (fs::exists(dir / "config.json", ec)) return (dir / "config.json").string();
  const fs::path snapshots = dir / "snapshots";
  if (!fs::is_directory(snapshots, ec)) return "";
  std::ifstream ref(dir / "refs" / "main");
  std::string hash;
  if (ref && std::getline(ref, hash) && !hash.empty() && fs::exists(snapshots / hash / "config.json", ec)) {
    return (snapshots / hash / "config.json").string();
  }
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(snapshots, ec)) {
    if (fs::exists(e.path() / "config.json", ec)) found.push_back(e.path() / "config.json");
  }
  return found.size() == 1 ? found.front().string() : "";
}

bool IsSnapshotDir(const std::string& arg) { return !SnapshotConfig(arg).empty(); }

/// A path rather than a preset name: an existing file (a FIFO or device too, for the reader
/// to refuse by name), a snapshot directory, or anything that looks like a path.
bool LooksLikePath(const std::string& arg) {
  std::error_code ec;
  if (IsSnapshotDir(arg)) return true;
  if (std::filesystem::exists(arg, ec) && !std::filesystem::is_directory(arg, ec)) return true;
  return arg.find('/') != std::string::npos || EndsWith(arg, ".json") || EndsWith(arg, ".yaml") ||
         EndsWith(arg, ".yml");
}

std::optional<Architecture> ArchitectureFromName(const std::string& name) {
  for (Architecture a : kAllArchitectures) {
    if (name == ArchitectureName(a)) return a;
  }
  for (const ArchitectureAlias& x : kAliases) {
    if (name == x.name) return x.architecture;
  }
  return std::nullopt;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace model

/// The HF class names (transformers models/*/modeling_*.py).
const char* ArchitectureName(Architecture a) {
  switch (a) {
    case Architecture::kLlama: return "LlamaForCausalLM";
    case Architecture::kMistral: return "MistralForCausalLM";
    case Architecture::kMixtral: return "MixtralForCausalLM";
    case Architecture::kQwen2: return "Qwen2ForCausalLM";
    case Architecture::kQwen3: return "Qwen3ForCausalLM";
    case Architecture::kQwen3Moe: return "Qwen3MoeForCausalLM";
    case Architecture::kDeepseekV3: return "DeepseekV3ForCausalLM";
    case Architecture::kGptOss: return "GptOssForCausalLM";
    case Architecture::kNemotronH: return "NemotronHForCausalLM";
    case Architecture::kGlm4Moe: return "Glm4MoeForCausalLM";
    case Architecture::kDeepseekV2: return "DeepseekV2ForCausalLM";
    case Architecture::kPhi3: return "Phi3ForCausalLM";
    case Architecture::kGranite: return "GraniteForCausalLM";
    case Architecture::kOlmo2: return "Olmo2ForCausalLM";
    case Architecture::kOlmoe: return "OlmoeForCausalLM";
    case Architecture::kGemma2: return "Gemma2ForCausalLM";
    case Architecture::kGemma3: return "Gemma3ForCausalLM";
    case Architecture::kQwen3Next: return "Qwen3NextForCausalLM";
    case Architecture::kQwen3_5Moe: return "Qwen3_5MoeForConditionalGeneration";
    case Architecture::kLlama4: return "Llama4ForConditionalGeneration";
    case Architecture::kDeepseekV32: return "DeepseekV32ForCausalLM";
    case Architecture::kDeepseekV4: return "DeepseekV4ForCausalLM";
    case Architecture::kGeneric: return "generic decoder";
  }
  return "?";
}

/// In declaration order of the Architecture enum.
std::vector<std::string> SupportedArchitectures() {
  std::vector<std::string> out;
  for (Architecture a : model::kAllArchitectures) out.emplace_back(ArchitectureName(a));
  for (const model::ArchitectureAlias& x : model::kAliases) out.emplace_back(x.name);
  return out;
}

/// Stems of models/*.json and models/*.yaml compiled into the binary, sorted, unique.
std::vector<std::string> ListModelPresets() {
  std::vector<std::string> names = data::ListEmbedded("models");
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string GenericModelWarning(const ModelSpec& model) {
  if (!model.generic_note.empty()) return "model " + model.name + ": " + model.generic_note;
  if (!model.excluded_note.empty()) return "model " + model.name + ": " + model.excluded_note;
  return "";
}

SourceLoc ModelSpec::Loc(const std::string& field) const {
  auto it = field_locs.find(field);
  if (it != field_locs.end()) return it->second;
  return SourceLoc{source.file, 0, 0};
}

/// A path is read from disk (messages name the path); a preset is read from the embedded
/// copy of models/<name>.json (or .yaml), named "<embedded>/models/<name>.json".
ModelSpec LoadModel(const std::string& name_or_path, const ModelReadOptions& options) {
  if (model::LooksLikePath(name_or_path)) {
    // A snapshot directory (huggingface-cli download's folder) is read through its config.json.
    const std::string snapshot = model::SnapshotConfig(name_or_path);
    const std::string file = snapshot.empty() ? name_or_path : snapshot;
    std::string text = data::ReadFileOrThrow(file);
    ModelSpec spec = ParseModel(text, file, options);
    spec.name = name_or_path;
    return spec;
  }
  for (const char* ext : {".json", ".yaml"}) {
    std::string path = "models/" + name_or_path + ext;
    if (auto text = data::FindEmbedded(path)) {
      ModelSpec spec = ParseModel(*text, "<embedded>/" + path);
      spec.name = name_or_path;
      return spec;
    }
  }
  std::vector<std::string> presets = ListModelPresets();
  std::string hint = yamlutil::DidYouMean(name_or_path, presets);
  // A long argument is shown cut (a 100 KB name was echoed whole).
  const std::string shown = name_or_path.size() > 80 ? name_or_path.substr(0, 77) + "..." : name_or_path;
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(name_or_path, ec);
  throw InputError(SourceLoc{}, "model",
                   "unknown model preset '" + shown + "'" +
                       (dir ? " (a directory of that name exists but holds no config.json)" : "") +
                       (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                       "; expected a path to a config.json / .yaml file or one of: " + model::JoinNames(presets));
}

}  // namespace meshplan
