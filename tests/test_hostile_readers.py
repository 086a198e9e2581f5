"""Issue 17: hostile modules and JSON against every reader of them (`show`, `export --from-module`,
`diff` of a module's JSON, of a `.jsx` module and of a site whose `cookbook.json` is hostile), the
shared size cap, `ref` chains longer than Python's recursion allows, and policy files that used to
read as zero rules. Each case: the correct result, or exit 2 with one `file:line: key.path: problem`
line, no traceback, nothing written."""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from cookbookgen.agentx.decode import Decoder
from cookbookgen.agentx.module import read_module_text
from cookbookgen.cli import main
from cookbookgen.errors import CookbookError

from conftest import CORPUS, DATA, SOURCE

LINE = re.compile(r"^cookbookgen: error: (?P<file>.+?):(?P<line>\d+): (?P<key>\S+): (?P<msg>.+)$")
MODULE = CORPUS / "sglang-cookbook/agentx/deepseek-ai/deepseek-v4.jsx"
Json = dict[str, Any]


def _module() -> Json:
    return json.loads(json.dumps(read_module_text(MODULE.read_text(), str(MODULE))))


def _reverse_chain(n: int) -> Json:
    """`n` copies of cell 0, each block of cells[i] a bare `ref` to cells[i + 1]: decoding cells[0]
    walks the whole chain (the exporter itself writes chains, towards earlier cells)."""
    module = _module()
    first = module["cells"][0]
    cells = []
    for i in range(n):
        cell = copy.deepcopy(first)
        cell["id"] = f"{first['id']}~{i}"
        if i < n - 1:
            for router, spec in cell["routers"].items():
                spec["blocks"] = [{"ref": [i + 1, router, b]} for b in range(len(first["routers"][router]["blocks"]))]
        cells.append(cell)
    module["cells"] = cells
    return module


def _json_text() -> str:
    return json.dumps(_module(), indent=1)


# Each turns the module's JSON text into a hostile one; the problem it must be refused with (or None:
# it must decode).
HOSTILE: dict[str, tuple[Callable[[], str], str | None]] = {
    "integer past the digit limit": (lambda: _json_text().replace('"gpus": ', '"gpus": 1' + "0" * 5000 + ', "x": ', 1),
                                     f"an integer of more than {sys.get_int_max_str_digits()} digits"),
    "nested thousands deep": (lambda: _json_text().replace('"setup": []', '"setup": ' + "[" * 5000 + "]" * 5000, 1),
                              "nesting deeper than 200 levels"),
    "nested past the limit": (lambda: _json_text().replace('"setup": []', '"setup": ' + "[" * 300 + "]" * 300, 1),
                              "nesting deeper than 200 levels"),
    "lone surrogate escape": (lambda: _json_text().replace('"label": "', '"label": "\\ud800', 1), "lone surrogate"),
    "ref chain of 300 cells": (lambda: json.dumps(_reverse_chain(300)), None),
}


def _as(kind: str, text: str, tmp_path: Path) -> Path:
    if kind == "json":
        path = tmp_path / "module.json"
    elif kind == "jsx":
        path = tmp_path / "module.jsx"
        text = "// hostile\nexport const agentx = " + text + ";\n"
    else:
        (tmp_path / "site").mkdir()
        path = tmp_path / "site" / "cookbook.json"
    path.write_text(text, encoding="utf-8")
    return path.parent if kind == "site" else path


COMMANDS: dict[str, tuple[str, Callable[[Path, Path], list[str]]]] = {
    "show": ("jsx", lambda p, out: ["show", str(p), "--format", "json"]),
    "export": ("json", lambda p, out: ["export", "--from-module", str(p), "--format", "agentx", "--out", str(out)]),
    "diff json": ("json", lambda p, out: ["diff", "--cookbook", str(p), "--source", str(SOURCE), "--format", "json"]),
    "diff jsx": ("jsx", lambda p, out: ["diff", "--cookbook", str(p), "--source", str(SOURCE), "--format", "json"]),
    "diff site": ("site", lambda p, out: ["diff", "--cookbook", str(p), "--source", str(SOURCE), "--format", "json"]),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_module_text(tmp_path: Path, capsys, case: str, command: str) -> None:
    make, problem = HOSTILE[case]
    kind, argv = COMMANDS[command]
    path = _as(kind, make(), tmp_path)
    out_file = tmp_path / "out.jsx"
    code = main(argv(path, out_file))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if problem is None:
        assert code in (0, 1), err          # decoded; `diff` may find drift (exit 1)
        assert command != "export" or out_file.exists()
        return
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and out == "", err
    m = LINE.match(lines[0])
    assert m and problem in m["msg"] and int(m["line"]) >= 1, lines[0]
    assert not out_file.exists()


def test_a_ref_chain_of_any_length_decodes_without_recursion() -> None:
    # 2,000 links: far past Python's recursion limit (each link took four frames)
    module = _reverse_chain(2000)
    blocks = Decoder(module, "chain.json").materialize(0, "dynamo")
    assert blocks == Decoder(module, "chain.json").materialize(1999, "dynamo")


def test_a_reference_cycle_names_its_lists() -> None:
    module = _reverse_chain(4)
    module["cells"][3]["routers"]["sglang"]["blocks"][0] = {"ref": [1, "sglang", 0]}
    with pytest.raises(CookbookError) as info:
        Decoder(module, "cycle.json").materialize(0, "sglang")
    (problem,) = info.value.problems
    assert problem.key_path == "cells[3].routers.sglang.blocks[0].ref"
    assert problem.message == ("reference cycle: cells[1].routers.sglang -> cells[2].routers.sglang -> "
                               "cells[3].routers.sglang -> cells[1].routers.sglang")


@pytest.mark.parametrize("argv", [["show", "{m}"], ["export", "--from-module", "{m}", "--out", "{out}"],
                                  ["diff", "--cookbook", "{m}", "--source", str(SOURCE)]])
def test_one_size_cap_for_every_module_reader(tmp_path: Path, capsys, argv: list[str]) -> None:
    module = tmp_path / "huge.jsx"
    with module.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024 + 1)      # sparse: refused before it is read
    out = tmp_path / "out.jsx"
    code = main([a.format(m=module, out=out) for a in argv])
    _, err = capsys.readouterr()
    assert code == 2 and not out.exists(), err
    assert err.strip() == f"cookbookgen: error: {module}: file is {64 * 1024 * 1024 + 1} bytes; the limit is {64 * 1024 * 1024}"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_module_of_too_many_cells_is_refused_at_once(tmp_path: Path, capsys, command: str) -> None:
    # Issue 17: a 100k-cell module ran for minutes (export was killed at 300 s); refused before decoding.
    cell = {"id": "", "configKey": "k", "submitted": "sglang", "points": [{"concs": [1]}],
            "routers": {"sglang": {"blocks": [{"kind": "worker", "role": "agg", "cmd": "x", "args": []}]}}}
    text = json.dumps({"cells": [{**cell, "id": f"c{i}"} for i in range(10_001)]})
    kind, argv = COMMANDS[command]
    path = _as(kind, text, tmp_path)
    out_file = tmp_path / "out.jsx"
    code = main(argv(path, out_file))
    _, err = capsys.readouterr()
    assert code == 2 and not out_file.exists(), err
    assert err.strip().endswith(": cells: 10001 cells; the limit is 10000"), err


# --- policy files --------------------------------------------------------------------------------

POLICIES = {
    "rule: for rules:": ("rule:\n  - {match: '**.env.X', class: prohibited, reason: r}\n", "1", "rule", "unknown key"),
    "a top-level list": ("- {match: '**.env.X', class: prohibited, reason: r}\n", "1", "(top)", "a policy file is a mapping"),
    "not a mapping": ("prohibited\n", "1", "(top)", "a policy file is a mapping"),
    "empty": ("", "1", "(top)", "a policy file is a mapping"),
    "unknown class": ("rules:\n  - {match: a, class: banned, reason: r}\n", "2", "rules[0].class", "'prohibited'"),
    "unknown rule key": ("rules:\n  - {match: a, class: prohibited, reason: r, vlaue: 1}\n", "2", "rules[0].vlaue", "unknown key"),
    "blank reason": ("rules:\n  - {match: a, class: prohibited, reason: ' '}\n", "2", "rules[0].reason", "must not be empty"),
    "cluster env without reason": ("clusters:\n  c:\n    worker_env:\n      A: {value: 1}\n", "4", "clusters.c.worker_env.A.reason", "Field required"),
    # the name was pasted into every worker command as it is: `$(id)=1 \` runs `id`
    "cluster env name a command": ("clusters:\n  c:\n    worker_env:\n      $(id): {value: 1, reason: r}\n", "4",
                                   "clusters.c.worker_env.$(id)", "not an environment variable name"),
}


@pytest.mark.parametrize("name", list(POLICIES))
def test_a_policy_file_is_validated(tmp_path: Path, capsys, name: str) -> None:
    # Issue 17: these read as zero rules, so a `prohibited` setting was published.
    text, line, key, message = POLICIES[name]
    policy = tmp_path / "policy.yaml"
    policy.write_text(text, encoding="utf-8")
    code = main(["render", "--source", str(SOURCE), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg",
                 "--point", "c1", "--policy", str(policy)])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    m = LINE.match(lines[0])
    assert m and m["file"] == str(policy) and m["line"] == line and m["key"] == key and message in m["msg"], lines[0]


def test_a_valid_policy_file_still_prohibits(tmp_path: Path, capsys) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - {match: '**.args.tensor-parallel-size', class: prohibited, reason: not here}\n")
    code = main(["render", "--source", str(SOURCE), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg",
                 "--point", "c1", "--policy", str(policy), "--format", "json"])
    out, err = capsys.readouterr()
    # POLICY.md: a prohibited setting is rendered as the run used it and flagged, never refused (issue 31)
    assert code == 0, err
    flagged = [s for s in json.loads(out)["settings"] if s["class"] == "prohibited"]
    assert flagged == [{"path": "roles.agg.args.tensor-parallel-size", "value": 4, "class": "prohibited", "reason": "not here",
                        "rule": "**.args.tensor-parallel-size"}]
    assert DATA.exists()
