"""Stage 3 of the diff (expect): what a point's recipe implies beyond its own settings, computed from the recipe's numbers alone
(not through `render.layout`, so a renderer bug cannot hide behind itself). No I/O.

Topology of a role (srt-slurm's rules):
- GPUs per worker: `roles.<role>.gpus`, else tensor x pipeline parallel size from the args (times a vLLM
  worker's data-parallel size: each DP rank is a replica of its own);
- a worker with at least a node's GPUs spans ceil(GPUs / `resources.gpus_per_node`) nodes;
- smaller workers share nodes: ceil(workers / nodes) per node, each pinned to its own GPUs
  (`0,1`, `2,3`, ...); `nodes: 0` puts the role on the GPUs the previous role leaves free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ..policy.rules import Policy
from ..recipes.load import KeyPath
from ..recipes.workspace import ResolvedPoint, model_id
from ..render.deploy import frontend_layout
from .tables import table

RawYaml = Any
ROLE_ORDER = ("prefill", "decode", "agg")


@dataclass(frozen=True)
class RoleTopology:
    role: str
    workers: int
    gpus: int
    nodes_per_worker: int
    nodes: int | None          # as the recipe says (None: not given)
    per_node: int              # workers sharing one node
    pins: tuple[str, ...]      # CUDA_VISIBLE_DEVICES of each co-located slot; () when workers own their nodes
    replica: int = 1           # GPUs of one TP x PP replica (tensor x pipeline parallel size)
    dp: str | None = None      # a vLLM data-parallel role of a v1 recipe: how srtctl launches it (per_node, per_gpu)

    @property
    def expected_nodes(self) -> int:
        if self.nodes is not None:
            return self.nodes
        return self.workers * self.nodes_per_worker if self.nodes_per_worker > 1 else math.ceil(self.workers / self.per_node)


@dataclass(frozen=True)
class PointExpect:
    """Everything the comparison needs to know about one resolved point."""

    config: str
    point: str
    model_id: str
    image: str
    image_where: str
    frontend: str                      # dynamo | sglang-router | sglang
    frontend_count: int
    nginx: bool                        # nginx in front of the frontends
    request_plane: str | None          # as the recipe sets it (None: srt-slurm's default)
    mooncake: bool
    store: dict[str, RawYaml] | None   # a v1 recipe's backend.mooncake_kv_store (srtctl starts its master and sets its client env)
    engine: str                        # sglang | vllm | trtllm | ...
    device_ids: bool                   # vLLM workers pinned with --device-ids (srtctl v1.0.68's set_cuda_visible_devices false)
    roles: dict[str, RoleTopology]
    kv_events: dict[str, RawYaml]
    cluster_env: dict[str, tuple[str, str]]  # name -> (value, reason)

    @property
    def dynamo(self) -> bool:
        return self.frontend.startswith("dynamo")

    @property
    def effective_request_plane(self) -> str:
        return self.request_plane or str(table()["defaults"]["request_plane"])

    @property
    def single_worker(self) -> bool:
        return list(self.roles) == ["agg"] and self.roles["agg"].workers == 1


def _int_arg(args: dict[str, RawYaml], keys: list[str]) -> int:
    for key in keys:
        value = args.get(key)
        if isinstance(value, (int, str)) and not isinstance(value, bool) and str(value).isdigit():
            return int(value)
    return 1


def role_topology(role: str, spec: dict[str, RawYaml], gpn: int, previous: RoleTopology | None, across: bool = False,
                  v1: bool = False, spread: bool = False, vllm: bool = False) -> RoleTopology:
    """A role's workers, nodes and GPU pins as the recipe asks. `nodes: 0` / `colocate`: on the GPUs the
    previous role leaves free on its last node; with `across` (srt-slurm's packing across nodes) the
    workers that do not fit there fill nodes of their own, from GPU 0. A v1 recipe's (srtctl v1.0.68)
    partial-node workers fill a node before the next (as many per node as fit), whatever nodes it reserves, or
    each gets a node of its own with `resources.spread_workers` (`spread`)."""
    args = spec.get("args") or {}
    keys = table()["parallel_keys"]
    replica = _int_arg(args, keys["tp"]) * _int_arg(args, keys["pp"])
    ranks = _int_arg(args, table()["dp_keys"]) if vllm else 1    # a vLLM worker runs its DP ranks, each a TP x PP replica
    gpus = int(spec.get("gpus") or replica * ranks)
    workers = int(spec.get("workers") or 1)
    nodes = spec.get("nodes")
    if gpus >= gpn:
        return RoleTopology(role, workers, gpus, math.ceil(gpus / gpn), nodes, 1, (), replica)
    if nodes in (0, "colocate") and previous is not None:
        used, here, rest = _beside(previous, workers, gpus, gpn, across)
        own = min(rest, gpn // gpus)
        shared = {_pin(used + s * gpus, gpus) for s in range(here)} | {_pin(s * gpus, gpus) for s in range(own)}
        return RoleTopology(role, workers, gpus, 1, 0, max(here, own), tuple(sorted(shared)), replica)
    per_node = (1 if spread else min(workers, gpn // gpus) if v1 else
                math.ceil(workers / (nodes if isinstance(nodes, int) and nodes else math.ceil(workers * gpus / gpn))))
    pins = tuple(_pin(s * gpus, gpus) for s in range(per_node)) if per_node > 1 else ()
    return RoleTopology(role, workers, gpus, 1, nodes, per_node, pins, replica)


def _beside(previous: RoleTopology, workers: int, gpus: int, gpn: int, across: bool) -> tuple[int, int, int]:
    """(GPUs the previous role uses on its last node, workers that go there, workers left for nodes of their own)."""
    used = (previous.workers - (previous.expected_nodes - 1) * previous.per_node) * previous.gpus
    here = min(workers, (gpn - used) // gpus) if across else workers
    return used, here, workers - here


def _pin(start: int, gpus: int) -> str:
    return ",".join(str(g) for g in range(start, start + gpus))


def topologies(data: dict[str, RawYaml]) -> dict[str, RoleTopology]:
    gpn = int(((data.get("resources") or {}).get("gpus_per_node")) or 4)
    roles = data.get("roles") or {}
    engine = data.get("engine")
    across = isinstance(engine, dict) and bool(engine.get("allow_prefill_decode_colocation_across_nodes"))
    pool = ((roles.get("prefill") or {}).get("nodes") if across and (roles.get("decode") or {}).get("nodes") == "colocate" else None)
    out: dict[str, RoleTopology] = {}
    previous = None
    for role in ROLE_ORDER:
        if isinstance(roles.get(role), dict):
            spec = {**roles[role], "nodes": None} if pool is not None and role == "prefill" else roles[role]
            v1 = data.get("schema") == 1
            spread = v1 and (data.get("resources") or {}).get("spread_workers") is True
            previous = out[role] = replace(role_topology(role, spec, gpn, previous, across, v1, spread, _engine(data) == "vllm"),
                                           dp=_dp_mode(data, spec))
    if isinstance(pool, int):       # the prefill nodes count the pool: less the decode workers' own nodes
        decode = out["decode"]
        rest = _beside(out["prefill"], decode.workers, decode.gpus, gpn, across)[2]
        out["prefill"] = replace(out["prefill"], nodes=pool - math.ceil(rest / (gpn // decode.gpus)))
    return out


def _engine(data: dict[str, RawYaml]) -> str:
    engine = data.get("engine")
    return str((engine.get("type") if isinstance(engine, dict) else engine) or "sglang")


def _dp_mode(data: dict[str, RawYaml], spec: dict[str, RawYaml]) -> str | None:
    """How srtctl v1.0.68 launches a v1 vLLM role that sets `data-parallel-size` (any value): `per_node` (its
    default; the recipe's checkout's default is in `backend.dp_launch_mode`), or `per_gpu`, which a direct
    `vllm serve` (frontend type vllm) ignores. None for any other role."""
    args = spec.get("args") or {}
    if data.get("schema") != 1 or _engine(data) != "vllm" or not any(args.get(k) is not None for k in table()["dp_keys"]):
        return None
    backend = data.get("backend")
    mode = backend.get("dp_launch_mode") if isinstance(backend, dict) else None
    per_gpu = mode == "per_gpu" and (data.get("frontend") or {}).get("type", "dynamo") != "vllm"
    return "per_gpu" if per_gpu else "per_node"


def store_of(data: dict[str, RawYaml]) -> dict[str, RawYaml] | None:
    """A v1 recipe's `backend.mooncake_kv_store` (normalised under `engine`), or None."""
    engine = data.get("engine")
    store = engine.get("mooncake_kv_store") if isinstance(engine, dict) else None
    return store if isinstance(store, dict) else None


def _frontend(kind: str, engine: RawYaml) -> str:
    """The frontend type, `dynamo-<engine>` for an engine other than SGLang behind Dynamo (its workers differ)."""
    name = engine.get("type") if isinstance(engine, dict) else engine
    return f"dynamo-{name}" if kind == "dynamo" and name not in (None, "sglang") else kind


def uncompared_frontend(point: ResolvedPoint) -> str | None:
    """The point's frontend type when `synthesized.yaml` has no `frontends` entry for it: the diff knows
    neither its worker command nor what its frontend adds, so it cannot check the point (None otherwise)."""
    data = point.recipe.data
    kind = _frontend(str((data.get("frontend") or {}).get("type") or "dynamo"), data.get("engine"))
    return None if kind in table()["frontends"] else kind


def entry_where(point: ResolvedPoint, path: KeyPath | None) -> str:
    """`file:line` of `path` in the point's master config; the recipe file when it has no entry (or no path)."""
    if point.entry is None or path is None:
        return point.recipe_path
    problem = point.entry.doc.problem(path, "")
    return f"{problem.file}:{problem.line}"


def point_expect(point: ResolvedPoint, policy: Policy) -> PointExpect:
    data = point.recipe.data
    frontend = data.get("frontend") or {}
    cluster = point.entry.cluster if point.entry else None
    services = data.get("services") or []
    roles = topologies(data)
    # the frontends and nginx the recipe runs on its nodes, by the renderer's rule (srtctl's)
    frontend_count, nginx = frontend_layout(point.typed.frontend, sum(t.expected_nodes for t in roles.values()))
    return PointExpect(
        config=point.entry.key if point.entry else point.recipe.label,
        point=point.point_id,
        model_id=model_id(point),
        image=point.entry.image if point.entry else str(point.typed.model.container or ""),
        image_where=entry_where(point, (point.entry.key, "image") if point.entry else None),
        frontend=_frontend(str(frontend.get("type") or "dynamo"), data.get("engine")),
        frontend_count=frontend_count,
        nginx=nginx,
        request_plane=(data.get("dynamo") or {}).get("request_plane"),
        mooncake=store_of(data) is not None or any(isinstance(s, dict) and str(s.get("type", "")).startswith("mooncake") for s in services),
        store=store_of(data),
        engine=_engine(data),
        device_ids=_engine(data) == "vllm" and isinstance(data.get("engine"), dict) and data["engine"].get("set_cuda_visible_devices") is False,
        roles=roles,
        kv_events={r: (s or {}).get("kv_events") for r, s in (data.get("roles") or {}).items()},
        cluster_env={e.name: (e.value, e.reason) for e in policy.clusters.get(cluster or "", ())},
    )
