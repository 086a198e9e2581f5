"""A float reaches the command as the recipe spells it (`0.90` stays `0.90`, `1.0e-5` stays `1.0e-5`):
through the typed recipe, the policy and the renderer, in args, env and lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cookbookgen.cli import main

RECIPE = """\
name: spelling
model: {path: "hf:org/model", container: "img:1"}
resources: {gpu_type: gb300, gpus_per_node: 4}
engine: sglang
frontend: {type: sglang}
roles:
  agg:
    gpus: 4
    env:
      MY_RATIO: 0.50
    args:
      tensor-parallel-size: 4
      mem-fraction-static: 0.90
      tiny-value: 1.0e-5
      cuda-graph-bs: [1, 2.50, 8]
      plain-int: 16
      no-limit: .inf
      floor: -.Inf
      not-a-number: .NaN
      sexagesimal: 1:30.5
"""


@pytest.fixture
def rendered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    path = tmp_path / "recipe.yaml"
    path.write_text(RECIPE, encoding="utf-8")
    assert main(["render", "--recipe", str(path), "--model", "org/model", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    return next(b for b in doc["blocks"] if b["kind"] == "worker")


def test_args_keep_their_spelling(rendered: dict) -> None:
    args = {a[0]: a[1:] for a in rendered["args"]}
    assert args["--mem-fraction-static"] == ["0.90"]
    assert args["--tiny-value"] == ["1.0e-5"]
    assert args["--cuda-graph-bs"] == ["1", "2.50", "8"]
    assert args["--plain-int"] == ["16"]


def test_env_keeps_its_spelling(rendered: dict) -> None:
    assert rendered["env"]["MY_RATIO"] == "0.50"


def test_a_spelling_python_cannot_read_is_written_as_srtctl_writes_it(rendered: dict) -> None:
    # `.inf` reached the command as `.inf`, which float() (so the engine's argparse) refuses;
    # srtctl passes str(value): `inf`, `-inf`, `nan`, and 90.5 for the YAML 1.1 sexagesimal 1:30.5
    args = {a[0]: a[1:] for a in rendered["args"]}
    assert [args[f] for f in ("--no-limit", "--floor", "--not-a-number", "--sexagesimal")] == [["inf"], ["-inf"], ["nan"], ["90.5"]]
