// Published-runs CSV files (Megatron-Bridge perf tables, the published-runs survey) -> typed
// runs with their skip reasons, and the Megatron-Bridge layout of each run.
#include "accuracy/published_runs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>

#include "data/yaml_util.hpp"
#include "meshplan/data.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/diag.hpp"
#include "frameworks/megatron_bridge/space.hpp"
#include "meshplan/framework.hpp"

namespace meshplan::accuracy {

namespace {

// RFC-4180-ish CSV line split: quoted cells may hold commas and doubled quotes. A quote left
// open at the end of the line sets *unterminated (quoted cells do not span lines here).
std::vector<std::string> SplitCsv(const std::string& line, bool* unterminated = nullptr) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cell += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(cell);
      cell.clear();
    } else if (ch != '\r') {
      cell += ch;
    }
  }
  if (unterminated != nullptr) *unterminated = quoted;
  out.push_back(cell);
  return out;
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::string Lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// Leading number of a cell ("661 (624)" -> 661). False when the cell does not start with one.
bool LeadNum(const std::string& cell, double& out) {
  const std::string s = Trim(cell);
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return false;
  try {
    size_t used = 0;
    out = std::stod(s, &used);
    return true;
  } catch (...) {
    return false;
  }
}

// A size cell: empty / "n/a" -> fallback; a plain integer in [1, max] (optionally followed by
// " (...)"). False when the cell is anything else.
bool SizeCell(const std::string& cell, int64_t fallback, int64_t& out, int64_t max = int64_t{1} << 30) {
  const std::string s = Trim(cell);
  if (s.empty() || s == "n/a" || s == "-") {
    out = fallback;
    return true;
  }
  double v = 0;
  if (!LeadNum(s, v) || v < 1 || v != std::floor(v) || v > double(max)) return false;
  size_t end = 0;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  if (end < s.size() && s[end] != ' ') return false;  // "8x", "3.5"
  out = int64_t(v);
  return true;
}

// Reads the size columns in order; the first one that is not an integer in range becomes the
// row's skip reason, naming the column and the cell.
struct SizeReader {
  std::string problem;
  void Read(const char* column, const std::string& cell, int64_t fallback, int64_t& out, int64_t max) {
    if (!problem.empty()) return;
    if (!SizeCell(cell, fallback, out, max) || (fallback == 0 && out < 1)) {
      problem = std::string(column) + ": expected an integer in [1, " + std::to_string(max) + "], found '" +
                Trim(cell) + "'";
    }
  }
};

constexpr int64_t kMaxGpus = int64_t{1} << 20, kMaxSeq = int64_t{1} << 24, kMaxBatch = int64_t{1} << 30;

// Model name of either file -> meshplan preset ("" = cannot describe).
std::string PresetOf(const std::string& raw) {
  std::string s = Lower(raw);
  for (char& ch : s) {
    if (ch == '_' || ch == '-' || ch == ' ' || ch == '.') ch = ' ';
  }
  auto has = [&](const char* k) { return s.find(k) != std::string::npos; };
  // Nemotron 3 Nano, Super and Ultra: the NemotronHForCausalLM presets (Super and Ultra with
  // LatentMoE and an MTP block). DeepSeek-V4 Flash: the DeepseekV4ForCausalLM preset (Pro: none).
  if (has("nemotron 3 nano")) return "nemotron-3-nano";
  if (has("deepseek") && has("v4") && has("flash")) return "deepseek-v4-flash";
  if (has("nemotron 3 super")) return "nemotron-3-super";
  if (has("nemotron 3 ultra")) return "nemotron-3-ultra";
  if (has("nemotron") || has("v4")) return "";
  if (has("deepseek") && has("v3")) return "deepseek-v3";
  if (has("kimi")) return "kimi-k2";
  if (has("qwen3") && has("235")) return "qwen3-235b-a22b";
  if (has("qwen3") && has("30b")) return "qwen3-30b-a3b";
  if (has("gpt oss") && has("120")) return "gpt-oss-120b";
  if (has("gpt oss") && has("20b")) return "gpt-oss-20b";
  if (has("llama3 1 405b") || has("llama 3 1 405b") || has("llama 3 405b")) return "llama3.1-405b";
  if (has("llama3 1 70b") || has("llama 3 1 70b")) return "llama3.1-70b";
  if (has("llama3 1 8b") || has("llama 3 1 8b")) return "llama3.1-8b";
  if (has("llama3 70b") || has("llama 3 70b")) return "llama3-70b";
  if (has("llama3 8b") || has("llama 3 8b")) return "llama3-8b";
  if (has("mixtral") && has("8x7b")) return "mixtral-8x7b";
  if (has("mixtral") && has("8x22b")) return "mixtral-8x22b";
  return "";
}

// System name of either file -> hwdb system ("" = none).
std::string SystemOf(const std::string& raw) {
  const std::string s = Lower(raw);
  auto has = [&](const char* k) { return s.find(k) != std::string::npos; };
  if (has("gb300")) return "gb300-nvl72";
  if (has("gb200")) return "gb200-nvl72";
  if (has("b300")) return "dgx-b300";
  if (has("b200")) return "dgx-b200";
  if (has("h200")) return "dgx-h200";
  // The 96 GB HBM2e H100 is a 500 W part in Meta's Grand Teton servers (torchtitan's benchmark
  // cluster, groundtruth.md A and C.1): its own system. H800 has 400 GB/s NVLink: no system.
  if (has("h100") && has("96gb")) return "grand-teton-h100-96gb";
  if (has("h100") && !has("h800")) return "dgx-h100";
  if (has("a100") && has("80gb")) return "dgx-a100";
  return "";
}

// Precision cell -> GEMM precision. FP8 (delayed / current scaling, "FP8-CS") and MXFP8
// ("FP8-MX") run at the FP8 tensor-core rate; NVFP4 at the FP4 rate; empty / BF16 at BF16.
Precision PrecisionOf(const std::string& raw) {
  const std::string s = Lower(Trim(raw));
  if (s.find("fp4") != std::string::npos) return Precision::kFp4;
  if (s.find("fp8") != std::string::npos && s.rfind("bf16", 0) != 0) return Precision::kFp8;
  return Precision::kBf16;
}

// MTP layers a row's model name says the run trained, or kMtpFromModel (the model provider's
// mtp_num_layers, num_nextn_predict_layers: DeepSeek-V3 1, the recipes' default).
int64_t MtpOf(const std::string& raw) {
  const std::string s = Lower(raw);
  if (s.find("w/o mtp") != std::string::npos) return 0;
  if (s.find("w/ mtp") != std::string::npos) return 1;
  return kMtpFromModel;
}

void ReadMbridge(const std::vector<std::string>& c, PublishedRun& r) {
  // release,task,model,system,gpus,precision,gbs,mbs,seq,fsdp,tp,pp,cp,vp,ep,ga,tok,tflops
  auto cell = [&](size_t i) { return i < c.size() ? c[i] : std::string(); };
  // An empty precision cell is the 25.09 table's, which had no precision column: its numbers
  // are FP8 (current or delayed scaling) runs, the parenthesised ones the MX / blockwise
  // variant (megatron.md 5.1; the 25.09 layouts match the releases' fp8 presets, not the bf16
  // ones: recipes/megatron-bridge-perf.yaml notes). Priced as FP8.
  const bool no_precision = Trim(cell(5)).empty();
  r.label = cell(2) + " " + cell(3) + " " + cell(4) + " " + (no_precision ? "FP8 (25.09)" : cell(5));
  r.release = Trim(cell(0));
  r.task = Lower(Trim(cell(1))) == "sft" ? "sft" : "pretrain";
  if (Lower(cell(1)) == "lora") r.skip = "LoRA (frozen base weights: no weight-gradient GEMMs) not modelled";
  r.preset = PresetOf(cell(2));
  r.system = SystemOf(cell(3));
  r.gpu_cell = cell(3);
  r.setup.precision = no_precision ? Precision::kFp8 : PrecisionOf(cell(5));
  r.precision_cell = cell(5);
  {
    // The table's precision cells (anything else would be priced at a guessed rate).
    std::string p = Lower(Trim(cell(5)));
    p.erase(std::remove(p.begin(), p.end(), ' '), p.end());
    static const char* const kKnown[] = {"", "bf16", "fp8", "fp8-cs", "fp8-mx", "mxfp8", "nvfp4", "fp8-cs(fp8-mx)"};
    if (std::find(std::begin(kKnown), std::end(kKnown), p) == std::end(kKnown) && r.skip.empty()) {
      r.skip = "precision '" + Trim(cell(5)) +
               "': expected empty (the 25.09 table: FP8), BF16, FP8, FP8-CS, FP8-MX, MXFP8, NVFP4 or FP8-CS (FP8-MX)";
    }
  }
  r.tokendrop = Lower(cell(2)).find("tokendrop") != std::string::npos;
  r.mtp = MtpOf(cell(2));
  int64_t gpus = 0, gbs = 0, seq = 0, fs = 0;
  SizeReader sz;
  sz.Read("gpus", cell(4), 0, gpus, kMaxGpus);
  sz.Read("gbs", cell(6), 0, gbs, kMaxBatch);
  sz.Read("seq", cell(8), 0, seq, kMaxSeq);
  sz.Read("mbs", cell(7), 1, r.micro_batch, kMaxBatch);
  sz.Read("tp", cell(10), 1, r.tp, kMaxGpus);
  sz.Read("pp", cell(11), 1, r.pp, kMaxGpus);
  sz.Read("cp", cell(12), 1, r.cp, kMaxGpus);
  sz.Read("vp", cell(13), 1, r.vpp, kMaxGpus);
  sz.Read("ep", cell(14), 1, r.ep, kMaxGpus);
  double f = 0;
  if (LeadNum(cell(9), f)) fs = int64_t(f);
  r.megatron_fsdp = fs > 0;
  if (!sz.problem.empty() && r.skip.empty()) r.skip = sz.problem;
  r.setup.num_gpus = gpus;
  r.setup.global_batch = gbs;
  r.setup.seq_len = seq;
  if (double ga = 0; LeadNum(cell(15), ga) && ga >= 1 && ga == std::floor(ga) && ga <= double(kMaxBatch)) {
    r.gradient_accumulation = int64_t(ga);
  }
  LeadNum(cell(16), r.published_tokens);
  LeadNum(cell(17), r.published_tflops);
  if (c.size() != 18 && r.skip.empty()) r.skip = "row has " + std::to_string(c.size()) + " cells, expected 18";
  for (size_t i : {size_t(16), size_t(17)}) {
    double v = 0;
    if (r.skip.empty() && !Trim(cell(i)).empty() && (!LeadNum(cell(i), v) || !(v > 0) || !std::isfinite(v))) {
      r.skip = std::string(i == 16 ? "tokens_per_s_per_gpu" : "model_tflops_per_gpu") + " '" + Trim(cell(i)) +
               "' is not a positive number";
    }
  }
}

// An entry of recipes/published-run-settings.yaml: the settings of the runs whose source and
// model cells contain `source` and `model` and, where given, whose notes cell contains `notes`
// (lower case; "" matches every row).
struct SourceRunSettings {
  std::string source, model, megatron_settings, notes;
};

void ReadMegatronSettings(const std::string& text, PublishedRun& r);

// The embedded recipes/published-run-settings.yaml, read once. Throws InputError (file, line,
// field) for a missing key, an unknown one or a megatron_settings item ReadMegatronSettings
// does not know.
const std::vector<SourceRunSettings>& SourceRunSettingsTable() {
  static const std::vector<SourceRunSettings> table = [] {
    constexpr const char* kPath = "recipes/published-run-settings.yaml";
    const auto embedded = data::FindEmbedded(kPath);
    if (!embedded) throw InputError(SourceLoc{kPath, 0, 0}, "", "the embedded published-run settings are missing");
    const YAML::Node root = yamlutil::ParseMap(std::string(*embedded), kPath);
    yamlutil::MapReader top(root, kPath);
    const YAML::Node list = top.Get("runs");
    if (!list.IsSequence()) top.Fail("runs", "expected a list of run entries, found " + yamlutil::Shown(list));
    top.RejectUnknown();
    std::vector<SourceRunSettings> out;
    for (size_t i = 0; i < list.size(); ++i) {
      yamlutil::MapReader e(list[i], kPath, "runs[" + std::to_string(i) + "]");
      SourceRunSettings s{Lower(e.Str("source")), Lower(e.Str("model")), e.Str("megatron_settings"),
                          e.Has("notes") ? Lower(e.Str("notes")) : std::string()};
      e.Str("evidence");
      e.RejectUnknown();
      PublishedRun probe;
      ReadMegatronSettings(s.megatron_settings, probe);
      if (!probe.skip.empty()) e.Fail("megatron_settings", probe.skip);
      out.push_back(std::move(s));
    }
    return out;
  }();
  return table;
}

// The survey's megatron_settings cell: "key=true|false" items (and attention_backend =
// unfused | flash | fused) separated by ';'. A key or a value it does not know becomes the
// row's skip reason, naming the item.
void ReadMegatronSettings(const std::string& text, PublishedRun& r) {
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ';');) {
    item = Trim(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = Trim(item.substr(0, eq)), value = eq == std::string::npos ? "" : Lower(Trim(item.substr(eq + 1)));
    if (key == "attention_backend") {  // Megatron-Core's AttnBackend names
      if (value != "unfused" && value != "flash" && value != "fused") {
        if (r.skip.empty()) {
          r.skip = "megatron_settings: attention_backend expects unfused, flash or fused, found '" + item + "'";
        }
        return;
      }
      r.unfused_attention = value == "unfused";
      continue;
    }
    Tri* field = key == "distributed_optimizer" ? &r.distributed_optimizer
                 : key == "sequence_parallel"    ? &r.sequence_parallel
                 : key == "tp_comm_overlap"      ? &r.tp_comm_overlap
                 : key == "overlap_grad_reduce"  ? &r.overlap_grad_reduce
                 : key == "scatter_gather_tensors_in_pipeline" ? &r.pp_scatter_gather
                 : key == "grad_reduce_in_fp32"  ? &r.grad_reduce_in_fp32
                                                 : nullptr;
    if (field == nullptr || (value != "true" && value != "false")) {
      if (r.skip.empty()) {
        r.skip = "megatron_settings: expected items distributed_optimizer, sequence_parallel, tp_comm_overlap, "
                 "overlap_grad_reduce, scatter_gather_tensors_in_pipeline or grad_reduce_in_fp32 = true / false, or "
                 "attention_backend = "
                 "unfused / flash / fused, found '" + item + "'";
      }
      return;
    }
    *field = value == "true" ? Tri::kTrue : Tri::kFalse;
  }
}

/// The survey row's model from its shape columns, for a row no preset describes: a generic
/// decoder (GenericDecoder). Every size must be given: a missing size, a bare '?', a '?' with
/// words after it ("52? (hybrid ...)": the count itself is in doubt) or MLA attention (its ranks
/// are not in the columns) leaves the row skipped, `why` saying which cell. A size the source
/// gives with a trailing '?' ("50257?", "32?": its best reading, marked unconfirmed) is used as
/// given and named in the model's generic_note, so every output that shows the row says so.
/// Cells: ffn_hidden "F" (dense), "F expert" (every layer MoE) or "F dense / E expert";
/// experts "" (dense), "N" or "N routed + S shared"; kv_heads "" = heads.
/// The MLP is gated (SwiGLU, 3 matrices) or a two-matrix one (GeLU / squared ReLU, as GPT-3,
/// MT-NLG, OPT and Nemotron-4 have): the one whose parameter count is nearer the row's
/// params_B; without params_B, two-matrix exactly when ffn_hidden = 4 x hidden.
std::optional<ModelSpec> ShapeModel(const std::function<std::string(const char*)>& cell, const SourceLoc& at,
                                    std::string& why) {
  DecoderShape d;
  std::vector<std::string> unconfirmed;  // "vocab '50257?'": sizes read from a trailing-'?' cell
  auto size = [&](const char* column, int64_t fallback, int64_t& out) {
    if (!why.empty()) return;
    const std::string c = Trim(cell(column));
    const bool marked = c.size() > 1 && c.back() == '?' && c.find_first_not_of("0123456789") == c.size() - 1;
    if (!SizeCell(marked ? c.substr(0, c.size() - 1) : c, fallback, out) || (fallback == 0 && out < 1)) {
      why = std::string(column) + " '" + c + "' is not a stated size";
    } else if (marked) {
      unconfirmed.push_back(std::string(column) + " '" + c + "'");
    }
  };
  size("layers", 0, d.num_layers);
  size("hidden", 0, d.hidden_size);
  size("heads", 0, d.num_attention_heads);
  if (why.empty() && Lower(cell("kv_heads")).find("mla") != std::string::npos) {
    why = "kv_heads '" + Trim(cell("kv_heads")) + "': MLA attention, whose ranks the columns do not give";
  }
  size("kv_heads", -1, d.num_key_value_heads);
  size("vocab", 0, d.vocab_size);
  const std::string ffn = Lower(Trim(cell("ffn_hidden")));
  const size_t slash = ffn.find('/');
  int64_t expert_width = 0;
  if (slash != std::string::npos) {
    size_t tail = slash + 1;
    while (tail < ffn.size() && ffn[tail] == ' ') ++tail;
    if (why.empty() && (!SizeCell(ffn.substr(0, slash), 0, d.intermediate_size) ||
                        !SizeCell(ffn.substr(tail), 0, expert_width) ||
                        ffn.find("expert", tail) == std::string::npos)) {
      why = "ffn_hidden '" + Trim(cell("ffn_hidden")) + "' is not 'F', 'F expert' or 'F dense / E expert'";
    }
  } else if (ffn.find("expert") != std::string::npos) {
    size("ffn_hidden", 0, expert_width);
    d.intermediate_size = expert_width;
  } else {
    size("ffn_hidden", 0, d.intermediate_size);
  }
  const std::string experts = Lower(Trim(cell("experts")));
  if (why.empty() && !experts.empty()) {
    const size_t plus = experts.find('+');
    if (!SizeCell(experts.substr(0, plus), 0, d.num_experts) ||
        (plus != std::string::npos &&
         !SizeCell(Trim(experts.substr(plus + 1)), 0, d.num_shared_experts))) {
      why = "experts '" + Trim(cell("experts")) + "' is not 'N' or 'N routed + S shared'";
    }
    size("topk", 0, d.experts_per_token);
    d.moe_intermediate_size = expert_width;
  } else if (why.empty() && expert_width > 0) {
    why = "ffn_hidden '" + Trim(cell("ffn_hidden")) + "' gives an expert width but experts is empty";
  }
  if (!why.empty()) return std::nullopt;
  if (d.num_key_value_heads < 1) d.num_key_value_heads = 0;
  try {
    ModelSpec gated = GenericDecoder(d, Trim(cell("model")), at);
    double published = 0;
    const std::string params = Trim(cell("params_B"));
    const bool stated = LeadNum(params, published) && params.find('?') == std::string::npos && published > 0;
    DecoderShape two = d;
    two.gated_mlp = false;
    ModelSpec plain = GenericDecoder(two, Trim(cell("model")), at);
    const double g = double(CountParams(gated).total) / 1e9, p = double(CountParams(plain).total) / 1e9;
    const bool use_plain = stated ? std::fabs(p - published) < std::fabs(g - published)
                                  : d.intermediate_size == 4 * d.hidden_size;
    ModelSpec& m = use_plain ? plain : gated;
    if (!unconfirmed.empty()) {
      std::string list;
      for (const std::string& u : unconfirmed) list += (list.empty() ? "" : ", ") + u;
      m.generic_note += "; sizes the source marks unconfirmed ('?'), used as given: " + list;
    }
    return m;
  } catch (const InputError& e) {
    why = e.what();
    return std::nullopt;
  }
}

/// `shape_problem`: why the row's shape columns give no model (ShapeModel), "" when they do or
/// a preset describes it.
void ReadSurvey(const std::vector<std::string>& c, const std::map<std::string, size_t>& col, const std::string& file,
                PublishedRun& r, std::string& shape_problem) {
  const std::string dir = std::filesystem::path(file).parent_path().string();
  auto cell = [&](const char* name) {
    auto it = col.find(name);
    return it != col.end() && it->second < c.size() ? c[it->second] : std::string();
  };
  r.label = "#" + cell("id") + " " + cell("model") + " " + cell("num_gpus");
  r.preset = PresetOf(cell("model"));
  // A model no preset describes, given as a preset or a model file next to the CSV.
  if (const std::string given = Trim(cell("meshplan_model")); !given.empty()) {
    const bool path = given.find('/') != std::string::npos || given.ends_with(".yaml") || given.ends_with(".json");
    r.preset = path && !std::filesystem::path(given).is_absolute() ? (std::filesystem::path(dir) / given).string() : given;
  }
  if (r.preset.empty() && col.count("layers")) {
    r.shape_model = ShapeModel(cell, SourceLoc{file, r.line, 1}, shape_problem);
  }
  {
    const std::string src = Lower(cell("source")), model = Lower(cell("model")), notes = Lower(cell("notes"));
    for (const SourceRunSettings& e : SourceRunSettingsTable()) {
      if (src.find(e.source) != std::string::npos && model.find(e.model) != std::string::npos &&
          notes.find(e.notes) != std::string::npos) {
        ReadMegatronSettings(e.megatron_settings, r);
      }
    }
  }
  ReadMegatronSettings(cell("megatron_settings"), r);
  // What the row's own megatron_settings (or its source's entry) state wins over what the
  // zero_fsdp_distopt and recompute cells imply below.
  if (r.sequence_parallel == Tri::kUnset) {
    // The recompute cell names sequence parallelism where the source states it: "full (no
    // sequence parallel)", "selective (attention core) + sequence parallel", "none (SP on)".
    const std::string rc = Lower(cell("recompute"));
    if (rc.find("no sequence parallel") != std::string::npos || rc.find("sp off") != std::string::npos) {
      r.sequence_parallel = Tri::kFalse;
    } else if (rc.find("sequence parallel") != std::string::npos || rc.find("sp on") != std::string::npos) {
      r.sequence_parallel = Tri::kTrue;
    }
  }
  r.hardware_flops = Lower(Trim(cell("flops_basis"))).rfind("hw flops", 0) == 0;
  r.system = SystemOf(cell("gpu_type"));
  r.gpu_cell = cell("gpu_type");
  r.setup.precision = PrecisionOf(cell("precision"));
  int64_t gpus = 0, gbs = 0, seq = 0;
  SizeReader sz;
  sz.Read("num_gpus", cell("num_gpus"), 0, gpus, kMaxGpus);
  sz.Read("global_batch", cell("global_batch"), 0, gbs, kMaxBatch);
  sz.Read("seq_len", cell("seq_len"), 0, seq, kMaxSeq);
  sz.Read("TP", cell("TP"), 1, r.tp, kMaxGpus);
  sz.Read("PP", cell("PP"), 1, r.pp, kMaxGpus);
  sz.Read("CP", cell("CP"), 1, r.cp, kMaxGpus);
  sz.Read("EP", cell("EP"), 1, r.ep, kMaxGpus);
  if (!SizeCell(cell("VPP"), 1, r.vpp, kMaxGpus)) r.vpp = 1;  // "interleaved (v=?)": unknown, take 1
  if (!SizeCell(cell("micro_batch"), 1, r.micro_batch, kMaxBatch)) r.micro_batch = 1;
  if (!sz.problem.empty()) r.skip = sz.problem;
  const std::string zero = Lower(cell("zero_fsdp_distopt"));
  r.megatron_fsdp = zero.find("megatron-fsdp") != std::string::npos || zero.find("megatron fsdp") != std::string::npos;
  r.torch_fsdp2 = zero.find("fsdp2") != std::string::npos;
  // ZeRO-2 (Meta's Llama 3 FSDP: "optimizer states + grads sharded, params NOT resharded";
  // MegaScale's "ZeRO-2-style DP"): the weights stay whole on every DP rank, the gradients are
  // reduce-scattered into shards each micro-batch. In Megatron-Core that is Megatron FSDP's
  // optim_grads (megatron_fsdp.py: "conceptually close to ZeRO-2"), the strategy it is priced as.
  if (!r.torch_fsdp2 && (zero.find("grads sharded") != std::string::npos || zero.find("gradients sharded") != std::string::npos)) {
    r.megatron_fsdp = true;
    r.fsdp_sharding = MbSharding::kOptimGrads;
  }
  // "none (DDP)", "none (DP=1)", "none": plain data parallelism, no distributed optimizer (the
  // weights' fp32 copy and Adam moments whole on every DP rank), unless megatron_settings says.
  if (r.distributed_optimizer == Tri::kUnset && Trim(zero).rfind("none", 0) == 0) {
    r.distributed_optimizer = Tri::kFalse;
  }
  // DeepSpeed ZeRO-3 (parameters sharded and gathered per layer by DeepSpeed's own hooks) is
  // neither Megatron's distributed optimizer nor torch FSDP2: not priced as either.
  if (r.skip.empty() && zero.find("zero-3") != std::string::npos && !r.torch_fsdp2) {
    r.skip = "DeepSpeed ZeRO-3 not modelled";
  }
  r.automodel = Lower(cell("source")).find("nvidia-nemo/automodel") != std::string::npos;
  r.megatron_bridge_source = Lower(cell("source")).find("nvidia-nemo/megatron-bridge") != std::string::npos;
  if (r.megatron_bridge_source) r.release = ContainerRelease(cell("source"));
  r.torchtitan = Lower(cell("source")).find("pytorch/torchtitan") != std::string::npos;
  if (Trim(cell("notes")).rfind("SFT", 0) == 0) r.task = "sft";
  // AutoModel's FSDP2 runs (the survey's "FSDP2 (shard N)") train no MTP layers in meshplan's
  // pricing; Megatron runs follow the model provider.
  r.mtp = r.torch_fsdp2 ? 0 : MtpOf(cell("model"));
  const std::string rec = Lower(cell("recompute"));
  r.settings_unknown = Trim(rec).rfind("?", 0) == 0;
  r.precision_cell = cell("precision");
  // "full, block, 5 layers", "selective: ...", "core_attn (selective)", torchtitan's "per-op SAC"
  // (selective activation checkpointing, activation_checkpoint.mode: selective, option op).
  const bool selective = rec.find("selective") != std::string::npos || rec.find("sac") != std::string::npos;
  r.recompute = rec.rfind("full", 0) == 0 ? Recompute::kFull : selective ? Recompute::kSelective : Recompute::kNone;
  r.setup.num_gpus = gpus;
  r.setup.global_batch = gbs;
  r.setup.seq_len = seq;
  LeadNum(cell("tflops_per_gpu"), r.published_tflops);
  LeadNum(cell("tokens_per_s_per_gpu"), r.published_tokens);
  if (r.hardware_flops && r.published_tokens <= 0) LeadNum(cell("derived_tokens_per_s_per_gpu"), r.published_tokens);
  const std::string mem = Lower(cell("mem_per_gpu"));
  double gb = 0;
  if (LeadNum(mem, gb) && gb > 0 && std::isfinite(gb)) {
    if (mem.find("gib") != std::string::npos) r.published_memory = gb * 1024.0 * 1024.0 * 1024.0;
    else if (mem.find("gb") != std::string::npos) r.published_memory = gb * 1e9;
  }
}

// The header's format; throws InputError when it is neither, or when a column the format
// reads is not where (perf table) or not among (survey) the header's columns.
PublishedRunsFormat CheckHeader(const std::vector<std::string>& header, const std::map<std::string, size_t>& col,
                                std::string_view text, const std::string& line, bool one_line,
                                const std::string& file) {
  const bool mbridge = col.count("release") && col.count("model_tflops_per_gpu");
  const bool survey = col.count("gpu_type") && col.count("tflops_per_gpu");
  if (!mbridge && !survey) {
    const std::string head = Trim(line);
    // Binary: a control byte in the first line, or a NUL in the first 4 KiB (CSV text has none).
    const bool binary = text.substr(0, 4096).find('\0') != std::string_view::npos ||
                        std::any_of(head.begin(), head.end(), [](char ch) {
                          const auto u = static_cast<unsigned char>(ch);
                          return u < 0x20 && ch != '\t' && ch != '\r';
                        });
    const std::string found = head.empty() && one_line ? "an empty file"
                              : head.empty()           ? "an empty first line"
                              : binary                 ? "binary data (control bytes), not CSV text"
                                                       : "'" + head.substr(0, 80) + "'";
    throw InputError(SourceLoc{file, 1, 1}, "header",
                     "expected a Megatron-Bridge perf header (release,task,model,system,...) or a published-runs "
                     "header (id,model,...,gpu_type,TP,PP,...); found " + found);
  }
  // The perf table is read by position: every column must be where the header says.
  static const char* const kMbridgeColumns[] = {
      "release", "task", "model", "system", "gpus", "precision", "gbs", "mbs", "seq", "fsdp", "tp", "pp",
      "cp", "vp", "ep", "ga", "tokens_per_s_per_gpu", "model_tflops_per_gpu"};
  if (mbridge) {
    for (size_t i = 0; i < std::size(kMbridgeColumns); ++i) {
      const std::string found = i < header.size() ? Trim(header[i]) : std::string("(no column)");
      if (found != kMbridgeColumns[i]) {
        throw InputError(SourceLoc{file, 1, 1}, "header",
                         "expected column " + std::to_string(i + 1) + " of a Megatron-Bridge perf table to be '" +
                             kMbridgeColumns[i] + "', found '" + found + "'");
      }
    }
    return PublishedRunsFormat::kMegatronBridgePerf;
  }
  for (const char* needed : {"id", "model", "num_gpus", "gpu_type", "TP", "PP", "CP", "EP", "global_batch", "seq_len",
                             "precision", "tokens_per_s_per_gpu"}) {
    if (!col.count(needed)) {
      throw InputError(SourceLoc{file, 1, 1}, "header",
                       std::string("expected a published-runs column '") + needed + "'; the header has none");
    }
  }
  return PublishedRunsFormat::kSurvey;
}

}  // namespace

std::string ReadRunsFile(const std::string& path) {
  if (std::filesystem::is_directory(path)) {
    throw InputError(SourceLoc{path, 0, 0}, "runs", "expected a CSV file, found a directory");
  }
  std::ifstream f(path);
  if (!f.good()) {
    throw InputError(SourceLoc{path, 0, 0}, "runs",
                     std::filesystem::exists(path) ? "cannot read the file (permission denied or unreadable)"
                                                   : "no such file");
  }
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

PublishedRuns ParsePublishedRuns(std::string_view text, const std::string& file, const std::string& system_override) {
  // The lines as std::getline gives them: split at '\n', no empty line after a final '\n'.
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size() || lines.empty();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string first = lines.front();
  data::StripUtf8Bom(first);  // a spreadsheet's "CSV UTF-8" export starts with one
  const std::vector<std::string> header = SplitCsv(first);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[Trim(header[i])] = i;
  PublishedRuns out;
  out.format = CheckHeader(header, col, text, first, text.find('\n') == std::string_view::npos, file);
  // A row the CSV itself breaks (a quote left open, a cell too many or too few) makes the file
  // unusable: refused before any row is evaluated (exit 2), not skipped like a row that is
  // well formed but cannot be priced.
  std::vector<std::vector<std::string>> rows(lines.size());  // each line's cells; empty for a blank line
  for (size_t i = 1; i < lines.size(); ++i) {
    if (Trim(lines[i]).empty()) continue;
    bool open = false;
    rows[i] = SplitCsv(lines[i], &open);
    const SourceLoc at{file, int(i) + 1, 1};
    if (open) throw InputError(at, "row", "unterminated quote: a '\"' opens a cell that the line does not close");
    if (rows[i].size() != header.size()) {
      throw InputError(at, "row", "expected " + std::to_string(header.size()) + " cells as in the header, found " +
                                      std::to_string(rows[i].size()) + " (nothing was evaluated)");
    }
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    if (rows[i].empty()) continue;
    PublishedRun r;
    r.line = int(i) + 1;
    std::string shape_problem;
    if (out.format == PublishedRunsFormat::kMegatronBridgePerf) {
      ReadMbridge(rows[i], r);
    } else {
      ReadSurvey(rows[i], col, file, r, shape_problem);
    }
    if (!system_override.empty()) r.system = system_override;
    if (r.skip.empty() && r.preset.empty() && !r.shape_model) {
      r.skip = "model not describable (no preset for the model name)";
      r.skip_detail = shape_problem.empty() ? "" : "model not describable: no preset, and its shape " + shape_problem;
    }
    if (r.skip.empty() && r.system.empty()) {
      r.skip = "no hwdb system for the GPU";
      r.skip_detail = "no hwdb system for the GPU '" + r.gpu_cell + "'";
    }
    if (r.skip.empty() && r.published_tflops <= 0 && r.published_tokens <= 0) r.skip = "no published throughput";
    if (r.skip.empty() && (r.setup.num_gpus % (r.tp * r.pp * r.cp) != 0)) r.skip = "sizes do not divide the GPUs";
    out.runs.push_back(std::move(r));
  }
  return out;
}

// Megatron-Bridge's DeepSeek-V3 layout of 16 pipeline stages with one MTP layer, which its
// recipes set for PP 16, PP 8 x VPP 2 and PP 4 x VPP 4 (recipes/deepseek/deepseek_v3.py
// set_deepseek_v3_pipeline_model_parallel_layout, v0.2.0 .. v0.6.0) and its GB300 perf recipes
// give for PP 2 x VPP 8 (perf_recipes/deepseek/gb300/deepseek_v3.py, v0.6.0), Et*4|(t*4|)*14tmL,
// is meshplan's own split of those rows (OwnStageSplit with the MTP layer's places; tests/cost/
// mtp_test.cpp), so PublishedLayout's kLayout split prices it as written.
std::string ContainerRelease(const std::string& source) {
  static const std::regex kRelease(R"((\d{2}\.\d{2}(?:\.\d{2})?)\s+container)", std::regex::icase);
  std::smatch m;
  return std::regex_search(source, m, kRelease) ? m[1].str() : std::string();
}

Layout PublishedLayout(const PublishedRun& run, const ModelSpec& m, const SystemSpec& sys,
                       const recipe::PerfRecipeSettings* settings) {
  const TrainSetup& setup = run.setup;
  const int64_t tp = run.tp, pp = run.pp, cp = run.cp;
  Layout l;
  l.framework = FindFramework("megatron-bridge")->id;
  l.mtp_layers = run.mtp == kMtpFromModel ? m.mtp_num_layers : run.mtp;
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  l.vpp = run.vpp;
  l.ep = run.ep;
  l.etp = m.is_moe() && tp > 1 ? 1 : 0;  // published MoE recipes pin ETP 1
  l.dp = setup.num_gpus / (tp * pp * cp);
  l.sequence_parallel = tp > 1;
  l.recompute = run.recompute;
  l.use_distributed_optimizer = run.distributed_optimizer != Tri::kFalse;
  if (run.sequence_parallel == Tri::kFalse) l.sequence_parallel = false;
  l.mb.use_megatron_fsdp = run.megatron_fsdp;
  // torch FSDP2 runs: Megatron-Bridge's dist.use_torch_fsdp2 prices the sharding of weights,
  // gradients and optimizer state (its rules allow it with PP 1 and EP 1 only; the other FSDP2
  // rows, AutoModel's MoE runs with EP, keep the distributed optimizer).
  if (run.torch_fsdp2 && run.pp == 1 && run.ep == 1) {
    l.mb.use_torch_fsdp2 = true;
    l.use_distributed_optimizer = false;
  }
  // A survey row that states its recompute keeps it over its recipe function's (the SFT rows of
  // Megatron-Bridge's memory-tuning study name core_attn where the function sets none).
  // The perf table's entry for the row's container release is the run's own recompute.
  const bool keep_row_recompute = settings && run.megatron_bridge_source && !run.settings_unknown &&
                                  !run.release_settings && run.recompute != settings->recompute;
  if (settings && !keep_row_recompute) {
    l.recompute = settings->recompute;
  }
  const int64_t L = m.num_layers;
  l.pp_split = pp == 1 || L % pp == 0 ? MbPpSplit::kEven
               : (L + 2) % pp == 0    ? MbPpSplit::kAccountEmbeddingLoss
                                      : MbPpSplit::kLayout;
  // Megatron FSDP named by the recipe (the table's fsdp column is empty for the 26.08 Nemotron 3
  // Ultra runs, whose perf recipes set ddp.use_megatron_fsdp: perf_recipes/nemotronh/common.py
  // _apply_nemotron_3_ultra_fsdp_hsdp, v0.6.0); before the emitted settings, which derive the
  // FSDP fields (sharding, distributed optimizer) from it.
  if (settings && settings->use_megatron_fsdp) l.mb.use_megatron_fsdp = true;
  search::ApplyEmittedSettings(l, sys, setup.precision);
  if (run.fsdp_sharding != MbSharding::kUnset) l.mb.sharding = run.fsdp_sharding;
  if (settings) {
    search::ApplyMbRuntime(l, settings->runtime);
    // The row's own selective recompute: Megatron-Core's default modules ([core_attn], bits 0).
    l.mb.recompute_modules = keep_row_recompute ? 0u : settings->recompute_modules;
    if (settings->recompute == Recompute::kFull && !keep_row_recompute) {
      l.mb.recompute_method = settings->recompute_method;
      l.mb.recompute_num_layers = settings->recompute_num_layers;
    }
    l.mb.cpu_offloading_num_layers = settings->cpu_offloading_num_layers;
    l.mb.optimizer_state_bytes = settings->optimizer_state_bytes;
    l.mb.cpu_offloading = settings->cpu_offloading_num_layers > 0;
    l.mb.num_distributed_optimizer_instances = settings->num_distributed_optimizer_instances;
  }
  // The run's own software where it differs from what meshplan emits (after the recipe
  // settings: a survey row names them only when it knows them).
  if (run.tp_comm_overlap != Tri::kUnset) l.mb.tp_comm_overlap = run.tp_comm_overlap;
  l.mb.unfused_attention = run.unfused_attention;
  // Megatron-LM scatters the pipeline tensor over TP only without sequence parallelism (with
  // it the tensor is already split along the sequence): megatron/p2p_communication.py
  // _communicate, `args.scatter_gather_tensors_in_pipeline and not args.sequence_parallel`
  // (NVIDIA/Megatron-LM c3e688d, 2022-11-10).
  l.mb.pp_scatter_gather = run.pp_scatter_gather == Tri::kTrue && !l.sequence_parallel;
  if (run.grad_reduce_in_fp32 != Tri::kUnset) l.mb.grad_reduce_in_fp32 = run.grad_reduce_in_fp32 == Tri::kTrue;
  if (run.overlap_grad_reduce != Tri::kUnset) {
    l.mb.overlap_grad_reduce = l.mb.overlap_param_gather = run.overlap_grad_reduce;
  }
  SetMegatronMicroBatch(l, run.micro_batch, setup);
  return l;
}

std::optional<AutoModelBenchmark> FindAutoModelBenchmark(const std::string& preset, const std::string& system,
                                                         int64_t gpus) {
  static constexpr std::string_view kDir = "recipes/automodel-benchmarks";
  for (const std::string& name : data::ListEmbedded(kDir)) {
    const std::string file = std::string(kDir) + "/" + name + ".yaml";
    const std::string_view text = *data::FindEmbedded(file);
    const YAML::Node root = yamlutil::ParseMap(text, file);
    yamlutil::MapReader top(root, file);
    if (!top.HasValue("published") || !top.Get("published").IsMap()) {
      top.Fail("published", "expected a map {model, system, gpus} naming the published row");
    }
    yamlutil::MapReader pub(top.Get("published"), file, "published");
    if (pub.Str("model") != preset || pub.Str("system") != system || pub.Int("gpus", 1, int64_t{1} << 20) != gpus) continue;
    pub.RejectUnknown();
    return AutoModelBenchmark{file, ParseAutoModelRecipe(text, file, gpus).layout};
  }
  return std::nullopt;
}

}  // namespace meshplan::accuracy
