// Recipes read back for judging (check, explain): the file read and split into documents, and
// one document parsed into its layout and the request it is judged in.
#include <nlohmann/json.hpp>

#include "commands/internal.hpp"
#include "meshplan/data.hpp"

namespace meshplan {

namespace {

// True if the line holds YAML content: not blank, not a comment, not a directive (%YAML).
bool HasContent(const std::string& line) {
  const size_t i = line.find_first_not_of(" \t\r");
  return i != std::string::npos && line[i] != '#' && !(i == 0 && line[0] == '%');
}

// A line that is exactly the marker (---, ...) or the marker followed by a space or a tab.
bool IsMarker(const std::string& line, const char* marker) {
  return line.compare(0, 3, marker) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

}  // namespace

// YAML 1.2: "---" and "..." are markers wherever they stand at the start of a line, also inside
// scalars.
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

RecipeFile ReadRecipeFile(const std::string& path) {
  RecipeFile f{path, data::ReadFileOrThrow(path), {}, 0};
  RefusePlanOutput(f.text, path);
  f.documents = SplitDocuments(f.text, &f.empty_documents);
  return f;
}

JudgedRecipe LoadRecipeForJudging(const JudgeSetup& in, const std::string& file, const std::string& text,
                                  const LoadedInputs& loaded, bool rules_only_hybrid) {
  RequestSettings s;
  s.rules_only_hybrid = rules_only_hybrid;
  s.framework = in.framework ? *in.framework : DetectFramework(text, file);
  std::tie(s.version, s.mb_version) = ResolveReleases(in.releases, s.framework);
  JudgedRecipe r;
  r.parsed = FrameworkOf(s.framework).read_recipe(text, file, in.gpus, &loaded.model, in.mb_recipe);
  s.setup.num_gpus = in.gpus;
  // A value of `in` replaces the recipe's when positive.
  s.setup.global_batch = in.global_batch.value_or(0) > 0 ? *in.global_batch : r.parsed.global_batch;
  s.setup.seq_len = in.seq_len.value_or(0) > 0 ? *in.seq_len : r.parsed.seq_len;
  if (s.setup.seq_len <= 0) {
    commands::FlagError("--seq-len", std::string("required: the recipe does not set ") +
                                         commands::WordsOf(s.framework).seq_len_key + "; pass --seq-len");
  }
  s.setup.precision = in.precision ? *in.precision : r.parsed.precision_set ? r.parsed.precision : Precision::kBf16;
  s.setup.headroom = ResolveHeadroom(in.headroom, s.framework);
  r.request = BuildRequest(s, loaded);
  return r;
}

}  // namespace meshplan
