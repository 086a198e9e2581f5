"""The bad-input suite over every command that reads input: recipes (render), master configs
(render), manifests (build, export, diff), AgentX modules (show, diff, export --from-module) and
server logs (diff --logs). Each case: exit 2, exactly one line `file:line: key.path: problem`, no
traceback, and nothing written where the command would write."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cookbookgen.cli import main

from conftest import CORPUS, DATA, SOURCE

# `file:line: key: message`, or `file: key: message` for a whole-file problem (no line to point at)
LINE = re.compile(r"^cookbookgen: error: (?P<file>.+?)(?::(?P<line>\d+))?: (?P<key>\S+): (?P<msg>.+)$")
MODULE = CORPUS / "sglang-cookbook/agentx/deepseek-ai/deepseek-v4.jsx"
AGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"


def _expect_one_line(capsys, argv: list[str], file_part: str, key_part: str, msg_part: str) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (out[-400:], err)
    assert "Traceback" not in err and len(lines) == 1, err
    m = LINE.match(lines[0])
    assert m, lines[0]
    assert file_part in f"{m['file']}:{m['line']}" and key_part in m["key"] and msg_part in m["msg"], lines[0]


# --- AgentX modules ---------------------------------------------------------------------------------

def _module(tmp_path: Path, mutate) -> Path:
    text = MODULE.read_text()
    head, _, body = text.partition("export const agentx = ")
    data = json.loads(body.rstrip().rstrip(";"))
    mutate(data)
    path = tmp_path / "bad.jsx"
    path.write_text(head + "export const agentx = " + json.dumps(data, indent=1) + ";\n")
    return path


def _set_block(ci: int, router: str, bi: int, value) -> object:
    def mutate(d):
        d["cells"][ci]["routers"][router]["blocks"][bi] = value
    return mutate


MODULE_CASES = {
    "dangling ref cell": (_set_block(1, "sglang", 2, {"ref": [99, "sglang", 0]}), "ref", "cell"),
    "dangling ref router": (_set_block(1, "sglang", 2, {"ref": [0, "vllm", 0]}), "ref", "router"),
    "dangling ref block": (_set_block(1, "sglang", 2, {"ref": [0, "dynamo", 99]}), "ref", "block"),
    "dangling from": (_set_block(1, "sglang", 2, {"from": 99}), "from", "block"),
    "self from": (_set_block(1, "dynamo", 0, {"from": 0}), "from", ""),
    "bad envRef": (_set_block(1, "dynamo", 3, {"kind": "worker", "cmd": "x", "args": [], "envRef": 999}), "envRef", ""),
    # found by tests/test_fuzz_recipes.py: tracebacks before
    "args not a list": (_set_block(1, "dynamo", 3, {"kind": "worker", "cmd": "x", "args": True}), "cells[1].points[0]", "malformed module data"),
    "point without concurrencies": (lambda d: d["cells"][1]["points"][0].pop("concs"), "cells[1].points[0].concs", "must be a list"),
    "cyclic ref": (lambda d: (d["cells"][0]["routers"]["sglang"]["blocks"].__setitem__(0, {"ref": [1, "sglang", 0]}),
                              d["cells"][1]["routers"]["sglang"]["blocks"].__setitem__(0, {"ref": [0, "sglang", 0]})), "ref", "cycl"),
    # issue 17: accepted silently before (`true` is a Python int; an unknown tier decoded as `none`)
    "envRef true": (_set_block(1, "dynamo", 3, {"kind": "worker", "cmd": "x", "args": [], "envRef": True}), "envRef", "no env True"),
    "concurrency true": (lambda d: d["cells"][1]["points"][0].__setitem__("concs", [True]), "cells[1].points[0].concs", "whole numbers"),
    "negative workers": (_set_block(1, "dynamo", 3, {"kind": "worker", "role": "agg", "cmd": "x", "args": [], "workers": -2}),
                         "blocks[3].workers", "whole number >= 1"),
    "count true": (_set_block(1, "dynamo", 3, {"kind": "dynamo-frontend", "cmd": "x", "args": [], "count": True}),
                   "blocks[3].count", "whole number >= 1"),
    "unknown measured tier": (lambda d: d["cells"][1]["points"][0].__setitem__("kv", "ssd"), "cells[1].points[0].kv", "unknown KV tier 'ssd'"),
    "unknown available tier": (lambda d: d["cells"][1]["kv"].__setitem__("available", ["none", "nvme"]),
                               "cells[1].kv.available[1]", "unknown KV tier 'nvme'"),
}


@pytest.mark.parametrize("name", list(MODULE_CASES))
def test_bad_module_in_show(tmp_path: Path, capsys, name: str) -> None:
    mutate, key, msg = MODULE_CASES[name]
    path = _module(tmp_path, mutate)
    code = main(["show", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(path) in err and key in err and msg in err.lower() + err


def test_module_that_is_not_json(tmp_path: Path, capsys) -> None:
    path = tmp_path / "m.jsx"
    path.write_text("// header\nexport const agentx = {\n \"cells\": [,]\n};\n")
    _expect_one_line(capsys, ["show", str(path)], "m.jsx", "", "")


def test_module_reencode_writes_nothing_on_error(tmp_path: Path, capsys) -> None:
    path = _module(tmp_path, _set_block(1, "sglang", 2, {"ref": [99, "sglang", 0]}))
    out = tmp_path / "out.jsx"
    code = main(["export", "--from-module", str(path), "--format", "agentx", "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 2 and not out.exists() and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [path], "no temporary file left behind"


def test_bad_module_in_diff(tmp_path: Path, capsys) -> None:
    path = _module(tmp_path, _set_block(1, "dynamo", 2, {"ref": [99, "dynamo", 0]}))
    code = main(["diff", "--cookbook", str(path), "--source", str(CORPUS / "inferencex")])
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1 and str(path) in err


# --- manifests: build and export write nothing -------------------------------------------------------

def _bad_manifest(tmp_path: Path, old: str, new: str) -> Path:
    shutil.copytree(SOURCE, tmp_path / "inferencex")
    text = (DATA / "cookbook.yaml").read_text()
    assert old in text
    path = tmp_path / "cookbook.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


MANIFEST_CASES = {
    "yaml syntax": ("title: DeepSeek", "title: [DeepSeek", "(top)", "YAML syntax"),
    "unknown key": ("    title: DeepSeek-V4.1-Flash\n", "    flavour: x\n    title: DeepSeek-V4.1-Flash\n", "flavour", "unknown key"),
    "wrong type": ("attempt: 1", "attempt: first", "attempt", "integer"),
    "bad commit": ("commit: 2bc599fc4149e0d960c65d4deb528fd55cf282af", "commit: 2BC599", "commit", "hex"),
    "unknown key in config": ("key: dsv41flash-fp4-gb300-sglang-agentic-dspark", "key: dsv41-nope", "key", "unknown config key"),
    "python tag": ("title: DeepSeek", "title: !!python/name:os.system", "title", "could not determine a constructor"),
    "source name too long": ("source: inferencex", "source: " + "x" * 5000, "source", "cannot be read: File name too long"),
    # values that become file names, nav titles or URLs (issue 17: these ended in MkDocs' own error lines,
    # naming the package's mkdocs.yml or a deleted scratch folder)
    "two pages for one model": ("      - key: dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg",
                                "  - model: deepseek-ai/DeepSeek-V4.1-Flash\n    configs:\n"
                                "      - key: dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg", "pages[1].model", "one page"),
    "two models, one page folder": ("      - key: dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg",
                                    "  - model: someone/deepseek_v4.1_flash\n    configs:\n"
                                    "      - key: dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg", "pages[1].model", "folder deepseek-v4-1-flash/"),
    "empty model": ("model: deepseek-ai/DeepSeek-V4.1-Flash", "model: ''", "pages[0].model", "Hugging Face id"),
    "model of 10,000 characters": ("model: deepseek-ai/DeepSeek-V4.1-Flash", "model: " + "x" * 10_000, "pages[0].model", "(10000 characters)"),
    "model with a path": ("model: deepseek-ai/DeepSeek-V4.1-Flash", "model: ../../etc/passwd", "pages[0].model", "Hugging Face id"),
    "page title of 10,000 characters": ("    title: DeepSeek-V4.1-Flash\n", f"    title: {'x' * 10_000}\n", "pages[0].title", "at most 200 characters"),
    "site title with a line break": ("title: LLM serving cookbook (cookbookgen example)", 'title: "a\\nb"', "title", "control character"),
    "blank site title": ("title: LLM serving cookbook (cookbookgen example)", "title: ' '", "title", "must not be empty"),
    "config keys with one anchor": ("key: dsv41flash-fp4-gb300-sglang-agentic-dspark", "key: dsv41flash_fp4_gb300_dynamo_sglang_agentic_agg",
                                    "configs[2].key", "page anchors of the config at line 12"),
    "repo not a web address": ("repo: https://github.com/SemiAnalysisAI/InferenceX", "repo: javascript:alert(1)", "repo", "http(s) URL"),
    # metrics the tables, charts and cookbook.json cannot show (these ended in a traceback from the chart's axes)
    "metric not a number": ("tp4/c1: {throughput_per_gpu: 7846.0,", "tp4/c1: {throughput_per_gpu: .nan,",
                            "configs[0].metrics.tp4/c1.throughput_per_gpu", "finite number"),
    "infinite metric": ("p90_e2el_s: 8.132,", "p90_e2el_s: -.inf,", "configs[0].metrics.tp4/c1.p90_e2el_s", "finite number"),
    "metric past any chart": ("tp4/c1: {throughput_per_gpu: 7846.0,", "tp4/c1: {throughput_per_gpu: 1e308,",
                              "configs[0].metrics.tp4/c1.throughput_per_gpu", "finite number"),
}


@pytest.mark.parametrize("name", list(MANIFEST_CASES))
def test_bad_manifest_in_build_writes_nothing(tmp_path: Path, capsys, name: str) -> None:
    old, new, key, msg = MANIFEST_CASES[name]
    manifest = _bad_manifest(tmp_path, old, new)
    out = tmp_path / "site"
    _expect_one_line(capsys, ["build", "--cookbook", str(manifest), "--out", str(out)], "cookbook.yaml", key, msg)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cookbook.yaml", "inferencex"], "no scratch folder left"


@pytest.mark.parametrize("name", ["wrong type", "bad commit", "unknown key in config"])
def test_bad_manifest_in_export_writes_nothing(tmp_path: Path, capsys, name: str) -> None:
    old, new, key, msg = MANIFEST_CASES[name]
    manifest = _bad_manifest(tmp_path, old, new)
    out = tmp_path / "out.jsx"
    _expect_one_line(capsys, ["export", "--cookbook", str(manifest), "--format", "agentx", "--out", str(out)], "cookbook.yaml", key, msg)
    assert not out.exists()


@pytest.mark.parametrize("name", ["yaml syntax", "unknown key in config"])
def test_bad_manifest_in_diff(tmp_path: Path, capsys, name: str) -> None:
    old, new, key, msg = MANIFEST_CASES[name]
    manifest = _bad_manifest(tmp_path, old, new)
    _expect_one_line(capsys, ["diff", "--cookbook", str(manifest)], "cookbook.yaml", key, msg)


def test_build_refuses_to_replace_a_foreign_folder(tmp_path: Path, capsys) -> None:
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("precious")
    _expect_one_line(capsys, ["build", "--out", str(out)], "thesis", "--out", "refusing to replace")
    assert (out / "chapter1.tex").read_text() == "precious"


# --- server logs ------------------------------------------------------------------------------------

LOG_CASES = {
    "unterminated string": "server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V4.1-Flash, tp_size=4)",
    "unbalanced dict": "server_args=ServerArgs(model_path='m', json_model_override_args={'a': [1, 2}, tp_size=4)",
    "missing value": "server_args=ServerArgs(model_path=, tp_size=4)",
    "no closing paren": "server_args=ServerArgs(model_path='m', tp_size=4",
}


@pytest.mark.parametrize("name", list(LOG_CASES))
def test_bad_server_log_line(tmp_path: Path, capsys, name: str) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "worker_0.out").write_text("starting\n[2026-10-16 08:12:01 TP0] " + LOG_CASES[name] + "\n")
    _expect_one_line(capsys, ["diff", "--logs", str(logs)], "worker_0.out:2", "ServerArgs", "")


def test_export_paths_from_model_names_stay_inside_the_output_folder() -> None:
    from cookbookgen.agentx.encode import module_path
    from cookbookgen.cells.model import Cookbook, Page

    for model, expected in [("deepseek-ai/DeepSeek-V4.1-Flash", "agentx/deepseek-ai/deepseek-v4.1-flash.jsx"),
                            ("../../etc/passwd", "agentx/etc/passwd.jsx"), ("a/../..", "agentx/a/model.jsx"),
                            ("/abs/x y", "agentx/abs/x-y.jsx")]:
        page = Page(model=model, slug="s", title="t", hardware=(), cells=())
        path = module_path(Cookbook(title="t", repo="r", generated_on=None, pages=(page,)))
        assert path == expected and ".." not in path.split("/")


def test_module_errors_name_the_line_of_the_cell(tmp_path: Path, capsys) -> None:
    path = _module(tmp_path, _set_block(1, "sglang", 2, {"ref": [99, "sglang", 0]}))
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    m = LINE.match(err)
    assert m and m["key"].startswith("cells[1]")
    assert path.read_text().splitlines()[int(m["line"]) - 1].strip().startswith('"id": "dsv4-fp4-gb300-dynamo-sglang-agentic-disagg#0"')


def test_module_with_a_duplicate_cell_id(tmp_path: Path, capsys) -> None:
    path = _module(tmp_path, lambda d: d["cells"][2].__setitem__("id", d["cells"][1]["id"]))
    _expect_one_line(capsys, ["show", str(path)], "bad.jsx", "cells[2].id", "duplicate cell id")


def test_a_path_the_system_refuses_is_one_line(tmp_path: Path, capsys) -> None:
    # A name longer than the file system allows: the OS error becomes one line naming the path, exit 2.
    name = str(tmp_path / ("x" * 5000 + ".yaml"))
    code = main(["diff", "--cookbook", name])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.splitlines() == [f"cookbookgen: error: {name}: File name too long"]


def test_module_cell_field_of_the_wrong_type_in_diff(tmp_path: Path, capsys) -> None:
    # Found by the module fuzzer: an image that is not text reached the image comparison and crashed.
    path = _module(tmp_path, lambda d: d["cells"][1].__setitem__("image", True))
    code = main(["diff", "--cookbook", str(path), "--source", str(CORPUS / "inferencex")])
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "cells[1].image: must be a string (received True)" in err


def test_module_names_with_a_newline_stay_in_their_comments(tmp_path: Path, capsys) -> None:
    # `show --format text` prints the module's cell ids in comment lines: a newline must not end one.
    path = _module(tmp_path, lambda d: d["cells"][0].__setitem__("id", "cell\n(touch /tmp/pwned)"))
    assert main(["show", str(path), "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    assert "# == cell\\x0a(touch /tmp/pwned) " in text
