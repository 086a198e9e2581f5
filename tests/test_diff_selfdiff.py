"""`cookbookgen diff` of cookbookgen's own build against the tree it was built from is at parity (issue 31:
a gate that fails on its own faithful output is useless on CI), and a drift of what srtctl derives is still caught.

The excerpt `tests/data/corpus/inferencex-843c6254-vllm` (InferenceX 843c6254, four dynamo-vllm configs and their
recipes, see its SOURCES.md) covers the layouts the diff's recipe side derives from the recipe and srtctl v1.0.68's
rules rather than from any recipe setting: vLLM data parallelism launched per node (`--data-parallel-size-local`,
`--data-parallel-start-rank`, `--data-parallel-hybrid-lb`) and per GPU (`--data-parallel-rank`, one GPU each), a
multi-node TP worker (`--headless` on its later nodes), a v1 `mooncake_kv_store` (its master, MOONCAKE_* env and
store_config file), KV events on vLLM workers, and nginx in front of several Dynamo frontends.

Mutations edit the published side (the rendered blocks), never the recipe: each must be a mismatch naming it."""

from __future__ import annotations

import argparse
import copy
import io
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from cookbookgen.cli import main
from cookbookgen.commands.diff import run_diff
from cookbookgen.pipeline import render_all_points
from cookbookgen.policy.rules import load_policy
from cookbookgen.recipes.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]

CHECKOUT = ROOT / "tests" / "data" / "corpus" / "inferencex-843c6254-vllm"
CONFIGS = ("dsv4-fp4-gb200-dynamo-vllm", "kimik2.6-fp4-b200-dynamo-vllm", "minimaxm3-fp4-gb200-dynamo-vllm-agentic-disagg-mtp",
           "kimik3-fp4-gb200-dynamo-vllm-agentic-mooncake-dcp16-agg")
PER_NODE = ("minimaxm3-fp4-gb200-dynamo-vllm-agentic-disagg-mtp", "1p1d-dep8-dep4/c48")
PER_GPU = ("kimik2.6-fp4-b200-dynamo-vllm", "1p1d-dep1-dep1/c2048")
STORE = ("kimik3-fp4-gb200-dynamo-vllm-agentic-mooncake-dcp16-agg", "1p0d-tp16-tp16/c8")
NGINX = ("dsv4-fp4-gb200-dynamo-vllm", "1p1d-dep8-tp8/c1")

Doc = dict[str, Any]


def _diff(cookbook: Path, source: Path = CHECKOUT) -> tuple[int, list[dict]]:
    out = io.StringIO()
    args = argparse.Namespace(cookbook=[cookbook], source=source, config=None, logs=None, format="json", policy=None)
    status = run_diff(args, out)
    return status, json.loads(out.getvalue())["findings"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("selfdiff") / "site"
    assert main(["build", "--source", str(CHECKOUT), "--out", str(out), "--no-cache", "--date", "2026-11-01"]) == 0
    return out


def _documents(checkout: Path, configs: tuple[str, ...]) -> list[Doc]:
    ws, policy = Workspace(checkout), load_policy()
    out = []
    for key in configs:
        for rendered in render_all_points(ws, policy, key):
            point, dep = rendered.point, rendered.deployment
            out.append({"config": key, "point": point.point_id, "label": point.label, "concurrencies": [point.conc],
                        "recipe": point.recipe.label, "model": dep.model, "image": dep.image, "blocks": [b.to_json() for b in dep.blocks]})
    return out


@pytest.fixture(scope="module")
def docs() -> list[Doc]:
    """Every point of the four configs as `render --format json` documents (the published side of the mutations)."""
    return _documents(CHECKOUT, CONFIGS)


def test_the_built_site_self_diffs_at_parity_in_every_form(site: Path) -> None:
    status, findings = _diff(site)
    assert [f for f in findings if f["cls"] in ("mismatch", "prohibited")] == []
    assert status == 0
    points = {(f["config"], f["point"]) for f in findings if f["kind"] == "arg"}
    assert len(points) == 18 and {f["config"] for f in findings} >= set(CONFIGS)


def test_the_derived_flags_are_compared_not_waved_through(site: Path) -> None:
    """Each flag srtctl derives is classified from the recipe's numbers: the right value per process."""
    _, findings = _diff(site)

    def shown(config_point: tuple[str, str], role: str, item: str) -> set[tuple[str, str]]:
        return {(f["cls"], f.get("cookbook") or "") for f in findings
                if (f["config"], f["point"], f["role"], f["item"]) == (*config_point, role, item)}

    # DP8 over two 4-GPU nodes, per node: 4 local ranks, starting at 0 and 4
    assert shown(PER_NODE, "prefill", "--data-parallel-size-local") == {("match", "4")}
    assert shown(PER_NODE, "prefill", "--data-parallel-start-rank") == {("match", "0"), ("match", "4")}
    assert shown(PER_NODE, "prefill", "--data-parallel-hybrid-lb") == {("match", "(switch)")}
    # DP8 per GPU on one 8-GPU node: ranks 0..7, each on its own GPU
    assert shown(PER_GPU, "prefill", "--data-parallel-rank") == {("match", str(r)) for r in range(8)}
    # TP16 over four nodes: --headless on nodes 2..4 only; the store's master with srtctl's flags and the recipe's
    assert shown(STORE, "agg", "--headless") == {("match", "(switch)")}
    assert shown(STORE, "mooncake-master", "--eviction_high_watermark_ratio") == {("match", "0.95")}
    assert shown(STORE, "mooncake-master", "--metrics_port") == {("placeholder", "8702")}
    assert shown(STORE, "agg", "MOONCAKE_CONFIG_PATH") == {("match", "mooncake_store_config.json")}
    # several frontends behind nginx (enable_multiple_frontends): both blocks are the recipe's
    assert {(f["item"], f["cls"]) for f in findings if (f["config"], f["point"], f["kind"]) == (*NGINX, "block")} >= {
        ("nginx", "match"), ("dynamo-frontend", "match")}
    assert shown(NGINX, "frontend", "count") == {("match", "3")}


def _edit(docs: list[Doc], where: tuple[str, str], edit: Callable[[list[dict]], bool]) -> list[Doc]:
    out = copy.deepcopy(docs)
    doc = next(d for d in out if (d["config"], d["point"]) == where)
    assert edit(doc["blocks"]), f"the mutation found nothing to edit in {where}"
    return out


def _set_arg(role: str, flag: str, old: str | None, new: str | None, nth: int = 0) -> Callable[[list[dict]], bool]:
    """Give the `nth` block of `role` (a worker role or a block kind) showing `flag old` the value `new` (None: drop the flag)."""
    def edit(blocks: list[dict]) -> bool:
        hits = [(b, i) for b in blocks if role in (b.get("role"), b["kind"]) for i, a in enumerate(b["args"])
                if a[0] == flag and (old is None or a[1:] == [old])]
        if len(hits) <= nth:
            return False
        block, i = hits[nth]
        if new is None:
            del block["args"][i]
        else:
            block["args"][i] = [flag, new]
        return True
    return edit


def _drop_block(kind: str) -> Callable[[list[dict]], bool]:
    def edit(blocks: list[dict]) -> bool:
        before = len(blocks)
        blocks[:] = [b for b in blocks if b["kind"] != kind]
        return len(blocks) < before
    return edit


MUTATIONS = [
    ("a changed DP rank (per_gpu)", PER_GPU, _set_arg("prefill", "--data-parallel-rank", "5", "6"), "--data-parallel-rank"),
    ("a DP rank on another GPU (per_gpu)", PER_GPU, _set_arg("prefill", "--device-ids", "3", "2"), "--device-ids"),
    ("a changed --data-parallel-size-local", PER_NODE, _set_arg("prefill", "--data-parallel-size-local", "4", "2"), "--data-parallel-size-local"),
    ("a changed --data-parallel-start-rank", PER_NODE, _set_arg("prefill", "--data-parallel-start-rank", "4", "0"), "--data-parallel-start-rank"),
    ("a missing --data-parallel-hybrid-lb", PER_NODE, _set_arg("decode", "--data-parallel-hybrid-lb", None, None), "--data-parallel-hybrid-lb"),
    ("a missing --headless", STORE, _set_arg("agg", "--headless", None, None, nth=1), "--headless"),
    ("a --headless on the head node", NGINX, lambda bs: bool([b["args"].append(["--headless"]) for b in bs if b.get("role") == "decode"][:1]),
     "--headless"),
    ("a changed mooncake master arg (the recipe's)", STORE, _set_arg("mooncake-master", "--eviction_high_watermark_ratio", "0.95", "0.9"),
     "--eviction_high_watermark_ratio"),
    ("a changed mooncake master arg (srtctl's)", STORE, _set_arg("mooncake-master", "--rpc_thread_num", "16", "8"), "--rpc_thread_num"),
    ("a dropped mooncake master", STORE, _drop_block("mooncake-master"), "mooncake-master"),
    ("a dropped frontend", NGINX, _drop_block("dynamo-frontend"), "dynamo-frontend"),
    ("a dropped nginx", NGINX, _drop_block("nginx"), "nginx"),
    ("dropped KV events", PER_NODE, _set_arg("prefill", "--kv-events-config", None, None), "--kv-events-config"),
]


def test_the_rendered_documents_are_at_parity(docs: list[Doc], tmp_path: Path) -> None:
    path = tmp_path / "rendered.json"
    path.write_text(json.dumps(docs), encoding="utf-8")
    status, findings = _diff(path)
    assert ([f for f in findings if f["cls"] == "mismatch"], status) == ([], 0)


@pytest.mark.parametrize("name,where,edit,item", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_a_drift_of_what_srtctl_derives_is_a_mismatch(docs: list[Doc], tmp_path: Path, name: str, where: tuple[str, str],
                                                      edit: Callable[[list[dict]], bool], item: str) -> None:
    path = tmp_path / "rendered.json"
    path.write_text(json.dumps(_edit(docs, where, edit)), encoding="utf-8")
    status, findings = _diff(path)
    caught = [f for f in findings if f["cls"] == "mismatch" and (f["config"], f["point"]) == where and item in (f["item"], f.get("path"))]
    assert status == 1 and caught, f"{name}: not caught"


def test_the_nginx_container_is_listed_unverified_not_a_mismatch(tmp_path: Path) -> None:
    """`frontend.nginx_container` (srt-slurm's recipes/h200/8k1k/bs4-1p7d.yaml at deb1dfd99343, line 9: `nginx`)
    names the image srtctl runs nginx in; no command shows it, so it is listed as unverified, never a pass or a failure."""
    checkout = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, checkout)
    recipe = checkout / "benchmarks/multi_node/srt-slurm-recipes/vllm/deepseek-v4/8k1k/disagg-gb200-low-latency.yaml"
    text = recipe.read_text(encoding="utf-8")
    assert "frontend:\n  type: dynamo\n" in text
    recipe.write_text(text.replace("frontend:\n  type: dynamo\n", "frontend:\n  type: dynamo\n  nginx_container: nginx\n"), encoding="utf-8")
    path = tmp_path / "rendered.json"
    path.write_text(json.dumps(_documents(checkout, (NGINX[0],))), encoding="utf-8")
    status, findings = _diff(path, checkout)
    listed = {(f["cls"], f.get("path")) for f in findings if "nginx_container" in (f.get("path") or "")}
    assert (status, listed) == (0, {("unverified", "frontend.nginx_container")})
