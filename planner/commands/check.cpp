// `check RECIPE`: every document of a recipe file judged against the framework's rules and the
// memory model, with the overlap settings that will be silently off and, when it fails, the
// nearest valid layouts.
#include <algorithm>

#include "commands/internal.hpp"
#include "recipe/format.hpp"

namespace meshplan {

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

namespace {

// Judges one recipe document. Throws InputError for an unusable one.
CheckedDocument CheckDocument(const CheckInput& in, const std::string& text, const std::string& label,
                              const LoadedInputs& loaded) {
  CheckedDocument d;
  d.label = label;
  d.recipe = LoadRecipeForJudging(in.setup, in.recipe, text, loaded);
  const PlanRequest& req = d.recipe.request;
  const ParsedRecipe& parsed = d.recipe.parsed;
  const Layout& l = parsed.layout;
  d.unfitted = commands::UnfittedNote(req);
  for (const std::string& note :
       {commands::ReplacesNote("--seq-len", std::to_string(req.setup.seq_len), parsed.seq_len > 0,
                               std::to_string(parsed.seq_len)),
        commands::ReplacesNote("--precision", PrecisionName(req.setup.precision), parsed.precision_set,
                               PrecisionName(parsed.precision))}) {
    if (!note.empty()) d.notes.push_back(note);
  }
  const RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
  d.rules_checked = RulesFor(req.framework).size();
  d.failures = commands::RuleFailures(ctx);
  if (!d.failures.empty()) d.nearest_seq_len = NearestValidSeqLen(ctx);
  const int64_t product = l.tp * l.pp * l.cp * l.dp;
  const bool sane = l.dp >= 1 && product == req.setup.num_gpus && l.micro_batch() >= 1 && l.tp >= 1 && l.pp >= 1 &&
                    l.cp >= 1 && l.ep >= 1;
  // A model the cost model does not price (HybridRefusal): the framework's rules above still
  // judge the recipe (layer counts, head divisibility); no memory, step time or nearest layout.
  const std::string unpriced = HybridRefusal(req.model);
  if (!unpriced.empty()) {
    d.not_predicted = unpriced;
  } else if (sane) {
    d.cost = Score(CostModel(req.model, req.system, req.setup), l);
    d.out_of_memory = d.cost->capacity_bytes - d.cost->memory.Total() < 0;
    d.above_whole_memory = d.cost->memory.Total() > req.system.gpu.memory_bytes;
  } else if (product != req.setup.num_gpus) {
    d.not_predicted = "the parallel sizes' product tp x pp x cp x dp = " + std::to_string(l.tp) + " x " +
                      std::to_string(l.pp) + " x " + std::to_string(l.cp) + " x " + std::to_string(l.dp) + " = " +
                      std::to_string(product) + " is not the " + std::to_string(req.setup.num_gpus) + " GPUs";
  } else {
    d.not_predicted = "a parallel size or the micro-batch is below 1";
  }
  if (const std::string w = GenericModelWarning(req.model); !w.empty()) d.warnings.push_back(w);
  if (const std::string w = SeqLenWarning(req.model, req.setup.seq_len); !w.empty()) d.warnings.push_back(w);
  for (const std::string& w : FindingMessages(ctx, Severity::kWarning)) d.warnings.push_back(w);
  d.silently_off = FindingMessages(ctx, Severity::kSilentlyOff);
  if ((!d.failures.empty() || d.out_of_memory) && unpriced.empty()) {
    d.nearest = NearestValidLayouts(req, l, 3);
  }
  if (d.failures.empty() && d.cost) d.against_plan = CompareWithPlan(req, l, *d.cost, kCheckComparedLayouts);
  return d;
}

}  // namespace

int CheckReport::Status() const {
  int worst = 0;
  for (const CheckedDocument& d : documents) worst = std::max(worst, d.Status());
  return worst;
}

CheckReport CheckRecipe(const CheckInput& in) {
  const RecipeFile file = ReadRecipeFile(in.recipe);
  commands::CheckedCount(in.setup.gpus, "--gpus", 1LL << 20);
  const LoadedInputs loaded =
      LoadInputs(in.setup.model, in.setup.system, in.setup.hwdb, in.setup.gpus, {}, in.setup.generic_decoder, true);
  CheckReport rep;
  rep.file = in.recipe;
  rep.empty_documents = file.empty_documents;
  const std::vector<Document>& docs = file.documents;
  // None (the reader says what is missing): the file as it is; one: that document, whatever
  // empty ones (only `---`) surround it.
  if (docs.empty() && file.empty_documents > 0) {
    throw InputError({in.recipe, 0, 0}, "",
                     "expected a recipe (a YAML map of keys), found only " + std::to_string(file.empty_documents) +
                         " empty document" + (file.empty_documents == 1 ? "" : "s") + " (a --- line and nothing else)");
  }
  if (docs.size() <= 1) {
    rep.documents.push_back(CheckDocument(in, docs.empty() ? file.text : docs[0].text, in.recipe, loaded));
    return rep;
  }
  // Several (plan --out writes one recipe per document): a verdict for each. An unusable
  // document does not stop the others.
  rep.several = true;
  for (const Document& doc : docs) {
    const std::string where = in.recipe + ":" + std::to_string(doc.first_line);
    try {
      rep.documents.push_back(CheckDocument(in, doc.text, where, loaded));
    } catch (const InputError& e) {
      CheckedDocument& d = rep.documents.emplace_back();
      d.label = where;
      d.error = e.what();
      d.error_loc = e.loc();
      d.error_field = e.field();
      d.error_message = e.message();
    }
  }
  return rep;
}

}  // namespace meshplan
