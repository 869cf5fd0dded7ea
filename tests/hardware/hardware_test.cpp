// Tests of the hardware database (hwdb/) and its loader (planner/hardware/).
// Conversions are checked against numbers worked by hand from the YAML files' published units.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hardware/hwdb_parse.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/hardware.hpp"

using namespace meshplan;
using doctest::Approx;

namespace {

const std::string kFixtures = MESHPLAN_SOURCE_DIR "/tests/data/hwdb";
constexpr double kGib = 1073741824.0;

const std::string kGpuText = R"(display_name: Test GPU
bf16_tflops: 989
fp8_tflops: 1979
memory_gib: 79.11
hbm_tbps: 3.35
matmul_efficiency_bf16: 0.803
matmul_efficiency_fp8: 0.709
compute_capability: 9.0
)";

const std::string kSystemText = R"(display_name: Test System
gpu: h100-sxm
gpus_per_node: 8
scaleup_domain_gpus: 8
scaleup_gbps_per_gpu: 450
scaleup_latency_us: 3.4
nics_per_node: 8
nic_gbit: 400
scaleout_latency_us: 14
scaleup_busbw_efficiency: 0.822
scaleout_busbw_efficiency: 0.94
compute_efficiency: 0.8
)";

/// `text` with the first occurrence of `from` replaced by `to` (which must exist).
std::string Edit(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// Parses system text against the embedded GPU database.
SystemSpec ParseSys(const std::string& text) {
  return hardware::ParseSystem(text, "test.yaml", hardware::GpuSearch{});
}

/// The what() of the InputError that `f` throws ("" and a failed check if none).
template <class F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL_CHECK("expected an InputError");
  return "";
}

}  // namespace

TEST_SUITE("hardware") {

TEST_CASE("the embedded database lists every system and GPU") {
  CHECK(ListSystems() == std::vector<std::string>{"dgx-a100", "dgx-b200", "dgx-b300", "dgx-h100", "dgx-h200",
                                                  "dgx-h200-calibrated", "gb200-nvl72", "gb300-nvl72", "grand-teton-h100-96gb",
                                                  "mi300x-8"});
  CHECK(ListGpus() == std::vector<std::string>{"a100-80gb", "b200", "b300", "gb200", "gb300", "h100-sxm",
                                               "h100-sxm-96gb", "h200", "mi300x"});
}

TEST_CASE("every embedded system and GPU loads and is sane") {
  for (const std::string& name : ListSystems()) {
    CAPTURE(name);
    SystemSpec s = LoadSystem(name);
    CHECK(s.name == name);
    CHECK(!s.display_name.empty());
    CHECK(s.scaleup_domain_gpus % s.gpus_per_node == 0);
    CHECK(s.gpu.bf16_flops > 1e14);
    CHECK(s.gpu.memory_bytes > 64 * kGib);
    CHECK(s.scaleup_bandwidth > s.NicBandwidthPerGpu());
    // Datasheet systems: NVLink steps are cheaper than network steps. A calibrated system's
    // scale-up latency is fitted from measured small messages (it absorbs NCCL's per-call
    // launch cost) while its scale-out latency is copied from the base system, so the two
    // are not comparable there.
    if (name.find("-calibrated") == std::string::npos) CHECK(s.scaleup_latency < s.scaleout_latency + 1e-12);
    for (double eff : {s.scaleup_busbw_efficiency, s.scaleout_busbw_efficiency, s.compute_efficiency,
                       s.gpu.matmul_efficiency_bf16}) {
      CHECK(eff > 0);
      CHECK(eff <= 1);
    }
  }
  for (const std::string& name : ListGpus()) {
    CAPTURE(name);
    GpuSpec g = LoadGpu(name);
    CHECK(g.name == name);
    CHECK((g.fp8_flops == 0) == (g.matmul_efficiency_fp8 == 0));
  }
}

TEST_CASE("dgx-h100 converts to SI units") {
  SystemSpec s = LoadSystem("dgx-h100");
  CHECK(s.display_name == "NVIDIA DGX H100 (8x H100 SXM5 80GB)");
  CHECK(s.gpu.name == "h100-sxm");
  CHECK(s.gpu.bf16_flops == Approx(989e12));
  CHECK(s.gpu.fp8_flops == Approx(1979e12));
  CHECK(s.gpu.fp4_flops == 0);
  CHECK(s.gpu.memory_bytes == Approx(79.11 * kGib));  // 84,943,155,855 bytes
  CHECK(s.gpu.hbm_bandwidth == Approx(3.35e12));
  CHECK(s.gpu.matmul_efficiency_bf16 == Approx(0.803));
  CHECK(s.gpu.matmul_efficiency_fp8 == Approx(0.709));
  CHECK(s.gpus_per_node == 8);
  CHECK(s.scaleup_domain_gpus == 8);
  CHECK(s.scaleup_bandwidth == Approx(450e9));
  CHECK(s.scaleup_latency == Approx(3.4e-6));
  CHECK(s.nics_per_node == 8);
  CHECK(s.nic_bandwidth == Approx(50e9));        // 400 Gb/s * 1.25e8
  CHECK(s.NicBandwidthPerGpu() == Approx(50e9));  // 50e9 * 8 NICs / 8 GPUs
  CHECK(s.scaleout_latency == Approx(14e-6));
  CHECK(s.scaleup_busbw_efficiency == Approx(0.822));
  CHECK(s.scaleout_busbw_efficiency == Approx(0.94));
  CHECK(s.compute_efficiency == Approx(0.80));
}

TEST_CASE("other systems: hand-checked key numbers") {
  SystemSpec nvl = LoadSystem("gb200-nvl72");
  CHECK(nvl.scaleup_domain_gpus == 72);
  CHECK(nvl.gpus_per_node == 4);
  CHECK(nvl.scaleup_bandwidth == Approx(900e9));
  CHECK(nvl.NicBandwidthPerGpu() == Approx(50e9));  // 4 x 400 Gb/s over 4 GPUs
  CHECK(nvl.gpu.bf16_flops == Approx(2500e12));

  SystemSpec gb300 = LoadSystem("gb300-nvl72");
  CHECK(gb300.scaleup_domain_gpus == 72);
  CHECK(gb300.NicBandwidthPerGpu() == Approx(100e9));  // 800 Gb/s per GPU

  SystemSpec a100 = LoadSystem("dgx-a100");
  CHECK(a100.nic_bandwidth == Approx(25e9));  // 200 Gb/s
  CHECK(a100.scaleup_bandwidth == Approx(300e9));
  CHECK(a100.gpu.fp8_flops == 0);
  CHECK(a100.gpu.matmul_efficiency_fp8 == 0);

  CHECK(LoadSystem("dgx-h200").gpu.memory_bytes == Approx(139.80 * kGib));
  CHECK(LoadSystem("dgx-b300").NicBandwidthPerGpu() == Approx(100e9));
  CHECK(LoadSystem("mi300x-8").scaleup_bandwidth == Approx(448e9));
  CHECK(LoadGpu("b200").fp4_flops == Approx(9000e12));
}

TEST_CASE("ParseGpu reads inline text - the name is the file stem") {
  GpuSpec g = ParseGpu(kGpuText, "some/dir/test-gpu.yaml");
  CHECK(g.name == "test-gpu");
  CHECK(g.display_name == "Test GPU");
  CHECK(g.bf16_flops == Approx(989e12));
  CHECK(g.memory_bytes == Approx(79.11 * kGib));
  GpuSpec no_fp8 = ParseGpu(Edit(Edit(kGpuText, "fp8_tflops: 1979\n", ""), "matmul_efficiency_fp8: 0.709\n", ""),
                            "x.yaml");
  CHECK(no_fp8.fp8_flops == 0);
  CHECK(no_fp8.matmul_efficiency_fp8 == 0);
}

TEST_CASE("a GPU's platform is cuda unless its file says rocm and anything else is refused") {
  CHECK_FALSE(ParseGpu(kGpuText, "g.yaml").rocm);
  CHECK_FALSE(ParseGpu(kGpuText + "platform: cuda\n", "g.yaml").rocm);
  CHECK(ParseGpu(kGpuText + "platform: rocm\n", "g.yaml").rocm);
  CHECK(ErrorOf([] { ParseGpu(kGpuText + "platform: metal\n", "g.yaml"); }) ==
        "g.yaml:9:1: error: platform: expected cuda or rocm, found 'metal'");
  CHECK(LoadGpu("mi300x").rocm);
  CHECK_FALSE(LoadGpu("h100-sxm").rocm);
}

TEST_CASE("malformed YAML names the right line") {
  // Line 3 is indented under a scalar: yaml-cpp stops at its ':'.
  std::string text = "display_name: Test GPU\nbf16_tflops: 989\n  memory_gib: 80\nhbm_tbps: 3.35\n";
  CHECK(ErrorOf([&] { ParseGpu(text, "bad.yaml"); }) == "bad.yaml:3:13: error: malformed YAML/JSON: illegal map value");
  CHECK(ErrorOf([] { ParseGpu("- 1\n- 2\n", "list.yaml"); }).find("list.yaml:1:1: error: expected a map") == 0);
}

TEST_CASE("out-of-range numbers are rejected with file and line and field and expected and found") {
  try {
    ParseSys(Edit(kSystemText, "scaleup_gbps_per_gpu: 450", "scaleup_gbps_per_gpu: -450"));
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.loc().file == "test.yaml");
    CHECK(e.loc().line == 5);
    CHECK(e.loc().column == 1);
    CHECK(e.field() == "scaleup_gbps_per_gpu");
    CHECK(std::string(e.what()) ==
          "test.yaml:5:1: error: scaleup_gbps_per_gpu: expected the scale-up bandwidth per GPU in GB/s, one "
          "direction, a number in [0.25, 100000], found -450");
  }
  CHECK(ErrorOf([] { ParseSys(Edit(kSystemText, "compute_efficiency: 0.8", "compute_efficiency: 1.5")); }) ==
        "test.yaml:12:1: error: compute_efficiency: expected the achieved fraction of the MAMF matmul rate (a "
        "fraction, not a percentage), a number in (0.01, 1], found 1.5");
  CHECK(ErrorOf([] { ParseSys(Edit(kSystemText, "nic_gbit: 400", "nic_gbit: 0")); })
            .find("test.yaml:8:1: error: nic_gbit: expected the line rate per NIC in Gb/s, a number in [1, 100000], "
                  "found 0") == 0);
  CHECK(ErrorOf([] { ParseSys(Edit(kSystemText, "gpus_per_node: 8", "gpus_per_node: 0")); }) ==
        "test.yaml:3:1: error: gpus_per_node: expected an integer in [1, 1024], found 0");
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "hbm_tbps: 3.35", "hbm_tbps: .inf"), "g.yaml"); })
            .find("g.yaml:5:1: error: hbm_tbps: expected a finite number") == 0);
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "bf16_tflops: 989", "bf16_tflops: fast"), "g.yaml"); }) ==
        "g.yaml:2:1: error: bf16_tflops: expected a number, found 'fast'");
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "bf16_tflops: 989", "bf16_tflops: 989e12"), "g.yaml"); })
            .find("bf16_tflops: expected the dense BF16 peak in TFLOP/s, a number in [1, 100000], found 9.89e+14") !=
        std::string::npos);
}

TEST_CASE("absurdly small peaks and efficiencies are refused: they priced every step as taking ages") {
  // compute_efficiency 1e-300 and bf16_tflops 1e-9 were accepted and gave nonsense step times.
  CHECK(ErrorOf([] { ParseSys(Edit(kSystemText, "compute_efficiency: 0.8", "compute_efficiency: 1e-300")); }) ==
        "test.yaml:12:1: error: compute_efficiency: expected the achieved fraction of the MAMF matmul rate (a "
        "fraction, not a percentage), a number in (0.01, 1], found 1e-300");
  CHECK(ErrorOf([] { ParseSys(Edit(kSystemText, "compute_efficiency: 0.8", "compute_efficiency: 0.01")); })
            .find("a number in (0.01, 1], found 0.01") != std::string::npos);
  CHECK(ParseSys(Edit(kSystemText, "compute_efficiency: 0.8", "compute_efficiency: 0.011")).compute_efficiency ==
        doctest::Approx(0.011));
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "bf16_tflops: 989", "bf16_tflops: 1e-9"), "g.yaml"); }) ==
        "g.yaml:2:1: error: bf16_tflops: expected the dense BF16 peak in TFLOP/s, a number in [1, 100000], found "
        "1e-09");
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "fp8_tflops: 1979", "fp8_tflops: 0.5"), "g.yaml"); }) ==
        "g.yaml:3:1: error: fp8_tflops: expected the dense FP8 peak in TFLOP/s (0: none), a number in 0 or [1, "
        "100000], found 0.5");
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "matmul_efficiency_bf16: 0.803", "matmul_efficiency_bf16: 0.001"),
                              "g.yaml"); })
            .find("matmul_efficiency_bf16: expected the BF16 MAMF / peak (a fraction, not a percentage), a number in "
                  "(0.01, 1], found 0.001") != std::string::npos);
  CHECK(ParseGpu(Edit(kGpuText, "bf16_tflops: 989", "bf16_tflops: 1"), "g.yaml").bf16_flops == doctest::Approx(1e12));
}

TEST_CASE("scale-up domain must be a whole number of nodes") {
  std::string nvl = Edit(Edit(kSystemText, "gpus_per_node: 8", "gpus_per_node: 4"), "scaleup_domain_gpus: 8",
                         "scaleup_domain_gpus: 72");
  CHECK(ParseSys(nvl).scaleup_domain_gpus == 72);
  CHECK(ErrorOf([&] { ParseSys(Edit(nvl, "scaleup_domain_gpus: 72", "scaleup_domain_gpus: 6")); }) ==
        "test.yaml:4:1: error: scaleup_domain_gpus: expected a multiple of gpus_per_node (4), found 6");
}

TEST_CASE("unknown keys are rejected with a suggestion") {
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "hbm_tbps:", "hbm_tbs:"), "g.yaml"); }) ==
        "g.yaml:5:1: error: hbm_tbs: unknown key; did you mean 'hbm_tbps'?");
  CHECK(ErrorOf([] { ParseSys(kSystemText + "nvlink_version: 4\n"); }) ==
        "test.yaml:13:1: error: nvlink_version: unknown key");
}

TEST_CASE("missing fields name the field and what was expected") {
  try {
    ParseGpu(Edit(kGpuText, "hbm_tbps: 3.35\n", ""), "g.yaml");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.field() == "hbm_tbps");
    CHECK(e.loc().line == 1);  // a missing key is reported at its parent map
    CHECK(e.message() == "missing; expected the HBM bandwidth in TB/s, a number in [0.01, 1000]");
  }
  CHECK(ErrorOf([] { ParseSys(Edit(kSystemText, "compute_efficiency: 0.8\n", "")); })
            .find("compute_efficiency: missing; expected the achieved fraction") != std::string::npos);
  CHECK(ErrorOf([] { ParseSys(Edit(kSystemText, "gpu: h100-sxm\n", "")); }) ==
        "test.yaml:1:1: error: gpu: missing; expected a string");
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "fp8_tflops: 1979\n", ""), "g.yaml"); })
            .find("matmul_efficiency_fp8: given, but fp8_tflops is 0 or absent") != std::string::npos);
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "matmul_efficiency_fp8: 0.709\n", ""), "g.yaml"); })
            .find("matmul_efficiency_fp8: missing; expected the FP8 MAMF / peak") != std::string::npos);
  // The GPU generation is a field, not guessed from the name (a Hopper file under another name
  // was given Blackwell's CUDA_DEVICE_MAX_CONNECTIONS and MXFP8).
  CHECK(ErrorOf([] { ParseGpu(Edit(kGpuText, "compute_capability: 9.0\n", ""), "g.yaml"); }) ==
        "g.yaml:1:1: error: compute_capability: missing; expected torch.cuda.get_device_capability() as major.minor "
        "(9.0 for H100, 10.0 for B200), a number in [1, 99.9]");
  CHECK(ParseGpu(kGpuText, "g.yaml").compute_capability == doctest::Approx(9.0));
}

TEST_CASE("an unknown GPU name lists the known ones") {
  std::string msg = ErrorOf([] { ParseSys(Edit(kSystemText, "gpu: h100-sxm", "gpu: h100-sxn")); });
  CHECK(msg ==
        "test.yaml:2:1: error: gpu: unknown GPU 'h100-sxn'; did you mean 'h100-sxm'? known GPUs: a100-80gb, b200, "
        "b300, gb200, gb300, h100-sxm, h100-sxm-96gb, h200, mi300x");
  CHECK(ErrorOf([] { LoadGpu("tpu-v5"); }).find("unknown GPU 'tpu-v5'; known GPUs: a100-80gb, b200") !=
        std::string::npos);
  CHECK(ErrorOf([] { ParseSys(Edit(kSystemText, "gpu: h100-sxm", "gpu: ../h100-sxm")); })
            .find("gpu: expected the name of a file of hwdb/gpus/") != std::string::npos);
}

TEST_CASE("an unknown system name lists the known ones") {
  CHECK(ErrorOf([] { LoadSystem("dgx-h10"); }) ==
        "<embedded>/hwdb/systems: error: system: unknown system 'dgx-h10'; did you mean 'dgx-h100'? known systems: "
        "dgx-a100, dgx-b200, dgx-b300, dgx-h100, dgx-h200, dgx-h200-calibrated, gb200-nvl72, gb300-nvl72, "
        "grand-teton-h100-96gb, mi300x-8");
  CHECK(ErrorOf([] { LoadSystem("tpu-pod"); }).find("unknown system 'tpu-pod'; known systems: dgx-a100") !=
        std::string::npos);
}

TEST_CASE("a system file by path finds its GPU in ../gpus/ and then in the embedded database") {
  SystemSpec s = LoadSystem(kFixtures + "/systems/tiny-node.yaml");
  CHECK(s.name == "tiny-node");
  CHECK(s.gpu.name == "tiny-gpu");
  CHECK(s.gpu.memory_bytes == 16 * kGib);
  CHECK(s.gpu.hbm_bandwidth == Approx(1.5e12));
  CHECK(s.nic_bandwidth == Approx(12.5e9));          // 100 Gb/s
  CHECK(s.NicBandwidthPerGpu() == Approx(6.25e9));  // 1 NIC shared by 2 GPUs
  CHECK(s.scaleup_domain_gpus == 4);
  CHECK(s.scaleup_latency == Approx(2e-6));
  CHECK(s.scaleout_latency == Approx(10e-6));

  SystemSpec h = LoadSystem(kFixtures + "/systems/tiny-h100.yaml");
  CHECK(h.gpu.name == "h100-sxm");
  CHECK(h.gpu.bf16_flops == Approx(989e12));

  CHECK(ErrorOf([] { LoadSystem(kFixtures + "/systems/missing.yaml"); }).find("cannot open file") !=
        std::string::npos);
}

TEST_CASE("a --hwdb folder's systems are its own and their GPUs its own or else the embedded ones") {
  CHECK(LoadSystem("tiny-node", kFixtures).gpu.name == "tiny-gpu");
  CHECK(LoadGpu("tiny-gpu", kFixtures).bf16_flops == Approx(100e12));
  // A GPU the folder does not hold comes from the embedded database, as for a system given
  // by path (a folder of systems/ only was refused: "known GPUs: none").
  const SystemSpec s = LoadSystem("tiny-h100", kFixtures);
  CHECK(s.gpu.name == "h100-sxm");
  CHECK(s.gpu.bf16_flops == Approx(LoadGpu("h100-sxm").bf16_flops));
  CHECK(ErrorOf([] { LoadSystem("dgx-h100", kFixtures); })
            .find("unknown system 'dgx-h100'; known systems: tiny-h100, tiny-node") != std::string::npos);
}

}  // TEST_SUITE("hardware")

TEST_CASE("systems without megatron_time_fit price with their GPU die's fit or their generation's physical constants") {
  const SystemSpec h100 = LoadSystem("dgx-h100");
  REQUIRE(h100.megatron_fit.fitted);
  CHECK(h100.megatron_fit.borrowed_from.empty());
  // DGX A100 has no fit and no fitted system shares its die: GEMMs at 1/1.15 (BF16) and 1/1.20
  // (FP8) of its own GPU file's MAMF (measured sustained fractions on H200), elementwise kernels
  // at 0.674 of the HBM bandwidth (1 / 0.674 = 1.484), 4 us per kernel.
  const SystemSpec a100 = LoadSystem("dgx-a100");
  CHECK_FALSE(a100.megatron_fit.fitted);
  CHECK(a100.megatron_fit.borrowed_from == "the physical model");
  CHECK(a100.megatron_fit.gemm_bf16 == doctest::Approx(1.15));
  CHECK(a100.megatron_fit.gemm_fp8 == doctest::Approx(1.20));
  CHECK(a100.megatron_fit.gemm_fp4 == doctest::Approx(1.20));
  CHECK(a100.megatron_fit.memory_bound == doctest::Approx(1.4837).epsilon(1e-3));
  CHECK(a100.megatron_fit.kernel_overhead == doctest::Approx(4e-6));
  // DGX H200's H200 is DGX H100's die (compute capability 9.0, 989 TFLOP/s BF16): it takes
  // DGX H100's fitted constants, not the physical ones.
  const SystemSpec h200 = LoadSystem("dgx-h200");
  CHECK_FALSE(h200.megatron_fit.fitted);
  CHECK(h200.megatron_fit.borrowed_from == "dgx-h100 (same GPU compute capability 9.0)");
  CHECK(h200.megatron_fit.gemm_bf16 == doctest::Approx(h100.megatron_fit.gemm_bf16));
  CHECK(h200.megatron_fit.memory_bound == doctest::Approx(h100.megatron_fit.memory_bound));
  CHECK(h200.megatron_fit.gemm_bf16 != doctest::Approx(1.15));
  // The generation enters the physical constants through the GPU file's MAMF: A100 271.2 of
  // 312 TFLOP/s BF16, H200 (as H100) 794.5 of 989 (groundtruth C.3).
  CHECK(a100.gpu.matmul_efficiency_bf16 == doctest::Approx(271.2 / 312).epsilon(1e-3));
  CHECK(h200.gpu.matmul_efficiency_bf16 == doctest::Approx(794.5 / 989).epsilon(1e-3));
}

TEST_CASE("Meta's Grand Teton H100 96GB system: its published figures and DGX H100's borrowed step-time fit") {
  // groundtruth.md C.1 (torchtitan's cluster): 96 GB HBM2e at 2.4 TB/s, 989 TFLOP/s BF16 spec,
  // NVLink4 450 GB/s per direction, 8 GPUs per node, 400 Gb/s RDMA per GPU.
  const SystemSpec gt = LoadSystem("grand-teton-h100-96gb");
  const SystemSpec h100 = LoadSystem("dgx-h100");
  CHECK(gt.gpus_per_node == 8);
  CHECK(gt.gpu.hbm_bandwidth == doctest::Approx(2.4e12));
  CHECK(gt.gpu.bf16_flops == doctest::Approx(989e12));
  CHECK(gt.NicBandwidthPerGpu() == doctest::Approx(50e9));
  // 96 GiB x 79.11 / 80 (the share PyTorch sees of the 80 GB part): 94.93 GiB.
  CHECK(gt.gpu.memory_bytes == doctest::Approx(94.93 * 1073741824.0));
  CHECK(gt.gpu.memory_bytes > h100.gpu.memory_bytes * 1.19);
  // No fit of its own: the same die as DGX H100 (compute capability 9.0, 989 TFLOP/s), so it
  // borrows DGX H100's fitted constants, as DGX H200 does.
  CHECK_FALSE(gt.megatron_fit.fitted);
  CHECK(gt.megatron_fit.borrowed_from == "dgx-h100 (same GPU compute capability 9.0)");
  CHECK(gt.megatron_fit.gemm_bf16 == doctest::Approx(h100.megatron_fit.gemm_bf16));
  CHECK(gt.megatron_fit.kernel_overhead == doctest::Approx(h100.megatron_fit.kernel_overhead));
}
