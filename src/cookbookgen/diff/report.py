"""The three reports of a diff: text for terminals, JSON for machines, Markdown for a PR review. No I/O.

- text: grouped by config, point and role; a count per class and one line per mismatch; the excluded
  settings per config; coloured (rich) when `color` is set, plain otherwise.
- json: every finding, the summary, the cells not in the checkout, and the exit status.
- markdown: the shape of an InferenceX reviewer's "SGLang cookbook" detail: per config the points
  checked, then the result ("every recipe argument and environment variable of every role and point
  matches; the only differences are ...", or the mismatches first), then each excluded setting
  with its reason.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress, count
from operator import attrgetter, is_not
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..text import printable
from .model import CLASSES, Finding

if TYPE_CHECKING:  # only the types: the report must stay light to import (`diff.sections` uses it alone)
    from .check import DiffResult, PointRun

EXCLUDED = ("harness-only", "default-equivalent")
_STYLE = {"mismatch": "bold red", "match": "green", "harness-only": "yellow", "default-equivalent": "yellow",
          "placeholder": "cyan", "cluster-provided": "cyan", "unverified": "magenta", "derived": "dim"}
_ROLE_ORDER = ("point", "cell", "frontend", "router", "nginx", "etcd", "nats", "mooncake-master", "mooncake-store",
               "prefill", "decode", "agg", "job")


def _by(findings: Iterable[Finding], key: str) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(getattr(f, key), []).append(f)
    return out


def _points(findings: list[Finding]) -> list[str]:
    return [f.point for f in findings if f.kind == "point" and f.cls == "match"]


def _role_key(role: str) -> tuple[int, str]:
    return (_ROLE_ORDER.index(role) if role in _ROLE_ORDER else len(_ROLE_ORDER), role)


# --- JSON ------------------------------------------------------------------------------------------------

def as_json(result: DiffResult) -> str:
    return json.dumps(json_doc(result), indent=1, ensure_ascii=False) + "\n"


def json_doc(result: DiffResult) -> dict[str, object]:
    counts = Counter(f.cls for f in result.findings)
    return {
        "cookbook": result.cookbook, "kind": result.kind, "checkout": result.checkout, "exit": result.exit_code,
        "configs": list(result.configs),
        "summary": {"points": len(result.pairs), "mismatches": counts["mismatch"], "classes": {c: counts[c] for c in CLASSES if counts[c]}},
        "not_in_checkout": [{"config": k, "cells": list(cells), "reason": why} for k, cells, why in result.not_in_checkout],
        "notes": list(result.notes),
        "findings": [f.to_json() for f in result.findings],
    }


# --- text ------------------------------------------------------------------------------------------------

Span = tuple[str, str]   # (text, rich style); style "" is plain


class _Lines:
    """Collects the lines of one section of the report, each a list of styled spans. Names from the
    inputs are spans of their own: they are never parsed as markup, so no escaping is needed."""

    def __init__(self) -> None:
        self.lines: list[list[Span]] = []

    def print(self, *spans: str | Span) -> None:
        self.lines.append(_spans(spans))


def _spans(spans: Iterable[str | Span]) -> list[Span]:
    return [(s, "") if isinstance(s, str) else s for s in spans]


class TextRenderer:
    """Renders sections: plain text without colour; with colour, rich `Text` (styles only, never
    markup). A section is a function of its lines alone, so the report is the concatenation of its
    sections (which is what lets `diff.sections` reuse the section of an unchanged config)."""

    def __init__(self, color: bool) -> None:
        self.color = color
        self.console: Any = None
        self.out = io.StringIO()

    def render(self, lines: _Lines) -> str:
        if not self.color:      # points repeat their lines (`_point_lines`): each line object is joined once
            joined: dict[int, str] = {}
            out = []
            for line in lines.lines:
                rendered = joined.get(id(line))
                if rendered is None:
                    rendered = joined[id(line)] = printable("".join(text for text, _ in line)) + "\n"
                out.append(rendered)
            return "".join(out)
        if self.console is None:
            from rich.console import Console

            self.console = Console(file=self.out, force_terminal=True, width=160, highlight=False, soft_wrap=True, emoji=False)
        from rich.text import Text

        for line in lines.lines:
            self.console.print(Text.assemble(*((printable(text), style) for text, style in line)))
        text = self.out.getvalue()
        self.out.seek(0)
        self.out.truncate()
        return text


def as_text(result: DiffResult, color: bool = False) -> str:
    renderer = TextRenderer(color)
    parts = [text_head(renderer, result.cookbook, result.kind, result.checkout)]
    parts += [text_config(renderer, config, [(None, findings)]) for config, findings in _by(result.findings, "config").items()]
    parts.append(text_tail(renderer, result.not_in_checkout, result.notes, len(result.mismatches), len(result.pairs),
                           len(result.configs), result.exit_code))
    return "".join(parts)


def text_head(renderer: TextRenderer, cookbook: str, kind: str, checkout: str) -> str:
    lines = _Lines()
    lines.print(("cookbookgen diff", "bold"), f" {cookbook} ({kind}) against {checkout}")
    return renderer.render(lines)


def text_config(renderer: TextRenderer, config: str, runs: Iterable[PointRun]) -> str:
    """The section of one config (its findings, variants included), from its point runs
    (`diff.check.PointRun`: the findings of a run are its point's, whatever point they name)."""
    lines = _Lines()
    _text_config(lines, config, runs)
    return renderer.render(lines)


Counts = dict[tuple[str, str], int]                        # per (role, class): how many, never 0
_ROLE_AND_CLASS = attrgetter("role", "cls")
_NOTED = frozenset(("mismatch", *EXCLUDED))


@dataclass
class _Point:
    """What a section shows of one point: the counts of its findings, which come from its runs'
    tallies (`tallies`) and from findings that name it (`own`), and its mismatches per role."""

    own: dict[str, dict[str, int]] = field(default_factory=dict)
    tallies: list[Counts] = field(default_factory=list)
    bad: dict[str, list[Finding]] = field(default_factory=dict)


def _text_config(out: _Lines, config: str, runs: Iterable[PointRun]) -> None:
    points: dict[str, _Point] = {}       # in order of appearance
    excluded = _Groups(_excluded_label)
    checked: list[str] = []
    last: _PointTally | None = None
    for run_point, found in runs:
        if run_point is None:              # findings that each name their point
            for f in found:
                point = _point(points, f.point)
                counts = point.own.setdefault(f.role, {})
                counts[f.cls] = counts.get(f.cls, 0) + 1
                _note(point, f, f.point, excluded, checked)
        elif found:                        # one point's findings: counted, then the few to list
            last = _point_tally(found, last)
            point = _point(points, run_point)
            point.tallies.append(last.counts)
            notes = [found[i] for i in last.listed]
            excluded_notes = [f for f in notes if f.cls in EXCLUDED]
            excluded.add_run(run_point, excluded_notes)
            if len(excluded_notes) < len(notes):     # the rest: mismatches and the points checked
                for f in notes:
                    _note(point, f, run_point, None, checked)
    mismatches = sum(len(bad) for point in points.values() for bad in point.bad.values())
    out.lines.append([])
    out.print((config, "bold"), f": {len(checked)} point(s), ",
              (f"{mismatches} mismatch(es)", "bold red") if mismatches else ("parity", "green"))
    shown: dict[tuple[object, ...], list[list[Span]]] = {}   # points mostly repeat their lines
    for name, point in points.items():
        out.print("  ", (name or "(config)", "bold"))
        out.lines.extend(_point_lines(point, shown))
    lines = _exclusions(excluded.groups(), checked)
    if lines:
        out.print("  ", ("excluded", "yellow"))
        for line in lines:
            out.print(f"    - {line}")


def _point(points: dict[str, _Point], name: str) -> _Point:
    point = points.get(name)
    if point is None:
        point = points[name] = _Point()
    return point


def _point_lines(point: _Point, shown: dict[tuple[object, ...], list[list[Span]]]) -> list[list[Span]]:
    """A point's lines: per role (in role order) its count of each class, then its mismatches. The
    lines of a point without mismatches are those of any point with the same counts: they are kept
    by the tallies' identities (a point's tally is often the very one of the point before) and the
    counts of the point's own findings."""
    key: tuple[object, ...] | None = None
    if not point.bad:
        key = (*map(id, point.tallies), *((role, tuple(counts.items())) for role, counts in point.own.items()))
        hit = shown.get(key)
        if hit is not None:
            return hit
    roles: dict[str, dict[str, int]] = {role: dict(counts) for role, counts in point.own.items()}
    for tally in point.tallies:
        for (role, cls), n in tally.items():
            counts = roles.setdefault(role, {})
            counts[cls] = counts.get(cls, 0) + n
    lines: list[list[Span]] = []
    for role in sorted(roles, key=_role_key):
        lines.append(_spans(_count_spans(role, roles[role])))
        lines += [_spans(("      ", ("✗", "bold red"), f" {_mismatch_line(f)}")) for f in point.bad.get(role, ())]
    if key is not None:
        shown[key] = lines           # the tallies, whose ids are in the key, live as long as the section's points
    return lines


@dataclass(frozen=True)
class _PointTally:
    """One point's findings, their count per (role, class), and the positions of those the section
    lists (both the very objects of the point before when they are equal)."""

    found: list[Finding]
    counts: Counts
    listed: list[int]


def _listed(f: Finding) -> bool:
    return f.cls in _NOTED or f.kind == "point"


def _point_tally(found: list[Finding], last: _PointTally | None) -> _PointTally:
    """The tally of a point, from the last point's when both have as many findings: the points of a
    config share most findings, in the same places (`diff.compare.PointMemo`), so only the places
    that hold another finding (found at C speed) are counted again. The same counts either way."""
    if last is None or len(last.found) != len(found):
        return _PointTally(found, dict(Counter(map(_ROLE_AND_CLASS, found))), [i for i, f in enumerate(found) if _listed(f)])
    changed = list(compress(count(), map(is_not, found, last.found)))
    if not changed:
        return _PointTally(found, last.counts, last.listed)
    gone = list(map(_ROLE_AND_CLASS, map(last.found.__getitem__, changed)))
    came = list(map(_ROLE_AND_CLASS, map(found.__getitem__, changed)))
    counts = last.counts
    if gone != came:
        counts = dict(counts)
        for key in gone:
            counts[key] -= 1
            if not counts[key]:
                del counts[key]
        for key in came:
            counts[key] = counts.get(key, 0) + 1
    listed = last.listed
    again = set(changed)
    if not again.isdisjoint(listed) or any(_listed(found[i]) for i in changed):
        listed = sorted({*(i for i in listed if i not in again), *(i for i in changed if _listed(found[i]))})
    return _PointTally(found, counts, listed)


def _count_spans(role: str, counts: dict[str, int]) -> list[str | Span]:
    """`    decode           84 match · 4 harness-only`: a role's count of each class, in class order."""
    spans: list[str | Span] = [f"    {role:<16} "]
    for i, c in enumerate(c for c in CLASSES if counts.get(c)):
        spans += [" · "] * (i > 0) + [(f"{counts[c]} {c}", _STYLE[c])]
    return spans


def _note(point: _Point, f: Finding, at: str, excluded: _Groups | None, checked: list[str]) -> None:
    """Keep what the section lists besides the counts: mismatches, excluded settings (unless
    `excluded` is None: the caller adds them at once), points checked."""
    if f.cls == "mismatch":
        point.bad.setdefault(f.role, []).append(f)
    elif f.cls in EXCLUDED:
        if excluded is not None:
            excluded.add(at, f)
    elif f.cls == "match" and f.kind == "point":
        checked.append(at)


def _mismatch_line(f: Finding) -> str:
    values = [f"recipe {f.recipe}" if f.recipe is not None else "", f"cookbook {f.cookbook}" if f.cookbook is not None else ""]
    shown = "; ".join(v for v in values if v)
    where = ", ".join(x for x in (f.path, f.where) if x)
    return f"{f.kind} {f.item}: {f.detail}" + (f" ({shown})" if shown else "") + (f" — {f.reason}" if f.reason else "") + (f" [{where}]" if where else "")


def text_tail(renderer: TextRenderer, not_in_checkout: Iterable[tuple[str, tuple[str, ...], str]], notes: Iterable[str],
              mismatches: int, points: int, configs: int, exit_code: int) -> str:
    out = _Lines()
    for key, cells, why in not_in_checkout:
        out.lines.append([])
        out.print(("not in checkout", "magenta"), f" {key} ({len(cells)} cell(s)): {why}")
    for note in notes:
        out.print(("note", "magenta"), f" {note}")
    out.lines.append([])
    out.print("Result: ", (f"{mismatches} mismatch(es)", "bold red") if mismatches else ("parity", "bold green"),
              f" over {points} point(s) of {configs} config(s) (exit {exit_code})")
    return renderer.render(out)


# --- Markdown --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Group:
    text: str
    roles: tuple[str, ...]
    points: tuple[str, ...]
    reason: str


class _Groups:
    """(point, finding) pairs with the same label and reason together, in order of appearance, built
    pair by pair, or run by run (`add_run`: the findings of one point, which mostly are the very
    findings of the run before, in the same places)."""

    def __init__(self, label: Callable[[Finding], str]) -> None:
        self.label = label
        self.merged: dict[tuple[str, str], tuple[dict[str, None], dict[str, None]]] = {}
        self.run: list[Finding] = []                 # the findings of the last run
        self.run_points: list[dict[str, None]] = []  # the points of each one's group

    def add(self, point: str, f: Finding) -> dict[str, None]:
        key = (self.label(f), f.reason)
        entry = self.merged.get(key)
        if entry is None:
            entry = self.merged[key] = ({}, {})
        roles, points = entry
        roles[f.role] = None
        points[point] = None
        return points

    def add_run(self, point: str, findings: list[Finding]) -> None:
        """`add` each of `findings` at `point`; a finding that the last run had in the same place is
        in a group already, with its role: the point joins that group."""
        groups = []
        same_places = len(findings) == len(self.run)
        for i, f in enumerate(findings):
            if same_places and f is self.run[i]:
                points = self.run_points[i]
                points[point] = None
            else:
                points = self.add(point, f)
            groups.append(points)
        self.run, self.run_points = findings, groups

    def groups(self) -> list[_Group]:
        return [_Group(text, tuple(r), tuple(p), reason) for (text, reason), (r, p) in self.merged.items()]


def _group(findings: Iterable[tuple[str, Finding]], label: Callable[[Finding], str]) -> list[_Group]:
    """(point, finding) pairs with the same label and reason together."""
    groups = _Groups(label)
    for point, f in findings:
        groups.add(point, f)
    return groups.groups()


def _where(group: _Group, all_points: list[str]) -> str:
    points = "all points" if set(group.points) >= set(all_points) and len(all_points) > 1 else ", ".join(group.points)
    return f"{', '.join(group.roles)}; {points}"


def _excluded_label(f: Finding) -> str:
    if f.kind == "setting":
        return f"`{f.rule}` settings" if f.rule and f.rule != f.path else f"`{f.path or f.item}`"
    shown = f.recipe if f.recipe is not None else f.cookbook
    value = "" if f.cls == "harness-only" or shown in (None, "(switch)") else (f": {shown}" if f.kind == "arg" else f"={shown}")
    return f"`{f.item}{value}`"


def _exclusions(groups: list[_Group], all_points: list[str]) -> list[str]:
    return [f"{g.text} ({_where(g, all_points)}): {g.reason}" for g in groups]


def _mismatch_label(f: Finding) -> str:
    values = "; ".join(x for x in (f"recipe `{f.recipe}`" if f.recipe is not None else "",
                                   f"cookbook `{f.cookbook}`" if f.cookbook is not None else "") if x)
    head = f"`{f.point}` (cell {f.item})" if f.kind == "point" else f"`{f.item}` {f.kind}"
    return f"{head}: {f.detail}" + (f" ({values})" if values else "")


def _differences(findings: list[Finding]) -> str:
    """The "the only differences are ..." clause, naming only the kinds the config has."""
    parts = [text for cls, text in (("harness-only", "the InferenceX-only settings below"),
                                    ("default-equivalent", "the default-equivalent settings below"),
                                    ("cluster-provided", "the cluster-provided environment below"),
                                    ("placeholder", "placeholders (ports, IP addresses, node rank, NIC names)"))
             if any(f.cls == cls for f in findings)]
    if not parts:
        return "none"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _md_config(config: str, findings: list[Finding]) -> list[str]:
    points = _points(findings)
    cells = list(dict.fromkeys(f.item for f in findings if f.kind == "point" and f.cls == "match"))
    lines = [f"- **{config}**", f"  - Points checked: {', '.join(points) or 'none'}" + (f" (cells {', '.join(cells)})." if cells else ".")]
    bad = _group([(f.point, f) for f in findings if f.is_mismatch], _mismatch_label)
    if bad:
        lines.append(f"  - Result: {len(bad)} mismatch(es); apart from them the only differences are {_differences(findings)}.")
        lines += [f"    - {g.text} ({_where(g, points)})" + (f": {g.reason}." if g.reason else ".") for g in bad]
    else:
        lines.append("  - Result: every recipe argument and environment variable of every role and point matches; "
                     f"the only differences are {_differences(findings)}.")
    for cls, title in (("default-equivalent", "Default-equivalent"), ("cluster-provided", "Cluster-provided"), ("unverified", "Not visible in a command")):
        group = _group([(f.point, f) for f in findings if f.cls == cls], _excluded_label)
        if group:
            lines.append(f"  - {title}:")
            lines += [f"    - {g.text} ({_where(g, points)}): {g.reason}." for g in group]
    placeholders = sorted({f.item for f in findings if f.cls == "placeholder" and f.kind in ("arg", "env")})
    if placeholders:
        lines.append(f"  - Placeholders: {', '.join(f'`{p}`' for p in placeholders)}.")
    derived = [f for f in findings if f.cls == "derived"]
    if derived:
        lines.append(f"  - Not compared: {len(derived)} derived router / KV-tier variant(s), never run.")
    excluded = _group([(f.point, f) for f in findings if f.cls == "harness-only"], _excluded_label)
    if excluded:
        lines.append("  - Excluded as InferenceX-only:")
        lines += [f"    - {g.text} ({_where(g, points)}): {g.reason}." for g in excluded]
    return lines


def as_markdown(result: DiffResult) -> str:
    parts = [md_head(result.cookbook, result.kind, result.checkout)]
    parts += [md_config(config, findings) for config, findings in _by(result.findings, "config").items()]
    parts.append(md_tail(result.not_in_checkout, result.notes, len(result.mismatches), len(result.pairs), len(result.configs)))
    return "".join(parts)


def md_head(cookbook: str, kind: str, checkout: str) -> str:
    return (f"- SGLang cookbook parity (`cookbookgen diff`): `{cookbook}` ({kind}) against the checkout `{checkout}`.\n"
            "  - Comparison method: each published point is paired with its master-config row and concurrency, and its commands are "
            "compared role by role with the effective recipe (base plus override): every recipe argument and environment variable, "
            "the topology (workers, nodes per worker, GPU pinning) and the image. Every command setting the recipe does not hold "
            "needs a recorded reason, or it is a mismatch.\n")


def md_config(config: str, findings: list[Finding]) -> str:
    """The section of one config, each line ending in a newline."""
    return "".join(line + "\n" for line in _md_config(config, findings))


def md_tail(not_in_checkout: Iterable[tuple[str, tuple[str, ...], str]], notes: Iterable[str], mismatches: int,
            points: int, configs: int) -> str:
    lines = []
    absent = list(not_in_checkout)
    if absent:
        lines.append("- Not in the checkout (listed, not compared):")
        lines += [f"  - {key} ({', '.join(cells)}): {why}." for key, cells, why in absent]
    lines += [f"- Note: {n}" for n in notes]
    verdict = f"{mismatches} mismatch(es)" if mismatches else "parity"
    lines.append(f"- Verdict: {verdict} over {points} point(s) of {configs} config(s).")
    return "".join(line + "\n" for line in lines)


FORMATS = {"text": as_text, "json": as_json, "markdown": as_markdown}
