"""Walk a whole InferenceX checkout as `list` and `build` do and count what renders.

    python benchmarks/measure_tree.py ROOT [--json OUT] [--reasons N] [--only KEY,...] [--complete] [--recipes SRT_SLURM_GIT]

Reports: configs listed, configs refused at config level (with their located reason), points
rendered, points refused (with their located reason), grouped by framework, and the most common
refusal reasons (the message with file, line and numbers blanked). No output is written into ROOT.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.master import check_framework
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RunMemo


def _reason(exc: CookbookError) -> str:
    return str(exc.problems[0])


def _shape(reason: str) -> str:
    """A reason without its location and numbers: refusals that share a cause count together."""
    text = reason.split(": ", 2)[-1] if reason.count(": ") >= 2 else reason
    return re.sub(r"\d+", "N", text)[:160]


def measure(root: Path, only: set[str] | None = None, recipes: Path | None = None) -> dict[str, Any]:
    ws = Workspace(root, recipes)
    policy = load_policy(None)
    out: dict[str, Any] = {"root": str(root), "configs": []}
    for key, entry in ws.entries().items():
        if only and key not in only:
            continue
        config: dict[str, Any] = {"key": key, "framework": entry.framework, "refused": None, "points": []}
        out["configs"].append(config)
        try:
            check_framework(entry)
            rows = entry.rows
        except CookbookError as exc:
            config["refused"] = _reason(exc)
            continue
        memo = RunMemo()
        ws.prefetch(entry)
        for row in rows:
            for conc in row.concs:
                point: dict[str, Any] = {"id": f"{row.slug}/c{conc}", "refused": None}
                try:
                    render_point(ws.point(entry, row, conc), policy, False, memo)
                except CookbookError as exc:
                    point["refused"] = _reason(exc)
                config["points"].append(point)
        ws.release_points()
    return out


def summary(result: dict[str, Any], reasons: int) -> str:
    configs = result["configs"]
    by_fw: dict[str, Counter[str]] = defaultdict(Counter)
    shapes: Counter[str] = Counter()
    for c in configs:
        fw = by_fw[c["framework"]]
        fw["configs"] += 1
        if c["refused"]:
            fw["configs refused"] += 1
            shapes[_shape(c["refused"])] += 1
        for p in c["points"]:
            fw["points"] += 1
            if p["refused"]:
                fw["points refused"] += 1
                shapes[_shape(p["refused"])] += 1
            else:
                fw["points rendered"] += 1
    total = Counter[str]()
    for fw in by_fw.values():
        total.update(fw)
    lines = [f"configs listed {total['configs']}, refused at config level {total['configs refused']}; "
             f"points {total['points']} (of configs read), rendered {total['points rendered']}, refused {total['points refused']}"]
    for name, fw in sorted(by_fw.items()):
        lines.append(f"  {name:22} configs {fw['configs']:4} (refused {fw['configs refused']:3})  points {fw['points']:5}  "
                     f"rendered {fw['points rendered']:5}  refused {fw['points refused']:5}")
    lines.append("most common refusals:")
    lines += [f"  {n:5}  {shape}" for shape, n in shapes.most_common(reasons)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--json", type=Path, help="write every config's and point's outcome here")
    parser.add_argument("--reasons", type=int, default=25)
    parser.add_argument("--only", help="comma-separated config keys")
    parser.add_argument("--complete", action="store_true",
                        help="only the configs ROOT/SOURCES.md lists under 'Complete configs:' (the corpus slices)")
    parser.add_argument("--recipes", type=Path, metavar="DIR",
                        help="an srt-slurm git repository: recipes the runners read from their srt-slurm checkout come from it")
    args = parser.parse_args()
    start = time.monotonic()
    only = set(args.only.split(",")) if args.only else None
    if args.complete:
        text = (args.root / "SOURCES.md").read_text(encoding="utf-8").split("Complete configs:", 1)[1]
        only = set(re.findall(r"^- `([^`]+)`", text, re.M))
    result = measure(args.root, only, args.recipes)
    print(summary(result, args.reasons))
    print(f"({time.monotonic() - start:.1f} s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
