"""Stage 5 of the diff (report): the three reports of a diff: text for terminals, JSON for machines, Markdown for a PR review. No I/O.

Every report leads with the verdict of the run (`verdict`: exit status and why, cells checked and
unpaired, points, findings per class), then each cookbook's part (`cookbook_part`).
- text: grouped by config and point; one line per mismatch, then the unpaired cells; with `verbose`
  also every config, a count per role and class, and the excluded settings; coloured (rich) when
  `color` is set, plain otherwise.
- json: the summary, every cell with its state, and every finding.
- markdown: the shape of an InferenceX reviewer's "SGLang cookbook" detail: per config the points
  checked, then the result ("every recipe argument and environment variable of every role and point
  matches; the only differences are ...", or the mismatches first), then each excluded setting
  with its reason; configs at parity folded in `<details>`; cut to fit a PR comment (`fit`).
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Callable, Iterable

from ..text import printable
from .model import CLASSES, CellState, Finding, Tally
from .result import DiffResult, PointRun


EXCLUDED = ("harness-only", "default-equivalent")
_STYLE = {"mismatch": "bold red", "prohibited": "bold red", "match": "green", "harness-only": "yellow", "default-equivalent": "yellow",
          "placeholder": "cyan", "cluster-provided": "cyan", "unverified": "magenta", "derived": "dim",
          "shadowed": "magenta"}
_ROLE_ORDER = ("point", "cell", "frontend", "router", "nginx", "etcd", "nats", "mooncake-master", "mooncake-store",
               "prefill", "decode", "agg", "job")


def _by(findings: Iterable[Finding], key: str) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(getattr(f, key), []).append(f)
    return out


def _role_key(role: str) -> tuple[int, str]:
    return (_ROLE_ORDER.index(role) if role in _ROLE_ORDER else len(_ROLE_ORDER), role)


# --- the verdict, and JSON ------------------------------------------------------------------------------

Checked = tuple[str, str, str]   # (cookbook, kind, checkout)


def summary(checked: Iterable[Checked], tally: Tally, allow_unpaired: bool) -> dict[str, object]:
    code, why = tally.verdict(allow_unpaired)
    reasons = Counter(c.reason for c in tally.unpaired)
    return {"exit": code, "why": why, "cookbooks": [{"cookbook": c, "kind": k, "checkout": t} for c, k, t in checked],
            "cells": {"checked": len(tally.cells) - len(tally.unpaired), "unpaired": len(tally.unpaired)},
            "unpaired": dict(reasons), "points": tally.points, "classes": {c: tally.classes[c] for c in CLASSES if tally.classes[c]}}


def json_doc(results: list[DiffResult], allow_unpaired: bool) -> dict[str, object]:
    tally = sum((r.tally for r in results), Tally())
    return {"summary": summary([(r.cookbook, r.kind, r.checkout) for r in results], tally, allow_unpaired),
            "cells": [c.to_json() for c in tally.cells], "notes": [n for r in results for n in r.notes],
            "findings": [f.to_json() for r in results for f in r.findings]}


def verdict(checked: list[Checked], tally: Tally, allow_unpaired: bool, markdown: bool, color: bool) -> str:
    """The summary block every report starts with (at most 5 lines, plus one per extra cookbook)."""
    code, why = tally.verdict(allow_unpaired)
    cells = f"{len(tally.cells) - len(tally.unpaired)} checked, {len(tally.unpaired)} unpaired"
    reasons = ", ".join(f"{n} {r}" for r, n in Counter(c.reason for c in tally.unpaired).items())
    counts = " · ".join(f"{tally.classes[c]} {c}" for c in CLASSES if tally.classes[c]) or "none"
    compared = "; ".join(f"{c} against {t}" for c, _, t in checked)
    head = f"cookbookgen diff: {'FAIL' if code else 'PASS'} (exit {code}): {why}; compared {compared}"
    rows = [("cookbook", f"{c} ({k}) against {t}") for c, k, t in checked] + [
        ("cells", cells + (f" ({reasons})" if reasons else "")), ("points", f"{tally.points} paired and compared"), ("findings", counts)]
    if markdown:
        return f"### {head}\n" + "".join(f"- {name}: {text}\n" for name, text in rows) + "\n"
    out = _Lines()
    out.print((head, "bold red" if code else "bold green"))
    for name, text in rows:
        out.print(f"  {name:<9} {text}")
    return render(out, color)


MARKDOWN_LIMIT = 65_000
CUT = "\n_(cut to fit a PR comment: run `cookbookgen diff --format markdown` for the whole report)_\n"


def fit(text: str, limit: int = MARKDOWN_LIMIT) -> str:
    """A Markdown report under `limit` characters: cut at a line end, open `<details>` closed."""
    if len(text) < limit:
        return text
    kept = text[:text.rfind("\n", 0, limit - len(CUT) - 200) + 1]
    return kept + "</details>\n" * (kept.count("<details>") - kept.count("</details>")) + CUT


# --- text ------------------------------------------------------------------------------------------------

Span = tuple[str, str]   # (text, rich style); style "" is plain


class _Lines(list[list[Span]]):
    """The lines of one section of the report, each a list of styled spans. Names from the inputs
    are spans of their own: they are never parsed as markup, so no escaping is needed."""

    def print(self, *spans: str | Span) -> None:
        self.append([(s, "") if isinstance(s, str) else s for s in spans])


def render(lines: _Lines, color: bool) -> str:
    """The text of some lines: plain without colour; with colour, rich `Text` (styles only, never
    markup). A section is a function of its lines alone, so the report is the concatenation of its
    sections (which is what lets `diff.check` make them config by config, in workers)."""
    if not color:
        return "".join(printable("".join(text for text, _ in line)) + "\n" for line in lines)
    from rich.console import Console
    from rich.text import Text

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160, highlight=False, soft_wrap=True, emoji=False)
    for line in lines:
        console.print(Text.assemble(*((printable(text), style) for text, style in line)))
    return out.getvalue()


def as_text(result: DiffResult, color: bool = False, verbose: bool = False) -> str:
    body = "".join(text_config(color, config, [(None, findings)], verbose) for config, findings in _by(result.findings, "config").items()
                   if verbose or any(f.is_mismatch or f.cls == "shadowed" for f in findings))
    return cookbook_part(result.cookbook, result.kind, result.checkout, body, result.tally.unpaired, result.notes, False, color)


def cookbook_part(cookbook: str, kind: str, checkout: str, body: str, unpaired: list[CellState], notes: Iterable[str],
                  markdown: bool, color: bool) -> str:
    """One cookbook's part of a report: a title, its config sections (`body`), its unpaired cells and notes."""
    if markdown:
        lines = [f"- Unpaired: `{c.cell}` ({c.config}): {c.reason}: {c.detail} [{c.tree}]" for c in unpaired] + [f"- Note: {n}" for n in notes]
        return f"#### `{cookbook}` ({kind}) against `{checkout}`\n" + METHOD + body + "".join(line + "\n" for line in lines)
    title, tail = _Lines(), _Lines()
    title.append([])
    title.print(("── ", "dim"), (cookbook, "bold"), f" ({kind}) against {checkout}")
    for c in unpaired:
        tail.print(("unpaired", "magenta"), f" {c.cell} ({c.config}): {c.reason}: {c.detail} [{c.tree}]")
    for note in notes:
        tail.print(("note", "magenta"), f" {note}")
    return render(title, color) + body + render(tail, color)


def text_config(color: bool, config: str, runs: Iterable[PointRun], verbose: bool = True) -> str:
    """The section of one config (its findings, variants included), from its point runs
    (`diff.check.PointRun`: the findings of a run are its point's, whatever point they name)."""
    points: dict[str, _Point] = {}       # in order of appearance
    excluded: list[tuple[str, Finding]] = []
    checked: list[str] = []
    for run_point, found in runs:
        if run_point is None:           # findings that each name their point
            for f in found:
                points.setdefault(f.point, _Point()).counts[f.role, f.cls] += 1
                _note(points[f.point], f, f.point, excluded, checked)
        elif found:                     # one point's findings: counted, then the few to list
            point = points.setdefault(run_point, _Point())
            point.counts.update(map(_ROLE_AND_CLASS, found))
            for f in [f for f in found if f.cls in _NOTED or f.kind == "point"]:
                _note(point, f, run_point, excluded, checked)
    failing = Counter(f.cls for point in points.values() for bad in point.bad.values() for f in bad)
    shown = ", ".join(f"{n} {'mismatch(es)' if cls == 'mismatch' else cls}" for cls, n in sorted(failing.items()))
    out = _Lines()
    out.append([])
    out.print((config, "bold"), f": {len(checked)} point(s), ", (shown, "bold red") if failing else ("parity", "green"))
    for name, point in points.items():
        if not (verbose or point.bad or point.notes):
            continue
        out.print("  ", (name or "(config)", "bold"))
        for f in point.notes:
            out.print("      ", ("note", "magenta"), f" {_shadowed_line(f)}")
        for role in sorted({role for role, _ in point.counts}, key=_role_key):
            if verbose:
                out.print(*_count_spans(role, point.counts))
            for f in point.bad.get(role, ()):
                out.print("      ", ("✗", "bold red"), f" {role}: {_mismatch_line(f)}")
    groups = _group(excluded, _excluded_label) if verbose else []
    if groups:
        out.print("  ", ("excluded", "yellow"))
        for g in groups:
            out.print(f"    - {g.text} ({_where(g, checked)}): {g.reason}")
    return render(out, color)


@dataclass
class _Point:
    """What a section shows of one point: the count of its findings per role and class, and its mismatches per role."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    bad: dict[str, list[Finding]] = field(default_factory=dict)
    notes: list[Finding] = field(default_factory=list)     # duplicate recipe keys: listed whatever the verbosity


_ROLE_AND_CLASS = attrgetter("role", "cls")
_NOTED = frozenset(("mismatch", "prohibited", "shadowed", *EXCLUDED))


def _count_spans(role: str, counts: Counter[tuple[str, str]]) -> list[str | Span]:
    """`    decode           84 match · 4 harness-only`: a role's count of each class, in class order."""
    spans: list[str | Span] = [f"    {role:<16} "]
    for i, c in enumerate(c for c in CLASSES if counts[role, c]):
        spans += [" · "] * (i > 0) + [(f"{counts[role, c]} {c}", _STYLE[c])]
    return spans


def _note(point: _Point, f: Finding, at: str, excluded: list[tuple[str, Finding]], checked: list[str]) -> None:
    """Keep what the section lists besides the counts: mismatches, excluded settings, points checked."""
    if f.is_mismatch:
        point.bad.setdefault(f.role, []).append(f)
    elif f.cls == "shadowed":
        point.notes.append(f)
    elif f.cls in EXCLUDED:
        excluded.append((at, f))
    elif f.cls == "match" and f.kind == "point":
        checked.append(at)


def _shadowed_line(f: Finding) -> str:
    return f"{f.where}: {f.path}: {f.detail}"


def _mismatch_line(f: Finding) -> str:
    values = [f"recipe {f.recipe}" if f.recipe is not None else "", f"cookbook {f.cookbook}" if f.cookbook is not None else ""]
    shown = "; ".join(v for v in values if v)
    where = ", ".join(x for x in (f.path, f.where) if x)
    return f"{f.kind} {f.item}: {f.detail}" + (f" ({shown})" if shown else "") + (f" — {f.reason}" if f.reason else "") + (f" [{where}]" if where else "")


# --- Markdown --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Group:
    text: str
    roles: tuple[str, ...]
    points: tuple[str, ...]
    reason: str


def _group(findings: Iterable[tuple[str, Finding]], label: Callable[[Finding], str]) -> list[_Group]:
    """(point, finding) pairs with the same label and reason together, in order of appearance."""
    merged: dict[tuple[str, str], tuple[dict[str, None], dict[str, None]]] = {}
    for point, f in findings:
        roles, points = merged.setdefault((label(f), f.reason), ({}, {}))
        roles[f.role] = None
        points[point] = None
    return [_Group(text, tuple(r), tuple(p), reason) for (text, reason), (r, p) in merged.items()]


def _where(group: _Group, all_points: list[str]) -> str:
    points = "all points" if set(group.points) >= set(all_points) and len(all_points) > 1 else ", ".join(group.points)
    return f"{', '.join(group.roles)}; {points}"


def _excluded_label(f: Finding) -> str:
    if f.kind == "setting":
        return f"`{f.rule}` settings" if f.rule and f.rule != f.path else f"`{f.path or f.item}`"
    shown = f.recipe if f.recipe is not None else f.cookbook
    value = "" if f.cls == "harness-only" or shown in (None, "(switch)") else (f": {shown}" if f.kind == "arg" else f"={shown}")
    return f"`{f.item}{value}`"


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


def md_config(config: str, findings: list[Finding], folded: bool = False) -> str:
    """The section of one config, each line ending in a newline; `folded` in a `<details>`."""
    points = [f.point for f in findings if f.kind == "point" and f.cls == "match"]
    cells = list(dict.fromkeys(f.item for f in findings if f.kind == "point" and f.cls == "match"))
    lines = [f"- **{config}**", f"  - Points checked: {', '.join(points) or 'none'}" + (f" (cells {', '.join(cells)})." if cells else ".")]
    bad = _group([(f.point, f) for f in findings if f.is_mismatch], _mismatch_label)
    if bad:
        count = sum(f.is_mismatch for f in findings)
        lines.append(f"  - Result: {count} mismatch(es) ({len(bad)} distinct); apart from them the only differences are {_differences(findings)}.")
        lines += [f"    - {g.text} ({_where(g, points)})" + (f": {g.reason}." if g.reason else ".") for g in bad]
    else:
        lines.append("  - Result: every recipe argument and environment variable of every role and point matches; "
                     f"the only differences are {_differences(findings)}.")
    for cls, title in (("default-equivalent", "Default-equivalent"), ("cluster-provided", "Cluster-provided"), ("unverified", "Not visible in a command")):
        group = _group([(f.point, f) for f in findings if f.cls == cls], _excluded_label)
        if group:
            lines.append(f"  - {title}:")
            lines += [f"    - {g.text} ({_where(g, points)}): {g.reason}." for g in group]
    shadowed = list(dict.fromkeys(_shadowed_line(f) for f in findings if f.cls == "shadowed"))
    if shadowed:
        lines.append("  - Duplicate recipe keys (the later value is used and compared, as srtctl's yaml.safe_load takes it):")
        lines += [f"    - {line}." for line in shadowed]
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
    text = "".join(line + "\n" for line in lines)
    return f"<details><summary>{config}: parity</summary>\n\n{text}\n</details>\n\n" if folded else text


def as_markdown(result: DiffResult) -> str:
    body = "".join(md_config(config, findings, folded=not any(f.is_mismatch for f in findings))
                   for config, findings in _by(result.findings, "config").items())
    return cookbook_part(result.cookbook, result.kind, result.checkout, body, result.tally.unpaired, result.notes, True, False)


METHOD = ("- Comparison method: each published point is paired with its master-config row and concurrency, and its commands are "
          "compared role by role with the effective recipe (base plus override): every recipe argument and environment variable, "
          "the topology (workers, nodes per worker, GPU pinning) and the image. Every command setting the recipe does not hold "
          "needs a recorded reason, or it is a mismatch.\n")
