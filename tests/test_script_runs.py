"""`launches.ScriptRuns`: each distinct script + variables runs once per run, several at once, and a run's
located error is given again, the same, to every point that asks for it."""

from __future__ import annotations

import threading

import pytest

from cookbookgen.errors import CookbookError
from cookbookgen.recipes import launches
from cookbookgen.recipes.launches import ScriptRuns
from cookbookgen.recipes.script import Capture, Launch, ScriptFiles

SCRIPT = ScriptFiles("benchmarks/single_node/a.sh", {"benchmarks/single_node/a.sh": b"cd /workspace/x\n",
                                                    "benchmarks/benchmark_lib.sh": b"true\n"})


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, str]]]:
    """Stand-in for the sandbox (these tests are about which runs start, not about running them): records
    each run and answers with the CONC it was given, or a located error for CONC=0."""
    seen: list[tuple[str, dict[str, str]]] = []
    lock = threading.Lock()

    def run_script(script: ScriptFiles, shown: str, variables: dict[str, str]) -> Capture:
        with lock:
            seen.append((script.files[script.main].decode(), dict(variables)))
        if variables["CONC"] == "0":
            raise CookbookError.at(shown, 3, "script", "fails with exit status 1")
        return Capture((Launch("sglang", 2, ("--max-running-requests", variables["CONC"]), {}),), ())

    monkeypatch.setattr(launches, "run_script", run_script)
    monkeypatch.setattr(launches, "sandbox", lambda: ("bwrap", ""))
    return seen


def test_each_distinct_run_once(runs: list[tuple[str, dict[str, str]]]) -> None:
    memo = ScriptRuns()
    jobs = [(SCRIPT, "a.sh", {"CONC": str(c)}) for c in (4, 8, 16, 4, 8)]
    memo.prefetch(jobs)
    for conc in ("4", "8", "16"):
        assert memo.capture(SCRIPT, "a.sh", {"CONC": conc}).launches[0].argv == ("--max-running-requests", conc)
    assert sorted(v["CONC"] for _, v in runs) == ["16", "4", "8"]      # started once each, captured, not run again
    memo.capture(SCRIPT, "a.sh", {"CONC": "32"})
    assert len(runs) == 4                       # a new variable set is a new run
    assert runs[0][0] == "cd $HOME/workspace/x\n"     # the sandbox gets the files pointed at its home folder


def test_key_is_content_not_identity(runs: list[tuple[str, dict[str, str]]]) -> None:
    memo = ScriptRuns()
    memo.capture(SCRIPT, "a.sh", {"CONC": "4"})
    copy = ScriptFiles(SCRIPT.main, {name: bytes(data) for name, data in SCRIPT.files.items()})
    memo.capture(copy, "a.sh", {"CONC": "4"})
    assert len(runs) == 1
    edited = ScriptFiles(SCRIPT.main, {**SCRIPT.files, "benchmarks/benchmark_lib.sh": b"false\n"})
    memo.capture(edited, "a.sh", {"CONC": "4"})
    memo.capture(SCRIPT, "b.sh", {"CONC": "4"})       # named otherwise in its errors
    assert len(runs) == 3


def test_error_given_again(runs: list[tuple[str, dict[str, str]]]) -> None:
    memo = ScriptRuns()
    memo.prefetch([(SCRIPT, "a.sh", {"CONC": "0"}), (SCRIPT, "a.sh", {"CONC": "1"})])
    for _ in range(2):
        with pytest.raises(CookbookError) as exc:
            memo.capture(SCRIPT, "a.sh", {"CONC": "0"})
        assert str(exc.value) == "a.sh:3: script: fails with exit status 1"
    memo.capture(SCRIPT, "a.sh", {"CONC": "1"})
    assert sorted(v["CONC"] for _, v in runs) == ["0", "1"]


def test_stopped_runs_never_start_and_a_point_still_gets_its_own(runs: list[tuple[str, dict[str, str]]],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`stop` (a caller ending early) drops the runs not begun; a point asking for one later runs it then."""
    begun, release = threading.Event(), threading.Event()
    recorded = launches.run_script

    def slow_first(script: ScriptFiles, shown: str, variables: dict[str, str]) -> Capture:
        if variables["CONC"] == "1":
            begun.set()
            release.wait(10)
        return recorded(script, shown, variables)

    monkeypatch.setattr(launches, "run_script", slow_first)
    monkeypatch.setattr(ScriptRuns, "WORKERS", 1)
    memo = ScriptRuns()
    memo.prefetch([(SCRIPT, "a.sh", {"CONC": str(c)}) for c in (1, 2, 3)])
    assert begun.wait(10)
    memo.stop()
    release.set()
    assert memo.capture(SCRIPT, "a.sh", {"CONC": "3"}).launches[0].argv == ("--max-running-requests", "3")
    assert memo.capture(SCRIPT, "a.sh", {"CONC": "1"}).launches[0].argv == ("--max-running-requests", "1")
    assert sorted(v["CONC"] for _, v in runs) == ["1", "3"]     # 2 was dropped and never asked for
