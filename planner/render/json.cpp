// JSON rendering of check's and explain's reports (json.hpp), in plan --format json's schema.
#include "render/json.hpp"

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "recipe/format.hpp"

namespace meshplan::render {

namespace {

using nlohmann::json;
using recipe::GiB;

// One layout as plan --format json writes a recipe (rank, layout, memory_gib, time_s,
// throughput and the framework's fields); `rank` 0 leaves the rank out.
json RecipeJson(const Candidate& c, const PlanRequest& req, int rank) {
  json j = recipe::CandidateJson(c, req, rank > 0 ? rank : 1);
  FrameworkOf(req.framework).annotate_json(j, c, req);
  if (rank <= 0) j.erase("rank");
  j["description"] = Describe(c.layout);
  return j;
}

// A layout that cannot be priced (its sizes do not divide the GPU count or the batch): its sizes
// only, under plan's names (dp_size null where the world is not a whole number of model ranks).
json BareLayoutJson(const Layout& l) {
  return {{"tp_size", l.tp},
          {"pp_size", l.pp},
          {"cp_size", l.cp},
          {"ep_size", l.ep},
          {"dp_size", l.dp > 0 ? json(l.dp) : json(nullptr)},
          {"dp_replicate_size", l.dp_replicate},
          {"local_batch_size", l.local_batch_size},
          {"micro_batch", l.micro_batch()},
          {"sequence_parallel", l.sequence_parallel},
          {"activation_checkpointing", RecomputeName(l.recompute)},
          {"dp_flavour", FrameworkOf(l).dp_flavour(l)}};
}

// A memory breakdown in GiB with the keys of plan's memory_gib, and its peak moment.
json MemoryJson(const MemoryBreakdown& m) {
  return {{"weights", GiB(m.weights)},         {"gradients", GiB(m.gradients)},
          {"optimizer", GiB(m.optimizer)},     {"activations", GiB(m.activations)},
          {"logits", GiB(m.logits)},           {"buffers", GiB(m.buffers)},
          {"workspace", GiB(m.workspace)},     {"overhead", GiB(m.overhead)},
          {"total", GiB(m.Total())},           {"peak_moment", m.phase}};
}

json FailuresJson(const std::vector<RuleFailure>& failures) {
  json arr = json::array();
  for (const RuleFailure& f : failures) arr.push_back({{"name", f.name}, {"message", f.message}, {"source", f.source}});
  return arr;
}

json Strings(const std::vector<std::string>& v) { return v; }

json OrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

const char* SplitKindName(PipelineSplit::Kind k) {
  switch (k) {
    case PipelineSplit::Kind::kGivenLayout: return "pipeline_model_parallel_layout";
    case PipelineSplit::Kind::kOwnLayout: return "pipeline_model_parallel_layout_own_split";
    case PipelineSplit::Kind::kEvenFallback: return "even_fallback";
    case PipelineSplit::Kind::kAccountEmbeddingLoss: return "account_for_embedding_loss";
    case PipelineSplit::Kind::kEven: return "even";
  }
  return "even";
}

json PipelineJson(const PipelineSplit& p) {
  json j = {{"layers_per_rank", p.layers_per_rank}, {"kind", SplitKindName(p.kind)}};
  j["embedding_rank"] = p.kind == PipelineSplit::Kind::kGivenLayout ? json(p.embedding_rank) : json(nullptr);
  j["loss_rank"] = p.kind == PipelineSplit::Kind::kGivenLayout ? json(p.loss_rank) : json(nullptr);
  j["mtp_layers"] = p.mtp_layers;
  j["mtp_rank"] = p.mtp_layers > 0 ? json(p.mtp_rank) : json(nullptr);
  return j;
}

json EpJson(const EpSplit& e) {
  const EpTraffic& t = e.traffic;
  return {{"dispatcher", e.dispatcher},
          {"backend", OrNull(e.backend)},
          {"routing", OrNull(e.routing)},
          {"ep_size", e.ep},
          {"overlap", e.overlap},
          {"nvlink_domains", t.domains},
          {"token_copies_per_dispatch", t.rank_copies},
          {"rdma_copies_per_token", t.node_copies},
          {"time_s",
           {{"dispatch_combine", t.busy},
            {"nvlink_busy", t.nvlink},
            {"rdma_busy", t.rdma},
            {"hidden", std::max(0.0, t.busy - t.exposed)},
            {"exposed", t.exposed}}}};
}

// Recipe remarks: the framework defaults it relies on and the settings the framework overwrites.
void AddRemarks(json& j, const ParsedRecipe* parsed, const std::string& unfitted, const std::vector<std::string>& notes) {
  j["defaults_used"] = parsed ? Strings(parsed->defaults_used) : json::array();
  j["overridden"] = parsed ? Strings(parsed->overridden) : json::array();
  j["unfitted"] = OrNull(unfitted);
  j["notes"] = notes;
}

json ComparisonJson(const PlanComparison& p, const PlanRequest& req) {
  json j = {{"searched", p.searched},
            {"stopped", OrNull(p.stopped)},
            {"band", p.band},
            {"oom_probability", p.own.oom_probability},
            {"expected_step_s", p.own.expected_step_seconds}};
  if (!p.fastest) {
    j["fastest"] = nullptr;
    j["rank"] = nullptr;
    return j;
  }
  j["rank"] = p.beyond ? json(nullptr) : json(p.rank);
  j["tie"] = p.tie;
  j["beyond_searched"] = p.gap > 1e-9 && p.beyond;
  j["gap"] = p.gap;
  j["within_band"] = p.gap <= p.band;
  j["changes"] = p.changes;
  j["notes"] = p.notes;
  j["fastest"] = RecipeJson(*p.fastest, req, 0);
  return j;
}

}  // namespace

json ExplanationJson(const ExplainReport& rep) {
  const PlanRequest& req = rep.request;
  json j;
  j["request"] = recipe::RequestJson(req);
  j["gpu"] = req.system.gpu.display_name;
  AddRemarks(j, rep.parsed ? &*rep.parsed : nullptr, rep.unfitted, rep.notes);
  std::vector<std::string> warnings;
  if (!rep.seq_len_warning.empty()) warnings.push_back(rep.seq_len_warning);
  j["warnings"] = warnings;
  // As plan's JSON: a model planned with --generic-decoder says so.
  if (!rep.model_warning.empty()) j["model_warning"] = rep.model_warning;
  if (!rep.unused_schedule.empty()) j["notes"].push_back(rep.unused_schedule);
  j["rules"] = {{"checked", rep.rules_checked}, {"valid", rep.failures.empty()}, {"failures", FailuresJson(rep.failures)}};
  j["pipeline_split"] = rep.pipeline ? PipelineJson(*rep.pipeline) : json(nullptr);
  j["scorable"] = rep.scorable;
  // The layout as one of plan's recipes (its memory and time the explained ones).
  json layout = rep.scorable ? RecipeJson(Candidate{rep.layout, rep.cost, {}}, req, 0)
                             : json{{"layout", BareLayoutJson(rep.layout)}, {"description", Describe(rep.layout)}};
  j["layout"] = layout["layout"];
  j["description"] = layout["description"];
  if (layout.contains("overrides")) j["overrides"] = layout["overrides"];
  if (layout.contains("environment")) j["environment"] = layout["environment"];
  if (!rep.scorable) {
    for (const char* k : {"memory_gib", "time_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu", "mfu_precision_peak", "precision_peak", "fits",
                          "spare_gib", "memory_profile", "memory_per_rank_gib", "compute_split_s", "ep_all_to_all"}) {
      j[k] = nullptr;
    }
  } else {
    const Cost& c = rep.cost;
    j["memory_profile"] = rep.memory_profile;
    j["memory_gib"] = layout["memory_gib"];
    j["memory_gib"]["peak_moment"] = c.memory.phase;
    json ranks = json::array();
    for (const MemoryBreakdown& m : rep.rank_memory) ranks.push_back(MemoryJson(m));
    j["memory_per_rank_gib"] = ranks;
    j["time_s"] = layout["time_s"];
    j["tokens_per_s_per_gpu"] = c.tokens_per_s_per_gpu;
    j["model_tflops_per_gpu"] = c.model_tflops_per_gpu;
    j["mfu"] = c.mfu;
    j["mfu_precision_peak"] = c.mfu_precision_peak;
    j["precision_peak"] = layout["precision_peak"];
    j["compute_split_s"] = rep.compute ? json{{"gemm", rep.compute->gemm},
                                              {"attention", rep.compute->attention},
                                              {"memory_bound", rep.compute->memory_bound},
                                              {"kernels", rep.compute->kernels}}
                                       : json(nullptr);
    j["ep_all_to_all"] = rep.ep ? EpJson(*rep.ep) : json(nullptr);
    if (rep.cp) {
      j["context_parallel"] = json{{"cp_comm_type", rep.cp->type}, {"written", rep.cp->written}, {"cp", rep.cp->cp},
                                   {"a2a_ranks", rep.cp->a2a}, {"exposed_s", rep.cp->exposed}};
    }
    j["fits"] = c.fits;
    j["spare_gib"] = GiB(c.capacity_bytes - c.memory.Total());
  }
  j["exit_status"] = rep.Status();
  return j;
}

json CheckedDocumentJson(const CheckedDocument& d) {
  if (!d.error.empty()) {
    return {{"label", d.label},
            {"error", ErrorJson("input", d.error_message, 2, d.error_loc, d.error_field)["error"]},
            {"exit_status", d.Status()}};
  }
  const PlanRequest& req = d.recipe.request;
  json j;
  j["label"] = d.label;
  j["request"] = recipe::RequestJson(req);
  AddRemarks(j, &d.recipe.parsed, d.unfitted, d.notes);
  j["rules"] = {{"checked", d.rules_checked}, {"valid", d.failures.empty()}, {"failures", FailuresJson(d.failures)}};
  j["nearest_seq_len"] = d.nearest_seq_len > 0 ? json(d.nearest_seq_len) : json(nullptr);
  if (d.more_gpus) {
    const MoreGpus& m = *d.more_gpus;
    j["more_gpus"] = {{"gpus", m.gpus}, {"dp_size", m.layout.dp}, {"memory_gib", GiB(m.cost.memory.Total())},
                      {"step_s", m.cost.step_seconds}, {"tokens_per_s_per_gpu", m.cost.tokens_per_s_per_gpu}};
  } else {
    j["more_gpus"] = nullptr;
  }
  if (d.cost) {
    json layout = RecipeJson(Candidate{d.recipe.parsed.layout, *d.cost, {}}, req, 0);
    j["layout"] = layout["layout"];
    j["description"] = layout["description"];
    const Cost& c = *d.cost;
    j["memory_gib"] = layout["memory_gib"];
    j["memory_gib"]["peak_moment"] = c.memory.phase;
    j["memory_gib"]["gpu_memory"] = GiB(req.system.gpu.memory_bytes);
    j["memory_gib"]["spare"] = GiB(c.capacity_bytes - c.memory.Total());
    j["memory"] = {{"verdict", !d.out_of_memory ? "fits" : d.above_whole_memory ? "out_of_memory" : "headroom_short"},
                   {"out_of_usable", d.out_of_memory},
                   {"above_whole_memory", d.above_whole_memory},
                   {"not_predicted", nullptr}};
    if (d.failures.empty()) {
      j["predicted"] = {{"step_s", c.step_seconds},
                        {"tokens_per_s_per_gpu", c.tokens_per_s_per_gpu},
                        {"model_tflops_per_gpu", c.model_tflops_per_gpu},
                        {"mfu", c.mfu},
                        {"mfu_precision_peak", c.mfu_precision_peak},
                        {"precision_peak", recipe::PrecisionPeakName(req)},
                        {"time_s", layout["time_s"]}};
    } else {
      j["predicted"] = nullptr;  // priced memory only: the framework refuses the layout
    }
  } else {
    j["layout"] = BareLayoutJson(d.recipe.parsed.layout);
    j["description"] = Describe(d.recipe.parsed.layout);
    j["memory_gib"] = nullptr;
    j["memory"] = {{"verdict", "not_predicted"}, {"out_of_usable", false}, {"above_whole_memory", false},
                   {"not_predicted", d.not_predicted}};
    j["predicted"] = nullptr;
  }
  j["against_plan"] = d.against_plan ? ComparisonJson(*d.against_plan, req) : json(nullptr);
  j["warnings"] = d.warnings;
  j["silently_off"] = d.silently_off;
  if (!d.failures.empty() || d.out_of_memory) {
    json arr = json::array();
    for (size_t i = 0; i < d.nearest.size(); ++i) {
      json x = RecipeJson(d.nearest[i].candidate, req, static_cast<int>(i + 1));
      x["changes"] = d.nearest[i].changes;
      x["notes"] = d.nearest[i].notes;
      x["edits"] = d.nearest[i].edits;
      x["note"] = OrNull(d.nearest[i].note);
      arr.push_back(std::move(x));
    }
    j["nearest"] = arr;
  } else {
    j["nearest"] = nullptr;  // not searched: the recipe is valid and fits
  }
  j["exit_status"] = d.Status();
  return j;
}

json CheckJson(const CheckReport& rep) {
  json docs = json::array();
  for (const CheckedDocument& d : rep.documents) docs.push_back(CheckedDocumentJson(d));
  return {{"file", rep.file},
          {"several", rep.several},
          {"empty_documents", rep.empty_documents},
          {"documents", docs},
          {"exit_status", rep.Status()}};
}

}  // namespace meshplan::render
