"""A config's text section from point runs (a point's findings, some shared with the point before)
is what the same findings give when each names its point, whatever the findings, their order and
which of them the points share; excluded findings group by label and reason across points."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.diff import report
from cookbookgen.diff.check import flatten
from cookbookgen.diff.model import CLASSES, Finding

from conftest import examples

POOL = [Finding("cfg", "p", role, kind, f"--flag-{i}", cls, detail="d", reason=f"r{i % 3}", path=f"roles.{role}.args.x{i}")
        for i, (role, kind, cls) in enumerate((r, k, c) for r in ("prefill", "decode", "frontend")
                                                  for k in ("arg", "env", "point") for c in CLASSES)]


@st.composite
def points(draw: Any) -> list[tuple[str, list[Finding]]]:
    """Points whose findings lists are the last point's with some places replaced (as the points of
    a config share findings), or new lists of another length."""
    found = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=12))
    runs = [("tp4/c1", found)]
    for n in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            found = list(found)
            for i in draw(st.lists(st.integers(0, len(found) - 1), max_size=4)):
                found[i] = draw(st.sampled_from(POOL))
        else:
            found = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=12))
        runs.append((f"tp4/c{2 ** (n + 1)}", found))
    return runs


def _section(runs: list[tuple[str, list[Finding]]]) -> str:
    return report.text_config(False, "cfg", runs)


@st.composite
def sections(draw: Any) -> list[tuple[str | None, list[Finding]]]:
    """Point runs between runs of findings that name their own point (pairing first, variants last)."""
    runs = draw(points())
    names = [name for name, _ in runs]
    own = st.lists(st.tuples(st.sampled_from(names), st.sampled_from(POOL)), max_size=6)
    before, after = ([replace(f, point=name) for name, f in draw(own)] for _ in range(2))
    return [(None, before), *runs, (None, after)]


@settings(max_examples=examples(300), deadline=None)
@given(runs=sections())
def test_a_section_of_point_runs_is_the_section_of_their_findings_each_naming_its_point(runs: list[tuple[str | None, list[Finding]]]) -> None:
    assert _section(runs) == _section([(None, flatten(runs))])


def test_a_point_that_lists_the_last_points_excluded_findings_joins_their_groups() -> None:
    harness = [f for f in POOL if f.cls == "harness-only" and f.kind == "arg"]
    first = [POOL[0], *harness]
    second = [POOL[0], harness[0], POOL[1], *harness[2:]]      # one excluded finding replaced by a match
    text = _section([("tp4/c1", first), ("tp4/c2", second)])
    assert text == _section([(None, flatten([("tp4/c1", first), ("tp4/c2", second)]))])
    assert f"`{harness[1].item}` ({harness[1].role}; tp4/c1)" in text
    assert f"`{harness[0].item}` ({harness[0].role}; tp4/c1, tp4/c2)" in text
