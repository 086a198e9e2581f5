"""Master configs split at their top-level keys (`recipes.load.split_top_level`), so that forked diff
workers each parse the entries of their own configs: a split is made only when its parts, each parsed
alone, give exactly what parsing the whole file gives; anything a part cannot settle is settled by
reading the files whole, and the diff prints and fails as it does with one process."""

from __future__ import annotations

import shutil
import string
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.errors import CookbookError
from cookbookgen.recipes.load import parse_yaml, split_top_level

from conftest import examples

KEYS = st.text(string.ascii_letters + string.digits + "-_.", min_size=1, max_size=8).filter(lambda k: k[0].isalpha())
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT),
                      lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=12)
ENTRIES = st.dictionaries(KEYS, st.dictionaries(KEYS, VALUES, min_size=1, max_size=4), min_size=1, max_size=6)
NAMES = KEYS.filter(lambda k: yaml.safe_load(f"{k}: 1") == {k: 1})      # keys YAML reads as their text (not `no`, `null`, `1e3`)
MASTERS = st.dictionaries(NAMES, st.dictionaries(KEYS, VALUES, min_size=1, max_size=4), min_size=1, max_size=6)


def _parts(text: str) -> Any:
    """(data, lines) of every part put together, None when the text is not split, False when a part fails."""
    split = split_top_level(text, "m.yaml")
    if split is None:
        return None
    data: dict[str, Any] = {}
    lines: dict[Any, int] = {}
    for key in split.spans:
        doc = split.document(key)
        if doc is None:
            return False
        data.update(doc.data)
        lines.update(doc.lines)
    return data, lines


@settings(max_examples=examples(200), deadline=None)
@given(entries=MASTERS, comments=st.booleans(), flow=st.booleans())
def test_a_master_config_dumped_by_yaml_splits_into_the_entries_a_whole_parse_gives(entries: dict[str, Any], comments: bool, flow: bool) -> None:
    # a master config's shape: each entry a block under its key, the values inside in block or flow style
    text = "".join(f"{key}:\n" + textwrap.indent(yaml.safe_dump(value, sort_keys=False, allow_unicode=True,
                                                                 default_flow_style=None if flow else False), "  ")
                   for key, value in entries.items())
    if "*" in text:
        return                                   # a value with an asterisk: never split (tested below)
    if comments:
        text = "# a master config\n\n" + text.replace("\n", "\n# between entries\n", 1)
    whole = parse_yaml(text, "m.yaml")
    parts = _parts(text)
    assert parts is not None and parts is not False
    assert parts[0] == whole.data and list(parts[0]) == list(whole.data)
    assert parts[1] == whole.lines


EDITS = st.sampled_from(['"', "'", "[", "]", "{", "}", "\n", "\nkey:\n", "\nyes:\n", "&a ", "*a", "|\n", "\t", "#", ": ", "- ", "\r", "---\n"])


@settings(max_examples=examples(400), deadline=None)
@given(entries=ENTRIES, edits=st.lists(st.tuples(st.floats(0, 1), EDITS), min_size=1, max_size=3))
def test_when_every_part_parses_alone_they_are_what_the_whole_file_is(entries: dict[str, Any], edits: list[tuple[float, str]]) -> None:
    """Whatever is inserted where: either no split, or a part that fails (the files are then read
    whole), or parts that agree with a whole parse, which then succeeds."""
    text = yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, default_flow_style=False)
    for at, edit in edits:
        cut = int(at * len(text))
        text = text[:cut] + edit + text[cut:]
    parts = _parts(text)
    if parts is None or parts is False:
        return
    whole = parse_yaml(text, "m.yaml")                   # must not raise: every part parsed
    assert parts == (whole.data, whole.lines)


@pytest.mark.parametrize("text", [
    "a:\n  x: *ref\n",                    # an alias
    "---\na:\n  x: 1\n",                  # a document marker
    "a: 1\nb:\n  x: 1\n",                 # a value on the key's line
    '"a":\n  x: 1\n',                     # a quoted key
    "- a\n- b\n",                         # a sequence
    "\ufeffa:\n  x: 1\n",                 # a byte-order mark
    "a:\n  x: 1\rb:\n  y: 2\n",           # a lone carriage return
    "a:\r\n  x: 1\r\n  y: 2\rb:\r\n",     # a lone carriage return among CRLF line ends
    "a:\n  x: 1\x85b:\n  y: 2\n",         # a next-line character (a line break to YAML)
    "a:\n  x: 1\u2028b:\n  y: 2\n",       # a line separator
    "a:\n  x: 1\u2029b:\n  y: 2\n",       # a paragraph separator
    "  x: 1\na:\n  y: 1\n",               # content before the first key
    "a:\n  x: 1\na:\n  x: 2\n",           # a key written twice
    "# only a comment\n",                 # no key
])
def test_texts_that_might_not_split_as_they_parse_are_not_split(text: str) -> None:
    assert split_top_level(text, "m.yaml") is None


def test_a_file_with_crlf_line_ends_splits_into_what_a_whole_parse_gives() -> None:
    text = "# head\r\nalpha:\r\n  x: 1\r\n\r\nbeta: # the second\r\n  z: [3, 4]\r\n"
    whole = parse_yaml(text, "m.yaml")
    assert _parts(text) == (whole.data, whole.lines) and list(whole.data) == ["alpha", "beta"]


def test_a_part_knows_its_lines_and_refuses_a_key_that_is_not_its_text() -> None:
    text = "# head\nalpha:\n  x: 1\n  y:\n    - 2\n\nbeta:\n  z: 3\nyes:\n  w: 4\n"
    split = split_top_level(text, "m.yaml")
    assert split is not None and list(split.spans) == ["alpha", "beta", "yes"]
    beta = split.document("beta")
    assert beta is not None and beta.data == {"beta": {"z": 3}} and beta.lines[("beta", "z")] == 8
    assert beta.line_of(("beta",)) == 7 and beta.lines[()] == parse_yaml(text, "m.yaml").lines[()]
    assert split.document("yes") is None                 # `yes:` is the key True in the whole file


# --- the diff in workers ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import synth

    return synth.generate(tmp_path_factory.mktemp("synth"), 16)


def _repo(synthetic: Path, tmp_path: Path, extra: str) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(synthetic.parent, repo)
    master = repo / "inferencex" / "inferencex-e2e" / "configs" / "nvidia-master.yaml"
    master.write_text(master.read_text() + extra)
    return repo / "cookbook.yaml"


def _both(manifest: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The text report (or the error) of the diff with two workers and with one."""
    from cookbookgen.diff import sections

    from test_cache import _diff

    monkeypatch.setattr(sections.os, "cpu_count", lambda: 2)
    out = []
    for per_worker in (sections.MIN_PER_WORKER, 1000):
        monkeypatch.setattr(sections, "MIN_PER_WORKER", per_worker)
        try:
            out.append(_diff(manifest, "text"))
        except CookbookError as exc:
            out.append(str(exc))
    return out


@pytest.mark.parametrize("extra, error", [
    ("unused-bad:\n  scenarios: 3\n", "unused-bad.scenarios: must be a mapping"),   # an entry no config names
    ("unused-broken:\n  image: [unclosed\n", "YAML syntax"),
])
def test_a_bad_master_entry_no_config_names_is_the_error_it_is_in_one_process(synthetic: Path, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch, extra: str, error: str) -> None:
    parallel, single = _both(_repo(synthetic, tmp_path, extra), monkeypatch)
    assert parallel == single and isinstance(parallel, str) and error in parallel and "nvidia-master.yaml:" in parallel


def test_a_split_that_does_not_hold_is_checked_again_with_the_masters_read_whole(synthetic: Path, tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A quoted value that runs on past a line that looks like a key: the part before it does not
    parse alone, the whole file does (with one key fewer); the workers' results are dropped."""
    from cookbookgen.recipes.workspace import Workspace

    calls = []
    real = Workspace.whole_entries
    monkeypatch.setattr(Workspace, "whole_entries", lambda self: (calls.append(1), real(self))[1])
    parallel, single = _both(_repo(synthetic, tmp_path, 'unused-note:\n  note: "runs on\nnot-a-key:\n  past it"\n'), monkeypatch)
    assert parallel == single and isinstance(parallel, tuple) and parallel[0] == 0 and calls == [1]


def test_a_bad_master_entry_comes_before_a_bad_recipe_as_in_one_process(synthetic: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One process reads the master configs before any recipe: their error is the one reported."""
    # the bad entry is the second no config names: the second run parses it, after the first run's bad recipe
    manifest = _repo(synthetic, tmp_path, "unused-ok:\n  scenarios: {}\nunused-bad:\n  scenarios: 3\n")
    recipe = manifest.parent / "inferencex" / "inferencex-e2e" / "benchmarks" / "multi_node" / "srt-slurm-recipes" / "synth" / "cfg00001" / "variants.yaml"
    recipe.write_text(recipe.read_text().replace("base:", "base: [", 1))
    parallel, single = _both(manifest, monkeypatch)
    assert parallel == single and "unused-bad.scenarios" in parallel and "cfg00001" not in parallel
