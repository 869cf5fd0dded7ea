// model.pipeline_model_parallel_layout: Megatron-Core's string grammar (ParsePpLayoutString,
// PipelineParallelLayerLayout.parse_str_to_list) and the reader (frameworks/megatron_bridge/recipe_read.cpp): the string
// and list forms, what is refused with file, line, field, expected and found, and what the
// recipe sets beside it.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "fixtures/input_error.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

using Stages = std::vector<std::string>;

Stages Parsed(const std::string& text) {
  const PpLayoutParse p = ParsePpLayoutString(text);
  CAPTURE(text);
  CAPTURE(p.error);
  REQUIRE(p.ok);
  CHECK(p.error.empty());
  return p.stages;
}

std::string ParseError(const std::string& text) {
  const PpLayoutParse p = ParsePpLayoutString(text);
  CAPTURE(text);
  REQUIRE_FALSE(p.ok);
  CHECK(p.stages.empty());
  return p.error;
}

ParsedRecipe Read(const std::string& text) { return ParseMegatronRecipe(text, "r.yaml", 32); }

InputError ReadError(const std::string& text) {
  return test::ErrorOf([&] { (void)Read(text); });
}

// tp 4, pp 4 (32 GPUs, dp 2) and `more` model keys, the layout on line 4.
std::string Recipe(const std::string& layout, const std::string& more = "") {
  return "model:\n  tensor_model_parallel_size: 4\n  pipeline_model_parallel_size: 4\n  pipeline_model_parallel_layout: " +
         layout + "\n" + more;
}

}  // namespace

TEST_CASE("pp_layout: the string grammar unrolls repetitions as Megatron-Core's two re.sub passes do") {
  CHECK(Parsed("Ett|tt|tL") == Stages{"Ett", "tt", "tL"});
  // The docstring example of parse_str_to_list (pipeline_parallel_layer_layout.py:285-286):
  // "Ettt|(tt|)*29,m|L" -> [[E,t,t,t]] + [[t,t]]*29 + [[m],[L]].
  Stages doc = {"Ettt"};
  for (int i = 0; i < 29; ++i) doc.push_back("tt");
  doc.push_back("m");
  doc.push_back("L");
  CHECK(Parsed("Ettt|(tt|)*29,m|L") == doc);
  // TransformerConfig's docstring example 'Et*3|(tt|)*29,m|L' (transformer_config.py:114).
  CHECK(Parsed("Et*3|(tt|)*29,m|L") == doc);
  // x*n, leading zeros and n = 0; commas anywhere (removed before unrolling: "t,*3" is "t*3").
  CHECK(Parsed("Et*3|t*03L") == Stages{"Ettt", "tttL"});
  CHECK(Parsed("E(t)*0|t*0L") == Stages{"E", "L"});
  CHECK(Parsed("E,t,*3|,tL,") == Stages{"Ettt", "tL"});
  // The comments of lines 293-296, with layer symbols: (|ab)*2,cd -> |ab|abcd.
  CHECK(Parsed("(|tt)*2,tL") == Stages{"", "tt", "tttL"});
  // Pass 1 unrolls "(...)*n" before pass 2 unrolls "x*n" in its result: "(t*2)*3" is six t,
  // "(t)*2*3" is "tt*3", then "tttt".
  CHECK(Parsed("E(t*2)*3L") == Stages{"EttttttL"});
  CHECK(Parsed("E(t)*2*3L") == Stages{"EttttL"});
  // '|' repeats too, and empty stages are stages: "" is one, "E|" ends with one.
  CHECK(Parsed("Et|*2tL") == Stages{"Et", "", "tL"});
  CHECK(Parsed("") == Stages{""});
  CHECK(Parsed("E|") == Stages{"E", ""});
}

TEST_CASE("pp_layout: characters outside the grammar are refused with whitespace and leftovers of the passes") {
  const std::string expected = "expected Megatron-Core's layout string: E (embedding), t (decoder layer), m (MTP layer), "
                               "L (loss), '|' between stages, x*n and (...)*n repetition, ',' ignored, no spaces; found ";
  const std::pair<const char*, const char*> refused[] = {
      {"xyz", "'x' in stage 1"},
      {"Ett|tt|tX", "'X' in stage 3"},
      {"Et | tL", "a space in stage 1"},
      {"Et|\ttL", "a tab in stage 2"},
      {"Et\n|tL", "a line break in stage 1"},
      {"embedding|loss", "'e' in stage 1"},
      {"e|l", "'e' in stage 1"},
      // A '*' without digits stays, and is no layer.
      {"Et*|tL", "'*' in stage 1"},
      // "t*2*3": pass 2 unrolls "t*2", then continues after it, where "*3" has no character
      // before it; the '*' stays (shown in the string as unrolled).
      {"Et*2*3|L", "'*' in stage 1 of \"Ett*3|L\" (the layout unrolled)"},
      // Nested parentheses: [^)]+ stops at the first ')', so the outer ones stay.
      {"E((t)*2)*2|L", "'(' in stage 1 of \"E(t(t))|L\" (the layout unrolled)"},
      // "()*2": [^)]+ needs a character, the parentheses stay; pass 2 repeats the ')'.
      {"E()*2|tL", "'(' in stage 1 of \"E())|tL\" (the layout unrolled)"},
      // Python's \d takes other Unicode digits too (Arabic-Indic 3); meshplan reads ASCII digits only.
      {"Et*\xd9\xa3|tL", "'*' in stage 1"},
  };
  for (const auto& [text, found] : refused) CHECK(ParseError(text) == expected + found);
  // A layout that unrolls past 2^20 symbols.
  CHECK(ParseError("Et*99999999|tL").find("found a layout of more than 1048576 symbols") != std::string::npos);
  CHECK(ParseError("E(t*1024)*1025|L").find("more than 1048576 symbols") != std::string::npos);
}

TEST_CASE("pp_layout: a recipe's layout is read with its VPP derived when unset and the keys beside it kept") {
  // pp 4 and 8 stages: virtual_pipeline_model_parallel_size unset or null becomes 2
  // (transformer_config.py:2286-2287).
  for (const std::string vpp : {"", "  virtual_pipeline_model_parallel_size: null\n"}) {
    CAPTURE(vpp);
    const ParsedRecipe r = Read(Recipe("\"Et*10|t*10|t*10|t*10|t*10|t*10|t*10|t*10L\"", vpp));
    REQUIRE(r.layout.pp_layout != nullptr);
    const PpLayerLayout& g = *r.layout.pp_layout;
    CHECK(r.layout.pp_split == MbPpSplit::kLayout);
    CHECK(r.layout.vpp == 2);
    CHECK(g.stages.size() == 8);
    CHECK(g.Count('t') == 80);
    CHECK(g.CountIn(0, 't') == 10);
    CHECK(g.StageOf('E') == 0);
    CHECK(g.StageOf('L') == 7);
    CHECK(g.where == "r.yaml:4:3");
    CHECK(g.written == "\"Et*10|t*10|t*10|t*10|t*10|t*10|t*10|t*10L\"");
    CHECK(g.mtp_num_layers == -1);
    CHECK(g.other_split_keys.empty());
    CHECK(g.ToString() == "Etttttttttt|tttttttttt|tttttttttt|tttttttttt|tttttttttt|tttttttttt|tttttttttt|ttttttttttL");
  }
  // One stage per rank: VPP stays unset (1); a VPP given is kept as given (mb_pp_layout_vpp
  // compares); stages that do not divide by PP leave it unset (mb_pp_layout_stages_divisible_by_pp).
  CHECK(Read(Recipe("\"Et*20|t*20|t*20|t*20L\"")).layout.vpp == 1);
  CHECK(Read(Recipe("\"Et*20|t*20|t*20|t*20L\"", "  virtual_pipeline_model_parallel_size: 3\n")).layout.vpp == 3);
  CHECK(Read(Recipe("\"Ett|tt|tL\"")).layout.vpp == 1);
  // The list form: a list of stages, each a list of LayerType names, stripped and lower-cased
  // (pipeline_parallel_layer_layout.py:66-71); [] is an empty stage.
  const ParsedRecipe l = Read(Recipe("[[embedding, decoder, decoder], [\" Decoder \", DECODER], [], [decoder, mtp, loss]]"));
  REQUIRE(l.layout.pp_layout != nullptr);
  CHECK(l.layout.pp_layout->stages == Stages{"Ett", "tt", "", "tmL"});
  CHECK(l.layout.pp_layout->written == "[[embedding, decoder, decoder], [decoder, decoder], [], [decoder, mtp, loss]]");
  // Block style too; encoder is a LayerType (refused by mb_pp_layout_no_encoder, not here).
  const ParsedRecipe b = Read(Recipe("\n    - [embedding, encoder]\n    - [decoder, loss]\n"));
  CHECK(b.layout.pp_layout->stages == Stages{"Ec", "tL"});
  // mtp_num_layers: unset (the provider's), null (None: no MTP) or a count.
  CHECK(Read(Recipe("\"EtmL\"", "  mtp_num_layers: null\n")).layout.pp_layout->mtp_num_layers == 0);
  CHECK(Read(Recipe("\"EtmL\"", "  mtp_num_layers: 1\n")).layout.pp_layout->mtp_num_layers == 1);
  // The other pipeline-split keys beside a layout are kept for mb_pp_layout_alone (one
  // account_for_ key alone is no longer refused as "set both": Megatron-Core refuses either).
  const ParsedRecipe o = Read(Recipe("\"Et*20|t*20|t*20|t*20L\"",
                                     "  account_for_embedding_in_pipeline_split: true\n"
                                     "  num_layers_in_first_pipeline_stage: 19\n  num_layers_in_last_pipeline_stage: null\n"));
  CHECK(o.layout.pp_layout->other_split_keys ==
        std::vector<std::string>{"account_for_embedding_in_pipeline_split: true", "num_layers_in_first_pipeline_stage: 19"});
  // null is no layout (Python None).
  const ParsedRecipe none = Read(Recipe("null"));
  CHECK(none.layout.pp_layout == nullptr);
  CHECK(none.layout.pp_split == MbPpSplit::kEven);
}

TEST_CASE("pp_layout: a layout that is no string of the grammar nor a list of lists of layer names is exit 2 where it stands") {
  struct Bad {
    std::string layout, field;
    int line, column;
    std::string message;
  };
  const std::string string_or_list =
      "expected a layout string (\"Ett|tt|tL\") or a list of stages, each a list of layer names (embedding, decoder, mtp, "
      "loss); found ";
  const std::string grammar = "expected Megatron-Core's layout string: E (embedding), t (decoder layer), m (MTP layer), "
                              "L (loss), '|' between stages, x*n and (...)*n repetition, ',' ignored, no spaces; found ";
  const std::string names = "expected a Megatron-Core LayerType name: embedding, decoder, mtp, loss (or encoder, which "
                            "Megatron-Core does not support here); found ";
  const Bad cases[] = {
      {"\"xyz\"", "model.pipeline_model_parallel_layout", 4, 3, grammar + "'x' in stage 1; the layout is \"xyz\""},
      {"Et|t t|tL", "model.pipeline_model_parallel_layout", 4, 3,
       grammar + "a space in stage 2; the layout is \"Et|t t|tL\""},
      {"42", "model.pipeline_model_parallel_layout", 4, 3,
       string_or_list + "an integer, 42 (quote a layout string: \"...\")"},
      {"true", "model.pipeline_model_parallel_layout", 4, 3,
       string_or_list + "a boolean, true (quote a layout string: \"...\")"},
      {"1.5", "model.pipeline_model_parallel_layout", 4, 3,
       string_or_list + "a number, 1.5 (quote a layout string: \"...\")"},
      {"{E: t}", "model.pipeline_model_parallel_layout", 4, 3, string_or_list + "a map"},
      // A quoted number is a string, refused by the grammar.
      {"\"42\"", "model.pipeline_model_parallel_layout", 4, 3, grammar + "'4' in stage 1; the layout is \"42\""},
      // The list form: every stage a list (lines 35-38), every layer a LayerType name (62-71).
      {"[Ett, tL]", "model.pipeline_model_parallel_layout[0]", 4, 36,
       string_or_list + "'Ett' as stage 0 (every stage is a list, [] when empty)"},
      {"[[E, t], [t, L]]", "model.pipeline_model_parallel_layout[0][0]", 4, 37, names + "'E'"},
      {"[[embedding, 1]]", "model.pipeline_model_parallel_layout[0][1]", 4, 48, names + "an integer, 1"},
      {"[[embedding, null]]", "model.pipeline_model_parallel_layout[0][1]", 4, 48, names + "null"},
      {"[[embedding, [decoder]]]", "model.pipeline_model_parallel_layout[0][1]", 4, 48, names + "a list"},
      {"[[embedding, transformer]]", "model.pipeline_model_parallel_layout[0][1]", 4, 48, names + "'transformer'"},
  };
  for (const Bad& c : cases) {
    CAPTURE(c.layout);
    const InputError e = ReadError(Recipe(c.layout));
    CHECK(e.loc().file == "r.yaml");
    CHECK(e.loc().line == c.line);
    CHECK(e.loc().column == c.column);
    CHECK(e.field() == c.field);
    CHECK(e.message() == c.message);
  }
  // mtp_num_layers beside a layout is read as an integer.
  const InputError q = ReadError(Recipe("\"EtmL\"", "  mtp_num_layers: \"1\"\n"));
  CHECK(q.field() == "model.mtp_num_layers");
  CHECK(q.loc().line == 5);
}
