// `meshplan check RECIPE`: its options, the request they make (CheckRecipe, planner/commands/
// check.cpp) and the verdict of every document rendered. Exit 0 valid, 1 invalid (a rule fails or
// the recipe is predicted above the GPU's whole memory), 2 unusable input.
#include <iostream>

#include "cli/commands.hpp"
#include "render/json.hpp"
#include "render/text.hpp"

namespace meshplan::cli {

void AddCheckCommand(CLI::App& app, CheckOptions& o) {
  CLI::App* cmd = app.add_subcommand("check", "check a recipe against the framework's rules and memory");
  cmd->add_option("recipe", o.in.recipe, "AutoModel recipe or Megatron-Bridge override YAML")->required();
  cmd->add_option("--model", o.in.setup.model, "preset name or path to config.json / model YAML")->required();
  cmd->add_flag("--generic-decoder", o.in.setup.generic_decoder,
                "plan a config of an unsupported architecture as a generic dense/MoE decoder from its standard "
                "fields (said as a warning in every output)");
  cmd->add_option("--system", o.in.setup.system, "system name or path to a system YAML")->required();
  cmd->add_option("--gpus", o.in.setup.gpus, "number of GPUs (world size)")->required();
  cmd->add_option("--seq-len", o.seq_len, "tokens per sequence (default: the recipe's model.seq_length, or dataset.seq_len for AutoModel)")
      ->check(CLI::Range(int64_t{1}, (int64_t{1} << 24)));
  cmd->add_option("--precision", o.precision, "GEMM precision (default: the recipe's mixed_precision or fp8 section, else bf16)")
      ->check(CLI::IsMember({"bf16", "fp8"}));
  cmd->add_option("--format", o.format, "stdout format")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--framework", o.framework, "recipe framework (default: detected from its keys)")
      ->check(CLI::IsMember({"automodel", "megatron-bridge"}));
  cmd->add_option("--automodel-version", o.automodel_version, "AutoModel rules (0.5 or 0.4)")
      ->check(CLI::IsMember({"0.5", "0.4"}));
  cmd->add_option("--mbridge-version", o.mbridge_version, "Megatron-Bridge rules (main or core0.15)")
      ->check(CLI::IsMember({"main", "core0.15"}));
  TrackVersionFlags(cmd, o.given);
  cmd->add_option("--headroom", o.in.setup.headroom, "fraction of GPU memory kept free (0..0.9; default: the framework's, 0.02 for Megatron-Bridge, 0.10 for AutoModel: docs/memory-model.md)")->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--hwdb", o.in.setup.hwdb, "hardware database directory (default: the embedded hwdb/)");
  cmd->add_option("--mb-recipe", o.in.setup.mb_recipe,
                  "Megatron-Bridge: the recipe function the overrides are for (its key paths and its own values of "
                  "the keys the file leaves unset; default: the file's '# recipe function:' header)");
}

int RunCheck(const CheckOptions& o) {
  CheckInput in = o.in;
  if (o.seq_len != 0) in.setup.seq_len = o.seq_len;
  if (!o.precision.empty()) in.setup.precision = o.precision == "fp8" ? Precision::kFp8 : Precision::kBf16;
  if (!o.framework.empty()) in.setup.framework = ParseFramework(o.framework);
  in.setup.releases = AskedReleases(o.given, o.automodel_version, o.mbridge_version);
  const CheckReport rep = CheckRecipe(in);
  if (o.format == "json") {
    // One JSON object for the file; an unusable document's message also goes to stderr.
    for (const CheckedDocument& d : rep.documents) {
      if (!d.error.empty()) std::cerr << d.error << "\n";
    }
    std::cout << JsonText(render::CheckJson(rep));
    return rep.Status();
  }
  if (!rep.several) {
    render::PrintCheckedDocument(std::cout, rep.documents.front());
    return rep.Status();
  }
  // Several (plan --out writes one recipe per document): a verdict for each; the exit status
  // is the worst (2 unusable > 1 invalid > 0 valid).
  std::cout << in.recipe << ": " << rep.documents.size() << " YAML documents, each checked on its own";
  const int empty = rep.empty_documents;
  if (empty > 0) std::cout << " (" << empty << " empty one" << (empty == 1 ? "" : "s") << ", only a --- line, skipped)";
  std::cout << "\n";
  for (size_t i = 0; i < rep.documents.size(); ++i) {
    const CheckedDocument& d = rep.documents[i];
    std::cout << "=== document " << i + 1 << " of " << rep.documents.size() << " (" << d.label << ")\n";
    if (d.error.empty()) {
      render::PrintCheckedDocument(std::cout, d);
    } else {
      std::cout << std::flush;
      std::cerr << d.error << "\n";
    }
  }
  std::cout << "=== " << in.recipe << ": documents";
  for (size_t i = 0; i < rep.documents.size(); ++i) {
    const int s = rep.documents[i].Status();
    std::cout << (i ? ", " : " ") << i + 1 << (s == 0 ? " valid" : s == 1 ? " INVALID" : " unusable");
  }
  std::cout << " (exit " << rep.Status() << ")\n";
  return rep.Status();
}

void TrackVersionFlags(CLI::App* cmd, std::set<std::string>& given) {
  for (const char* name : {"--automodel-version", "--mbridge-version"}) {
    cmd->get_option(name)->each([&given, name](const std::string&) { given.insert(name); });
  }
}

ReleaseChoice AskedReleases(const std::set<std::string>& given, const std::string& automodel,
                            const std::string& mbridge) {
  ReleaseChoice asked;
  if (given.count("--automodel-version")) asked.automodel = ParseAutoModelVersion(automodel);
  if (given.count("--mbridge-version")) asked.mbridge = ParseMBridgeVersion(mbridge);
  return asked;
}

}  // namespace meshplan::cli
