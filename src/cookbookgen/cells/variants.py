"""Derived variants of a rendered point: the other router and the other KV tiers, checked for consistency.

Input: a rendered `Deployment` (render/model.py) with the router and KV tier it was measured with.
Output: the `Deployment` a reader would run under another router (Dynamo frontend vs SGLang router)
and/or another KV tier (none, HiCache, Mooncake store), always marked `derived` by the cookbook.
No I/O except the package tables `rules/kv_tiers.yaml` and `rules/render.yaml`, read once.

- Router switch: Dynamo -> SGLang drops etcd/NATS/frontend/nginx, moves the workers to
  `sglang.launch_server` without the Dynamo-only flags and env, and adds an `sglang-router` block
  built by render/deploy.py's own router builder. SGLang -> Dynamo adds etcd, NATS and a frontend
  built by render/deploy.py, and moves the workers to `dynamo.sglang` with the request plane and env.
- KV tiers: the AgentX decoder's `kv_transform` itself (AGENTX_FORMAT.md 3.4), so an exported module
  decodes to exactly these variants; HiCache donor args come from the cell itself, a same-model
  HiCache cell of the cookbook, or the table.
- `check_consistency`: every `$ETCD_IP`/`$NATS_IP`/`$MOONCAKE_MASTER_IP` has its process, every router
  URL names a worker that listens there, and no two processes that can share a node share a port.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, cast, overload

from ..errors import CookbookError
from ..policy.rules import Policy
from ..recipes.load import package_yaml
from ..recipes.schema import DynamoSpec, FrontendSpec, Recipe
from ..render import deploy
from ..render.layout import RoleLayout, Slot
from ..render.model import ROLES, Block, Deployment
from ..render.shell import format_block, placeholders_in
from ..render.tables import order_worker_args, tables
from . import describe
from .describe import flag_value
from . import ROUTERS, TIERS
from .explorer import LINKER_FLAGS, kv_transform, to_blocks
from .model import Cell, Cookbook, Point, Refused, Variant

Json = dict[str, Any]
VARIANT_FILE = "derived variant"


def kv_tables() -> Json:
    return cast(Json, package_yaml("rules/kv_tiers.yaml"))


@dataclass(frozen=True)
class Donors:
    """What the KV-tier transform adds: `cell.kv.hicache` and the module-wide `kvMooncake` objects."""

    hicache: Json   # {"args": [[flag, ...]], "donor": configKey, "donorHardware": hw}
    mooncake: Json  # the AgentX `kvMooncake` object; master blocks carry cookbookgen's title/where


# ---- Block <-> AgentX block dicts ----

def block_dict(block: Block) -> Json:
    """A block as an AgentX full block (explorer keys first, then cookbookgen's `title`/`where`); no files."""
    out: Json = {"kind": block.kind}
    if block.role is not None:
        out["role"] = block.role
    for key in ("workers", "nodes_per_worker", "node_rank", "dp_rank", "count", "count_nodes"):
        if getattr(block, key) is not None:
            out[key] = getattr(block, key)
    if block.ports is not None:
        out["ports"] = list(block.ports)
    if block.gpu_pinning is not None:
        out["gpu_pinning"] = [list(p) for p in block.gpu_pinning]
    if block.preamble:
        out["preamble"] = list(block.preamble)
    out["cmd"] = block.cmd
    out["env"] = dict(block.env)
    out["args"] = [list(a) for a in block.args]
    out["title"] = block.title
    out["where"] = block.where
    return out


# ---- donors ----

def mooncake_donor() -> Json:
    """The `kvMooncake` object of kv_tiers.yaml, master blocks titled the way render titles them."""
    raw = kv_tables()["mooncake"]
    extra = {"title": tables().title("mooncake-master"), "where": raw["master_where"]}
    master = {router: {**block, **extra} for router, block in raw["master"].items()}
    return {"donor": raw["donor"], "donorHardware": raw["donorHardware"], "master": master,
            "args": raw["args"], "env": raw["env"], "decode_env": raw["decode_env"]}


def _is_hicache_flag(flag: str) -> bool:
    return (flag == "--enable-hierarchical-cache" or flag.startswith("--hicache-")) and flag not in LINKER_FLAGS


def own_hicache(cell: Cell) -> Json | None:
    """The HiCache flags a HiCache cell ran with (its first cache-owning worker of point 0)."""
    if cell.kv != "hicache":
        return None
    for b in cell.points[0].deployment.blocks:
        args = [list(a) for a in b.args if _is_hicache_flag(a[0])]
        if b.kind == "worker" and b.role in ("agg", "prefill") and args:
            return {"args": args, "donor": cell.config_key, "donorHardware": cell.hw}
    return None


def table_hicache(model: str) -> Json:
    for entry in kv_tables()["hicache"]["donors"]:
        if any(fnmatch.fnmatchcase(model, pattern) for pattern in entry["models"]):
            return {"args": entry["args"], "donor": entry["donor"], "donorHardware": entry["donorHardware"]}
    raise CookbookError.at("cookbookgen/rules/kv_tiers.yaml", 0, "hicache.donors", f"no donor matches model {model!r}")


def donors_for(cell: Cell, cookbook: Cookbook) -> Donors:
    """HiCache donor: the cell's own flags, else a same-model HiCache cell (same hardware first), else the table."""
    hicache = own_hicache(cell)
    if hicache is None:
        others = [c for p in cookbook.pages for c in p.cells if c.model == cell.model and c.id != cell.id]
        others.sort(key=lambda c: c.hw != cell.hw)
        hicache = next((h for h in map(own_hicache, others) if h), None) or table_hicache(cell.model)
    return Donors(hicache=hicache, mooncake=mooncake_donor())


# ---- router switch ----

def _router_rules(target: str) -> Json:
    return cast(Json, kv_tables()["routers"][f"to_{target}"])


def _no_policy_context(model: str) -> deploy.RenderContext:
    return deploy.RenderContext(model_id=model, policy=Policy(rules=()))


def _layouts(workers: list[Block]) -> dict[str, RoleLayout]:
    """RoleLayouts as render planned them, read back from worker blocks (slot from the port: `deploy.sglang_worker_port`)."""
    base, stride = tables().ports["worker"], tables().ports["worker_stride"]
    out: dict[str, RoleLayout] = {}
    for role in ROLES:
        blocks = [b for b in workers if b.role == role and not b.node_rank and not b.dp_rank]     # a later node's or DP rank's block: the same workers
        if not blocks:
            continue
        slots = tuple(Slot((_int(flag_value(b, "--port"), base) - base) // stride, b.workers or 1, None) for b in blocks)
        out[role] = RoleLayout(role, sum(s.workers for s in slots), 0, blocks[0].nodes_per_worker or 1, 0, slots, 1)
    return out


def _launch_sorted(blocks: list[Block]) -> list[Block]:
    order = tables().launch_order
    return sorted(blocks, key=lambda b: order[b.kind])


def to_sglang(blocks: list[Block], model: str) -> list[Block]:
    """Dynamo -> SGLang router (rules in kv_tiers.yaml `routers.to_sglang`)."""
    rules = _router_rules("sglang")
    kept = [b for b in blocks if b.kind not in rules["drop_kinds"]]
    disagg = any(b.role in ("prefill", "decode") for b in kept if b.kind == "worker")
    out = [_sglang_block(b, rules, disagg) for b in kept]
    typed = Recipe(frontend=FrontendSpec(type="sglang-router", args=rules["router_args"]))
    layouts = _layouts([b for b in out if b.kind == "worker"])
    if "agg" in layouts or {"prefill", "decode"} <= set(layouts):
        # render's own router builder (ports, URLs, bootstrap ports from rules/render.yaml)
        routers = deploy.router_blocks(None, typed, _no_policy_context(model), layouts)  # type: ignore[arg-type]
        out += [_worker_bootstrap_ports(r, [b for b in out if b.kind == "worker"]) for r in routers]
    return _launch_sorted(out)


def _worker_bootstrap_ports(router: Block, workers: list[Block]) -> Block:
    """The router's `--prefill URL PORT` pairs with the bootstrap port each prefill worker sets itself
    (`--disaggregation-bootstrap-port` in its recipe), where render's builder assumed the default."""
    args = []
    for arg in router.args:
        m = _URL.fullmatch(arg[1]) if arg[0] == "--prefill" and len(arg) > 2 else None
        if m is not None:
            port = int(m.group(3))
            target = next((w for w in workers if w.role == "prefill" and _int(flag_value(w, "--port"), _defaults()["worker_port"]) == port), None)
            boot = flag_value(target, "--disaggregation-bootstrap-port") if target is not None else None
            if boot:
                arg = (arg[0], arg[1], boot, *arg[3:])
        args.append(arg)
    return router.model_copy(update={"args": tuple(args)})


def _sglang_block(b: Block, rules: Json, disagg: bool) -> Block:
    prefixes = tuple(rules["drop_env_prefixes"])
    env = {k: v for k, v in b.env.items() if k not in rules["drop_env"] and not k.startswith(prefixes)}
    if b.kind != "worker":
        return b.model_copy(update={"env": env})
    args = [a for a in b.args if a[0] not in rules["drop_worker_args"]]
    names = {a[0] for a in args}
    if disagg:
        args += [tuple(a) for a in rules["add_disagg_worker_args"] if a[0] not in names]
    return b.model_copy(update={"cmd": tables().command("worker", "sglang"), "args": order_worker_args(args), "env": env})


def to_dynamo(blocks: list[Block], model: str) -> list[Block]:
    """SGLang -> Dynamo: etcd, NATS and a frontend built by render; workers on dynamo.sglang."""
    rules = _router_rules("dynamo")
    typed = Recipe(frontend=FrontendSpec(type="dynamo", args=rules["frontend_args"]),
                   dynamo=DynamoSpec(request_plane=rules["request_plane"]))
    ctx = _no_policy_context(model)
    env = deploy.dynamo_env(typed)
    infra = deploy.dynamo_infra_blocks(None, typed, ctx) + deploy.dynamo_frontend_blocks(None, typed, ctx, {})  # type: ignore[arg-type]
    kept = [_dynamo_block(b, env, rules["request_plane"]) for b in blocks if b.kind not in rules["drop_kinds"]]
    return _launch_sorted(infra + kept)


def _dynamo_block(b: Block, env: dict[str, str], plane: str) -> Block:
    if b.kind in ("mooncake-master", "mooncake-store"):
        service_env = {k: v for k, v in env.items() if k != "DYN_REQUEST_PLANE"}
        return b.model_copy(update={"env": dict(sorted({**b.env, **service_env}.items()))})
    if b.kind != "worker":
        return b
    args = [a for a in b.args if a[0] != "--request-plane"] + [("--request-plane", plane)]
    return b.model_copy(update={"cmd": tables().command("worker", "dynamo"), "args": order_worker_args(args),
                                "env": dict(sorted({**b.env, **env}.items()))})


# ---- KV tiers ----

def retier(blocks: list[Block], router: str, measured: str, target: str, donors: Donors) -> list[Block]:
    """The decoder's KV-tier transform, applied to Blocks."""
    if measured == target:
        return blocks
    cell = {"kv": {"hicache": donors.hicache}}
    module = {"kvMooncake": donors.mooncake}
    dicts = kv_transform([block_dict(b) for b in blocks], measured, target, cell, module, router, VARIANT_FILE)
    files = [{"name": n, "content": c} for n, c in dict.fromkeys(file for b in blocks for file in b.files.items())]
    return to_blocks(dicts, router, files, VARIANT_FILE, "blocks")   # as the decoder builds them


def derive(dep: Deployment, measured_router: str, measured_kv: str, target_router: str, target_kv: str,
           donors: Donors) -> Deployment:
    """`dep` under another router and/or KV tier; raises CookbookError if the result is inconsistent."""
    blocks = list(dep.blocks)
    if target_router != measured_router:
        switch = {"sglang": to_sglang, "dynamo": to_dynamo}[target_router]
        blocks = switch(blocks, dep.model)
    blocks = retier(blocks, target_router, measured_kv, target_kv, donors)
    out = dep.model_copy(update={"blocks": tuple(blocks)})
    problems = check_consistency(out)
    if problems:
        raise CookbookError.at(VARIANT_FILE, 0, f"{target_router}/{target_kv}", "; ".join(problems))
    return out


# ---- the cookbook ----

def point_kv(point: Point) -> str:
    return describe.kv_tier_of(point.deployment.blocks)


def cell_variants(cell: Cell, donors: Donors, skipped: list[Refused] | None = None) -> tuple[Variant, ...]:
    """Every point x router x tier except the measured (router, tier) of the point; none for a cell
    whose router the switch and tier rules do not know (vLLM's: they rewrite SGLang commands)."""
    if cell.router not in ROUTERS:
        return ()
    routers = (cell.router, *(r for r in ROUTERS if r != cell.router))
    out = []
    for point in cell.points:
        measured = point_kv(point)
        for router in routers:
            for tier in TIERS:
                if (router, tier) == (cell.router, measured):
                    continue
                try:
                    dep = derive(point.deployment, cell.router, measured, router, tier, donors)
                except CookbookError as exc:
                    problem = CookbookError.at(cell.id, 0, f"{point.id}.{router}.{tier}", exc.problems[0].message)
                    if skipped is None:
                        raise problem from None
                    skipped.append(Refused(config=cell.config_key, point=f"{point.id} (derived {router} router, KV tier {tier})",
                                           reason=str(problem.problems[0])))
                    continue
                out.append(Variant(router=router, kv=tier, point=point.id, deployment=dep))
    return tuple(out)


def with_variants(cookbook: Cookbook, variants_of: Callable[[Cell, Donors], tuple[Variant, ...]] = cell_variants) -> Cookbook:
    """The cookbook with `Cell.variants` filled for every cell (by `variants_of`, e.g. through a cache)."""
    pages = []
    for page in cookbook.pages:
        cells = tuple(c.model_copy(update={"variants": variants_of(c, donors_for(c, cookbook))}) for c in page.cells)
        pages.append(page.model_copy(update={"cells": cells}))
    return cookbook.model_copy(update={"pages": tuple(pages)})


# ---- consistency ----

@overload
def _int(text: str | None, default: int) -> int: ...
@overload
def _int(text: str | None, default: None = None) -> int | None: ...


def _int(text: str | None, default: int | None = None) -> int | None:
    m = re.search(r"(\d+)\s*$", text or "")
    return int(m.group(1)) if m else default


def _defaults() -> Json:
    return cast(Json, kv_tables()["consistency"]["defaults"])


def _kv_event_ports(b: Block) -> list[int]:
    try:
        config = json.loads(flag_value(b, "--kv-events-config") or "null")
    except ValueError:
        return []
    port = _int(str(config.get("endpoint", ""))) if isinstance(config, dict) else None
    dp = _int(flag_value(b, "--data-parallel-size") or flag_value(b, "--dp-size") or flag_value(b, "--dp"), 1) or 1
    return list(range(port, port + dp)) if port is not None else []


def _worker_ports(b: Block) -> list[int]:
    d = _defaults()
    ports: list[int | None] = [_int(flag_value(b, "--port"), d["worker_port"])]
    if b.role == "prefill":
        ports.append(_int(flag_value(b, "--disaggregation-bootstrap-port"), d["bootstrap_port"]))
    if (b.nodes_per_worker or 1) > 1:
        ports.append(_int(flag_value(b, "--dist-init-addr")))
    return [p for p in ports + _kv_event_ports(b) if p is not None]


def _master_ports(b: Block) -> list[int | None]:
    http = (flag_value(b, "--enable_http_metadata_server") or "").lower() == "true"
    return [_int(flag_value(b, "--port")), _int(flag_value(b, "--http_metadata_server_port")) if http else None]


_SERVICE_PORTS: dict[str, Callable[[Block, Json], list[int | None]]] = {
    "sglang-router": lambda b, d: [_int(flag_value(b, "--port"), d["router_port"])],
    "vllm-router": lambda b, d: [_int(flag_value(b, "--port"), d["frontend_port"])],
    "smg": lambda b, d: [_int(flag_value(b, "--port"), d["frontend_port"])],
    "atomesh": lambda b, d: [_int(flag_value(b, "--port"), d["frontend_port"])],
    "dynamo-frontend": lambda b, d: [_int(flag_value(b, "--http-port"), d["frontend_port"])],
    "nginx": lambda b, d: [int(p) for p in re.findall(r"listen\s+(\d+)", "".join(b.files.values()))] or [d["frontend_port"]],
    "etcd": lambda b, d: [_int(flag_value(b, "--listen-client-urls"), d["etcd_ports"][0]), *d["etcd_ports"][1:]],
    "nats": lambda b, d: list(d["nats_ports"]),
    "mooncake-master": lambda b, d: _master_ports(b),
}


def listening_ports(b: Block) -> list[list[int]]:
    """Ports each co-located instance of `b` listens on (one list per instance on a node)."""
    if b.kind == "worker":
        return [_worker_ports(b)] * max(1, len(b.gpu_pinning or ()))
    if b.kind == "mooncake-store":
        ports = [_int(p) for p in b.ports or ()] or [_int(flag_value(b, "--port"))]
        return [[p] for p in ports if p is not None]
    return [[p for p in _SERVICE_PORTS[b.kind](b, _defaults()) if p is not None]]


def _pins(b: Block) -> set[str]:
    return {g for pin in b.gpu_pinning or () for p in pin for g in p.split(",") if g}


def node_groups(dep: Deployment) -> list[list[int]]:
    """Indexes of blocks that may run on one node: infrastructure together; pinned workers of a role
    together, joined with another role's pinned workers on disjoint GPUs (render's `nodes: 0` sharing);
    a router reaching 127.0.0.1 with the agg workers; Mooncake stores with every worker group."""
    blocks = dep.blocks
    local = [i for i, b in enumerate(blocks) if b.kind == "sglang-router" and "127.0.0.1" in format_block(b)]
    infra = [i for i, b in enumerate(blocks) if b.kind not in ("worker", "mooncake-store") and i not in local]
    stores = [i for i, b in enumerate(blocks) if b.kind == "mooncake-store"]
    groups: list[list[int]] = []
    for role in ROLES:
        workers = [i for i, b in enumerate(blocks) if b.kind == "worker" and b.role == role]
        pinned = [i for i in workers if blocks[i].gpu_pinning]
        groups += [[i] for i in workers if i not in pinned] + ([pinned] if pinned else [])
    groups = _merge_sharing(blocks, groups)
    groups = [g + (local if any(blocks[i].role == "agg" for i in g) else []) for g in groups]
    return [infra] + [g + stores for g in groups] + ([stores] if stores and not groups else [])


def _merge_sharing(blocks: tuple[Block, ...], groups: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for group in groups:
        gpus = set().union(*(_pins(blocks[i]) for i in group))
        target = next((g for g in out if gpus and all(_pins(blocks[i]) for i in g)
                       and not gpus & set().union(*(_pins(blocks[i]) for i in g))), None)
        if target is not None and all(blocks[i].gpu_pinning for i in group):
            target.extend(group)
        else:
            out.append(list(group))
    return out


def _port_problems(dep: Deployment) -> list[str]:
    problems: list[str] = []
    for group in node_groups(dep):
        owner: dict[int, str] = {}
        for i in group:
            b = dep.blocks[i]
            for n, ports in enumerate(listening_ports(b)):
                name = f"{b.title} (block {i}" + (f", instance {n})" if n else ")")
                for port in dict.fromkeys(ports):
                    if port in owner and owner[port] != name:
                        problems.append(f"port {port} is used by both {owner[port]} and {name} on one node")
                    owner.setdefault(port, name)
    return list(dict.fromkeys(problems))


def _placeholder_problems(dep: Deployment) -> list[str]:
    requires = kv_tables()["consistency"]["requires"]
    kinds = {b.kind for b in dep.blocks}
    problems = []
    for b in dep.blocks:
        for name in placeholders_in(format_block(b)):
            if name in requires and requires[name] not in kinds:
                problems.append(f"{b.title} uses ${name} but no {requires[name]} process is started")
    return problems


_URL = re.compile(r"http://(?:\$(AGG|PREFILL|DECODE)_(\d+)_HEAD_IP|127\.0\.0\.1):(\d+)")
_URL_ROLE = {"--prefill": "prefill", "--decode": "decode", "--worker-urls": "agg"}


def _router_problems(dep: Deployment) -> list[str]:
    workers = [b for b in dep.blocks if b.kind == "worker"]
    problems = []
    for b in (b for b in dep.blocks if b.kind == "sglang-router"):
        for arg in b.args:
            role = _URL_ROLE.get(arg[0])
            if role is None:
                continue
            urls = arg[1:] if arg[0] == "--worker-urls" else arg[1:2]
            for url in urls:
                problems += _url_problems(url, role, arg, workers)
    return problems


def _url_problems(url: str, role: str, arg: tuple[str, ...], workers: list[Block]) -> list[str]:
    m = _URL.fullmatch(url)
    if not m:
        return []
    port = int(m.group(3))
    targets = [w for w in workers if w.role == role and _int(flag_value(w, "--port"), _defaults()["worker_port"]) == port]
    if not targets:
        return [f"the router sends {arg[0]} {url} to port {port}, where no {role} worker listens"]
    total = sum(w.workers or 1 for w in workers if w.role == role)
    if m.group(2) is not None and int(m.group(2)) >= total:
        return [f"the router names {role} worker {m.group(2)}, but only {total} start"]
    if role == "prefill" and len(arg) > 2:
        boot = _int(flag_value(targets[0], "--disaggregation-bootstrap-port"), _defaults()["bootstrap_port"])
        if _int(arg[2]) != boot:
            return [f"the router's bootstrap port {arg[2]} for {url} differs from the worker's {boot}"]
    return []


def check_consistency(dep: Deployment) -> list[str]:
    """Problems of a deployment: missing referenced processes, dangling router URLs, port clashes."""
    return _placeholder_problems(dep) + _router_problems(dep) + _port_problems(dep)
