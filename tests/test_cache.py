"""cells.cache and `diff --cache`: a cache hit is exactly a fresh render (or a fresh check), every input
of a config is in its key, and bad input leaves no cache behind."""

from __future__ import annotations

import argparse
import io
import pickle
import shutil
from pathlib import Path

import pytest

from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.cache import RenderCache, canonical, with_variants_cached
from cookbookgen.cells.variants import with_variants
from cookbookgen.commands.diff import run_diff
from cookbookgen.errors import CookbookError
from cookbookgen.recipes.load import YamlFloat, parse_yaml

from conftest import DATA

AGG = "inferencex/inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml"
AGG_KEY = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of the bundled example: its manifest."""
    shutil.copytree(DATA, tmp_path / "data")
    return tmp_path / "data" / "cookbook.yaml"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# --- the render cache -------------------------------------------------------------------------------

def test_a_hit_is_the_fresh_render_with_variants(data: Path, tmp_path: Path) -> None:
    fresh = with_variants(load_cookbook(data))
    for run in ("cold", "warm"):
        cache = RenderCache(tmp_path / "cache")
        cached = with_variants_cached(load_cookbook(data, cache=cache), cache)
        cache.commit()
        assert cached == fresh, run
        assert cached.model_dump_json() == fresh.model_dump_json(), run
        assert (cache.hits, cache.misses > 0) == ((0, True) if run == "cold" else (cache.hits, False)), run
    configs = {c.config_key for p in fresh.pages for c in p.cells}
    assert cache.hits == len(configs) + sum(len(p.cells) for p in fresh.pages)     # every config and every cell's variants
    assert (tmp_path / "cache" / ".gitignore").read_text().endswith("*\n")


def test_only_the_changed_config_is_rendered_again(data: Path, tmp_path: Path) -> None:
    cache = RenderCache(tmp_path / "cache")
    load_cookbook(data, cache=cache)
    cache.commit()
    before = dict(cache.keys)
    _edit(data.parent / AGG, "mem-fraction-static: 0.8", "mem-fraction-static: 0.81")
    again = RenderCache(tmp_path / "cache")
    cookbook = load_cookbook(data, cache=again)
    assert [k for k in before if before[k] != again.keys[k]] == [AGG_KEY]
    assert (again.hits, again.misses) == (len(before) - 1, 1)
    assert cookbook == load_cookbook(data)                               # and the result is the fresh render
    shown = {" ".join(a) for c in cookbook.pages[0].cells if c.config_key == AGG_KEY
             for p in c.points for b in p.deployment.blocks for a in b.args}
    assert "--mem-fraction-static 0.81" in shown


@pytest.mark.parametrize("what", ["manifest entry", "master entry", "policy", "changelog"])
def test_every_input_is_in_the_key(data: Path, tmp_path: Path, what: str) -> None:
    cache = RenderCache(tmp_path / "cache")
    load_cookbook(data, cache=cache)
    before = dict(cache.keys)
    if what == "manifest entry":
        _edit(data, "run: 38911006463\n        attempt: 1", "run: 38911006463\n        attempt: 2")
    elif what == "master entry":
        master = next((data.parent / "inferencex" / "inferencex-e2e" / "configs").glob("*master*.yaml"))
        _edit(master, "agg-variants.yaml:override_tp4_c1\n", "agg-variants.yaml:override_tp4_c1 \n")
        before = {k: v for k, v in before.items()}                     # whitespace only: the data is the same
    elif what == "policy":
        (data.parent / "policy.yaml").write_text("rules:\n  - {match: roles.*.env.NOT_THERE, class: harness-only, reason: test}\n")
        _edit(data, "source: inferencex\n", "source: inferencex\npolicy: policy.yaml\n")
    else:
        log = data.parent / "inferencex" / "inferencex-e2e" / "perf-changelog.yaml"
        log.write_text(log.read_text() + f"\n- config-keys: [{AGG_KEY}]\n  pr-link: https://github.com/x/y/pull/99999\n")
    again = RenderCache(tmp_path / "cache")
    load_cookbook(data, cache=again)
    changed = sorted(k for k in before if before[k] != again.keys[k])
    expected = {"manifest entry": [AGG_KEY], "master entry": [], "policy": sorted(before), "changelog": [AGG_KEY]}[what]
    assert changed == expected


def test_values_keep_their_type_and_spelling() -> None:
    assert canonical({"a": YamlFloat(0.9, "0.90")}) != canonical({"a": 0.9})
    assert canonical([1]) != canonical([True]) != canonical(["1"])
    assert canonical({"a": "b"}) != canonical({"a:b": ""})
    value = parse_yaml("x: 0.90\n", "t").data["x"]
    assert str(pickle.loads(pickle.dumps(value))) == "0.90"


def test_a_corrupt_entry_is_a_miss(data: Path, tmp_path: Path) -> None:
    cache = RenderCache(tmp_path / "cache")
    fresh = load_cookbook(data, cache=cache)
    cache.commit()
    for entry in (tmp_path / "cache" / "render").iterdir():
        entry.write_bytes(b"not a pickle")
    again = RenderCache(tmp_path / "cache")
    assert load_cookbook(data, cache=again) == fresh and again.hits == 0


def test_bad_input_leaves_no_cache(data: Path, tmp_path: Path) -> None:
    _edit(data, "key: dsv41flash-fp4-gb300-sglang-agentic-dspark", "key: nope")
    cache = RenderCache(tmp_path / "cache")
    with pytest.raises(CookbookError, match="unknown config key 'nope'"):
        load_cookbook(data, cache=cache)
    cache.discard()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


# --- diff --cache ----------------------------------------------------------------------------------

def _diff(manifest: Path, fmt: str, cache: Path | None = None, config: str | None = None) -> tuple[int, str]:
    args = argparse.Namespace(cookbook=[manifest], source=None, config=config, logs=None, format=fmt, policy=None, cache=cache)
    out = io.StringIO()
    code = run_diff(args, out)
    return code, out.getvalue()


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_diff_with_a_cache_prints_the_full_check(data: Path, tmp_path: Path, fmt: str) -> None:
    fresh = _diff(data, fmt)
    assert _diff(data, fmt, tmp_path / "cache") == fresh            # cold: every config rendered and stored
    assert _diff(data, fmt, tmp_path / "cache") == fresh            # warm: the rendered configs reused, every setting compared
    assert _diff(data, fmt, tmp_path / "cache", AGG_KEY) == _diff(data, fmt, None, AGG_KEY)


def test_diff_with_a_cache_checks_a_changed_config_again(data: Path, tmp_path: Path) -> None:
    _diff(data, "text", tmp_path / "cache")
    _edit(data.parent / AGG, "mem-fraction-static: 0.8", "mem-fraction-static: 0.81")
    after = _diff(data, "text", tmp_path / "cache")
    assert after == _diff(data, "text")


def test_diff_with_a_cache_reports_bad_input_the_same_way(data: Path, tmp_path: Path) -> None:
    _diff(data, "text", tmp_path / "cache")
    with pytest.raises(CookbookError) as fresh:
        _diff(data, "text", None, "nope")
    with pytest.raises(CookbookError) as cached:
        _diff(data, "text", tmp_path / "cache", "nope")
    assert str(cached.value) == str(fresh.value)
    _edit(data.parent / AGG, "mem-fraction-static: 0.8", "mem-fraction-static: [0.8")
    with pytest.raises(CookbookError) as fresh:
        _diff(data, "text")
    with pytest.raises(CookbookError) as cached:
        _diff(data, "text", tmp_path / "cache")
    assert str(cached.value) == str(fresh.value) and "YAML syntax" in str(fresh.value)


def test_the_diff_alone_renders_cells_without_their_page_summaries_and_never_caches_them(data: Path, tmp_path: Path) -> None:
    """Without a cache, `diff` leaves out what only a cell's page shows (spec-decode detail, exclusions,
    disclosures, notes, golden acceptance length, each point's settings report): the blocks it
    compares are the same, the cells differ in nothing else, and such cells cannot go into a cache
    that a build would read."""
    from cookbookgen.cells.assemble import load_configs
    from cookbookgen.cells.manifest import read_manifest, source_root
    from cookbookgen.diff.sources import published_from_cookbook
    from cookbookgen.policy.rules import load_policy
    from cookbookgen.recipes.workspace import Workspace

    manifest, doc = read_manifest(data)
    ws = Workspace(source_root(data, manifest, doc))
    policy = load_policy()
    keys = {source.key for spec in manifest.pages for source in spec.configs}
    full = load_configs(manifest, doc, ws, policy, None, keys)
    lean = load_configs(manifest, doc, ws, policy, None, keys, summaries=False)
    assert published_from_cookbook(lean, "c", "k") == published_from_cookbook(full, "c", "k")
    full_cells = [cell for page in full.pages for cell in page.cells]
    lean_cells = [cell for page in lean.pages for cell in page.cells]
    assert any(cell.exclusions for cell in full_cells) and any(p.golden_al for cell in full_cells for p in cell.points)
    assert all(p.deployment.settings for cell in full_cells for p in cell.points)
    assert lean_cells == [cell.model_copy(update={
        "detail": "", "exclusions": (), "disclosures": (), "notes": (),
        "points": tuple(p.model_copy(update={"golden_al": None, "deployment": p.deployment.model_copy(update={"settings": ()})})
                        for p in cell.points)}) for cell in full_cells]
    with pytest.raises(ValueError):
        load_configs(manifest, doc, ws, policy, RenderCache(tmp_path / "cache"), keys, summaries=False)


# --- the diff in forked workers -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import synth

    return synth.generate(tmp_path_factory.mktemp("synth"), 16)


def test_the_diff_in_workers_prints_what_one_process_prints(synthetic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cookbookgen.diff import check as cached

    monkeypatch.setattr(cached.os, "cpu_count", lambda: 2)
    parallel = [_diff(synthetic, fmt) for fmt in ("text", "markdown")]
    monkeypatch.setattr(cached, "MIN_PER_WORKER", 1000)
    assert [_diff(synthetic, fmt) for fmt in ("text", "markdown")] == parallel
    assert parallel[0][0] == 0 and "160 paired and compared" in parallel[0][1] and "Verdict" not in parallel[0][1]


def test_jobs_sets_the_number_of_workers_and_changes_nothing_else(synthetic: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from cookbookgen.cli import main
    from cookbookgen.diff import check as cached

    monkeypatch.setattr(cached.os, "cpu_count", lambda: 2)
    reports = []
    for jobs in (["--jobs", "1"], ["--jobs", "2"], []):
        assert main(["diff", "--cookbook", str(synthetic), *jobs]) == 0
        reports.append(capsys.readouterr().out)
    assert reports[0] == reports[1] == reports[2] and "160 paired and compared" in reports[0]
    assert main(["diff", "--cookbook", str(synthetic), "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_the_diff_in_workers_reports_the_first_error(synthetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cookbookgen.diff import check as cached

    monkeypatch.setattr(cached.os, "cpu_count", lambda: 2)
    repo = tmp_path / "repo"
    shutil.copytree(synthetic.parent, repo)
    recipes = repo / "inferencex" / "inferencex-e2e" / "benchmarks" / "multi_node" / "srt-slurm-recipes" / "synth"
    for index in (3, 12):                                         # one bad config in each worker's half
        path = recipes / f"cfg{index:05d}" / "variants.yaml"
        path.write_text(path.read_text().replace("base:", "base: [", 1))
    with pytest.raises(CookbookError) as info:
        _diff(repo / "cookbook.yaml", "text", tmp_path / "cache")
    assert "cfg00003" in str(info.value) and "cfg00012" not in str(info.value)
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("name", ["/tmp/site", "/tmp/a:smile:b", "/tmp/[bold]x", "/tmp/back\\slash", "/tmp/é", "/tmp/x "])
def test_the_text_report_prints_names_literally_in_both_modes(name: str) -> None:
    """Plain text is the coloured text without its ANSI codes, and names are never read as markup or emoji codes."""
    import re

    from cookbookgen.diff import report
    from cookbookgen.diff.result import DiffResult
    from cookbookgen.diff.model import CellState, Finding

    findings = (Finding(name, "tp4/c16", "point", "point", "cell", "match"),
                Finding(name, "tp4/c16", "decode", "arg", f"--{name}", "mismatch", detail="different value", recipe="1", cookbook="2"))
    cells = (CellState(name, name, "c1", "unpaired", "no-master-entry", name, tree=name),)
    result = DiffResult(name, "rendered cookbook manifest", name, (name,), findings, cells, (name,))
    plain, colored = report.as_text(result, color=False), report.as_text(result, color=True)
    assert "\x1b[" in colored and "\x1b" not in plain
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain
    assert plain.splitlines()[1] == f"── {name} (rendered cookbook manifest) against {name}"
    assert f"\n{name}: 1 point(s), 1 mismatch(es)\n" in plain and f"arg --{name}: different value (recipe 1; cookbook 2)" in plain
    assert plain.endswith(f"\nunpaired c1 ({name}): no-master-entry: {name} [{name}]\nnote {name}\n")


def test_control_characters_in_names_cannot_reach_the_terminal() -> None:
    from cookbookgen.diff import report
    from cookbookgen.diff.result import DiffResult

    name = "cfg\x1b]0;owned\x07\rx"
    for color in (False, True):
        text = report.as_text(DiffResult(name, "k", "c", (), ()), color=color)
        assert "\x07" not in text and "\r" not in text and "\x1b]" not in text
        assert "cfg\\x1b]0;owned\\x07\\x0dx" in text


def test_configs_asked_for_one_at_a_time_are_those_of_the_whole_manifest(synthetic: Path) -> None:
    """`load_configs` with `only` (how the diff renders one config at a time) finds the configs through
    an index of the manifest: the same cells, in manifest order, and only the pages that list them."""
    from cookbookgen.cells.assemble import load_configs
    from cookbookgen.cells.manifest import read_manifest, source_root
    from cookbookgen.policy.rules import load_policy
    from cookbookgen.recipes.workspace import Workspace

    manifest, doc = read_manifest(synthetic)
    ws = Workspace(source_root(synthetic, manifest, doc))
    policy = load_policy()
    keys = [source.key for spec in manifest.pages for source in spec.configs]
    whole = load_configs(manifest, doc, ws, policy, None, set(keys))
    assert [cell.config_key for page in whole.pages for cell in page.cells] == keys     # one cell per synthetic config
    chosen = {keys[5], keys[0], keys[11]}
    some = load_configs(manifest, doc, ws, policy, None, chosen)
    assert [page.model for page in some.pages] == [page.model for page in whole.pages if any(c.config_key in chosen for c in page.cells)]
    assert [cell for page in some.pages for cell in page.cells] == [cell for page in whole.pages for cell in page.cells if cell.config_key in chosen]
    assert load_configs(manifest, doc, ws, policy, None, {"no-such-key"}).pages == ()
