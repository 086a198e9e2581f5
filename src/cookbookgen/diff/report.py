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
from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..text import printable
from .model import CLASSES, Finding

if TYPE_CHECKING:  # only the types (`diff.check` imports this module)
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
    sections (which is what lets `diff.check` make them config by config, in workers)."""

    def __init__(self, color: bool) -> None:
        self.color = color
        self.console: Any = None
        self.out = io.StringIO()

    def render(self, lines: _Lines) -> str:
        if not self.color:
            return "".join(printable("".join(text for text, _ in line)) + "\n" for line in lines.lines)
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


@dataclass
class _Point:
    """What a section shows of one point: the count of its findings per role and class, and its mismatches per role."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    bad: dict[str, list[Finding]] = field(default_factory=dict)


_ROLE_AND_CLASS = attrgetter("role", "cls")
_NOTED = frozenset(("mismatch", *EXCLUDED))


def _point(points: dict[str, _Point], name: str) -> _Point:
    point = points.get(name)
    if point is None:
        point = points[name] = _Point()
    return point


def _add(point: _Point, role: str, cls: str, n: int) -> None:
    counts = point.counts.setdefault(role, {})
    counts[cls] = counts.get(cls, 0) + n


def _text_config(out: _Lines, config: str, runs: Iterable[PointRun]) -> None:
    points: dict[str, _Point] = {}       # in order of appearance
    excluded = _Groups(_excluded_label)
    checked: list[str] = []
    for run_point, found in runs:
        if run_point is None:           # findings that each name their point
            for f in found:
                _add(_point(points, f.point), f.role, f.cls, 1)
                _note(points[f.point], f, f.point, excluded, checked)
        elif found:                     # one point's findings: counted, then the few to list
            point = _point(points, run_point)
            for (role, cls), n in Counter(map(_ROLE_AND_CLASS, found)).items():
                _add(point, role, cls, n)
            for f in [f for f in found if f.cls in _NOTED or f.kind == "point"]:
                _note(point, f, run_point, excluded, checked)
    mismatches = sum(len(bad) for point in points.values() for bad in point.bad.values())
    out.lines.append([])
    out.print((config, "bold"), f": {len(checked)} point(s), ",
              (f"{mismatches} mismatch(es)", "bold red") if mismatches else ("parity", "green"))
    for name, point in points.items():
        out.print("  ", (name or "(config)", "bold"))
        for role in sorted(point.counts, key=_role_key):
            out.print(*_count_spans(role, point.counts[role]))
            for f in point.bad.get(role, ()):
                out.print("      ", ("✗", "bold red"), f" {_mismatch_line(f)}")
    lines = _exclusions(excluded.groups(), checked)
    if lines:
        out.print("  ", ("excluded", "yellow"))
        for line in lines:
            out.print(f"    - {line}")


def _count_spans(role: str, counts: dict[str, int]) -> list[str | Span]:
    """`    decode           84 match · 4 harness-only`: a role's count of each class, in class order."""
    spans: list[str | Span] = [f"    {role:<16} "]
    for i, c in enumerate(c for c in CLASSES if counts.get(c)):
        spans += [" · "] * (i > 0) + [(f"{counts[c]} {c}", _STYLE[c])]
    return spans


def _note(point: _Point, f: Finding, at: str, excluded: _Groups, checked: list[str]) -> None:
    """Keep what the section lists besides the counts: mismatches, excluded settings, points checked."""
    if f.cls == "mismatch":
        point.bad.setdefault(f.role, []).append(f)
    elif f.cls in EXCLUDED:
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
    """(point, finding) pairs with the same label and reason together, in order of appearance."""

    def __init__(self, label: Callable[[Finding], str]) -> None:
        self.label = label
        self.merged: dict[tuple[str, str], tuple[dict[str, None], dict[str, None]]] = {}

    def add(self, point: str, f: Finding) -> None:
        key = (self.label(f), f.reason)
        entry = self.merged.get(key)
        if entry is None:
            entry = self.merged[key] = ({}, {})
        roles, points = entry
        roles[f.role] = None
        points[point] = None

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

