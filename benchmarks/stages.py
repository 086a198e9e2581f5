"""Where a cold `cookbookgen diff` spends its time, stage by stage (the README's "where the time goes").

    python benchmarks/stages.py [--configs 300] [--work DIR]

Runs `cookbookgen diff --jobs 1` in this process on a synthetic repository (`synth.py`, 10 points
per config), with a timer around the function of each pipeline stage, and prints each stage's own
share of the run: the time inside its function minus the time inside the other timed functions it
calls. A config's first point and its later ones are told apart (the first is compared and rendered
in full; the later ones share what their override leaves alone), so the table shows where a delta
between points could save. One process and wall-clock time: the shares are noisy by a point or two.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402

# (module, attribute path, stage): the function that does each stage; the stages split by point are
# the ones whose first argument names the config (resolved point or expectations).
STAGES: tuple[tuple[str, str, str], ...] = (
    ("cookbookgen.recipes.load", "parse_yaml", "parse YAML (the recipes; manifest and master config once)"),
    ("cookbookgen.recipes.workspace", "Workspace.point", "resolve"),
    ("cookbookgen.recipes.workspace", "Workspace.selected", "resolve"),
    ("cookbookgen.pipeline", "render_point", "render"),
    ("cookbookgen.cells.assemble", "group_cells", "group points into cells"),
    ("cookbookgen.diff.sources", "published_from_cookbook", "published points"),
    ("cookbookgen.diff.check", "pair_config", "pairing"),
    ("cookbookgen.diff.check", "point_expect", "expectations"),
    ("cookbookgen.diff.check", "point_findings", "compare"),
    ("cookbookgen.diff.check", "cookbook_part", "report"),
)
BY_POINT = frozenset(("render", "compare"))


class Timers:
    """Exclusive time per stage: a stack of the time spent in timed callees of each open call."""

    def __init__(self) -> None:
        self.own: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self.stack: list[float] = []
        self.seen: Counter[str] = Counter()    # points per config, for the first/later split

    def wrap(self, stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            label = self.label(stage, args)
            start = time.perf_counter()
            self.stack.append(0.0)
            try:
                return func(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                self.own[label] += spent - self.stack.pop()
                self.calls[label] += 1
                if self.stack:
                    self.stack[-1] += spent
        return timed

    def label(self, stage: str, args: tuple[Any, ...]) -> str:
        if stage not in BY_POINT or not args:
            return stage
        point = args[0]
        config = getattr(point, "config", None) or getattr(getattr(point, "entry", None), "key", "")
        key = f"{stage}\0{config}"
        self.seen[key] += 1
        return f"{stage}, {'first point' if self.seen[key] == 1 else 'later points'}"


def install(timers: Timers) -> Callable[[], None]:
    """Put a timer around every stage's function (module attributes and methods, as the code calls
    them); return what puts the functions back."""
    undo: list[tuple[Any, str, Any]] = []
    for module_name, attribute, stage in STAGES:
        module = importlib.import_module(module_name)
        owner, name = (module, attribute) if "." not in attribute else (getattr(module, attribute.split(".")[0]), attribute.split(".")[1])
        undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, timers.wrap(stage, getattr(owner, name)))

    def uninstall() -> None:
        for owner, name, func in reversed(undo):
            setattr(owner, name, func)
    return uninstall


def measure(manifest: Path) -> tuple[float, dict[str, float], Counter[str]]:
    """(seconds of the whole diff, own seconds per stage, calls per stage) of one cold single-process diff."""
    from cookbookgen.cli import main

    timers = Timers()
    uninstall = install(timers)
    try:
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            status = main(["diff", "--jobs", "1", "--cookbook", str(manifest)])
        total = time.perf_counter() - start
    finally:
        uninstall()
    if status not in (0, 1):
        raise SystemExit(f"cookbookgen diff exited {status}")
    return total, timers.own, timers.calls


def table(total: float, own: dict[str, float]) -> str:
    rows = [f"| {stage} | {100 * seconds / total:.1f}% |" for stage, seconds in sorted(own.items(), key=lambda kv: -kv[1])]
    rest = total - sum(own.values())
    rows.append(f"| the rest (start-up, manifest, master config, cells cache, section) | {100 * rest / total:.1f}% |")
    return "\n".join(["| stage | share |", "|---|---:|", *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=int, default=300, help="configs in the synthetic repository (default: 300)")
    parser.add_argument("--work", type=Path, help="where to generate it (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        manifest = synth.generate(work / f"repo{args.configs}", args.configs)
        total, own, _ = measure(manifest)
    print(f"cold `cookbookgen diff --jobs 1`, {args.configs} configs x {synth.POINTS} points: {total:.2f} s\n")
    print(table(total, own))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
