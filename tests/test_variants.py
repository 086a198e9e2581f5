"""Derived variants: the other router and the other KV tiers, each consistent (NATS when named, no port clash)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from cookbookgen.agentx.decode import Decoder, routers_of
from cookbookgen.agentx.module import read_module_text
from cookbookgen.cells import describe
from cookbookgen.cells.assemble import load_cookbook
from cookbookgen.cells.model import Cookbook
from cookbookgen.cells.variants import (
    TIERS, check_consistency, derive, donors_for, kv_tables, mooncake_donor, table_hicache, with_variants,
)
from cookbookgen.errors import CookbookError
from cookbookgen.render.model import Block, Deployment
from cookbookgen.render.shell import format_block
from cookbookgen.render.tables import tables

from conftest import CORPUS, DATA, bundled_keys, examples
from test_variants_strategies import cookbooks

GLM = CORPUS / "sglang-cookbook" / "agentx" / "zai-org" / "glm-5.2.jsx"
V4 = CORPUS / "sglang-cookbook" / "agentx" / "deepseek-ai" / "deepseek-v4.jsx"


@pytest.fixture(scope="module")
def cookbook() -> Cookbook:
    return with_variants(load_cookbook(DATA / "cookbook.yaml"))


def _cells(cb: Cookbook):
    return [c for p in cb.pages for c in p.cells]


def _kinds(dep: Deployment) -> list[str]:
    return [b.kind for b in dep.blocks]


def _variant(cell, point_id: str, router: str, kv: str) -> Deployment:
    return next(v.deployment for v in cell.variants if (v.point, v.router, v.kv) == (point_id, router, kv))


def test_every_point_gets_five_derived_variants(cookbook: Cookbook) -> None:
    """Every SGLang point; the variants are SGLang's (router and KV tier), the vLLM and TRT-LLM cells get none."""
    sglang = bundled_keys("sglang")
    assert all(c.variants == () for c in _cells(cookbook) if c.config_key not in sglang)
    for cell in (c for c in _cells(cookbook) if c.config_key in sglang):
        for point in cell.points:
            measured = describe.kv_tier_of(point.deployment.blocks)
            combos = {(v.router, v.kv) for v in cell.variants if v.point == point.id}
            assert len(combos) == 5 and (cell.router, measured) not in combos
            assert {r for r, _ in combos} == {"dynamo", "sglang"} and {k for _, k in combos} == set(TIERS)


def test_every_bundled_variant_is_consistent(cookbook: Cookbook) -> None:
    checked = 0
    for cell in _cells(cookbook):
        for v in cell.variants:
            assert check_consistency(v.deployment) == [], (cell.id, v.point, v.router, v.kv)
            assert describe.router_of(v.deployment.blocks) == v.router
            assert describe.kv_tier_of(v.deployment.blocks) == v.kv
            checked += 1
    assert checked == 13 * 5


def test_dynamo_to_sglang_disagg(cookbook: Cookbook) -> None:
    cell = next(c for c in _cells(cookbook) if c.id.endswith("dspark-disagg#0"))
    dep = _variant(cell, cell.points[0].id, "sglang", "hicache")
    assert _kinds(dep) == ["sglang-router", "worker", "worker", "worker"]
    for b in dep.blocks[1:]:
        flags = [a[0] for a in b.args]
        assert b.cmd == "python3 -m sglang.launch_server"
        assert "--request-plane" not in flags and "--kv-events-config" not in flags and "--skip-server-warmup" in flags
        assert not [k for k in b.env if k.startswith("DYN_") or k in ("ETCD_ENDPOINTS", "NATS_SERVER")]
    router = dep.blocks[0]
    prefill = [a for a in router.args if a[0] == "--prefill"]
    assert len(prefill) == 4 and ("--pd-disaggregation",) in router.args and ("--policy", "cache_aware") in router.args
    assert prefill[1] == ("--prefill", "http://$PREFILL_1_HEAD_IP:30032", "8999")  # slot 1: its own port and bootstrap
    assert ("--port", str(tables().ports["frontend"])) in router.args


def test_sglang_to_dynamo_starts_etcd_nats_and_frontend(cookbook: Cookbook) -> None:
    cell = next(c for c in _cells(cookbook) if c.id.endswith("sglang-agentic-dspark#0"))
    dep = _variant(cell, cell.points[0].id, "dynamo", "none")
    assert _kinds(dep) == ["etcd", "nats", "dynamo-frontend", "worker"]
    frontend, worker = dep.blocks[2], dep.blocks[3]
    assert frontend.args == (("--http-port", "8000"), ("--router-mode", "kv"))
    assert worker.cmd == "python3 -m dynamo.sglang" and ("--request-plane", "tcp") in worker.args
    assert {"DYN_REQUEST_PLANE": "tcp", "ETCD_ENDPOINTS": "http://$ETCD_IP:2379"}.items() <= worker.env.items()


def test_mooncake_under_dynamo_names_nats_and_starts_it(cookbook: Cookbook) -> None:
    """The explorer's Dynamo-derived Mooncake variant names $NATS_IP without NATS (AGENTX_FORMAT.md 5.5); ours starts it."""
    cell = next(c for c in _cells(cookbook) if c.router == "sglang")
    dep = _variant(cell, cell.points[0].id, "dynamo", "mooncake")
    master = next(b for b in dep.blocks if b.kind == "mooncake-master")
    assert "$NATS_IP" in format_block(master) and "nats" in _kinds(dep)
    assert _kinds(dep).index("mooncake-master") < _kinds(dep).index("worker")
    cache_worker = next(b for b in dep.blocks if b.kind == "worker")
    assert cache_worker.env["MOONCAKE_MASTER"] == "$MOONCAKE_MASTER_IP:8700"
    assert ("--enable-unified-cache-external-linker",) in cache_worker.args


def test_hicache_donor_is_own_flags_then_same_model_then_table(cookbook: Cookbook) -> None:
    cells = _cells(cookbook)
    disagg = next(c for c in cells if c.id.endswith("dspark-disagg#0"))
    agg = next(c for c in cells if c.id.endswith("agentic-agg#0"))
    own = donors_for(disagg, cookbook).hicache
    assert own["donor"] == disagg.config_key and ["--hicache-ratio", "1.02"] in own["args"]
    assert donors_for(agg, cookbook).hicache["donor"] == disagg.config_key  # same model, same hardware
    assert table_hicache("deepseek-ai/DeepSeek-V4-Pro")["donor"] == "dsv4-fp4-b300-dynamo-sglang-agentic-agg"
    assert table_hicache("unknown/model")["args"][0] == ["--enable-hierarchical-cache"]
    dep = _variant(agg, agg.points[0].id, "dynamo", "hicache")
    worker = next(b for b in dep.blocks if b.kind == "worker")
    assert ("--hicache-ratio", "1.02") in worker.args


def test_kv_tables_are_the_corpus_facts() -> None:
    module = read_module_text(V4.read_text(encoding="utf-8"), str(V4))
    ours = mooncake_donor()
    facts = module["kvMooncake"]
    for key in ("donor", "donorHardware", "args", "env", "decode_env"):
        assert ours[key] == facts[key], key
    for router in ("dynamo", "sglang"):
        assert {k: v for k, v in ours["master"][router].items() if k not in ("title", "where")} == facts["master"][router]
    hicache_cells = [c["kv"]["hicache"] for c in module["cells"] if c["kv"]["hicache"]["donor"] == kv_tables()["hicache"]["donors"][0]["donor"]]
    assert hicache_cells and hicache_cells[0]["args"] == kv_tables()["hicache"]["donors"][0]["args"]


# ---- check_consistency ----

def _block(kind: str, **kw) -> Block:
    return Block(kind=kind, title=kw.pop("title", kind), cmd=kw.pop("cmd", kind), **kw)


def test_nats_must_run_when_named() -> None:
    master = _block("mooncake-master", env={"NATS_SERVER": "nats://$NATS_IP:4222"}, args=(("--port", "8700"),))
    dep = Deployment(blocks=(master,), model="m")
    assert check_consistency(dep) == ["mooncake-master uses $NATS_IP but no nats process is started"]
    fixed = Deployment(blocks=(_block("nats", cmd="nats-server"), master), model="m")
    assert check_consistency(fixed) == []


def test_colocated_workers_must_not_share_a_port() -> None:
    def worker(port: str, pins: str) -> Block:
        return _block("worker", role="decode", args=(("--port", port),), gpu_pinning=((pins,),), workers=1)

    clash = Deployment(blocks=(worker("30000", "0,1"), worker("30000", "2,3")), model="m")
    assert any("port 30000 is used by both" in p for p in check_consistency(clash))
    assert check_consistency(Deployment(blocks=(worker("30000", "0,1"), worker("30001", "2,3")), model="m")) == []
    apart = _block("worker", role="decode", args=(("--port", "30000"),), workers=2)  # one per node: no clash
    assert check_consistency(Deployment(blocks=(apart, apart), model="m")) == []


def test_router_urls_must_reach_a_worker() -> None:
    worker = _block("worker", role="agg", args=(("--port", "30000"),), workers=1)
    router = _block("sglang-router", args=(("--worker-urls", "http://$AGG_0_HEAD_IP:30001"),), count=1)
    assert "no agg worker listens" in check_consistency(Deployment(blocks=(router, worker), model="m"))[0]
    router = _block("sglang-router", args=(("--worker-urls", "http://$AGG_3_HEAD_IP:30000"),), count=1)
    assert "only 1 start" in check_consistency(Deployment(blocks=(router, worker), model="m"))[0]


def test_the_explorer_faults_in_the_public_modules_are_found() -> None:
    """AGENTX_FORMAT.md 5.4 and 5.5: a pinned multi-worker block with one --port, and Mooncake without NATS."""
    found: dict[str, set[str]] = {"port": set(), "nats": set(), "other": set()}
    for path in (V4, GLM):
        module = read_module_text(path.read_text(encoding="utf-8"), str(path))
        for ci, cell in enumerate(module["cells"]):
            for router in routers_of(cell):
                for kv in cell["kv"]["available"]:
                    blocks = tuple(Decoder(module).decode_point(ci, 0, router, kv))
                    for p in check_consistency(Deployment(blocks=blocks, model="m")):
                        kind = "port" if p.startswith("port ") else "nats" if "$NATS_IP" in p else "other"
                        found[kind].add(cell["id"])
    assert found["port"] == {"glm5.2-fp4-b200-dynamo-sglang-agentic-disagg#0"}
    assert len(found["nats"]) == 8 and not found["other"], found


def test_derive_refuses_an_inconsistent_result() -> None:
    worker = _block("worker", role="agg", args=(("--port", "30000"),), env={"X": "$NATS_IP"}, workers=1,
                    cmd="python3 -m sglang.launch_server")
    dep = Deployment(blocks=(worker,), model="acme/Other")
    donors = donors_for(_fake_cell(dep), Cookbook(title="t", repo="r", generated_on=None, pages=()))
    with pytest.raises(CookbookError) as info:
        derive(dep, "sglang", "none", "sglang", "hicache", donors)
    (problem,) = info.value.problems
    assert problem.key_path == "sglang/hicache" and "$NATS_IP" in problem.message
    ok = derive(dep, "sglang", "none", "dynamo", "hicache", donors)  # Dynamo starts NATS: consistent
    assert "nats" in _kinds(ok)


def _fake_cell(dep: Deployment):
    from test_variants_strategies import _provenance
    from cookbookgen.cells.model import Cell, Point

    point = Point(id="p", label="c1", concs=(1,), recipe="r", override=None, deployment=dep)
    return Cell(id="k#0", slug="k-0", config_key="k", hw="h", model=dep.model, label="L", detail="", gpus=1, nodes=1,
                image="i", image_digest=None, image_commit=None, router="sglang", kv="none",
                provenance=_provenance("verified"), points=(point,), exclusions=(), disclosures=(), notes=())


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cookbooks())
def test_random_deployments_give_consistent_variants(cb: Cookbook) -> None:
    for cell in _cells(cb):
        for point in cell.points:
            assert check_consistency(point.deployment) == [], "generator made an inconsistent measured point"
    out = with_variants(cb)
    for cell in _cells(out):
        assert len(cell.variants) == 5 * len(cell.points)
        for v in cell.variants:
            assert check_consistency(v.deployment) == []
            assert describe.router_of(v.deployment.blocks) == v.router and describe.kv_tier_of(v.deployment.blocks) == v.kv
            if any("$NATS_IP" in format_block(b) for b in v.deployment.blocks):
                assert "nats" in _kinds(v.deployment)
