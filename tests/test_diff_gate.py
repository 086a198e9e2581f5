"""`cookbookgen diff` as a CI gate: every published cell ends checked or unpaired with one reason, the
run fails on any mismatch or unpaired cell (unless `--allow-unpaired`), `--cell` narrows, and every
report leads with its verdict. Data: the public SGLang module `deepseek-v4.jsx` and the corpus checkout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cookbookgen.cli import main
from cookbookgen.diff.tables import glossary
from cookbookgen.diff.model import CLASSES, UnpairedReason
from cookbookgen.diff.report import MARKDOWN_LIMIT, fit

from conftest import bundled_keys

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
MODULE = CORPUS / "sglang-cookbook" / "agentx" / "deepseek-ai" / "deepseek-v4.jsx"
CHECKOUT = CORPUS / "inferencex"
DISAGG = "dsv4-fp4-gb300-dynamo-sglang-agentic-disagg"


def diff(capsys: pytest.CaptureFixture[str], *argv: str, module: Path = MODULE) -> tuple[int, str]:
    code = main(["diff", "--cookbook", str(module), "--source", str(CHECKOUT), *argv])
    return code, capsys.readouterr().out


def test_a_module_whose_every_config_key_is_misspelled_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "m.jsx"
    module.write_text(MODULE.read_text(encoding="utf-8").replace('"configKey": "dsv4-', '"configKey": "dsv-4-'), encoding="utf-8")
    code, out = diff(capsys, "--format", "json", module=module)
    doc = json.loads(out)
    assert code == doc["summary"]["exit"] == 1 and doc["summary"]["points"] == 0
    assert {(c["state"], c["reason"]) for c in doc["cells"]} == {("unpaired", "no-master-entry")} and len(doc["cells"]) == 26
    code, out = diff(capsys, "--allow-unpaired", module=module)
    assert code == 1 and out.splitlines()[0].startswith("cookbookgen diff: FAIL (exit 1): no point was checked; compared ")


def test_unpaired_cells_fail_the_run_unless_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = diff(capsys, "--config", "dsv4-fp8-h200-dynamo-sglang-agentic-agg")
    assert code == 1 and out.splitlines()[0].startswith("cookbookgen diff: FAIL (exit 1): 1 unpaired cell(s), no point was checked; compared ")
    code, out = diff(capsys, "--allow-unpaired")
    assert code == 1 and out.splitlines()[0].startswith("cookbookgen diff: FAIL (exit 1): 19 mismatch(es); compared ")
    code, out = diff(capsys, "--allow-unpaired", "--config", "dsv4-fp4-gb300-dynamo-sglang-agentic-agg", "--cell", "dsv4-fp4-gb300-dynamo-sglang-agentic-agg#0")
    assert out.splitlines()[0].startswith("cookbookgen diff: PASS (exit 0): parity; compared "), "tp4/c8 is another cell's business"


def test_every_cell_ends_checked_or_unpaired_with_one_known_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = diff(capsys, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["summary"]["why"] == "19 mismatch(es), 22 unpaired cell(s)"
    assert doc["summary"]["unpaired"] == {"no-master-entry": 20, "recipe-missing": 1, "selector-missing": 1}
    for cell in doc["cells"]:
        assert (cell["state"] == "checked") == (cell["reason"] is None) and cell["tree"] == str(CHECKOUT)
        assert cell["state"] == "checked" or cell["reason"] in glossary()["unpaired"] and cell["detail"]
    checked = [c for c in doc["cells"] if c["state"] == "checked"]
    assert checked[1] == {"cell": f"{DISAGG}#0", "config": DISAGG, "state": "checked", "reason": None, "detail": "", "commit": None,
                          "tree": str(CHECKOUT), "recipe": "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv4/sglang/gb300-fp4/"
                          "agentx/disagg-variants.yaml:override_1p1d_c480", "points": ["1p1d-dep8-dep16/c480"]}


def test_cell_narrows_the_check_and_an_unknown_cell_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = diff(capsys, "--format", "json", "--cell", f"{DISAGG}#1")
    doc = json.loads(out)
    assert [c["cell"] for c in doc["cells"]] == [f"{DISAGG}#1"] and doc["summary"]["points"] == 1
    assert main(["diff", "--cookbook", str(MODULE), "--source", str(CHECKOUT), "--cell", "nope"]) == 2
    assert "--cell: no cell 'nope'" in capsys.readouterr().err


def test_the_text_report_leads_with_the_verdict_and_counts_roles_only_when_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = diff(capsys)
    lines = out.splitlines()
    assert lines[0].startswith("cookbookgen diff: FAIL (exit 1): 19 mismatch(es), 22 unpaired cell(s); compared ")
    assert lines[2] == "  cells     4 checked, 22 unpaired (1 selector-missing, 20 no-master-entry, 1 recipe-missing)"
    assert lines[3] == "  points    5 paired and compared" and lines[4].startswith("  findings  19 mismatch · 667 match · ")
    assert " ✗ " in lines[10] and len(lines) < 80 and " match ·" not in "\n".join(lines[5:])
    assert sum(line.startswith("unpaired ") for line in lines) == 22
    _, verbose = diff(capsys, "--verbose")
    assert verbose.splitlines()[:5] == lines[:5] and "    agg              43 match · 3 harness-only · 2 default-equivalent" in verbose


def test_the_markdown_report_fits_a_pr_comment(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = diff(capsys, "--format", "markdown")
    assert out.startswith("### cookbookgen diff: FAIL (exit 1): 19 mismatch(es), 22 unpaired cell(s); compared ") and len(out) < MARKDOWN_LIMIT
    assert "  - Result: 18 mismatch(es) (8 distinct); apart" in out, "the count the verdict adds up, not the groups"
    long = "### v\n<details><summary>x</summary>\n" + "- line\n" * 20_000
    cut = fit(long)
    assert len(cut) < MARKDOWN_LIMIT and cut.count("<details>") == cut.count("</details>") == 1 and "cut to fit" in cut


def test_explain_documents_every_finding_class_and_unpaired_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert set(glossary()["classes"]) == set(CLASSES)
    assert set(glossary()["unpaired"]) == set(UnpairedReason.__args__)    # type: ignore[attr-defined]
    for name in [*CLASSES, *glossary()["unpaired"]]:
        assert main(["diff", "--explain", name]) == 0
        assert capsys.readouterr().out.startswith(f"{name} (")
    assert main(["diff", "--explain", "nope"]) == 2
    assert "unknown finding class or unpaired reason 'nope'" in capsys.readouterr().err


# --- false negatives: each mutation of a module at parity must fail the run, naming what it changed -------

@pytest.fixture(scope="module")
def bundled_module() -> dict:
    from cookbookgen.agentx.encode import encode
    from cookbookgen.cells.assemble import load_cookbook

    return encode(load_cookbook(Path(__file__).resolve().parents[1] / "data" / "cookbook.yaml", only=bundled_keys("sglang")))


def _mutated(tmp_path: Path, module: dict, change: object) -> Path:
    data = json.loads(json.dumps(module))
    change(data)      # type: ignore[operator]
    path = tmp_path / "module.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _set(path: str, value: object) -> object:
    def change(module: dict) -> None:
        *parents, last = path.split(".")
        node = module
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value
    return change


def _share_kv_events_port(module: dict) -> None:
    """The second co-located prefill worker of the 6P1D cell publishes the first's KV-events endpoint."""
    text = json.dumps(module).replace("tcp://*:5559", "tcp://*:5557")
    module.clear()
    module.update(json.loads(text))


ROOT = Path(__file__).resolve().parents[1]
MUTATIONS = [
    # (mutation, item of the mismatch, text its line must hold)
    (_share_kv_events_port, "ports --kv-events-config", "2 workers share a node but not a distinct --kv-events-config port each"),
    (_set("cells.2.gpus", 12), "gpus", "(recipe 24; cookbook 12)"),
    (_set("cells.2.label", "Disagg 3P1D · prefill DEP2 · decode DEP16"), "label", "(recipe 4P1D; cookbook 3P1D)"),
    (_set("cells.0.routers.dynamo.install", ["pip install ai-dynamo==1.2.3"]), "install", "(recipe none; cookbook 1.2.3)"),
    (_set("cells.0.points.0.kv", "hicache"), "kv", "(recipe none; cookbook hicache)"),
    (_set("cells.0.points.0.item", 1), "item", "(recipe 0; cookbook 1)"),
    (_set("cells.0.points.1.override", "override_tp4_c16"), "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg#0",
     "wrong override label: override_tp4_c16 serves c16; c4 is served by override_tp4_c4"),
]


@pytest.mark.parametrize(("change", "item", "text"), MUTATIONS, ids=[m[1] for m in MUTATIONS])
def test_a_false_claim_of_a_module_fails_the_run(tmp_path: Path, bundled_module: dict, change: object, item: str, text: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    module = _mutated(tmp_path, bundled_module, change)
    code = main(["diff", "--cookbook", str(module), "--source", str(ROOT / "data" / "inferencex"), "--format", "json"])
    mismatches = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["cls"] == "mismatch"]
    assert code == 1 and {f["item"] for f in mismatches} == {item} | ({"tp4/c4"} if item.endswith("#0") else set())
    code = main(["diff", "--cookbook", str(module), "--source", str(ROOT / "data" / "inferencex")])
    assert code == 1 and text in capsys.readouterr().out


def test_the_unmutated_bundled_module_passes(tmp_path: Path, bundled_module: dict, capsys: pytest.CaptureFixture[str]) -> None:
    module = _mutated(tmp_path, bundled_module, lambda m: None)
    assert main(["diff", "--cookbook", str(module), "--source", str(ROOT / "data" / "inferencex")]) == 0
    assert capsys.readouterr().out.startswith("cookbookgen diff: PASS (exit 0): parity; compared ")


@pytest.mark.parametrize(("name", "value", "item"), [("--port", "8100", "ports"), ("VLLM_NIXL_SIDE_CHANNEL_PORT", "5400", "ports VLLM_NIXL_SIDE_CHANNEL_PORT")])
def test_a_port_a_worker_shares_with_the_other_roles_worker_on_its_node_fails(tmp_path: Path, name: str, value: str, item: str,
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The bundled vLLM lane's decode workers run on the prefill node's free GPUs: each needs its own ports."""
    source = ROOT / "data" / "inferencex"
    argv = ["render", "--source", str(source), "--config", "dsv41flash-fp4-mi325x-vllm-agentic-nixl", "--point", "c16", "--format", "json"]
    assert main(argv) == 0
    point = json.loads(capsys.readouterr().out)
    (tmp_path / "as-rendered.json").write_text(json.dumps(point), encoding="utf-8")
    decode = next(b for b in point["blocks"] if b.get("role") == "decode")
    if name.startswith("--"):
        decode["args"] = [[a[0], value] if a[0] == name else a for a in decode["args"]]
    else:
        decode["env"][name] = value
    (tmp_path / "mutated.json").write_text(json.dumps(point), encoding="utf-8")

    def mismatches(file: str) -> set[tuple[str, str]]:
        main(["diff", "--cookbook", str(tmp_path / file), "--source", str(source), "--format", "json"])
        return {(f["role"], f["item"]) for f in json.loads(capsys.readouterr().out)["findings"] if f["cls"] == "mismatch"}

    assert mismatches("mutated.json") - mismatches("as-rendered.json") == {("decode", item)}
