// Fuzz target: the model reader (HF config.json / meshplan model YAML) and the parameter
// counter on every model it accepts. Any exception other than InputError is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "meshplan/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    meshplan::ModelSpec m = meshplan::ParseModel(text, "fuzz.json");
    meshplan::ParamCounts p = meshplan::CountParams(m);
    if (p.total <= 0 || p.active <= 0 || p.active > p.total) __builtin_trap();
  } catch (const meshplan::InputError&) {
  }
  return 0;
}
