"""benchmarks/bench.py: one small run end to end (every command exits 0, the JSON has the ratios and the raw
figures); the timings themselves are printed by CI's `bench.py --quick`, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench  # noqa: E402
import synth  # noqa: E402


def test_a_small_run_writes_every_ratio_and_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--configs", "1", "--work", str(tmp_path / "work"),
                           "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    for key in ("diff_vs_yaml_parse", "build_vs_mkdocs", "incremental_vs_full"):
        assert doc[key] > 0 and key in doc["goals"], key
        assert f"| {key} |" in proc.stdout
    assert set(doc["warm"]) == {"diff_vs_yaml_parse", "build_vs_mkdocs"}
    runs = doc["raw"]["runs"]
    assert set(runs) == {"render", "export", "diff_cold", "build_cold", "mkdocs", "diff_fill_cache", "diff_warm", "build_warm",
                         "build_incremental"}
    assert all(r["status"] == 0 and r["seconds"] > 0 and r["peak_mb"] > 0 for r in runs.values())
    assert doc["raw"]["configs"] == 1 and doc["raw"]["yaml_parse_s"] > 0
    assert "incremental: MkDocs processed" in (tmp_path / "work" / "logs" / "build_incremental.log").read_text()


def test_diff_only_measures_the_diff_ratio_alone(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--configs", "2", "--diff-only", "--work", str(tmp_path / "work"),
                           "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert set(doc["raw"]["runs"]) == {"render", "diff_cold", "diff_fill_cache", "diff_warm"}
    assert doc["diff_vs_yaml_parse"] == doc["raw"]["runs"]["diff_cold"]["seconds"] / doc["raw"]["yaml_parse_s"]
    assert "build_vs_mkdocs" not in doc and "| diff_vs_yaml_parse |" in proc.stdout and "| build_vs_mkdocs |" not in proc.stdout
    assert not (tmp_path / "work" / "site").exists()


def test_the_synthetic_repository_has_the_shape_of_a_real_one(tmp_path: Path) -> None:
    manifest = synth.generate(tmp_path, 3)
    doc = yaml.safe_load(manifest.read_text())
    assert [len(p["configs"]) for p in doc["pages"]] == [1, 1, 1]       # one model page per config, up to 20 models
    files = bench.diff_inputs(manifest)
    assert files[0].name == "cookbook.yaml" and "master" in files[1].name and files[2].name == "perf-changelog.yaml"
    assert len(files) == 1 + 1 + 1 + 3                                   # manifest, master, changelog, one recipe per config
    changelog = yaml.safe_load(files[2].read_text())
    assert len(changelog) > 3                                            # old glob entries and one exact entry per config
    recipe = yaml.safe_load(files[-1].read_text())
    assert len(recipe["base"]["roles"]["agg"]["args"]) >= 40 and len([k for k in recipe if k.startswith("override_")]) == synth.POINTS
    before = files[3].read_text()
    bench.change_one_recipe(manifest)
    assert files[3].read_text() != before


def test_the_instruction_count_splits_a_run_into_fixed_and_per_config_costs(monkeypatch) -> None:
    """benchmarks/instructions.py: valgrind's total is read from its summary, and two sizes give the
    fixed cost and the cost of one config (valgrind itself runs in the benchmark, not here)."""
    import instructions

    assert instructions._REFS.search("==12== \n==12== I   refs:      4,456,632,336\n").group(1) == "4,456,632,336"
    counted = {Path("small"): 1_500_000_000 + 10 * 80_000_000, Path("large"): 1_500_000_000 + 30 * 80_000_000}
    monkeypatch.setattr(instructions, "instructions", lambda manifest, src: counted[manifest])
    assert instructions.measure(Path("small"), Path("large"), (10, 30), None) == (1500.0, 80.0)


def test_the_stage_timers_split_a_diff_by_stage_and_point_and_put_the_code_back(tmp_path: Path) -> None:
    """benchmarks/stages.py: every timed stage runs, first and later points are told apart, the
    shares and the rest add up to the whole run, and the timed functions are the originals again after."""
    import stages

    from cookbookgen.diff import check

    original = check.point_findings
    total, own, calls = stages.measure(synth.generate(tmp_path, 2))
    assert check.point_findings is original
    assert calls["compare, first point"] == 2 and calls["compare, later points"] == 2 * (synth.POINTS - 1)
    assert calls["render, first point"] == 2 and calls["render, later points"] == 2 * (synth.POINTS - 1)
    assert {"resolve", "report", "group points into cells", "pairing", "expectations", "published points"} <= set(calls)
    assert 0 < sum(own.values()) < total
    lines = stages.table(total, own).splitlines()
    shares = [float(line.rsplit("|", 2)[1].strip().rstrip("%")) for line in lines[2:]]
    assert len(shares) == len(own) + 1 and abs(sum(shares) - 100) < 0.5


def test_a_terminated_run_removes_its_temporary_work_folder(tmp_path: Path) -> None:
    """SIGTERM (a CI timeout, `kill`) unwinds like Ctrl-C: the running child is killed and the temporary
    work folder removed, exit 128 + 15."""
    import os
    import signal
    import time

    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--configs", "3"],
                            env={**os.environ, "TMPDIR": str(tmp_path)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("cookbookgen-bench-*/logs/render.log")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob("cookbookgen-bench-*")), "the run never started"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert not list(tmp_path.iterdir()), out


def test_work_folder_of_the_users_is_never_replaced(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--configs", "1", "--diff-only", "--work", str(mine)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "is not an earlier benchmark's work folder" in proc.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
