"""A v1 recipe's `backend.mooncake_kv_store` as srtctl v1.0.68 launches it (42 recipes of InferenceX
843c6254 use it; they were refused as "cookbookgen does not use this setting"): a Mooncake master on
the infra node with srtctl's flags then the recipe's `master_extra_args`; on every worker the
MOONCAKE_* addresses and the store's `env`; on a vLLM worker also the `store_config` JSON file its
connector reads. Checked against srtctl's own launch of five real recipes
(golden/srtctl-v1.0.68-mooncake.jsonl.gz), and by the independent leaf check. One of them also spreads
its partial-node workers (`resources.spread_workers: true`), which v1 layouts now follow."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cookbookgen.errors import CookbookError
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RenderContext, render
from cookbookgen.render.shell import format_block

from nothing_dropped import effective, unmapped

DATA = Path(__file__).parent / "data" / "srtctl"
sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
import srtctl_compare  # noqa: E402

GOLDENS = srtctl_compare.load_goldens(DATA / "golden" / "srtctl-v1.0.68-mooncake.jsonl.gz")
CHECKOUT = DATA / "inferencex"
KIMI = "benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/agentic/agg-gb200-dcp16-dspark4-maxseq2-mooncake-agentic.yaml"


def _render(path: Path):  # type: ignore[no-untyped-def]
    point = Workspace(Path(".")).bare_recipe(str(path))
    return render(point.recipe, point.typed, RenderContext("org/model", load_policy()))


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda g: Path(g["recipe"]).name)
def test_every_process_and_the_store_file_agree_with_srtctl(golden: dict) -> None:
    """The master's flags, the store JSON and every worker's argv and env (MOONCAKE_* included) as srtctl's."""
    assert golden["srt_slurm_commit"].startswith("c88ef731")
    masters = [p for p in golden["processes"] if p["argv"][0] == "mooncake_master"]
    assert len(masters) == 1 and "mooncake_store_config.json" in golden["files"]
    assert srtctl_compare.differences(golden, CHECKOUT) == []


def test_a_changed_master_flag_or_store_key_is_a_difference() -> None:
    """Mutations of srtctl's side: the compare is not vacuous for the master or the store file."""
    golden = next(g for g in GOLDENS if g["recipe"] == KIMI)
    edited = json.loads(json.dumps(golden).replace("--eviction_ratio=0.10", "--eviction_ratio=0.20"))
    assert any(d.startswith("services differ") for d in srtctl_compare.differences(edited, CHECKOUT))
    files = dict(golden["files"])
    store = json.loads(files["mooncake_store_config.json"])
    files["mooncake_store_config.json"] = json.dumps({**store, "protocol": "tcp"})
    assert any(d.startswith("options files differ") for d in srtctl_compare.differences({**golden, "files": files}, CHECKOUT))


def test_the_reader_sees_the_master_and_the_store_file() -> None:
    deployment = _render(CHECKOUT / KIMI)
    master = next(b for b in deployment.blocks if b.kind == "mooncake-master")
    assert format_block(master) == (
        "mooncake_master \\\n  --port 8700 \\\n  --enable_http_metadata_server true \\\n  --http_metadata_server_port 8701 \\\n"
        "  --eviction_high_watermark_ratio 0.95 \\\n  --default_kv_lease_ttl 10000 \\\n  --rpc_thread_num 16 \\\n"
        "  --enable_metric_reporting true \\\n  --metrics_port 8702 \\\n  --eviction_ratio 0.10")
    worker = next(b for b in deployment.blocks if b.kind == "worker")
    assert worker.env["MOONCAKE_CONFIG_PATH"] == "mooncake_store_config.json"
    assert worker.env["MOONCAKE_MASTER"] == "$MOONCAKE_MASTER_IP:8700"
    text = format_block(worker)
    assert text.startswith("cat > mooncake_store_config.json <<COOKBOOK_EOF\n")     # unquoted: the master's address expands
    assert '"master_server_address": "$MOONCAKE_MASTER_IP:8700"' in text


def test_the_leaf_check_catches_a_dropped_store_setting() -> None:
    path = CHECKOUT / KIMI
    deployment = _render(path)
    assert unmapped(effective(path, None), deployment) == []
    blocks = tuple(b.model_copy(update={"files": {}}) if b.kind == "worker" else b for b in deployment.blocks)
    problems = unmapped(effective(path, None), deployment.model_copy(update={"blocks": blocks}))
    assert problems and all(p.startswith("backend.mooncake_kv_store.store_config.") for p in problems)


def test_a_master_container_is_refused_at_its_line(tmp_path: Path) -> None:
    """`mooncake_kv_store.container` runs the master from another image: not rendered yet, so a located
    error rather than a master shown in the wrong container."""
    text = (CHECKOUT / KIMI).read_text().replace("  mooncake_kv_store:\n", "  mooncake_kv_store:\n    container: example/mooncake:1\n", 1)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(text)
    with pytest.raises(CookbookError) as err:
        _render(recipe)
    line = text.splitlines().index("    container: example/mooncake:1") + 1
    assert str(err.value.problems[0]).startswith(f"{recipe}:{line}: backend.mooncake_kv_store.container: cookbookgen does not use this setting")


def test_an_sglang_worker_gets_the_addresses_and_no_file(tmp_path: Path) -> None:
    """SGLang reads MOONCAKE_* from its env (srtctl's SGLangProtocol.get_mooncake_worker_env): no JSON file;
    the store's `env` may replace MOONCAKE_LOCAL_HOSTNAME but never the master's addresses."""
    recipe = tmp_path / "sglang.yaml"
    recipe.write_text(
        "name: mc\nmodel: {path: m, container: c, precision: fp8}\n"
        "resources: {gpu_type: h200, gpus_per_node: 8, agg_nodes: 1, agg_workers: 1}\n"
        "backend:\n  type: sglang\n  mooncake_kv_store:\n    env: {MOONCAKE_LOCAL_HOSTNAME: 10.1.1.1, MOONCAKE_MASTER: x, MOONCAKE_PROTOCOL: rdma}\n"
        "  sglang_config:\n    aggregated: {tensor-parallel-size: 8}\n")
    deployment = _render(recipe)
    worker = next(b for b in deployment.blocks if b.kind == "worker")
    assert worker.files == {}
    assert {k: v for k, v in worker.env.items() if k.startswith("MOONCAKE_")} == {
        "MOONCAKE_LOCAL_HOSTNAME": "10.1.1.1", "MOONCAKE_MASTER": "$MOONCAKE_MASTER_IP:8700", "MOONCAKE_PROTOCOL": "rdma",
        "MOONCAKE_TE_META_DATA_SERVER": "http://$MOONCAKE_MASTER_IP:8701/metadata"}
    assert [b.kind for b in deployment.blocks].count("mooncake-master") == 1


def test_spread_workers_give_each_partial_node_worker_a_node_of_its_own() -> None:
    """srtctl v1.0.68 (`allocate_endpoints`, spread_workers): three TP2 decode workers on three 4-GPU nodes,
    each on GPUs 0,1, where packing would put two on one node; srtctl launched exactly this."""
    golden = next(g for g in GOLDENS if g["recipe"].endswith("1p3d-tp2-tp2-c48-agentic.yaml"))
    assert srtctl_compare.differences(golden, CHECKOUT) == []
    deployment = _render(CHECKOUT / golden["recipe"])
    decode = [b for b in deployment.blocks if b.kind == "worker" and b.role == "decode"]
    assert [(b.workers, b.where, next(a[1] for a in b.args if a[0] == "--device-ids")) for b in decode] == [(3, "on each of the 3 decode nodes, GPUs 0,1", "0,1")]
    assert deployment.nodes == 4
