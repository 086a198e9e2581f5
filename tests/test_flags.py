"""`cookbookgen flags` and `scripts/flag_catalogs.py`: every published flag checked against the parser
of the engine version its cell pins (issue 21)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cookbookgen.cli import main
from cookbookgen.flags.catalog import catalog
from conftest import CORPUS, DATA, ROOT, bundled_keys

SCRIPT = ROOT / "scripts" / "flag_catalogs.py"
MINI = ROOT / "tests" / "data" / "flags" / "mini-sglang"
RELEASE_19 = "lmsysorg/sglang:v0.5.19-cu130"
RELEASE_23 = "lmsysorg/sglang:v0.5.23-cu130"
NIGHTLY = "lmsysorg/sglang:nightly-dev-cu13-20261015-a6a8c560"


def worker(*args: list[str], cmd: str = "python3 -m sglang.launch_server", role: str = "agg") -> dict[str, Any]:
    return {"kind": "worker", "role": role, "title": f"{role} worker", "cmd": cmd, "args": [list(a) for a in args]}


def points_file(tmp_path: Path, *points: tuple[str, str, list[dict[str, Any]]]) -> Path:
    """A cookbook as `render --format json` writes it: one (config, image, blocks) per point."""
    path = tmp_path / "points.json"
    path.write_text(json.dumps([{"config": c, "image": i, "blocks": b} for c, i, b in points]))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["flags", *argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def classes(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f["flag"], f["class"]) for cell in doc["cells"] for f in cell["findings"])


# --- the catalogs ----------------------------------------------------------------------------------

def test_two_real_sglang_catalogs_differ_where_the_issue_says() -> None:
    old, new = catalog("sglang", "0.5.19"), catalog("sglang", "0.5.23")
    assert old is not None and new is not None
    assert "--nsa-prefill-backend" in old.options and "--nsa-prefill-backend" not in new.options
    assert not old.options["--enable-dp-attention"].deprecated
    assert new.options["--enable-dp-attention"].deprecated and new.options["--enable-dp-attention"].replacement == "--attn-dp-size <dp-size>"
    assert "--cuda-graph-max-bs" in old.options and "--cuda-graph-max-bs" not in new.options
    assert len({o.name for o in new.options.values()}) == 532   # the issue's count of SGLang 0.5.23's options
    assert new.sha256 == "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937"


def test_generator_reads_a_server_args_like_package(tmp_path: Path) -> None:
    wheel = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path in sorted(MINI.rglob("*.txt")):
            z.write(path, str(path.relative_to(MINI)).removesuffix(".txt"))
    subprocess.run([sys.executable, str(SCRIPT), "sglang", "9.9.9", "--package", str(wheel), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    doc = json.loads((tmp_path / "sglang-9.9.9.json").read_text())
    flags = doc["flags"]
    assert doc["version"] == "9.9.9" and doc["package"] == wheel.name and len(doc["sha256"]) == 64
    assert flags["--model-path"] == {"aliases": ["--model"], "nargs": 1}
    assert flags["--tp-size"] == {"aliases": ["--tensor-parallel-size"], "nargs": 1}
    assert flags["--trust-remote-code"] == {"nargs": 0}
    assert flags["--load-format"]["choices"] == ["auto", "dummy", "pt"]           # a list concatenation of a constant
    assert flags["--kv-dtype"]["choices"] == ["auto", "fp8"]                      # Optional[Literal[...]]
    assert flags["--overlap"] == {"aliases": ["--no-overlap"], "nargs": 0}
    assert flags["--grpc-mode"]["deprecated"] and flags["--grpc-mode"]["replacement"] == "--smg-grpc-mode"
    assert flags["--attention-backend"]["choices"] == ["fa3", "flashinfer", "triton"]   # a constant of another module
    assert "choices" not in flags["--reasoning-parser"]                           # a registry: unknown, so not checked
    assert flags["--cuda-graph-bs"]["nargs"] == "+"
    assert flags["--old-backend"]["replacement"] == "--attention-backend" and flags["--old-backend"]["nargs"] == 1
    assert flags["--old-switch"] == {"deprecated": True, "nargs": 0, "replacement": "--enable-metrics"}
    assert flags["--gone"]["refused"] == "--gone is no longer supported."
    assert flags["--dp-size"]["nargs"] == 1 and flags["--lora-paths"]["nargs"] == "+"   # a namespace class under fields/
    assert "--hidden-field" not in flags and "--plain-field" not in flags
    assert flags["-h"] == {"aliases": ["--help"], "nargs": 0}


# --- the check ------------------------------------------------------------------------------------

def test_each_class_reported_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [worker(["--model-path", "m"], ["--nsa-prefill-backend", "fa3"], ["--enable-dp-attention"], ["--tp", "4"],
                     ["--cuda-graph-max-bs", "64"], ["--attention-backend", "no-such-kernel"], ["--no-such-flag"])]
    path = points_file(tmp_path, ("key", RELEASE_23, blocks), ("key", RELEASE_23, blocks))
    code, doc = run(capsys, "--cookbook", str(path))
    assert code == 1
    assert classes(doc) == [
        ("--attention-backend", "bad-choice"), ("--cuda-graph-max-bs", "ambiguous-abbreviation"),
        ("--enable-dp-attention", "deprecated"), ("--no-such-flag", "unknown-flag"),
        ("--nsa-prefill-backend", "removed-in"), ("--tp", "abbreviation-only")]
    details = {f["flag"]: f["detail"] for f in doc["cells"][0]["findings"]}
    assert details["--nsa-prefill-backend"] == "0.5.20 (last in 0.5.19); use --dsa-prefill-backend"   # the successor its source names
    assert details["--enable-dp-attention"] == "use --attn-dp-size <dp-size>"
    assert details["--tp"] == "accepted only as an abbreviation of --tp-size"
    assert details["--cuda-graph-max-bs"].startswith("could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill")
    assert doc["counts"] == {"unknown-flag": 1, "removed-in": 1, "ambiguous-abbreviation": 1, "bad-choice": 1,
                             "deprecated": 1, "abbreviation-only": 1}


def test_the_same_flags_against_the_older_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [worker(["--nsa-prefill-backend", "fa3"], ["--enable-dp-attention"], ["--cuda-graph-max-bs", "64"])]
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", RELEASE_19, blocks))))
    assert code == 0
    assert classes(doc) == [("--cuda-graph-max-bs", "deprecated"), ("--nsa-prefill-backend", "deprecated")]


@pytest.mark.parametrize(("arg", "cls"), [
    (["--tp-size"], "missing-value"),
    (["--tp-size", "2", "4"], "unexpected-value"),
    (["--enable-metrics", "true"], "unexpected-value"),
    (["--enable-metrics=true"], "unexpected-value"),
    (["--cuda-graph-bs-decode"], "missing-value"),
    (["--attention-backend=nope"], "bad-choice"),
])
def test_values_read_as_argparse_reads_them(arg: list[str], cls: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", RELEASE_23, [worker(arg)]))))
    assert (code, classes(doc)) == (1, [(arg[0], cls)])


def test_clean_flags_and_placeholders_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [worker(["--model-path", "m"], ["--tp-size", "4"], ["--attention-backend", "fa3"], ["--node-rank", "$NODE_RANK"],
                     ["--cuda-graph-bs-decode", "1", "2", "4"], ["--host=0.0.0.0"])]
    assert run(capsys, "--cookbook", str(points_file(tmp_path, ("key", RELEASE_23, blocks)))) [0] == 0


def test_a_nightly_is_checked_against_the_releases_around_its_date(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 2026-10-15 lies between sglang 0.5.21 (first on PyPI 2026-10-01) and 0.5.22 (2026-10-16): both catalogs check it.
    blocks = [worker(["--no-such-flag"], ["--swa-prefix-tails", "2"], ["--cuda-graph-tc-compiler", "eager"], ["--tp-size", "4"])]
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", NIGHTLY, blocks))))
    cell = doc["cells"][0]
    assert code == 1 and cell["versions"] == {"sglang": "0.5.21/0.5.22"} and cell["coverage"] == "bracket"
    assert cell["bases"][0]["note"].endswith("2026-10-15 lies between the releases 0.5.21 (2026-10-01) and 0.5.22 (2026-10-16)")
    # refused by both: a finding; by the later release only (removed in 0.5.22): a warning that does not fail the run
    assert classes(doc) == [("--cuda-graph-tc-compiler", "bracket-only"), ("--no-such-flag", "unknown-flag")]
    detail = {f["flag"]: f["detail"] for f in cell["findings"]}["--cuda-graph-tc-compiler"]
    assert detail.startswith("sglang 0.5.22 refuses it (removed-in: 0.5.22 (last in 0.5.21)")
    assert run(capsys, "--cookbook", str(points_file(tmp_path, ("key", NIGHTLY, [worker(["--cuda-graph-tc-compiler", "eager"])]))))[0] == 0


def test_a_build_newer_or_undated_is_checked_against_the_newest_but_not_trusted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [worker(["--no-such-flag"])]
    newer = "lmsysorg/sglang:nightly-dev-cu13-20261201-0123abcd"    # after 0.5.23 (2026-10-30), the newest release
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", newer, blocks))))
    assert code == 0 and doc["cells"][0]["versions"] == {"sglang": "0.5.23"} and doc["cells"][0]["coverage"] == "unchecked"
    assert classes(doc) == [("", "newer-than-catalogs"), ("--no-such-flag", "unknown-flag")]
    assert [f["certain"] for f in doc["cells"][0]["findings"] if f["flag"]] == [False]
    undated = "lmsysorg/sglang:dev-cu13-nightly-09242"               # a tag with no full date (deepseek-v4.jsx)
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", undated, blocks))))
    assert code == 0 and classes(doc) == [("", "approximate"), ("--no-such-flag", "unknown-flag")]
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", undated, blocks))), "--engine-version", "0.5.23")
    assert code == 1 and classes(doc) == [("--no-such-flag", "unknown-flag")] and doc["cells"][0]["coverage"] == "exact"


def test_dynamo_wrapper_reads_its_own_flags_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dynamo = "python3 -m dynamo.sglang"
    blocks = [worker(["--request-plane", "nats"], ["--tp-size", "4"], cmd=dynamo)]
    # sglang-runtime:1.2.1 pins both versions: the wrapper's flag is checked against ai-dynamo 1.2.1.
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.2.1", blocks))))
    assert (code, classes(doc)) == (0, [])
    assert doc["cells"][0]["versions"] == {"ai-dynamo": "1.2.1", "sglang": "0.5.11"}
    bad = [worker(["--request-plane", "carrier-pigeon"], cmd=dynamo)]
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.2.1", bad))))
    assert (code, classes(doc)) == (1, [("--request-plane", "bad-choice")])
    # An SGLang release image names no Dynamo version: the newest ai-dynamo catalog reads the wrapper's flags, approximately.
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", RELEASE_19, blocks))))
    assert (code, classes(doc), doc["cells"][0]["coverage"]) == (0, [("", "approximate")], "unchecked")
    # An install step's pin names it: a dev build published on PyPI has its own catalog.
    pinned = [{**blocks[0], "preamble": ['pip install "ai-dynamo-runtime==1.6.0.dev20261014" "ai-dynamo==1.6.0.dev20261014"']}]
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", RELEASE_19, pinned))))
    assert (code, classes(doc), doc["cells"][0]["versions"]) == (0, [], {"ai-dynamo": "1.6.0.dev20261014", "sglang": "0.5.19"})
    # A pin with no catalog of its own lies between two releases that have one: 1.3.0.dev1 between 1.2.1 and 1.3.0.post1.
    early = [{**blocks[0], "preamble": ['pip install "ai-dynamo==1.3.0.dev1"']}]
    code, doc = run(capsys, "--cookbook", str(points_file(tmp_path, ("key", RELEASE_19, early))))
    assert (code, doc["cells"][0]["versions"]["ai-dynamo"], doc["cells"][0]["coverage"]) == (0, "1.2.1/1.3.0.post1", "bracket")


def test_text_report_groups_per_cell_with_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = points_file(tmp_path, ("a", RELEASE_23, [worker(["--tp", "2"])]), ("b", NIGHTLY, [worker(["--tp", "2"])]))
    assert main(["flags", "--cookbook", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "a (sglang 0.5.23): 1 flags checked, exact",
        "  abbreviation-only: agg: --tp: accepted only as an abbreviation of --tp-size",
        "b (sglang 0.5.21/0.5.22): 1 flags checked, bracket",
        "  sglang bracket: a nightly build of the SGLang main branch of 2026-10-15 (commit a6a8c560): the tag names its day; "
        "2026-10-15 lies between the releases 0.5.21 (2026-10-01) and 0.5.22 (2026-10-16)",
        "  abbreviation-only: agg: --tp: accepted only as an abbreviation of --tp-size",
        "2 cells (1 exact (50 %), 1 bracket (50 %), 0 unchecked (0 %)), 2 flags checked (2 against their version or the releases "
        "around it, 100 %): 2 abbreviation-only",
    ]


@pytest.mark.parametrize(("argv", "message"), [
    (["--engine-version", "0.0.1"], "--engine-version: unknown engine version (no flag catalog) '0.0.1'; expected one of: "),
    (["--config", "no-such-key"], "--config: no cell of config 'no-such-key' in the cookbook"),
    (["--source", "x"], "--source: give --source ROOT --config KEY, or a cookbook, not both"),
])
def test_bad_input_exits_2(argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = points_file(tmp_path, ("key", RELEASE_23, [worker(["--tp-size", "2"])]))
    assert main(["flags", "--cookbook", str(path), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"cookbookgen: error: {message}")


# --- the bundled data and the corpus --------------------------------------------------------------

def test_bundled_cells_each_checked_or_reported_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(capsys, "--cookbook", str(DATA / "cookbook.yaml"))
    assert code == 0
    sglang = [c for c in doc["cells"] if c["cell"].split("#")[0] in bundled_keys("sglang")]     # the catalogs are SGLang's
    assert sglang
    for cell in sglang:
        assert cell["checked_flags"] or [f["class"] for f in cell["findings"]] == ["unknown-version"]
    code, doc = run(capsys, "--cookbook", str(DATA / "cookbook.yaml"), "--engine-version", "0.5.23")
    assert all(cell["checked_flags"] for cell in doc["cells"] if cell["cell"].split("#")[0] in bundled_keys("sglang"))


def test_source_config_renders_and_checks(capsys: pytest.CaptureFixture[str]) -> None:
    key = "dsv41flash-fp4-gb300-sglang-agentic-dspark"
    code, doc = run(capsys, "--source", str(DATA / "inferencex"), "--config", key, "--engine-version", "0.5.23")
    assert code == 0 and doc["cells"][0]["cell"] == key and doc["cells"][0]["checked_flags"] > 0


def test_corpus_module_release_cells_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    module = CORPUS / "sglang-cookbook" / "agentx" / "deepseek-ai" / "deepseek-v4.jsx"
    code, doc = run(capsys, "--cookbook", str(module))
    release = [c for c in doc["cells"] if c["versions"].get("sglang") == "0.5.19"]
    assert release and all(c["checked_flags"] for c in release)
    found = {(f["flag"], f["class"]) for c in release for f in c["findings"]}
    assert ("--cuda-graph-max-bs", "deprecated") in found and ("--tp", "abbreviation-only") in found


# --- the build's badge per cell -------------------------------------------------------------------

def test_build_shows_a_flag_badge_per_cell() -> None:
    import datetime as dt

    from cookbookgen.cells.assemble import load_cookbook
    from cookbookgen.publish import pages
    from cookbookgen.publish.site import read_templates

    cookbook = load_cookbook(DATA / "cookbook.yaml")
    page = cookbook.pages[0]
    cell = page.cells[0]
    point = cell.points[0]
    blocks = tuple(b.model_copy(update={"args": (*b.args, ("--no-such-flag",))}) if b.kind == "worker" else b
                   for b in point.deployment.blocks)
    broken_point = point.model_copy(update={"deployment": point.deployment.model_copy(update={"blocks": blocks})})
    broken = cell.model_copy(update={"image": RELEASE_23, "points": (broken_point, *cell.points[1:])})
    changed = cookbook.model_copy(update={"pages": (page.model_copy(update={"cells": (broken, *page.cells[1:])}),)})
    templates = read_templates(ROOT / "templates")
    files = pages.site_files(changed, templates, dt.date(2026, 12, 1))
    text = "".join(files[pages.cell_path(page, c)] for c in page.cells)     # the provenance card of each deployment page
    assert text.count("cb-status-flags-fail") == 1
    assert "flags-fail</span> 1 flag&#40;s&#41; ai-dynamo 1.6.1, dynamo-frontend 1.6.1, sglang 0.5.23 would refuse&#58; --no-such-flag &#40;unknown-flag&#41;" in text
    # the SGLang cells' nightly is checked against the releases around its date; the vLLM cells have no catalog
    assert text.count("cb-status-flags-unchecked") == len([c for c in page.cells if c.config_key not in bundled_keys("sglang")]) > 0
    assert "flags-unchecked</span> not checked&#58; vllm&#58; approximate &#40;vllm 0.34.0&#41;&#58; vllm version unknown" in text


# --- the diff fails on a flag the pinned version refuses ------------------------------------------

def test_diff_reports_a_flag_the_pinned_release_lacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "dsv41flash-fp4-gb300-sglang-agentic-dspark"
    assert main(["render", "--source", str(DATA / "inferencex"), "--config", key, "--point", "tp4/c1", "--format", "json"]) == 0
    point = json.loads(capsys.readouterr().out)
    point["image"] = "lmsysorg/sglang:v0.5.16-cu130"    # a release before --prefill-decode-interval (first in 0.5.19)
    path = tmp_path / "point.json"
    path.write_text(json.dumps(point))
    assert main(["diff", "--cookbook", str(path), "--source", str(DATA / "inferencex"), "--format", "json"]) == 1
    flags = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["kind"] == "flag"]
    assert [(f["role"], f["item"], f["cls"], f["detail"].split(";")[0]) for f in flags] == [
        ("agg", "--prefill-decode-interval", "mismatch", "unknown-flag: first in 0.5.19")]
