"""publish.site and `cookbookgen build`: the built HTML, downloads, links, search, atomic replacement."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.manifest import slugify
from cookbookgen.cells.model import Cookbook, Exclusion
from cookbookgen.cells.variants import with_variants
from cookbookgen.commands.site import register, run_build
from cookbookgen import owned
from cookbookgen.errors import CookbookError
from cookbookgen.publish import pages, site
from cookbookgen.render.model import Block
from cookbookgen.render.shell import format_block

from conftest import bundled_keys

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "data" / "cookbook.yaml"
DATE = dt.date(2026, 11, 29)
HOSTILE = "<script>alert(1)</script>"


class Html(HTMLParser):
    """What the tests need from a built page: ids, links, code text by block id, tags in the article."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.fetched: list[str] = []        # what a browser loads with the page: src, <link href>
        self.codes: dict[str, str] = {}
        self.article_tags: list[tuple[str, dict[str, str]]] = []
        self.tables: list[list[int]] = []   # per table in the article: cells per row
        self._block: str | None = None
        self._code: list[str] | None = None
        self._in_article = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if a.get("id"):
            self.ids.add(a["id"])
        self.links += [a[k] for k in ("href", "src") if k in a]
        self.fetched += [a[k] for k in ("href", "src") if k in a and (k == "src" or tag == "link")]
        if tag == "div" and "highlight" in a.get("class", "").split() and a.get("id"):
            self._block = a["id"]
        if tag == "code" and self._block:
            self._code = []
        if tag == "article":
            self._in_article = True
        if self._in_article:
            self.article_tags.append((tag, a))
            if tag == "table":
                self.tables.append([])
            if tag == "tr":
                self.tables[-1].append(0)
            if tag in ("td", "th"):
                self.tables[-1][-1] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "code" and self._code is not None and self._block:
            self.codes[self._block] = "".join(self._code)
            self._code, self._block = None, None
        if tag == "article":
            self._in_article = False

    def handle_data(self, data: str) -> None:
        if self._code is not None:
            self._code.append(data)


def parse(path: Path) -> Html:
    parser = Html()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def cookbook() -> Cookbook:
    return with_variants(load_cookbook(MANIFEST))  # what `cookbookgen build` publishes


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build") / "site"
    site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    return out


def _page_html(out: Path, cookbook: Cookbook) -> Html:
    """Every deployment page of the first model, read as one (ids, links and code blocks together)."""
    parser = Html()
    for cell in cookbook.pages[0].cells:
        parser.feed((out / cookbook.pages[0].slug / cell.slug / "index.html").read_text(encoding="utf-8"))
    return parser


# --- commands in the HTML ---------------------------------------------------------------------------

def test_every_code_block_equals_the_rendered_block(built: Path, cookbook: Cookbook) -> None:
    html = _page_html(built, cookbook)
    checked = 0
    for cell in cookbook.pages[0].cells:
        for point in cell.points:
            anchor = pages.point_anchor(cell, point)
            for i, block in enumerate(point.deployment.blocks):
                assert html.codes[f"{anchor}-{i}"] == format_block(block) + "\n", f"{anchor} block {i}"
                checked += 1
            assert html.codes[f"{anchor}-all"] == (built / cookbook.pages[0].slug / pages.script_name(cell, point)).read_text()
    assert checked >= 30


def test_every_copy_all_and_script_passes_bash_n(built: Path, cookbook: Cookbook) -> None:
    html = _page_html(built, cookbook)
    copies = [text for key, text in html.codes.items() if key.endswith("-all")]
    scripts = sorted(built.rglob("*.sh"))
    cells = cookbook.pages[0].cells
    every = [c for p in cookbook.pages for c in p.cells]
    sglang = [c for c in every if c.config_key in bundled_keys("sglang")]
    assert len(copies) == sum(len(c.points) for c in cells)     # derived variants: downloads, drawn by cookbook.js
    assert len(scripts) == 2 * sum(len(c.points) + len(c.variants) for c in every)     # launch script and Slurm job each
    assert sum(len(c.variants) for c in every) == 5 * sum(len(c.points) for c in sglang)     # SGLang's router and KV tiers
    for text in copies + [p.read_text() for p in scripts]:
        result = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def test_cells_and_points_have_stable_anchors(built: Path, cookbook: Cookbook) -> None:
    html = _page_html(built, cookbook)
    for cell in cookbook.pages[0].cells:
        assert cell.slug in html.ids
        assert {pages.point_anchor(cell, p) for p in cell.points} <= html.ids
    assert pages.hardware_anchor("gb300") in parse(built / cookbook.pages[0].slug / "index.html").ids


def test_downloads_and_json_are_present_and_linked(built: Path, cookbook: Cookbook) -> None:
    page = cookbook.pages[0]
    html = _page_html(built, cookbook)
    for cell in page.cells:
        for point in cell.points:
            assert f"../{pages.script_name(cell, point)}" in html.links
        assert all(f"../launch-{pages.variant_anchor(cell, v)}.sh" in html.links for v in cell.variants)
    assert "../cookbook.json" in parse(built / page.slug / "index.html").links
    assert "cookbook.json" in parse(built / "index.html").links
    doc = json.loads((built / "cookbook.json").read_text())
    assert sum(len(c["points"]) for p in doc["pages"] for c in p["cells"]) == sum(len(c.points) for p in cookbook.pages for c in p.cells)


def test_chart_svgs_are_built_and_shown(built: Path, cookbook: Cookbook) -> None:
    html = parse(built / cookbook.pages[0].slug / "index.html")
    charts = [a["src"] for tag, a in html.article_tags if tag == "img"]
    assert charts == ["pareto-gb300-latency.svg", "pareto-gb300-interactivity.svg"]
    assert all((built / cookbook.pages[0].slug / c).is_file() for c in charts)


# --- links, search, offline -------------------------------------------------------------------------

def _local(link: str) -> bool:
    parts = urlsplit(link)
    return not parts.scheme and not link.startswith("//")


def test_internal_links_resolve_to_files_and_anchors(built: Path) -> None:
    pages_html = {p: parse(p) for p in built.rglob("*.html")}
    broken = []
    for path, html in pages_html.items():
        for link in filter(_local, html.links):
            parts = urlsplit(link)
            base = built if parts.path.startswith("/") else path.parent     # 404.html links from the site root
            target = (base / unquote(parts.path).lstrip("/")).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(built)}: {link} (no file)")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in pages_html[target].ids:
                broken.append(f"{path.relative_to(built)}: {link} (no anchor)")
    assert broken == []


def test_search_index_is_built_for_offline_use(built: Path) -> None:
    index = json.loads((built / "search" / "search_index.json").read_text())
    text = " ".join(doc["text"] for doc in index["docs"])
    assert (built / "search" / "search_index.js").read_text().startswith("var __index = ")
    # A flag is found through the flag index, which names every deployment that sets it; the command
    # blocks themselves stay out of the index (every page repeats them, per point and variant).
    assert [d["location"] for d in index["docs"] if "--speculative-dspark-block-size" in d["text"]] == ["flags.html"]
    assert "dynamo.frontend" not in text and "dynamo.frontend" in (built / "deepseek-v4-1-flash" / "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg-0" / "index.html").read_text()


def test_pages_fetch_nothing_from_the_network(built: Path) -> None:
    for path in built.rglob("*.html"):
        html = parse(path)
        text = path.read_text()
        assert "fonts.googleapis.com" not in text and "unpkg.com" not in text, path
        assert [u for u in html.fetched if u.startswith(("http:", "https:", "//"))] == [], path   # links are clicked, not loaded


# --- escaping end to end ----------------------------------------------------------------------------

def _hostile(cookbook: Cookbook) -> tuple[Cookbook, Block]:
    page = cookbook.pages[0]
    cell = page.cells[-1]
    point = cell.points[0]
    evil = Block(kind="worker", role="agg", title=f'worker "{HOSTILE}"', cmd="python3 -m sglang.launch_server",
                 args=(("--chat-template", HOSTILE), ("--sep", "a|b"), ("--tick", "```")), env={"EVIL": "<x>|y"},
                 where=f"on {HOSTILE} | any node")
    dep = point.deployment.model_copy(update={"blocks": point.deployment.blocks + (evil,)})
    bad = Exclusion(path="a|b", cls="harness-only", reason=f"{HOSTILE} | r", value="x|`y`", points=("c1|",))
    new_cell = cell.model_copy(update={"label": f"Agg {HOSTILE} | x", "notes": (f"{HOSTILE} a|b",),
                                       "exclusions": cell.exclusions + (bad,),
                                       "points": (point.model_copy(update={"deployment": dep}),) + cell.points[1:]})
    new_page = page.model_copy(update={"cells": page.cells[:-1] + (new_cell,), "title": f"Model {HOSTILE}"})
    return cookbook.model_copy(update={"pages": (new_page,), "title": f"Book {HOSTILE} & co"}), evil


def test_markup_in_a_recipe_is_escaped_in_html_and_exact_in_the_copy(cookbook: Cookbook, tmp_path: Path) -> None:
    evil_book, evil = _hostile(cookbook)
    site.publish(evil_book, tmp_path / "site", DATE)
    html = _page_html(tmp_path / "site", evil_book)
    assert [t for t, a in html.article_tags if t in ("script", "iframe", "object") and a.get("type") != "application/json"] == []
    assert all(a["class"] == "cb-variants" for t, a in html.article_tags if t == "script")     # data only, never run
    cell = evil_book.pages[0].cells[-1]
    anchor = pages.point_anchor(cell, cell.points[0])
    assert html.codes[f"{anchor}-{len(cell.points[0].deployment.blocks) - 1}"] == format_block(evil) + "\n"
    assert f"--chat-template '{HOSTILE}'" in html.codes[f"{anchor}-all"]
    assert html.tables and all(len(set(rows)) == 1 for rows in html.tables)     # no cell split by a `|`
    for path in (tmp_path / "site").rglob("*.html"):
        assert "<script>alert" not in path.read_text(), path


# --- failures leave the previous site ---------------------------------------------------------------

def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_template_error_leaves_the_previous_site(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "site"
    site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    before = _snapshot(out)
    real = site.read_templates
    monkeypatch.setattr(site, "read_templates", lambda folder: {**real(folder), "model.md.j2": "# x\n{% if %}\n"})
    with pytest.raises(CookbookError) as info:
        site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    assert info.value.problems[0].file == "templates/model.md.j2"
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]      # no scratch folder left


def test_a_strict_mkdocs_warning_fails_and_leaves_the_previous_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "site"
    site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    before = _snapshot(out)
    real = site.read_templates
    monkeypatch.setattr(site, "read_templates", lambda folder: {**real(folder), "flags.md.j2": "# Flags\n\n[gone](missing.md)\n"})
    with pytest.raises(CookbookError) as info:
        site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    assert any("missing.md" in p.message for p in info.value.problems)
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_refuses_to_replace_a_folder_that_is_not_a_site(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(CookbookError, match="refusing to replace"):
        site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    assert (out / "thesis.tex").read_text() == "precious"


def test_a_rebuild_replaces_the_site(tmp_path: Path) -> None:
    out = tmp_path / "site"
    site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    (out / "stale.html").write_text("old")                        # as if an earlier build had written it
    owned.write_marker(out, site.SITE_MARKER, owned.files_under(out))
    site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    assert not (out / "stale.html").exists() and (out / "index.html").is_file()


# --- the command ------------------------------------------------------------------------------------

def test_run_build_handler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["build", "--cookbook", str(MANIFEST), "--out", str(tmp_path / "out"), "--date", "2026-12-01"])
    assert run_build(args) == 0
    assert "2026-12-01" in (tmp_path / "out" / "index.html").read_text()
    assert "launch scripts" in capsys.readouterr().err


def test_run_build_missing_manifest(tmp_path: Path) -> None:
    args = argparse.Namespace(cookbook=tmp_path / "nope.yaml", out=tmp_path / "out", date=None)
    with pytest.raises(CookbookError, match="cookbook manifest not found"):
        run_build(args)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_serve_previews_the_site_and_stops_cleanly(stop: str, tmp_path: Path) -> None:
    """`cookbookgen serve` answers with the home page; Ctrl-C (SIGINT) or `kill` (SIGTERM) stops it with
    exit status 0 and no temporary folder left behind."""
    import os
    import signal
    import socket
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import argparse, pathlib; from cookbookgen.commands.site import run_serve; "
            f"run_serve(argparse.Namespace(cookbook=pathlib.Path({str(MANIFEST)!r}), host='127.0.0.1', port={port}, date=None))")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # SIGINT as a terminal delivers it, even when this test runs where it is ignored (a background job)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "TMPDIR": str(scratch)}, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        body = ""
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=2) as r:
                    body = r.read().decode()
                break
            except OSError:
                time.sleep(0.2)
        assert "LLM serving cookbook" in body
        assert list(scratch.iterdir()), "serve works in temporary folders"
    finally:
        proc.send_signal(getattr(signal, stop))
        output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, output
    assert list(scratch.iterdir()) == []


def test_the_bundled_site_covers_three_engines(built: Path) -> None:
    """The main job's site: SGLang, vLLM and TRT-LLM lanes, each point with its launch script; TRT-LLM's with
    the options files it names."""
    scripts = {p.name: p.read_text() for p in built.rglob("launch-*.sh")}
    commands = {"sglang": ("python3 -m sglang.launch_server", "python3 -m dynamo.sglang"), "vllm": ("vllm serve ",),
                "trt": ("python3 -m dynamo.trtllm",)}
    for engine, accepted in commands.items():
        keys = bundled_keys(engine)
        assert keys, engine
        for key in keys:
            mine = [text for name, text in scripts.items() if name.startswith(f"launch-{slugify(key)}-") and "-derived-" not in name]
            assert mine and all(any(c in text for c in accepted) for text in mine), key
    trt = [text for text in scripts.values() if "dynamo.trtllm" in text]
    assert all("trtllm_config_prefill.yaml" in text and "trtllm_config_decode.yaml" in text for text in trt)
