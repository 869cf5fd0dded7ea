"""The Python module meshplan: its answers against the CLI's --format json and the server's
API for the same request, its errors, and the GIL released during a search."""

import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

import meshplan

BINARY = os.environ["MESHPLAN_BINARY"]
REQUEST = dict(model="llama3.1-70b", system="dgx-h100", gpus=32, seq_len=8192, global_batch=512, top=3)


def cli_json(*args):
    out = subprocess.run([BINARY, *args, "--format", "json"], capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def server():
    proc = subprocess.Popen([BINARY, "serve", "--port", "0"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    url = line.split("listening on ")[1].split()[0].rstrip("/")
    yield url
    proc.kill()
    proc.wait()


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_plan_same_from_module_server_and_cli(server):
    module = meshplan.plan(**REQUEST)
    status, served = post(server, "/api/plan", REQUEST)
    assert status == 200
    cli = cli_json("plan", "--model", "llama3.1-70b", "--system", "dgx-h100", "--gpus", "32", "--seq-len", "8192",
                   "--global-batch", "512", "--top", "3")
    # "warnings" is what the CLI prints on stderr; the rest is its stdout.
    assert module.pop("warnings") == served.pop("warnings")
    assert module == served == cli
    best = module["recipes"][0]
    layout = best["layout"]
    assert layout["tp_size"] * layout["pp_size"] * layout["cp_size"] * layout["dp_size"] == 32
    assert best["memory_gib"]["total"] <= best["memory_gib"]["capacity"]
    assert module["request"]["gpus"] == 32
    # MFU against H100's 989 TFLOP/s dense BF16 peak; a BF16 plan's own peak is the same.
    assert abs(best["mfu"] - best["model_tflops_per_gpu"] / 989) < 1e-9
    assert best["mfu_precision_peak"] == best["mfu"]


def test_check_same_from_module_and_server(server, tmp_path):
    recipe = ("distributed:\n  strategy: fsdp2\n  tp_size: 3\n  pp_size: 1\n  cp_size: 1\n  dp_size: 8\n"
              "step_scheduler:\n  global_batch_size: 512\n  local_batch_size: 1\ndataset:\n  seq_len: 8192\n")
    module = meshplan.check(recipe, model="llama3.1-70b", system="dgx-h100", gpus=24)
    status, served = post(server, "/api/check", dict(recipe=recipe, model="llama3.1-70b", system="dgx-h100", gpus=24))
    assert status == 200
    assert module == served
    assert module["exit_status"] == 1
    assert module["documents"][0]["rules"]["failures"]
    # A path is read as the file.
    f = tmp_path / "r.yaml"
    f.write_text(recipe)
    assert meshplan.check(f, model="llama3.1-70b", system="dgx-h100", gpus=24) == module


# One Megatron-Bridge layout given by its override flags (explain --framework megatron-bridge):
# the CLI's flags, and the request keys of the same names for the module and the server.
MB_EXPLAIN = dict(model="qwen3-30b-a3b", system="dgx-h100", gpus=16, seq_len=4096, global_batch=512,
                  framework="megatron-bridge", tp=2, pp=2, vpp=2, ep=4, etp=1, mbs=1, dp_type="ddp+distopt",
                  sequence_parallel=True, recompute="selective", recompute_modules=["core_attn", "moe_act"],
                  dispatcher="alltoall", set=["comm_overlap.tp_comm_overlap=true"])
MB_EXPLAIN_FLAGS = ["--model", "qwen3-30b-a3b", "--system", "dgx-h100", "--gpus", "16", "--seq-len", "4096",
                    "--global-batch", "512", "--framework", "megatron-bridge", "--tp", "2", "--pp", "2", "--vpp", "2",
                    "--ep", "4", "--etp", "1", "--mbs", "1", "--dp-type", "ddp+distopt", "--sequence-parallel",
                    "--recompute", "selective", "--recompute-modules", "core_attn,moe_act", "--dispatcher", "alltoall",
                    "--set", "comm_overlap.tp_comm_overlap=true"]


def test_explain_megatron_flags_same_from_module_server_and_cli(server):
    module = meshplan.explain(**MB_EXPLAIN)
    status, served = post(server, "/api/explain", MB_EXPLAIN)
    assert status == 200
    cli = cli_json("explain", *MB_EXPLAIN_FLAGS)
    assert module == served == cli
    # Each flag is the layout's override key: VPP 2, expert-TP 1, micro-batch 1, the distributed
    # optimizer, the --set key.
    o = module["overrides"]
    assert [o[k] for k in ("model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
                           "model.virtual_pipeline_model_parallel_size", "model.expert_model_parallel_size",
                           "model.expert_tensor_parallel_size", "train.micro_batch_size")] == ["2", "2", "2", "4", "1", "1"]
    assert o["ddp.use_distributed_optimizer"] == "true" and o["dist.use_megatron_fsdp"] == "false"
    assert o["model.moe_token_dispatcher_type"] == "alltoall" and o["comm_overlap.tp_comm_overlap"] == "true"
    assert module["layout"]["dp_size"] == 4 and module["description"].startswith("ddp+distopt tp2 pp2 vpp2 cp1 ep4 etp1 dp4 mbs1")
    # `set` also takes an object of dotted keys and JSON values.
    as_object = dict(MB_EXPLAIN, set={"comm_overlap.tp_comm_overlap": True})
    assert meshplan.explain(**as_object) == module
    # Another micro-batch is another layout: the flag is not ignored.
    assert meshplan.explain(**dict(MB_EXPLAIN, mbs=2))["overrides"]["train.micro_batch_size"] == "2"


def test_explain_framework_flag_errors_are_the_clis(server):
    # An AutoModel key with --framework megatron-bridge, a Megatron-Bridge one without it: the
    # CLI's message, the request key as the field.
    for request, flags, field in [
            (dict(MB_EXPLAIN, local_batch=2), MB_EXPLAIN_FLAGS + ["--local-batch", "2"], "local_batch"),
            (dict(model="llama3.1-8b", system="dgx-h100", gpus=8, seq_len=4096, global_batch=64, mbs=2),
             ["--model", "llama3.1-8b", "--system", "dgx-h100", "--gpus", "8", "--seq-len", "4096",
              "--global-batch", "64", "--mbs", "2"], "mbs"),
            (dict(MB_EXPLAIN, dp_type="zero3"), None, "dp_type")]:
        with pytest.raises(meshplan.InputError) as e:
            meshplan.explain(**request)
        assert e.value.field == field
        status, served = post(server, "/api/explain", request)
        assert status == 400 and served["error"]["message"] == e.value.message
        if flags:
            assert cli_json("explain", *flags)["error"]["message"] == e.value.message
    assert "expected one of ddp, ddp+distopt, megatron_fsdp, torch_fsdp2; found 'zero3'" in e.value.message


def test_generic_decoder_from_module_server_and_cli(server):
    # Starcoder2 is no architecture meshplan knows: refused, or planned as a generic decoder.
    config = os.path.join(os.path.dirname(__file__), "..", "data", "models", "arch", "starcoder2-3b.json")
    job = dict(system="dgx-h100", gpus=8, seq_len=4096, global_batch=64, tp=2)
    with pytest.raises(meshplan.InputError) as e:
        meshplan.explain(model=config, **job)
    assert "--generic-decoder" in e.value.message
    module = meshplan.explain(model=config, generic_decoder=True, **job)
    cli = cli_json("explain", "--model", config, "--generic-decoder", "--system", "dgx-h100", "--gpus", "8",
                   "--seq-len", "4096", "--global-batch", "64", "--tp", "2")
    assert module == cli
    assert "Starcoder2ForCausalLM" in module["model_warning"]
    # The server reads no path: the same config pasted.
    with open(config) as f:
        text = f.read()
    status, served = post(server, "/api/explain", dict(model_config=text, generic_decoder=True, **job))
    assert status == 200
    assert served["layout"] == module["layout"]
    planned = meshplan.plan(model=config, generic_decoder=True, **dict(job, tp=None, top=1))
    assert planned["recipes"] and "Starcoder2ForCausalLM" in planned["model_warning"]


def test_explain_and_lists():
    e = meshplan.explain(model="llama3.1-8b", system="dgx-h100", gpus=8, seq_len=4096, global_batch=64, tp=2)
    assert e["layout"]["dp_size"] == 4
    assert e["exit_status"] in (0, 1)
    names = [m["name"] for m in meshplan.list_models()]
    assert "llama3.1-70b" in names
    assert any(s["name"] == "dgx-h100" and s["gpus_per_node"] == 8 for s in meshplan.list_systems())
    assert any(g["name"].startswith("h100") for g in meshplan.list_gpus())


def test_sweep_best_per_gpu_count():
    sweep = meshplan.plan(model="llama3.1-8b", system="dgx-h100", seq_len=4096, global_batch=256, sweep_gpus=[8, 16])
    cli = cli_json("plan", "--model", "llama3.1-8b", "--system", "dgx-h100", "--seq-len", "4096", "--global-batch",
                   "256", "--sweep-gpus", "8,16")
    assert sweep == cli


def test_input_errors_carry_field_file_and_line(tmp_path):
    with pytest.raises(meshplan.InputError) as e:
        meshplan.plan(model="llama3.1-70b", system="dgx-h100", gpus=12, seq_len=8192, global_batch=512)
    assert e.value.field == "gpus"
    assert "found 12" in e.value.message
    config = tmp_path / "config.json"
    config.write_text('{\n  "architectures": ["LlamaForCausalLM"],\n  "hidden_size": "big"\n}\n')
    with pytest.raises(meshplan.InputError) as e:
        meshplan.plan(model=str(config), system="dgx-h100", gpus=8, seq_len=4096, global_batch=64)
    assert e.value.file == str(config)
    assert e.value.line == 3
    with pytest.raises(meshplan.InputError) as e:
        meshplan.plan(model="llama3.1-70b", system="dgx-h100", gpus=32, seq_len=8192, global_batch=512, topp=3)
    assert e.value.field == "topp"
    assert "did you mean 'top'" in str(e.value)


def test_search_stopped_raises_with_partial_result():
    with pytest.raises(meshplan.SearchStopped) as e:
        meshplan.plan(model="deepseek-v3", system="dgx-h100", gpus=1024, seq_len=4096, global_batch=4096,
                      framework="megatron-bridge", max_layouts=50)
    assert e.value.result["counts"]["stopped"] != ""


def test_gil_released_during_search():
    # A Megatron-Bridge search of DeepSeek-V3 on 2048 GPUs takes long enough (>0.1 s) to see the main thread
    # run beside it; with the GIL held it could not run at all until the search returned.
    done = []
    t = threading.Thread(target=lambda: done.append(meshplan.plan(
        model="deepseek-v3", system="dgx-h100", gpus=2048, seq_len=4096, global_batch=8192,
        framework="megatron-bridge", top=1)))
    start = time.monotonic()
    t.start()
    ticks, longest, last = 0, 0.0, time.monotonic()
    while t.is_alive():
        now = time.monotonic()
        longest = max(longest, now - last)
        last = now
        ticks += 1
        time.sleep(0.001)
    elapsed = time.monotonic() - start
    t.join()
    assert done and done[0]["recipes"]
    assert elapsed > 0.02, "search too short to tell: %.3f s" % elapsed
    assert longest < elapsed / 2, "main thread stalled %.3f s of %.3f s" % (longest, elapsed)


def test_validate_rows_match_the_cli(server):
    # The first two rows of Megatron-Bridge's published perf table, priced without ranking:
    # the module's and the server's JSON agree, and their errors are the CLI's err% column.
    source = os.path.join(os.path.dirname(__file__), "..", "data", "mbridge_perf_dev.csv")
    with open(source) as f:
        runs = "".join(f.readlines()[:3])
    module = meshplan.validate(runs, rank_top=0)
    status, served = post(server, "/api/validate", dict(runs=runs, rank_top=0))
    assert status == 200 and module == served
    assert module["summary"]["evaluated"] == 2
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "meshplan-validate-%d.csv" % os.getpid())
    with open(path, "w") as f:
        f.write(runs)
    try:
        out = subprocess.run([BINARY, "validate", path, "--rank-top", "0"], capture_output=True, text=True).stdout
    finally:
        os.remove(path)
    # Row lines: the label in 52 columns, then TF pub, TF pred, err%.
    lines = out.splitlines()
    rows = lines[lines.index(next(l for l in lines if l.startswith("run "))) + 1:][:2]
    cli_errors = [float(line[52:].split()[2]) for line in rows]
    assert cli_errors == [round(100 * r["error"], 1) for r in module["rows"]]


def test_validate_of_a_path_resolves_its_model_files_beside_it():
    # tests/data/published_dense_runs.csv names model files relative to its folder
    # (meshplan_model: models/paper/...): given as a path, the module reads it where it lies, as
    # the CLI does, from any working directory.
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "published_dense_runs.csv")
    cwd = os.getcwd()
    os.chdir(os.environ.get("TMPDIR", "/tmp"))
    try:
        module = meshplan.validate(source, rank_top=0)
    finally:
        os.chdir(cwd)
    out = subprocess.run([BINARY, "validate", source, "--rank-top", "0"], capture_output=True, text=True).stdout
    summary = next(l for l in out.splitlines() if l.startswith("summary: "))
    assert summary.startswith("summary: %d rows evaluated" % module["summary"]["evaluated"])
    assert module["summary"]["evaluated"] > 20
