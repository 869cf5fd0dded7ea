// The API's JSON writers (json_out.hpp): check and explain as the CLI's --format json writes them
// (render/json.hpp), validate and the lists for the reports the CLI prints as text only.
#include "api/json_out.hpp"
#include "render/json.hpp"

#include "meshplan/hardware.hpp"
#include "meshplan/launch.hpp"
#include "meshplan/model.hpp"
#include "recipe/format.hpp"

namespace meshplan::api {

namespace {

using nlohmann::json;
using recipe::GiB;

}  // namespace

json CheckJson(const CheckReport& rep) { return render::CheckJson(rep); }

json ExplainJson(const ExplainReport& rep) { return render::ExplanationJson(rep); }

json ValidateJson(const ValidateReport& rep) {
  json rows = json::array();
  for (const ValidateRow& r : rep.rows) {
    json j = {{"line", r.line}, {"label", r.label}};
    if (!r.skip.empty()) {
      j["skipped"] = r.skip_shown;
      rows.push_back(j);
      continue;
    }
    j["layout"] = Describe(r.layout);
    j["on"] = r.on_tokens ? "tokens_per_s_per_gpu" : "model_tflops_per_gpu";
    j["published"] = r.published;
    j["predicted"] = r.predicted;
    j["error"] = r.error;
    j["fits"] = r.cost.fits;
    j["memory_gib"] = GiB(r.cost.memory.Total());
    j["step_seconds"] = r.cost.step_seconds;
    if (r.ranked) {
      j["rank"] = r.rank;
      j["beyond"] = r.beyond;
      j["gap"] = r.gap ? json(*r.gap) : json(nullptr);
    }
    rows.push_back(j);
  }
  const ValidateSummary& s = rep.summary;
  return {{"rows", rows},
          {"summary",
           {{"evaluated", s.evaluated}, {"skipped", s.skipped}, {"median_error", s.median_error},
            {"p90_error", s.p90_error}, {"ranked", s.ranked}, {"top5", s.top5}, {"within5", s.within5},
            {"over_capacity", s.over_capacity}, {"over_memory", s.over_memory}}}};
}

json ModelsJson() {
  json a = json::array();
  for (const std::string& name : ListModelPresets()) {
    const ModelSpec m = LoadModel(name);
    const ParamCounts p = CountParams(m);
    a.push_back({{"name", name}, {"architecture", m.architecture_name}, {"layers", m.num_layers},
                 {"hidden", m.hidden_size}, {"total_params", p.total}, {"active_params", p.active},
                 {"moe", m.is_moe()}});
  }
  return a;
}

json SystemsJson() {
  json a = json::array();
  for (const std::string& name : ListSystems()) {
    const SystemSpec s = LoadSystem(name);
    a.push_back({{"name", name}, {"gpu", s.gpu.name}, {"gpus_per_node", s.gpus_per_node},
                 {"nvl_domain", s.scaleup_domain_gpus}, {"memory_gib", GiB(s.gpu.memory_bytes)},
                 {"bf16_tflops", s.gpu.bf16_flops / 1e12}, {"nic_gbps", s.NicBandwidthPerGpu() / 1e9}});
  }
  return a;
}

json GpusJson() {
  json a = json::array();
  for (const std::string& name : ListGpus()) {
    const GpuSpec g = LoadGpu(name);
    a.push_back({{"name", name}, {"memory_gib", GiB(g.memory_bytes)}, {"bf16_tflops", g.bf16_flops / 1e12},
                 {"fp8_tflops", g.fp8_flops / 1e12}, {"fp4_tflops", g.fp4_flops / 1e12},
                 {"hbm_tbps", g.hbm_bandwidth / 1e12}});
  }
  return a;
}

json ScatterJson(const std::vector<Candidate>& layouts, const PlanRequest& req) {
  json a = json::array();
  const std::string peak = recipe::PrecisionPeakName(req);
  for (const Candidate& c : layouts) {
    a.push_back({{"layout", Describe(c.layout)}, {"memory_gib", GiB(c.cost.memory.Total())},
                 {"tokens_per_s_per_gpu", c.cost.tokens_per_s_per_gpu}, {"step_seconds", c.cost.step_seconds},
                 {"mfu", c.cost.mfu}, {"mfu_precision_peak", c.cost.mfu_precision_peak}, {"precision_peak", peak}});
  }
  return a;
}

json LaunchJson(const PlanResult& result, const PlanRequest& req) {
  const LaunchTopology topo = ResolveLaunchTopology(req, 0, 0);
  const std::string stem = req.model.name + "_" + req.system.name + "_" + std::to_string(req.setup.num_gpus);
  json a = json::array();
  for (size_t i = 0; i < result.top.size(); ++i) {
    const int rank = static_cast<int>(i + 1);
    const std::string file = stem + ".rank" + std::to_string(rank) + ".yaml";
    a.push_back({{"rank", rank},
                 {"recipe_file", file},
                 {"launch_sh", LaunchScript(result.top[i], req, topo, file, rank)},
                 {"sbatch", SlurmScript(result.top[i], req, topo, file, rank)}});
  }
  return a;
}

}  // namespace meshplan::api
