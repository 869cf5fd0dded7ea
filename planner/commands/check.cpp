// `check RECIPE`: every document of a recipe file judged against the framework's rules and the
// memory model, with the overlap settings that will be silently off and, when it fails, the
// nearest valid layouts.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <regex>

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

// The settings a rule's message proposes, in the words the rules use: "set sequence_parallel:
// false", "use cp_size: 1", "set dp_size: null to let AutoModel infer it", "set
// model.backend.dispatcher: hybridep" (a dotted key: its path from the recipe's root) -> (key, value).
std::vector<std::pair<std::string, std::string>> ProposedSettings(const std::string& message) {
  static const std::regex kProposal(R"((?:set|use) ([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*): ([A-Za-z0-9_.-]+))");
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), kProposal); it != std::sregex_iterator(); ++it) {
    out.emplace_back((*it)[1].str(), (*it)[2].str());
  }
  return out;
}

// Sets the first `key` found (depth first) in the maps of `node` to `value`; false when none.
bool SetFirstKey(YAML::Node node, const std::string& key, const std::string& value) {
  if (!node.IsMap()) return false;
  for (auto kv : node) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) {
      node[key] = YAML::Load(value);
      return true;
    }
  }
  for (auto kv : node) {
    if (SetFirstKey(kv.second, key, value)) return true;
  }
  return false;
}

// Adds `key` to the first map (depth first) of `node` holding a key that ends as `key` does
// after its last '_' (expert_tensor_parallel_size beside tensor_model_parallel_size); false when
// none does.
bool AddBesideKin(YAML::Node node, const std::string& key, const std::string& value) {
  if (!node.IsMap()) return false;
  const std::string tail = key.substr(key.rfind('_') == std::string::npos ? 0 : key.rfind('_'));
  for (auto kv : node) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (k.size() >= tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0 && !kv.second.IsMap()) {
      node[key] = YAML::Load(value);
      return true;
    }
  }
  for (auto kv : node) {
    if (AddBesideKin(kv.second, key, value)) return true;
  }
  return false;
}

// Sets the dotted `path` ("model.backend.dispatcher") of the map `root` to `value`, adding the
// maps on the way that it lacks; false where a node on the way is not a map.
bool SetPath(YAML::Node root, const std::string& path, const std::string& value) {
  YAML::Node node = root;
  for (size_t at = 0;;) {
    if (!node.IsMap()) return false;
    const size_t dot = path.find('.', at);
    const std::string key = path.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    if (dot == std::string::npos) {
      node[key] = YAML::Load(value);
      return true;
    }
    if (!node[key]) node[key] = YAML::Node(YAML::NodeType::Map);
    node.reset(node[key]);
    at = dot + 1;
  }
}

// The recipe `text` with `key` set to `value` (its leading comment lines, the recipe-function
// header among them, kept), the key added beside its kin where the recipe does not write it (a
// dotted key: at its path, SetPath);
// "" when it has none or cannot be re-read.
std::string WithSetting(const std::string& text, const std::string& key, const std::string& value) {
  try {
    YAML::Node root = YAML::Load(text);
    if (key.find('.') != std::string::npos) {
      if (!SetPath(root, key, value)) return "";
    } else if (!SetFirstKey(root, key, value) && !AddBesideKin(root, key, value)) {
      return "";
    }
    std::string head;
    for (size_t at = 0; at < text.size() && text[at] == '#';) {
      const size_t end = text.find('\n', at);
      head += text.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
      if (end == std::string::npos) break;
      at = end + 1;
    }
    YAML::Emitter e;
    e << root;
    return head + e.c_str() + "\n";
  } catch (const YAML::Exception&) {
    return "";
  }
}

// Beside the first fix, for each failing rule whose message proposes a setting the recipe
// writes: whether the fix does what the rule proposes and, when it does not, why: with the
// proposal alone the recipe still breaks a rule, or does not fit, or is valid and fits at a
// lower expected throughput (its out-of-memory risk priced as plan prices it).
void NoteRuleProposals(const CheckInput& in, const std::string& text, const LoadedInputs& loaded, CheckedDocument& d) {
  if (d.nearest.empty() || !d.nearest.front().candidate.cost.fits) return;
  NearbyLayout& first = d.nearest.front();
  const PlanRequest& req = d.recipe.request;
  const Layout& from = d.recipe.parsed.layout;
  const ErrorKind kind = ErrorKindOf(ToCostView(from, req.model, req.setup).runtime, req.model, req.system, req.setup);
  for (const RuleFailure& f : d.failures) {
    for (const auto& [key, value] : ProposedSettings(f.message)) {
      const std::string changed = WithSetting(text, key, value);
      if (changed.empty()) continue;
      JudgedRecipe alone;
      try {
        alone = LoadRecipeForJudging(in.setup, in.recipe, changed, loaded, true);
      } catch (const InputError&) {
        continue;
      }
      const Layout& l = alone.parsed.layout;
      const std::vector<std::string> proposal = LayoutChanges(from, l, req.model.num_layers, req.setup);
      if (proposal.empty()) continue;  // not a layout setting the fixes choose
      const bool does = std::all_of(proposal.begin(), proposal.end(), [&](const std::string& c) {
        return std::find(first.changes.begin(), first.changes.end(), c) != first.changes.end();
      });
      std::string note = "rule " + f.name + " proposes " + key + ": " + value + ": ";
      if (does) {
        note += "this fix does it";
      } else {
        note += "this fix does not, since with it alone the recipe ";
        const RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
        const std::vector<RuleFailure> still = commands::RuleFailures(ctx);
        const bool sane = l.dp >= 1 && l.tp * l.pp * l.cp * l.dp == req.setup.num_gpus && l.micro_batch() >= 1;
        if (!still.empty()) {
          note += "still breaks";
          for (size_t i = 0; i < still.size(); ++i) note += (i ? ", " : " ") + still[i].name;
        } else if (!sane) {
          note += "is not a layout of " + std::to_string(req.setup.num_gpus) + " GPUs";
        } else {
          const Cost c = Score(CostModel(req.model, req.system, req.setup), l);
          char buf[240];
          if (!c.fits) {
            std::snprintf(buf, sizeof buf, "is valid but needs %.1f GiB per GPU, above the %.1f GiB usable",
                          c.memory.Total() / 1073741824.0, c.capacity_bytes / 1073741824.0);
          } else {
            const Risk r = AssessRisk(kind, c);
            const double mine = first.candidate.risk.expected_step_seconds;
            std::snprintf(buf, sizeof buf,
                          "is valid and fits at %.0f tokens/s per GPU, expected step %.3f s (the out-of-memory risk "
                          "priced) against this fix's %.3f s%s",
                          c.tokens_per_s_per_gpu, r.expected_step_seconds, mine,
                          r.expected_step_seconds > mine ? ": it ranks after it" : "");
          }
          note += buf;
        }
      }
      first.note += (first.note.empty() ? "" : "; ") + note;
    }
  }
}

// Judges one recipe document. Throws InputError for an unusable one.
CheckedDocument CheckDocument(const CheckInput& in, const std::string& text, const std::string& label,
                              const LoadedInputs& loaded) {
  CheckedDocument d;
  d.label = label;
  d.recipe = LoadRecipeForJudging(in.setup, in.recipe, text, loaded, true);
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
  // A model the cost model does not price (HybridRefusal), or a hybrid model this framework's
  // cost terms do not price (FrameworkHybridRefusal): the framework's rules above still judge
  // the recipe (layer counts, head divisibility, CP support); no memory, step time or nearest
  // layout.
  const std::string unpriced = FrameworkHybridRefusal(FrameworkOf(req.framework), req.model);
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
    if (l.tp >= 1 && l.pp >= 1 && l.cp >= 1 && l.ep >= 1 && l.micro_batch() >= 1) d.more_gpus = FewestGpusFor(req, l);
  }
  if (!d.failures.empty()) NoteRuleProposals(in, text, loaded, d);
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
