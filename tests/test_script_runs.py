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
    assert sorted(v["CONC"] for _, v in runs) == ["16", "4", "8"]
    for conc in ("4", "8", "16"):
        assert memo.capture(SCRIPT, "a.sh", {"CONC": conc}).launches[0].argv == ("--max-running-requests", conc)
    assert len(runs) == 3                       # captured, not run again
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
    assert len(runs) == 2
