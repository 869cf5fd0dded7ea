// `meshplan list models|systems|gpus`.
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "meshplan/hardware.hpp"
#include "meshplan/model.hpp"
#include "recipe/format.hpp"

namespace meshplan::cli {

void AddListCommand(CLI::App& app, ListOptions& o) {
  CLI::App* cmd = app.add_subcommand("list", "list the model presets, systems or GPUs");
  cmd->add_option("what", o.what, "models, systems or gpus")->check(CLI::IsMember({"models", "systems", "gpus"}));
  cmd->add_option("--hwdb", o.hwdb, "hardware database directory (default: the embedded hwdb/)");
}

int RunList(const ListOptions& o) {
  if (o.what.empty()) {
    throw InputError({"<command line>", 0, 0}, "list", "expected what to list: models, systems or gpus; found nothing");
  }
  char line[256];
  if (o.what == "models") {
    std::snprintf(line, sizeof line, "%-18s %-24s %6s %7s %9s %9s\n", "name", "architecture", "layers", "hidden",
                  "total_B", "active_B");
    std::cout << line;
    for (const std::string& name : ListModelPresets()) {
      const ModelSpec m = LoadModel(name);
      const ParamCounts p = CountParams(m);
      std::snprintf(line, sizeof line, "%-18s %-24s %6lld %7lld %9.2f %9.2f\n", name.c_str(),
                    m.architecture_name.c_str(), static_cast<long long>(m.num_layers),
                    static_cast<long long>(m.hidden_size), p.total / 1e9, p.active / 1e9);
      std::cout << line;
    }
    return 0;
  }
  if (o.what == "systems") {
    const std::vector<std::string> systems = ListSystems(o.hwdb);
    std::snprintf(line, sizeof line, "%-22s %-14s %9s %11s %9s %12s %10s\n", "name", "gpu", "gpus/node",
                  "nvl_domain", "mem_GiB", "bf16_TFLOPs", "nic_GB/s");
    // Every file is loaded before anything is printed: a broken one stops the listing whole.
    std::string table = line;
    for (const std::string& name : systems) {
      const SystemSpec s = LoadSystem(name, o.hwdb);
      std::snprintf(line, sizeof line, "%-22s %-14s %9d %11d %9.1f %12.0f %10.0f\n", name.c_str(),
                    s.gpu.name.c_str(), s.gpus_per_node, s.scaleup_domain_gpus, recipe::GiB(s.gpu.memory_bytes),
                    s.gpu.bf16_flops / 1e12, s.NicBandwidthPerGpu() / 1e9);
      table += line;
    }
    std::cout << table;
    return 0;
  }
  const std::vector<std::string> gpus = ListGpus(o.hwdb);
  std::snprintf(line, sizeof line, "%-14s %9s %8s %10s %10s %9s %8s\n", "name", "mem_GiB", "fp32_TF", "bf16_TF",
                "fp8_TF", "fp4_TF", "HBM_TB/s");
  std::string table = line;
  for (const std::string& name : gpus) {
    const GpuSpec g = LoadGpu(name, o.hwdb);
    std::snprintf(line, sizeof line, "%-14s %9.1f %8.1f %10.0f %10.0f %9.0f %8.2f\n", name.c_str(),
                  recipe::GiB(g.memory_bytes), g.fp32_flops / 1e12, g.bf16_flops / 1e12, g.fp8_flops / 1e12,
                  g.fp4_flops / 1e12, g.hbm_bandwidth / 1e12);
    table += line;
  }
  std::cout << table;
  return 0;
}

}  // namespace meshplan::cli
