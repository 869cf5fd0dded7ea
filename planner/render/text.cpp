// Text rendering of the commands' reports (text.hpp): check's verdicts, explain's tables, the
// sweep's lines and files, and the JSON of an error.
#include "render/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "meshplan/commands.hpp"
#include "recipe/format.hpp"

namespace meshplan::render {

namespace {

// printf-style formatting into `out`.
template <class... Args>
void Printf(std::ostream& out, const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  if (n <= 0) return;
  std::string s(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(s.data(), s.size(), format, args...);
  s.resize(static_cast<size_t>(n));
  out << s;
}

std::string Pct(double part, double whole) { return whole > 0 ? recipe::Fixed(100.0 * part / whole, 1) + "%" : "-"; }

struct Term {
  const char* name;
  double MemoryBreakdown::*field;
};
const Term kTerms[] = {
    {"weights", &MemoryBreakdown::weights},         {"gradients", &MemoryBreakdown::gradients},
    {"optimizer state", &MemoryBreakdown::optimizer}, {"activations", &MemoryBreakdown::activations},
    {"logits + loss", &MemoryBreakdown::logits},    {"FSDP / optimizer buffers", &MemoryBreakdown::buffers},
    {"cuBLAS workspace", &MemoryBreakdown::workspace}, {"CUDA context + NCCL + EP", &MemoryBreakdown::overhead},
};

bool SameMemory(const MemoryBreakdown& a, const MemoryBreakdown& b) {
  for (const Term& t : kTerms) {
    if (std::abs(a.*t.field - b.*t.field) > 0.5 * 1048576.0) return false;
  }
  return true;
}

// Indented under a verdict's header: the framework defaults a parsed recipe relies on and the
// settings of it the framework overwrites (`parsed` may be null), `unfitted`
// (UnfittedMegatronWarning) and each of `notes`.
void PrintRemarks(std::ostream& out, const ParsedRecipe* parsed, const std::string& unfitted, const std::vector<std::string>& notes) {
  if (parsed != nullptr) {
    for (const std::string& d : parsed->defaults_used) out << "  not set, framework default: " << d << "\n";
    for (const std::string& d : parsed->overridden) out << "  warning: " << d << "\n";
  }
  if (!unfitted.empty()) out << "  " << unfitted << "\n";
  for (const std::string& n : notes) out << "  note: " << n << "\n";
}

void PrintFailures(std::ostream& out, const std::vector<RuleFailure>& failures) {
  for (const RuleFailure& f : failures) out << "  " << f.name << ": " << f.message << "\n    source: " << f.source << "\n";
}

// Text lines are wrapped at this many columns (a 64-stage layout printed 2,000-character lines).
constexpr size_t kWrapColumns = 100;

// Memory per GPU term by term: a column per pipeline rank whose memory differs from the one
// before, in blocks of as many columns as fit in kWrapColumns.
void PrintMemory(std::ostream& out, const std::vector<MemoryBreakdown>& ranks, const Cost& c, const char* profile) {
  // Columns: every PP stage whose memory differs from the previous one shown.
  std::vector<size_t> cols = {0};
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (!SameMemory(ranks[r], ranks[cols.back()])) cols.push_back(r);
  }
  Printf(out, "memory per GPU (%s profile; GiB and share of the total):\n", profile);
  constexpr size_t kTermWidth = 28, kColumnWidth = 18;  // "  %-26s", " %10s %6s"
  const size_t per_block = std::max<size_t>(1, (kWrapColumns - kTermWidth) / kColumnWidth);
  for (size_t first = 0; first < cols.size(); first += per_block) {
    const std::vector<size_t> block(cols.begin() + static_cast<std::ptrdiff_t>(first),
                                    cols.begin() + static_cast<std::ptrdiff_t>(std::min(cols.size(), first + per_block)));
    if (first > 0) Printf(out, "\n");
    Printf(out, "  %-26s", "term");
    for (size_t r : block) {
      const std::string head = ranks.size() > 1 ? "stage " + std::to_string(r) : "GiB";
      Printf(out, " %10s %6s", head.c_str(), "share");
    }
    Printf(out, "\n");
    for (const Term& t : kTerms) {
      Printf(out, "  %-26s", t.name);
      for (size_t r : block) {
        const MemoryBreakdown& m = ranks[r];
        Printf(out, " %10s %6s", recipe::Fixed(recipe::GiB(m.*t.field), 2).c_str(), Pct(m.*t.field, m.Total()).c_str());
      }
      Printf(out, "\n");
    }
    Printf(out, "  %-26s", "total");
    for (size_t r : block) Printf(out, " %10s %6s", recipe::Fixed(recipe::GiB(ranks[r].Total()), 2).c_str(), "100%");
    Printf(out, "\n  %-26s", "peak moment");
    for (size_t r : block) Printf(out, " %17s", ranks[r].phase);
    Printf(out, "\n");
  }
  if (ranks.size() > 1 && cols.size() < ranks.size()) Printf(out, "  (stages not shown equal the stage to their left)\n");
  Printf(out, "  most loaded GPU: %s GiB of %s GiB usable (the rest is headroom for the caching allocator's reserve)\n",
              recipe::Fixed(recipe::GiB(c.memory.Total()), 2).c_str(), recipe::Fixed(recipe::GiB(c.capacity_bytes), 2).c_str());
}

void PrintTime(std::ostream& out, const Cost& c, const PlanRequest& req) {
  const TimeBreakdown& t = c.time;
  const double step = t.Step();
  const std::pair<const char*, double> rows[] = {
      {"compute", t.compute},   {"TP communication", t.tp_comm}, {"CP communication", t.cp_comm},
      {"DP communication", t.dp_comm}, {"EP communication", t.ep_comm}, {"PP communication", t.pp_comm},
      {"pipeline bubble", t.bubble},   {"optimizer step", t.optimizer}, {"host-bound (CPU)", t.host},
  };
  Printf(out, "time per step (slowest rank; communication = exposed part):\n");
  for (const auto& [name, v] : rows) Printf(out, "  %-26s %10s s %6s\n", name, recipe::Fixed(v, 4).c_str(), Pct(v, step).c_str());
  Printf(out, "  %-26s %10s s   100%%\n", "step", recipe::Fixed(step, 4).c_str());
  Printf(out, "  %s tokens/s per GPU, %s model TFLOP/s per GPU, %s\n", recipe::Fixed(c.tokens_per_s_per_gpu, 0).c_str(),
              recipe::Fixed(c.model_tflops_per_gpu, 1).c_str(),
              recipe::MfuText(c, req.system.gpu, req.setup.precision).c_str());
}

// A Megatron-Bridge layout's compute term split, each part's share of `compute` (seconds).
void PrintCompute(std::ostream& out, const ComputeSplit& c, double compute) {
  Printf(out, "compute of the slowest rank (Megatron-Core time model, the system's fitted constants):\n");
  const std::pair<const char*, double> rows[] = {
      {"GEMMs", c.gemm}, {"attention core", c.attention}, {"HBM-bound kernels", c.memory_bound},
      {"kernel launches", c.kernels}};
  for (const auto& [name, v] : rows) {
    Printf(out, "  %-26s %10s s %6s\n", name, recipe::Fixed(v, 4).c_str(), Pct(v, compute).c_str());
  }
}

// The EP all-to-all of a MoE layout: dispatcher, links, what overlap hides (seconds per step).
void PrintEp(std::ostream& out, const EpSplit& e) {
  const EpTraffic& t = e.traffic;
  out << "EP all-to-all of the slowest rank: dispatcher " << e.dispatcher;
  if (!e.backend.empty()) out << " (" << e.backend << ")";
  const bool torch = e.automodel && e.dispatcher == "torch";
  out << ", EP " << e.ep << " over " << t.domains << " NVLink domain" << (t.domains > 1 ? "s" : "") << "; "
      << recipe::Fixed(t.rank_copies, 2) << " token copies per dispatch"
      << (torch                                      ? " (all-gathered to every rank)"
          : e.automodel || e.dispatcher == "flex" ? " (distinct ranks)"
                                                    : " (one per routed expert)");
  if (t.node_copies > 0) out << ", " << recipe::Fixed(t.node_copies, 2) << " per token over RDMA (distinct domains)";
  out << "\n";
  if (!e.routing.empty()) out << "  routing: " << e.routing << "\n";
  Printf(out, "  %-26s %10s s\n", "dispatch + combine", recipe::Fixed(t.busy, 4).c_str());
  Printf(out, "  %-26s %10s s\n", "  NVLink busy", recipe::Fixed(t.nvlink, 4).c_str());
  Printf(out, "  %-26s %10s s\n", "  RDMA (NICs) busy", recipe::Fixed(t.rdma, 4).c_str());
  const double hidden = std::max(0.0, t.busy - t.exposed);
  Printf(out, "  %-26s %10s s %s\n", "hidden", recipe::Fixed(hidden, 4).c_str(),
         e.automodel ? "(none: AutoModel's dispatch blocks the compute stream)"
         : e.overlap ? "(overlap_moe_expert_parallel_comm: paired 1F1B chunks, less the unpaired warm-up / cool-down and the slowdown of what hides it)"
                   : "(no EP overlap: overlap_moe_expert_parallel_comm false)");
  Printf(out, "  %-26s %10s s\n", "exposed", recipe::Fixed(t.exposed, 4).c_str());
}

// The decoder layers per pipeline rank and whose split they are.
void PrintPipelineSplit(std::ostream& out, const PipelineSplit& p) {
  using Kind = PipelineSplit::Kind;
  // The per-rank list wrapped at kWrapColumns, continued lines indented.
  std::string line = "pipeline split: decoder layers per rank";
  for (int64_t n : p.layers_per_rank) {
    const std::string item = " " + std::to_string(n);
    if (line.size() + item.size() > kWrapColumns) {
      out << line << "\n";
      line = "   ";
    }
    line += item;
  }
  out << line;
  switch (p.kind) {
    case Kind::kGivenLayout:
      out << " (as pipeline_model_parallel_layout places them; embedding on rank " << p.embedding_rank
                << ", loss on rank " << p.loss_rank << ")";
      break;
    case Kind::kOwnLayout: out << " (as pipeline_model_parallel_layout places them: meshplan's own split)"; break;
    case Kind::kEvenFallback:
      out << " (meshplan's even split: pipeline_model_parallel_layout does not fit the layout, see the rules)";
      break;
    case Kind::kAccountEmbeddingLoss:
      out << " (Megatron-Core's split with account_for_embedding/loss_in_pipeline_split: (L + 2) / stages each, "
                   "one fewer on the first and the last)";
      break;
    case Kind::kEven: out << " (Megatron-Core's even split)"; break;
  }
  if (p.mtp_layers > 0) {
    out << "; " << p.mtp_layers << " MTP layer" << (p.mtp_layers > 1 ? "s" : "") << " (model.mtp_num_layers) on rank "
              << p.mtp_rank;
  }
  out << "\n";
}

// Why a sweep point has no layout.
std::string NoLayoutReason(const PlanResult& r) {
  if (r.valid == 0) {
    // The rules that refused the most candidates (rejected_by_rule is ordered by count).
    const std::string rules = TopRules(r, 2);
    return "no valid layout" + (rules.empty() ? "" : "; most common: " + rules);
  }
  return "no layout fits (least " + recipe::Fixed(recipe::GiB(r.least_memory->cost.memory.Total()), 1) + " GiB per GPU)";
}

// The settings a suggested layout turns on that the recipe leaves unset (NearbyLayout::notes),
// one comment line; nothing when none.
void PrintUnsetNotes(std::ostream& out, const std::vector<std::string>& notes) {
  if (notes.empty()) return;
  out << "# not edits, settings the recipe leaves unset (priced off) and this recipe turns on:";
  for (size_t i = 0; i < notes.size(); ++i) out << (i ? "; " : " ") << notes[i];
  out << "\n";
}

// check's line on how a valid recipe compares with the planner's fastest layouts for the same job.
void PrintAgainstPlan(std::ostream& out, const PlanComparison& p, const Cost& own) {
  out << "against the planner (its first " << p.searched << " fitting layouts for this job as plan ranks them, by "
      << "expected step with the out-of-memory risk priced in, with this recipe's software settings"
      << (p.stopped.empty() ? "" : "; search stopped early: " + p.stopped) << "): ";
  if (!p.fastest) {
    out << "no layout it finds fits this job\n";
    return;
  }
  const Cost& best = p.fastest->cost;
  const std::string band = recipe::Fixed(100 * p.band, 1) + "%";
  const std::string rank = (p.beyond ? ">" + std::to_string(p.searched) : std::to_string(p.rank)) + (p.tie ? "=" : "");
  if (p.gap <= 1e-9) {
    out << "rank " << rank << ", no layout it finds is predicted faster (expected step)";
    if (p.rank > 1) out << "; ranked after more robust layouts within the step-time band (" << band << "), as plan ranks";
    if (p.gap < -1e-9 && p.rank > 1) {
      // A tie ordered by robustness: faster than the first, listed after it.
      out << " (its expected step is " << recipe::Fixed(-100 * p.gap, 1)
          << "% shorter than the first's, inside the band: the first is more robust)";
    } else if (p.gap < -1e-9) {
      out << " (this one is " << recipe::Fixed(-100 * p.gap, 1) << "% faster than its fastest, "
          << (own.fits ? "with a setting the search does not enumerate" : "but it does not fit the usable memory") << ")";
    }
    out << "\n";
    return;
  }
  out << "rank " << rank << "; its first, "
      << Describe(p.fastest->layout) << ", " << recipe::Fixed(best.tokens_per_s_per_gpu, 0) << " tokens/s per GPU at "
      << recipe::Fixed(recipe::GiB(best.memory.Total()), 1) << " GiB (out-of-memory risk "
      << recipe::Fixed(100 * p.fastest->risk.oom_probability, 1) << "%, this recipe's "
      << recipe::Fixed(100 * p.own.oom_probability, 1) << "%), ";
  if (!own.fits && own.tokens_per_s_per_gpu > 0) {
    // An expected step that prices a near-certain out-of-memory is no comparison: the plain
    // throughput gap, and that the recipe as written is predicted not to fit.
    const double plain = best.tokens_per_s_per_gpu / own.tokens_per_s_per_gpu - 1;
    out << "is predicted " << recipe::Fixed(100 * std::fabs(plain), 1) << (plain >= 0 ? "% faster" : "% slower")
        << " in throughput, " << (plain >= 0 ? "and" : "but") << " this recipe as written is predicted not to fit: ";
  } else {
    out << "is expected " << recipe::Fixed(100 * p.gap, 1) << "% faster: ";
  }
  if (p.gap <= p.band) {
    out << "within the model's error (" << band << "), as good as predicted\n";
    return;
  }
  out << "beyond the model's error (" << band << "); change";
  for (size_t i = 0; i < p.changes.size(); ++i) out << (i ? "; " : " ") << p.changes[i];
  if (!p.notes.empty()) {
    out << " (and set what the recipe leaves unset, priced off:";
    for (size_t i = 0; i < p.notes.size(); ++i) out << (i ? "; " : " ") << p.notes[i];
    out << ")";
  }
  out << "\n";
}

}  // namespace

void PrintCheckedDocument(std::ostream& out, const CheckedDocument& d) {
  const PlanRequest& req = d.recipe.request;
  const Layout& l = d.recipe.parsed.layout;
  out << d.label << ": " << FrameworkTitle(req.framework) << " recipe, " << req.model.name << " on "
            << req.setup.num_gpus << " GPUs of " << req.system.name << ", seq_len " << req.setup.seq_len
            << ", global batch " << req.setup.global_batch << ", " << PrecisionName(req.setup.precision)
            << "\n  layout: " << Describe(l) << "\n";
  PrintRemarks(out, &d.recipe.parsed, d.unfitted, d.notes);
  if (d.failures.empty()) {
    out << "valid: passes all " << d.rules_checked << " rules\n";
  } else {
    out << "INVALID: " << d.failures.size() << " rule" << (d.failures.size() > 1 ? "s" : "") << " fail\n";
    PrintFailures(out, d.failures);
    if (d.nearest_seq_len > 0) {
      out << "  hint: with " << SeqLenKey(req.framework) << " " << d.nearest_seq_len << " instead of "
                << req.setup.seq_len << " this layout passes every rule as written\n";
    }
  }
  if (const std::optional<Cost>& c = d.cost) {
    // Between the usable capacity and the GPU's whole memory it is the headroom that is short,
    // not the GPU: "out of memory" was said of NVIDIA's own Llama 3 70B recipe at 76.2 of 79.1 GiB.
    const double gap = recipe::GiB(c->capacity_bytes - c->memory.Total());
    const double whole = recipe::GiB(req.system.gpu.memory_bytes), total = recipe::GiB(c->memory.Total());
    const std::string verdict =
        gap >= 0 ? "fits with " + recipe::Fixed(gap, 1) + " GiB headroom"
        : total <= whole
            ? "above it by " + recipe::Fixed(-gap, 1) + " GiB, within the GPU's " + recipe::Fixed(whole, 1) +
                  " GiB: it may run, but with less than the " + recipe::Fixed(100 * req.setup.headroom, 0) +
                  "% headroom kept for the allocator's reserve and fragmentation"
            : "out of memory: above the GPU's " + recipe::Fixed(whole, 1) + " GiB by " + recipe::Fixed(total - whole, 1) +
                  " GiB";
    out << "memory: " << recipe::Fixed(total, 1) << " GiB per GPU predicted of "
              << recipe::Fixed(recipe::GiB(c->capacity_bytes), 1) << " GiB usable: " << verdict << "\n";
  } else {
    out << "memory: not predicted (" << d.not_predicted << ")\n";
  }
  if (const std::optional<MoreGpus>& m = d.more_gpus) {
    out << "  hint: as written it passes every rule and fits on " << m->gpus << " GPUs (dp " << m->layout.dp << "): "
        << recipe::Fixed(recipe::GiB(m->cost.memory.Total()), 1) << " GiB per GPU, "
        << recipe::Fixed(m->cost.tokens_per_s_per_gpu, 0) << " tokens/s per GPU\n";
  }
  if (d.cost && d.failures.empty()) {
    const Cost& c = *d.cost;
    out << "predicted: step " << recipe::Fixed(c.step_seconds, 3) << " s, " << recipe::Fixed(c.tokens_per_s_per_gpu, 0)
        << " tokens/s per GPU, " << recipe::Fixed(c.model_tflops_per_gpu, 1) << " model TFLOP/s per GPU, "
        << recipe::MfuText(c, req.system.gpu, req.setup.precision) << "\n";
  }
  if (const std::optional<PlanComparison>& p = d.against_plan) PrintAgainstPlan(out, *p, *d.cost);
  for (const std::string& w : d.warnings) out << "warning: " << w << "\n";
  out << "silently off: " << (d.silently_off.empty() ? "none" : "") << "\n";
  for (const std::string& s : d.silently_off) out << "  " << s << "\n";
  if (d.failures.empty() && !d.out_of_memory) return;
  out << "nearest valid layouts (" << d.nearest.size() << "):"
            << (d.nearest.empty() ? " none with this precision and sequence length; the failing rules above say what to "
                                    "change"
                                  : "")
            << "\n";
  for (size_t i = 0; i < d.nearest.size(); ++i) {
    const NearbyLayout& x = d.nearest[i];
    // Counted in edits (EditCount: the keys of one decision are one), the keys named when more.
    const size_t keys = x.changes.size();
    out << "--- " << i + 1 << ": " << x.edits << " edit" << (x.edits == 1 ? "" : "s");
    if (keys != static_cast<size_t>(x.edits)) out << " (" << keys << " key" << (keys == 1 ? "" : "s") << ")";
    for (const std::string& ch : x.changes) out << "; " << ch;
    out << "\n";
    PrintUnsetNotes(out, x.notes);
    if (!x.note.empty()) out << "# " << x.note << "\n";
    out << RecipeYaml(x.candidate, req, static_cast<int>(i + 1));
  }
}

void PrintExplanation(std::ostream& out, const ExplainReport& rep) {
  const PlanRequest& req = rep.request;
  const TrainSetup& setup = req.setup;
  out << "meshplan explain: " << FrameworkTitle(req.framework) << " layout, " << req.model.name << " on "
            << setup.num_gpus << " GPUs of " << req.system.name << " (" << req.system.gpu.display_name
            << "), seq_len " << setup.seq_len << ", global batch " << setup.global_batch << ", "
            << PrecisionName(setup.precision) << "\n  layout: " << Describe(rep.layout) << "\n";
  PrintRemarks(out, rep.parsed ? &*rep.parsed : nullptr, rep.unfitted, rep.notes);
  if (!rep.model_warning.empty()) out << "warning: " << rep.model_warning << "\n";
  if (!rep.seq_len_warning.empty()) out << "warning: " << rep.seq_len_warning << "\n";
  if (!rep.unused_schedule.empty()) out << "  note: " << rep.unused_schedule << "\n";
  if (rep.failures.empty()) {
    out << "rules: valid (passes all " << rep.rules_checked << " " << FrameworkTitle(req.framework) << " rules)\n";
  } else {
    out << "rules: INVALID, " << rep.failures.size() << " rule" << (rep.failures.size() > 1 ? "s" : "")
              << " broken\n";
    PrintFailures(out, rep.failures);
  }
  if (rep.pipeline) PrintPipelineSplit(out, *rep.pipeline);
  if (!rep.scorable) {
    out << "memory and time: not predicted (the layout's sizes do not divide the GPU count or the batch)\n";
    return;
  }
  const Cost& c = rep.cost;
  out << "\n";
  PrintMemory(out, rep.rank_memory, c, rep.memory_profile.c_str());
  out << "\n";
  PrintTime(out, c, req);
  if (rep.compute) {
    out << "\n";
    PrintCompute(out, *rep.compute, c.time.compute);
  }
  if (rep.ep) {
    out << "\n";
    PrintEp(out, *rep.ep);
  }
  if (rep.cp) {
    const CpSplit& x = *rep.cp;
    out << "\ncontext parallel: cp_comm_type " << x.type << (x.written ? "" : " (null: Megatron-Core's default)") << " over "
        << x.cp << " ranks";
    if (x.a2a > 0) out << " (a2a inside groups of " << x.a2a << ", p2p ring over " << x.cp / x.a2a << ")";
    out << ", " << recipe::Fixed(1e3 * x.exposed, 1) << " ms per step exposed"
        << (x.type == "p2p"       ? " (the ring hides behind the attention)"
            : x.type == "a2a+p2p" ? " (the ring hides behind the attention, the all-to-all does not)"
                                  : " (not overlapped with the attention)")
        << "\n";
  }
  const double gap = recipe::GiB(c.capacity_bytes - c.memory.Total());
  out << "\n" << (c.fits ? "fits: " + recipe::Fixed(gap, 2) + " GiB to spare per GPU"
                               : "does NOT fit: " + recipe::Fixed(-gap, 2) + " GiB over the usable memory");
  // Priced as written, but the framework would not start it: said beside the verdict.
  if (!rep.failures.empty()) {
    out << " (as priced; the framework refuses this layout: " << rep.failures.size() << " rule"
              << (rep.failures.size() > 1 ? "s" : "") << " broken, above)";
  }
  out << "\n";
}

std::string PointName(const SweepPoint& p) {
  return std::to_string(p.gpus) + " GPUs, seq_len " + std::to_string(p.seq_len);
}

namespace {
// The precision whose own peak a sweep's extra MFU column is against (kBf16: no such column).
Precision OwnPeak(const PlanRequest& req) { return PeakPrecision(req.system.gpu, req.setup.precision); }
}  // namespace

std::string SweepHeader(const SweepReport& sweep) {
  char line[160];
  const Precision own = sweep.points.empty() ? Precision::kBf16 : OwnPeak(sweep.points.front().request);
  char own_head[16] = "";
  if (own != Precision::kBf16) std::snprintf(own_head, sizeof own_head, " %6s", recipe::OwnPeakMfuHead(own));
  // The layout is the last column: the points print as their searches end, so no column width
  // can be taken from the longest layout.
  std::snprintf(line, sizeof line, "%7s %8s %8s %9s %10s %6s%s  %s\n", "gpus", "seq_len", "GiB/GPU", "step_s", "tok/s/GPU",
                "MFU%", own_head, "best layout");
  return line;
}

std::string SweepLine(const SweepPoint& p) {
  char line[512];
  const long long g = p.gpus, s = p.seq_len;
  if (!p.result.top.empty()) {
    const Candidate& c = p.result.top.front();
    char own[16] = "";
    if (OwnPeak(p.request) != Precision::kBf16) std::snprintf(own, sizeof own, " %6.1f", 100 * c.cost.mfu_precision_peak);
    std::snprintf(line, sizeof line, "%7lld %8lld %8.1f %9.3f %10.0f %6.1f%s  ", g, s, recipe::GiB(c.cost.memory.Total()),
                  c.cost.step_seconds, c.cost.tokens_per_s_per_gpu, 100 * c.cost.mfu, own);
    return line + Describe(c.layout) + "\n";
  }
  std::snprintf(line, sizeof line, "%7lld %8lld  ", g, s);
  return line + NoLayoutReason(p.result) + "\n";
}

std::string SweepYaml(const SweepReport& sweep) {
  const PlanRequest& first = sweep.points.front().request;
  std::string head = "# meshplan sweep: " + first.model.name + " on " + first.system.name + ", global batch " +
                     std::to_string(first.setup.global_batch) + "; the best recipe of each point\n";
  std::string docs;
  int n = 0;
  for (const SweepPoint& p : sweep.points) {
    head += "#   " + PointName(p) + ": ";
    if (p.result.top.empty()) {
      head += NoLayoutReason(p.result) + "\n";
      continue;
    }
    ++n;
    head += "recipe " + std::to_string(n) + "\n";
    if (n > 1) docs += "---\n";
    docs += RecipeYaml(p.result.top.front(), p.request, n);
  }
  return head + docs;
}

std::string SweepJson(const SweepReport& sweep, const std::string& error) {
  nlohmann::json arr = nlohmann::json::array();
  for (const SweepPoint& p : sweep.points) {
    nlohmann::json j = {{"gpus", p.gpus}, {"seq_len", p.seq_len}};
    if (p.result.top.empty()) {
      j["best"] = nullptr;
      j["why"] = NoLayoutReason(p.result);
    } else {
      j["best"] = nlohmann::json::parse(ResultJson(p.result, p.request));
    }
    arr.push_back(std::move(j));
  }
  nlohmann::json out = {{"sweep", arr}};
  if (!error.empty()) out["error"] = ErrorJson("no_layout", error, 1)["error"];
  return JsonText(out);
}

}  // namespace meshplan::render
