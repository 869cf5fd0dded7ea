#pragma once
// The schema of the AutoModel recipe keys meshplan writes: recipes/automodel-schema.json,
// dumped from AutoModel's own code by tools/acceptance/dump_automodel_schema.py. Private to
// planner/frameworks/automodel/ (and its tests).

#include <string>

#include "meshplan/layout.hpp"

namespace meshplan::automodel {

/// Whether AutoModel takes `key` in `section` of a recipe under `strategy`: "" when it does,
/// else why not. `section` is "distributed" (recipes/_dist_utils.py parse_distributed_section's
/// own keys, then the strategy config class's fields: FSDP2Config, MegatronFSDPConfig, DDPConfig
/// refuse unknown ones), "distributed.pipeline" (PipelineConfig), "distributed.moe"
/// (MoEParallelizerConfig) or "step_scheduler" (StepScheduler.__init__'s keyword arguments).
std::string SchemaProblem(const std::string& section, const std::string& key, Strategy strategy);
/// The AutoModel commit the schema was dumped from.
std::string SchemaCommit();

}  // namespace meshplan::automodel
