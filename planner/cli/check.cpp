// `meshplan check RECIPE`: validate an AutoModel or Megatron-Bridge recipe against the rules,
// predict its memory, list the overlap settings that will be silently off, and propose the
// three nearest valid layouts (also when predicted out of memory). Exit 0 valid, 1 invalid,
// 2 unusable input.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "meshplan/data.hpp"
#include "meshplan/recipe.hpp"
#include "recipe/format.hpp"
#include "search/megatron_space.hpp"

namespace meshplan::cli {

void AddCheckCommand(CLI::App& app, CheckOptions& o) {
  CLI::App* cmd = app.add_subcommand("check", "check a recipe against the framework's rules and memory");
  cmd->add_option("recipe", o.recipe, "AutoModel recipe or Megatron-Bridge override YAML")->required();
  cmd->add_option("--model", o.model, "preset name or path to config.json / model YAML")->required();
  cmd->add_option("--system", o.system, "system name or path to a system YAML")->required();
  cmd->add_option("--gpus", o.gpus, "number of GPUs (world size)")->required();
  cmd->add_option("--seq-len", o.seq_len, "tokens per sequence (default: the recipe's model.seq_length, or dataset.seq_len for AutoModel)");
  cmd->add_option("--precision", o.precision, "GEMM precision (default: the recipe's mixed_precision or fp8 section, else bf16)")
      ->check(CLI::IsMember({"bf16", "fp8"}));
  cmd->add_option("--framework", o.framework, "recipe framework (default: detected from its keys)")
      ->check(CLI::IsMember({"automodel", "megatron-bridge"}));
  cmd->add_option("--automodel-version", o.automodel_version, "AutoModel rules (0.5 or 0.4)")
      ->check(CLI::IsMember({"0.5", "0.4"}));
  cmd->add_option("--mbridge-version", o.mbridge_version, "Megatron-Bridge rules (main or core0.15)")
      ->check(CLI::IsMember({"main", "core0.15"}));
  TrackVersionFlags(cmd, o.given);
  cmd->add_option("--headroom", o.headroom, "fraction of GPU memory kept free (0..0.9)")->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--hwdb", o.hwdb, "hardware database directory (default: the embedded hwdb/)");
}

namespace {

// Overlap settings requested in a Megatron recipe that Megatron-Bridge switches off without error.
std::vector<std::string> SilentlyOff(const Layout& l) {
  std::vector<std::string> out;
  if (l.framework != Framework::kMegatronBridge) return out;
  if (l.mb.tp_comm_overlap == Tri::kTrue && (l.tp < 2 || !l.sequence_parallel || !l.mb.transformer_engine)) {
    out.push_back(std::string("comm_overlap.tp_comm_overlap: true is switched off silently: TP overlap needs ") +
                  (l.tp < 2 ? "tensor_model_parallel_size >= 2 (found " + std::to_string(l.tp) + ")"
                   : !l.sequence_parallel ? "sequence_parallel: true (its all-gather/reduce-scatter is what overlaps)"
                                          : "Transformer Engine (transformer_impl: transformer_engine)") +
                  " [MB training/comm_overlap.py:441-451]");
  }
  const bool dist = l.use_distributed_optimizer || l.mb.use_megatron_fsdp;
  if ((l.mb.overlap_grad_reduce == Tri::kTrue || l.mb.overlap_param_gather == Tri::kTrue) && l.dp == 1) {
    out.push_back("overlap_grad_reduce / overlap_param_gather have nothing to overlap with data parallel size 1 "
                  "[MB training/comm_overlap.py:562-591]");
  } else if (!dist && l.dp > 1 && l.mb.overlap_grad_reduce == Tri::kUnset) {
    out.push_back("DP overlap (overlap_grad_reduce, overlap_param_gather) is only turned on by default with the "
                  "distributed optimizer; without it gradients are all-reduced after the backward "
                  "[MB training/comm_overlap.py:635-643]");
  }
  return out;
}

// One YAML document of a recipe file: its first line (1-based) and its text, preceded by as
// many empty lines as come before it in the file, so that the readers' line numbers are the file's.

// True if the line holds YAML content: not blank, not a comment, not a directive (%YAML).
bool HasContent(const std::string& line) {
  const size_t i = line.find_first_not_of(" \t\r");
  return i != std::string::npos && line[i] != '#' && !(i == 0 && line[0] == '%');
}

// A line that is exactly the marker (---, ...) or the marker followed by a space or a tab.
bool IsMarker(const std::string& line, const char* marker) {
  return line.compare(0, 3, marker) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

// Splits a YAML stream into its documents: a "---" line at column 0 starts one, a "..." line
// ends one (YAML 1.2: both are markers wherever they stand at the start of a line, also inside
// scalars). Documents with nothing but blank lines, comments and markers are left out.

// The nearest sequence length (within 1/8 of it, a multiple of 8 ... 1024) at which `ctx`'s
// layout passes every rule unchanged, or 0: a recipe broken only by its sequence length gets
// that one change named instead of a reshaped layout.
int64_t NearestValidSeqLen(const RuleContext& ctx) {
  const int64_t s = ctx.setup.seq_len;
  std::vector<int64_t> tries;
  for (int64_t m = 8; m <= 1024; m *= 2) {
    const int64_t down = s / m * m, up = (s + m - 1) / m * m;
    for (int64_t t : {down, up}) {
      if (t > 0 && t != s && std::llabs(t - s) * 8 <= s) tries.push_back(t);
    }
  }
  std::sort(tries.begin(), tries.end(), [s](int64_t a, int64_t b) {
    return std::llabs(a - s) != std::llabs(b - s) ? std::llabs(a - s) < std::llabs(b - s) : a > b;
  });
  for (int64_t t : tries) {
    TrainSetup setup = ctx.setup;
    setup.seq_len = t;
    const RuleContext moved{ctx.model, setup, ctx.layout, ctx.version, ctx.mb_version, ctx.system};
    if (AllFailures(moved).empty()) return t;
  }
  return 0;
}

// Checks one recipe document; `label` names it in the first line of the verdict. Returns 0
// valid, 1 invalid; throws InputError for an unusable document.
int CheckDocument(const CheckOptions& o, const std::string& text, const std::string& label, const ModelSpec& model,
                  const SystemSpec& system) {
  const bool megatron = o.framework.empty() ? IsMegatronRecipe(text, o.recipe) : o.framework == "megatron-bridge";
  RefuseOtherFrameworkVersion(o.given, megatron);
  ParsedRecipe parsed =
      megatron ? ParseMegatronRecipe(text, o.recipe, o.gpus) : ParseAutoModelRecipe(text, o.recipe, o.gpus);
  PlanRequest req;
  req.framework = megatron ? Framework::kMegatronBridge : Framework::kAutoModel;
  req.version = o.automodel_version == "0.4" ? AutoModelVersion::kV04 : AutoModelVersion::kV05;
  req.mb_version = o.mbridge_version == "core0.15" ? MBridgeVersion::kCore015 : MBridgeVersion::kMain;
  req.setup.num_gpus = o.gpus;
  req.setup.global_batch = parsed.global_batch;
  req.setup.seq_len = o.seq_len > 0 ? o.seq_len : parsed.seq_len;
  if (req.setup.seq_len <= 0) {
    throw InputError({"<command line>", 0, 0}, "--seq-len",
                     std::string("required: the recipe does not set ") +
                         (megatron ? "model.seq_length" : "dataset.seq_len") + "; pass --seq-len");
  }
  req.setup.precision = o.precision == "fp8"    ? Precision::kFp8
                        : !o.precision.empty() ? Precision::kBf16
                        : parsed.precision_set ? parsed.precision
                                               : Precision::kBf16;
  req.setup.headroom = CheckedReal(o.headroom, "--headroom", 0.0, 0.9);
  req.model = model;
  req.system = system;
  Layout& l = parsed.layout;
  if (megatron && l.dp > 0) SyncMegatronCostView(l, req.model.num_layers, req.model.mtp_num_layers);

  std::cout << label << ": " << (megatron ? "Megatron-Bridge" : "AutoModel") << " recipe, " << req.model.name
            << " on " << req.setup.num_gpus << " GPUs of " << req.system.name << ", seq_len " << req.setup.seq_len
            << ", global batch " << req.setup.global_batch << ", " << PrecisionName(req.setup.precision)
            << "\n  layout: " << Describe(l) << "\n";
  PrintRecipeNotes(parsed);
  if (megatron) {
    if (const std::string w = UnfittedMegatronWarning(req.system); !w.empty()) std::cout << "  " << w << "\n";
  }
  if (o.seq_len > 0 && parsed.seq_len > 0 && parsed.seq_len != o.seq_len) {
    std::cout << "  note: --seq-len " << o.seq_len << " replaces the recipe's " << parsed.seq_len << "\n";
  }
  if (!o.precision.empty() && parsed.precision_set && parsed.precision != req.setup.precision) {
    std::cout << "  note: --precision " << o.precision << " replaces the recipe's " << PrecisionName(parsed.precision)
              << "\n";
  }
  RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
  const std::vector<const Rule*> failures = AllFailures(ctx);
  if (failures.empty()) {
    std::cout << "valid: passes all " << RulesFor(req.framework).size() << " rules\n";
  } else {
    std::cout << "INVALID: " << failures.size() << " rule" << (failures.size() > 1 ? "s" : "") << " fail\n";
    for (const Rule* r : failures) {
      std::cout << "  " << r->name << ": " << r->explain(ctx) << "\n    source: " << r->source << "\n";
    }
    if (const int64_t seq = NearestValidSeqLen(ctx); seq > 0) {
      std::cout << "  hint: with " << (megatron ? "model.seq_length " : "dataset.seq_len ") << seq
                << " instead of " << req.setup.seq_len << " this layout passes every rule as written\n";
    }
  }
  const bool sane = l.dp >= 1 && l.tp * l.pp * l.cp * l.dp == req.setup.num_gpus && l.micro_batch() >= 1 &&
                    l.tp >= 1 && l.pp >= 1 && l.cp >= 1 && l.ep >= 1;
  bool out_of_memory = false;
  if (sane) {
    const Cost c = CostModel(req.model, req.system, req.setup).Evaluate(l);
    const double gap = recipe::GiB(c.capacity_bytes - c.memory.Total());
    out_of_memory = gap < 0;
    // Between the usable capacity and the GPU's whole memory it is the headroom that is short,
    // not the GPU: "out of memory" was said of NVIDIA's own Llama 3 70B recipe at 76.2 of 79.1 GiB.
    const double whole = recipe::GiB(req.system.gpu.memory_bytes), total = recipe::GiB(c.memory.Total());
    std::string verdict;
    if (gap >= 0) {
      verdict = "fits with " + recipe::Fixed(gap, 1) + " GiB headroom";
    } else if (total <= whole) {
      verdict = "above it by " + recipe::Fixed(-gap, 1) + " GiB, within the GPU's " + recipe::Fixed(whole, 1) +
                " GiB: it may run, but with less than the " + recipe::Fixed(100 * req.setup.headroom, 0) +
                "% headroom kept for the allocator's reserve and fragmentation";
    } else {
      verdict = "out of memory: above the GPU's " + recipe::Fixed(whole, 1) + " GiB by " + recipe::Fixed(total - whole, 1) +
                " GiB";
    }
    std::cout << "memory: " << recipe::Fixed(total, 1) << " GiB per GPU predicted of "
              << recipe::Fixed(recipe::GiB(c.capacity_bytes), 1) << " GiB usable: " << verdict << "\n";
  } else {
    const int64_t product = l.tp * l.pp * l.cp * l.dp;
    if (product != req.setup.num_gpus) {
      std::cout << "memory: not predicted (the parallel sizes' product tp x pp x cp x dp = " << l.tp << " x " << l.pp
                << " x " << l.cp << " x " << l.dp << " = " << product << " is not the " << req.setup.num_gpus
                << " GPUs)\n";
    } else {
      std::cout << "memory: not predicted (a parallel size or the micro-batch is below 1)\n";
    }
  }
  if (const std::string w = SeqLenWarning(req.model, req.setup.seq_len); !w.empty()) std::cout << "warning: " << w << "\n";
  for (const std::string& w : MegatronWarnings(ctx)) std::cout << "warning: " << w << "\n";
  const std::vector<std::string> off = SilentlyOff(l);
  std::cout << "silently off: " << (off.empty() ? "none" : "") << "\n";
  for (const std::string& s : off) std::cout << "  " << s << "\n";
  if (!failures.empty() || out_of_memory) {
    // The nearest layouts train the MTP layers the recipe asks for (model.mtp_num_layers, or
    // the model provider's when unset), as Megatron-Bridge would with the recipe's settings.
    PlanRequest near_req = req;
    if (megatron && l.mtp_layers >= 0) near_req.model.mtp_num_layers = l.mtp_layers;
    const std::vector<NearbyLayout> near = NearestValidLayouts(near_req, l, 3);
    std::cout << "nearest valid layouts (" << near.size() << "):"
              << (near.empty() ? " none with this precision and sequence length; the failing rules above say what to "
                                 "change"
                               : "")
              << "\n";
    for (size_t i = 0; i < near.size(); ++i) {
      const NearbyLayout& x = near[i];
      std::cout << "--- " << i + 1 << ": " << x.changes.size() << " change" << (x.changes.size() == 1 ? "" : "s");
      for (const std::string& ch : x.changes) std::cout << "; " << ch;
      std::cout << "\n";
      std::cout << RecipeYaml(x.candidate, req, static_cast<int>(i + 1));
    }
  }
  // The exit status is about the framework's rules (issue 3): a predicted out-of-memory is
  // reported, with nearby layouts, but the memory model is not trusted enough to fail a
  // recipe that the framework accepts (see README "Known error").
  return failures.empty() ? 0 : 1;
}

}  // namespace

std::vector<Document> SplitDocuments(const std::string& text, int* empty) {
  std::vector<Document> docs;
  Document cur;
  bool content = false, marked = false;  // marked: the current document began at a "---"
  int line_no = 0;
  if (empty) *empty = 0;
  auto close = [&](int next_first_line) {
    if (content) docs.push_back(cur);
    if (!content && marked && empty) ++*empty;
    cur = Document{next_first_line, std::string(static_cast<size_t>(next_first_line - 1), '\n')};
    content = false;
    marked = false;
  };
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    ++line_no;
    if (IsMarker(line, "---")) {
      close(line_no);
      marked = true;
      content = HasContent(line.substr(3));
    } else if (IsMarker(line, "...")) {
      cur.text += line + "\n";
      close(line_no + 1);
      continue;
    } else {
      content = content || HasContent(line);
    }
    cur.text += line + "\n";
  }
  close(line_no + 1);
  return docs;
}

void RefusePlanOutput(const std::string& text, const std::string& file) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  const bool plan = j.contains("recipes") && j.contains("counts") && j.contains("request");
  const bool sweep = j.size() <= 2 && j.contains("sweep") && j["sweep"].is_array();
  if (!plan && !sweep) return;
  throw InputError({file, 0, 0}, "",
                   std::string("expected a recipe (AutoModel or Megatron-Bridge YAML), found meshplan ") +
                       (sweep ? "sweep" : "plan") +
                       " output (JSON: layouts and predictions, not a recipe); write recipes with plan --format yaml "
                       "--out FILE (one YAML document per recipe) or --emit-launch --out FILE (one recipe file per "
                       "layout), then check those");
}

int RunCheck(const CheckOptions& o) {
  const std::string text = data::ReadFileOrThrow(o.recipe);
  RefusePlanOutput(text, o.recipe);
  if (o.gpus < 1 || o.gpus > (1LL << 20)) {
    throw InputError({"<command line>", 0, 0}, "--gpus", "expected an integer in [1, 1048576], found " + std::to_string(o.gpus));
  }
  const ModelSpec model = LoadModel(o.model);
  const SystemSpec system = LoadSystem(o.system, o.hwdb);
  CheckGpuCount(system, o.gpus);
  int empty = 0;
  const std::vector<Document> docs = SplitDocuments(text, &empty);
  // None (the reader says what is missing): the file as it is; one: that document, whatever
  // empty ones (only `---`) surround it.
  if (docs.empty() && empty > 0) {
    throw InputError({o.recipe, 0, 0}, "",
                     "expected a recipe (a YAML map of keys), found only " + std::to_string(empty) + " empty document" +
                         (empty == 1 ? "" : "s") + " (a --- line and nothing else)");
  }
  if (docs.empty()) return CheckDocument(o, text, o.recipe, model, system);
  if (docs.size() == 1) return CheckDocument(o, docs[0].text, o.recipe, model, system);

  // Several (plan --out writes one recipe per document): a verdict for each; the exit status
  // is the worst (2 unusable > 1 invalid > 0 valid). An unusable document does not stop the others.
  std::cout << o.recipe << ": " << docs.size() << " YAML documents, each checked on its own";
  if (empty > 0) std::cout << " (" << empty << " empty one" << (empty == 1 ? "" : "s") << ", only a --- line, skipped)";
  std::cout << "\n";
  int worst = 0;
  std::vector<std::string> verdicts;
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::string where = o.recipe + ":" + std::to_string(docs[i].first_line);
    std::cout << "=== document " << i + 1 << " of " << docs.size() << " (" << where << ")\n";
    int status = 2;
    try {
      status = CheckDocument(o, docs[i].text, where, model, system);
    } catch (const InputError& e) {
      std::cout << std::flush;
      std::cerr << e.what() << "\n";
    }
    worst = std::max(worst, status);
    verdicts.push_back(std::to_string(i + 1) + (status == 0 ? " valid" : status == 1 ? " INVALID" : " unusable"));
  }
  std::cout << "=== " << o.recipe << ": documents";
  for (size_t i = 0; i < verdicts.size(); ++i) std::cout << (i ? ", " : " ") << verdicts[i];
  std::cout << " (exit " << worst << ")\n";
  return worst;
}

void PrintRecipeNotes(const ParsedRecipe& parsed) {
  for (const std::string& d : parsed.defaults_used) std::cout << "  not set, framework default: " << d << "\n";
  for (const std::string& d : parsed.overridden) std::cout << "  warning: " << d << "\n";
}

void TrackVersionFlags(CLI::App* cmd, std::set<std::string>& given) {
  for (const char* name : {"--automodel-version", "--mbridge-version"}) {
    cmd->get_option(name)->each([&given, name](const std::string&) { given.insert(name); });
  }
}

void CheckGpuCount(const SystemSpec& system, int64_t gpus, const char* flag) {
  const std::string problem = GpuCountProblem(system, gpus);
  if (!problem.empty()) throw InputError({"<command line>", 0, 0}, flag, problem);
}

ReleaseChoice AskedReleases(const std::set<std::string>& given, const std::string& automodel,
                            const std::string& mbridge) {
  ReleaseChoice asked;
  if (given.count("--automodel-version")) asked.automodel = ParseAutoModelVersion(automodel);
  if (given.count("--mbridge-version")) asked.mbridge = ParseMBridgeVersion(mbridge);
  return asked;
}

void RefuseOtherFrameworkVersion(const std::set<std::string>& given, bool megatron, bool by_framework_flag) {
  const char* other = megatron ? "--automodel-version" : "--mbridge-version";
  if (!given.count(other)) return;
  const std::string message =
      by_framework_flag
          ? std::string("expected only with --framework ") + (megatron ? "automodel" : "megatron-bridge") +
                ", found --framework " + (megatron ? "megatron-bridge" : "automodel")
          : std::string("expected only with ") + (megatron ? "an AutoModel" : "a Megatron-Bridge") + " layout, found " +
                (megatron ? "a Megatron-Bridge" : "an AutoModel") + " one";
  throw InputError({"<command line>", 0, 0}, other, message);
}

}  // namespace meshplan::cli
