"""Where workers run: nodes per worker, workers per node, GPU pinning and per-slot ports. No I/O.

- `gpus` of a role is GPUs per worker (default: tensor x pipeline parallel size).
- A worker with at least a node's worth of GPUs spans `ceil(gpus / gpus_per_node)` nodes.
- Smaller workers share nodes: worker i runs on node i // slots in slot i % slots, and each slot
  gets its own GPUs (CUDA_VISIBLE_DEVICES), port and bootstrap/KV-event ports.
- A role with `nodes: 0` (or `colocate`) shares the nodes of the role before it, on the GPUs that
  role leaves free on its last node. With `engine.allow_prefill_decode_colocation_across_nodes`
  (srt-slurm's contiguous packing) the workers that do not fit there go on nodes of their own, and
  the previous role's `nodes` counts the whole pool the two roles share.
- A v1 recipe's partial-node workers pack onto the first of the nodes the role reserves, as srtctl v1.0.68
  packs them; when they fill fewer nodes than it reserves, the rest stay idle (`idle_nodes`, told to the
  reader beside the workers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..recipes.bundle import EffectiveRecipe
from ..recipes.schema import EngineSpec, Recipe, RoleSpec
from .model import ROLES, Role

# The spellings of each parallel size among a role's args (`tp`: SGLang's argparse takes it for --tp-size)
PARALLEL_KEYS = {"tp": ("tensor-parallel-size", "tp-size", "tp"), "pp": ("pipeline-parallel-size", "pp-size"),
                 "dp": ("data-parallel-size", "dp-size", "dp"), "ep": ("expert-parallel-size", "ep-size")}


@dataclass(frozen=True)
class Slot:
    index: int
    workers: int
    gpus: tuple[int, ...] | None  # None: the worker owns whole nodes, no pinning needed
    shared: bool = False          # on the previous role's node (a role with nodes: 0 / colocate)


@dataclass(frozen=True)
class RoleLayout:
    role: Role
    workers: int
    gpus_per_worker: int
    nodes_per_worker: int
    nodes: int
    slots: tuple[Slot, ...]
    dp_size: int
    shares_nodes_with: Role | None = None
    idle_nodes: int = 0             # of `nodes`, reserved by the recipe but left without a worker (srtctl v1.0.68's packing)

    @property
    def colocated(self) -> bool:
        return len(self.slots) > 1 or self.shares_nodes_with is not None


def int_arg(spec: RoleSpec, keys: tuple[str, ...], default: int = 1) -> int:
    for key in keys:
        value = spec.args.get(key)
        if isinstance(value, (int, str)) and str(value).isdigit():
            return int(value)
    return default


def plan(recipe: EffectiveRecipe, typed: Recipe) -> dict[str, RoleLayout]:
    gpn = typed.resources.gpus_per_node
    out: dict[str, RoleLayout] = {}
    previous: RoleLayout | None = None
    engine = typed.engine.model_extra or {} if isinstance(typed.engine, EngineSpec) else {}
    across = bool(engine.get("allow_prefill_decode_colocation_across_nodes"))
    pool = typed.roles["prefill"].nodes if across and "decode" in typed.roles and typed.roles["decode"].nodes == "colocate" else None
    for role in ROLES:
        spec = typed.roles.get(role)
        if spec is None:
            continue
        if pool is not None and role == "prefill":
            spec = spec.model_copy(update={"nodes": None})
        layout = _plan_role(recipe, role, spec, gpn, previous, across, recipe.data.get("schema") == 1)
        if layout.shares_nodes_with and previous is not None and previous.slots[0].gpus is None:
            pinned = tuple(Slot(s.index, s.workers, tuple(range(previous.gpus_per_worker))) for s in previous.slots)
            out[previous.role] = replace(previous, slots=pinned)
        out[role] = layout
        previous = layout
    if pool is not None and out["prefill"].nodes + out["decode"].nodes != pool:
        raise recipe.error(("roles", "prefill", "nodes"), f"prefill and co-located decode workers fill "
                                                          f"{out['prefill'].nodes + out['decode'].nodes} node(s), not {pool}")
    return out


def _plan_role(recipe: EffectiveRecipe, role: Role, spec: RoleSpec, gpn: int, previous: RoleLayout | None, across: bool,
               v1: bool) -> RoleLayout:
    gpus = spec.gpus or int_arg(spec, PARALLEL_KEYS["tp"]) * int_arg(spec, PARALLEL_KEYS["pp"])
    workers = spec.workers or 1
    dp = int_arg(spec, PARALLEL_KEYS["dp"])
    if gpus >= gpn:
        per = math.ceil(gpus / gpn)
        need = per * workers
        if spec.nodes not in (None, need):
            raise recipe.error(("roles", role, "nodes"), f"{workers} worker(s) of {gpus} GPUs need {need} nodes of {gpn} GPUs, not {spec.nodes}")
        return RoleLayout(role, workers, gpus, per, need, (Slot(0, workers, None),), dp)
    if spec.nodes in (0, "colocate"):
        return _share_nodes(recipe, role, workers, gpus, gpn, dp, previous, across)
    if v1:      # srtctl v1.0.68 packs partial-node workers contiguously: a node fills before the next ...
        spread = (recipe.data.get("resources") or {}).get("spread_workers") is True     # ... or puts each on its own
        per_node = 1 if spread else gpn // gpus
        nodes = spec.nodes if isinstance(spec.nodes, int) else math.ceil(workers / per_node)
        how = "one per node (spread_workers)" if spread else f"packed {per_node} per node of {gpn} GPUs as srtctl packs them"
    else:       # schema 2: the role's workers spread over the nodes it names, as evenly as they go
        nodes = spec.nodes if isinstance(spec.nodes, int) else math.ceil(workers * gpus / gpn)
        per_node = math.ceil(workers / nodes)
        how = f"{per_node} per node"
        if per_node * gpus > gpn:
            raise recipe.error(("roles", role, "nodes"), f"{workers} workers of {gpus} GPUs do not fit on {nodes} node(s) of {gpn} GPUs")
    need = math.ceil(workers / per_node)
    idle = nodes - need if v1 and need < nodes else 0     # srtctl v1.0.68 packs onto the first nodes it reserves
    if need != nodes - idle:   # a node with no worker (but srtctl's reserved ones), or workers with no node
        raise recipe.error(("roles", role, "nodes"), f"{workers} worker(s) of {gpus} GPUs, {how}, fill {need} node(s), not {nodes}")
    if per_node == 1 or workers == 1:
        # srtctl v1.0.68 pins any worker on part of a node (worker_stage: fewer GPUs than the node has)
        pin = tuple(range(gpus)) if v1 and gpus < gpn else None
        return RoleLayout(role, workers, gpus, 1, nodes, (Slot(0, workers, pin),), dp, idle_nodes=idle)
    slots = min(workers, per_node)
    pins = tuple(Slot(s, len(range(s, workers, per_node)), tuple(range(s * gpus, (s + 1) * gpus))) for s in range(slots))
    return RoleLayout(role, workers, gpus, 1, nodes, pins, dp, idle_nodes=idle)


def _share_nodes(recipe: EffectiveRecipe, role: Role, workers: int, gpus: int, gpn: int, dp: int,
                 previous: RoleLayout | None, across: bool) -> RoleLayout:
    if previous is None or previous.nodes_per_worker > 1:
        raise recipe.error(("roles", role, "nodes"), "nodes: 0 shares the previous role's nodes, but there is no single-node role before it")
    used = (previous.workers - (previous.nodes - 1) * len(previous.slots)) * previous.gpus_per_worker
    here = min(workers, (gpn - used) // gpus) if across else workers
    if used + here * gpus > gpn:
        raise recipe.error(("roles", role, "nodes"), f"{workers} worker(s) of {gpus} GPUs do not fit beside {previous.role} ({used} of {gpn} GPUs used)")
    slots = [Slot(len(previous.slots) + s, 1, tuple(range(used + s * gpus, used + (s + 1) * gpus)), shared=True) for s in range(here)]
    per_node = gpn // gpus
    rest = workers - here
    slots += [Slot(s, len(range(s, rest, per_node)), tuple(range(s * gpus, (s + 1) * gpus))) for s in range(min(rest, per_node))]
    return RoleLayout(role, workers, gpus, 1, math.ceil(rest / per_node), tuple(slots), dp, shares_nodes_with=previous.role)
