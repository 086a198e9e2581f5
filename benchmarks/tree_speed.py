"""Time `list`, a cold `build` and the `diff` of that site over a whole InferenceX checkout, each as its own process.

    python benchmarks/tree_speed.py ROOT [--work DIR] [--baseline SRC] [--repeat N] [--json OUT]

ROOT: an InferenceX checkout (a git clone with its own objects, or a plain folder). Each step runs
`cookbookgen` as a process (wall time and the CPU of it and its children, bubblewrap's included):
`list --source ROOT`, `build --source ROOT --out WORK/site --no-cache --date 2026-01-01` and
`diff --cookbook WORK/site --source ROOT`. The goals (issue 31, on a 2-core machine): list under 2 s,
build under 120 s, diff under 15 s.

`--baseline SRC` also runs every step with another checkout's code (`SRC` is its `src` folder, put
first on PYTHONPATH), the two sides alternating, and checks that both built the same site (every
file byte for byte) and printed the same list and diff report: the ratios new / baseline are the
figures to quote on a shared machine. `--work` keeps the sites (default: a temporary folder).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GOALS = {"list": 2.0, "build": 120.0, "diff": 15.0}


def _run(argv: list[str], src: str | None) -> tuple[float, float, bytes, int]:
    """Wall and CPU seconds (the process and its children), stdout, exit status."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from cookbookgen.cli import console; console()", *argv],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout, done.returncode


def _steps(root: Path, site: Path) -> dict[str, list[str]]:
    return {"list": ["list", "--source", str(root)],
            "build": ["build", "--source", str(root), "--out", str(site), "--no-cache", "--date", "2026-01-01"],
            "diff": ["diff", "--cookbook", str(site), "--source", str(root)]}


def _same_tree(a: Path, b: Path) -> list[str]:
    """Files that differ between two folders (or exist in one only)."""
    out: list[str] = []

    def walk(cmp: filecmp.dircmp[str], rel: str) -> None:
        out.extend(f"{rel}{name}" for name in cmp.left_only + cmp.right_only + cmp.funny_files)
        _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
        out.extend(f"{rel}{name}" for name in mismatch + errors)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{rel}{name}/")
    walk(filecmp.dircmp(a, b), "")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--baseline", metavar="SRC", help="the src folder of another checkout to compare with")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each step and side (the fastest is kept)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cookbookgen-tree-") as scratch:
        work = args.work or Path(scratch)
        sides = {"new": None, **({"baseline": args.baseline} if args.baseline else {})}
        results: dict[str, dict[str, Any]] = {side: {} for side in sides}
        outputs: dict[str, dict[str, bytes]] = {side: {} for side in sides}
        for step in GOALS:
            for _ in range(args.repeat):
                for side, src in sides.items():
                    wall, cpu, stdout, code = _run(_steps(args.root, work / f"site-{side}")[step], src)
                    best = results[side].get(step)
                    if best is None or wall < best["wall"]:
                        results[side][step] = {"wall": round(wall, 2), "cpu": round(cpu, 2), "exit": code}
                    outputs[side][step] = stdout.replace(str(work / f"site-{side}").encode(), b"SITE")
        print(f"{'step':<8}{'new wall (s)':>14}{'CPU (s)':>10}{'goal':>8}" + (f"{'baseline wall':>15}{'ratio':>8}" if args.baseline else ""))
        for step, goal in GOALS.items():
            new = results["new"][step]
            line = f"{step:<8}{new['wall']:>14.2f}{new['cpu']:>10.2f}{goal:>8.0f}"
            if args.baseline:
                old = results["baseline"][step]
                line += f"{old['wall']:>15.2f}{new['wall'] / old['wall']:>8.2f}"
            print(line)
        same: dict[str, Any] = {}
        if args.baseline:
            same = {step: outputs["new"][step] == outputs["baseline"][step] for step in GOALS}
            differ = _same_tree(work / "site-new", work / "site-baseline")
            same["site"] = not differ
            print("identical to the baseline:", ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in same.items()))
            if differ:
                print(f"{len(differ)} site file(s) differ, e.g. {', '.join(differ[:5])}")
        if args.json:
            args.json.write_text(json.dumps({"results": results, "identical": same}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
