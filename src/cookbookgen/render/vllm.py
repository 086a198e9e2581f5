"""vLLM workers and the routers in front of them (vllm-router, smg). No I/O but reading the package
table `rules/engines.yaml` once.

- A worker runs `vllm serve <model>` (the model is part of the command: vLLM takes it positionally,
  not as a flag) or `python3 -m dynamo.vllm --model <model>` under Dynamo, on its own HTTP port; co-located workers (slots) step every port (HTTP, NIXL side channel, VLLM_PORT).
- Prefill and decode workers take the role's `kv-transfer-config` as written, else the
  `engine.connector` shorthand's JSON; a role with `kv_events` publishes KV events (`--kv-events-config`,
  DYN_VLLM_KV_EVENT_PORT), as srtctl passes them.
- JSON-valued flags are passed as the recipe's strings; quoting is `shell.py`'s job.
- A multi-node worker runs one process per node as srtctl launches it (`node_args`): each node gets its
  own block (`Block.node_rank`), the head node serving and the others `--headless`; a v1 data-parallel role (`data-parallel-size` set, `dp_launch_mode: per_node`, srtctl's
  default) gets per node its local DP size and start rank, the head's DP address and RPC port, and
  `--data-parallel-hybrid-lb`, or, when a TP x PP replica spans nodes, the multi-node flags with the
  DP address and RPC port.
- A v1 data-parallel role with `dp_launch_mode: per_gpu` (srtctl's deprecated layout, the default before
  v1.0.68) runs one process per GPU of each worker (`gpu_processes`), as srtctl's `endpoints_to_processes`
  and `build_worker_command` start them: each pinned to its one GPU, with its `--data-parallel-rank` (0 up,
  in GPU order), the worker's DP address and RPC port, and the role's `--data-parallel-size`; each process
  gets its own VLLM_PORT base (stepped by its GPU), the worker's NIXL side-channel base port is shared (vLLM
  adds the rank); a worker spanning nodes runs its ranks node by node, the DP address its head node's.
"""

from __future__ import annotations

import json
import shlex
from typing import Any, cast

from ..policy.rules import Policy
from ..recipes.load import package_yaml
from ..recipes.bundle import EffectiveRecipe
from ..recipes.schema import EngineSpec, Recipe, RoleSpec
from .layout import PARALLEL_KEYS, RoleLayout, Slot, int_arg
from .tables import order_worker_args
from .model import Block, BlockKind
from .values import kept_args, kept_env, replace_args, word

Args = list[tuple[str, ...]]


def engine_tables() -> dict[str, Any]:
    return cast(dict[str, Any], package_yaml("rules/engines.yaml"))


def worker_port(slot: int) -> int:
    return int(engine_tables()["vllm"]["ports"]["worker"]) + slot


def worker_parts(typed: Recipe, policy: Policy, model_id: str, kind: str, layout: RoleLayout, slot: Slot,
                 spec: RoleSpec, public_port: int, rank: int | None = None,
                 process: tuple[int, int, int] | None = None) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str]]:
    """The command, ordered args and env of one vLLM worker (slot) of `layout`'s role; `rank`: the
    process on that node of the worker (`node_ranks`), else one block stands for all its nodes;
    `process`: (DP rank, GPU, node rank) of one process of a per-GPU worker (`gpu_processes`)."""
    table = engine_tables()["vllm"]
    role = layout.role
    port = public_port if kind == "direct" else worker_port(slot.index)
    lead: Args = [("--model", model_id)] if kind == "dynamo" else []
    if not (kind == "dynamo" and (typed.model_extra or {}).get("schema") == 1):     # srtctl v1: dynamo.vllm serves no HTTP itself
        lead += [("--host", "0.0.0.0"), ("--port", str(port))]
    if kind == "dynamo" and role != "agg":
        lead.append(("--disaggregation-mode", role))
    if kind == "dynamo" and typed.dynamo.request_plane:
        lead.append(("--request-plane", word(typed.dynamo.request_plane)))
    if layout.nodes_per_worker > 1 and rank is None and process is None:
        lead += [("--master-addr", f"${role.upper()}_HEAD_IP"), ("--nnodes", str(layout.nodes_per_worker)), ("--node-rank", "$NODE_RANK")]
    connector = typed.engine.connector if isinstance(typed.engine, EngineSpec) else None
    if role != "agg" and connector and "kv-transfer-config" not in spec.args:
        preset = table["connectors"].get(connector)
        lead.append(("--kv-transfer-config", json.dumps(preset, separators=(",", ":")) if preset else connector))
    if device_ids(typed):
        gpus = (process[1],) if process else slot.gpus if slot.gpus is not None else range(typed.resources.gpus_per_node)
        lead.append(("--device-ids", ",".join(map(str, gpus))))
    if spec.kv_events and "kv-events-config" not in spec.args:
        lead.append(("--kv-events-config", kv_events_config(spec, _kv_events_step(layout, slot, process))))
    derived = (per_gpu_args(layout, slot, spec, process[0]) if process else node_args(layout, slot, spec, rank) if rank is not None else [])
    args = lead + replace_args(kept_args(policy, ("roles", role, "args"), spec.args), derived)
    env = kept_env(policy, ("roles", role, "env"), spec.env)
    ports = table["ports"]
    if spec.kv_events and "kv-events-config" not in spec.args:
        env["DYN_VLLM_KV_EVENT_PORT"] = str(ports["kv_events"] + _kv_events_step(layout, slot, process))
    env["VLLM_PORT"] = str(ports["vllm_port"] + (process[1] if process else slot.index) * ports["vllm_port_stride"])
    if role != "agg" and "NixlConnector" in " ".join(a[-1] for a in args if a[0] == "--kv-transfer-config"):
        env.update(table["nixl_env"])
        env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(ports["nixl_side_channel"] + slot.index)
    ordered = order_worker_args(args, table["lead_flags"])
    cmd = table["commands"]["dynamo"] if kind == "dynamo" else f"{table['commands']['serve']} {shlex.quote(model_id)}"
    return cmd, ordered, env


def _kv_events_step(layout: RoleLayout, slot: Slot, process: tuple[int, int, int] | None) -> int:
    """How far a process's KV-event port is from the table's: its GPU (per_gpu), else one block of DP-size ports per
    co-located worker (vLLM publishes each DP rank at the endpoint's port + its rank)."""
    return process[1] if process else slot.index * max(1, layout.dp_size)


def kv_events_config(spec: RoleSpec, step: int) -> str:
    """The role's `kv_events` as srtctl v1.0.68 passes it to a vLLM process (`get_kv_events_config_for_mode`):
    ZMQ publisher keys, the role's own mapping over them, and the process's endpoint (a port of its own:
    the port table's, stepped per co-located worker or per-GPU process)."""
    table = engine_tables()["vllm"]
    config = {**table["kv_events"], **(spec.kv_events if isinstance(spec.kv_events, dict) else {}),
              "endpoint": f"tcp://*:{table['ports']['kv_events'] + step}"}
    return json.dumps(config, separators=(",", ":"))


def node_ranks(typed: Recipe, layout: RoleLayout, spec: RoleSpec) -> tuple[int | None, ...]:
    """The processes one worker of `layout` runs, by node rank: a block per node for a multi-node worker
    (srtctl's standard multi-node path, v1.0.68 and 2.x alike: the other nodes run --headless) and for a v1
    data-parallel role; else `(None,)`, one block for them all (one node, or a schema-2 data-parallel
    worker on several nodes, whose per-GPU layout, srtctl 2.x's default, is not rendered: a `$NODE_RANK` block)."""
    v1, dp = srtctl_v1(typed), data_parallel(spec)
    if (layout.nodes_per_worker > 1 and (v1 or not dp)) or (v1 and dp):
        return tuple(range(layout.nodes_per_worker))
    return (None,)


def srtctl_v1(typed: Recipe) -> bool:
    return (typed.model_extra or {}).get("schema") == 1


def data_parallel(spec: RoleSpec) -> bool:
    """srtctl's DP mode: the role sets `data-parallel-size` (any value, even 1)."""
    return any(spec.args.get(key) is not None for key in ("data-parallel-size", "data_parallel_size"))


def node_args(layout: RoleLayout, slot: Slot, spec: RoleSpec, rank: int) -> Args:
    """What srtctl v1.0.68 (`VLLMProtocol.build_worker_command`, per-node DP) passes the process on node
    `rank` of a worker: the head node's address is `$<ROLE>_HEAD_IP` (this node's, `$NODE_IP`, on a
    one-node worker); the DP RPC port is the recipe's, else the port table's, stepped per co-located worker
    as srtctl's port allocator steps it (srtctl always takes its allocator's: a port-table difference)."""
    nodes = layout.nodes_per_worker
    head = f"${layout.role.upper()}_HEAD_IP" if nodes > 1 else "$NODE_IP"
    multi: Args = [("--master-addr", head), ("--nnodes", str(nodes)), ("--node-rank", str(rank))] + ([("--headless",)] if rank else [])
    if not data_parallel(spec):
        return multi
    given = spec.args.get("data-parallel-rpc-port", spec.args.get("data_parallel_rpc_port"))
    rpc = str(given if given is not None else engine_tables()["vllm"]["ports"]["dp_rpc"] + slot.index)
    dp_address: Args = [("--data-parallel-address", head), ("--data-parallel-rpc-port", rpc)]
    replica = int_arg(spec, PARALLEL_KEYS["tp"]) * int_arg(spec, PARALLEL_KEYS["pp"])
    local_gpus = layout.gpus_per_worker // nodes
    if replica > local_gpus:        # a TP x PP replica spans nodes
        return multi + dp_address
    local = local_gpus // replica
    return [("--data-parallel-size-local", str(local)), ("--data-parallel-start-rank", str(rank * local)), *dp_address,
            ("--data-parallel-hybrid-lb",)]


def per_gpu(typed: Recipe, spec: RoleSpec) -> bool:
    """Whether the role runs one process per GPU: a v1 data-parallel role with `backend.dp_launch_mode: per_gpu`
    under Dynamo (srtctl ignores the mode for a direct `vllm serve`, frontend type vllm)."""
    backend = (typed.model_extra or {}).get("backend")
    mode = backend.get("dp_launch_mode") if isinstance(backend, dict) else None
    return srtctl_v1(typed) and data_parallel(spec) and mode == "per_gpu" and typed.frontend.type != "vllm"


def gpu_processes(layout: RoleLayout, slot: Slot) -> list[tuple[int, int, int]]:
    """(DP rank, GPU, node rank) of each process of a per-GPU worker in `slot`. srtctl numbers the ranks
    node by node in GPU order; the blocks come GPU by GPU, each node's process of that GPU after the head
    node's, as the blocks of a multi-node worker come (`Block.node_rank`)."""
    nodes = layout.nodes_per_worker
    gpus = sorted(slot.gpus if slot.gpus is not None else range(layout.gpus_per_worker // nodes))
    return [(node * len(gpus) + i, gpu, node) for i, gpu in enumerate(gpus) for node in range(nodes)]


def per_gpu_args(layout: RoleLayout, slot: Slot, spec: RoleSpec, dp_rank: int) -> Args:
    """What srtctl (`build_worker_command`, per_gpu) passes the process of DP rank `dp_rank`: its rank, the
    worker's head node as the DP address, and the DP RPC port (the recipe's, else the port table's, stepped
    per co-located worker as for per_node)."""
    given = spec.args.get("data-parallel-rpc-port", spec.args.get("data_parallel_rpc_port"))
    rpc = str(given if given is not None else engine_tables()["vllm"]["ports"]["dp_rpc"] + slot.index)
    head = f"${layout.role.upper()}_HEAD_IP" if layout.nodes_per_worker > 1 else "$NODE_IP"
    return [("--data-parallel-rank", str(dp_rank)), ("--data-parallel-address", head), ("--data-parallel-rpc-port", rpc)]


def check(recipe: EffectiveRecipe, typed: Recipe) -> None:
    """Refuse, at the setting, what srtctl v1.0.68 refuses: `headless` in a per-node DP role (srtctl
    derives it from the topology and rejects it)."""
    if not srtctl_v1(typed) or typed.engine_type != "vllm":
        return
    for role, spec in typed.roles.items():
        if not data_parallel(spec) or per_gpu(typed, spec):
            continue
        if "headless" in spec.args:
            raise recipe.error(("roles", role, "args", "headless"), "srtctl v1.0.68 rejects headless in a data-parallel role "
                                                                    "(dp_launch_mode per_node): it derives the headless nodes; remove it")


def device_ids(typed: Recipe) -> bool:
    """Whether workers are pinned to their GPUs with `--device-ids` (srtctl v1.0.68's vLLM default,
    `set_cuda_visible_devices: false`) rather than with CUDA_VISIBLE_DEVICES."""
    return isinstance(typed.engine, EngineSpec) and (typed.engine.model_extra or {}).get("set_cuda_visible_devices") is False


def router_block(typed: Recipe, policy: Policy, layouts: dict[str, RoleLayout], public_port: int) -> Block:
    """vllm-router or smg in front of the workers (`frontend.type`), on the public port."""
    kind = typed.frontend.type
    table = engine_tables()["routers"][kind]
    args: Args = [("--host", "0.0.0.0"), ("--port", str(public_port))]
    if "agg" in layouts:
        args.append(("--worker-urls", *_worker_urls(layouts["agg"])))
    else:
        args.append((table["disagg_flag"],))
        args += [("--prefill", url) for url in _worker_urls(layouts["prefill"])]
        args += [("--decode", url) for url in _worker_urls(layouts["decode"])]
    args = replace_args(args, kept_args(policy, ("frontend", "args"), typed.frontend.args))
    env = kept_env(policy, ("frontend", "env"), typed.frontend.env)
    where = ("on the node of the worker (it reaches the worker at 127.0.0.1)" if _local(layouts)
             else "on any node that reaches the workers (e.g. the first worker node)")
    return Block(kind=cast(BlockKind, kind), title=table["title"], cmd=table["command"], args=tuple(args), env=dict(sorted(env.items())),
                 count=1, where=where)


def _local(layouts: dict[str, RoleLayout]) -> bool:
    """One aggregated worker on one node: the router runs beside it (as a benchmark script starts it)."""
    agg = layouts.get("agg")
    return agg is not None and agg.workers == 1 and agg.nodes_per_worker == 1


def _worker_urls(layout: RoleLayout) -> list[str]:
    """Worker i's URL (`$<ROLE>_<i>_HEAD_IP`), numbered slot by slot as the worker blocks show them;
    the one worker of a one-node aggregated deployment at 127.0.0.1 (`_local`)."""
    ports = [worker_port(slot.index) for slot in layout.slots for _ in range(slot.workers)]
    if _local({layout.role: layout}):
        return [f"http://127.0.0.1:{ports[0]}"]
    return [f"http://${layout.role.upper()}_{i}_HEAD_IP:{port}" for i, port in enumerate(ports)]
