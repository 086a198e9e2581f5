"""Bounded work on small hostile input: a sweep counts its combinations before it builds one and
refuses past SWEEP_LIMIT; a long conc-list is checked for repeats in linear time. Memory is measured
as the parent of the cookbookgen process sees it (docs/security.md)."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from cookbookgen.recipes.merge import SWEEP_LIMIT, sweep_combination, sweep_count
from test_bad_input import one_problem, run_cli

from conftest import CORPUS

SWEPT = CORPUS / "srt-slurm/srt-slurm-recipes/recipes/single-node/Qwen3.5/H200/sglang/1k1k-mtp.yaml"
MEMORY_BYTES = 500 << 20


def _with_sweep(tmp_path: Path, keys: int, values: int) -> Path:
    """The corpus's swept recipe with its sweep replaced by `keys` lists of `values` numbers each."""
    text = SWEPT.read_text()
    head, _, _ = text.partition("\nsweep:")
    lists = "".join(f"  k{k}: [{', '.join(str(v) for v in range(values))}]\n" for k in range(keys))
    path = tmp_path / "swept.yaml"
    path.write_text(head + "\nsweep:\n  tp: [8]\n  ep: [8]\n  conc: [16]\n" + lists)
    return path


def _peak(argv: list[str]) -> tuple[int, str, int]:
    """Exit status, stderr and peak memory (bytes) of a cookbookgen process."""
    measure = ("import resource, subprocess, sys\n"
               "done = subprocess.run([sys.executable, '-c', 'import sys; from cookbookgen.cli import main; sys.exit(main(sys.argv[1:]))',"
               " *sys.argv[1:]], capture_output=True, text=True)\n"
               "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
               "print(done.stderr, end='')\n")
    done = subprocess.run([sys.executable, "-c", measure, *argv], capture_output=True, text=True, timeout=300)
    first, _, err = done.stdout.partition("\n")
    code, peak = map(int, first.split())
    return code, err, peak


def test_the_corpus_sweep_is_a_sweep(tmp_path: Path) -> None:
    assert "\nsweep:" in SWEPT.read_text()


def test_a_sweep_past_the_limit_is_refused_before_any_combination_is_built(tmp_path: Path) -> None:
    """7 keys of 10 values (plus the recipe's own two of one): 10^7 combinations, in a file of 1 KB."""
    path = _with_sweep(tmp_path, 7, 10)
    code, err, peak = _peak(["render", "--recipe", f"{path}:sweep[5]", "--model", "org/model"])
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"cookbookgen: error: {path}:") and err.rstrip().endswith(
        f": sweep: 10000000 combinations, more than the {SWEEP_LIMIT} a sweep may have (the product of its 10 lists' lengths); "
        "split it into several files"), err
    assert peak < MEMORY_BYTES, peak


def test_a_sweep_at_the_limit_renders_its_last_combination(capsys, tmp_path: Path) -> None:
    path = _with_sweep(tmp_path, 4, 10)
    code, out, err = run_cli(capsys, ["render", "--recipe", f"{path}:sweep[{SWEEP_LIMIT - 1}]", "--model", "org/model"])
    assert code == 0, err
    match = one_problem(capsys, ["render", "--recipe", f"{path}:sweep[{SWEEP_LIMIT}]", "--model", "org/model"])
    assert match["msg"].startswith(f"unknown selector 'sweep[{SWEEP_LIMIT}]'") and f"({SWEEP_LIMIT} in all" in match["msg"]


def test_sweep_combination_is_picked_without_the_product() -> None:
    sweep = {f"k{k}": list(range(10)) for k in range(12)}      # 10^12 combinations: never built
    assert sweep_count(sweep) == 10 ** 12
    assert sweep_combination(sweep, 10 ** 12 - 1) == {f"k{k}": 9 for k in range(12)}
    assert sweep_combination(sweep, 123) == {**{f"k{k}": 0 for k in range(9)}, "k9": 1, "k10": 2, "k11": 3}


MASTER = """\
long-fp4-h200-sglang:
  image: lmsysorg/sglang:latest
  model: org/model
  model-prefix: long
  runner: cluster:h200-test
  precision: fp4
  framework: sglang
  multinode: false
  scenarios:
    agentic-coding:
    - search-space:
      - {{ tp: 1, conc-list: [{concs}] }}
"""


def test_a_repeat_in_a_long_conc_list_is_found_in_linear_time(capsys, tmp_path: Path) -> None:
    """200,000 concurrencies, the repeat last: a quadratic check would make 2*10^10 comparisons."""
    root = tmp_path / "checkout"
    (root / "configs").mkdir(parents=True)
    concs = [*range(1, 200_001), 7]
    (root / "configs" / "nvidia-master.yaml").write_text(MASTER.format(concs=", ".join(map(str, concs))))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    code, out, _ = run_cli(capsys, ["list", "--source", str(root)])      # a refused config is listed with its reason
    assert code == 0
    assert ("configs/nvidia-master.yaml:12: long-fp4-h200-sglang.scenarios.agentic-coding[0].search-space[0].conc-list[200000]: "
            "concurrency 7 listed twice (each is one point)") in out
    assert resource.getrusage(resource.RUSAGE_SELF).ru_utime - before < 120     # not a timing test: the quadratic check never ends


def test_the_selectors_of_a_document_are_listed_once_not_once_per_point(tmp_path: Path, monkeypatch) -> None:
    """Picking sweep combinations of one document lists its selectors once (10,000 points each listing
    10,000 selectors would be 10^8 steps)."""
    from cookbookgen.recipes import bundle
    from cookbookgen.recipes.workspace import Workspace

    calls = []
    listed = bundle._variant_names
    monkeypatch.setattr(bundle, "_variant_names", lambda doc: calls.append(doc) or listed(doc))
    path = _with_sweep(tmp_path, 4, 10)
    ws = Workspace(tmp_path)
    recipes = [ws.selected(path, f"sweep[{i}]") for i in (0, 1, 5000, SWEEP_LIMIT - 1)]
    assert len(calls) == 1
    assert [r.data["backend"]["sglang_config"]["aggregated"]["tensor-parallel-size"] for r in recipes] == [8] * 4
