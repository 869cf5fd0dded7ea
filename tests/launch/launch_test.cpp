// Launch files (meshplan plan --emit-launch --full-recipe) and the HTML report.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/launch.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/report.hpp"

namespace meshplan {
namespace {

PlanRequest Llama8bOn8H200() {
  PlanRequest req;
  req.model = LoadModel("llama3.1-8b");
  req.system = LoadSystem("dgx-h200");
  req.setup.num_gpus = 8;
  req.setup.seq_len = 4096;
  req.setup.global_batch = 64;
  req.top_n = 3;
  return req;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST_CASE("full AutoModel recipe for Llama-3.1-8B on 8 H200 has every key the recipe loader needs") {
  const PlanRequest req = Llama8bOn8H200();
  const PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  for (size_t i = 0; i < r.top.size(); ++i) {
    const std::string text = AutoModelFullRecipeYaml(r.top[i], req, static_cast<int>(i + 1));
    const YAML::Node y = YAML::Load(text);
    REQUIRE(y.IsMap());
    // recipe: must be the first top-level key (AutoModel tools/lint_example_yamls.py).
    CHECK(y.begin()->first.as<std::string>() == "recipe");
    for (const std::string& key : AutoModelRequiredRecipeKeys()) {
      INFO("missing top-level key " << key);
      CHECK(y[key].IsDefined());
    }
    CHECK(y["recipe"].as<std::string>() == "TrainFinetuneRecipeForNextTokenPrediction");
    CHECK(y["model"]["_target_"].as<std::string>() == "nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained");
    CHECK(y["model"]["pretrained_model_name_or_path"].as<std::string>() == "meta-llama/Llama-3.1-8B");
    CHECK(y["dist_env"]["backend"].as<std::string>() == "nccl");
    CHECK(y["loss_fn"]["_target_"].as<std::string>() == "nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy");
    CHECK(y["dataset"]["_target_"].IsScalar());
    CHECK(y["dataset"]["seq_len"].as<int64_t>() == 4096);
    CHECK(y["dataset"]["vocab_size"].as<int64_t>() == req.model.vocab_size);
    // Sources of the next three groups: the comments at AutoModelFullRecipeYaml (AutoModel main).
    // The dataset yields batches of local_batch_size, so the loader must not batch again:
    // dataloader.batch_size null (absent would default to local_batch_size).
    CHECK(y["dataset"]["_target_"].as<std::string>() ==
          "nemo_automodel.components.datasets.llm.mock_iterable_dataset.MockIterableDataset");
    CHECK(y["dataset"]["batch_size"].as<int64_t>() == r.top[i].layout.local_batch_size);
    CHECK(y["step_scheduler"]["local_batch_size"].as<int64_t>() == r.top[i].layout.local_batch_size);
    CHECK(y["dataloader"]["_target_"].as<std::string>() == "torch.utils.data.DataLoader");
    REQUIRE(y["dataloader"]["batch_size"].IsDefined());
    CHECK(y["dataloader"]["batch_size"].IsNull());
    CHECK(y["dataloader"]["num_workers"].as<int64_t>() == 0);
    // No rng: section: train_ft.py builds its StatefulRNG from the top-level seed and reads none.
    CHECK_FALSE(y["rng"].IsDefined());
    CHECK(y["seed"].as<int64_t>() == 1234);
    // The fragment's note that the recipe must set max_steps is not in the recipe that sets it.
    CHECK(text.find("must set step_scheduler.max_steps") == std::string::npos);
    CHECK(y["optimizer"]["_target_"].as<std::string>() == "torch.optim.AdamW");
    CHECK(y["step_scheduler"]["global_batch_size"].as<int64_t>() == 64);
    CHECK(y["step_scheduler"]["max_steps"].as<int64_t>() > 0);
    // The distributed section reads back as the planned layout.
    const ParsedRecipe back = ParseAutoModelRecipe(text, "full.yaml", 8);
    CHECK(back.layout.tp == r.top[i].layout.tp);
    CHECK(back.layout.cp == r.top[i].layout.cp);
    CHECK(back.layout.dp == r.top[i].layout.dp);
    CHECK(back.layout.local_batch_size == r.top[i].layout.local_batch_size);
    CHECK(back.global_batch == 64);
  }
}

TEST_CASE("full recipe quotes the model path and the HF id so that they read back exactly") {
  // Unquoted, "/tmp/x/run #3/config.json" read back as "/tmp/x/run" (" #" starts a comment) and a
  // directory "a: b" broke the YAML; a line break in a model name broke the header comment.
  PlanRequest req = Llama8bOn8H200();
  const PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  req.model.name = "my\nmodel";  // a file name may hold a line break
  req.model.source.file = "/tmp/x/run #3/a: b/'q\"/config.json";
  const std::string text = AutoModelFullRecipeYaml(r.top[0], req, 1);
  const YAML::Node y = YAML::Load(text);
  CHECK(y["model"]["config"]["pretrained_model_name_or_path"].as<std::string>() ==
        "/tmp/x/run #3/a: b/'q\"/config.json");
  CHECK(text.find("# meshplan recipe 1: my\\nmodel on 8 GPUs of dgx-h200") != std::string::npos);
  CHECK(text.find("\nmodel on") == std::string::npos);
  // check reads it (ParseAutoModelRecipe is its reader) with the planned layout.
  const ParsedRecipe back = ParseAutoModelRecipe(text, "full.yaml", 8);
  CHECK(back.layout.dp == r.top[0].layout.dp);
  CHECK(back.global_batch == 64);

  const std::string id = "org/a: b #c\nd";
  const YAML::Node h = YAML::Load(AutoModelFullRecipeYaml(r.top[0], req, 1, id));
  CHECK(h["model"]["pretrained_model_name_or_path"].as<std::string>() == id);
  // The sbatch job name and the launch header stay on their lines.
  const std::string sb = SlurmScript(r.top[0], req, ResolveLaunchTopology(req, 0, 0), "r.yaml", 1);
  CHECK(sb.find("#SBATCH --job-name=meshplan-my_model-r1\n") != std::string::npos);
  CHECK(sb.find("# meshplan AutoModel launch of recipe 1: my\\nmodel on 1 node(s)") != std::string::npos);
}

TEST_CASE("launch script and sbatch start the recipe with torchrun") {
  const PlanRequest req = Llama8bOn8H200();
  const PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  const LaunchTopology topo = ResolveLaunchTopology(req, 0, 0);
  CHECK(topo.nodes == 1);
  CHECK(topo.gpus_per_node == 8);
  const std::string sh = LaunchScript(r.top[0], req, topo, "r.rank1.yaml", 1);
  CHECK(sh.starts_with("#!/usr/bin/env bash\n"));
  CHECK(sh.find("here=$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\nrecipe=\"$here\"/'r.rank1.yaml'\n") !=
        std::string::npos);
  CHECK(sh.find("torchrun --nnodes 1 --nproc-per-node 8 \\\n  -m nemo_automodel.recipes.llm.train_ft -c \"$recipe\"") !=
        std::string::npos);
  CHECK(sh.find("export PYTORCH_CUDA_ALLOC_CONF=") != std::string::npos);
  const std::string sb = SlurmScript(r.top[0], req, topo, "r.rank1.yaml", 1);
  CHECK(sb.find("#SBATCH --nodes=1\n") != std::string::npos);
  CHECK(sb.find("#SBATCH --gpus-per-node=8\n") != std::string::npos);
  CHECK(sb.find("srun --kill-on-bad-exit=1 torchrun") != std::string::npos);
  // The batch script finds the recipe through the submitted script's folder, else the submission
  // directory, never through its own (spool) path.
  CHECK(sb.find("scontrol show job \"${SLURM_JOB_ID:-}\"") != std::string::npos);
  CHECK(sb.find("here=${here:-${SLURM_SUBMIT_DIR:-$PWD}}\nrecipe=\"$here\"/'r.rank1.yaml'\n") != std::string::npos);
  CHECK(sb.find("That folder must be the plan folder") != std::string::npos);
  CHECK(sb.find("BASH_SOURCE") == std::string::npos);
  // The header's throughput is rounded as plan's table rounds it (9292.6 reads 9293, not 9292).
  Candidate c = r.top[0];
  c.cost.tokens_per_s_per_gpu = 9292.6;
  CHECK(LaunchScript(c, req, topo, "r.rank1.yaml", 1).find(" 9293 tokens/s/GPU\n") != std::string::npos);
  const LaunchPaths p = LaunchFilePaths("out/recipes.yaml", 2);
  CHECK(p.recipe == "out/recipes.rank2.yaml");
  CHECK(p.launch == "out/recipes.rank2.launch.sh");
  CHECK(p.sbatch == "out/recipes.rank2.sbatch");
}

TEST_CASE("launch topology is checked against the system and --gpus") {
  PlanRequest req = Llama8bOn8H200();
  req.setup.num_gpus = 32;
  CHECK(ResolveLaunchTopology(req, 0, 0).nodes == 4);
  CHECK(ResolveLaunchTopology(req, 8, 0).gpus_per_node == 4);
  CHECK_THROWS_AS(ResolveLaunchTopology(req, 0, 16), InputError);  // more than the 8 GPUs of a node
  CHECK_THROWS_AS(ResolveLaunchTopology(req, 3, 8), InputError);   // 24 != 32
  CHECK_THROWS_AS(ResolveLaunchTopology(req, -1, 0), InputError);
  // The launch header says when the split differs from the nodes the plan priced.
  CHECK(LaunchTopologyNote(req, ResolveLaunchTopology(req, 0, 0)).empty());
  CHECK(LaunchTopologyNote(req, ResolveLaunchTopology(req, 8, 0)) ==
        "the prediction assumes dgx-h200's own nodes of 8 GPUs (4 node(s) x 8), not these 8 x 4: traffic that "
        "crosses the extra node boundaries is not priced");
  try {
    ResolveLaunchTopology(req, 3, 8);
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("--nodes") != std::string::npos);
  }
}

TEST_CASE("Megatron-Bridge launch carries the overrides and CUDA_DEVICE_MAX_CONNECTIONS") {
  PlanRequest req = Llama8bOn8H200();
  req.framework = Framework::kMegatronBridge;
  req.model = LoadModel("llama3.1-70b");
  req.setup.num_gpus = 32;
  req.setup.global_batch = 128;
  const PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  const LaunchTopology topo = ResolveLaunchTopology(req, 0, 0);
  const std::string sh = LaunchScript(r.top[0], req, topo, "r.yaml", 1);
  CHECK(sh.find("run_recipe.py") != std::string::npos);
  // Megatron-Bridge exports llama31_70b_pretrain_config (alias of its H100 recipe) from megatron.bridge.recipes.
  CHECK(sh.find("--recipe \"${MB_RECIPE:-llama31_70b_pretrain_config}\"") != std::string::npos);
  // The Llama recipes' GPTModelConfig nests the TransformerConfig (recipes/megatron-bridge-recipe-functions.json).
  CHECK(sh.find("'model.transformer.tensor_model_parallel_size=" + std::to_string(r.top[0].layout.tp) + "'") !=
        std::string::npos);
  CHECK(sh.find("--node-rank") != std::string::npos);
  for (const auto& [k, v] : MegatronLaunchEnv(r.top[0].layout)) CHECK(sh.find("export " + k + "=") != std::string::npos);
}

TEST_CASE("the planned precision reaches the recipe and the launch") {
  // AutoModel: FP8 is TorchAO float8 from the top-level fp8 section; BF16 emits none.
  PlanRequest req = Llama8bOn8H200();
  req.top_n = 1;
  req.setup.precision = Precision::kFp8;
  PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  YAML::Node y = YAML::Load(AutoModelRecipeYaml(r.top[0], req, 1));
  REQUIRE(y["fp8"].IsMap());
  CHECK(y["fp8"]["enabled"].as<bool>());
  CHECK(y["fp8"]["recipe_name"].as<std::string>() == "tensorwise");
  req.setup.precision = Precision::kBf16;
  r = Plan(req);
  CHECK(!YAML::Load(AutoModelRecipeYaml(r.top[0], req, 1))["fp8"].IsDefined());
  // Megatron-Bridge: mixed_precision names the recipe Megatron-Bridge registers: FP8 current
  // scaling on Hopper, MXFP8 on Blackwell, in the YAML and in the launch overrides.
  req.framework = Framework::kMegatronBridge;
  req.setup.precision = Precision::kFp8;
  r = Plan(req);
  REQUIRE(!r.top.empty());
  CHECK(YAML::Load(MegatronRecipeYaml(r.top[0], req, 1))["mixed_precision"].as<std::string>() ==
        "bf16_with_fp8_current_scaling_mixed");
  const std::string sh = LaunchScript(r.top[0], req, ResolveLaunchTopology(req, 0, 0), "r.yaml", 1);
  CHECK(sh.find("'mixed_precision=bf16_with_fp8_current_scaling_mixed'") != std::string::npos);
  req.system = LoadSystem("dgx-b200");
  r = Plan(req);
  REQUIRE(!r.top.empty());
  CHECK(YAML::Load(MegatronRecipeYaml(r.top[0], req, 1))["mixed_precision"].as<std::string>() == "bf16_with_mxfp8_mixed");
  req.setup.precision = Precision::kBf16;
  r = Plan(req);
  CHECK(YAML::Load(MegatronRecipeYaml(r.top[0], req, 1))["mixed_precision"].as<std::string>() == "bf16_mixed");
}

TEST_CASE("check reads the precision and sequence length back from what plan writes") {
  PlanRequest req = Llama8bOn8H200();
  req.top_n = 1;
  req.setup.precision = Precision::kFp8;
  PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  // AutoModel: the fp8 section; dataset.seq_len, in the fragment as in the full recipe (which
  // has one dataset section: ParseAutoModelRecipe refuses a duplicate key).
  ParsedRecipe a = ParseAutoModelRecipe(AutoModelRecipeYaml(r.top[0], req, 1), "a.yaml", 8);
  CHECK(a.precision_set);
  CHECK(a.precision == Precision::kFp8);
  CHECK(a.seq_len == 4096);
  ParsedRecipe full = ParseAutoModelRecipe(AutoModelFullRecipeYaml(r.top[0], req, 1, ""), "full.yaml", 8);
  CHECK(full.seq_len == 4096);
  req.setup.seq_len = 2048;
  r = Plan(req);
  REQUIRE(!r.top.empty());
  CHECK(ParseAutoModelRecipe(AutoModelRecipeYaml(r.top[0], req, 1), "a.yaml", 8).seq_len == 2048);
  CHECK(ParseAutoModelRecipe(AutoModelFullRecipeYaml(r.top[0], req, 1, ""), "full.yaml", 8).seq_len == 2048);
  req.setup.seq_len = 4096;
  // Megatron-Bridge: mixed_precision.
  req.framework = Framework::kMegatronBridge;
  r = Plan(req);
  REQUIRE(!r.top.empty());
  ParsedRecipe m = ParseMegatronRecipe(MegatronRecipeYaml(r.top[0], req, 1), "m.yaml", 8);
  CHECK(m.precision_set);
  CHECK(m.precision == Precision::kFp8);
  req.setup.precision = Precision::kBf16;
  r = Plan(req);
  m = ParseMegatronRecipe(MegatronRecipeYaml(r.top[0], req, 1), "m.yaml", 8);
  CHECK(m.precision == Precision::kBf16);
}

TEST_CASE("Megatron-Bridge launch names the recipe function Megatron-Bridge exports for each preset") {
  PlanRequest req = Llama8bOn8H200();
  req.framework = Framework::kMegatronBridge;
  const PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  const LaunchTopology topo = ResolveLaunchTopology(req, 0, 0);
  // Llama-3.1-8B: llama31_8b_pretrain_config = llama31_8b_pretrain_2gpu_h100_bf16_config
  // (Megatron-Bridge src/megatron/bridge/recipes/llama/llama3.py).
  const std::string sh = LaunchScript(r.top[0], req, topo, "r.yaml", 1);
  CHECK(sh.find("--recipe \"${MB_RECIPE:-llama31_8b_pretrain_config}\"") != std::string::npos);
  CHECK(SlurmScript(r.top[0], req, topo, "r.yaml", 1).find("${MB_RECIPE:-llama31_8b_pretrain_config}") !=
        std::string::npos);
  // Megatron-Bridge has no Mixtral recipe: the script stops unless MB_RECIPE is set, rather than
  // calling a recipe function that does not exist.
  PlanRequest mix = req;
  mix.model = LoadModel("mixtral-8x7b");
  mix.setup.num_gpus = 16;
  mix.setup.global_batch = 256;
  const PlanResult rm = Plan(mix);
  REQUIRE(!rm.top.empty());
  const std::string shm = LaunchScript(rm.top[0], mix, ResolveLaunchTopology(mix, 0, 0), "r.yaml", 1);
  CHECK(shm.find("${MB_RECIPE:?set MB_RECIPE to a Megatron-Bridge recipe function: it has none for mixtral-8x7b}") !=
        std::string::npos);
  CHECK(shm.find("_pretrain_config") == std::string::npos);
  // Nemotron 3 Nano: recipes/nemotronh/nemotron_3_nano.py exports nemotron_3_nano_pretrain_config
  // (alias of nemotron_3_nano_pretrain_8gpu_h100_bf16_config); Super and Ultra likewise.
  PlanRequest nem = mix;
  nem.model = LoadModel("nemotron-3-nano");
  nem.setup.num_gpus = 8;
  const PlanResult rn = Plan(nem);
  REQUIRE(!rn.top.empty());
  const std::string shn = LaunchScript(rn.top[0], nem, ResolveLaunchTopology(nem, 0, 0), "r.yaml", 1);
  CHECK(shn.find("--recipe \"${MB_RECIPE:-nemotron_3_nano_pretrain_config}\"") != std::string::npos);
  CHECK(megatron_bridge::DefaultRecipeFunctionName("nemotron-3-super") == "nemotron_3_super_pretrain_config");
  CHECK(megatron_bridge::DefaultRecipeFunctionName("nemotron-3-ultra") == "nemotron_3_ultra_pretrain_config");
  // The Hugging Face ids a full AutoModel recipe loads them from (those Megatron-Bridge's recipes name).
  CHECK(HuggingFaceId("nemotron-3-nano") == "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16");
  CHECK(HuggingFaceId("deepseek-v4-flash") == "deepseek-ai/DeepSeek-V4-Flash");
}

TEST_CASE("an AutoModel fragment says that the recipe it goes into must set max_steps") {
  // AutoModel components/training/step_scheduler.py: max_steps unset is derived from
  // len(dataloader), which an iterable dataset has not ("epoch_len must be provided ...").
  PlanRequest req = Llama8bOn8H200();
  req.top_n = 1;
  const PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  const std::string fragment = AutoModelRecipeYaml(r.top[0], req, 1);
  const size_t note = fragment.find(
      "\n# your recipe must set step_scheduler.max_steps: AutoModel derives it from len(dataloader) otherwise, "
      "which an iterable dataset (no len()) cannot give (components/training/step_scheduler.py)\nstep_scheduler:\n");
  CHECK(note != std::string::npos);
  CHECK_FALSE(YAML::Load(fragment)["step_scheduler"]["max_steps"].IsDefined());
  // The complete recipe sets max_steps and has no such note.
  const std::string full = AutoModelFullRecipeYaml(r.top[0], req, 1);
  CHECK(full.find("must set step_scheduler.max_steps") == std::string::npos);
  CHECK(YAML::Load(full)["step_scheduler"]["max_steps"].as<int64_t>() == 100);
}

namespace fs = std::filesystem;

// A fresh empty folder under the temporary directory, removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "meshplan_launch_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteExecutable(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

// The lines of `text`.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The argument after "-c" among the lines a fake torchrun printed ("" when there is none).
std::string RecipeArgument(const std::string& printed) {
  const std::vector<std::string> args = Lines(printed);
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "-c") return args[i + 1];
  }
  return "";
}

TEST_CASE("launch files travel: the scripts of a moved folder start the recipe beside them") {
  PlanRequest req = Llama8bOn8H200();
  req.top_n = 2;
  const PlanResult r = Plan(req);
  REQUIRE(r.top.size() == 2);
  TempDir tmp;
  const fs::path plan = tmp.path / "plan";
  fs::create_directory(plan);
  const LaunchTopology topo = ResolveLaunchTopology(req, 0, 0);
  const LaunchFilesWritten files =
      WriteLaunchFiles(r, req, topo, (plan / "recipes.yaml").string(), true, "", false);
  REQUIRE(files.written.size() == 6);
  CHECK(files.removed.empty());
  CHECK(files.written[0] == (plan / "recipes.rank1.yaml").string());

  // Move the folder: nothing in the scripts names where it was.
  const fs::path moved = tmp.path / "elsewhere" / "moved plan";
  fs::create_directories(moved.parent_path());
  fs::rename(plan, moved);
  for (const char* name : {"recipes.rank1.launch.sh", "recipes.rank1.sbatch", "recipes.rank2.launch.sh"}) {
    CAPTURE(name);
    const std::string text = ReadText(moved / name);
    CHECK(text.find(plan.string()) == std::string::npos);
    CHECK(text.find(tmp.path.string()) == std::string::npos);
    CHECK(text.find("'recipes.rank" + std::string(1, name[12]) + ".yaml'") != std::string::npos);
  }

  // Fake torchrun, scontrol and srun first on PATH: torchrun prints its arguments one a line.
  const fs::path bin = tmp.path / "bin";
  fs::create_directory(bin);
  WriteExecutable(bin / "torchrun", "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\"\n");
  WriteExecutable(bin / "srun", "#!/usr/bin/env bash\nshift\nexec \"$@\"\n");  // drops --kill-on-bad-exit=1
  const fs::path printed = tmp.path / "printed.txt";
  const std::string env = "PATH='" + bin.string() + "':\"$PATH\" ";

  // The launch script, run from another folder by its path in the moved folder.
  const std::string run = "cd / && " + env + "bash '" + (moved / "recipes.rank1.launch.sh").string() + "' > '" +
                          printed.string() + "' 2>&1";
  REQUIRE(std::system(run.c_str()) == 0);
  std::string recipe = RecipeArgument(ReadText(printed));
  CAPTURE(ReadText(printed));
  REQUIRE(!recipe.empty());
  CHECK(fs::exists(recipe));
  CHECK(fs::equivalent(recipe, moved / "recipes.rank1.yaml"));

  // The batch script as slurmd runs it: a copy in a spool folder. scontrol names the submitted
  // script (Command=), whose folder holds the recipe.
  const fs::path spool = tmp.path / "spool" / "job42";
  fs::create_directories(spool);
  fs::copy_file(moved / "recipes.rank2.sbatch", spool / "slurm_script");
  WriteExecutable(bin / "scontrol",
                  "#!/usr/bin/env bash\nif [ \"$1 $2\" = 'show job' ]; then\n  echo 'JobId=42 JobName=x'\n  echo "
                  "'   Command=" + (moved / "recipes.rank2.sbatch").string() + "'\n  echo '   WorkDir=/'\nelse\n  echo node1\nfi\n");
  const std::string slurm_env = env + "SLURM_JOB_ID=42 SLURM_NNODES=1 SLURM_JOB_NODELIST=node1 ";
  std::string sbatch = "cd / && " + slurm_env + "SLURM_SUBMIT_DIR=/ bash '" + (spool / "slurm_script").string() +
                       "' > '" + printed.string() + "' 2>&1";
  REQUIRE(std::system(sbatch.c_str()) == 0);
  recipe = RecipeArgument(ReadText(printed));
  CAPTURE(ReadText(printed));
  REQUIRE(!recipe.empty());
  CHECK(fs::equivalent(recipe, moved / "recipes.rank2.yaml"));

  // Without scontrol's answer, the submission directory is the plan folder.
  WriteExecutable(bin / "scontrol", "#!/usr/bin/env bash\nexit 1\n");
  sbatch = "cd / && " + slurm_env + "SLURM_SUBMIT_DIR='" + moved.string() + "' bash '" + (spool / "slurm_script").string() +
           "' > '" + printed.string() + "' 2>&1";
  REQUIRE(std::system(sbatch.c_str()) == 0);
  CHECK(fs::equivalent(RecipeArgument(ReadText(printed)), moved / "recipes.rank2.yaml"));

  // Submitted from elsewhere with no scontrol: the script stops and says where it looked.
  sbatch = "cd / && " + slurm_env + "SLURM_SUBMIT_DIR='" + tmp.path.string() + "' bash '" +
           (spool / "slurm_script").string() + "' > '" + printed.string() + "' 2>&1";
  CHECK(std::system(sbatch.c_str()) != 0);
  CHECK(ReadText(printed) == "meshplan: recipe " + (tmp.path / "recipes.rank2.yaml").string() +
                                 " not found (submit this script from the plan folder: sbatch <plan "
                                 "folder>/recipes.rank2.sbatch)\n");
}

TEST_CASE("--force with fewer recipes removes the launch files of the earlier run's extra ranks") {
  PlanRequest req = Llama8bOn8H200();
  req.top_n = 3;
  PlanResult r = Plan(req);
  REQUIRE(r.top.size() == 3);
  TempDir tmp;
  const std::string out = (tmp.path / "recipes.yaml").string();
  const LaunchTopology topo = ResolveLaunchTopology(req, 0, 0);
  REQUIRE(WriteLaunchFiles(r, req, topo, out, false, "", false).written.size() == 9);
  // Files that only look alike stay: another stem, rank 0 or 03, another kind, a folder.
  for (const char* other : {"other.rank3.yaml", "recipes.rank0.yaml", "recipes.rank03.yaml", "recipes.rank3.txt",
                            "recipes.rank3.yaml.bak"}) {
    std::ofstream(tmp.path / other) << "x\n";
  }
  fs::create_directory(tmp.path / "recipes.rank4.sbatch");
  const std::vector<std::string> expected = {(tmp.path / "recipes.rank2.yaml").string(),
                                             (tmp.path / "recipes.rank2.launch.sh").string(),
                                             (tmp.path / "recipes.rank2.sbatch").string(),
                                             (tmp.path / "recipes.rank3.yaml").string(),
                                             (tmp.path / "recipes.rank3.launch.sh").string(),
                                             (tmp.path / "recipes.rank3.sbatch").string()};
  CHECK(StaleLaunchFiles(out, 1) == expected);

  r.top.resize(1);
  // Without --force the existing files are refused (rank 1's), and nothing is removed.
  CHECK_THROWS_AS(WriteLaunchFiles(r, req, topo, out, false, "", false), InputError);
  CHECK(fs::exists(tmp.path / "recipes.rank3.sbatch"));
  // With --force: rank 1 rewritten, ranks 2 and 3 removed, and said.
  const LaunchFilesWritten files = WriteLaunchFiles(r, req, topo, out, false, "", true);
  CHECK(files.written.size() == 3);
  CHECK(files.removed == expected);
  for (const std::string& f : expected) CHECK_FALSE(fs::exists(f));
  CHECK(fs::exists(tmp.path / "recipes.rank1.launch.sh"));
  for (const char* other : {"other.rank3.yaml", "recipes.rank0.yaml", "recipes.rank03.yaml", "recipes.rank3.txt",
                            "recipes.rank3.yaml.bak", "recipes.rank4.sbatch"}) {
    CAPTURE(other);
    CHECK(fs::exists(tmp.path / other));
  }
}

TEST_CASE("report: self-contained HTML with memory and time bars and a scatter") {
  PlanRequest req = Llama8bOn8H200();
  req.top_n = 200;
  PlanResult r = Plan(req);
  const std::vector<Candidate> all = r.top;
  r.top.resize(3);
  const std::string html = ReportHtml(r, all, req);
  CHECK(html.starts_with("<!DOCTYPE html>"));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // only the SVG namespace
  CHECK(html.find("https://") == std::string::npos);
  CHECK(Count(html, "<svg") == 3);
  CHECK(Count(html, "class=\"seg\"") >= 6);
  CHECK(Count(html, "class=\"pt\"") == all.size());
  CHECK(Count(html, "class=\"top\"") == 3);
}

}  // namespace
}  // namespace meshplan
