"""Incremental `cookbookgen build`: a build that reuses the previous site is byte for byte the full build
of the same inputs (search index included), and it keeps the atomic-replacement guarantees."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cookbookgen.errors import CookbookError
from cookbookgen.publish import site

from conftest import DATA

DATE = dt.date(2026, 11, 29)
DISAGG = "inferencex/inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/disagg-variants.yaml"
SECOND_PAGE = """  - model: deepseek-ai/DeepSeek-V4.1-Flash-Disagg
    title: Disaggregated
    configs:
"""


def _two_pages(folder: Path) -> Path:
    """The bundled example with its disaggregated config on a page of its own (two model pages)."""
    shutil.copytree(DATA, folder / "data")
    manifest = folder / "data" / "cookbook.yaml"
    text = manifest.read_text(encoding="utf-8")
    start = text.index("      - key: dsv41flash-fp4-gb300-dynamo-sglang-agentic-dspark-disagg")
    end = text.index("      - key: dsv41flash-fp4-gb300-sglang-agentic-dspark")
    manifest.write_text(text[:start] + text[end:] + SECOND_PAGE + text[start:end], encoding="utf-8")
    return manifest


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return _two_pages(tmp_path)


@pytest.fixture(scope="module")
def changed_full(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The full build, without a cache, of the two-page example after `_change_disagg`."""
    folder = tmp_path_factory.mktemp("reference")
    manifest = _two_pages(folder)
    _change_disagg(manifest)
    return _snapshot(_build(manifest, folder / "site").out)


def _build(manifest: Path, out: Path, cache: Path | None = None) -> site.BuildResult:
    return site.build_site(manifest, out, site.Dates(date=DATE), show_progress=False, cache=cache)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _change_disagg(manifest: Path, value: str = "0.71") -> None:
    recipe = manifest.parent / DISAGG
    text = recipe.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if "mem-fraction-static:" in x)
    recipe.write_text(text.replace(line, line.split(":")[0] + f": {value}", 1), encoding="utf-8")


def test_an_incremental_build_is_the_full_build(data: Path, tmp_path: Path, changed_full: dict[str, bytes]) -> None:
    out, cache = tmp_path / "site", tmp_path / "cache"
    assert _build(data, out, cache).rebuilt is None                                  # no state yet: full
    _change_disagg(data)
    result = _build(data, out, cache)
    assert result.rebuilt is not None and 0 < result.rebuilt < result.files / 2
    assert _snapshot(out) == changed_full
    index = json.loads((out / "search" / "search_index.json").read_text())
    pages = {d["location"].split("#")[0] for d in index["docs"]}
    assert {"index.html", "flags.html", "deepseek-v4-1-flash/index.html", "deepseek-v4-1-flash-disagg/index.html"} <= pages


def test_an_unchanged_rebuild_processes_nothing(data: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "site", tmp_path / "cache"
    _build(data, out, cache)
    before = _snapshot(out)
    assert _build(data, out, cache).rebuilt == 0
    assert _snapshot(out) == before


def test_a_site_changed_by_hand_gets_a_full_build(data: Path, tmp_path: Path, changed_full: dict[str, bytes]) -> None:
    out, cache = tmp_path / "site", tmp_path / "cache"
    _build(data, out, cache)
    (out / "index.html").write_text("edited")
    _change_disagg(data)
    assert _build(data, out, cache).rebuilt is None
    assert _snapshot(out) == changed_full


def test_a_new_page_gets_a_full_build(data: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "site", tmp_path / "cache"
    _build(data, out, cache)
    text = data.read_text(encoding="utf-8")
    data.write_text(text.replace("    title: Disaggregated\n", "    title: Disaggregated and more\n"), encoding="utf-8")
    assert _build(data, out, cache).rebuilt is None                                  # the nav changed
    assert _snapshot(out) == _snapshot(_build(data, tmp_path / "full").out)


def test_a_failed_incremental_build_leaves_the_previous_site(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             changed_full: dict[str, bytes]) -> None:
    out, cache = tmp_path / "site", tmp_path / "cache"
    _build(data, out, cache)
    before = _snapshot(out)
    _change_disagg(data)
    real = site.read_templates
    monkeypatch.setattr(site, "read_templates", lambda folder: {**real(folder), "flags.md.j2": "# Flags\n\n[gone](missing.md)\n"})
    with pytest.raises(CookbookError) as info:
        _build(data, out, cache)
    assert any("missing.md" in p.message for p in info.value.problems)
    assert _snapshot(out) == before                                                  # hard links were never written through
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "data", "site"]   # no scratch folder left
    monkeypatch.setattr(site, "read_templates", real)
    assert _build(data, out, cache).rebuilt is not None                              # the state still matches the site
    assert _snapshot(out) == changed_full


def test_links_from_unchanged_pages_must_still_find_their_anchors() -> None:
    state = site.SiteState(context="", docs={}, dest={}, order=["index.md", "a/index.md"], urls={}, anchors={},
                           links={"index.md": {"a/index.md": {"cell-1": "a/index.md#cell-1"}}}, site={}, pages={})
    recorder = site._Recorder()
    recorder.anchors = {"a/index.md": ["cell-1", "cell-2"]}
    assert site._links_hold(state, recorder, {"a/index.md"})
    recorder.anchors = {"a/index.md": ["cell-2"]}
    assert not site._links_hold(state, recorder, {"a/index.md"})                     # -> a full build reports it
    assert site._links_hold(state, recorder, {"a/index.md", "index.md"})            # rebuilt pages: MkDocs checks them


def test_kept_docs_build_the_same_site_with_plain_mkdocs(data: Path, tmp_path: Path) -> None:
    out, keep = tmp_path / "site", tmp_path / "keep"
    site.build_site(data, out, site.Dates(date=DATE), show_progress=False, keep_docs=keep)
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(keep / "mkdocs.yml"), "-d", str(tmp_path / "plain")],
                   check=True, capture_output=True)
    built = _snapshot(out)
    assert built.pop(site.SITE_MARKER).startswith(b".cookbookgen-site 1 sha256:")   # what plain MkDocs does not write
    assert _snapshot(tmp_path / "plain") == built
    site.build_site(data, out, site.Dates(date=DATE), show_progress=False, keep_docs=keep)   # its own docs: replaced
