// The API's JSON writers for the reports the CLI prints as text only (json_out.hpp).
#include "api/json_out.hpp"

#include "meshplan/hardware.hpp"
#include "meshplan/launch.hpp"
#include "meshplan/model.hpp"
#include "recipe/format.hpp"

namespace meshplan::api {

namespace {

using nlohmann::json;
using recipe::GiB;

// A layout with its cost as plan's recipes show it, without the rank; a layout not predicted
// (`cost` unset) as its fields only.
json LayoutJson(const Layout& l, const std::optional<Cost>& cost, const PlanRequest& req) {
  json j = recipe::CandidateJson({l, cost.value_or(Cost{})}, req, 0);
  j.erase("rank");
  if (!cost) j = {{"layout", j["layout"]}};
  j["description"] = Describe(l);
  return j;
}

json Failures(const std::vector<RuleFailure>& failures) {
  json a = json::array();
  for (const RuleFailure& r : failures) a.push_back({{"rule", r.name}, {"message", r.message}, {"source", r.source}});
  return a;
}

json RequestJson(const PlanRequest& req) {
  return {{"model", req.model.name},
          {"system", req.system.name},
          {"gpus", req.setup.num_gpus},
          {"seq_len", req.setup.seq_len},
          {"global_batch", req.setup.global_batch},
          {"precision", PrecisionName(req.setup.precision)},
          {"headroom", req.setup.headroom},
          {"framework", FrameworkOf(req.framework).name}};
}

const char* Verdict(int status) { return status == 0 ? "valid" : status == 1 ? "invalid" : "unusable"; }

}  // namespace

json CheckJson(const CheckReport& rep) {
  json docs = json::array();
  for (const CheckedDocument& d : rep.documents) {
    json j = {{"label", d.label}, {"status", d.Status()}, {"verdict", Verdict(d.Status())}};
    if (!d.error.empty()) {
      j["error"] = d.error;
      docs.push_back(j);
      continue;
    }
    const PlanRequest& req = d.recipe.request;
    j["request"] = RequestJson(req);
    j["layout"] = LayoutJson(d.recipe.parsed.layout, d.cost, req);
    j["rules_checked"] = d.rules_checked;
    j["failures"] = Failures(d.failures);
    j["nearest_seq_len"] = d.nearest_seq_len > 0 ? json(d.nearest_seq_len) : json(nullptr);
    j["not_predicted"] = d.not_predicted.empty() ? json(nullptr) : json(d.not_predicted);
    j["out_of_memory"] = d.out_of_memory;
    j["above_whole_memory"] = d.above_whole_memory;
    j["notes"] = d.notes;
    j["unfitted"] = d.unfitted.empty() ? json(nullptr) : json(d.unfitted);
    j["warnings"] = d.warnings;
    j["silently_off"] = d.silently_off;
    json nearest = json::array();
    for (const NearbyLayout& n : d.nearest) {
      json nj = LayoutJson(n.candidate.layout, n.candidate.cost, req);
      nj["changes"] = n.changes;
      nearest.push_back(nj);
    }
    j["nearest"] = nearest;
    if (d.against_plan) {
      const PlanComparison& c = *d.against_plan;
      j["against_plan"] = {{"searched", c.searched},
                           {"rank", c.rank},
                           {"beyond", c.beyond},
                           {"gap", c.gap},
                           {"changes", c.changes},
                           {"stopped", c.stopped},
                           {"fastest", c.fastest ? LayoutJson(c.fastest->layout, c.fastest->cost, req) : json(nullptr)}};
    } else {
      j["against_plan"] = nullptr;
    }
    docs.push_back(j);
  }
  return {{"file", rep.file}, {"documents", docs}, {"status", rep.Status()}, {"verdict", Verdict(rep.Status())}};
}

json ExplainJson(const ExplainReport& rep) {
  json j = {{"request", RequestJson(rep.request)},
            {"status", rep.Status()},
            {"rules_checked", rep.rules_checked},
            {"failures", Failures(rep.failures)},
            {"notes", rep.notes},
            {"seq_len_warning", rep.seq_len_warning.empty() ? json(nullptr) : json(rep.seq_len_warning)},
            {"unused_schedule", rep.unused_schedule.empty() ? json(nullptr) : json(rep.unused_schedule)},
            {"unfitted", rep.unfitted.empty() ? json(nullptr) : json(rep.unfitted)},
            {"scorable", rep.scorable},
            {"memory_profile", rep.memory_profile}};
  j["layout"] = LayoutJson(rep.layout, rep.scorable ? std::optional<Cost>(rep.cost) : std::nullopt, rep.request);
  json ranks = json::array();
  for (const MemoryBreakdown& m : rep.rank_memory) {
    ranks.push_back({{"weights", GiB(m.weights)}, {"gradients", GiB(m.gradients)}, {"optimizer", GiB(m.optimizer)},
                     {"activations", GiB(m.activations)}, {"logits", GiB(m.logits)}, {"buffers", GiB(m.buffers)},
                     {"workspace", GiB(m.workspace)}, {"overhead", GiB(m.overhead)}, {"total", GiB(m.Total())},
                     {"phase", m.phase}});
  }
  j["rank_memory_gib"] = ranks;
  if (rep.compute) {
    j["compute_s"] = {{"gemm", rep.compute->gemm}, {"attention", rep.compute->attention},
                      {"memory_bound", rep.compute->memory_bound}, {"kernels", rep.compute->kernels}};
  }
  if (rep.pipeline) j["layers_per_rank"] = rep.pipeline->layers_per_rank;
  if (rep.ep) {
    j["ep"] = {{"dispatcher", rep.ep->dispatcher}, {"backend", rep.ep->backend}, {"ep_size", rep.ep->ep},
               {"busy_s", rep.ep->traffic.busy}, {"exposed_s", rep.ep->traffic.exposed}};
  }
  return j;
}

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

json ScatterJson(const std::vector<Candidate>& layouts) {
  json a = json::array();
  for (const Candidate& c : layouts) {
    a.push_back({{"layout", Describe(c.layout)}, {"memory_gib", GiB(c.cost.memory.Total())},
                 {"tokens_per_s_per_gpu", c.cost.tokens_per_s_per_gpu}, {"step_seconds", c.cost.step_seconds},
                 {"mfu", c.cost.mfu}});
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
