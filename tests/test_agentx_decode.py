"""AgentX module reading/writing and the explorer-faithful decoder, against the two published modules."""

from __future__ import annotations

import copy
import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cookbookgen.agentx.decode import (
    Decoder,
    apply_diff,
    apply_patch,
    combinations,
    copy_all_runnable,
    placeholder_text,
    status_of,
)
from cookbookgen.cells.explorer import block_text, kv_transform, sort_args
from cookbookgen.agentx.module import read_header_lines, read_module_text, write_module_text
from cookbookgen.errors import CookbookError
from cookbookgen.render.model import Block
from cookbookgen.render.shell import block_argv

CORPUS = Path(__file__).resolve().parent / "data" / "corpus" / "sglang-cookbook" / "agentx"
V4 = "deepseek-ai/deepseek-v4.jsx"
GLM = "zai-org/glm-5.2.jsx"
FILES = (V4, GLM)


def _text(name: str) -> str:
    return (CORPUS / name).read_bytes().decode("utf-8")


@pytest.fixture(scope="module")
def modules() -> dict[str, dict]:
    return {name: read_module_text(_text(name), name) for name in FILES}


@pytest.fixture(scope="module")
def combos(modules: dict[str, dict]) -> dict[str, list[dict]]:
    return {name: combinations(modules[name], name) for name in FILES}


def _block(module: dict, ci: int, pi: int, router: str, kv: str | None, index: int) -> Block:
    return Decoder(module).decode_point(ci, pi, router, kv)[index]


def _bash_n(text: str, tmp_path: Path, name: str = "script.sh") -> subprocess.CompletedProcess:
    path = tmp_path / name
    path.write_text(text + "\n", encoding="utf-8")
    return subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)


# ---- module.py ----

@pytest.mark.parametrize("name", FILES)
def test_round_trip_is_byte_identical(name: str) -> None:
    text = _text(name)
    header = read_header_lines(text)
    assert len(header) == 3 and all(line.startswith("// ") for line in header)
    assert write_module_text(read_module_text(text, name), header) == text


def test_write_without_trailing_newline_and_plain_json(modules: dict[str, dict]) -> None:
    data = modules[GLM]
    out = write_module_text(data, ["// a", "// b", "// c"], trailing_newline=False)
    assert out.startswith("// a\n// b\n// c\nexport const agentx = {\n \"model\": \"GLM-5.2\",\n")
    assert out.endswith("};")
    assert read_module_text(json.dumps(data), "plain.json") == data
    assert '"ports": ["8700"]' in out and "·" in out  # scalar arrays inline, ensure_ascii=False


def test_bad_json_reports_the_line(modules: dict[str, dict]) -> None:
    text = _text(V4)
    broken = text.replace('"generatedOn": "2026-10-08"', '"generatedOn": 2026-10-08', 1)
    with pytest.raises(CookbookError) as info:
        read_module_text(broken, V4)
    (problem,) = info.value.problems
    assert (problem.file, problem.line) == (V4, 6)
    assert "invalid JSON" in problem.message


def test_bad_envelope_and_shape() -> None:
    with pytest.raises(CookbookError, match="export const agentx"):
        read_module_text("// c\nconst x = {};\n", "m.jsx")
    with pytest.raises(CookbookError, match="after the object"):
        read_module_text('// c\nexport const agentx = {"cells": []};\nfoo();\n', "m.jsx")
    with pytest.raises(CookbookError) as info:
        read_module_text('{"model": "x"}', "m.json")
    assert info.value.problems[0].key_path == "cells"


# ---- counts ----

def test_counts(modules: dict[str, dict], combos: dict[str, list[dict]]) -> None:
    # V4: 26 cells, 75 points. Cells 0, 21, 22 offer 2 tiers (1 + 8 + 4 points -> x2 routers x2 tiers = 52),
    # the other 62 points offer 3 tiers (x2 routers x3 = 372): 424.
    # GLM: 21 cells, 57 points. 30 points in 2-tier cells (x4 = 120), 27 in 3-tier cells (x6 = 162): 282.
    expected = {V4: (26, 75, 424), GLM: (21, 57, 282)}
    for name, (cells, points, total) in expected.items():
        module = modules[name]
        assert len(module["cells"]) == cells
        assert sum(len(c["points"]) for c in module["cells"]) == points
        assert len(combos[name]) == total
        measured = [c for c in combos[name] if c["status"] != "derived"]
        assert len(measured) == points  # one measured (submitted router, measured tier) per point


def test_every_combination_decodes(combos: dict[str, list[dict]]) -> None:
    for name in FILES:
        for combo in combos[name]:
            assert combo["blocks"], combo["cell"]
            assert set(combo) == {"cell", "point", "router", "kv", "status", "blocks", "copy_all", "copy_all_runnable"}
            assert any(b["kind"] == "worker" for b in combo["blocks"])
            assert all(b["title"] for b in combo["blocks"])


# ---- concrete commands read off the files ----

def test_v4_cell0_dynamo_frontend(modules: dict[str, dict]) -> None:
    block = _block(modules[V4], 0, 0, "dynamo", None, 2)
    assert block.title == "Dynamo frontend (OpenAI API)"
    assert block_text(block) == (
        "DYN_NATS_REQUEST_TIMEOUT_SECS=1800 \\\n"
        "DYN_REQUEST_PLANE=tcp \\\n"
        'ETCD_ENDPOINTS="http://$ETCD_IP:2379" \\\n'
        'NATS_SERVER="nats://$NATS_IP:4222" \\\n'
        "python3 -m dynamo.frontend \\\n"
        "  --http-port 8000 \\\n"
        "  --router-mode kv \\\n"
        "  --router-session-affinity-ttl-secs 3600 \\\n"
        "  --active-decode-blocks-threshold None \\\n"
        "  --active-prefill-tokens-threshold None \\\n"
        "  --active-prefill-tokens-threshold-frac None"
    )
    assert block.where == "Start once; clients connect to port 8000. It finds the workers through etcd, so it can start before them."


def test_from_derived_sglang_worker_drops_dynamo_settings(modules: dict[str, dict]) -> None:
    module = modules[V4]
    dynamo = _block(module, 0, 0, "dynamo", None, 3)
    sglang = _block(module, 0, 0, "sglang", None, 0)
    assert dynamo.cmd == "python3 -m dynamo.sglang" and dynamo.arg_values("--request-plane") == [("--request-plane", "tcp")]
    assert sglang.cmd == "python3 -m sglang.launch_server"
    assert sglang.arg_values("--request-plane") == []
    assert list(sglang.args) == [a for a in dynamo.args if a[0] != "--request-plane"]
    assert not {"DYN_REQUEST_PLANE", "ETCD_ENDPOINTS", "NATS_SERVER"} & set(sglang.env)
    assert sglang.env["SGLANG_RAGGED_VERIFY_MODE"] == "static"
    assert sglang.args[:7] == (
        ("--model-path", "deepseek-ai/DeepSeek-V4-Pro-0813"), ("--served-model-name", "deepseek-ai/DeepSeek-V4-Pro-0813"),
        ("--host", "0.0.0.0"), ("--port", "30000"), ("--dist-init-addr", "$AGG_HEAD_IP:20000"), ("--nnodes", "2"),
        ("--node-rank", "$NODE_RANK"),
    )
    assert sglang.where == "Run on every node of a worker with NODE_RANK=0..1; $AGG_HEAD_IP is that worker's first node."


def test_ref_chain_across_cells(modules: dict[str, dict]) -> None:
    # cells[8].dynamo.blocks[6] = {"workers": 2, "ref": [7, "dynamo", 6]};
    # cells[7] block 6 = ref [6, "dynamo", 6] with nodes_per_worker 4 and --nnodes/--dp-size/--ep-size/--tp-size diffs.
    module = modules[V4]
    base = _block(module, 6, 0, "dynamo", None, 6)
    block = _block(module, 8, 0, "dynamo", None, 6)
    assert (base.workers, base.nodes_per_worker, base.arg_values("--tp-size")) == (1, 2, [("--tp-size", "8")])
    assert (block.kind, block.role, block.workers, block.nodes_per_worker) == ("worker", "prefill", 2, 4)
    assert block.arg_values("--nnodes") == [("--nnodes", "4")]
    assert block.arg_values("--dp-size") == [("--dp-size", "16")]
    assert block.env == base.env
    assert block.where.startswith("Start 2 prefill workers, each spanning 4 nodes. Run on every node of a worker")
    raw = Decoder(module, V4).materialize(8, "dynamo")[6]
    assert raw["workers"] == 2 and "ref" not in raw and "envRef" not in raw


def test_glm_ref_with_drop(modules: dict[str, dict]) -> None:
    # cells[16].dynamo.blocks[5] drops gpu_pinning of its ref target and sets workers 1.
    module = modules[GLM]
    entry = module["cells"][16]["routers"]["dynamo"]["blocks"][5]
    assert entry["drop"] == ["gpu_pinning"]
    target = Decoder(module, GLM).materialize(entry["ref"][0], entry["ref"][1])[entry["ref"][2]]
    block = _block(module, 16, 0, "dynamo", None, 5)
    assert target.get("gpu_pinning") is not None
    assert block.gpu_pinning is None and block.workers == 1
    assert block.arg_values("--deepep-config") == [("--deepep-config", "deepep_config.json")]
    assert "deepep_config.json" in block.files


def test_patched_point(modules: dict[str, dict]) -> None:
    # cells[22].points[3] (c160): sglang patch diffs the worker and replaces the router with {block: ...}.
    module = modules[V4]
    base = Decoder(module).decode_point(22, 0, "sglang", None)
    blocks = Decoder(module).decode_point(22, 3, "sglang", None)
    assert [b.kind for b in blocks] == ["worker", "sglang-router"]
    assert blocks[0].arg_values("--max-running-requests") == [("--max-running-requests", "320")]
    assert blocks[0].arg_values("--prefill-decode-interval") == [("--prefill-decode-interval", "20")]
    assert base[0].arg_values("--max-running-requests") != blocks[0].arg_values("--max-running-requests")
    assert blocks[1].args[:4] == (("--policy", "cache_aware"), ("--balance-abs-threshold", "32"),
                                  ("--request-id-headers", "x-correlation-id"), ("--dp-aware",))
    assert blocks[1].env["TORCH_CUDA_ARCH_LIST"] == "10.0"
    dynamo = Decoder(module).decode_point(22, 3, "dynamo", None)
    assert dynamo[2].arg_values("--max-running-requests") == [("--max-running-requests", "320")]


def test_mooncake_transform_from_hicache(modules: dict[str, dict]) -> None:
    # cells[5] (GB200 agg) was measured with hicache under dynamo.
    module = modules[V4]
    measured = Decoder(module).decode_point(5, 0, "dynamo", None)
    blocks = Decoder(module).decode_point(5, 0, "dynamo", "mooncake")
    assert [b.kind for b in measured] == ["etcd", "nats", "dynamo-frontend", "worker"]
    assert [b.kind for b in blocks] == ["etcd", "nats", "dynamo-frontend", "mooncake-master", "worker"]
    assert measured[3].arg_values("--enable-hierarchical-cache")
    worker = blocks[4]
    hicache_only = [a for a in worker.args if a[0] == "--enable-hierarchical-cache"
                    or (a[0].startswith("--hicache-") and a[0] != "--hicache-storage-backend-extra-config")]
    assert hicache_only == []
    assert worker.arg_values("--unified-cache-external-linker-backend") == [("--unified-cache-external-linker-backend", "mooncake")]
    assert worker.env["MOONCAKE_MASTER"] == "$MOONCAKE_MASTER_IP:8700"
    assert list(worker.env) == sorted(worker.env)
    assert blocks[3].env == {"ETCD_ENDPOINTS": "http://$ETCD_IP:2379", "NATS_SERVER": "nats://$NATS_IP:4222"}
    assert sglang_master_first(module)


def sglang_master_first(module: dict) -> bool:
    """cells[9] has one sglang worker and no router: the master goes first, with the sglang (empty) env."""
    blocks = Decoder(module).decode_point(9, 0, "sglang", "mooncake")
    return [b.kind for b in blocks] == ["mooncake-master", "worker"] and blocks[0].env == {}


def test_mooncake_measured_to_none_removes_store(modules: dict[str, dict]) -> None:
    module = modules[V4]
    measured = Decoder(module).decode_point(1, 0, "dynamo", None)
    blocks = Decoder(module).decode_point(1, 0, "dynamo", "none")
    assert {"mooncake-master", "mooncake-store"} <= {b.kind for b in measured}
    assert not {"mooncake-master", "mooncake-store"} & {b.kind for b in blocks}
    prefill = next(b for b in blocks if b.role == "prefill")
    assert not {"MOONCAKE_MASTER", "MOONCAKE_TE_META_DATA_SERVER", "MOONCAKE_GLOBAL_SEGMENT_SIZE",
                "MOONCAKE_STANDALONE_STORAGE"} & set(prefill.env)
    assert prefill.env["MOONCAKE_PROTOCOL"] == "rdma"  # not store-only: kept
    assert not prefill.arg_values("--enable-unified-cache-external-linker")


def test_nginx_text_and_files(modules: dict[str, dict]) -> None:
    blocks = Decoder(modules[V4]).decode_point(1, 0, "dynamo", None)
    nginx = next(b for b in blocks if b.kind == "nginx")
    nats = next(b for b in blocks if b.kind == "nats")
    assert block_text(nginx) == "nginx -c nginx.conf -g 'daemon off;'"
    assert block_argv(nginx) == ["nginx", "-c", "nginx.conf", "-g", "daemon off;"]
    assert list(nginx.files) == ["nginx.conf"] and "$FRONTEND_0_IP" in nginx.files["nginx.conf"]
    assert nats.files == {"nats.conf": 'max_payload: 33554432\njetstream { store_dir: "/tmp/nats" }\n'}
    assert nats.where == "Start once on $NATS_IP, with nats.conf (below) in the working directory."


# ---- status ----

def test_status_rules(modules: dict[str, dict], combos: dict[str, list[dict]]) -> None:
    v4, glm = modules[V4], modules[GLM]
    cell6 = v4["cells"][6]  # v2: cell.prov.status in-progress, measured with mooncake under dynamo
    assert status_of(cell6, cell6["points"][0], "dynamo", "mooncake") == "in-progress"
    assert status_of(cell6, cell6["points"][0], "dynamo", "none") == "derived"
    assert status_of(cell6, cell6["points"][0], "sglang", "mooncake") == "derived"
    cell0 = glm["cells"][0]  # v1: per-point status verified-pr, measured with hicache under dynamo
    assert status_of(cell0, cell0["points"][1], "dynamo", "hicache") == "verified-pr"
    assert status_of(cell0, cell0["points"][1], "sglang", "hicache") == "derived"
    for name in FILES:
        cells = {c["id"]: c for c in modules[name]["cells"]}
        for combo in combos[name]:
            cell = cells[combo["cell"]]
            point = next(p for p in cell["points"] if f"c{p['concs'][0]}" == combo["point"])
            submitted = combo["router"] == cell["submitted"] and combo["kv"] == point["kv"]
            assert (combo["status"] != "derived") == submitted


# ---- text shapes ----

def _explorer_format(b: dict) -> str:
    """formatBlock of _agentx.jsx, restated independently (for the parity check)."""
    def q(v: str) -> str:
        if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", v):
            return v
        if re.fullmatch(r"[A-Za-z0-9_@%+=:,./${}-]+", v):
            return f'"{v}"'
        return "'" + v.replace("'", "'\\''") + "'"
    lines = list(b.get("preamble") or []) + [f"{k}={q(v)} \\" for k, v in (b.get("env") or {}).items()]
    args = b.get("args") or []
    if not args:
        return "\n".join(lines + ["nginx -c nginx.conf -g 'daemon off;'" if b["kind"] == "nginx" else b["cmd"]])
    lines.append(f"{b['cmd']} \\")
    for i, a in enumerate(args):
        vals = " ".join(q(v) for v in a[1:])
        tail = " \\" if i < len(args) - 1 else ""
        lines.append(f"  {a[0]}{' ' + vals if vals else ''}{tail}")
    return "\n".join(lines)


def test_block_text_matches_explorer_and_argv(modules: dict[str, dict]) -> None:
    for name in FILES:
        module = modules[name]
        dec = Decoder(module, name)
        for ci, cell in enumerate(module["cells"]):
            for pi in range(len(cell["points"])):
                for router in cell["routers"]:
                    for kv in cell["kv"]["available"]:
                        raw = dec.point_dicts(ci, pi, router, kv)
                        for d, block in zip(raw, dec.decode_point(ci, pi, router, kv)):
                            text = block_text(block)
                            assert text == _explorer_format(d)
                            pre = [w for line in block.preamble for w in shlex.split(line)]
                            assert shlex.split(text.replace("\\\n", " ")) == pre + block_argv(block)


def test_explorer_copy_all_is_not_bash(combos: dict[str, list[dict]], tmp_path: Path) -> None:
    dynamo = [c for name in FILES for c in combos[name] if c["router"] == "dynamo"]
    assert dynamo and all("\nexport ETCD_IP=<node running etcd>\n" in c["copy_all"] for c in dynamo)
    first = dynamo[0]["copy_all"]
    assert first.startswith("# Set per node before running the commands below\nexport ETCD_IP=<node running etcd>\n")
    assert "\n\n# etcd — Dynamo control plane\netcd \\\n" in first
    assert _bash_n(first, tmp_path).returncode != 0  # the explorer's fault: `<`/`>` are redirections


def test_copy_all_runnable_is_valid_bash(combos: dict[str, list[dict]], tmp_path: Path) -> None:
    scripts = {c["copy_all_runnable"] for name in FILES for c in combos[name]}
    assert len(scripts) > 100
    for i, script in enumerate(sorted(scripts)):
        result = _bash_n(script, tmp_path, f"s{i}.sh")
        assert result.returncode == 0, result.stderr
        assert "=<" not in script


def test_runnable_exports_and_files(combos: dict[str, list[dict]], tmp_path: Path) -> None:
    combo = next(c for c in combos[GLM] if c["cell"].startswith("glm5.2-fp4-gb300-dynamo-sglang-agentic-agg#0")
                 and c["router"] == "dynamo")
    script = combo["copy_all_runnable"]
    assert 'export ETCD_IP="${ETCD_IP:?set to: node running etcd}"' in script
    node_rank = "rank of this node within its worker (0 on the worker\\'s first node)"
    assert f'export NODE_RANK="${{NODE_RANK:?set to: {node_rank}}}"' in script
    assert "cat > nats.conf <<'COOKBOOK_EOF'" in script  # no placeholders: verbatim heredoc
    assert script.index("cat > nginx.conf <<COOKBOOK_EOF") < script.index("\nnginx -c nginx.conf -g 'daemon off;'")
    writer = script[script.index("cat > nginx.conf"):]
    writer = writer[: writer.index("\nCOOKBOOK_EOF\n") + len("\nCOOKBOOK_EOF\n")]
    env = {"PATH": "/usr/bin:/bin", "FRONTEND_0_IP": "10.0.0.7", "FRONTEND_1_IP": "10.0.0.8", "FRONTEND_2_IP": "10.0.0.9"}
    subprocess.run(["bash", "-c", writer], cwd=tmp_path, env=env, check=True)
    written = (tmp_path / "nginx.conf").read_text()
    assert "server 10.0.0.7:8180;" in written and "$FRONTEND" not in written
    exports = script[: script.index("\n\n")]
    unset = subprocess.run(["bash", "-c", exports], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert unset.returncode != 0 and "ETCD_IP: set to: node running etcd" in unset.stderr
    values = {n: "1" for n in re.findall(r"export (\w+)=", exports)}
    ok = subprocess.run(["bash", "-c", exports + '\necho "$NODE_RANK"'], capture_output=True, text=True,
                        env={"PATH": "/usr/bin:/bin", **values, "NODE_RANK": "0"})
    assert ok.returncode == 0 and ok.stdout == "0\n"


def test_runnable_keeps_nginx_variables(tmp_path: Path) -> None:
    block = Block(kind="nginx", title="nginx", cmd="nginx -c nginx.conf -g 'daemon off;'",
                  files={"nginx.conf": "server $FRONTEND_0_IP:8180;\nhash $request_id; # `x` \\n\n"})
    script = copy_all_runnable([block], [{"name": "nginx.conf", "content": block.files["nginx.conf"]}])
    writer = script[script.index("cat > nginx.conf"): script.rindex("COOKBOOK_EOF") + len("COOKBOOK_EOF")]
    env = {"PATH": "/usr/bin:/bin", "FRONTEND_0_IP": "1.2.3.4"}
    subprocess.run(["bash", "-c", writer], cwd=tmp_path, env=env, check=True)
    assert (tmp_path / "nginx.conf").read_text() == "server 1.2.3.4:8180;\nhash $request_id; # `x` \\n\n"


def test_placeholder_descriptions() -> None:
    assert placeholder_text("ETCD_IP") == "node running etcd"
    assert placeholder_text("PREFILL_0_HEAD_IP") == "first node of prefill worker 0"
    assert placeholder_text("FRONTEND_3_IP") == "node of frontend 3"
    assert placeholder_text("HOME") == ""


# ---- algebra on small inputs ----

def test_apply_diff_rules() -> None:
    worker = {"kind": "worker", "args": [["--zeta", "1"], ["--port", "1"], ["--decode", "a"], ["--decode", "b"]],
              "env": {"B": "1", "A": "2"}}
    out = apply_diff(worker, {"args": {"--zeta": None, "--decode": ["c"], "--alpha": []}, "env": {"A": None, "C": "3"}})
    assert out["args"] == [["--port", "1"], ["--alpha"], ["--decode", "c"], ["--decode", "c"]]
    assert list(out["env"].items()) == [("B", "1"), ("C", "3")]
    router = {"kind": "sglang-router", "args": [["--z"], ["--a", "1"]], "env": {}}
    assert apply_diff(router, {"args": {"--b": ["2"]}})["args"] == [["--z"], ["--a", "1"], ["--b", "2"]]
    assert apply_diff(router, {"block": {"kind": "etcd"}}) == {"kind": "etcd"}
    assert apply_diff(router, None) == router and apply_diff(router, None) is not router
    assert sort_args([["--x"], ["--model-path", "m"], ["--b", "1"], ["--b", "0"]]) == [
        ["--model-path", "m"], ["--b", "1"], ["--b", "0"], ["--x"]]


def test_apply_patch_forms() -> None:
    base = [{"kind": "etcd", "args": [["--a", "1"]], "env": {}}, {"kind": "nats", "args": [], "env": {}}]
    assert apply_patch(base, None) == base
    assert apply_patch(base, {"replace": [{"kind": "nginx"}]}) == [{"kind": "nginx"}]
    assert apply_patch(base, [{"args": {"--a": ["2"]}}])[0]["args"] == [["--a", "2"]]
    assert apply_patch(base, [None, {"block": {"kind": "x"}}])[1] == {"kind": "x"}


def test_kv_transform_order_and_tiers() -> None:
    module: dict[str, Any] = {"cells": [], "kvMooncake": {
        "master": {"sglang": {"kind": "mooncake-master", "cmd": "mooncake_master", "args": [], "env": {}}},
        "args": [["--enable-unified-cache-external-linker"]], "env": {"MOONCAKE_MASTER": "m", "X": "1"},
        "decode_env": {"MOONCAKE_MASTER": "m"}}}
    cell = {"kv": {"hicache": {"args": [["--hicache-ratio", "2"], ["--enable-hierarchical-cache"]]}}}
    blocks = [
        {"kind": "sglang-router", "args": [], "env": {}},
        {"kind": "worker", "role": "prefill", "args": [["--port", "1"], ["--hicache-ratio", "9"]], "env": {"X": "0"}},
        {"kind": "worker", "role": "decode", "args": [["--port", "2"]], "env": {}},
    ]
    assert kv_transform(blocks, "hicache", "hicache", cell, module, "sglang") is blocks
    out = kv_transform(blocks, "hicache", "mooncake", cell, module, "sglang")
    assert [b["kind"] for b in out] == ["sglang-router", "mooncake-master", "worker", "worker"]
    assert out[2]["args"] == [["--port", "1"], ["--enable-unified-cache-external-linker"]]
    assert out[2]["env"] == {"MOONCAKE_MASTER": "m", "X": "0"}  # add-if-absent
    assert out[3]["env"] == {"MOONCAKE_MASTER": "m"} and out[3]["args"] == [["--port", "2"]]
    back = kv_transform(out, "mooncake", "hicache", cell, module, "sglang")
    assert [b["kind"] for b in back] == ["sglang-router", "worker", "worker"]
    assert back[1]["args"] == [["--port", "1"], ["--enable-hierarchical-cache"], ["--hicache-ratio", "2"]]
    assert back[1]["env"] == {"X": "0"}


# ---- reference errors ----

def _synthetic() -> dict[str, Any]:
    worker = {"kind": "worker", "role": "agg", "cmd": "python3 -m sglang.launch_server", "args": [["--port", "30000"]], "env": {}}
    def cell(blocks: list[dict], dynamo: list[dict] | None = None) -> dict:
        routers = {"sglang": {"install": [], "files": [], "blocks": blocks}}
        if dynamo is not None:
            routers["dynamo"] = {"install": [], "files": [], "blocks": dynamo}
        return {"id": f"c#{len(blocks)}", "submitted": "sglang", "kv": {"available": ["none"]},
                "points": [{"concs": [1], "kv": "none", "status": "verified"}], "routers": routers}
    return {"envs": [{"B": "2", "A": "1"}], "files": {}, "cells": [
        cell([worker], [{"from": 0, "cmd": "python3 -m dynamo.sglang", "envRef": 0}]),
        cell([{"ref": [0, "sglang", 0], "workers": 2}]),
    ]}


def test_synthetic_module_decodes() -> None:
    module = _synthetic()
    blocks = Decoder(module).decode_point(0, 0, "dynamo", None)
    assert blocks[0].cmd == "python3 -m dynamo.sglang" and list(blocks[0].env.items()) == [("A", "1"), ("B", "2")]
    assert Decoder(module).decode_point(1, 0, "sglang", None)[0].workers == 2
    assert len(combinations(module)) == 3


@pytest.mark.parametrize(("edit", "key", "text"), [
    (lambda m: m["cells"][1]["routers"]["sglang"]["blocks"][0].update(ref=[7, "sglang", 0]),
     "cells[1].routers.sglang.blocks[0].ref", "no cell 7"),
    (lambda m: m["cells"][1]["routers"]["sglang"]["blocks"][0].update(ref=[0, "vllm", 0]),
     "cells[1].routers.sglang.blocks[0].ref", "no router 'vllm'"),
    (lambda m: m["cells"][1]["routers"]["sglang"]["blocks"][0].update(ref=[0, "sglang", 3]),
     "cells[1].routers.sglang.blocks[0].ref", "no block 3"),
    (lambda m: m["cells"][0]["routers"]["dynamo"]["blocks"][0].update({"from": 5}),
     "cells[0].routers.dynamo.blocks[0].from", "no block 5"),
    (lambda m: m["cells"][0]["routers"]["dynamo"]["blocks"][0].update(envRef=4),
     "cells[0].routers.dynamo.blocks[0].envRef", "no env 4"),
])
def test_dangling_references(edit: Any, key: str, text: str) -> None:
    module = _synthetic()
    edit(module)
    with pytest.raises(CookbookError) as info:
        combinations(module, "syn.jsx")
    (problem,) = info.value.problems
    assert (problem.file, problem.key_path) == ("syn.jsx", key)
    assert text in problem.message
    assert str(problem).startswith(f"syn.jsx: {key}: ")      # a module has no line to point at


def test_bad_patches() -> None:
    module = _synthetic()
    module["cells"][1]["points"].append({"concs": [2], "kv": "none", "patch": {"sglang": {"blocks": []}}})
    with pytest.raises(CookbookError) as info:
        combinations(module, "syn.jsx")
    assert info.value.problems[0].key_path == "cells[1].points[1].patch.sglang"
    module["cells"][1]["points"][1]["patch"] = {"sglang": {"replace": [{"kind": "worker", "role": "agg",
                                                                       "cmd": "w", "args": [], "envRef": 9}]}}
    with pytest.raises(CookbookError) as info:
        combinations(module, "syn.jsx")
    assert info.value.problems[0].key_path == "cells[1].points[1].patch.sglang[0].envRef"
    module["envs"].append({"Z": "1"})
    module["cells"][1]["points"][1]["patch"]["sglang"]["replace"][0]["envRef"] = 1
    assert Decoder(module).decode_point(1, 1, "sglang", None)[0].env == {"Z": "1"}


def test_reference_cycles() -> None:
    module = _synthetic()
    module["cells"][0]["routers"]["sglang"]["blocks"][0] = {"ref": [1, "sglang", 0]}
    with pytest.raises(CookbookError) as info:
        Decoder(module, "syn.jsx").materialize(0, "sglang")
    (problem,) = info.value.problems
    assert problem.key_path == "cells[1].routers.sglang.blocks[0].ref" and "cycle" in problem.message
    own = _synthetic()
    own["cells"][0]["routers"]["sglang"]["blocks"][0] = {"from": 0}
    with pytest.raises(CookbookError, match=r"cells\[0\]\.routers\.sglang\.blocks\[0\]\.from: reference cycle"):
        Decoder(own, "syn.jsx").decode_point(0, 0, "sglang", None)


def test_materialize_is_memoised_and_not_mutated(modules: dict[str, dict]) -> None:
    module = modules[V4]
    before = copy.deepcopy(module["cells"][8])
    dec = Decoder(module, V4)
    first = dec.materialize(8, "dynamo")
    assert dec.materialize(8, "dynamo") is first
    assert {(6, "dynamo"), (7, "dynamo"), (8, "dynamo")} <= set(dec.memo)
    dec.decode_point(8, 0, "dynamo", "none")
    assert dec.materialize(8, "dynamo") == first and module["cells"][8] == before
