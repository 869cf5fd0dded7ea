// The schema of the AutoModel recipe keys meshplan writes (recipes/automodel-schema.json).
#include "frameworks/automodel/schema.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "meshplan/data.hpp"

namespace meshplan::automodel {

namespace {

constexpr const char* kSchemaFile = "recipes/automodel-schema.json";

const nlohmann::json& Schema() {
  static const nlohmann::json j = [] {
    const auto text = data::FindEmbedded(kSchemaFile);
    if (!text) throw std::logic_error(std::string(kSchemaFile) + " is not embedded");
    return nlohmann::json::parse(*text);
  }();
  return j;
}

// _STRATEGY_MAP's key of a strategy (components/distributed/config.py).
const char* StrategyKey(Strategy s) {
  return s == Strategy::kMegatronFsdp ? "megatron_fsdp" : s == Strategy::kDdp ? "ddp" : "fsdp2";
}

}  // namespace

std::string SchemaProblem(const std::string& section, const std::string& key, Strategy strategy) {
  const nlohmann::json& d = Schema().at("distributed");
  if (section == "distributed") {
    for (const auto& own : d.at("own_keys")) {
      if (own == key) return "";
    }
    const nlohmann::json& fields = d.at("strategies").at(StrategyKey(strategy));
    if (fields.contains(key)) return "";
    return "'" + key + "' is neither a key parse_distributed_section reads nor a field of the " + StrategyKey(strategy) +
           " strategy config (AutoModel refuses it: 'Unknown options for strategy')";
  }
  const char* part = section == "distributed.pipeline" ? "pipeline" : section == "distributed.moe" ? "moe" : nullptr;
  const nlohmann::json& fields = part ? d.at(part) : Schema().at("step_scheduler");
  if (part == nullptr && section != "step_scheduler") return "no schema for section '" + section + "'";
  if (fields.contains(key)) return "";
  return "'" + key + "' is not a field of " +
         (part ? std::string(part == std::string("pipeline") ? "PipelineConfig" : "MoEParallelizerConfig")
               : std::string("StepScheduler")) + " (" + section + ")";
}

std::string SchemaCommit() { return Schema().at("automodel_commit").get<std::string>(); }

}  // namespace meshplan::automodel
