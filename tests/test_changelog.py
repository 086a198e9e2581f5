"""The perf-changelog index gives, for every key, the PR of the latest entry naming it (exactly or
by glob), as a scan of the entries from the newest would."""

from __future__ import annotations

import fnmatch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.errors import CookbookError
from cookbookgen.recipes.changelog import read_changelog
from cookbookgen.recipes.load import parse_yaml

from conftest import examples

KEYS = ["dsv4-fp4-gb300-agg", "dsv4-fp4-gb300-disagg", "qwen3.5-fp8-b200-agg", "glm5-fp4-gb200-disagg"]
PATTERNS = KEYS + ["dsv4-fp4-*", "*-agg", "qwen3.?-fp8-b200-agg", "glm5-fp[48]-gb200-*", "qwen3.5*", "*"]


def _scan(entries: list[dict[str, object]], key: str) -> int | None:
    """The definition: the newest entry with a pattern matching `key`."""
    for entry in reversed(entries):
        if any(fnmatch.fnmatchcase(key, str(k)) for k in entry["config-keys"]):  # type: ignore[attr-defined]
            link = str(entry.get("pr-link", ""))
            return int(link.rsplit("/", 1)[1]) if "/pull/" in link else None
    return None


def _doc(entries: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    import yaml

    return parse_yaml(yaml.safe_dump(entries), "perf-changelog.yaml")


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=3), st.integers(1, 5000) | st.none()),
                max_size=12))
def test_the_index_answers_as_a_scan_from_the_newest_entry(raw: list[tuple[list[str], int | None]]) -> None:
    entries: list[dict[str, object]] = [
        {"config-keys": keys, **({"pr-link": f"https://github.com/o/r/pull/{pr}"} if pr is not None else {})} for keys, pr in raw]
    changelog = read_changelog(_doc(entries))
    for key in [*KEYS, "other-key"]:
        assert changelog.latest_pr(key) == _scan(entries, key), key


def test_a_malformed_entry_names_its_line() -> None:
    doc = parse_yaml("- config-keys: [a]\n  pr-link: https://github.com/o/r/pull/1\n- description: [no keys]\n", "perf-changelog.yaml")
    with pytest.raises(CookbookError) as err:
        read_changelog(doc)
    problem = err.value.problems[0]
    assert (problem.file, problem.line, problem.message) == ("perf-changelog.yaml", 3, "an entry needs a config-keys list")
