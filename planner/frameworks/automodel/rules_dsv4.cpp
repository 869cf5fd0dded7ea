// NeMo AutoModel's rules for its DeepSeek-V4 model (DeepseekV4ForCausalLM:
// components/models/deepseek_v4, NVIDIA-NeMo/Automodel 36044ad). It is a MoEFSDPSyncMixin MoE:
// EP and PP pass _transformers/capabilities.py::validate_for_mesh, TP is the custom MoE TP
// path's (rules_parallel.cpp moe_no_tensor_parallel). Its model.py keeps the hash-routed layers'
// token ids on the first pipeline stage only and checks nothing: a split that puts one of them
// on a later stage is not refused by AutoModel, and not by meshplan.
#include "meshplan/rule_domains.hpp"
#include "rules/rule_util.hpp"

namespace meshplan::rules {
namespace {

const Layout& L(const RuleContext& c) { return c.layout; }

/// CP needs the TileLang attention backend: capabilities.py supports_cp returns
/// backend.attn == "tilelang" for DeepSeek-V4 (its CP shards the queries and all-gathers the
/// keys, deepseek_v4/cp.py), and validate_for_mesh refuses another backend.
/// Source: _transformers/capabilities.py::ModelCapabilities.supports_cp, validate_for_mesh.
bool Dsv4CpNeedsTilelang(const RuleContext& c) {
  return L(c).cp == 1 || !IsDeepseekV4(c.model) || L(c).am_backend.attn_tilelang;
}
std::string Dsv4CpNeedsTilelangMsg(const RuleContext& c) {
  return Cat("Context parallelism (cp_size=", L(c).cp, ") for ", c.model.architecture_name,
             " requires the TileLang attention backend (backend.attn='tilelang'): set model.backend.attn: tilelang or "
             "cp_size: 1");
}

const Rule kRules[] = {
    ForModels({"dsv4_cp_needs_tilelang", "_transformers/capabilities.py::validate_for_mesh", RuleStage::kMesh,
               Dsv4CpNeedsTilelang, Dsv4CpNeedsTilelangMsg, kNoDp},
              IsDeepseekV4),
};

}  // namespace

std::span<const Rule> AutoModelDsv4Rules() { return kRules; }

}  // namespace meshplan::rules
