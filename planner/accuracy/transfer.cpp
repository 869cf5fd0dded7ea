// validate --transfer: leave-one-system-out, leave-one-family-out and leave-one-model-out residuals of the fitted
// Megatron-Core step-time constants, beside the in-sample and leave-one-out ones.
#include "accuracy/transfer.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "accuracy/least_squares.hpp"

namespace meshplan {

const char* TransferSchemeName(TransferScheme scheme) {
  switch (scheme) {
    case kInSample: return "in-sample";
    case kLeaveOneOut: return "LOO";
    case kLosoBorrowed: return "LOSO borrow";
    case kLosoPooled: return "LOSO pooled";
    case kLosoPhysical: return "LOSO phys";
    case kLeaveFamilyOut: return "LOFO";
    case kLeaveModelOut: return "LOMO";
    case kTransferSchemes: break;
  }
  return "?";
}

std::string ModelFamily(const std::string& model) {
  std::string stem = model.substr(model.find_last_of('/') + 1);
  if (const size_t dot = stem.rfind(".yaml"); dot != std::string::npos && dot + 5 == stem.size()) stem.resize(dot);
  if (const size_t dot = stem.rfind(".json"); dot != std::string::npos && dot + 5 == stem.size()) stem.resize(dot);
  std::string out;
  size_t start = 0;
  while (start <= stem.size()) {
    const size_t end = std::min(stem.find('-', start), stem.size());
    std::string part = stem.substr(start, end - start);
    const bool digit = std::any_of(part.begin(), part.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
    if (digit) {
      if (out.empty()) {  // "llama3.1": the name before its version
        while (!part.empty() && (std::isdigit(static_cast<unsigned char>(part.back())) || part.back() == '.')) part.pop_back();
        out = part;
      }
      break;
    }
    out += (out.empty() ? "" : "-") + part;
    start = end + 1;
  }
  for (char& ch : out) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return out.empty() ? stem : out;
}

}  // namespace meshplan

namespace meshplan::accuracy {

namespace {

// The group of `rows` named `kind` / `name`: its |residual| quantiles per scheme.
TransferGroup Group(const std::string& kind, const std::string& name, const std::vector<const TransferRow*>& rows) {
  TransferGroup g;
  g.kind = kind;
  g.name = name;
  g.rows = int(rows.size());
  for (int s = 0; s < kTransferSchemes; ++s) {
    std::vector<double> abs;
    for (const TransferRow* r : rows) abs.push_back(std::fabs(r->residual[s]));
    g.median[s] = Quantile(abs, 0.5);
    g.p90[s] = Quantile(abs, 0.9);
  }
  return g;
}

const char* DepthBucket(int64_t pp) { return pp <= 1 ? "1" : pp <= 4 ? "2-4" : "5+"; }

}  // namespace

TransferReport MeasureTransfer(const std::map<std::string, std::vector<FitRow>>& rows,
                               const std::map<std::string, SystemSpec>& systems, const std::vector<SystemFit>& fits) {
  TransferReport out;
  std::map<std::string, const SystemFit*> fit_of;
  for (const SystemFit& f : fits) fit_of[f.system] = &f;
  for (const auto& [system, own] : rows) {
    const SystemFit* fit = fit_of.count(system) ? fit_of.at(system) : nullptr;
    // Borrowed: the other systems' in-sample fits. Pooled: one fit on their rows.
    std::vector<FittedSystemConstants> others;
    std::vector<FitRow> pooled;
    for (const auto& [other, other_rows] : rows) {
      if (other == system) continue;
      pooled.insert(pooled.end(), other_rows.begin(), other_rows.end());
      if (fit_of.count(other) && systems.count(other)) {
        others.push_back({other, systems.at(other).gpu.compute_capability, fit_of.at(other)->outcome.fit});
      }
    }
    SystemSpec held_out = systems.count(system) ? systems.at(system) : SystemSpec{};
    held_out.megatron_fit = MegatronTimeFit{};
    BorrowMegatronFitFrom(held_out, others);
    const MegatronTimeFit pooled_fit = FitMegatronConstants(pooled);
    // Each family's rows against the system's fit on its other families.
    std::map<std::string, MegatronTimeFit> without_family;
    for (const FitRow& r : own) {
      const std::string family = ModelFamily(r.model);
      if (without_family.count(family)) continue;
      std::vector<FitRow> rest;
      for (const FitRow& o : own) {
        if (ModelFamily(o.model) != family) rest.push_back(o);
      }
      without_family[family] = FitMegatronConstants(rest);
    }
    // Each model's rows (one preset, every size of its family apart) against the system's fit on
    // its other models.
    std::map<std::string, MegatronTimeFit> without_model;
    for (const FitRow& r : own) {
      if (without_model.count(r.model)) continue;
      std::vector<FitRow> rest;
      for (const FitRow& o : own) {
        if (o.model != r.model) rest.push_back(o);
      }
      without_model[r.model] = FitMegatronConstants(rest);
    }
    for (size_t i = 0; i < own.size(); ++i) {
      const FitRow& r = own[i];
      TransferRow& t = out.rows.emplace_back();
      t.system = system;
      t.family = ModelFamily(r.model);
      t.label = r.label;
      t.pp = r.pp;
      if (fit && i < fit->outcome.residuals.size()) {
        t.residual[kInSample] = fit->outcome.residuals[i];
        t.residual[kLeaveOneOut] = fit->outcome.loo_residuals[i];
      }
      t.residual[kLosoBorrowed] = RelativeError(FitPredict(r, held_out.megatron_fit), r.published_step);
      t.residual[kLosoPooled] = RelativeError(FitPredict(r, pooled_fit), r.published_step);
      t.residual[kLosoPhysical] = RelativeError(FitPredict(r, cost::MegatronPhysicalFit()), r.published_step);
      t.residual[kLeaveFamilyOut] = RelativeError(FitPredict(r, without_family.at(t.family)), r.published_step);
      t.residual[kLeaveModelOut] = RelativeError(FitPredict(r, without_model.at(r.model)), r.published_step);
    }
  }
  std::map<std::string, std::vector<const TransferRow*>> by_system, by_family;
  std::vector<const TransferRow*> all, by_depth[3];
  for (const TransferRow& r : out.rows) {
    by_system[r.system].push_back(&r);
    by_family[r.family].push_back(&r);
    by_depth[r.pp <= 1 ? 0 : r.pp <= 4 ? 1 : 2].push_back(&r);
    all.push_back(&r);
  }
  for (const auto& [name, group] : by_system) out.groups.push_back(Group("system", name, group));
  for (const auto& [name, group] : by_family) out.groups.push_back(Group("family", name, group));
  for (int d = 0; d < 3; ++d) {
    if (!by_depth[d].empty()) out.groups.push_back(Group("pp", DepthBucket(d == 0 ? 1 : d == 1 ? 2 : 8), by_depth[d]));
  }
  if (!all.empty()) out.groups.push_back(Group("all", "all rows", all));
  return out;
}

}  // namespace meshplan::accuracy
