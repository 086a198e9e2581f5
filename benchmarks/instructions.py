"""Count the CPU instructions of a cold `cookbookgen diff` per config: a measure that machine noise does not move.

    python benchmarks/instructions.py [--configs 10 30] [--baseline OTHER_SRC] [--work DIR]

Wall times on a shared machine wander by 20% or more between runs, which hides a change worth 5%.
This script runs `cookbookgen diff --jobs 1` (one process) under valgrind's cachegrind on two
synthetic repositories (`synth.py`, 10 points per config) and reports the instructions the run
executes: the difference between the two sizes, divided by the difference in configs, is the cost
of one config; the rest is the fixed cost of a run (start-up, imports, policy). String hashing is
fixed (`PYTHONHASHSEED=0`) so that two runs of the same code agree within a fraction of a percent.

`--baseline OTHER_SRC` measures another checkout's `src` folder (for example a `git worktree` of an
earlier commit) the same way, and prints the ratio of the per-config costs. Instructions are not
time (memory stalls and C code weigh differently), so the wall-clock ratios of `bench.py` stay the
figures of record; this one tells whether a change made the work smaller.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(manifest: Path, src: Path | None) -> int:
    """The instructions of one single-process cold diff of `manifest` (with `src` first on the path)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
            sys.executable, "-m", "cookbookgen.cli", "diff", "--cookbook", str(manifest), "--jobs", "1"]
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    found = _REFS.search(done.stderr)
    if found is None or done.returncode not in (0, 1):
        raise SystemExit(f"valgrind run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def measure(small: Path, large: Path, sizes: tuple[int, int], src: Path | None) -> tuple[float, float]:
    """(fixed instructions of a run, instructions per config), both in millions."""
    a, b = instructions(small, src), instructions(large, src)
    per_config = (b - a) / (sizes[1] - sizes[0])
    return (a - per_config * sizes[0]) / 1e6, per_config / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=int, nargs=2, default=(10, 30), metavar=("SMALL", "LARGE"),
                        help="the two repository sizes (default: 10 30)")
    parser.add_argument("--baseline", type=Path, metavar="OTHER_SRC", help="also measure this src folder and compare")
    parser.add_argument("--work", type=Path, help="where to generate the repositories (default: a temporary folder)")
    args = parser.parse_args(argv)
    small_n, large_n = args.configs
    if not 0 < small_n < large_n:
        parser.error("--configs: expected SMALL < LARGE, both positive")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="cookbookgen-instructions-") as scratch:
        work = args.work or Path(scratch)
        small = synth.generate(work / f"repo{small_n}", small_n)
        large = synth.generate(work / f"repo{large_n}", large_n)
        rows = [("this checkout", measure(small, large, (small_n, large_n), None))]
        if args.baseline is not None:
            rows.append((f"baseline {args.baseline}", measure(small, large, (small_n, large_n), args.baseline)))
    print(f"cold `cookbookgen diff --jobs 1`, {synth.POINTS} points per config, {small_n} and {large_n} configs:")
    for label, (fixed, per_config) in rows:
        print(f"  {label:<40} fixed {fixed:8.0f} M instructions, per config {per_config:6.1f} M")
    if len(rows) == 2:
        print(f"  per-config ratio (this / baseline): {rows[0][1][1] / rows[1][1][1]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
