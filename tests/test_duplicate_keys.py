"""A recipe key written twice (srt-slurm recipes do it, e.g. InferenceX's kimi-k3 vLLM recipes): the later value
is used, as srtctl's yaml.safe_load takes it, and every command that reads the recipe says so with both lines:
`render` and `list` as a note on stderr (and in `list`'s JSON), `diff` as a `shadowed` finding in every report
format that never fails the gate (the compared value is the later one, so a cookbook showing the earlier one is a
mismatch on that setting itself)."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path

import pytest

from cookbookgen.cli import main
from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.commands.diff import run_diff
from cookbookgen.diff.check import check
from cookbookgen.diff.model import whole
from cookbookgen.diff.sources import published_from_cookbook_json
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
AGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"
RECIPE = "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The bundled example with `frontend.enable_multiple_frontends` written twice: true (line 51), then false (line 52)."""
    root = Path(shutil.copytree(ROOT / "data" / "inferencex", tmp_path / "inferencex"))
    recipe = root / RECIPE
    text = recipe.read_text()
    assert text.splitlines()[50] == "    enable_multiple_frontends: false"
    recipe.write_text(text.replace("    type: dynamo\n    enable_multiple_frontends: false\n",
                                   "    type: dynamo\n    enable_multiple_frontends: true\n    enable_multiple_frontends: false\n", 1))
    return root


def _note(root: Path) -> str:
    return (f"{RECIPE}:52: base.frontend.enable_multiple_frontends: duplicate key; the value at line 52 is used and the one "
            "at line 51 is ignored (srtctl's yaml.safe_load keeps the last)")


def test_list_notes_the_shadowed_value_with_both_lines(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--source", str(checkout), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    note = _note(checkout)
    assert err == f"cookbookgen: note: {note}\n"
    assert json.loads(out)["notes"] == [note]
    assert main(["list", "--source", str(checkout)]) == 0
    assert capsys.readouterr().err == f"cookbookgen: note: {note}\n"


def test_list_of_a_checkout_without_duplicates_notes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["notes"] == []


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_diff_reports_the_shadowed_value_and_still_passes(checkout: Path, fmt: str) -> None:
    out = io.StringIO()
    args = {"cookbook": [ROOT / "data" / "cookbook.yaml"], "source": checkout, "config": AGG, "logs": None, "format": fmt, "policy": None}
    status = run_diff(argparse.Namespace(**args), out)
    text = out.getvalue()
    assert status == 0, text
    where = f"{RECIPE}:52"
    if fmt == "json":
        doc = json.loads(text)
        found = [f for f in doc["findings"] if f["cls"] == "shadowed"]
        assert found == [{"config": AGG, "role": "job", "kind": "setting", "item": "base.frontend.enable_multiple_frontends",
                          "cls": "shadowed", "path": "base.frontend.enable_multiple_frontends", "where": where,
                          "detail": "duplicate key; the value at line 52 is used and the one at line 51 is ignored "
                                    "(srtctl's yaml.safe_load keeps the last)"}]
        assert doc["summary"]["classes"]["shadowed"] == 1
    else:
        line = f"{where}: base.frontend.enable_multiple_frontends: duplicate key; the value at line 52 is used and the one at line 51 is ignored"
        assert line in text
        assert "1 shadowed" in text.splitlines()[0] + text


def test_a_cookbook_showing_the_shadowed_value_is_a_mismatch_on_that_setting(checkout: Path) -> None:
    """The note never hides a difference: the compared value is the later one. The bundled cookbook (JSON, built
    from the unedited recipe) shows --mem-fraction-static 0.8; the recipe now says 0.8, then 0.7."""
    recipe = checkout / RECIPE
    recipe.write_text(recipe.read_text().replace("        mem-fraction-static: 0.8\n",
                                                 "        mem-fraction-static: 0.8\n        mem-fraction-static: 0.7\n", 1))
    cookbook = load_cookbook(ROOT / "data" / "cookbook.yaml")
    published = published_from_cookbook_json(cookbook.model_dump(mode="json"), "cookbook.json", "cookbook JSON")
    result = check(whole(published), Workspace(checkout), load_policy(), AGG)
    found = {(f.cls, f.item, f.recipe, f.cookbook) for f in result.findings if f.cls in ("mismatch", "shadowed")}
    assert ("shadowed", "base.roles.agg.args.mem-fraction-static", None, None) in found
    assert ("mismatch", "--mem-fraction-static", "0.7", "0.8") in found
