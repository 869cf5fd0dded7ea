#pragma once
// The H200 training measurements of tools/measure/ (tests/data/measured/*.jsonl) as meshplan
// inputs: one model, setup, layout and memory options per measured case, with the raw record.
// Shared by the memory and the calibration accuracy tests.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "meshplan/cost.hpp"

namespace meshplan::test {

inline const std::string kMeasuredDir = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/measured/";

inline std::string ReadMeasuredText(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct MeasuredCase {
  std::string file, id;
  ModelSpec model;
  TrainSetup setup;
  Layout layout;
  MemoryOptions options;
  nlohmann::json record;
};

/// Every case of one file (keys: tools/measure/cases.py); the environment line is skipped.
inline std::vector<MeasuredCase> LoadMeasuredCases(const std::string& file) {
  std::vector<MeasuredCase> out;
  std::istringstream lines(ReadMeasuredText(kMeasuredDir + file));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r.contains("environment")) continue;
    REQUIRE(r.at("status") == "ok");
    MeasuredCase c;
    c.file = file;
    c.id = r.at("id");
    const std::string model_name = r.at("model");
    c.model = ParseModel(ReadMeasuredText(kMeasuredDir + "models/" + model_name + ".json"), model_name);
    const int64_t world = r.at("world"), tp = r.at("tp"), mb = r.at("mb"), ga = r.at("ga");
    c.layout.strategy = r.at("strategy") == "ddp" ? Strategy::kDdp : Strategy::kFsdp2;
    c.layout.tp = tp;
    c.layout.dp = world / tp;
    c.layout.local_batch_size = mb;
    const std::string ac = r.at("ac");
    c.layout.recompute = ac == "full" ? Recompute::kFull : ac == "selective" ? Recompute::kSelective : Recompute::kNone;
    c.setup.num_gpus = world;
    c.setup.seq_len = r.at("seq");
    c.setup.global_batch = mb * ga * c.layout.dp;
    c.options.profile = MemoryProfile::kPyTorch;
    c.options.fp32_params = r.at("params") == "fp32";
    c.options.defer_fsdp_grad_sync = r.at("defer");
    const std::string opt = r.value("opt", "foreach");
    c.options.adam_impl = opt == "fused" ? AdamImpl::kFused : opt == "forloop" ? AdamImpl::kForLoop : AdamImpl::kForeach;
    c.options.wrap_one_gpu = r.value("wrap1", false);
    c.record = r;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace meshplan::test
