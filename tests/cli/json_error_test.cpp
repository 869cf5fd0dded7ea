// plan --format json on failure: stdout has a JSON object with the error (it was empty), read
// back here with nlohmann::json; the human message stays on stderr.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <sstream>
#include <string>

#include "cli/commands.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

// Runs `plan` with `o`; returns the exit status and fills what it printed on stdout and stderr.
int RunCaptured(const cli::PlanOptions& o, std::string& out, std::string& err) {
  std::ostringstream so, se;
  std::streambuf* old_out = std::cout.rdbuf(so.rdbuf());
  std::streambuf* old_err = std::cerr.rdbuf(se.rdbuf());
  int rc = -1;
  try {
    rc = cli::RunPlan(o);
  } catch (...) {
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    throw;
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  out = so.str();
  err = se.str();
  return rc;
}

// plan --format json of `model` on 8 GPUs of dgx-h100.
cli::PlanOptions JsonPlan(const std::string& model, long long seq_len, long long global_batch) {
  cli::PlanOptions o;
  o.in.model = model;
  o.in.system = "dgx-h100";
  o.gpus = 8;
  o.seq_len = seq_len;
  o.in.global_batch = global_batch;
  o.format = "json";
  return o;
}

}  // namespace

TEST_CASE("plan --format json prints the error and the counts when no layout fits") {
  cli::PlanOptions o = JsonPlan("llama3.1-405b", 8192, 64);
  std::string out, err;
  CHECK(RunCaptured(o, out, err) == 1);
  const nlohmann::json j = nlohmann::json::parse(out);
  REQUIRE(j.contains("error"));
  CHECK(j["error"]["kind"] == "no_layout_fits");
  CHECK(j["error"]["exit_status"] == 1);
  CHECK(j["error"]["file"].is_null());
  CHECK(j["error"]["field"].is_null());
  // The same message as stderr's, without the program name.
  CHECK("meshplan: " + j["error"]["message"].get<std::string>() + "\n" == err);
  CHECK(j["counts"]["fitting"] == 0);
  CHECK(j["counts"]["valid"].get<int64_t>() > 0);
  CHECK(j["recipes"].empty());
  CHECK(j["request"]["gpus"] == 8);
  // Without --format json stdout stays empty.
  o.format = "table";
  CHECK(RunCaptured(o, out, err) == 1);
  CHECK(out.empty());
}

TEST_CASE("plan --format json names the rules when no layout is valid") {
  cli::PlanOptions o = JsonPlan("llama3.1-8b", 4096, 7);
  o.strategies = {"ddp"};
  std::string out, err;
  CHECK(RunCaptured(o, out, err) == 1);
  const nlohmann::json j = nlohmann::json::parse(out);
  CHECK(j["error"]["kind"] == "no_valid_layout");
  CHECK(j["error"]["message"].get<std::string>().find("every one of the") != std::string::npos);
  CHECK(j["counts"]["valid"] == 0);
  CHECK(j["rejected_by_rule"].contains("global_batch_divisible"));
}

TEST_CASE("ErrorJson carries an input error's place and field") {
  const InputError e({"models/x.json", 3, 5}, "num_attention_heads", "expected a positive integer, found -4");
  const nlohmann::json j = nlohmann::json::parse(JsonText(ErrorJson("input", e.message(), 2, e.loc(), e.field())));
  CHECK(j == nlohmann::json::parse(R"({"error": {"kind": "input", "message": "expected a positive integer, found -4",
    "exit_status": 2, "file": "models/x.json", "output": null, "line": 3, "column": 5, "field": "num_attention_heads"}})"));
  // A command-line error has no file; bytes that are not UTF-8 do not make the JSON fail.
  const nlohmann::json c = nlohmann::json::parse(
      JsonText(ErrorJson("input", "found '\xff'", 2, {"<command line>", 0, 0}, "--gpus")));
  CHECK(c["error"]["file"].is_null());
  CHECK(c["error"]["line"].is_null());
  CHECK(c["error"]["field"] == "--gpus");
  CHECK(c["error"]["message"] == "found '\xEF\xBF\xBD'");
}

TEST_CASE("plan --format json names an unwritable output path under output not file") {
  // What main prints on stdout for the InputError that `run` throws.
  auto error_json = [](auto run) {
    try {
      run();
    } catch (const InputError& e) {
      return ErrorJson("input", e.message(), 2, e.loc(), e.field())["error"];
    }
    FAIL("expected an InputError");
    return nlohmann::json();
  };
  // --report in a directory that does not exist: refused before the search.
  cli::PlanOptions o = JsonPlan("llama3.1-8b", 4096, 64);
  o.report = "/nonexistent-meshplan-dir/report.html";
  const nlohmann::json r = error_json([&] { cli::RunPlan(o); });
  CHECK(r["file"].is_null());
  CHECK(r["output"] == "/nonexistent-meshplan-dir/report.html");
  CHECK(r["field"] == "--report");
  CHECK(r["line"].is_null());
  CHECK(r["message"] == "expected a file in an existing directory; '/nonexistent-meshplan-dir' does not exist "
                        "(create it first) (nothing was written)");
  // The path WriteFileAtomically refuses (it exists, no --force) is an output too.
  const nlohmann::json w = error_json([] { WriteFileAtomically("/proc/version", "x", /*force=*/false, "--out"); });
  CHECK(w["file"].is_null());
  CHECK(w["output"] == "/proc/version");
  CHECK(w["field"] == "--out");
  CHECK(w["message"] == "file exists; pass --force to replace it");
}
