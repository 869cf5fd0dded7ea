// Fuzz target: the hwdb readers, a GPU file and a system file (whose gpu: is looked up in
// the embedded database). Any exception other than InputError is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "hardware/hwdb_parse.hpp"
#include "meshplan/hardware.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    meshplan::GpuSpec g = meshplan::ParseGpu(text, "fuzz-gpu.yaml");
    if (!(g.memory_bytes > 0) || !(g.bf16_flops > 0)) __builtin_trap();
  } catch (const meshplan::InputError&) {
  }
  try {
    meshplan::SystemSpec s = meshplan::hardware::ParseSystem(text, "fuzz-system.yaml", {});
    if (s.gpus_per_node <= 0 || !(s.NicBandwidthPerGpu() > 0)) __builtin_trap();
  } catch (const meshplan::InputError&) {
  }
  return 0;
}
