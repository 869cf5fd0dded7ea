// `meshplan serve`: a server on a free loopback port, asked with cpp-httplib's client; its
// answers compared with the CLI's --format json for the same request (the binary, run).
#include <doctest/doctest.h>
#include <httplib.h>

#include <stdlib.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "serve/server.hpp"

namespace {

using nlohmann::json;
using meshplan::serve::Server;
using meshplan::serve::ServeOptions;

// stdout of `command` (a shell line).
std::string Output(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// A server answering on its own thread for the test's lifetime.
struct Running {
  explicit Running(ServeOptions o) : server((o.port = 0, o)) {
    port = server.Bind();
    thread = std::thread([this] { server.Listen(); });
  }
  ~Running() {
    server.Stop();
    thread.join();
  }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
  Server server;
  int port = 0;
  std::thread thread;
};

// The error object of a request that must be refused as bad input (400).
json InputErrorOf(httplib::Client& c, const char* path, const json& body) {
  auto res = c.Post(path, body.dump(), "application/json");
  REQUIRE(res);
  CHECK(res->status == 400);
  return json::parse(res->body)["error"];
}

}  // namespace

TEST_CASE("serve answers plan with the CLI's JSON and survives bad requests") {
  ServeOptions o;
  o.max_body_bytes = 64 * 1024;
  o.max_seconds = 30;
  Running s(o);
  httplib::Client c = s.Client();

  const json request = {{"model", "llama3.1-70b"}, {"system", "dgx-h100"}, {"gpus", 32},
                        {"seq_len", 8192},        {"global_batch", 512},  {"top", 3}};
  auto plan = c.Post("/api/plan", request.dump(), "application/json");
  REQUIRE(plan);
  CHECK(plan->status == 200);
  json got = json::parse(plan->body);
  CHECK(got.contains("warnings"));  // the CLI's stderr remarks; the rest is its stdout
  got.erase("warnings");
  const json cli = json::parse(Output(std::string(MESHPLAN_BINARY) +
                                      " plan --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8192 "
                                      "--global-batch 512 --top 3 --format json --max-seconds 30"));
  CHECK(got == cli);
  REQUIRE(got["recipes"].size() == 3);
  CHECK(got["recipes"][0]["layout"]["dp_size"].get<int>() * got["recipes"][0]["layout"]["tp_size"].get<int>() *
            got["recipes"][0]["layout"]["pp_size"].get<int>() * got["recipes"][0]["layout"]["cp_size"].get<int>() ==
        32);

  SUBCASE("scatter: the fitting layouts, fastest first, each naming the peak of its mfu_precision_peak") {
    json r = request;
    r["scatter"] = true;
    r["precision"] = "fp8";
    auto res = c.Post("/api/plan", r.dump(), "application/json");
    REQUIRE(res);
    REQUIRE(res->status == 200);
    const json scatter = json::parse(res->body)["scatter"];
    REQUIRE(scatter.size() >= 3);
    for (const json& p : scatter) CHECK(p["precision_peak"] == "FP8");
    CHECK(scatter[0]["tokens_per_s_per_gpu"].get<double>() >= scatter[1]["tokens_per_s_per_gpu"].get<double>());
    // H100 SXM's dense peaks (hwdb/gpus/h100-sxm.yaml): 989 TFLOP/s BF16, 1979 FP8.
    CHECK(scatter[0]["mfu_precision_peak"].get<double>() ==
          doctest::Approx(scatter[0]["mfu"].get<double>() * 989.0 / 1979.0).epsilon(1e-6));
  }

  SUBCASE("launch files: what plan --emit-launch writes beside its recipes") {
    json r = request;
    r["launch"] = true;
    auto res = c.Post("/api/plan", r.dump(), "application/json");
    REQUIRE(res);
    REQUIRE(res->status == 200);
    const json launch = json::parse(res->body)["launch"];
    REQUIRE(launch.size() == 3);
    CHECK(launch[0]["recipe_file"] == "llama3.1-70b_dgx-h100_32.rank1.yaml");
    CHECK(launch[0]["launch_sh"].get<std::string>().find("torchrun") != std::string::npos);
    char dir[] = "/tmp/meshplan-serve-test-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string out = std::string(dir) + "/llama3.1-70b_dgx-h100_32.yaml";
    Output(std::string(MESHPLAN_BINARY) + " plan --model llama3.1-70b --system dgx-h100 --gpus 32 --seq-len 8192 "
           "--global-batch 512 --top 3 --out " + out + " --emit-launch > /dev/null 2>&1");
    for (int rank = 1; rank <= 3; ++rank) {
      const std::string stem = std::string(dir) + "/llama3.1-70b_dgx-h100_32.rank" + std::to_string(rank);
      CHECK(Output("cat " + stem + ".launch.sh") == launch[rank - 1]["launch_sh"].get<std::string>());
      CHECK(Output("cat " + stem + ".sbatch") == launch[rank - 1]["sbatch"].get<std::string>());
    }
    Output(std::string("rm -r ") + dir);
  }
  SUBCASE("malformed JSON: 400 with the CLI's error structure, then the next request works") {
    auto bad = c.Post("/api/plan", "{\"model\": ", "application/json");
    REQUIRE(bad);
    CHECK(bad->status == 400);
    const json e = json::parse(bad->body)["error"];
    CHECK(e["kind"] == "input");
    CHECK(e["exit_status"] == 2);
    CHECK(e["message"].get<std::string>().find("not JSON") != std::string::npos);
    auto again = c.Post("/api/plan", request.dump(), "application/json");
    REQUIRE(again);
    CHECK(again->status == 200);
  }
  SUBCASE("a wrong field names it, as the CLI names its option") {
    json r = request;
    r["gpus"] = "many";
    CHECK(InputErrorOf(c, "/api/plan", r)["field"] == "gpus");
    r["gpus"] = 12;  // not a whole number of 8-GPU nodes: the commands layer's own error
    const json e = InputErrorOf(c, "/api/plan", r);
    CHECK(e["field"] == "gpus");
    CHECK(e["message"].get<std::string>().find("found 12") != std::string::npos);
    r["gpus"] = 18446744073709551615ULL;  // above INT64_MAX: refused, not wrapped to -1
    CHECK(InputErrorOf(c, "/api/plan", r)["message"].get<std::string>().find("out of range") != std::string::npos);
    r = request;
    r["top"] = 0;
    CHECK(InputErrorOf(c, "/api/plan", r)["message"] == "expected an integer in [1, 1000], found 0");
    r = request;
    r["seq_lenn"] = 4096;
    CHECK(InputErrorOf(c, "/api/plan", r)["message"].get<std::string>().find("did you mean 'seq_len'") != std::string::npos);
  }
  SUBCASE("a pasted config.json that does not parse: 400 naming model_config.json and its line") {
    json r = request;
    r.erase("model");
    r["model_config"] = "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": \"big\"\n}\n";
    const json e = InputErrorOf(c, "/api/plan", r);
    CHECK(e["file"] == "model_config.json");
    CHECK(e["line"] == 3);
    CHECK(e["field"] == "hidden_size");
  }
  SUBCASE("paths are refused: the server reads no files") {
    json r = request;
    r["model"] = "/etc/passwd";
    CHECK(InputErrorOf(c, "/api/plan", r)["field"] == "model");
  }
  SUBCASE("a body over the limit: 413, then the next request works") {
    auto big = c.Post("/api/plan", std::string(100 * 1024, ' ') + request.dump(), "application/json");
    REQUIRE(big);
    CHECK(big->status == 413);
    CHECK(json::parse(big->body)["error"]["message"].get<std::string>().find("65536 bytes") != std::string::npos);
    httplib::Client c2 = s.Client();
    auto again = c2.Post("/api/plan", request.dump(), "application/json");
    REQUIRE(again);
    CHECK(again->status == 200);
  }
  SUBCASE("a search past its limit: 422 search_stopped; above the server's limit: 400") {
    json r = {{"model", "deepseek-v3"}, {"system", "dgx-h100"}, {"gpus", 1024}, {"seq_len", 4096},
              {"global_batch", 4096},   {"framework", "megatron-bridge"}, {"max_layouts", 50}};
    auto stopped = c.Post("/api/plan", r.dump(), "application/json");
    REQUIRE(stopped);
    CHECK(stopped->status == 422);
    const json j = json::parse(stopped->body);
    CHECK(j["error"]["kind"] == "search_stopped");
    CHECK(j["error"]["field"] == "max_layouts");
    r.erase("max_layouts");
    r["max_seconds"] = 0.001;  // --max-seconds: the deadline passes before the space is covered
    auto late = c.Post("/api/plan", r.dump(), "application/json");
    REQUIRE(late);
    CHECK(late->status == 422);
    CHECK(json::parse(late->body)["error"]["field"] == "max_seconds");
    CHECK(json::parse(late->body)["counts"]["stopped"] == "deadline");
    CHECK(j["counts"]["stopped"] != "");
    r["max_seconds"] = 31;
    CHECK(InputErrorOf(c, "/api/plan", r)["field"] == "max_seconds");
  }
  SUBCASE("unknown endpoint: 404 in JSON") {
    auto none = c.Get("/api/nothing");
    REQUIRE(none);
    CHECK(none->status == 404);
    CHECK(json::parse(none->body)["error"]["kind"] == "http");
  }
  SUBCASE("a known endpoint asked with another method: 405 with its Allow header") {
    auto put = c.Put("/api/plan", request.dump(), "application/json");
    REQUIRE(put);
    CHECK(put->status == 405);
    CHECK(put->get_header_value("Allow") == "POST");
    CHECK(json::parse(put->body)["error"]["message"] == "PUT is not allowed on /api/plan: expected POST (see docs/serve.md)");
    // GET on a POST endpoint, POST on a GET one, DELETE on the page.
    for (const auto& [res, allow] : {std::pair{c.Get("/api/check"), "POST"}, std::pair{c.Post("/api/models", "{}", "application/json"), "GET"},
                                     std::pair{c.Delete("/"), "GET"}}) {
      REQUIRE(res);
      CHECK(res->status == 405);
      CHECK(res->get_header_value("Allow") == allow);
    }
    auto options = c.Options("/api/explain");
    REQUIRE(options);
    CHECK(options->status == 204);
    CHECK(options->get_header_value("Allow") == "POST, OPTIONS");
    // ... and the server still answers.
    auto ok = c.Get("/api/gpus");
    REQUIRE(ok);
    CHECK(ok->status == 200);
  }
}

TEST_CASE("serve lists and checks and explains") {
  Running s(ServeOptions{});
  httplib::Client c = s.Client();
  auto models = c.Get("/api/models");
  REQUIRE(models);
  CHECK(models->status == 200);
  bool llama = false;
  for (const json& m : json::parse(models->body)) llama |= m["name"] == "llama3.1-70b" && m["layers"] == 80;
  CHECK(llama);
  auto systems = c.Get("/api/systems");
  REQUIRE(systems);
  bool h100 = false;
  for (const json& m : json::parse(systems->body)) h100 |= m["name"] == "dgx-h100" && m["gpus_per_node"] == 8;
  CHECK(h100);
  auto gpus = c.Get("/api/gpus");
  REQUIRE(gpus);
  CHECK(json::parse(gpus->body).size() >= 3);
  auto page = c.Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("<html") != std::string::npos);

  // tp 3 does not divide Llama-3.1-70B's 64 heads: invalid, with the rule and nearest layouts.
  const std::string recipe =
      "distributed:\n  strategy: fsdp2\n  tp_size: 3\n  pp_size: 1\n  cp_size: 1\n  dp_size: 8\n"
      "step_scheduler:\n  global_batch_size: 512\n  local_batch_size: 1\ndataset:\n  seq_len: 8192\n";
  const json check = {{"model", "llama3.1-70b"}, {"system", "dgx-h100"}, {"gpus", 24}, {"recipe", recipe}};
  auto checked = c.Post("/api/check", check.dump(), "application/json");
  REQUIRE(checked);
  CHECK(checked->status == 200);
  const json j = json::parse(checked->body);
  CHECK(j["exit_status"] == 1);  // a rule broken
  CHECK(j["file"] == "recipe.yaml");
  REQUIRE(!j["documents"][0]["rules"]["failures"].empty());
  CHECK(!j["documents"][0]["nearest"].empty());

  json broken = check;
  broken["recipe"] = "distributed: [\n";
  CHECK(InputErrorOf(c, "/api/check", broken)["file"] == "recipe.yaml");

  const json explain = {{"model", "llama3.1-8b"}, {"system", "dgx-h100"}, {"gpus", 8}, {"seq_len", 4096},
                        {"global_batch", 64},     {"tp", 2}};
  auto explained = c.Post("/api/explain", explain.dump(), "application/json");
  REQUIRE(explained);
  CHECK(explained->status == 200);
  const json e = json::parse(explained->body);
  CHECK(e["layout"]["tp_size"] == 2);
  CHECK(e["layout"]["dp_size"] == 4);
}
