"""Hypothesis strategies shared by the variant and encoder tests: random, render-shaped cookbooks.

Deployments are built the way render lays them out (lead worker flags, per-slot ports, GPU pinning,
Dynamo infrastructure, SGLang router URLs, Mooncake services), with random engine flags, env,
titles and "where" prose whose values carry quotes, `$`, spaces, backslashes and JSON.
(The module name matches `tests/test_variants*.py`; it holds no tests itself.)
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from hypothesis import strategies as st

from cookbookgen.cells.model import Cell, Cookbook, Page, Point, Provenance
from cookbookgen.render.model import Block, Deployment
from cookbookgen.render.nginx import nginx_conf
from cookbookgen.render.tables import order_worker_args, tables

MODELS = ("deepseek-ai/DeepSeek-V4.1-Flash", "zai-org/GLM-5.2-FP8", "acme/Other-7B")
_RESERVED = re.compile(r"\$\{?(ETCD_IP|NATS_IP|MOONCAKE_MASTER_IP)|nats\.conf|nginx\.conf|127\.0\.0\.1")
_SPECIAL = st.sampled_from(["", "'", '"', "$", "a b", "$FOO", "${BAR}", '{"a": [1, "x y"]}', "it's", "back\\slash",
                            "semi;colon", "`tick`", "tab\tnew\nline", "ünïcödé·", "--flag-like", "=", "%{x}"])
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
VALUES = st.one_of(_SPECIAL, _TEXT).map(lambda v: _RESERVED.sub("X", v))
FLAGS = st.from_regex(r"--x-[a-z]{1,6}", fullmatch=True)
ENV_KEYS = st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True).filter(
    lambda k: not k.startswith(("DYN_", "MOONCAKE_", "CUDA_")) and k not in ("ETCD_ENDPOINTS", "NATS_SERVER"))


@st.composite
def extra_args(draw: Any, max_size: int = 4) -> list[tuple[str, ...]]:
    flags = draw(st.lists(FLAGS, max_size=max_size, unique=True))
    return [(f, *draw(st.lists(VALUES, max_size=2))) for f in flags]


@st.composite
def envs(draw: Any, max_size: int = 3) -> dict[str, str]:
    return dict(sorted(draw(st.dictionaries(ENV_KEYS, VALUES, max_size=max_size)).items()))


def _dynamo_env() -> dict[str, str]:
    return {**tables().raw["dynamo_env"], "DYN_REQUEST_PLANE": "tcp"}


HICACHE = [("--enable-hierarchical-cache",), ("--hicache-io-backend", "direct"), ("--hicache-ratio", "1.5")]
LINKER = [("--enable-unified-cache-external-linker",), ("--unified-cache-external-linker-backend", "mooncake")]
STORE_ENV = {"MOONCAKE_MASTER": "$MOONCAKE_MASTER_IP:8700", "MOONCAKE_TE_META_DATA_SERVER": "http://$MOONCAKE_MASTER_IP:8701/metadata"}


@st.composite
def topologies(draw: Any) -> list[dict[str, Any]]:
    """Roles as render plans them: [{role, slots: [workers per slot], npw}]."""
    if draw(st.booleans()):
        npw = draw(st.integers(1, 2))
        slots = [draw(st.integers(1, 2))] if npw > 1 else draw(st.lists(st.integers(1, 2), min_size=1, max_size=2))
        return [{"role": "agg", "slots": slots, "npw": npw}]
    prefill = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
    dnpw = draw(st.integers(1, 2))
    return [{"role": "prefill", "slots": prefill, "npw": 1}, {"role": "decode", "slots": [draw(st.integers(1, 2))], "npw": dnpw}]


def _worker(draw: Any, role: dict[str, Any], slot: int, router: str, kv: str, model: str) -> Block:
    r, npw, pinned = role["role"], role["npw"], len(role["slots"]) > 1
    ports = tables().ports
    lead: list[tuple[str, ...]] = [("--model-path", model), ("--host", "0.0.0.0"), ("--port", str(ports["worker"] + slot))]
    if r != "agg":
        lead.append(("--disaggregation-mode", r))
    if r == "prefill" and slot > 0:
        lead.append(("--disaggregation-bootstrap-port", str(ports["bootstrap"] + slot)))
    if npw > 1:
        lead += [("--dist-init-addr", f"${r.upper()}_HEAD_IP:20000"), ("--nnodes", str(npw)), ("--node-rank", "$NODE_RANK")]
    if router == "dynamo":
        lead.append(("--request-plane", "tcp"))
        if draw(st.booleans()):
            lead.append(("--kv-events-config", '{"publisher":"zmq","endpoint":"tcp://*:%d"}' % (5557 + 2 * slot)))
    kv_args = (HICACHE if kv == "hicache" else LINKER if kv == "mooncake" and r != "decode" else []) if r != "decode" else []
    env = draw(envs())
    if router == "dynamo":
        env.update(_dynamo_env())
    if kv == "mooncake":
        env.update(STORE_ENV)
    pins = f"{2 * slot},{2 * slot + 1}" if pinned else None
    if pins:
        env["CUDA_VISIBLE_DEVICES"] = pins
    cmd = tables().command("worker", "dynamo" if router == "dynamo" else "sglang")
    return Block(kind="worker", role=r, title=tables().title("worker", r) + draw(VALUES), cmd=cmd,
                 args=order_worker_args(lead + kv_args + draw(extra_args())), env=dict(sorted(env.items())),
                 workers=role["slots"][slot], nodes_per_worker=npw, gpu_pinning=((pins,),) if pins else None,
                 where=draw(VALUES))


def _router(draw: Any, topo: list[dict[str, Any]]) -> list[Block]:
    base, boot = tables().ports["worker"], tables().ports["bootstrap"]
    roles = {t["role"]: t for t in topo}
    if list(roles) == ["agg"] and roles["agg"]["slots"] == [1] and roles["agg"]["npw"] == 1 and draw(st.booleans()):
        return []  # one worker serving clients itself
    args: list[tuple[str, ...]] = []
    for r in ("prefill", "decode"):
        if r in roles:
            nslots = len(roles[r]["slots"])
            for i in range(sum(roles[r]["slots"])):
                url = f"http://${r.upper()}_{i}_HEAD_IP:{base + i % nslots}"
                args.append((f"--{r}", url, str(boot + i % nslots)) if r == "prefill" else (f"--{r}", url))
    if "agg" in roles:
        agg = roles["agg"]
        single = agg["slots"] == [1] and agg["npw"] == 1
        urls = [f"http://127.0.0.1:{base}"] if single else [
            f"http://$AGG_{i}_HEAD_IP:{base + i % len(agg['slots'])}" for i in range(sum(agg["slots"]))]
        args.append(("--worker-urls", *urls))
    else:
        args.append(("--pd-disaggregation",))
    args += [("--host", "0.0.0.0"), ("--port", "8000")] + draw(extra_args(2))
    return [Block(kind="sglang-router", title=draw(VALUES), cmd=tables().command("sglang-router"), args=tuple(args),
                  env=draw(envs(2)), count=1, where=draw(VALUES))]


def _dynamo(draw: Any) -> list[Block]:
    count = draw(st.sampled_from([1, 1, 3]))
    blocks = [Block(kind="etcd", title=tables().title("etcd"), cmd="etcd", args=tuple(tuple(a) for a in tables().raw["etcd_args"]),
                    count_nodes=1, where="on one CPU node (ETCD_IP)")]
    if draw(st.booleans()):
        blocks.append(Block(kind="nats", title=tables().title("nats"), cmd=tables().command("nats_with_conf"),
                            files={"nats.conf": "max_payload: 1048576\n"}, count_nodes=1, where=draw(VALUES)))
    else:
        blocks.append(Block(kind="nats", title=tables().title("nats"), cmd=tables().command("nats"), count_nodes=1, where=""))
    port = tables().ports["frontend_behind_nginx" if count > 1 else "frontend"]
    if count > 1:
        blocks.append(Block(kind="nginx", title=tables().title("nginx"), cmd=tables().command("nginx"), count=1,
                            files={"nginx.conf": nginx_conf(count, port, 8000, {})}, where=draw(VALUES)))
    env = dict(sorted({**draw(envs(2)), **_dynamo_env()}.items()))
    blocks.append(Block(kind="dynamo-frontend", title=tables().title("dynamo-frontend"), cmd=tables().command("dynamo-frontend"),
                        args=(("--http-port", str(port)), *draw(extra_args(2))), env=env, count=count, where=draw(VALUES)))
    return blocks


def _mooncake(router: str) -> list[Block]:
    env = {k: v for k, v in tables().raw["dynamo_env"].items()} if router == "dynamo" else {}
    master = Block(kind="mooncake-master", title="Mooncake master", cmd="mooncake_master",
                   args=tuple(tuple(a) for a in tables().raw["mooncake_master_args"]), env=env, count_nodes=1,
                   ports=("8700",), where="on one node (MOONCAKE_MASTER_IP)")
    store = Block(kind="mooncake-store", title="Mooncake store", cmd="python -m mooncake.mooncake_store_service",
                  args=(("--port", "8800"),), env=dict(sorted({**STORE_ENV, **env}.items())), preamble=("ulimit -n 1048576",),
                  count_nodes=1, ports=("8800", "8801"), where="on each decode node")
    return [master, store]


@st.composite
def deployments(draw: Any, router: str, kv: str, model: str, topo: list[dict[str, Any]]) -> Deployment:
    blocks: list[Block] = _dynamo(draw) if router == "dynamo" else []
    if kv == "mooncake":
        blocks += _mooncake(router)
    if router == "sglang":
        blocks += _router(draw, topo)
    for role in topo:
        blocks += [_worker(draw, role, slot, router, kv, model) for slot in range(len(role["slots"]))]
    order = {k: i for i, k in enumerate(tables().raw["launch_order"])}
    blocks.sort(key=lambda b: order[b.kind])
    return Deployment(blocks=tuple(blocks), model=model, image="img:1", gpus=4, nodes=2)


def _tweak(draw: Any, dep: Deployment) -> Deployment:
    """Another point of the same cell: some workers' flags, env and prose changed."""
    out = []
    for b in dep.blocks:
        if b.kind == "worker" and draw(st.booleans()):
            extra = draw(extra_args(2))
            names = {a[0] for a in extra}
            kept = [a for a in b.args if a[0] not in names and (a[0].startswith("--x-") is False or draw(st.booleans()))]
            b = b.model_copy(update={"args": order_worker_args(kept + extra),
                                     "env": dict(sorted({**b.env, **draw(envs(2))}.items()))})
            if draw(st.integers(0, 3)) == 0:  # prose differs too: a `{block}` patch
                b = b.model_copy(update={"where": draw(VALUES)})
        out.append(b)
    return dep.model_copy(update={"blocks": tuple(out)})


def _provenance(status: str) -> Provenance:
    run = 123 if status != "in-progress" else None
    return Provenance(pr=42, pr_url="u", commit="abcdef1", commit_url="c", run=run, attempt=1, run_url=None,
                      status=status, date=dt.date(2026, 1, 2) if run else None, recipe="r.yaml")


@st.composite
def cells(draw: Any, index: int, model: str) -> Cell:
    router = draw(st.sampled_from(["dynamo", "sglang"]))
    kv = draw(st.sampled_from(["none", "none", "hicache", "mooncake"]))
    topo = draw(topologies())
    base = draw(deployments(router, kv, model, topo))
    deps = [base] + [_tweak(draw, base) for _ in range(draw(st.integers(0, 2)))]
    points = tuple(Point(id=f"p/c{10 * i + index + 1}", label=f"c{10 * i + index + 1}", concs=(10 * i + index + 1,),
                         recipe="r.yaml", override=f"override_{i}", deployment=d, golden_al="3.5" if i == 0 else None)
                   for i, d in enumerate(deps))
    key = f"cfg-{index}"
    return Cell(id=f"{key}#0", slug=f"{key}-0", config_key=key, hw=draw(st.sampled_from(["gb300", "b200"])), model=model,
                label="L", detail="", gpus=4, nodes=2, image="img:1", image_digest=None, image_commit=None, router=router,
                kv=kv, provenance=_provenance(draw(st.sampled_from(["verified", "verified-pr", "in-progress"]))),
                points=points, exclusions=(), disclosures=(), notes=())


@st.composite
def cookbooks(draw: Any, max_cells: int = 3) -> Cookbook:
    model = draw(st.sampled_from(MODELS))
    n = draw(st.integers(1, max_cells))
    cs = tuple(draw(cells(i, model)) for i in range(n))
    page = Page(model=model, slug="m", title=model.split("/")[-1], hardware=tuple(dict.fromkeys(c.hw for c in cs)), cells=cs)
    return Cookbook(title="Random", repo="https://github.com/o/r", generated_on=dt.date(2026, 1, 3), pages=(page,))
