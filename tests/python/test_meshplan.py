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
    assert elapsed > 0.1, "search too short to tell: %.3f s" % elapsed
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
