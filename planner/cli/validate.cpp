// `meshplan validate RUNS.csv`: predict the throughput of published runs at their published
// layouts, print predicted vs published model TFLOP/s per GPU with the error, and the rank of
// the published layout among the fitting layouts the planner finds for the same request.
//
// Two file formats, told apart by the header:
//   - Megatron-Bridge performance tables (shared/reference/mbridge_perf_dev.csv): release, task,
//     model, system, gpus, precision, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ep, ga,
//     tokens_per_s_per_gpu, model_tflops_per_gpu. Cells like "661 (624)" carry a second
//     configuration in parentheses; the first value is used.
//   - the published-runs survey (shared/reference/published_runs_dev.csv): id, model, ...,
//     num_gpus, gpu_type, TP, PP, VPP, CP, EP, DP, ..., recompute, precision, tflops_per_gpu,
//     ..., tokens_per_s_per_gpu. Rows whose sizes are not integers in range are skipped, naming
//     the column.
// FLOP convention (groundtruth.md A.3): both files report *model* FLOPs (Megatron-Bridge,
// NeMo, AutoModel) or are compared on tokens/s when no TFLOP/s is given; hardware-FLOP
// sources (Narayanan 2021, BLOOM, MT-NLG) are A100 GPT rows without a preset and are skipped.
#include <algorithm>
#include <iterator>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "accuracy/least_squares.hpp"
#include "accuracy/megatron_fit.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/data.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/rules.hpp"
#include "recipe/perf_settings.hpp"
#include "search/megatron_space.hpp"

namespace meshplan::cli {

namespace {

constexpr double kGiB = 1073741824.0;

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
  if (has("nemotron") || has("v4")) return "";  // hybrid Mamba / DeepSeek-V4: not describable
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
  // H800 has 400 GB/s NVLink and the 96 GB H100 is a 500 W part: no hwdb system for either.
  if (has("h100") && !has("96gb") && !has("h800")) return "dgx-h100";
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

struct Run {
  std::string label;    // "model system gpus precision"
  std::string release;  // Megatron-Bridge release of the row ("" in the survey)
  std::string skip;     // why the row is skipped ("" = evaluated)
  std::string skip_detail;  // the row's own words for it ("" = skip)
  std::string gpu_cell;     // the GPU / system cell as written
  std::string preset, system;
  TrainSetup setup;
  Layout layout;
  double published_tflops = 0;  // model TFLOP/s per GPU (0 = not published)
  double published_tokens = 0;  // tokens/s per GPU (0 = not published)
  std::string precision_cell;   // the table's precision cell (recipe-settings key)
  bool tokendrop = false;       // a "(tokendrop)" model row
  int64_t mtp = kMtpFromModel;  // MTP layers: "(w/o MTP)" 0, "(w/ MTP)" 1, else the model provider's
};

// MTP layers a row's model name says the run trained, or kMtpFromModel (the model provider's
// mtp_num_layers, num_nextn_predict_layers: DeepSeek-V3 1, the recipes' default).
int64_t MtpOf(const std::string& raw) {
  const std::string s = Lower(raw);
  if (s.find("w/o mtp") != std::string::npos) return 0;
  if (s.find("w/ mtp") != std::string::npos) return 1;
  return kMtpFromModel;
}

// Megatron-Bridge's DeepSeek-V3 layout of 16 pipeline stages with one MTP layer, which its
// recipes set for PP 16, PP 8 x VPP 2 and PP 4 x VPP 4 (recipes/deepseek/deepseek_v3.py
// set_deepseek_v3_pipeline_model_parallel_layout, v0.2.0 .. v0.6.0) and its GB300 perf recipes
// give for PP 2 x VPP 8 (perf_recipes/deepseek/gb300/deepseek_v3.py, v0.6.0), Et*4|(t*4|)*14tmL,
// is meshplan's own split of those rows (OwnStageSplit with the MTP layer's places; tests/cost/
// mtp_test.cpp), so PublishedLayout's kLayout split prices it as written.

Layout PublishedLayout(const ModelSpec& m, const SystemSpec& sys, const TrainSetup& setup, int64_t tp, int64_t pp,
                       int64_t cp, int64_t vpp, int64_t ep, int64_t mbs, bool fsdp, Recompute rc,
                       const recipe::PerfRecipeSettings* settings, int64_t mtp) {
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.mtp_layers = mtp == kMtpFromModel ? m.mtp_num_layers : mtp;
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  l.vpp = vpp;
  l.ep = ep;
  l.etp = m.is_moe() && tp > 1 ? 1 : 0;  // published MoE recipes pin ETP 1
  l.dp = setup.num_gpus / (tp * pp * cp);
  l.sequence_parallel = tp > 1;
  l.recompute = rc;
  l.use_distributed_optimizer = true;
  l.mb.use_megatron_fsdp = fsdp;
  if (settings) {
    l.recompute = settings->recompute;
  }
  const int64_t L = m.num_layers;
  l.pp_split = pp == 1 || L % pp == 0 ? MbPpSplit::kEven
               : (L + 2) % pp == 0    ? MbPpSplit::kAccountEmbeddingLoss
                                      : MbPpSplit::kLayout;
  search::ApplyEmittedSettings(l, sys, setup.precision);
  if (settings) {
    search::ApplyMbRuntime(l, settings->runtime);
    l.mb.recompute_modules = settings->recompute_modules;
    if (settings->recompute == Recompute::kFull) {
      l.mb.recompute_method = settings->recompute_method;
      l.mb.recompute_num_layers = settings->recompute_num_layers;
    }
    l.mb.cpu_offloading_num_layers = settings->cpu_offloading_num_layers;
    l.mb.cpu_offloading = settings->cpu_offloading_num_layers > 0;
  }
  SetMegatronMicroBatch(l, mbs, setup);
  SyncMegatronCostView(l, L, m.mtp_num_layers);
  return l;
}

struct Sizes {
  int64_t tp = 1, pp = 1, cp = 1, vpp = 1, ep = 1, mbs = 1;
};

void ReadMbridge(const std::vector<std::string>& c, Run& r, Sizes& z, bool& fsdp) {
  // release,task,model,system,gpus,precision,gbs,mbs,seq,fsdp,tp,pp,cp,vp,ep,ga,tok,tflops
  auto cell = [&](size_t i) { return i < c.size() ? c[i] : std::string(); };
  // An empty precision cell is the 25.09 table's, which had no precision column: its numbers
  // are FP8 (current or delayed scaling) runs, the parenthesised ones the MX / blockwise
  // variant (megatron.md 5.1; the 25.09 layouts match the releases' fp8 presets, not the bf16
  // ones: recipes/megatron-bridge-perf.yaml notes). Priced as FP8.
  const bool no_precision = Trim(cell(5)).empty();
  r.label = cell(2) + " " + cell(3) + " " + cell(4) + " " + (no_precision ? "FP8 (25.09)" : cell(5));
  r.release = Trim(cell(0));
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
  sz.Read("mbs", cell(7), 1, z.mbs, kMaxBatch);
  sz.Read("tp", cell(10), 1, z.tp, kMaxGpus);
  sz.Read("pp", cell(11), 1, z.pp, kMaxGpus);
  sz.Read("cp", cell(12), 1, z.cp, kMaxGpus);
  sz.Read("vp", cell(13), 1, z.vpp, kMaxGpus);
  sz.Read("ep", cell(14), 1, z.ep, kMaxGpus);
  double f = 0;
  if (LeadNum(cell(9), f)) fs = int64_t(f);
  fsdp = fs > 0;
  if (!sz.problem.empty() && r.skip.empty()) r.skip = sz.problem;
  r.setup.num_gpus = gpus;
  r.setup.global_batch = gbs;
  r.setup.seq_len = seq;
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

void ReadSurvey(const std::vector<std::string>& c, const std::map<std::string, size_t>& col, Run& r, Sizes& z,
                bool& fsdp, Recompute& rc) {
  auto cell = [&](const char* name) {
    auto it = col.find(name);
    return it != col.end() && it->second < c.size() ? c[it->second] : std::string();
  };
  r.label = "#" + cell("id") + " " + cell("model") + " " + cell("num_gpus");
  r.preset = PresetOf(cell("model"));
  r.system = SystemOf(cell("gpu_type"));
  r.gpu_cell = cell("gpu_type");
  r.setup.precision = PrecisionOf(cell("precision"));
  int64_t gpus = 0, gbs = 0, seq = 0;
  SizeReader sz;
  sz.Read("num_gpus", cell("num_gpus"), 0, gpus, kMaxGpus);
  sz.Read("global_batch", cell("global_batch"), 0, gbs, kMaxBatch);
  sz.Read("seq_len", cell("seq_len"), 0, seq, kMaxSeq);
  sz.Read("TP", cell("TP"), 1, z.tp, kMaxGpus);
  sz.Read("PP", cell("PP"), 1, z.pp, kMaxGpus);
  sz.Read("CP", cell("CP"), 1, z.cp, kMaxGpus);
  sz.Read("EP", cell("EP"), 1, z.ep, kMaxGpus);
  if (!SizeCell(cell("VPP"), 1, z.vpp, kMaxGpus)) z.vpp = 1;  // "interleaved (v=?)": unknown, take 1
  if (!SizeCell(cell("micro_batch"), 1, z.mbs, kMaxBatch)) z.mbs = 1;
  if (!sz.problem.empty()) r.skip = sz.problem;
  const std::string zero = Lower(cell("zero_fsdp_distopt"));
  fsdp = zero.find("megatron-fsdp") != std::string::npos || zero.find("megatron fsdp") != std::string::npos;
  // AutoModel's FSDP2 runs (the survey's "FSDP2 (shard N)") train no MTP layers in meshplan's
  // pricing; Megatron runs follow the model provider.
  r.mtp = zero.find("fsdp2") != std::string::npos ? 0 : MtpOf(cell("model"));
  const std::string rec = Lower(cell("recompute"));
  rc = rec.rfind("full", 0) == 0 ? Recompute::kFull : rec.rfind("selective", 0) == 0 ? Recompute::kSelective
                                                                                     : Recompute::kNone;
  r.setup.num_gpus = gpus;
  r.setup.global_batch = gbs;
  r.setup.seq_len = seq;
  LeadNum(cell("tflops_per_gpu"), r.published_tflops);
  LeadNum(cell("tokens_per_s_per_gpu"), r.published_tokens);
}

using accuracy::FitRow;
using accuracy::Quantile;

// Fits every system's constants, prints them with in-sample and leave-one-out residuals,
// and writes them into o.fit/systems/NAME.yaml.
void WriteFits(const ValidateOptions& o, const std::map<std::string, std::vector<FitRow>>& fit_rows, std::FILE* out) {
  // Every target must be readable before any is written: all systems or none.
  for (const auto& [system, rows] : fit_rows) {
    const std::string path = o.fit + "/systems/" + system + ".yaml";
    if (!std::ifstream(path).good()) {
      throw InputError(SourceLoc{path, 0, 0}, "--fit",
                       "expected the system file of " + system + " in " + o.fit + "/systems/ (fitted from " +
                           std::to_string(rows.size()) + " rows); nothing was written");
    }
  }
  std::vector<double> all, all_loo;
  std::fprintf(out, "\nfit of the Megatron-Core step-time constants (ridge %.2f toward the physical model):\n", kMegatronFitRidge);
  std::fprintf(out, "%-14s %5s %9s %8s %8s %8s %9s %9s %9s %9s\n", "system", "rows", "gemm_bf16", "gemm_fp8", "gemm_fp4",
               "mem_bound", "kernel_us", "med|res|", "p90|res|", "LOO med");
  for (const auto& [system, rows] : fit_rows) {
    const MegatronFitOutcome f = accuracy::FitMegatronTime(rows);
    std::vector<double> loo;
    for (double x : f.loo_residuals) loo.push_back(std::fabs(x));
    for (double x : f.residuals) all.push_back(std::fabs(x));
    all_loo.insert(all_loo.end(), loo.begin(), loo.end());
    std::fprintf(out, "%-14s %5zu %9.3f %8.3f %8.3f %8.3f %9.2f %8.1f%% %8.1f%% %8.1f%%\n", system.c_str(), rows.size(),
                 f.fit.gemm_bf16, f.fit.gemm_fp8, f.fit.gemm_fp4, f.fit.memory_bound, f.fit.kernel_overhead * 1e6,
                 100 * f.fit.residual_median, 100 * f.fit.residual_p90, 100 * Quantile(loo, 0.5));
    const std::string source = o.runs.substr(o.runs.find_last_of('/') + 1) + ", " + std::to_string(rows.size()) + " rows";
    accuracy::WriteFitBlock(o.fit + "/systems/" + system + ".yaml", f, rows, source);
  }
  std::fprintf(out,
               "fit summary: median |residual| %.1f%%, p90 %.1f%%; leave-one-out median %.1f%%, p90 %.1f%% "
               "(written to %s/systems/)\n",
               100 * Quantile(all, 0.5), 100 * Quantile(all, 0.9), 100 * Quantile(all_loo, 0.5),
               100 * Quantile(all_loo, 0.9), o.fit.c_str());
}

}  // namespace

void AddValidateCommand(CLI::App& app, ValidateOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "predict published runs (Megatron-Bridge perf table or published-runs survey CSV) and rank their layouts");
  cmd->add_option("runs", o.runs, "CSV of published runs")->required();
  cmd->add_option("--hwdb", o.hwdb, "hardware database directory");
  cmd->add_option("--rank-top", o.rank_top, "layouts searched for the rank (0 = do not rank)");
  cmd->add_option("--rank-seconds", o.rank_seconds, "search time limit per distinct request");
  cmd->add_option("--threads", o.threads, "search threads (0 = one per core)");
  cmd->add_flag("--breakdown", o.breakdown, "print each row's predicted step time by term (ms)");
  cmd->add_option("--show-top", o.show_top,
                  "print the planner's N fastest fitting layouts under each row, with step time and memory");
  cmd->add_option("--headroom", o.headroom, "fraction of GPU memory kept free when deciding which layouts fit (0..0.9)")
      ->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--recipe-settings", o.recipe_settings,
                  "YAML of the published runs' recipe settings (dispatcher, EP overlap, recompute, CUDA graphs, "
                  "gradient dtype, offloading); default: the embedded recipes/megatron-bridge-perf.yaml; 'none': "
                  "meshplan's emitted settings");
  cmd->add_option("--fit", o.fit,
                  "fit each system's Megatron-Core step-time constants to the rows and write them into "
                  "HWDB_DIR/systems/NAME.yaml (megatron_time_fit)");
}

int RunValidate(const ValidateOptions& o) { return RunValidate(o, stdout); }

int RunValidate(const ValidateOptions& o, std::FILE* out) {
  CheckedReal(o.headroom, "--headroom", 0.0, 0.9);
  if (o.show_top > 0 && o.rank_top == 0) {
    throw InputError({"<command line>", 0, 0}, "--show-top",
                     "expected with ranking on; found --rank-top 0, which searches no layouts to show");
  }
  auto option = [](bool ok, const char* flag, const std::string& expected, double found) {
    if (ok) return;
    std::ostringstream os;
    os << "expected " << expected << ", found " << found;
    throw InputError(SourceLoc{"<command line>", 0, 0}, flag, os.str());
  };
  option(o.rank_top >= 0 && o.rank_top <= 100000, "--rank-top", "an integer in [0, 100000]", o.rank_top);
  option(std::isfinite(o.rank_seconds) && o.rank_seconds > 0 && o.rank_seconds <= 86400, "--rank-seconds",
         "seconds in (0, 86400]", o.rank_seconds);
  option(o.show_top >= 0 && o.show_top <= 1000, "--show-top", "an integer in [0, 1000]", o.show_top);
  option(o.threads >= 0 && o.threads <= 1024, "--threads", "an integer in [0, 1024]", o.threads);
  CheckHwdbDir(o.hwdb);
  if (std::filesystem::is_directory(o.runs)) {
    throw InputError(SourceLoc{o.runs, 0, 0}, "runs", "expected a CSV file, found a directory");
  }
  std::ifstream f(o.runs);
  if (!f.good()) {
    throw InputError(SourceLoc{o.runs, 0, 0}, "runs",
                     std::filesystem::exists(o.runs) ? "cannot read the file (permission denied or unreadable)"
                                                     : "no such file");
  }
  if (!o.fit.empty() && !std::filesystem::is_directory(o.fit + "/systems")) {
    throw InputError(SourceLoc{"<command line>", 0, 0}, "--fit",
                     "expected an hwdb directory with a systems/ folder (a copy of hwdb/), found '" + o.fit + "'");
  }
  std::string line;
  std::getline(f, line);
  data::StripUtf8Bom(line);  // a spreadsheet's "CSV UTF-8" export starts with one
  const std::vector<std::string> header = SplitCsv(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[Trim(header[i])] = i;
  const bool mbridge = col.count("release") && col.count("model_tflops_per_gpu");
  const bool survey = col.count("gpu_type") && col.count("tflops_per_gpu");
  if (!mbridge && !survey) {
    const std::string head = Trim(line);
    // Binary: a control byte in the first line, or a NUL in the first 4 KiB (CSV text has none).
    std::string start(4096, '\0');
    std::ifstream raw(o.runs, std::ios::binary);
    raw.read(start.data(), static_cast<std::streamsize>(start.size()));
    start.resize(static_cast<size_t>(raw.gcount()));
    const bool binary = start.find('\0') != std::string::npos ||
                        std::any_of(head.begin(), head.end(), [](char ch) {
                          const auto u = static_cast<unsigned char>(ch);
                          return u < 0x20 && ch != '\t' && ch != '\r';
                        });
    const std::string found = head.empty() && f.eof() ? "an empty file"
                              : head.empty()           ? "an empty first line"
                              : binary                 ? "binary data (control bytes), not CSV text"
                                                       : "'" + head.substr(0, 80) + "'";
    throw InputError(SourceLoc{o.runs, 1, 1}, "header",
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
        throw InputError(SourceLoc{o.runs, 1, 1}, "header",
                         "expected column " + std::to_string(i + 1) + " of a Megatron-Bridge perf table to be '" +
                             kMbridgeColumns[i] + "', found '" + found + "'");
      }
    }
  } else {
    for (const char* needed : {"id", "model", "num_gpus", "gpu_type", "TP", "PP", "CP", "EP", "global_batch", "seq_len",
                               "precision", "tokens_per_s_per_gpu"}) {
      if (!col.count(needed)) {
        throw InputError(SourceLoc{o.runs, 1, 1}, "header",
                         std::string("expected a published-runs column '") + needed + "'; the header has none");
      }
    }
  }
  std::map<std::string, ModelSpec> models;
  std::map<std::string, SystemSpec> systems;
  // Rank cache: (preset, system, gpus, seq, gbs, precision) -> step times of the top layouts
  // and the fastest layout.
  struct Ranked {
    std::vector<double> steps;
    std::optional<Candidate> fastest;  // for --breakdown
    std::vector<std::string> top;  // --show-top lines, fastest first
  };
  std::map<std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int, std::string>, Ranked> ranks;
  std::optional<recipe::PerfRecipeTable> settings_table;
  if (mbridge && o.recipe_settings != "none") settings_table = recipe::LoadPerfRecipeSettings(o.recipe_settings);
  int without_settings = 0;
  std::vector<double> errors;
  int evaluated = 0, skipped = 0, ranked = 0, top5 = 0, top5_no_fit = 0, within5 = 0;
  // Published runs ran: a prediction above the usable capacity, or above the GPU's whole
  // memory, is a memory-model miss (or a setting the recipe does not show).
  int over_capacity = 0, over_memory = 0;
  std::vector<double> memory_shares;  // predicted memory / the GPU's memory, per evaluated row
  std::map<std::string, int> skip_reasons;
  // A row the CSV itself breaks (a quote left open, a cell too many or too few) makes the file
  // unusable: refused before any row is evaluated (exit 2), not skipped like a row that is
  // well formed but cannot be priced.
  std::vector<std::vector<std::string>> rows;  // the data lines' cells; empty for a blank line
  for (std::string l; std::getline(f, l);) {
    rows.emplace_back();
    if (Trim(l).empty()) continue;
    bool open = false;
    rows.back() = SplitCsv(l, &open);
    const size_t cells = rows.back().size();
    const SourceLoc at{o.runs, int(rows.size()) + 1, 1};
    if (open) throw InputError(at, "row", "unterminated quote: a '\"' opens a cell that the line does not close");
    if (cells != header.size()) {
      throw InputError(at, "row", "expected " + std::to_string(header.size()) + " cells as in the header, found " +
                                      std::to_string(cells) + " (nothing was evaluated)");
    }
  }
  std::fprintf(out,
               "# TF: model TFLOP/s per GPU (published: the release's FLOP formula; predicted: meshplan's); err%%: "
               "predicted vs published tokens/s per GPU where published\n");
  std::fprintf(out, "%-52s %8s %8s %7s %6s %6s %5s  %s\n", "run", "TF pub", "TF pred", "err%", "rank", "gap%", "fits",
               "published layout");
  int lineno = 1;
  std::map<std::string, std::vector<FitRow>> fit_rows;  // system -> rows
  Progress progress("validate", 0);
  for (const std::vector<std::string>& c : rows) {
    ++lineno;
    if (c.empty()) continue;
    progress.Step(lineno - 1, "planning CSV row " + std::to_string(lineno - 1));
    Run r;
    Sizes z;
    bool fsdp = false;
    Recompute rc = Recompute::kNone;
    if (mbridge) {
      ReadMbridge(c, r, z, fsdp);
    } else {
      ReadSurvey(c, col, r, z, fsdp, rc);
    }
    r.setup.headroom = o.headroom;
    if (r.skip.empty() && r.preset.empty()) r.skip = "model not describable (no preset: hybrid Mamba, DeepSeek-V4 or another architecture)";
    if (r.skip.empty() && r.system.empty()) {
      r.skip = "no hwdb system for the GPU";
      r.skip_detail = "no hwdb system for the GPU '" + r.gpu_cell + "'";
    }
    if (r.skip.empty() && r.published_tflops <= 0 && r.published_tokens <= 0) r.skip = "no published throughput";
    if (r.skip.empty() && (r.setup.num_gpus % (z.tp * z.pp * z.cp) != 0)) r.skip = "sizes do not divide the GPUs";
    // Counts a skipped row under `reason` and prints it with `shown` (the reason itself when
    // empty).
    auto skip_row = [&](const std::string& reason, const std::string& shown) {
      ++skipped;
      ++skip_reasons[reason];
      progress.Clear();
      std::fprintf(out, "%-52.52s skipped (line %d): %s\n", r.label.c_str(), lineno, (shown.empty() ? reason : shown).c_str());
    };
    if (!r.skip.empty()) {
      skip_row(r.skip, r.skip_detail);
      continue;
    }
    if (!models.count(r.preset)) models[r.preset] = LoadModel(r.preset);
    if (!systems.count(r.system)) systems[r.system] = LoadSystem(r.system, o.hwdb);
    const ModelSpec& m = models[r.preset];
    const SystemSpec& sys = systems[r.system];
    if (const std::string problem = GpuCountProblem(sys, r.setup.num_gpus); !problem.empty()) {
      skip_row("GPU count is not a whole number of nodes", "GPU count: " + problem);
      continue;
    }
    if (r.setup.precision == Precision::kFp4 && sys.gpu.fp4_flops <= 0) r.setup.precision = Precision::kFp8;
    if (r.setup.precision == Precision::kFp8 && sys.gpu.fp8_flops <= 0) r.setup.precision = Precision::kBf16;
    // The published run's recipe settings (Megatron-Bridge table rows only; the survey's rows
    // keep meshplan's emitted settings).
    const recipe::PerfRecipeSettings* settings =
        mbridge && settings_table ? settings_table->Find(r.release, r.preset, r.system,
                                                         recipe::PerfPrecisionKey(r.precision_cell),
                                                         r.setup.num_gpus, r.tokendrop)
                                  : nullptr;
    if (mbridge && settings_table && !settings) ++without_settings;
    const Layout l = PublishedLayout(m, sys, r.setup, z.tp, z.pp, z.cp, z.vpp, z.ep, z.mbs, fsdp, rc, settings, r.mtp);
    // A layout the framework would refuse is not priced (the perf table's own rows all pass;
    // hand-made rows may not).
    {
      const RuleContext ctx{m, r.setup, l, AutoModelVersion::kV05, MBridgeVersion::kMain, &sys};
      if (const Rule* broken = FirstFailure(ctx)) {
        const std::string reason = std::string("layout breaks rule ") + broken->name;
        skip_row(reason, reason + ": " + broken->explain(ctx));
        continue;
      }
    }
    const CostModel model(m, sys, r.setup);
    const Cost cost = model.Evaluate(l);
    // The error is on tokens/s per GPU whenever the row publishes it: model TFLOP/s depend on
    // the release's FLOP formula (Megatron-Bridge's GPT-OSS rows up to 26.04.01 count 27.2
    // GFLOP per token, from 26.06 on 32.6 with the attention core and lm_head), tokens/s do
    // not. Survey rows and rows without tokens/s compare on model TFLOP/s.
    double err = 0, pub = 0, pred = 0;
    const bool on_tokens = r.published_tokens > 0 && (mbridge || r.published_tflops <= 0);
    if (on_tokens) {
      pub = r.published_tokens;
      pred = cost.tokens_per_s_per_gpu;
    } else {
      pub = r.published_tflops;
      pred = cost.model_tflops_per_gpu;
    }
    err = (pred - pub) / pub;
    const double tf_pub = r.published_tflops, tf_pred = cost.model_tflops_per_gpu;
    errors.push_back(std::fabs(err));
    if (!o.fit.empty() && pred > 0) {
      FitRow row = accuracy::MakeFitRow(m, sys, r.setup, l, cost.step_seconds * pred / pub);
      // The release in parentheses, unless the label ends with it (the 25.09 rows' precision).
      const std::string tag = " (" + r.release + ")";
      const bool tagged = r.label.size() >= tag.size() && r.label.compare(r.label.size() - tag.size(), tag.size(), tag) == 0;
      row.label = r.label + (r.release.empty() || tagged ? "" : tag);
      row.model = r.preset;
      fit_rows[r.system].push_back(row);
    }
    ++evaluated;
    if (!cost.fits) ++over_capacity;
    if (cost.memory.Total() > sys.gpu.memory_bytes) ++over_memory;
    if (sys.gpu.memory_bytes > 0) memory_shares.push_back(cost.memory.Total() / sys.gpu.memory_bytes);
    std::string rank = "-", gap = "-";
    const std::vector<std::string>* it_top = nullptr;
    const Candidate* fastest = nullptr;
    if (o.rank_top > 0) {
      // The software settings are part of the request: runs of two releases with different
      // dispatchers or CUDA graphs are ranked among differently priced layouts.
      std::string runtime = "emitted";
      if (settings) {
        const MbRuntime& rt = settings->runtime;
        runtime = std::to_string(int(rt.dispatcher)) + "/" + std::to_string(int(rt.ep_a2a_overlap)) + "/" +
                  std::to_string(int(rt.cuda_graph)) + "/" + std::to_string(rt.cuda_graph_scope) + "/" +
                  std::to_string(int(rt.grad_reduce_in_fp32));
      }
      const auto key = std::make_tuple(r.preset, r.system, r.setup.num_gpus, r.setup.seq_len, r.setup.global_batch,
                                       int(r.setup.precision), runtime + "/mtp" + std::to_string(l.mtp_layers));
      auto it = ranks.find(key);
      if (it == ranks.end()) {
        PlanRequest req;
        req.model = m;
        req.model.mtp_num_layers = l.mtp_layers;  // the planner's layouts train what the run trained
        req.system = sys;
        req.setup = r.setup;
        req.framework = Framework::kMegatronBridge;
        if (settings) req.mb_runtime = settings->runtime;
        req.top_n = std::max(o.rank_top, o.show_top);
        req.threads = o.threads;
        req.max_micro_batch = std::max<int64_t>(16, z.mbs);
        req.deadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(int64_t(std::max(0.1, o.rank_seconds) * 1000));
        const PlanResult res = Plan(req);
        Ranked rk;
        for (const Candidate& cand : res.top) rk.steps.push_back(cand.cost.step_seconds);
        if (!res.top.empty()) rk.fastest = res.top.front();
        for (size_t i = 0; i < res.top.size() && int64_t(i) < o.show_top; ++i) {
          const Candidate& cand = res.top[i];
          char buf[96];
          std::snprintf(buf, sizeof buf, "    #%-3zu %9.1f ms %6.1f GiB  ", i + 1, 1e3 * cand.cost.step_seconds,
                        cand.cost.memory.Total() / kGiB);
          rk.top.push_back(buf + Describe(cand.layout));
        }
        it = ranks.emplace(key, rk).first;
      }
      const std::vector<double>& steps = it->second.steps;
      it_top = &it->second.top;
      if (it->second.fastest) fastest = &*it->second.fastest;
      // Rank = 1 + fitting layouts strictly faster (1e-9 relative tolerance: the published
      // layout itself is among them).
      int64_t faster = 0;
      for (double s : steps) faster += s < cost.step_seconds * (1 - 1e-9) ? 1 : 0;
      const bool beyond = faster >= int64_t(steps.size()) && int64_t(steps.size()) >= o.rank_top;
      rank = beyond ? ">" + std::to_string(o.rank_top) : std::to_string(faster + 1);
      if (!steps.empty() && steps.front() > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%+.1f", 100.0 * (cost.step_seconds / steps.front() - 1.0));
        gap = buf;
        if (cost.step_seconds <= 1.05 * steps.front()) ++within5;
      }
      ++ranked;
      if (!beyond && faster + 1 <= 5) {
        ++top5;
        if (!cost.fits) ++top5_no_fit;  // ranked among fitting layouts, but predicted not to fit itself
      }
    }
    const std::string desc = Describe(l);
    progress.Clear();
    char tf_pub_cell[32] = "-";  // no published TFLOP/s: "-", not 0
    if (tf_pub > 0) std::snprintf(tf_pub_cell, sizeof tf_pub_cell, "%.0f", tf_pub);
    std::fprintf(out, "%-52.52s %8s %8.0f %+7.1f %6s %6s %5s  %s%s%s\n", r.label.c_str(), tf_pub_cell, tf_pred, 100 * err,
                 rank.c_str(), gap.c_str(), cost.fits ? "yes" : "no", desc.c_str(),
                 on_tokens ? "" : "  (err% on TFLOP/s)",
                 mbridge && settings_table && !settings ? "  (no recipe settings: meshplan's emitted ones)" : "");
    if (o.show_top > 0 && it_top != nullptr) {
      std::fprintf(out, "    planner's %zu fastest fitting layouts (this row: %.1f ms, %.1f GiB):\n", it_top->size(),
                   1e3 * cost.step_seconds, cost.memory.Total() / kGiB);
      for (const std::string& t : *it_top) std::fprintf(out, "%s\n", t.c_str());
    }
    if (o.breakdown) {
      // One layout's terms: the step (ms) and memory (GiB) lines, then the compute split.
      auto print_terms = [&](const char* step_label, const Layout& lay, const Cost& k) {
        const TimeBreakdown& t = k.time;
        std::fprintf(out,
                     "    %s %.1f = compute %.1f + tp %.1f + cp %.1f + dp %.1f + ep %.1f + pp %.1f + bubble %.1f + "
                     "optimizer %.1f + host %.1f\n"
                     "    memory GiB: %.1f of %.1f = weights %.1f + gradients %.1f + optimizer %.1f + activations %.1f + "
                     "logits %.1f + buffers %.1f + other %.1f\n",
                     step_label, 1e3 * k.step_seconds, 1e3 * t.compute, 1e3 * t.tp_comm, 1e3 * t.cp_comm,
                     1e3 * t.dp_comm, 1e3 * t.ep_comm, 1e3 * t.pp_comm, 1e3 * t.bubble, 1e3 * t.optimizer,
                     1e3 * t.host, k.memory.Total() / kGiB, k.capacity_bytes / kGiB, k.memory.weights / kGiB,
                     k.memory.gradients / kGiB, k.memory.optimizer / kGiB, k.memory.activations / kGiB,
                     k.memory.logits / kGiB, k.memory.buffers / kGiB, (k.memory.workspace + k.memory.overhead) / kGiB);
        if (mbridge) {
          const MegatronComputeSplit c = SplitMegatronCompute(m, sys, r.setup, lay);
          std::fprintf(out,
                       "    compute ms: gemm %.1f + attention %.1f + memory-bound %.1f + kernel launches %.1f "
                       "(bubble fraction %.3f)\n",
                       1e3 * c.gemm, 1e3 * c.attention, 1e3 * c.memory_bound, 1e3 * c.kernels, c.bubble_fraction);
        }
      };
      const double pub_step = pred > 0 ? cost.step_seconds * pred / pub : 0.0;
      char label[64];
      std::snprintf(label, sizeof label, "step ms: published %.1f predicted", 1e3 * pub_step);
      print_terms(label, l, cost);
      if (fastest != nullptr) {
        std::fprintf(out, "    planner's fastest fitting layout: %s\n", Describe(fastest->layout).c_str());
        print_terms("its step ms:", fastest->layout, fastest->cost);
      }
    }
  }
  std::fprintf(out, "skipped %d row%s%s", skipped, skipped == 1 ? "" : "s", skipped > 0 ? ":" : "");
  for (const auto& [why, n] : skip_reasons) std::fprintf(out, " [%s] x%d;", why.c_str(), n);
  std::fprintf(out, "\n");
  if (evaluated == 0) {
    std::fprintf(out, "summary: 0 rows evaluated, %d skipped; no error to report\n", skipped);
    if (!o.fit.empty()) throw InputError(SourceLoc{o.runs, 0, 0}, "--fit", "no evaluated row to fit; nothing was written");
    std::fflush(out);  // the table first when stdout and stderr share a pipe
    std::fprintf(stderr, "%s: no row could be evaluated (%s)\n", o.runs.c_str(),
                 skipped > 0 ? "the skip reasons are above" : "the file has no data rows after its header");
    return 1;
  }
  // Below 5 searched layouts a rank beyond them may still be in the top 5: not claimed.
  char top5_text[96];
  if (o.rank_top == 0) {
    std::snprintf(top5_text, sizeof top5_text, "not ranked (--rank-top 0)");
  } else if (o.rank_top < 5) {
    std::snprintf(top5_text, sizeof top5_text, "not determined (--rank-top %d searches fewer than 5)", o.rank_top);
  } else {
    std::snprintf(top5_text, sizeof top5_text, "%d of %d ranked (%.0f%%)", top5, ranked,
                  ranked > 0 ? 100.0 * top5 / ranked : 0.0);
  }
  std::fprintf(out,
               "summary: %d row%s evaluated, %d skipped; median |error| %.1f%%, p90 |error| %.1f%%; published layout "
               "in top 5: %s\n",
               evaluated, evaluated == 1 ? "" : "s", skipped, 100 * Quantile(errors, 0.5), 100 * Quantile(errors, 0.9), top5_text);
  if (ranked > 0 && o.rank_top >= 5) {
    // Near-ties: thousands of layouts sit within a few percent of the best, far below the
    // model's own error, so the rank alone overstates how far the published choice is.
    std::fprintf(out,
                 "ranking: published layout predicted within 5%% of the planner's fastest step time: %d of %d "
                 "ranked (%.0f%%); of the %d in the top 5, %d are predicted not to fit themselves\n",
                 within5, ranked, 100.0 * within5 / ranked, top5, top5_no_fit);
  }
  std::fprintf(out,
               "memory: %d of %d published layouts predicted above the usable capacity (headroom %.0f%%), %d above "
               "the GPU's whole memory; predicted share of the GPU's memory: median %.0f%%, p90 %.0f%%\n",
               over_capacity, evaluated, 100 * o.headroom, over_memory,
               100 * Quantile(memory_shares, 0.5), 100 * Quantile(memory_shares, 0.9));
  if (settings_table) {
    std::fprintf(out, "recipe settings: %s (%zu entries); %d evaluated rows without an entry use meshplan's emitted settings\n",
                 settings_table->file.c_str(), settings_table->recipes.size(), without_settings);
  }
  if (!o.fit.empty()) WriteFits(o, fit_rows, out);
  return 0;
}

}  // namespace meshplan::cli
