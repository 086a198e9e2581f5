"""`cookbookgen diff` of the SGLang cookbook's published DeepSeek-V4.1 module against the InferenceX files its
cells cite: every cell ends checked or unpaired, and what fails the run is exactly the hand-judged list of
`data/expected/deepseek-v4_1.findings.yaml` (the module and the files: `data/corpus/inferencex-v41/SOURCES.md`).
Each of the module-format rules the diff once misread is pinned on the same real data.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cookbookgen.cells.describe import allocated_gpus
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.load import read_yaml_file
from test_bad_input import run_cli

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "corpus"
MODULE = CORPUS / "sglang-cookbook" / "agentx" / "deepseek-ai" / "deepseek-v4_1.jsx"
SOURCE = CORPUS / "inferencex-v41"
EXPECTED = DATA / "expected" / "deepseek-v4_1.findings.yaml"
GB300_SGLANG = "dsv41flash-fp4-gb300-sglang-agentic-dspark"
DISAGG = "dsv41flash-fp4-gb300-dynamo-sglang-agentic-disagg"


def _diff(capsys, module: Path, source: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli(capsys, ["diff", "--cookbook", str(module), "--source", str(source), "--format", "json", *extra])
    assert "Traceback" not in err, err
    doc = json.loads(out)
    assert doc["summary"]["exit"] == code
    return code, doc


def _shown(f: dict[str, Any]) -> str:
    return f"{f['role']} {f['kind']} {f['item']}: {f['detail']} (recipe {f.get('recipe')}; cookbook {f.get('cookbook')})"


def _by_cell(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each cell's state and the findings of its points that fail the run."""
    cell_of = {(c["config"], p): c["cell"] for c in doc["cells"] for p in c["points"]}
    out: dict[str, dict[str, Any]] = {}
    for c in doc["cells"]:
        state = {"state": c["state"]} | ({"reason": c["reason"], "detail": c["detail"]} if c["state"] == "unpaired" else {"failing": []})
        out[c["cell"]] = state
    for f in doc["findings"]:
        if f["cls"] in ("mismatch", "prohibited"):
            out[cell_of[f["config"], f["point"]]]["failing"].append({"point": f["point"], "finding": _shown(f)})
    return out


def test_the_module_at_its_cited_commits_reports_exactly_the_judged_findings(capsys) -> None:
    code, doc = _diff(capsys, MODULE, SOURCE, "--allow-unpaired")
    expected = read_yaml_file(EXPECTED).data["cells"]
    want = {cell: ({"state": e["state"], "reason": e["reason"], "detail": e["detail"]} if e["state"] == "unpaired"
                   else {"state": e["state"], "failing": [{"point": f["point"], "finding": f["finding"]} for f in e["failing"]]})
            for cell, e in expected.items()}
    got = _by_cell(doc)
    for cell in got.values():
        cell.get("failing", []).sort(key=lambda f: (f["point"], f["finding"]))
    for cell in want.values():
        cell.get("failing", []).sort(key=lambda f: (f["point"], f["finding"]))
    assert got == want
    assert all(f["why"] for e in expected.values() for f in e.get("failing", ()))     # every true finding is justified
    assert code == 1 and doc["summary"]["cells"] == {"checked": 8, "unpaired": 11}
    assert doc["summary"]["classes"]["mismatch"] == 10


def test_item_is_the_master_row_of_the_point(capsys) -> None:
    """GB300 SGLang: rows TP2·EP2 (c1-c128), TP4 (c1, c2), TP4·EP4 (c4-c128); the module numbers its 16 points
    0, 0, ..., 1, 1, 2, ...: the row, not the point's place among the config's points (0-15)."""
    _, doc = _diff(capsys, MODULE, SOURCE, "--config", GB300_SGLANG)
    items = [(f["point"], f["cls"], f["cookbook"]) for f in doc["findings"] if f["kind"] == "claim" and f["item"] == "item"]
    assert len(items) == 16 and {cls for _, cls, _ in items} == {"match"}
    assert {p: c for p, _, c in items}["tp4-ep4/c128"] == "2"


def test_an_item_naming_another_row_is_a_mismatch(capsys, tmp_path: Path) -> None:
    text = MODULE.read_text(encoding="utf-8")
    edited = text.replace('"concs": [128],\n     "item": 2,\n     "override": "override_tp4_c128"',
                          '"concs": [128],\n     "item": 15,\n     "override": "override_tp4_c128"')
    assert edited != text
    (tmp_path / "m.jsx").write_text(edited, encoding="utf-8")
    code, doc = _diff(capsys, tmp_path / "m.jsx", SOURCE, "--config", GB300_SGLANG)
    bad = [(f["point"], f["item"], f["recipe"], f["cookbook"]) for f in doc["findings"] if f["cls"] == "mismatch"]
    assert code == 1 and bad == [("tp4-ep4/c128", "item", "2", "15")]


def test_gpus_are_the_gpus_the_nodes_hold() -> None:
    """1P2D TP2 spread over 3 GB300 nodes takes 12 GPUs (the explorer's "12 GPUs"), one H200 node 8 whatever the TP."""
    assert allocated_gpus("gb300", 3) == 12 and allocated_gpus("gb200", 1) == 4
    assert [allocated_gpus(hw, 1) for hw in ("h100", "h200", "b200", "b300", "mi300x", "mi325x", "mi355x")] == [8] * 7
    assert allocated_gpus("rtx", 2, 5) == 5


def test_gpus_of_a_same_node_layout_are_checked(capsys) -> None:
    """The 1P2D cell says 12 GPUs: right for its spread c16 point (3 nodes), wrong for c48/c64 (2 nodes)."""
    _, doc = _diff(capsys, MODULE, SOURCE, "--config", DISAGG)
    gpus = {f["point"].split("/")[1]: (f["cls"], f["recipe"]) for f in doc["findings"] if f["kind"] == "claim" and f["item"] == "gpus"}
    assert gpus == {"c16": ("match", "12"), "c48": ("mismatch", "8"), "c64": ("mismatch", "8"), "c96": ("match", "8"),
                    "c160": ("match", "8"), "c256": ("match", "12")}


# --- script cells: pairing by the row the item names -------------------------------------------------

EXCERPT = CORPUS / "sglang-cookbook" / "agentx" / "deepseek-ai" / "deepseek-v4_1.gb200-excerpt.jsx"
INFERENCEX = CORPUS / "inferencex"


def test_a_script_point_pairs_within_its_row_and_a_cell_with_none_paired_is_unpaired(capsys) -> None:
    """The corpus master (d8e7cc8e) has one GB200 row (TP4·EP4); the module's TP2 cell names row 1, which that
    version lacks: its points pair with nothing (before, they were compared with the TP4 row), and the cell
    is unpaired instead of checked."""
    code, doc = _diff(capsys, EXCERPT, INFERENCEX, "--config", "dsv41flash-fp4-gb200-sglang-agentic-dspark")
    states = {c["cell"]: (c["state"], c["reason"]) for c in doc["cells"]}
    assert states == {"dsv41flash-fp4-gb200-sglang-agentic-dspark#1": ("unpaired", "no-point-paired"),
                      "dsv41flash-fp4-gb200-sglang-agentic-dspark#0": ("checked", None)}
    extra = [f["reason"] for f in doc["findings"] if f["kind"] == "point" and f["cls"] == "mismatch" and f["detail"] == "extra in the cookbook"]
    assert len(extra) == 8 and set(extra) == {"the master config has no row 1 (the point's item)"}
    assert code == 1


def test_two_rows_still_matching_are_ambiguous(capsys, tmp_path: Path) -> None:
    """The H200 entry's two rows (TP4, TP8) run the same script at the same concurrencies: a point that does
    not name its row (the module's `item` removed, a marked edit of the real module) is ambiguous."""
    module = json.loads(MODULE.read_text(encoding="utf-8").split("export const agentx = ", 1)[1].rstrip().rstrip(";"))
    cells = [c for c in module["cells"] if c["configKey"] == "dsv41flash-fp4-h200-sglang-agentic-dspark"]
    for cell in cells:
        for point in cell["points"]:
            del point["item"]
    for cell in cells:
        for router in cell["routers"].values():
            for block in router["blocks"]:
                if "ref" in block:
                    block["ref"][0] = 0
    module["cells"] = cells
    (tmp_path / "m.json").write_text(json.dumps(module), encoding="utf-8")
    code, doc = _diff(capsys, tmp_path / "m.json", INFERENCEX)
    reasons = {f["reason"] for f in doc["findings"] if f["kind"] == "point" and f["detail"] == "extra in the cookbook"}
    assert reasons == {f"ambiguous: 2 master rows serve this concurrency (tp4/c{c}, tp8/c{c}) and the point names none of them"
                       for c in (1, 2, 4, 8, 16, 32, 64, 128)}
    assert {c["state"] for c in doc["cells"]} == {"unpaired"} and code == 1


def test_a_refused_script_leaves_its_cells_unpaired_and_the_run_goes_on(capsys, tmp_path: Path) -> None:
    """The corpus checkout with the H200 script calling `curl` before its launch (a marked edit: the sandbox refuses
    network commands; after a launch, a command no longer matters): the H200 cells end unpaired naming the script
    line, every other cell is still checked."""
    root = tmp_path / "inferencex"
    for part in ("configs", "benchmarks"):
        shutil.copytree(INFERENCEX / part, root / part)
    script = root / "benchmarks" / "single_node" / "agentic" / "dsv41flash_fp4_h200_sglang_mtp.sh"
    first, rest = script.read_text().split("\n", 1)
    script.write_text(f"{first}\ncurl -s http://localhost:8888/health\n{rest}")
    code, doc = _diff(capsys, MODULE, root, "--allow-unpaired")
    states = {c["cell"]: (c["state"], c["reason"], c["detail"]) for c in doc["cells"]}
    shown = "benchmarks/single_node/agentic/dsv41flash_fp4_h200_sglang_mtp.sh"
    for cell in ("dsv41flash-fp4-h200-sglang-agentic-dspark#0", "dsv41flash-fp4-h200-sglang-agentic-dspark#1"):
        state, reason, detail = states[cell]
        assert (state, reason) == ("unpaired", "recipe-refused") and detail.startswith(f"{shown}:2: script: runs `curl`"), detail
    assert states["dsv41flash-fp4-h100-sglang-agentic-dspark#0"][0] == "checked" and code == 1


def test_the_dynamo_install_is_checked_only_on_cells_run_with_dynamo(capsys, tmp_path: Path) -> None:
    """A cell submitted with the SGLang router has a derived Dynamo variant nobody ran: its install line is not a
    claim about the run (here the GB300 SGLang cells' derived Dynamo router given a pin, a marked edit)."""
    text = MODULE.read_text(encoding="utf-8")
    pin = 'pip install --pre \\"ai-dynamo==1.0.0\\"'
    edited = text.replace('"dynamo": {\n     "install": [],', '"dynamo": {\n     "install": ["' + pin + '"],')
    assert edited.count(pin) == 14       # every derived Dynamo router of the module
    (tmp_path / "m.jsx").write_text(edited, encoding="utf-8")
    _, doc = _diff(capsys, tmp_path / "m.jsx", SOURCE, "--allow-unpaired")
    installs = {(f["config"], f["cls"]) for f in doc["findings"] if f["kind"] == "claim" and f["item"] == "install"}
    assert installs == {("dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "match"), ("dsv41flash-fp4-gb300-dynamo-sglang-agentic-disagg", "match")}


@pytest.mark.parametrize("path", [("frontend", "args", "prometheus-host"), ("roles", "agg", "env", "EVAL_FRAMEWORK"),
                                  ("roles", "decode", "env", "WEKA_LOADER_OVERRIDE"), ("frontend", "env", "NO_COLOR"),
                                  ("roles", "prefill", "args", "log-level"), ("roles", "decode", "args", "decode-log-interval")])
def test_harness_settings_of_the_published_modules_are_harness_only(path: tuple[str, ...]) -> None:
    """Settings the SGLang cookbook leaves out of its commands because only the benchmark harness needs them."""
    rule = load_policy().first_match(path, "x")
    assert rule is not None and rule.cls == "harness-only" and rule.reason


def test_the_bootstrap_port_only_has_to_agree_between_the_roles(capsys, tmp_path: Path) -> None:
    """The 1P2D cell's decode workers naming their prefill worker's bootstrap port (8998) agree with it; naming
    9100 they do not (marked edits of the real module: its decode workers name none; the 1P1D and 2P1D cells
    reuse the block). A value the cookbook chooses for both is its own (compared only for agreement)."""
    text = MODULE.read_text(encoding="utf-8")
    start = text.index('"id": "dsv41flash-fp4-gb300-dynamo-sglang-agentic-disagg#0"')
    end = text.index('"id": "dsv41flash-fp4-gb300-dynamo-sglang-agentic-disagg#3"')
    decode = '["--disaggregation-mode", "decode"],'
    assert text[start:end].count(decode) == 1
    results = {}
    for port in ("8998", "9100"):
        cell = text[start:end].replace(decode, decode + f'\n        ["--disaggregation-bootstrap-port", "{port}"],')
        (tmp_path / f"{port}.jsx").write_text(text[:start] + cell + text[end:], encoding="utf-8")
        _, doc = _diff(capsys, tmp_path / f"{port}.jsx", SOURCE, "--config", DISAGG)
        results[port] = {(f["point"].split("/")[1], f["role"], f["cls"], f.get("cookbook")) for f in doc["findings"]
                         if f["item"] == "--disaggregation-bootstrap-port" and f["kind"] == "topology"}
    concs = ("c16", "c48", "c64", "c96", "c160", "c256")        # the 1P1D and 2P1D cells reuse this decode block
    assert results["8998"] == {(c, "decode", "match", "8998") for c in concs}
    assert results["9100"] == {(c, "decode", "mismatch", "9100") for c in concs}


def test_a_concurrency_the_named_row_lacks_is_extra(capsys) -> None:
    """The corpus H100 entry's one row (TP8·EP8) runs c1-c8; the module's cell also shows c16 and c20 from it."""
    _, doc = _diff(capsys, MODULE, INFERENCEX, "--config", "dsv41flash-fp4-h100-sglang-agentic-dspark")
    extra = {(f["point"], f["reason"]) for f in doc["findings"] if f["detail"] == "extra in the cookbook"}
    assert extra == {(c, "no master row of the checkout serves this concurrency") for c in ("c16", "c20")}
    assert [c["state"] for c in doc["cells"]] == ["checked"]
