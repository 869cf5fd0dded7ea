"""meshplan: parallelism planner for LLM training (NeMo AutoModel, Megatron-Bridge).

Each function takes the options of the CLI command of the same name as keyword arguments
(``seq_len`` for ``--seq-len``) and returns what ``--format json`` prints, as Python data.
docs/python.md lists them. Unusable input raises :class:`InputError`.
"""

import json as _json
import os as _os

from . import _meshplan

__all__ = ["InputError", "SearchStopped", "plan", "check", "explain", "validate",
           "list_models", "list_systems", "list_gpus"]


class InputError(ValueError):
    """Unusable input: the CLI's exit status 2. Attributes: message, file, line, column, field
    (None where the error has none; field is the request key, e.g. 'seq_len'), and error (the
    whole error object the CLI prints with --format json)."""

    def __init__(self, error):
        self.error = error
        self.message = error.get("message")
        self.file = error.get("file")
        self.line = error.get("line")
        self.column = error.get("column")
        self.field = error.get("field")
        where = ""
        if self.file:
            where = self.file + (":%d" % self.line if self.line else "") + (":%d" % self.column if self.column else "") + ": "
        if self.field:
            where += self.field + ": "
        super().__init__(where + str(self.message))


class SearchStopped(RuntimeError):
    """A search stopped at its max_seconds / max_layouts / max_memory_mb limit before covering
    the layout space; ``result`` holds the best layouts of the part searched."""

    def __init__(self, result):
        self.result = result
        super().__init__(result["error"]["message"])


def _call(command, request):
    status, body = _meshplan.call(command, _json.dumps(request))
    if status == 200 and command == "plan" and request.get("format") == "yaml":
        return body
    data = _json.loads(body)
    if status == 400:
        raise InputError(data["error"])
    if status == 422:
        raise SearchStopped(data)
    if status != 200:
        raise RuntimeError("meshplan internal error: " + data["error"]["message"])
    return data


def _text(value):
    """A recipe or CSV given as text, or as a path (os.PathLike, or a str naming a file)."""
    if isinstance(value, _os.PathLike) or (isinstance(value, str) and "\n" not in value and _os.path.isfile(value)):
        with open(value, encoding="utf-8", errors="replace") as f:
            return f.read()
    return value


def _request(options, **named):
    """The JSON request: the named arguments and the options, a None one left out (not given)."""
    request = {k: v for k, v in named.items() if v is not None}
    request.update({k: v for k, v in options.items() if v is not None})
    return request


def plan(model=None, system=None, gpus=None, seq_len=None, global_batch=None, framework="automodel", **options):
    """``meshplan plan --format json``: the request, the search's counts and the best recipes.

    model: a preset name or a config.json / model YAML path (or model_config=TEXT_OR_DICT);
    system: a system name or YAML path. options: precision, top, headroom, strategy, sweep_gpus,
    sweep_seq, max_seconds, ... (docs/serve.md). A plan with no layout returns its JSON with an
    "error" key, as the CLI prints it; raises InputError, or SearchStopped at a search limit.
    """
    return _call("plan", _request(options, model=model, system=system, gpus=gpus, seq_len=seq_len,
                                  global_batch=global_batch, framework=framework))


def check(recipe, model=None, system=None, gpus=None, **options):
    """``meshplan check``: the verdict on each document of ``recipe`` (YAML text or a path)."""
    return _call("check", _request(options, recipe=_text(recipe), model=model, system=system, gpus=gpus))


def explain(model=None, system=None, gpus=None, **options):
    """``meshplan explain``: one layout (recipe=TEXT_OR_PATH, or tp=, pp=, ... keys) term by term."""
    if "recipe" in options:
        options["recipe"] = _text(options["recipe"])
    return _call("explain", _request(options, model=model, system=system, gpus=gpus))


def validate(runs, **options):
    """``meshplan validate``: published runs (CSV text or a path) priced row by row, and the summary.

    A path is read where it lies, so that its rows' ``meshplan_model`` files resolve beside it
    as the CLI's do."""
    if isinstance(runs, _os.PathLike) or (isinstance(runs, str) and "\n" not in runs and _os.path.isfile(runs)):
        return _call("validate", _request(options, runs_path=_os.path.abspath(_os.fspath(runs))))
    return _call("validate", _request(options, runs=runs))


def list_models():
    """The model presets: name, architecture, layers, hidden, total_params, active_params, moe."""
    return _call("models", {})


def list_systems():
    """The systems of the embedded hardware database: name, gpu, gpus_per_node, nvl_domain, ..."""
    return _call("systems", {})


def list_gpus():
    """The GPUs of the embedded hardware database: name, memory_gib, bf16_tflops, ..."""
    return _call("gpus", {})
