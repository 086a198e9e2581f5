"""InferenceX's AMD multi-node disaggregated ATOM config (framework atom-disagg, issue 31): each point
renders what amd_utils/server_atom.sh launches on its nodes for the row (recipes/amd_atom_disagg.py),
with the script's flag order and spelling (frontend.as_written), not srtctl 2.x's.

- `amd_atom_disagg_points.json` (tests/data/corpus/inferencex-843c6254-golden/, checked by reading the
  scripts: see its README) pins the published commands, whole argv per role, of one point of each row;
- every point renders, and the points of a row are one job (the same commands);
- what the scripts set for the harness or find on the node is recorded with its class, never dropped;
- what is not rendered is refused at its location: a worker spanning nodes, a row setting the scripts do
  not read, a model models_atom.yaml lacks, a script the rules do not know, a flag given twice.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import replace
from typing import Any

import pytest

from cookbookgen.diff.check import resolve_config
from cookbookgen.diff.expect import uncompared_frontend
from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_config_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.amd_atom_disagg import atom_disagg_recipe, rules
from cookbookgen.recipes.load import parse_yaml_bytes
from cookbookgen.recipes.master import check_framework
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.shell import block_argv, command_lines, format_block
from cookbookgen.render.slurm import sbatch_script
from cookbookgen.render.tables import tables

from conftest import CORPUS

EXCERPT = CORPUS / "inferencex-843c6254"
GOLDEN = json.loads((CORPUS / "inferencex-843c6254-golden" / "amd_atom_disagg_points.json").read_text(encoding="utf-8"))
UTILS = EXCERPT / "benchmarks" / "multi_node" / "amd_utils"
KEY = "dsv4-fp4-mi355x-atom-disagg"
SCRIPT = "benchmarks/multi_node/dsv4_fp4_mi355x_atom-disagg.sh"
LOCATED = re.compile(r"^[^\s:][^:]*:\d+: \S+: .+")


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return Workspace(EXCERPT)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_a_point_publishes_what_server_atom_sh_launches(ws: Workspace, name: str) -> None:
    key, point = name.split(" ")
    blocks = render_config_point(ws, load_policy(None), key, point).deployment.blocks
    got = [{"kind": b.kind, "role": b.role, "count": b.count, "argv": list(block_argv(b))} for b in blocks]
    assert got == GOLDEN[name]


def test_every_point_renders_and_a_row_is_one_job(ws: Workspace) -> None:
    entry, policy = ws.entry(KEY), load_policy(None)
    check_framework(entry)
    argvs: dict[str, set[str]] = {}
    for row in entry.rows:
        for conc in row.concs:
            blocks = render_config_point(ws, policy, KEY, f"{row.slug}/c{conc}").deployment.blocks
            argvs.setdefault(row.slug, set()).add(json.dumps([block_argv(b) for b in blocks]))
    assert sum(len(r.concs) for r in entry.rows) == 11
    assert {slug: len(v) for slug, v in argvs.items()} == {"2p1d-dep8-dep8": 1, "1p1d-tp8-tp8": 1}


def test_the_published_shell_is_bash_and_quotes_back_to_the_argv(ws: Workspace) -> None:
    """The kv-transfer-config JSON keeps its quotes, its proxy_ip the node's address ($NODE_IP, expanded)."""
    rendered = render_config_point(ws, load_policy(None), KEY, "2p1d-dep8-dep8/c512")
    for block in rendered.deployment.blocks:
        assert subprocess.run(["bash", "-n"], input=format_block(block), text=True).returncode == 0
        assert shlex.split("\n".join(command_lines(block)).replace("\\\n", " ")) == block_argv(block)
    decode = next(b for b in rendered.deployment.blocks if b.role == "decode")
    assert """'{"kv_role":"kv_consumer","kv_connector":"mooncake","proxy_ip":"'"$NODE_IP"'","handshake_port":6301}'""" in format_block(decode)


def test_what_the_scripts_set_for_the_harness_is_recorded_not_published(ws: Workspace) -> None:
    rendered = render_config_point(ws, load_policy(None), KEY, "1p1d-tp8-tp8/c4")
    classes = {s.path: s.cls for s in rendered.deployment.settings}
    assert classes["script.node.IBDEVICES"] == "harness-only" and classes["script.node.LD_LIBRARY_PATH"] == "harness-only"
    assert classes["roles.prefill.env.PYTHONUNBUFFERED"] == "harness-only"
    assert classes["frontend.env.PYTHONDONTWRITEBYTECODE"] == "harness-only"
    assert classes["frontend.args.prometheus-port"] == "harness-only"
    assert classes["roles.decode.args.kv-transfer-config"] == "published"
    words = " ".join(w for b in rendered.deployment.blocks for w in block_argv(b))
    assert "PYTHONUNBUFFERED" not in words and "--prometheus-port" not in words and "LD_LIBRARY_PATH" not in words


def _inputs(models_text: str | None = None) -> tuple[Any, dict[str, str]]:
    table = rules()
    models = parse_yaml_bytes((models_text or (UTILS / "models_atom.yaml").read_text()).encode(),
                              "benchmarks/multi_node/amd_utils/models_atom.yaml")
    return models, {n: (UTILS / n).read_text() for n in (table["server_script"], table["env_script"])}


def _refused(ws: Workspace, change: Any = None, script: str = SCRIPT, models_text: str | None = None) -> str:
    entry = ws.entry(KEY)
    row = entry.rows[1]
    if change is not None:
        row = replace(row, data=change(json.loads(json.dumps(row.data))))
    models, texts = _inputs(models_text)
    with pytest.raises(CookbookError) as refused:
        atom_disagg_recipe(entry, row, script, models, texts)
    message = str(refused.value.problems[0])
    assert LOCATED.match(message), message
    return message


def _set(side: str, key: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> dict[str, Any]:
        data[side][key] = value
        return data
    return change


def test_a_worker_spanning_nodes_is_refused_at_its_tp(ws: Workspace) -> None:
    message = _refused(ws, _set("prefill", "additional-settings", ["PREFILL_NODES=2"]))
    assert ".prefill.tp: PREFILL_TP_SIZE 16 " in message and "spans nodes" in message


def test_a_row_setting_the_scripts_do_not_read_is_refused(ws: Workspace) -> None:
    message = _refused(ws, _set("decode", "additional-settings", ["DECODE_NODES=1", "MAX_NUM_SEQS=64"]))
    assert message.startswith("configs/amd-master.yaml:975: ") and message.endswith(
        ".decode.additional-settings[1]: 'MAX_NUM_SEQS=64' is not a setting the atom-disagg scripts read on this side "
        "(DECODE_NODES, DECODE_MTP_SIZE); cookbookgen cannot tell what it changes")


def test_a_script_the_rules_do_not_know_is_refused(ws: Workspace) -> None:
    assert "is not one of the atom-disagg scripts" in _refused(ws, script="benchmarks/multi_node/glm5_fp8_mi355x_atom-disagg.sh")


def test_a_model_models_atom_yaml_lacks_is_refused(ws: Workspace) -> None:
    text = (UTILS / "models_atom.yaml").read_text().replace("DeepSeek-V4-Pro:", "DeepSeek-V4-Flash:")
    assert ".model: benchmarks/multi_node/amd_utils/models_atom.yaml has no entry 'DeepSeek-V4-Pro'" in _refused(ws, models_text=text)


def test_a_flag_given_twice_is_refused_at_the_model_entry(ws: Workspace) -> None:
    text = (UTILS / "models_atom.yaml").read_text().replace('kv_cache_flags: "--kv_cache_dtype fp8"\n  tp_dp',
                                                            'kv_cache_flags: "--kv_cache_dtype fp8 --block-size 64"\n  tp_dp', 1)
    message = _refused(ws, models_text=text)
    assert message.startswith("benchmarks/multi_node/amd_utils/models_atom.yaml:30: DeepSeek-V4-Pro: the server gets --block-size twice")


def test_the_entry_s_tuning_wins_over_job_slurm_s_and_mtp_follows_the_row(ws: Workspace) -> None:
    """server_atom.sh 117-122: `${_YAML_X:-${X:-default}}`; SPEC_ARGS (200-203) on both servers."""
    entry = ws.entry(KEY)
    text = (UTILS / "models_atom.yaml").read_text().replace('  mtp_flags: "--method mtp --num-speculative-tokens"\n',
                                                            '  mtp_flags: "--method mtp --num-speculative-tokens"\n  max_num_seqs: "64"\n', 1)
    models, texts = _inputs(text)
    row = replace(entry.rows[1], data=_set("decode", "additional-settings", ["DECODE_NODES=1", "DECODE_MTP_SIZE=2"])(
        json.loads(json.dumps(entry.rows[1].data))))
    recipe = atom_disagg_recipe(entry, row, SCRIPT, models, texts)
    prefill, decode = (recipe.data["roles"][r]["args"] for r in ("prefill", "decode"))
    assert prefill["max-num-seqs"] == "64" and decode["max-num-seqs"] == "128"      # the decode's: the row's largest concurrency
    assert list(prefill)[:4] == ["trust-remote-code", "-tp", "method", "num-speculative-tokens"]
    assert prefill["method"] == "mtp" and decode["num-speculative-tokens"] == "2"


def test_the_sbatch_job_finds_each_worker_the_router_names_by_its_server_port(ws: Workspace) -> None:
    """ATOM serves on --server-port: the job's placement finds the prefill and decode workers behind the
    router's URLs by it (a whole-tree build failed with 'names no prefill worker serving port 30000')."""
    dep = render_config_point(ws, load_policy(None), KEY, "1p1d-tp8-tp8/c4").deployment
    script = sbatch_script(dep, ["heading"], tables().describe_placeholder)
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert 'export PREFILL_0_HEAD_IP="${NODES[0]}"\nexport DECODE_0_HEAD_IP="${NODES[1]}"\n' in script
    assert "# node 0: prefill-0, atomesh\n# node 1: decode-0\n" in script


def test_diff_leaves_its_cells_unpaired_rather_than_comparing_them_as_sglang(ws: Workspace) -> None:
    """The diff has no comparison for ATOM behind AToMesh: its cells are unpaired with that reason, never
    compared as SGLang workers (126 false mismatches on the whole tree before)."""
    refused: dict[str, str] = {}
    points = resolve_config(ws, KEY, refused)
    assert points and not refused and {uncompared_frontend(p) for p in points} == {"atomesh"}
    sglang = resolve_config(ws, "dsr1-fp8-mi355x-sglang-disagg", refused)
    assert sglang and {uncompared_frontend(p) for p in sglang} == {None}
