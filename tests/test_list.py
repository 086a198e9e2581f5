"""`cookbookgen list`: the configs and points of a checkout, the cells of a cookbook or module (issue 23:
there was no way to see what can be rendered)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cookbookgen.cli import main
from conftest import CORPUS, DATA, bundled_keys, sglang_manifest

AGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"
AGG_RECIPE = "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml"
POINT_KEYS = ["label", "id", "topology", "concurrency", "recipe", "selector", "problem"]
CELL_KEYS = ["id", "model", "hardware", "topology", "points"]


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def as_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    doc = json.loads(run(capsys, [*argv, "--format", "json"]))
    assert isinstance(doc, dict)
    return doc


def test_bundled_configs_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = as_json(capsys, ["list"])
    assert doc["source"] == str(DATA / "inferencex")
    configs = doc["configs"]
    assert isinstance(configs, list)
    assert sorted(c["key"] for c in configs) == sorted(bundled_keys())
    agg = next(c for c in configs if c["key"] == AGG)
    assert (agg["model"], agg["framework"]) == ("deepseek-ai/DeepSeek-V4.1-Flash", "dynamo-sglang")
    assert [list(p) for p in agg["points"]] == [POINT_KEYS] * 4
    assert [(p["label"], p["id"], p["topology"], p["concurrency"], p["selector"]) for p in agg["points"]] == [
        ("c1", "tp4/c1", "tp4", 1, "override_tp4_c1"), ("c4", "tp4/c4", "tp4", 4, "override_tp4_c4"),
        (None, "tp4/c16", "tp4", 16, "override_tp4_c16"), (None, "tp2-ep2/c16", "tp2-ep2", 16, "override_tp2_c16")]
    assert {p["recipe"] for p in agg["points"]} == {AGG_RECIPE} and {p["problem"] for p in agg["points"]} == {None}


def test_auto_selected_overrides_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    """The standalone config names no override; the listing shows the one `render` picks."""
    configs = as_json(capsys, ["list"])["configs"]
    assert isinstance(configs, list)
    dspark = next(c for c in configs if c["key"] == "dsv41flash-fp4-gb300-sglang-agentic-dspark")
    assert [p["selector"] for p in dspark["points"]] == ["override_tp4_c1", "override_tp4_c4", "override_tp4_c16", "override_tp2_c16",
                                                         "override_tp2_c32", "override_dep2_c64", "override_dep2_c128"]


def test_bundled_configs_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    text = run(capsys, ["list"])
    first = next(block for block in text.split("\n\n") if block.startswith(f"{AGG}:")).splitlines()
    assert first == [
        f"{AGG}: deepseek-ai/DeepSeek-V4.1-Flash, dynamo-sglang, 4 point(s)",
        "  POINT  ID           TOPOLOGY  RECIPE",
        f"  c1     tp4/c1       tp4       {AGG_RECIPE}:override_tp4_c1",
        f"  c4     tp4/c4       tp4       {AGG_RECIPE}:override_tp4_c4",
        f"  -      tp4/c16      tp4       {AGG_RECIPE}:override_tp4_c16",
        f"  -      tp2-ep2/c16  tp2-ep2   {AGG_RECIPE}:override_tp2_c16",
    ]
    assert text.count("\n\n") == len(bundled_keys()) - 1


def test_every_listed_point_renders(capsys: pytest.CaptureFixture[str]) -> None:
    """The ids and labels the listing gives are the ones `render --point` takes, with the same recipe."""
    configs = as_json(capsys, ["list"])["configs"]
    assert isinstance(configs, list)
    for config in configs:
        for point in config["points"]:
            for name in filter(None, (point["id"], point["label"])):
                rendered = json.loads(run(capsys, ["render", "--config", config["key"], "--point", name, "--format", "json"]))
                assert (rendered["point"], rendered["recipe"].split(":")[-1]) == (point["id"], point["selector"])


def test_cells_of_the_manifest_and_of_its_module_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = sglang_manifest(tmp_path / "in")
    from_manifest = as_json(capsys, ["list", "--cookbook", str(manifest)])
    assert main(["export", "--cookbook", str(manifest), "--out", str(tmp_path / "m.jsx")]) == 0
    capsys.readouterr()
    from_module = as_json(capsys, ["list", "--cookbook", str(tmp_path / "m.jsx")])
    assert from_manifest["cells"] == from_module["cells"]
    cells = from_manifest["cells"]
    assert isinstance(cells, list) and len(cells) == 7
    assert [list(c) for c in cells] == [CELL_KEYS] * 7
    assert cells[1] == {"id": f"{AGG}#1", "model": "deepseek-ai/DeepSeek-V4.1-Flash", "hardware": "gb300", "topology": "Agg TP2·EP2", "points": ["c16"]}


def test_listed_cells_are_what_show_takes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--cookbook", str(sglang_manifest(tmp_path / "in")), "--format", "json", "--out", str(tmp_path / "m.json")]) == 0
    capsys.readouterr()
    cells = as_json(capsys, ["list", "--cookbook", str(tmp_path / "m.json")])["cells"]
    assert isinstance(cells, list)
    for cell in cells:
        for point in cell["points"]:
            shown = json.loads(run(capsys, ["show", str(tmp_path / "m.json"), "--cell", cell["id"], "--point", point, "--format", "json"]))
            assert {(s["cell"], s["point"]) for s in shown} == {(cell["id"], point)}


def test_cells_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    lines = run(capsys, ["list", "--cookbook", str(DATA / "cookbook.yaml")]).splitlines()
    assert lines[0].split() == ["ID", "MODEL", "HARDWARE", "TOPOLOGY", "POINTS"]
    assert lines[1].split() == [f"{AGG}#0", "deepseek-ai/DeepSeek-V4.1-Flash", "gb300", "Agg", "TP4", "c1", "c4", "c16"]
    assert {line.split()[0].split("#")[0] for line in lines[1:]} == set(bundled_keys())
    assert len({line.index(line.split()[1], len(line.split()[0])) for line in lines}) == 1, "aligned"


def test_corpus_checkout_lists_every_config_and_names_missing_recipes(capsys: pytest.CaptureFixture[str]) -> None:
    """The corpus's master excerpts name recipes the excerpt does not hold: listed, with the problem.
    Both layouts' master configs count: 11 e2e configs (61 points) and 4 root-layout single-node ones (44)."""
    configs = as_json(capsys, ["list", "--source", str(CORPUS / "inferencex")])["configs"]
    assert isinstance(configs, list) and len(configs) == 15
    points = [p for c in configs for p in c["points"]]
    assert len(points) == 105
    missing = [p for p in points if p["problem"]]
    assert missing and all(": recipe file not found: " in p["problem"] for p in missing)
    assert all(p["recipe"] and p["id"].endswith(f"/c{p['concurrency']}") for p in points)
    for config in configs:
        ids = [p["id"] for p in config["points"]]
        assert len(set(ids)) == len(ids)
    text = run(capsys, ["list", "--source", str(CORPUS / "inferencex")])
    assert text.count(": recipe file not found: ") == len(missing)


def test_corpus_module(capsys: pytest.CaptureFixture[str]) -> None:
    path = CORPUS / "sglang-cookbook/agentx/zai-org/glm-5.2.jsx"
    cells = as_json(capsys, ["list", "--cookbook", str(path)])["cells"]
    assert isinstance(cells, list) and cells
    assert cells[0] == {"id": "glm5.2-fp4-gb300-dynamo-sglang-agentic-agg#0", "model": "nvidia/GLM-5.2-NVFP4", "hardware": "gb300",
                        "topology": "Agg TP8 (2 nodes)", "points": ["c1", "c2", "c4"]}
    assert len({c["id"] for c in cells}) == len(cells)


def test_bad_inputs_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--cookbook", str(tmp_path / "nope.jsx")]) == 2
    assert capsys.readouterr().err == f"cookbookgen: error: {tmp_path / 'nope.jsx'}: the file does not exist\n"
    (tmp_path / "bad.json").write_text('{"cells": [{"id": "a#0", "points": [{}]}]}')
    assert main(["list", "--cookbook", str(tmp_path / "bad.json")]) == 2
    assert capsys.readouterr().err == f"cookbookgen: error: {tmp_path / 'bad.json'}: cells: malformed module data: missing key 'concs'\n"
    assert main(["list", "--source", str(tmp_path)]) == 2
    assert "no master config" in capsys.readouterr().err


BROKEN = """
broken-rows-config:
  model: org/model
  framework: dynamo-sglang
  scenarios:
    fixed-seq-len:
      - search-space: not-a-list
unknown-framework-config:
  model: org/model
  framework: not-a-framework
  scenarios: {}
"""


def test_a_refused_config_is_listed_with_its_reason_and_the_others_go_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 31: one config that cannot be read made `list` exit 2 and list nothing; it is now listed with its
    located reason, every other config as before; `--strict` makes the run exit 1 (for CI)."""
    import shutil

    root = tmp_path / "checkout"
    shutil.copytree(DATA / "inferencex", root)
    master = root / "inferencex-e2e" / "configs" / "amd-master.yaml"
    lines = len(master.read_text(encoding="utf-8").splitlines())
    master.write_text(master.read_text(encoding="utf-8") + BROKEN, encoding="utf-8")
    configs = as_json(capsys, ["list", "--source", str(root)])["configs"]
    assert isinstance(configs, list)
    by_key = {c["key"]: c for c in configs}
    assert sorted(by_key) == sorted([*bundled_keys(), "broken-rows-config", "unknown-framework-config"])
    assert by_key["broken-rows-config"]["points"] == [] and by_key["broken-rows-config"]["problem"] == (
        f"inferencex-e2e/configs/amd-master.yaml:{lines + 7}: broken-rows-config.scenarios.fixed-seq-len[0]: "
        "expected a mapping with a `search-space` list")
    assert by_key["unknown-framework-config"]["problem"].startswith(
        f"inferencex-e2e/configs/amd-master.yaml:{lines + 10}: unknown-framework-config.framework: framework 'not-a-framework' is not supported")
    assert all(c["problem"] is None and c["points"] for k, c in by_key.items() if k in bundled_keys())
    text = run(capsys, ["list", "--source", str(root)])
    assert f"broken-rows-config: org/model, dynamo-sglang, 0 point(s): refused: inferencex-e2e/configs/amd-master.yaml:{lines + 7}:" in text
    assert main(["list", "--source", str(root), "--strict"]) == 1
    capsys.readouterr()
    assert main(["list", "--strict"]) == 0
