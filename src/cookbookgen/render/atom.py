"""ATOM (ROCm/ATOM's OpenAI-compatible server). No I/O but reading the package table `rules/engines.yaml` once.

- As InferenceX's single-node benchmark scripts start it, serving clients itself:
  `python3 -m atom.entrypoints.openai_server --model <model id>` on the cookbook's public port
  (`--server-port`, `--host 0.0.0.0`), then the role's flags spelled as the script wrote them (`-tp`,
  `--kv_cache_dtype`).
- As srtctl 2.x launches a recipe's `engine: atom` behind `frontend.type: atomesh` (the `srtctl` table):
  each worker runs with ATOM_HOST_IP set to its node's IP, `--model`, `--host 0.0.0.0`, its own
  `--server-port`, `-tp` its GPU count, a `--kv-transfer-config` (a prefill or decode worker's Mooncake
  connector, then the role's `extra-kv-connectors`, several wrapped in ATOM's `multi` connector, as the
  InferenceX runners' patch 507 to srtctl makes it), then
  the role's args sorted by key in their native spelling (a `true` value is a bare switch, `false` no
  flag); the AToMesh router lists the workers (`--worker-urls`, or `--pd-disaggregation` with
  `--prefill`/`--decode` URLs and no bootstrap ports), then `--host`, `--port`, `--backend atom` and
  `frontend.args` as written (`_` as `-`, a list value one flag per item).
- As InferenceX's multi-node server_atom.sh launches them (`frontend.as_written: true`, the `as_written`
  table): each worker `--model`, `--host 0.0.0.0`, its `--server-port`, then the role's args in the
  recipe's order and spelling (its `--kv-transfer-config` among them); the router `--host 0.0.0.0 --port`,
  `--pd-disaggregation`, the `--prefill`/`--decode` URLs, then `frontend.args` in their order.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import CookbookError
from ..policy.rules import Policy
from ..recipes.bundle import EffectiveRecipe
from ..recipes.schema import Recipe, RoleSpec
from .layout import RoleLayout, Slot
from .model import Block
from .tables import order_worker_args
from .values import kept_args, kept_env
from .vllm import engine_tables

Args = list[tuple[str, ...]]


def worker_parts(policy: Policy, model_id: str, layout: RoleLayout, spec: RoleSpec,
                 port: int) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str]]:
    """The command, ordered args and env of the one ATOM worker a benchmark script starts."""
    table = engine_tables()["atom"]
    role = layout.role
    lead = [("--model", model_id), ("--host", "0.0.0.0"), ("--server-port", str(port))]
    args = [*lead, *kept_args(policy, ("roles", role, "args"), spec.args)]
    return table["command"], order_worker_args(args, table["lead_flags"]), kept_env(policy, ("roles", role, "env"), spec.env)


def _srtctl() -> dict[str, Any]:
    return engine_tables()["atom"]["srtctl"]  # type: ignore[no-any-return]


def as_written(typed: Recipe) -> bool:
    """Whether the recipe's workers and router are started with their args as the recipe lists them."""
    return (typed.frontend.model_extra or {}).get("as_written") is True


def as_written_worker_parts(policy: Policy, model_id: str, layout: RoleLayout, slot: Slot,
                            spec: RoleSpec) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str]]:
    """The command, args (in the recipe's order) and env of one ATOM worker (slot) as a script writes it."""
    role = layout.role
    args: Args = [("--model", model_id), ("--host", "0.0.0.0"), ("--server-port", str(srtctl_port(slot)))]
    args += kept_args(policy, ("roles", role, "args"), spec.args)
    return engine_tables()["atom"]["command"], tuple(args), kept_env(policy, ("roles", role, "env"), spec.env)


def srtctl_port(slot: Slot) -> int:
    return int(_srtctl()["ports"]["worker"]) + slot.index


def check_srtctl(recipe: EffectiveRecipe, typed: Recipe, layouts: dict[str, RoleLayout]) -> None:
    """Located errors for what srtctl refuses (a role arg it sets itself: `model`, `host`, `server-port`,
    `tp`, ...; a worker on more than one node: `AtomProtocol.build_worker_command`) and for what cookbookgen
    cannot show faithfully (a `setup_script`, which srtctl runs in each worker's container before ATOM)."""
    if as_written(typed):      # a script's launch: its args are as it writes them, none managed
        reserved: set[str] = set()
    else:
        reserved = set(_srtctl()["reserved"])
    if recipe.data.get("setup_script"):
        raise recipe.error(("setup_script",), "srtctl runs this script in each ATOM worker's container before the server starts "
                                              "(a process the workers need, such as an LMCache server); cookbookgen does not "
                                              "render setup scripts, so this variant is not published")
    problems = [recipe.problem(("roles", role, "args", key), f"srtctl sets --{key.lstrip('-')} of an ATOM worker itself and "
                                                             "refuses it in the role's args; remove it")
                for role, spec in typed.roles.items() for key in spec.args
                if key.lstrip("-").replace("_", "-") in reserved]
    problems += [recipe.problem(("roles", role, "args", EXTRA_CONNECTORS), "a list of KV connector mappings expected")
                 for role, spec in typed.roles.items() if EXTRA_CONNECTORS in spec.args and not _connector_list(spec.args[EXTRA_CONNECTORS])]
    problems += [recipe.problem(("roles", role, "gpus"), f"srtctl runs an ATOM worker on one node: {layout.gpus_per_worker} GPUs "
                                                         f"span {layout.nodes_per_worker} nodes")
                 for role, layout in layouts.items() if layout.nodes_per_worker > 1]
    if problems:
        raise CookbookError(problems)


def srtctl_worker_parts(policy: Policy, model_id: str, layout: RoleLayout, slot: Slot,
                        spec: RoleSpec) -> tuple[str, tuple[tuple[str, ...], ...], dict[str, str]]:
    """The command, args and env of one ATOM worker (slot) srtctl 2.x starts behind AToMesh."""
    table = _srtctl()
    role = layout.role
    args: Args = [("--model", model_id), ("--host", "0.0.0.0"), ("--server-port", str(srtctl_port(slot))),
                  ("-tp", str(layout.gpus_per_worker))]
    extra = spec.args.get(EXTRA_CONNECTORS)
    connectors = [_with_lmcache_port(c) for c in extra if isinstance(c, dict)] if isinstance(extra, list) else []
    if role != "agg":
        connectors.insert(0, {"kv_role": "kv_producer" if role == "prefill" else "kv_consumer", "kv_connector": table["connector"],
                              "proxy_ip": "$NODE_IP", "handshake_port": int(table["ports"]["handshake"]) + slot.index})
    if connectors:
        payload = connectors[0] if len(connectors) == 1 else {"kv_connector": "multi", "connectors": connectors}
        args.append(("--kv-transfer-config", json.dumps(payload, separators=(",", ":"))))
    # srtctl passes no flag for false (and none for null); the extra connectors are in --kv-transfer-config
    own = {k: v for k, v in spec.args.items() if v is not False and k != EXTRA_CONNECTORS}
    shown = sorted(kept_args(policy, ("roles", role, "args"), own), key=lambda a: a[0])
    env = {**kept_env(policy, ("roles", role, "env"), spec.env), **table["env"]}
    return engine_tables()["atom"]["command"], (*args, *shown), env


EXTRA_CONNECTORS = "extra-kv-connectors"


def _connector_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(c, dict) for c in value)


def _with_lmcache_port(connector: dict[str, Any]) -> dict[str, Any]:
    """An `lmcache_mp` connector dials srtctl's lmcache-server port unless its extra config names one."""
    if connector.get("kv_connector") != "lmcache_mp":
        return connector
    extra = {"lmcache.mp.port": int(_srtctl()["ports"]["lmcache_server"]), **(connector.get("kv_connector_extra_config") or {})}
    return {**connector, "kv_connector_extra_config": extra}


def router_block(typed: Recipe, policy: Policy, layouts: dict[str, RoleLayout], public_port: int) -> Block:
    """The AToMesh router in front of the ATOM workers, on the public port."""
    table = _srtctl()["router"]
    written = as_written(typed)
    args: Args = [("--host", "0.0.0.0"), ("--port", str(public_port))] if written else []
    if "agg" in layouts:
        args.append(("--worker-urls", *_worker_urls(layouts["agg"])))
    else:
        args.append((table["disagg_flag"],))
        args += [("--prefill", url) for url in _worker_urls(layouts["prefill"])]
        args += [("--decode", url) for url in _worker_urls(layouts["decode"])]
    if not written:
        args += [("--host", "0.0.0.0"), ("--port", str(public_port)), *(tuple(a) for a in table["managed_args"])]
    args += _frontend_args(policy, typed)
    env = kept_env(policy, ("frontend", "env"), typed.frontend.env)
    cmd = engine_tables()["atom"]["as_written"]["router_command"] if written else table["command"]
    return Block(kind="atomesh", title=table["title"], cmd=cmd, args=tuple(args), env=dict(sorted(env.items())),
                 count=1, where="on any node that reaches the workers (e.g. the first worker node)")


def _frontend_args(policy: Policy, typed: Recipe) -> Args:
    """`frontend.args` as StaticRouterFrontend.get_frontend_args_list passes them: in the recipe's order, each
    `_` of a key a `-`, `true` a bare switch, `false`/null no flag, a list one flag per item."""
    out: Args = []
    for key, value in typed.frontend.args.items():
        if value is False:
            continue
        items: list[Any] = list(value) if isinstance(value, list) else [value]
        for item in items:
            out += kept_args(policy, ("frontend", "args"), {key: item})
    return [(a[0].replace("_", "-"), *a[1:]) for a in out]


def _worker_urls(layout: RoleLayout) -> list[str]:
    """Worker i's URL (`$<ROLE>_<i>_HEAD_IP`), numbered slot by slot as the worker blocks show them."""
    ports = [srtctl_port(slot) for slot in layout.slots for _ in range(slot.workers)]
    return [f"http://${layout.role.upper()}_{i}_HEAD_IP:{port}" for i, port in enumerate(ports)]
