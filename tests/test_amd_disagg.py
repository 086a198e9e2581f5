"""InferenceX's AMD multi-node disaggregated SGLang configs (framework sglang-disagg, issue 31): each point
renders what amd_utils/server_sglang.sh launches on its nodes for the row (recipes/amd_disagg.py).

- `amd_disagg_points.json` (tests/data/corpus/inferencex-843c6254-golden/, checked by reading the scripts:
  see its README) pins the published commands, whole argv per role, of 12 points, one or more of every
  rendered config of the excerpt (the agentic HiCache arm included);
- what is not rendered is refused with its location (atom-disagg renders: test_amd_atom_disagg.py): a script whose exports
  are not known, a KV offload backend other than HiCache, a worker spanning nodes, an unknown row
  setting, a formula or a flag given twice with different values in models.yaml, a model models.yaml
  lacks, each at its line;
- what the script exports but does not belong in a command is recorded with its class, never dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from cookbookgen.errors import CookbookError
from cookbookgen.pipeline import render_config_point, render_point
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.amd_disagg import disagg_recipe, rules
from cookbookgen.recipes.launches import dram_note
from cookbookgen.recipes.load import parse_yaml_bytes
from cookbookgen.recipes.master import check_framework
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RunMemo
from cookbookgen.render.shell import block_argv

from conftest import CORPUS

EXCERPT = CORPUS / "inferencex-843c6254"
GOLDEN = json.loads((CORPUS / "inferencex-843c6254-golden" / "amd_disagg_points.json").read_text(encoding="utf-8"))
UTILS = EXCERPT / "benchmarks" / "multi_node" / "amd_utils"
LOCATED = re.compile(r"^[^\s:][^:]*:\d+: \S+: .+")


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return Workspace(EXCERPT)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_a_point_publishes_what_server_sglang_sh_launches(ws: Workspace, name: str) -> None:
    key, point = name.split(" ")
    blocks = render_config_point(ws, load_policy(None), key, point).deployment.blocks
    got = [{"kind": b.kind, "role": b.role, "count": b.count, "argv": block_argv(b)} for b in blocks]
    assert got == GOLDEN[name]


def test_every_point_of_the_sglang_disagg_configs_renders(ws: Workspace) -> None:
    policy, counted = load_policy(None), 0
    for key, entry in ws.entries().items():
        if entry.framework != "sglang-disagg":
            continue
        check_framework(entry)
        for row in entry.rows:
            for conc in row.concs:
                render_config_point(ws, policy, key, f"{row.slug}/c{conc}")
                counted += 1
    assert counted == 136


def test_the_largest_concurrency_of_the_row_sizes_the_dp_attention_limits(ws: Workspace) -> None:
    """One job runs every concurrency of a row: c512 and c128 of the row [128, 256, 512] launch the same
    servers, with max-running-requests 512 and 512 / 8 dispatch tokens per decode rank."""
    policy = load_policy(None)
    one, other = (render_config_point(ws, policy, "dsr1-fp4-mi355x-sglang-disagg", f"1p1d-dep8-dep8/c{c}").deployment.blocks for c in (512, 128))
    assert [block_argv(b) for b in one] == [block_argv(b) for b in other]
    decode = next(b for b in one if b.role == "decode")
    assert ("--max-running-requests", "512") in decode.args and decode.env["SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK"] == "64"


def test_what_the_scripts_export_for_the_harness_is_recorded_not_published(ws: Workspace) -> None:
    rendered = render_config_point(ws, load_policy(None), "dsv4-fp4-mi355x-sglang-disagg", "1p1d-tp8-tp8/c1")
    classes = {s.path: (s.cls, s.reason) for s in rendered.deployment.settings}
    assert classes["script.node.MORI_RDMA_TC"][0] == "harness-only" and classes["script.job.HICACHE_RATIO"][0] == "harness-only"
    assert classes["roles.prefill.env.PYTHONDONTWRITEBYTECODE"][0] == "harness-only"
    assert classes["roles.prefill.args.log-level"][0] == "harness-only"
    assert classes["roles.decode.args.disaggregation-ib-device"][0] == "placeholder"
    assert classes["roles.decode.env.SGLANG_HACK_FLASHMLA_BACKEND"][0] == "published"
    words = " ".join(w for b in rendered.deployment.blocks for w in block_argv(b))
    assert "IBDEVICES" not in words and "PYTHONDONTWRITEBYTECODE" not in words and "--log-level" not in words


def test_an_agentic_point_sizes_its_servers_by_its_own_concurrency(ws: Workspace) -> None:
    """InferenceX runs one agentic multi-node concurrency per job: c64 and c192 of one DEP8 row launch
    servers with their own max-running-requests, unlike a fixed-seq-len row."""
    policy, key = load_policy(None), "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp"
    limits = {c: next(b for b in render_config_point(ws, policy, key, f"1p1d-dep8-dep8/c{c}").deployment.blocks if b.role == "decode")
              for c in (64, 192)}
    assert ("--max-running-requests", "64") in limits[64].args and ("--max-running-requests", "192") in limits[192].args
    assert limits[192].env["SGLANG_MORI_DISPATCH_INTER_KERNEL_SWITCH_THRESHOLD"] == "48"


def test_the_agentic_arm_discloses_its_simulated_acceptance(ws: Workspace) -> None:
    rendered = render_config_point(ws, load_policy(None), "dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp", "1p1d-tp8-tp8/c8")
    classes = {s.path: s for s in rendered.deployment.settings}
    assert classes["roles.decode.env.SGLANG_SIMULATE_ACC_LEN"].value == "2.49"
    assert classes["roles.decode.env.SGLANG_SIMULATE_ACC_LEN"].cls == "harness-only"
    assert classes["roles.prefill.args.enable-metrics"].cls == "harness-only"
    assert classes["script.job.HICACHE_RATIO"].value == "3" and classes["script.job.HICACHE_RATIO"].cls == "harness-only"


def test_the_agentic_arm_gets_no_dram_sizing_note(ws: Workspace) -> None:
    """Its HiCache is sized by ratio (FORCE_HICACHE_RATIO), not from the runner's TOTAL_CPU_DRAM_GB: the
    single-node scripts' note about DRAM-sized host caches would mislead."""
    entry = ws.entry("dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp")
    assert dram_note(entry, ws.runners(entry)) is None
    single = ws.entry("qwen3.5-fp8-b200-sglang-agentic-mtp")      # a single-node script sizing --hicache-size
    assert "TOTAL_CPU_DRAM_GB" in str(dram_note(single, ws.runners(single)))


def test_a_script_whose_exports_are_not_known_is_refused_at_its_row(ws: Workspace) -> None:
    entry, row = _row(ws, "dsr1-fp8-mi355x-sglang-disagg", "1p2d-tp8-tp8")
    models, texts = _inputs()
    with pytest.raises(CookbookError) as refused:
        disagg_recipe(entry, row, 4, "benchmarks/multi_node/glm5_fp8_mi355x_sglang-disagg.sh", models, texts)
    message = str(refused.value.problems[0])
    assert LOCATED.match(message) and "glm5_fp8_mi355x_sglang-disagg.sh (fixed-seq-len) is not one of the sglang-disagg scripts" in message


def test_a_kv_offload_backend_other_than_hicache_is_refused_at_its_row(ws: Workspace) -> None:
    entry = ws.entry("dsv4-fp4-mi355x-sglang-disagg-agentic-hicache-mtp")
    row = replace(entry.rows[0], data={**entry.rows[0].data, "kv-offload-backend": {"name": "lmcache"}})
    models, texts = _inputs()
    with pytest.raises(CookbookError) as refused:
        disagg_recipe(entry, row, 8, "benchmarks/multi_node/agentic/dsv4_fp4_mi355x_sglang-disagg.sh", models, texts)
    assert str(refused.value.problems[0]).endswith(".kv-offload-backend: KV offload backend 'lmcache' of this script is not rendered (HiCache only)")


def _inputs(models_text: str | None = None) -> tuple[object, dict[str, str]]:
    table = rules()
    models = parse_yaml_bytes((models_text or (UTILS / "models.yaml").read_text()).encode(), "benchmarks/multi_node/amd_utils/models.yaml")
    texts = {n: (UTILS / n).read_text() for n in (table["server_script"], table["env_script"])}
    return models, texts


def _row(ws: Workspace, key: str, slug: str, **sides: dict[str, object]):
    entry = ws.entry(key)
    row = next(r for r in entry.rows if r.slug == slug)
    data = {**row.data, **{side: {**row.data[side], **change} for side, change in sides.items()}}
    return entry, replace(row, data=data)


def test_a_worker_spanning_nodes_is_refused_at_its_tp(ws: Workspace) -> None:
    entry, row = _row(ws, "dsr1-fp8-mi355x-sglang-disagg", "1p2d-tp8-tp8", prefill={"tp": 16})
    models, texts = _inputs()
    with pytest.raises(CookbookError) as refused:
        disagg_recipe(entry, row, max(row.concs), "benchmarks/multi_node/dsr1_fp8_mi355x_sglang-disagg.sh", models, texts)
    assert re.fullmatch(r"configs/amd-master\.yaml:\d+: [\w.-]+\.scenarios\.fixed-seq-len\[0\]\.search-space\[1\]\.prefill\.tp: "
                        r"PREFILL_TP_SIZE 16 .* spans nodes: .*", str(refused.value.problems[0]))


def test_an_unknown_row_setting_is_refused_at_its_item(ws: Workspace) -> None:
    entry, row = _row(ws, "dsr1-fp8-mi355x-sglang-disagg", "1p2d-tp8-tp8",
                      decode={"additional-settings": ["DECODE_NODES=2", "DECODE_MTP_SIZE=0", "SGLANG_EXTRA=1"]})
    models, texts = _inputs()
    with pytest.raises(CookbookError) as refused:
        disagg_recipe(entry, row, max(row.concs), "benchmarks/multi_node/dsr1_fp8_mi355x_sglang-disagg.sh", models, texts)
    assert ".decode.additional-settings[2]: 'SGLANG_EXTRA=1' is not a setting the sglang-disagg scripts read" in str(refused.value.problems[0])


def test_a_formula_cookbookgen_cannot_read_is_refused_at_its_models_yaml_line(ws: Workspace) -> None:
    text = (UTILS / "models.yaml").read_text()
    start = text.index("DeepSeek-R1-0528:\n")
    text = text[:start] + text[start:].replace('"MORI_MAX_DISPATCH_TOKENS_PREFILL * PREFILL_TP_SIZE"', '"2 ** PREFILL_TP_SIZE"', 1)
    entry, row = _row(ws, "dsr1-fp8-mi355x-sglang-disagg", "2p1d-dep8-dep8")
    models, texts = _inputs(text)
    with pytest.raises(CookbookError) as refused:
        disagg_recipe(entry, row, max(row.concs), "benchmarks/multi_node/dsr1_fp8_mi355x_sglang-disagg.sh", models, texts)
    assert str(refused.value.problems[0]).startswith("benchmarks/multi_node/amd_utils/models.yaml:149: DeepSeek-R1-0528.prefill.dp.chunked_prefill_size: "
                                                     "'2 ** PREFILL_TP_SIZE': cookbookgen reads only products of integers and of")


def test_a_flag_given_twice_is_refused_at_the_models_entry(ws: Workspace) -> None:
    text = (UTILS / "models.yaml").read_text()
    start = text.index("DeepSeek-R1-0528:\n")
    text = text[:start] + text[start:].replace('--disaggregation-transfer-backend mori"', '--disaggregation-transfer-backend mori --tp-size 4"', 1)
    # the same flag with the same value again is one setting (the agentic arm's --page-size)
    entry, row = _row(ws, "dsr1-fp8-mi355x-sglang-disagg", "1p2d-tp8-tp8")
    models, texts = _inputs(text)
    with pytest.raises(CookbookError) as refused:
        disagg_recipe(entry, row, max(row.concs), "benchmarks/multi_node/dsr1_fp8_mi355x_sglang-disagg.sh", models, texts)
    assert str(refused.value.problems[0]).startswith("benchmarks/multi_node/amd_utils/models.yaml:139: DeepSeek-R1-0528: the prefill server gets "
                                                     "--tp-size twice, with different values")


def test_a_model_models_yaml_lacks_is_refused_at_the_config(ws: Workspace) -> None:
    entry = ws.entry("dsr1-fp8-mi355x-sglang-disagg")
    entry = replace(entry, data={**entry.data, "model": "example/Unknown-Model"})
    models, texts = _inputs()
    with pytest.raises(CookbookError) as refused:
        disagg_recipe(entry, entry.rows[0], 4, "benchmarks/multi_node/dsr1_fp8_mi355x_sglang-disagg.sh", models, texts)
    assert "has no entry 'Unknown-Model-DI' nor 'Unknown-Model'" in str(refused.value.problems[0])


def test_the_excerpt_holds_the_scripts_verbatim() -> None:
    """The copies the tests read are InferenceX's files (SOURCES.md), not edited: the launch lines the
    recipes are located at are where the scripts have them."""
    server = (UTILS / "server_sglang.sh").read_text()
    assert server.splitlines()[734].lstrip().startswith('PREFILL_CMD="SGLANG_MORI_COMBINE_DTYPE=')
    assert Path(UTILS / "env.sh").read_text().splitlines()[212].strip() == "export SGLANG_USE_AITER=1"


def test_no_setting_of_a_point_is_dropped(ws: Workspace) -> None:
    """Independently of the renderer: every arg and env entry of each role's recipe is on that role's
    block (a list value word for word, a switch as a bare flag), and the router's on the router's, unless
    the policy holds it back (harness-only, placeholder) with a reason; every other leaf has a class."""
    from nothing_dropped import _classified, _has_flag, _same, leaves

    policy, memo, seen = load_policy(None), RunMemo(), 0
    for entry in ws.entries().values():
        if entry.framework != "sglang-disagg":
            continue
        for row in entry.rows:
            for conc in row.concs:
                point = ws.point(entry, row, conc)
                blocks = render_point(point, policy, False, memo).blocks
                for path, value in leaves(point.recipe.data):
                    on = [b for b in blocks if (b.role == path[1] if path[0] == "roles" else b.kind == "sglang-router")]
                    if path[0] in ("roles", "frontend") and path[-2] in ("args", "env"):
                        shown = any(_has_flag(b.args, path[-1], value) if path[-2] == "args" else _same(b.env.get(path[-1], "\0"), value)
                                    for b in on)
                        assert shown or _classified(policy, path, value, command=True), (entry.key, row.slug, conc, path, value)
                    else:
                        assert _classified(policy, path, value, command=False), (entry.key, row.slug, conc, path, value)
                    seen += 1
    assert seen > 136 * 100
