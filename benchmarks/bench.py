"""Benchmark cookbookgen on a synthetic InferenceX-layout repository, in one run.

    python benchmarks/bench.py [--quick | --configs N] [--diff-only] [--json FILE] [--work DIR] [--repeat N]

Generates the repository (`synth.py`: 1,000 configs x 10 points, `--quick` a tenth of it), then
runs each command as its own process (wall time, and peak memory from `os.wait4`):
- `render` of one point, `export` of the whole cookbook as an AgentX module;
- `diff` of the whole cookbook: cold (no cache) and warm (`--cache`, after one run filled it);
- `build`: cold (empty cache), a bare `mkdocs build` of the very Markdown it generated (`--keep-docs`),
  warm (cache present, nothing changed), and incremental (one recipe changed, cache present);
with cookbookgen's modules byte-compiled first, as a regular install has them (`compile_bytecode`),
and parses every file the diff reads (manifest, master config, perf-changelog, recipes) with PyYAML's C loader,
in-process, after one warm-up read: best of three first, then once more just before each cold diff.

`--repeat N` runs the cold build, the bare MkDocs build and the diffs N times, alternating, and keeps
the fastest of each (on a noisy machine noise only ever adds time); the parse the cold diff is divided
by is the fastest of all its runs, which ran side by side with the diffs.

Ratios (goals: <= 2.5, <= 1.3, <= 0.2, <= 30):
- `diff_vs_yaml_parse`: `cookbookgen diff` / the YAML parse, cold; `warm.diff_vs_yaml_parse` with `--cache`;
- `build_vs_mkdocs`: `cookbookgen build` / bare `mkdocs build`, cold; `warm.build_vs_mkdocs` no change;
- `incremental_vs_full`: the build after one recipe changed / the cold build;
- `build_vs_diff`: the cold build / the cold diff of the same cookbook.
Each step's CPU seconds (user + system) are printed beside its wall time: load moves them far less.
`--json FILE` writes those keys, the `warm` ones and every raw figure. The ratios are printed, not
asserted: CI runs `--quick` to show them (machines differ too much for a timing assertion).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth  # noqa: E402

GOALS = {"diff_vs_yaml_parse": 2.5, "build_vs_mkdocs": 1.3, "incremental_vs_full": 0.2, "build_vs_diff": 30}
DATE = "2026-11-29"


@dataclass(frozen=True)
class Run:
    """One command: wall seconds, peak resident memory (MB), exit status and CPU seconds (user + system:
    what machine load moves least)."""

    name: str
    seconds: float
    peak_mb: float
    status: int
    argv: tuple[str, ...]
    cpu_seconds: float = 0.0


def run(name: str, argv: list[str], cwd: Path, log: Path) -> Run:
    """Run `argv` as a child process; its output goes to `log`. Peak memory is the child's own."""
    print(f"  {name:<22} running ...", end="\r", flush=True)
    with log.open("wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:    # interrupted: the child goes too, before the work folder is removed
            proc.kill()
            proc.wait()
            raise
        seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak_kb = usage.ru_maxrss if sys.platform != "darwin" else usage.ru_maxrss / 1024
    result = Run(name, seconds, peak_kb / 1024, proc.returncode, tuple(argv), usage.ru_utime + usage.ru_stime)
    print(f"  {name:<22} {seconds:8.2f} s {result.peak_mb:8.0f} MB  exit {result.status}", flush=True)
    return result


def cookbookgen(*args: str) -> list[str]:
    return [sys.executable, "-m", "cookbookgen.cli", *args]


def diff_inputs(manifest: Path) -> list[Path]:
    """Every YAML file `cookbookgen diff` of the manifest reads: manifest, master configs, changelog, recipes."""
    root = manifest.parent / "inferencex" / "inferencex-e2e"
    masters = sorted((root / "configs").glob("*master*.yaml"))
    changelog = sorted(root.glob("perf-changelog*.yaml"))
    recipes = sorted((root / "benchmarks" / "multi_node" / "srt-slurm-recipes").rglob("*.yaml"))
    return [manifest, *masters, *changelog, *recipes]


def yaml_parse_seconds(files: list[Path], repeat: int = 3) -> float:
    """PyYAML's C loader over `files` (read and parse), best of `repeat`, after one warm-up read."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        raise SystemExit("PyYAML was built without libyaml (no CSafeLoader): the baseline would be meaningless")
    for path in files:
        path.read_bytes()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for path in files:
            yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
        best = min(best, time.perf_counter() - started)
    return best


def change_one_recipe(manifest: Path) -> Path:
    """Edit one engine argument in the base of the first config's recipe (all its points change)."""
    path = manifest.parent / "inferencex" / "inferencex-e2e" / "benchmarks" / "multi_node" / "srt-slurm-recipes" / "synth" / "cfg00000" / "variants.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    role = next(iter(doc["base"]["roles"].values()))
    role["args"]["synthetic-option-0"] = int(role["args"]["synthetic-option-0"]) + 1
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def compile_bytecode() -> None:
    """Byte-compile cookbookgen's modules, as `pip install` does for a regular install. An editable
    install leaves it to the first import, and where `PYTHONDONTWRITEBYTECODE` is set (as on the
    machines this project runs on) every command would compile every module again (0.1 s a start)."""
    import compileall

    import cookbookgen

    if not compileall.compile_dir(str(Path(cookbookgen.__file__).parent), quiet=1):
        raise SystemExit("could not byte-compile cookbookgen")


def bench(configs: int, work: Path, repeat: int = 1, diff_only: bool = False) -> dict[str, object]:
    repo, logs = work / "repo", work / "logs"
    compile_bytecode()
    logs.mkdir(parents=True, exist_ok=True)
    print(f"generating {configs} configs x {synth.POINTS} points under {repo}", flush=True)
    manifest = synth.generate(repo, configs)
    files = diff_inputs(manifest)
    size = sum(p.stat().st_size for p in files)
    parse = yaml_parse_seconds(files)
    print(f"  {'yaml parse (C loader)':<22} {parse:8.2f} s  ({len(files)} files, {size / 1e6:.1f} MB)", flush=True)

    cache, site, docs = work / "cache", work / "site", work / "docs"
    key = "synth00000-fp4-gb300-agg"
    runs: dict[str, Run] = {}

    def step(name: str, argv: list[str], expect: int = 0) -> Run:
        result = run(name, argv, work, logs / f"{name}.log")
        if result.status != expect:
            raise SystemExit(f"{name} exited {result.status} (expected {expect}); see {logs / f'{name}.log'}")
        if name not in runs or result.seconds < runs[name].seconds:   # repeated steps: the fastest (noise only adds)
            runs[name] = result
        return result

    step("render", cookbookgen("render", "--source", str(repo / "inferencex"), "--config", key, "--point", "c16"))
    if diff_only:
        return _diff_only(step, manifest, cache, files, size, parse, repeat, configs, runs)
    step("export", cookbookgen("export", "--cookbook", str(manifest), "--out", str(work / "export.jsx")))
    for _ in range(repeat):      # the pairs a ratio divides run side by side, so machine noise hits both alike
        parse = min(parse, yaml_parse_seconds(files, repeat=1))
        step("diff_cold", cookbookgen("diff", "--cookbook", str(manifest)))
        for path in (site, cache):
            shutil.rmtree(path, ignore_errors=True)
        step("build_cold", cookbookgen("build", "--cookbook", str(manifest), "--out", str(site), "--cache", str(cache),
                                       "--date", DATE, "--keep-docs", str(docs)))
        shutil.rmtree(work / "mkdocs-site", ignore_errors=True)
        step("mkdocs", [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(docs / "mkdocs.yml"), "-d", str(work / "mkdocs-site")])
    step("diff_fill_cache", cookbookgen("diff", "--cookbook", str(manifest), "--cache", str(cache)))
    for _ in range(repeat):
        step("diff_warm", cookbookgen("diff", "--cookbook", str(manifest), "--cache", str(cache)))
    step("build_warm", cookbookgen("build", "--cookbook", str(manifest), "--out", str(site), "--cache", str(cache), "--date", DATE))
    change_one_recipe(manifest)
    step("build_incremental", cookbookgen("build", "--cookbook", str(manifest), "--out", str(site), "--cache", str(cache), "--date", DATE))

    t = {name: r.seconds for name, r in runs.items()}
    ratios = {"diff_vs_yaml_parse": t["diff_cold"] / parse,
              "build_vs_mkdocs": t["build_cold"] / t["mkdocs"],
              "incremental_vs_full": t["build_incremental"] / t["build_cold"], "build_vs_diff": t["build_cold"] / t["diff_cold"]}
    warm = {"diff_vs_yaml_parse": t["diff_warm"] / parse, "build_vs_mkdocs": t["build_warm"] / t["mkdocs"]}
    return {**ratios, "warm": warm, "goals": GOALS,
            "raw": {"configs": configs, "points": configs * synth.POINTS, "repeat": repeat, "yaml_files": len(files), "yaml_bytes": size,
                    "yaml_parse_s": parse, "runs": {name: asdict(r) for name, r in runs.items()},
                    "site_files": sum(1 for p in site.rglob("*") if p.is_file()),
                    "site_bytes": sum(p.stat().st_size for p in site.rglob("*") if p.is_file())},
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}}


def _diff_only(step: Callable[[str, list[str]], Run], manifest: Path, cache: Path, files: list[Path], size: int, parse: float,
               repeat: int, configs: int, runs: dict[str, Run]) -> dict[str, object]:
    """`--diff-only`: the diff ratio alone (no build, no bare MkDocs), for the full-size repository."""
    for _ in range(repeat):      # the parse again just before each cold diff: the two run side by side
        parse = min(parse, yaml_parse_seconds(files, repeat=1))
        step("diff_cold", cookbookgen("diff", "--cookbook", str(manifest)))
    step("diff_fill_cache", cookbookgen("diff", "--cookbook", str(manifest), "--cache", str(cache)))
    for _ in range(repeat):
        step("diff_warm", cookbookgen("diff", "--cookbook", str(manifest), "--cache", str(cache)))
    return {"diff_vs_yaml_parse": runs["diff_cold"].seconds / parse, "warm": {"diff_vs_yaml_parse": runs["diff_warm"].seconds / parse},
            "goals": {"diff_vs_yaml_parse": GOALS["diff_vs_yaml_parse"]},
            "raw": {"configs": configs, "points": configs * synth.POINTS, "repeat": repeat, "yaml_files": len(files), "yaml_bytes": size,
                    "yaml_parse_s": parse, "runs": {name: asdict(r) for name, r in runs.items()}},
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}}


def table(result: dict[str, object]) -> str:
    raw = result["raw"]
    assert isinstance(raw, dict)
    runs = raw["runs"]
    warm = result["warm"]
    assert isinstance(warm, dict)
    site = f", site {raw['site_files']} files ({raw['site_bytes'] / 1e6:.0f} MB)" if "site_files" in raw else " (diff only)"
    lines = [f"{raw['configs']} configs x {synth.POINTS} points ({raw['points']} points), {raw['yaml_files']} YAML files "
             f"({raw['yaml_bytes'] / 1e6:.1f} MB){site}"
             + (f"; cold build, bare MkDocs and diffs: best of {raw['repeat']}" if raw["repeat"] > 1 else ""),
             "",
             "| step | wall (s) | CPU (s) | peak memory (MB) |", "|---|---:|---:|---:|",
             f"| YAML parse, PyYAML C loader (in-process) | {raw['yaml_parse_s']:.2f} | | |"]
    lines += [f"| {name} | {r['seconds']:.2f} | {r.get('cpu_seconds', 0):.2f} | {r['peak_mb']:.0f} |" for name, r in runs.items()]
    lines += ["", "| ratio | cold | warm | goal |", "|---|---:|---:|---:|"]
    for key, goal in GOALS.items():
        if key not in result:
            continue
        cold = float(result[key])  # type: ignore[arg-type]
        hot = warm.get(key)
        lines.append(f"| {key} | {cold:.3f} {'✓' if cold <= goal else '✗'} | "
                     + (f"{hot:.3f} {'✓' if hot <= goal else '✗'}" if hot is not None else "—") + f" | <= {goal} |")
    return "\n".join(lines)


WORK_MARKER = ".cookbookgen-bench"


def clear_work_folder(work: Path) -> None:
    """`--work DIR` is replaced only when it is missing, empty, or an earlier run's (it holds the marker)."""
    if not work.exists():
        return
    if not work.is_dir() or (any(work.iterdir()) and not (work / WORK_MARKER).is_file()):
        raise SystemExit(f"bench.py: --work {work}: exists and is not an earlier benchmark's work folder; give a new or empty folder")
    shutil.rmtree(work)


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a tenth of the repository (100 configs), as CI runs it")
    size.add_argument("--configs", type=int, help="number of configs (default 1000)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the ratios and raw figures as JSON")
    parser.add_argument("--work", type=Path, metavar="DIR", help="work folder (kept); default: a temporary folder, removed")
    parser.add_argument("--diff-only", action="store_true",
                        help="measure render and the diffs only (no export, build or bare MkDocs): the diff ratio at full size in minutes")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run the cold build, bare MkDocs and the diffs N times each and keep the fastest (default 1)")
    args = parser.parse_args(argv)
    configs = args.configs or (100 if args.quick else 1000)
    if args.work:
        clear_work_folder(args.work)
    work = args.work or Path(tempfile.mkdtemp(prefix="cookbookgen-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / WORK_MARKER).write_text("a work folder of benchmarks/bench.py; the next run with --work may replace it\n", encoding="utf-8")
    for signum in (signal.SIGTERM, signal.SIGHUP):   # as Ctrl-C does: unwind, so the `finally` removes the work folder
        signal.signal(signum, _exit_on_signal)
    try:
        result = bench(configs, work, max(1, args.repeat), args.diff_only)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
