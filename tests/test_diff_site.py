"""`cookbookgen diff SITE_DIR`: the commands read back from a built site's HTML, paired through its cookbook.json."""

from __future__ import annotations

import argparse
import html
import io
import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.model import Cookbook
from cookbookgen.commands.diff import run_diff
from cookbookgen.diff.site import _split, code_blocks, parse_block_text
from cookbookgen.pipeline import render_all_points
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.shell import format_block

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "corpus"


@pytest.fixture(scope="module")
def cookbook() -> Cookbook:
    return load_cookbook(ROOT / "data" / "cookbook.yaml")


def _page(cookbook: Cookbook, edit: tuple[str, str] | None = None, attrs: bool = True) -> str:
    """A page like the site's: each block of each point in a highlight div carrying its ids."""
    parts = ["<html><body><h1>Cookbook</h1>"]
    for page in cookbook.pages:
        for cell in page.cells:
            for point in cell.points:
                for i, block in enumerate(point.deployment.blocks):
                    text = format_block(block)
                    if edit:
                        text = text.replace(*edit)
                    ids = f' data-cell="{cell.id}" data-point="{point.id}" data-block="{i}"' if attrs else ""
                    parts.append(f'<div class="highlight"{ids}><pre><span></span><code><span class="n">'
                                 f"{html.escape(text)}</span></code></pre></div>")
    return "\n".join(parts + ["</body></html>"])


def _site(tmp: Path, cookbook: Cookbook, page: str) -> Path:
    site = tmp / "site"
    site.mkdir()
    (site / "cookbook.json").write_text(json.dumps(cookbook.model_dump(mode="json")), encoding="utf-8")
    (site / "deepseek-v4-1-flash.html").write_text(page, encoding="utf-8")
    return site


def _run(site: Path) -> tuple[int, dict]:
    out = io.StringIO()
    args = argparse.Namespace(cookbook=[site], source=ROOT / "data" / "inferencex", config=None, logs=None, format="json", policy=None)
    return run_diff(args, out), json.loads(out.getvalue())


def test_built_site_commands_at_parity(tmp_path: Path, cookbook: Cookbook) -> None:
    status, doc = _run(_site(tmp_path, cookbook, _page(cookbook)))
    assert (status, doc["summary"]["cookbooks"][0]["kind"], doc["notes"]) == (0, "site", [])


def test_a_command_edited_in_the_html_is_caught(tmp_path: Path, cookbook: Cookbook) -> None:
    status, doc = _run(_site(tmp_path, cookbook, _page(cookbook, ("--hicache-ratio 1.02", "--hicache-ratio 1.2"))))
    bad = {(f["point"], f["role"], f["item"], f["cookbook"]) for f in doc["findings"] if f["cls"] == "mismatch"}
    assert bad == {("4p1d-dep2-dep16/c1228", "prefill", "--hicache-ratio", "1.2")}
    assert status == 1


def test_html_without_block_ids_falls_back_to_cookbook_json_and_says_so(tmp_path: Path, cookbook: Cookbook) -> None:
    status, doc = _run(_site(tmp_path, cookbook, _page(cookbook, ("--hicache-ratio 1.02", "--hicache-ratio 1.2"), attrs=False)))
    assert status == 0
    assert doc["notes"] == ["the site's HTML code blocks carry no data-cell / data-point / data-block attributes; "
                            "compared the commands of cookbook.json instead"]


def test_a_command_left_out_of_a_page_that_shows_the_others_is_caught(tmp_path: Path, cookbook: Cookbook) -> None:
    cell = next(c for page in cookbook.pages for c in page.cells if c.id == "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg#1")
    point = cell.points[0]
    worker = next(i for i, b in enumerate(point.deployment.blocks) if b.kind == "worker")
    ids = f' data-cell="{cell.id}" data-point="{point.id}" data-block="{worker}"'
    page = _page(cookbook)
    assert page.count(ids) == 1
    status, doc = _run(_site(tmp_path, cookbook, page.replace(ids, "")))
    bad = {(f["point"], f["role"], f["item"]) for f in doc["findings"] if f["cls"] == "mismatch"}
    assert status == 1 and {(point.id, "agg", "cmd"), (point.id, "agg", "--mem-fraction-static")} <= bad


def test_code_blocks_take_ids_from_ancestors() -> None:
    page = '<section data-cell="k#0"><div data-point="tp4/c1" data-block="2"><pre><code>a &amp;&amp; b</code></pre></div></section>'
    assert code_blocks(page) == {("k#0", "tp4/c1", 2): "a && b"}


def _all_blocks() -> list:
    policy = load_policy()
    out = []
    for root, keys in ((ROOT / "data" / "inferencex", ("dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg",
                                                       "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg",
                                                       "dsv41flash-fp4-gb300-sglang-agentic-dspark")),
                       (CORPUS / "inferencex", ("dsv4-fp4-gb300-dynamo-sglang-agentic-disagg",))):
        for key in keys:
            out.extend(b for rp in render_all_points(Workspace(root), policy, key) for b in rp.deployment.blocks)
    return out


def test_block_text_reads_back_to_the_same_command() -> None:
    blocks = _all_blocks()
    assert any(b.files for b in blocks) and any(b.preamble for b in blocks)
    for block in blocks:
        parsed = parse_block_text(format_block(block))
        assert parsed == {"cmd": block.cmd, "args": block.args, "env": block.env, "preamble": block.preamble, "files": block.files}, block.title


def test_the_built_site_is_read_back_from_its_html(tmp_path: Path, cookbook: Cookbook) -> None:
    from cookbookgen.publish.site import publish

    site = tmp_path / "site"
    publish(cookbook, site, cookbook.generated_on or __import__("datetime").date(2026, 11, 29))
    status, doc = _run(site)
    assert (status, doc["summary"]["cookbooks"][0]["kind"], doc["notes"]) == (0, "site", [])
    page = site / "deepseek-v4-1-flash" / "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg-0" / "index.html"
    shown = "--hicache-ratio 1.02 \\\n"
    text = page.read_text(encoding="utf-8")
    assert text.count(shown) == 4  # c1228's two prefill blocks, then both again in its "copy all" block
    page.write_text(text.replace(shown, shown.replace(".02", ".20"), 1), encoding="utf-8")
    status, doc = _run(site)
    bad = [(f["point"], f["role"], f["item"], f["cookbook"]) for f in doc["findings"] if f["cls"] == "mismatch" and f["kind"] != "copy"]
    assert (status, bad) == (1, [("4p1d-dep2-dep16/c1228", "prefill", "--hicache-ratio", "1.20")])
    # what the reader copies from the other forms (the page's Copy all, the launch script, cookbook.json) now
    # differs from the tab, and each says so
    copies = {f["item"].partition(":")[0] for f in doc["findings"] if f["kind"] == "copy"}
    anchor = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg-0-c1228"
    assert copies == {"cookbook.json", f"Copy all of {anchor}", f"deepseek-v4-1-flash/launch-{anchor}.sh"}


def test_void_and_unclosed_elements_do_not_leak_block_ids() -> None:
    page = ('<div data-cell="k#0" data-point="p" data-block="0"><img src="x"><br><pre><code>one</code></pre><p>open</div>'
            '<div class="highlight"><pre><code>copy all</code></pre></div>')
    assert code_blocks(page) == {("k#0", "p", 0): "one"}


def test_a_label_that_contradicts_the_options_is_caught(tmp_path: Path, cookbook: Cookbook) -> None:
    """The TRT-LLM cell labelled `TP1` as it once was: the diff reads each role's part against the recipe's options."""
    data = cookbook.model_dump(mode="json")
    cells = [c for page in data["pages"] for c in page["cells"] if c["label"] == "Disagg 3P1D · prefill DEP4 · decode DEP16"]
    assert len(cells) == 1
    cells[0]["label"] = "Disagg 3P1D · prefill TP1 · decode TP1"
    (tmp_path / "cookbook.json").write_text(json.dumps(data), encoding="utf-8")
    out = io.StringIO()
    args = argparse.Namespace(cookbook=[tmp_path / "cookbook.json"], source=ROOT / "data" / "inferencex", config=None, logs=None,
                              format="json", policy=None)
    status = run_diff(args, out)
    bad = {(f["item"], f["recipe"], f["cookbook"]) for f in json.loads(out.getvalue())["findings"] if f["cls"] == "mismatch"}
    assert status == 1 and bad == {("label prefill", "DEP4", "TP1"), ("label decode", "DEP16", "TP1"),
                                   ("label prefill GPUs", "4", "1"), ("label decode GPUs", "16", "1")}


_SHELL_CHARS = [chr(c) for c in range(0x20, 0x7f)] + ["\t", "\n", "\r", "\x0b", "\x0c", "\x1f", "\xa0", "\u2003", "é"]


@given(st.text(alphabet=st.sampled_from(_SHELL_CHARS), max_size=60))
def test_split_is_shlex_split(line: str) -> None:
    """The site reader's fast split of plain lines gives what `shlex.split` gives, and fails where it fails."""
    try:
        want: object = shlex.split(line)
    except ValueError as exc:
        want = str(exc)
    try:
        got: object = _split(line)
    except ValueError as exc:
        got = str(exc)
    assert got == want


def test_parse_block_text_gives_each_caller_its_own_dicts() -> None:
    """A block text read again comes from the memo, but as new env and files dicts: changing one caller's
    copy never changes what the next caller reads."""
    text = "cat > a.json <<'EOF'\n{}\nEOF\nA=1 \\\nB='x y' \\\nexec python3 -m m \\\n  --flag 'a b' \\\n  --n 2"
    first = parse_block_text(text)
    first["env"]["A"] = "changed"          # type: ignore[index]
    first["files"]["a.json"] = "changed"   # type: ignore[index]
    first["cmd"] = "changed"
    again = parse_block_text(text)
    assert again == {"cmd": "exec python3 -m m", "args": (("--flag", "a b"), ("--n", "2")), "env": {"A": "1", "B": "x y"},
                     "preamble": (), "files": {"a.json": "{}\n"}}
