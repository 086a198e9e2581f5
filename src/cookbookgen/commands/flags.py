"""`cookbookgen flags`: check every published flag against the engine version its cell pins (or the
releases around its nightly's date).

Exit status: 0 when no flag would stop a server, 1 when one would (unknown, removed, ambiguous,
bad choice, missing or unexpected value), 2 on bad input (a `CookbookError`, printed by `cli.main`).
Reads the cookbook (a manifest, an AgentX module, a cookbook JSON, a site) or renders a config of a
checkout; prints the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import CookbookError
from ..project import EXAMPLE_MANIFEST, bundled, shown_default
from ..text import unknown

if TYPE_CHECKING:
    from ..flags.check import CellCheck


def register(subparsers: Any) -> None:
    f = subparsers.add_parser(
        "flags", help="check every published flag against the engine version its cell pins",
        description="Check each flag of each worker block (and the Dynamo frontend) against the flag catalog of the engine version "
                    "the cell's image or install step pins; a nightly against the releases around its date (a flag only one of them "
                    "takes is a bracket-only warning); an undated build against the newest catalog, approximately. Catalogs ship "
                    "for SGLang, vLLM and the Dynamo wrappers (nothing is downloaded). Exit 0 when clean, 1 when a flag would stop "
                    "the server, 2 on bad input.")
    f.add_argument("--cookbook", type=Path, metavar="COOKBOOK",
                   help=f"cookbook to check; default: {shown_default(EXAMPLE_MANIFEST)}")
    f.add_argument("--source", type=Path, metavar="ROOT", help="InferenceX checkout: check the points of --config as rendered from it")
    f.add_argument("--config", metavar="KEY", help="with --source: the config key; with a cookbook: only this config")
    f.add_argument("--engine-version", metavar="V", help="check against this engine version instead of the one the image pins")
    f.add_argument("--format", choices=["text", "json"], default="text", help="report format (default: text)")
    f.set_defaults(run=run_flags)


def run_flags(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from ..flags.check import failing

    notes: list[str] = []
    checks = _checks(args, notes)
    stream = out or sys.stdout
    stream.write(as_json(checks, notes) if args.format == "json" else as_text(checks, notes))
    return 1 if failing(checks) else 0


def _checks(args: argparse.Namespace, notes: list[str]) -> list[CellCheck]:
    from ..flags.catalog import shipped_versions
    from ..flags.check import check_points

    if args.engine_version is not None:
        known = sorted({v for items in shipped_versions().values() for v in items})
        if args.engine_version not in known:
            raise CookbookError.usage("--engine-version", unknown("engine version (no flag catalog)", args.engine_version, known))
    points = [(cell, image, blocks, install) for config, cell, image, blocks, install in _published(args, notes)
              if not args.config or config == args.config]
    if not points:
        raise CookbookError.usage("--config", f"no cell of config {args.config!r} in the cookbook")
    return check_points(points, args.engine_version)


def _identity_note(config: str, image: str | None, typed: Any) -> str | None:
    """A recipe whose `identity.container.image` (what srtctl verifies the running container against) is not
    the image the master config runs: the flags are checked against the master's, and the report says so."""
    named = typed.identity.container.image
    if not named or not image or str(named).partition("@")[0] == image.partition("@")[0]:
        return None
    return (f"{config}: the master config runs {image}, but its recipe's identity names {named} (srtctl verifies the "
            f"running container against it): the flags are checked against the master's image")


def _published(args: argparse.Namespace, notes: list[str]) -> list[tuple[str, str, str | None, tuple[Any, ...], tuple[str, ...]]]:
    """(config key, cell id, image, blocks, install steps) per point of what the arguments name."""
    given = [args.cookbook] if args.cookbook is not None else []
    if args.source is not None:
        if given or not args.config:
            raise CookbookError.usage("--source", "give --source ROOT --config KEY, or a cookbook, not both")
        from ..pipeline import render_all_points
        from ..policy.rules import load_policy
        from ..recipes.workspace import Workspace

        if not args.source.is_dir():
            raise CookbookError.usage(f"--source {args.source}", "the folder does not exist; give an InferenceX checkout or a git repository")
        rendered = render_all_points(Workspace(args.source), load_policy(None), args.config, settings=False)
        notes += sorted({n for r in rendered if (n := _identity_note(args.config, r.deployment.image or None, r.point.typed))})
        return [(args.config, args.config, r.deployment.image or None, r.deployment.blocks, _wheel(r.point.typed)) for r in rendered]
    path = given[0] if given else bundled(EXAMPLE_MANIFEST)
    from ..diff.sources import read_cookbook

    source = read_cookbook(path).source
    return [(p.config, p.cell, p.image, p.blocks, p.install or ()) for config in source.configs for p in source.points(config).points]


def _wheel(typed: Any) -> tuple[str, ...]:
    """The ai-dynamo wheel a recipe installs (`dynamo: {install: true, source: {wheel: V}}`), as an install step."""
    extra = typed.dynamo.model_extra or {}
    source = typed.dynamo.source       # a typed `DynamoSource`: `wheel` is one of its open keys
    wheel = (source.model_extra or {}).get("wheel") if source is not None else None
    return (f"pip install ai-dynamo=={wheel}",) if wheel and extra.get("install") is True else ()


def counts(checks: list[CellCheck]) -> dict[str, int]:
    """Findings per class, in the report's order."""
    from ..flags.check import CLASSES

    found = Counter(f.cls for c in checks for f in c.findings)
    return {cls: found[cls] for cls in CLASSES if found[cls]}


def coverage(checks: list[CellCheck]) -> dict[str, int]:
    """Cells whose worker flags were all checked exactly, against the releases around their build, or not."""
    found = Counter(c.coverage for c in checks)
    return {kind: found[kind] for kind in ("exact", "bracket", "unchecked")}


def as_text(checks: list[CellCheck], notes: list[str] | None = None) -> str:
    lines: list[str] = [f"note: {n}" for n in notes or ()]
    for check in checks:
        versions = ", ".join(f"{e} {v}" for e, v in sorted(check.versions.items())) or "version unknown"
        lines.append(f"{check.cell} ({versions}): {check.checked_flags} flags checked, {check.coverage}")
        lines += [f"  {b.engine} {b.kind}: {b.note}" for b in check.bases if b.kind == "bracket"]
        for f in check.findings:
            where = f"{f.block}: {f.flag}: " if f.flag else (f"{f.block}: " if f.block else "")
            lines.append(f"  {f.cls}: {where}{f.detail}")
        if check.unchecked_workers:
            lines.append(f"  worker flags not checked (no catalog for the command): {', '.join(check.unchecked_workers)}")
        if check.unchecked_blocks:
            lines.append(f"  not checked (no catalog for the command): {', '.join(check.unchecked_blocks)}")
    total = counts(checks)
    summary = ", ".join(f"{n} {cls}" for cls, n in total.items()) or "no findings"
    cover = coverage(checks)
    share = ", ".join(f"{n} {kind} ({100 * n / len(checks):.0f} %)" for kind, n in cover.items()) if checks else "none"
    flags, certain = sum(c.checked_flags for c in checks), sum(c.certain_flags for c in checks)
    sure = f" ({certain} against their version or the releases around it, {100 * certain / flags:.0f} %)" if flags else ""
    lines.append(f"{len(checks)} cells ({share}), {flags} flags checked{sure}: {summary}")
    return "\n".join(lines) + "\n"


def as_json(checks: list[CellCheck], notes: list[str] | None = None) -> str:
    from ..flags.check import failing

    doc = {
        "exit": 1 if failing(checks) else 0,
        "notes": list(notes or ()),
        "counts": counts(checks),
        "coverage": coverage(checks),
        "flags": {"checked": sum(c.checked_flags for c in checks), "certain": sum(c.certain_flags for c in checks)},
        "cells": [{"cell": c.cell, "versions": dict(sorted(c.versions.items())), "checked_flags": c.checked_flags,
                   "certain_flags": c.certain_flags,
                   "coverage": c.coverage, "bases": [{"engine": b.engine, "kind": b.kind, "catalogs": [x.version for x in b.catalogs],
                                                      "note": b.note} for b in c.bases],
                   "findings": [f.to_json() for f in c.findings], "unchecked_blocks": list(c.unchecked_blocks),
                   "unchecked_workers": list(c.unchecked_workers)} for c in checks],
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
