"""`cookbookgen diff SITE_DIR` checks every form of a command a reader can copy from a built site: the tab
blocks, the page's "Copy all" script, each downloadable `launch-*.sh` and `cookbook.json`. The bundled example is
built once; each test edits one flag in one form of a copy of it and the diff must fail naming that form."""

from __future__ import annotations

import argparse
import datetime as dt
import html
import io
import json
import shutil
from pathlib import Path

import pytest

from cookbookgen.commands.diff import run_diff
from cookbookgen.diff.site import script_blocks
from cookbookgen.publish import site

ROOT = Path(__file__).resolve().parents[1]
FLAG = "--mem-fraction-static 0.8"       # the GB300 TP4 worker's, on one point of the agg cell
CELL = "dsv41flash-fp4-gb300-sglang-agentic-dspark-0"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build") / "site"
    site.build_site(ROOT / "data" / "cookbook.yaml", out, site.Dates(date=dt.date(2026, 11, 29)), show_progress=False)
    return out


def _diff(path: Path) -> tuple[int, list[dict]]:
    out = io.StringIO()
    args = argparse.Namespace(cookbook=[path], source=ROOT / "data" / "inferencex", config=None, logs=None, format="json", policy=None)
    status = run_diff(args, out)
    return status, [f for f in json.loads(out.getvalue())["findings"] if f["cls"] == "mismatch"]


def _copy(built: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(built, tmp_path / "site"))


def test_the_built_site_is_at_parity_in_every_form(built: Path) -> None:
    status, bad = _diff(built)
    assert (status, bad) == (0, [])
    scripts = sorted(built.rglob("launch-*.sh"))
    assert len(scripts) == 82 and all(script_blocks(p.read_text()) for p in scripts)


def test_an_edited_launch_script_fails(built: Path, tmp_path: Path) -> None:
    copy = _copy(built, tmp_path)
    script = next(p for p in sorted(copy.rglob(f"launch-{CELL}-*.sh")) if FLAG in p.read_text())
    script.write_text(script.read_text().replace(FLAG, "--mem-fraction-static 0.95", 1))
    status, bad = _diff(copy)
    name = str(script.relative_to(copy))
    assert status == 1 and [(f["item"], f["recipe"], f["cookbook"]) for f in bad] == [
        (f"{name}: args", "page --mem-fraction-static 0.8", f"{name} --mem-fraction-static 0.95")]


def test_an_edited_copy_all_script_fails(built: Path, tmp_path: Path) -> None:
    copy = _copy(built, tmp_path)
    page = copy / "deepseek-v4-1-flash" / CELL / "index.html"
    text = page.read_text()
    start = text.index(f'id="{CELL}-c1-all"')
    edited = text[:start] + text[start:].replace(html.escape(FLAG), html.escape("--mem-fraction-static 0.95"), 1)
    assert edited != text
    page.write_text(edited)
    status, bad = _diff(copy)
    assert status == 1 and [(f["point"], f["item"], f["cookbook"]) for f in bad] == [
        ("tp4/c1", f"Copy all of {CELL}-c1: args", f"Copy all of {CELL}-c1 --mem-fraction-static 0.95")]


def test_edited_cookbook_json_blocks_fail(built: Path, tmp_path: Path) -> None:
    copy = _copy(built, tmp_path)
    data = json.loads((copy / "cookbook.json").read_text())
    point = next(p for page in data["pages"] for c in page["cells"] for p in c["points"] if c["slug"] == CELL and p["id"] == "tp4/c1")
    worker = next(b for b in point["blocks"] if b["kind"] == "worker")
    worker["env"]["SGLANG_DEFAULT_THINKING"] = "0"
    (copy / "cookbook.json").write_text(json.dumps(data))
    status, bad = _diff(copy)
    assert status == 1 and [(f["item"], f["recipe"], f["cookbook"]) for f in bad] == [
        ("cookbook.json: env", "page SGLANG_DEFAULT_THINKING=1", "cookbook.json SGLANG_DEFAULT_THINKING=0")]


def test_an_edited_tab_block_fails(built: Path, tmp_path: Path) -> None:
    """The tab is what was compared with the recipe: an edit there is a recipe mismatch, and every other form
    now disagrees with the page."""
    copy = _copy(built, tmp_path)
    page = copy / "deepseek-v4-1-flash" / CELL / "index.html"
    text = page.read_text()
    start = text.index('data-cell="dsv41flash-fp4-gb300-sglang-agentic-dspark#0" data-point="tp4/c1"')
    page.write_text(text[:start] + text[start:].replace(html.escape(FLAG), html.escape("--mem-fraction-static 0.95"), 1))
    status, bad = _diff(copy)
    assert status == 1 and ("agg", "--mem-fraction-static", "0.95") in {(f["role"], f["item"], f["cookbook"]) for f in bad}
    assert {f["item"].split(":")[0] for f in bad if f["kind"] == "copy"} == {
        "cookbook.json", f"Copy all of {CELL}-c1", f"deepseek-v4-1-flash/launch-{CELL}-c1.sh"}


def test_a_missing_launch_script_fails(built: Path, tmp_path: Path) -> None:
    copy = _copy(built, tmp_path)
    script = copy / "deepseek-v4-1-flash" / f"launch-{CELL}-c1.sh"
    script.unlink()
    status, bad = _diff(copy)
    assert status == 1 and [(f["item"], f["detail"]) for f in bad] == [(f"deepseek-v4-1-flash/launch-{CELL}-c1.sh", "missing from the site")]
