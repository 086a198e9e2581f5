"""Effective recipe -> Deployment: every process block in launch order. No I/O.

Dispatch is by table: the frontend type picks the frontend builder; blocks are ordered by the
`launch_order` table. Every recipe setting passes through the policy (`values.kept`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ..policy.classify import PathMemo, SettingsMemo, classify, may_prohibit
from ..errors import CookbookError, Problem
from ..policy.rules import Policy, Setting, glob_matches
from ..recipes.bundle import EffectiveRecipe
from ..recipes.schema import EngineSpec, FrontendSpec, Recipe, RoleSpec, ServiceSpec
from .layout import RoleLayout, Slot, plan
from .model import Block, Deployment
from .nginx import nginx_conf
from .tables import order_worker_args, tables
from . import atom, trtllm
from . import vllm
from .vllm import device_ids, node_ranks, router_block, worker_parts
from .values import ValuesMemo, args_from_mapping, args_from_words, kept_args, kept_env, replace_args, word

RawYaml = Any


BlocksMemo = dict[tuple[object, ...], tuple[tuple[RawYaml, ...], list[Block]]]


@dataclass
class RunMemo:
    """What the points of one config share while they are rendered (the points of a bundle share the
    recipe subtrees their overrides leave alone: the same objects). Each result is kept with the
    subtrees it was made from and reused only for those very objects."""

    settings: SettingsMemo = field(default_factory=dict)
    """`classify`: the settings of a subtree at a path."""
    prohibited_paths: PathMemo = field(default_factory=dict)
    """`may_prohibit`: whether a prohibited rule's path is under a subtree."""
    blocks: BlocksMemo = field(default_factory=dict)
    """`_shared`: the blocks built from the subtrees they read (services, frontend, a role)."""
    args: ValuesMemo = field(default_factory=dict)
    """`values.kept_args`: what one recipe arg value shows in a command."""
    env: ValuesMemo = field(default_factory=dict)
    """`values.kept_env`: what one recipe env value shows in a command."""


@dataclass(frozen=True)
class RenderContext:
    """What the recipe does not say: the Hugging Face model id, the policy, the cluster it ran on;
    and the run memo the points of a config share (a fresh one by default)."""

    model_id: str
    policy: Policy
    cluster: str | None = None
    image: str | None = None
    settings: bool = True       # list every setting with its class (the pages' report); else none are listed
    memo: RunMemo = field(default_factory=RunMemo)


def frontend_kind(typed: Recipe, layouts: dict[str, RoleLayout]) -> str:
    """`dynamo`, a router (`sglang-router`, `vllm-router`, `smg`), or `direct` (one worker serving
    clients itself: frontend type `sglang` or `vllm` with one worker, a script's `trtllm` or `atom`,
    srtctl's `trtllm_serve`)."""
    if typed.frontend.type in ("dynamo", "vllm-router", "smg", "atomesh"):
        return typed.frontend.type
    single = list(layouts) == ["agg"] and layouts["agg"].workers == 1
    if typed.frontend.type == "sglang" and srtctl_v1(typed):
        return "sglang-router"      # srtctl v1.0.68 starts sglang_router.launch_router even for one worker
    if typed.frontend.type in SERVING_ALONE:
        return "direct"
    return "direct" if typed.frontend.type in ("sglang", "vllm") and single else "sglang-router"


# Frontend types of an engine that serves clients itself, one aggregated worker: a benchmark script's
# trtllm-serve or ATOM, srtctl's trtllm_serve (its disaggregated orchestrator is not rendered).
SERVING_ALONE = ("trtllm", "atom", "trtllm_serve")


def srtctl_v1(typed: Recipe) -> bool:
    """A v1 recipe (normalised with `schema: 1`): srtctl v1.0.68's meaning applies where it differs."""
    return (typed.model_extra or {}).get("schema") == 1


def render(recipe: EffectiveRecipe, typed: Recipe, ctx: RenderContext) -> Deployment:
    # without a settings report, classified only to raise on a prohibited setting, when there may be one
    memo = ctx.memo
    settings = (classify(recipe, ctx.policy, memo.settings)
                if ctx.settings or may_prohibit(recipe, ctx.policy, memo.prohibited_paths) else [])
    vllm.check(recipe, typed)
    unconsumed = unconsumed_settings(recipe, ctx.policy)
    if unconsumed:
        raise CookbookError(unconsumed)
    layouts = plan(recipe, typed)
    kind = frontend_kind(typed, layouts)
    _check_extra_args(recipe, typed, kind)
    if kind == "atomesh":
        atom.check_srtctl(recipe, typed, layouts)
    if typed.frontend.type in SERVING_ALONE and not (list(layouts) == ["agg"] and layouts["agg"].workers == 1):
        raise recipe.error(("frontend", "type"), f"frontend type {typed.frontend.type} is the engine serving clients itself: "
                                                 "one aggregated worker (roles.agg, one worker) expected"
                                                 + ("; srtctl's orchestrator of prefill and decode trtllm-serve workers (its ser.yaml) "
                                                    "is not rendered yet" if typed.frontend.type == "trtllm_serve" else ""))
    cluster_env, cluster_settings = _cluster_env(ctx, typed)
    blocks: list[Block] = []
    data = recipe.data
    roles = tuple(layouts.items())
    if kind == "dynamo":
        blocks.extend(_shared(ctx, ("dynamo-infra",), (data.get("services"),), lambda: dynamo_infra_blocks(recipe, typed, ctx)))
    blocks.extend(_shared(ctx, ("mooncake", kind, roles), (data.get("services"), data.get("dynamo"), data.get("engine")),
                          lambda: _mooncake(recipe, typed, ctx, layouts, kind) + _v1_mooncake_master(typed, ctx)))
    blocks.extend(_shared(ctx, ("frontend", kind, roles), (data.get("frontend"), data.get("dynamo")),
                          lambda: FRONTENDS[kind](recipe, typed, ctx, layouts)))
    for role, layout in layouts.items():
        spec = typed.roles[role]  # type: ignore[index]
        raw = (recipe.data.get("roles") or {}).get(role)
        for slot in layout.slots:
            blocks += [_with_mooncake_store(block, typed, ctx)
                       for block in ENGINE_WORKERS[typed.engine_type](raw, typed, ctx, kind, layout, slot, spec, cluster_env)]
    order = tables().launch_order
    blocks.sort(key=lambda b: order[b.kind])
    gpus = sum(lay.workers * lay.gpus_per_worker for lay in layouts.values())
    nodes = sum(lay.nodes for lay in layouts.values())
    image = str(ctx.image or typed.identity.container.image or typed.model.container or "")
    cpu_nodes = 1 if kind != "direct" and _dedicated_infra(typed) else 0
    report = tuple(settings + cluster_settings) if ctx.settings else ()
    return Deployment(blocks=tuple(blocks), settings=report, model=ctx.model_id,
                      image=image, gpus=gpus, nodes=nodes, cpu_nodes=cpu_nodes)


def _check_extra_args(recipe: EffectiveRecipe, typed: Recipe, kind: str) -> None:
    """`roles.<role>.extra_args` reach a command only as srtctl passes them: to trtllm-serve (frontend
    type trtllm_serve); srtctl ignores them anywhere else, so a recipe that has them there is refused."""
    if typed.engine_type == "trtllm" and kind == "direct":
        return
    for role, spec in typed.roles.items():
        if spec.extra_args:
            raise recipe.error(("roles", role, "extra_args"), "srtctl passes extra_args to trtllm-serve only (engine trtllm with "
                                                              "frontend.type: trtllm_serve); this launch would not use them")


def unconsumed_settings(recipe: EffectiveRecipe, policy: Policy) -> list[Problem]:
    """Every setting no command shows and no policy rule classifies: the renderer consumes the leaves
    under `tables().consumed` (args, env, options of a process), the policy covers the rest; a
    setting neither does would be dropped with exit 0, so it is a located error instead."""
    consumed = tables().consumed
    problems: list[Problem] = []

    def walk(node: RawYaml, path: tuple[str, ...]) -> None:
        if path and (any(glob_matches(c, path) for c in consumed) or policy.first_match(path, _SUBTREE) is not None):
            return
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, path + (str(key),))
        elif isinstance(node, list) and node and all(isinstance(v, dict) for v in node):
            for i, value in enumerate(node):
                walk(value, path + (str(i),))
        elif policy.first_match(path, node) is None:
            problems.append(recipe.problem(path, "cookbookgen does not use this setting and no policy rule classifies it; "
                                                 "add a rule for it to a --policy file, or remove it"))
    walk(recipe.data, ())
    return problems


_SUBTREE = object()     # the value a section is matched with: only a rule without `value:` covers a whole section


def _shared(ctx: RenderContext, key: tuple[object, ...], inputs: tuple[RawYaml, ...], build: Callable[[], list[Block]]) -> list[Block]:
    """`build()`, once per run memo for each `key` and the very `inputs` it reads: the recipe subtrees
    (`services`, `frontend`, `dynamo`, a role) that the points of a bundle share unless their override
    touches them. The blocks are a function of those subtrees (which the typed recipe validates), of
    the values in `key`, and of the policy; the points then share the block objects."""
    memo_key = (*key, *map(id, inputs))
    hit = ctx.memo.blocks.get(memo_key)
    if hit is not None and all(a is b for a, b in zip(hit[0], inputs)):
        return hit[1]
    blocks = build()
    ctx.memo.blocks[memo_key] = (inputs, blocks)
    return blocks


def _dedicated_infra(typed: Recipe) -> bool:
    """Whether the recipe puts the frontend or the control-plane services on a CPU node of their own."""
    names = tables().raw["dedicated_placements"]
    placements = [typed.frontend.placement] + [s.placement for s in typed.services or ()]
    return typed.infra.etcd_nats_dedicated_node or any(p is not None and p.node in names for p in placements)


def _cluster_env(ctx: RenderContext, typed: Recipe) -> tuple[dict[str, tuple[str, str]], list[Setting]]:
    entries = ctx.policy.clusters.get(ctx.cluster or "", ())
    env: dict[str, tuple[str, str]] = {e.name: (e.value, e.reason) for e in entries}
    settings = [Setting(f"roles.{role}.env.{name}", value, "cluster-provided", reason, f"clusters.{ctx.cluster}")
                for role, spec in typed.roles.items() for name, (value, reason) in env.items() if name not in spec.env]
    return env, settings


def dynamo_env(typed: Recipe) -> dict[str, str]:
    env = dict(tables().raw["dynamo_env"])
    plane = typed.dynamo.request_plane
    if plane:
        env["DYN_REQUEST_PLANE"] = word(plane)
    return env


# --- workers -------------------------------------------------------------------------------------

def _shared_worker(raw: RawYaml, typed: Recipe, ctx: RenderContext, kind: str, layout: RoleLayout,
                   slot: Slot, spec: RoleSpec, cluster_env: dict[str, tuple[str, str]]) -> list[Block]:
    """`_worker`, once per run for each role subtree and slot (`_shared`): the block is a function of
    the role subtree (which `spec` validates) and of the values keyed below."""
    plane = typed.dynamo.request_plane
    mooncake = any(s.type == "mooncake-master" for s in typed.services or [])
    key = ("worker", kind, layout, slot, ctx.model_id, plane, mooncake, tuple(cluster_env.items()))

    return _shared(ctx, key, (raw,), lambda: [_worker(typed, ctx, kind, layout, slot, spec, cluster_env)])


def _worker(typed: Recipe, ctx: RenderContext, kind: str, layout: RoleLayout,
            slot: Slot, spec: RoleSpec, cluster_env: dict[str, tuple[str, str]]) -> Block:
    role = layout.role
    ports = tables().ports
    port = sglang_worker_port(slot.index)
    lead: list[tuple[str, ...]] = [("--model-path", ctx.model_id), ("--host", "0.0.0.0"), ("--port", str(port))]
    if role != "agg" and "disaggregation-mode" not in spec.args:
        lead.append(("--disaggregation-mode", role))
    if role == "prefill" and slot.index > 0 and "disaggregation-bootstrap-port" not in spec.args:
        lead.append(("--disaggregation-bootstrap-port", str(ports["bootstrap"] + slot.index)))
    if layout.nodes_per_worker > 1:
        lead += [("--dist-init-addr", f"${role.upper()}_HEAD_IP:{ports['dist_init']}"),
                 ("--nnodes", str(layout.nodes_per_worker)), ("--node-rank", "$NODE_RANK")]
    if kind == "dynamo" and typed.dynamo.request_plane:
        lead.append(("--request-plane", word(typed.dynamo.request_plane)))
    if spec.kv_events and "kv-events-config" not in spec.args:
        lead.append(("--kv-events-config", _kv_events(spec.kv_events, ports["kv_events"] + slot.index * layout.dp_size)))
    args = lead + kept_args(ctx.policy, ("roles", role, "args"), spec.args, ctx.memo.args)
    env = kept_env(ctx.policy, ("roles", role, "env"), spec.env, ctx.memo.env)
    cmd = tables().command("worker", "dynamo" if kind == "dynamo" else "sglang")
    return _worker_block(typed, kind, layout, slot, cluster_env, cmd, order_worker_args(args), env)


def sglang_worker_port(slot: int) -> int:
    """The HTTP port of the SGLang worker in `slot` of its node (ports `worker` + `worker_stride` per slot)."""
    return tables().ports["worker"] + slot * tables().ports["worker_stride"]


def _vllm_workers(raw: RawYaml, typed: Recipe, ctx: RenderContext, kind: str, layout: RoleLayout,
                  slot: Slot, spec: RoleSpec, cluster_env: dict[str, tuple[str, str]]) -> list[Block]:
    """The slot's vLLM worker blocks: one, one per node of the worker (`vllm.node_ranks`), or one per GPU
    (`vllm.gpu_processes`, srtctl's per_gpu layout)."""
    if vllm.per_gpu(typed, spec):
        return [_vllm_gpu_worker(typed, ctx, kind, layout, slot, spec, cluster_env, process)
                for process in vllm.gpu_processes(layout, slot)]
    return [_vllm_worker(typed, ctx, kind, layout, slot, spec, cluster_env, rank) for rank in node_ranks(typed, layout, spec)]


def _vllm_gpu_worker(typed: Recipe, ctx: RenderContext, kind: str, layout: RoleLayout, slot: Slot, spec: RoleSpec,
                     cluster_env: dict[str, tuple[str, str]], process: tuple[int, int, int]) -> Block:
    """The process of one DP rank of a per-GPU worker, on its one GPU: a block per process, as co-located
    workers have; on a worker spanning nodes, the block of that node (`Block.node_rank`)."""
    rank, gpu, node = process
    cmd, args, env = worker_parts(typed, ctx.policy, ctx.model_id, kind, layout, slot, spec, tables().ports["frontend"], process=process)
    one = Slot(slot.index, slot.workers, (gpu,), slot.shared)
    block = _worker_block(typed, kind, layout, one, cluster_env, cmd, args, env, pin_env=not device_ids(typed))
    multi = layout.nodes_per_worker > 1
    where = f"{_rank_where(layout, slot, node)}, GPU {gpu}" if multi else _worker_where(layout, one, str(gpu))
    title = f"{tables().title('worker', layout.role)} · DP rank {rank} of {layout.gpus_per_worker} (GPU {gpu}"
    return block.model_copy(update={"title": title + (f", node {node + 1} of {layout.nodes_per_worker})" if multi else ")"),
                                    "node_rank": node if multi else None, "dp_rank": rank,
                                    "where": f"{where}: one process per GPU of the worker (srtctl's dp_launch_mode per_gpu)"})


def _vllm_worker(typed: Recipe, ctx: RenderContext, kind: str, layout: RoleLayout, slot: Slot, spec: RoleSpec,
                 cluster_env: dict[str, tuple[str, str]], rank: int | None) -> Block:
    """A vLLM worker's block; with `rank`, the process on that node of each of the slot's workers."""
    cmd, args, env = worker_parts(typed, ctx.policy, ctx.model_id, kind, layout, slot, spec, tables().ports["frontend"], rank)
    block = _worker_block(typed, kind, layout, slot, cluster_env, cmd, args, env, pin_env=not device_ids(typed))
    if rank is None or layout.nodes_per_worker == 1:
        return block
    return block.model_copy(update={"node_rank": rank, "title": f"{block.title} · node {rank + 1} of {layout.nodes_per_worker}",
                                    "where": _rank_where(layout, slot, rank)})


def _rank_where(layout: RoleLayout, slot: Slot, rank: int) -> str:
    role = layout.role
    each = f"of each of the {slot.workers} {role} workers" if slot.workers > 1 else f"of the {role} worker"
    if rank == 0:
        return f"on the head node {each} ({role.upper()}_HEAD_IP), NODE_RANK=0"
    return f"on node {rank + 1} of {layout.nodes_per_worker} {each}, NODE_RANK={rank}"


def _trtllm_worker(raw: RawYaml, typed: Recipe, ctx: RenderContext, kind: str, layout: RoleLayout,
                   slot: Slot, spec: RoleSpec, cluster_env: dict[str, tuple[str, str]]) -> list[Block]:
    if kind == "direct":
        if typed.frontend.type == "trtllm_serve":
            cmd, args, env, files = trtllm.srtctl_serve_parts(ctx.policy, ctx.model_id, layout, spec, tables().ports["frontend"])
        else:
            cmd, args, env, files = trtllm.serve_parts(ctx.policy, ctx.model_id, layout, spec, tables().ports["frontend"])
    else:
        cmd, args, env, files = trtllm.worker_parts(typed, ctx.policy, ctx.model_id, layout, slot, spec)
    return [_worker_block(typed, kind, layout, slot, cluster_env, cmd, args, env, files)]


def _atom_worker(raw: RawYaml, typed: Recipe, ctx: RenderContext, kind: str, layout: RoleLayout,
                 slot: Slot, spec: RoleSpec, cluster_env: dict[str, tuple[str, str]]) -> list[Block]:
    if kind == "atomesh" and atom.as_written(typed):
        cmd, args, env = atom.as_written_worker_parts(ctx.policy, ctx.model_id, layout, slot, spec)
    elif kind == "atomesh":
        cmd, args, env = atom.srtctl_worker_parts(ctx.policy, ctx.model_id, layout, slot, spec)
    else:
        cmd, args, env = atom.worker_parts(ctx.policy, ctx.model_id, layout, spec, tables().ports["frontend"])
    return [_worker_block(typed, kind, layout, slot, cluster_env, cmd, args, env)]


def _worker_block(typed: Recipe, kind: str, layout: RoleLayout, slot: Slot, cluster_env: dict[str, tuple[str, str]],
                  cmd: str, args: tuple[tuple[str, ...], ...], env: dict[str, str], files: dict[str, str] | None = None,
                  pin_env: bool = True) -> Block:
    """A worker's block: its command with the env every engine's worker gets (Dynamo planes, Mooncake
    store, cluster env, GPU pins) and where it runs."""
    role = layout.role
    if kind == "dynamo":
        env.update(dynamo_env(typed))
        if files:       # TRT-LLM: srtctl launches it per endpoint, with the plane as --request-plane only
            env.pop("DYN_REQUEST_PLANE", None)
    if any(s.type == "mooncake-master" for s in typed.services or []) and any(k.startswith("MOONCAKE_") for k in env):
        env = {**tables().raw["mooncake_store_env"], **env}
    for name, (value, _) in cluster_env.items():
        env.setdefault(name, value)
    pins = ",".join(map(str, slot.gpus)) if slot.gpus is not None else None
    if pins is not None and pin_env:
        env["CUDA_VISIBLE_DEVICES"] = pins
    title = tables().title("worker", role) + (f" · GPUs {pins}" if pins and layout.colocated else "")
    return Block(kind="worker", role=role, title=title, cmd=cmd, args=args, env=dict(sorted(env.items())), workers=slot.workers,
                 files=files or {}, preamble=trtllm.dynamo_install(typed) if kind == "dynamo" else (),
                 nodes_per_worker=layout.nodes_per_worker, gpu_pinning=((pins,),) if pins else None,
                 idle_nodes=layout.idle_nodes or None, where=_worker_where(layout, slot, pins) + _idle(layout))


def _idle(layout: RoleLayout) -> str:
    if not layout.idle_nodes:
        return ""
    used = layout.nodes - layout.idle_nodes
    return (f"; the recipe reserves {layout.nodes} {layout.role} nodes and srtctl packs these workers onto the first {used}, "
            f"so {layout.idle_nodes} of them run no {layout.role} worker")


def _kv_events(setting: RawYaml, port: int) -> str:
    config = {"publisher": "zmq", "topic": "kv-events", "endpoint": f"tcp://*:{port}"}
    if isinstance(setting, dict):
        config.update(setting)
    return json.dumps(config, separators=(",", ":"))


def _worker_where(layout: RoleLayout, slot: Slot, pins: str | None) -> str:
    role = layout.role
    if layout.nodes_per_worker > 1:
        replicas = f"{slot.workers} workers; for each, " if slot.workers > 1 else ""
        return (f"{replicas}run on all {layout.nodes_per_worker} nodes of the worker, with NODE_RANK=0 on the head node "
                f"({role.upper()}_HEAD_IP) and 1..{layout.nodes_per_worker - 1} on the others")
    if layout.shares_nodes_with and slot.shared:
        return f"on the {layout.shares_nodes_with} node, GPUs {pins}"
    if pins and layout.nodes == 1:
        return f"on the {role} node, GPUs {pins}"
    if pins and slot.workers == layout.nodes:
        return f"on each of the {layout.nodes} {role} nodes, GPUs {pins}"
    if pins and slot.workers < layout.nodes:     # the last nodes hold fewer workers
        return f"on the first {slot.workers} of the {layout.nodes} {role} nodes, GPUs {pins}"
    if pins:
        return f"on {slot.workers} of the {layout.nodes} {role} nodes, GPUs {pins}"
    if slot.workers > 1:
        return f"one per node, on {slot.workers} {role} nodes"
    return f"on one node ({layout.gpus_per_worker} GPU{'s' if layout.gpus_per_worker != 1 else ''})"


# --- frontends -----------------------------------------------------------------------------------

def frontend_layout(frontend: FrontendSpec, nodes: int) -> tuple[int, bool]:
    """(frontends, nginx in front) as srtctl starts them (its frontend stage, NVIDIA/srt-slurm): one
    frontend and no nginx on a single node or with `enable_multiple_frontends: false`; else nginx on the
    head node (the first worker node) and a frontend on each other node, at most 1 + `num_additional_frontends`.
    `nodes` are the worker nodes: a dedicated etcd/NATS node (`infra.etcd_nats_dedicated_node`) runs neither
    (srtctl `Nodes.from_slurm`: infra is the first node, the head the second; checked v1.0.10 to v1.0.68)."""
    if not frontend.enable_multiple_frontends or nodes <= 1:
        return 1, False
    return min(1 + frontend.num_additional_frontends, nodes - 1), True


def dynamo_frontend_blocks(recipe: EffectiveRecipe, typed: Recipe, ctx: RenderContext, layouts: dict[str, RoleLayout]) -> list[Block]:
    fe = typed.frontend
    count, behind_nginx = frontend_layout(fe, sum(lay.nodes for lay in layouts.values()))
    port = tables().ports["frontend_behind_nginx" if behind_nginx else "frontend"]
    args = [("--http-port", str(port))] + kept_args(ctx.policy, ("frontend", "args"), fe.args, ctx.memo.args)
    env = {**kept_env(ctx.policy, ("frontend", "env"), fe.env, ctx.memo.env), **dynamo_env(typed)}
    # srtctl's placement: nginx on the head node, each frontend on another worker node (no extra machines)
    where = (f"on {count} worker nodes other than the head node, one each (FRONTEND_0_IP..FRONTEND_{count - 1}_IP)" if count > 1
             else "behind nginx, on a worker node other than the head node (FRONTEND_0_IP)" if behind_nginx
             else "on a CPU node (or any node)")
    blocks = [Block(kind="dynamo-frontend", title=tables().title("dynamo-frontend"), cmd=tables().command("dynamo-frontend"),
                    args=tuple(args), env=dict(sorted(env.items())), count=count, where=where, preamble=trtllm.dynamo_install(typed))]
    if behind_nginx:
        blocks.append(_nginx_block(fe, count, port))
    return blocks


def _nginx_block(fe: FrontendSpec, count: int, port: int) -> Block:
    conf = nginx_conf(count, port, tables().ports["frontend"], fe.model_extra or {})
    return Block(kind="nginx", title=tables().title("nginx"), cmd=tables().command("nginx"),
                 files={"nginx.conf": conf}, count=1, where="on the head node (the first worker node), which clients connect to")


def router_blocks(recipe: EffectiveRecipe, typed: Recipe, ctx: RenderContext, layouts: dict[str, RoleLayout]) -> list[Block]:
    ports = tables().ports
    args: list[tuple[str, ...]] = []
    if "agg" not in layouts:
        args += [("--prefill", url, str(ports["bootstrap"] + slot)) for url, slot in _worker_urls(layouts["prefill"])]
        args += [("--decode", url) for url, _ in _worker_urls(layouts["decode"])]
        args.append(("--pd-disaggregation",))
    # srtctl v1: routers scale like Dynamo frontends (several behind nginx on a multi-node job)
    count, behind_nginx = frontend_layout(typed.frontend, sum(lay.nodes for lay in layouts.values())) if srtctl_v1(typed) else (1, False)
    port = ports["frontend_behind_nginx" if behind_nginx else "frontend"]
    args += [("--host", "0.0.0.0"), ("--port", str(port))]
    args = replace_args(args, kept_args(ctx.policy, ("frontend", "args"), typed.frontend.args, ctx.memo.args))
    if "agg" in layouts:
        args.append(("--worker-urls", *(url for url, _ in _worker_urls(layouts["agg"]))))
    env = kept_env(ctx.policy, ("frontend", "env"), typed.frontend.env, ctx.memo.env)
    local = any("127.0.0.1" in " ".join(a) for a in args)
    where = ("on the node of the worker (it reaches the worker at 127.0.0.1)" if local
             else f"on {count} worker nodes other than the head node, one each" if behind_nginx
             else "on the head node (the first worker node)" if srtctl_v1(typed) else "on a CPU node (or any node)")
    blocks = [Block(kind="sglang-router", title=tables().title("sglang-router"), cmd=tables().command("sglang-router"),
                    args=tuple(args), env=dict(sorted(env.items())), count=count, where=where)]
    return blocks + ([_nginx_block(typed.frontend, count, port)] if behind_nginx else [])


def _worker_urls(layout: RoleLayout) -> list[tuple[str, int]]:
    slots = len(layout.slots) if layout.nodes_per_worker == 1 else 1
    if layout.workers == 1 and layout.nodes_per_worker == 1 and layout.role == "agg":
        return [(f"http://127.0.0.1:{sglang_worker_port(0)}", 0)]
    urls = []
    for i in range(layout.workers):
        slot = layout.slots[i % slots].index
        urls.append((f"http://${layout.role.upper()}_{i}_HEAD_IP:{sglang_worker_port(slot)}", slot))
    return urls


def _direct(recipe: EffectiveRecipe, typed: Recipe, ctx: RenderContext, layouts: dict[str, RoleLayout]) -> list[Block]:
    """No frontend process: the one worker serves clients itself, so frontend args and env have
    nowhere to go (never dropped silently)."""
    for section in ("args", "env"):
        if getattr(typed.frontend, section):
            raise recipe.error(("frontend", section), f"frontend type {typed.frontend.type} with a single worker starts no router, "
                                                      "so nothing would use these; set frontend.type: sglang-router to run one")
    return []


def _vllm_router(recipe: EffectiveRecipe, typed: Recipe, ctx: RenderContext, layouts: dict[str, RoleLayout]) -> list[Block]:
    return [router_block(typed, ctx.policy, layouts, tables().ports["frontend"])]


def _atomesh(recipe: EffectiveRecipe, typed: Recipe, ctx: RenderContext, layouts: dict[str, RoleLayout]) -> list[Block]:
    return [atom.router_block(typed, ctx.policy, layouts, tables().ports["frontend"])]


FRONTENDS: dict[str, Callable[[EffectiveRecipe, Recipe, RenderContext, dict[str, RoleLayout]], list[Block]]] = {
    "dynamo": dynamo_frontend_blocks,
    "sglang-router": router_blocks,
    "vllm-router": _vllm_router,
    "smg": _vllm_router,
    "atomesh": _atomesh,
    "direct": _direct,
}

# The worker builder of each engine (`engine` or `engine.type`).
ENGINE_WORKERS: dict[str, Callable[[RawYaml, Recipe, RenderContext, str, RoleLayout, Slot, RoleSpec, dict[str, tuple[str, str]]], list[Block]]] = {
    "sglang": _shared_worker,
    "vllm": _vllm_workers,
    "trtllm": _trtllm_worker,
    "atom": _atom_worker,
}


# --- infrastructure services ---------------------------------------------------------------------

def dynamo_infra_blocks(recipe: EffectiveRecipe, typed: Recipe, ctx: RenderContext) -> list[Block]:
    declared: dict[str, tuple[int, ServiceSpec]] = {s.type: (i, s) for i, s in enumerate(typed.services or [])}
    etcd = Block(kind="etcd", title=tables().title("etcd"), cmd=tables().command("etcd"),
                 args=tuple(tuple(a) for a in tables().raw["etcd_args"]), count_nodes=1, where="on one CPU node (ETCD_IP)")
    nats = declared.get("nats")
    payload = (nats[1].options or {}).get("max_payload_mb") if nats else None
    conf = {"nats.conf": f"max_payload: {int(payload) * 1024 * 1024}\njetstream {{ store_dir: \"/tmp/nats\" }}\n"} if payload else {}
    nats_block = Block(kind="nats", title=tables().title("nats"), cmd=tables().command("nats_with_conf" if conf else "nats"),
                       files=conf, count_nodes=1, where="on one CPU node (NATS_IP)")
    return [_with_service(block, declared.get(block.kind), ctx) for block in (etcd, nats_block)]


def _service_entry(ctx: RenderContext, i: int, svc: ServiceSpec) -> tuple[list[tuple[str, ...]], dict[str, str], tuple[str, ...]]:
    """What a `services` entry adds to its block: args (over the block's defaults), env, preamble."""
    own = args_from_words(svc.args) if isinstance(svc.args, list) else args_from_mapping(svc.args)
    preamble = tuple(svc.preamble.splitlines()) if isinstance(svc.preamble, str) else tuple(svc.preamble or ())
    return own, kept_env(ctx.policy, ("services", i, "env"), svc.env, ctx.memo.env), preamble


def _with_service(block: Block, declared: tuple[int, ServiceSpec] | None, ctx: RenderContext) -> Block:
    """An etcd or NATS block with what the recipe's service entry adds, as for the other services."""
    if declared is None:
        return block
    args, env, preamble = _service_entry(ctx, *declared)
    if not (args or env or preamble):
        return block
    return block.model_copy(update={"args": tuple(replace_args(list(block.args), args)),
                                    "env": dict(sorted({**block.env, **env}.items())),
                                    "preamble": preamble or block.preamble})


def _v1_mooncake_kv_store(typed: Recipe) -> dict[str, RawYaml] | None:
    """A v1 recipe's `backend.mooncake_kv_store` (normalised to `engine.mooncake_kv_store`), or None."""
    store = (typed.engine.model_extra or {}).get("mooncake_kv_store") if isinstance(typed.engine, EngineSpec) else None
    return store if isinstance(store, dict) else None


def _v1_mooncake_master(typed: Recipe, ctx: RenderContext) -> list[Block]:
    """The Mooncake master srtctl v1.0.68 starts on its infra node (the etcd/NATS node) for
    `mooncake_kv_store` (`do_sweep.start_mooncake_master`): its own flags, then `master_extra_args`
    (a flag given again takes the recipe's value, as the last of a repeated flag does)."""
    store = _v1_mooncake_kv_store(typed)
    if store is None:
        return []
    table = tables().raw
    own = args_from_words(store.get("master_extra_args") or [])
    return [Block(kind="mooncake-master", title=tables().title("mooncake-master"), cmd=tables().command("mooncake-master"),
                  args=tuple(replace_args([tuple(a) for a in table["mooncake_master_args_v1"]], own)), env={},
                  count_nodes=1, ports=tuple(str(tables().ports[p]) for p in ("mooncake_master", "mooncake_metadata", "mooncake_metrics")),
                  where="on one node (MOONCAKE_MASTER_IP; srtctl uses its etcd and NATS node)")]


def _with_mooncake_store(block: Block, typed: Recipe, ctx: RenderContext) -> Block:
    """A worker of a v1 recipe with `mooncake_kv_store`, as srtctl v1.0.68 starts it
    (`get_mooncake_worker_env`, applied after every other env): MOONCAKE_LOCAL_HOSTNAME (the store's
    `env` may replace it), the store's `env`, and the master's addresses; a vLLM worker also reads
    the store's `store_config` from the JSON file MOONCAKE_CONFIG_PATH names (`master_server_address`
    set to the master's), which srtctl writes to /logs and the command writes beside itself."""
    store = _v1_mooncake_kv_store(typed)
    if store is None:
        return block
    table = tables().raw["mooncake_kv_store_env"]
    own = kept_env(ctx.policy, ("engine", "mooncake_kv_store", "env"), store.get("env") or {}, ctx.memo.env)
    env = {**block.env, "MOONCAKE_LOCAL_HOSTNAME": table["MOONCAKE_LOCAL_HOSTNAME"], **own,
           **{k: v for k, v in table.items() if k != "MOONCAKE_LOCAL_HOSTNAME"}}
    files = dict(block.files)
    if typed.engine_type == "vllm":
        name = tables().raw["mooncake_store_config_file"]
        config = {**(store.get("store_config") or {}), "master_server_address": table["MOONCAKE_MASTER"]}
        files[name] = json.dumps(config, indent=2) + "\n"
        env["MOONCAKE_CONFIG_PATH"] = name
    return block.model_copy(update={"env": dict(sorted(env.items())), "files": files})


def _mooncake(recipe: EffectiveRecipe, typed: Recipe, ctx: RenderContext, layouts: dict[str, RoleLayout], kind: str) -> list[Block]:
    blocks = []
    endpoints = dynamo_env(typed) if kind == "dynamo" else {}
    endpoints.pop("DYN_REQUEST_PLANE", None)
    for i, svc in enumerate(typed.services or []):
        own, env, preamble = _service_entry(ctx, i, svc)
        if svc.type == "mooncake-master":
            defaults = [tuple(a) for a in tables().raw["mooncake_master_args"]]
            blocks.append(Block(kind="mooncake-master", title=tables().title("mooncake-master"), cmd=tables().command("mooncake-master"),
                                args=tuple(replace_args(defaults, own)), env=dict(sorted({**env, **endpoints}.items())),
                                count_nodes=1, ports=(str(tables().ports["mooncake_master"]),), where="on one node (MOONCAKE_MASTER_IP)"))
        elif svc.type == "mooncake-store":
            node_role = (svc.placement.node or "") if svc.placement else ""
            nodes = layouts[node_role].nodes if node_role in layouts else 1
            env = {**tables().raw["mooncake_store_env"], **env, **endpoints}
            port = next((a[1] for a in own if a[0] == "--port" and len(a) > 1), "")
            blocks.append(Block(kind="mooncake-store", title=f"{tables().title('mooncake-store')} {svc.name}", cmd=tables().command("mooncake-store"),
                                args=tuple(own), env=dict(sorted(env.items())), preamble=preamble, count_nodes=nodes,
                                ports=(port,) if port else None,
                                where=f"on each of the {nodes} {node_role} nodes" if node_role in layouts else "on one node"))
    return blocks
