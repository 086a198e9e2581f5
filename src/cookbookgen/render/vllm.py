"""vLLM workers and the routers in front of them (vllm-router, smg). No I/O but reading the package
table `rules/engines.yaml` once.

- A worker runs `vllm serve <model>` (the model is part of the command: vLLM takes it positionally,
  not as a flag) or `python3 -m dynamo.vllm --model <model>` under Dynamo, on its own HTTP port; co-located workers (slots) step every port (HTTP, NIXL side channel, VLLM_PORT).
- Prefill and decode workers take the role's `kv-transfer-config` as written, else the
  `engine.connector` shorthand's JSON.
- JSON-valued flags are passed as the recipe's strings; quoting is `shell.py`'s job.
"""

from __future__ import annotations

import json
import shlex
from typing import Any, cast

from ..policy.rules import Policy
from ..recipes.load import package_yaml
from ..recipes.schema import EngineSpec, Recipe, RoleSpec
from .layout import RoleLayout, Slot
from .tables import order_worker_args
from .model import Block, BlockKind
from .values import kept_args, kept_env, replace_args, word

Args = list[tuple[str, ...]]


def engine_tables() -> dict[str, Any]:
    return cast(dict[str, Any], package_yaml("rules/engines.yaml"))


def worker_port(slot: int) -> int:
    return int(engine_tables()["vllm"]["ports"]["worker"]) + slot


def worker_parts(typed: Recipe, policy: Policy, model_id: str, kind: str, layout: RoleLayout, slot: Slot,
                 spec: RoleSpec, public_port: int) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str]]:
    """The command, ordered args and env of one vLLM worker (slot) of `layout`'s role."""
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
    if layout.nodes_per_worker > 1:
        lead += [("--master-addr", f"${role.upper()}_HEAD_IP"), ("--nnodes", str(layout.nodes_per_worker)), ("--node-rank", "$NODE_RANK")]
    connector = typed.engine.connector if isinstance(typed.engine, EngineSpec) else None
    if role != "agg" and connector and "kv-transfer-config" not in spec.args:
        preset = table["connectors"].get(connector)
        lead.append(("--kv-transfer-config", json.dumps(preset, separators=(",", ":")) if preset else connector))
    if device_ids(typed):
        gpus = slot.gpus if slot.gpus is not None else range(typed.resources.gpus_per_node)
        lead.append(("--device-ids", ",".join(map(str, gpus))))
    args = lead + kept_args(policy, ("roles", role, "args"), spec.args)
    env = kept_env(policy, ("roles", role, "env"), spec.env)
    ports = table["ports"]
    env["VLLM_PORT"] = str(ports["vllm_port"] + slot.index * ports["vllm_port_stride"])
    if role != "agg" and "NixlConnector" in " ".join(a[-1] for a in args if a[0] == "--kv-transfer-config"):
        env.update(table["nixl_env"])
        env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(ports["nixl_side_channel"] + slot.index)
    ordered = order_worker_args(args, table["lead_flags"])
    cmd = table["commands"]["dynamo"] if kind == "dynamo" else f"{table['commands']['serve']} {shlex.quote(model_id)}"
    return cmd, ordered, env


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
    return Block(kind=cast(BlockKind, kind), title=table["title"], cmd=table["command"], args=tuple(args), env=dict(sorted(env.items())),
                 count=1, where="on any node that reaches the workers (e.g. the first worker node)")


def _worker_urls(layout: RoleLayout) -> list[str]:
    """Worker i's URL (`$<ROLE>_<i>_HEAD_IP`), numbered slot by slot as the worker blocks show them."""
    ports = [worker_port(slot.index) for slot in layout.slots for _ in range(slot.workers)]
    return [f"http://${layout.role.upper()}_{i}_HEAD_IP:{port}" for i, port in enumerate(ports)]
