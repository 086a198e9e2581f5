"""Stage 4 of the diff (compare): what a published point claims besides its commands, checked against the master row and recipe. No I/O.

An AgentX module says, per cell and point: the GPUs the cell takes, a label naming its prefill/decode
worker counts (`4P1D`), the benchmark item (`item`: the index of the point's master search-space row), the KV tier and
router it was measured with, and the Dynamo it installs (`routers.dynamo.install`). Artifacts that do
not say (None) are not checked.
"""

from __future__ import annotations

import re
from typing import Any

from ..cells.describe import allocated_gpus, kv_tier_of, recipe_parallel_label, router_of
from .expect import PointExpect, RoleTopology
from .model import DIFFERENT, Finding, PublishedPoint

_SPLIT = re.compile(r"\b(\d+)P(\d+)D\b")
_ROLE_PART = re.compile(r"(?P<role>Agg|prefill|decode) (?:\d+x )?(?P<label>(?:D?EP|TP)(?P<gpus>\d+)\S*)(?: \((?P<nodes>\d+) nodes\))?")
_ROLE_NAMES = {"Agg": "agg", "prefill": "prefill", "decode": "decode"}
_AGG_COUNT = re.compile(r"\bAgg (?:(\d+)x )?")
_LABEL_PART = re.compile(r"(DEP|DPA|DP|TP|EP|PP)(\d+)")
_DYNAMO_PIN = re.compile(r"ai-dynamo(?:-runtime)?==([^\s\"']+)")
_DYNAMO_COMMIT = re.compile(r"ai-dynamo/dynamo(?:/commit/|/tree/|\.git@|@)([0-9a-f]{7,40})")


def claim_findings(expect: PointExpect, data: dict[str, Any], point: PublishedPoint, item: int) -> list[Finding]:
    """A finding per claim the published point makes: match, or mismatch naming the recipe's value."""
    roles = expect.roles
    claims: list[tuple[str, object, object, str]] = [
        ("item", point.item, item, "the index of the point's row in the master config's search space"),
        ("gpus", point.gpus, _allocated(expect, data, point.hardware), "GPUs the recipe's nodes hold (nodes x GPUs per node of the hardware)"),
        ("kv", point.kv, kv_tier_of(point.blocks), "the KV tier the published commands run"),
        ("router", point.router, router_of(point.blocks), "the router the published commands run"),
    ]
    split = _SPLIT.search(point.title or "")
    if split and "prefill" in roles and "decode" in roles:
        claims.append(("label", f"{split[1]}P{split[2]}D", f"{roles['prefill'].workers}P{roles['decode'].workers}D", "prefill and decode workers"))
    agg = _AGG_COUNT.search(point.title or "")
    if agg and "agg" in roles:
        claims.append(("label agg workers", agg[1] or "1", roles["agg"].workers, "aggregated workers"))
    claims += _role_labels(point.title or "", roles, data)
    if point.install is not None:
        claims.append(("install", _dynamo_version(point.install), _recipe_dynamo(data), "the recipe's dynamo section (install, source.wheel)"))
    return [Finding(expect.config, expect.point, "cell", "claim", name, "match" if str(got) == str(want) else "mismatch",
                    detail="as the recipe says" if str(got) == str(want) else DIFFERENT, recipe=str(want), cookbook=str(got), reason=why)
            for name, got, want, why in claims if got is not None]


def _allocated(expect: PointExpect, data: dict[str, Any], hardware: str | None) -> int | None:
    """The GPUs a point allocates: its worker nodes times the GPUs per node of its hardware (of the recipe's
    `resources.gpus_per_node` when the hardware is not known)."""
    nodes = sum(t.expected_nodes for t in expect.roles.values())
    per_node = int(_mapping(data.get("resources")).get("gpus_per_node") or 4)
    return allocated_gpus(hardware or _mapping(data.get("resources")).get("gpu_type"), nodes, nodes * per_node)


def _role_labels(title: str, roles: dict[str, RoleTopology], data: dict[str, Any]) -> list[tuple[str, object, object, str]]:
    """Each `<role> TP8 (2 nodes)` part of a label: its parallel sizes as the role's args (or TensorRT-LLM
    options) say them, the GPUs of one worker, and the nodes it spans when said."""
    out: list[tuple[str, object, object, str]] = []
    for part in title.split(" · "):
        found = _ROLE_PART.fullmatch(part.strip())
        role = _ROLE_NAMES.get(found["role"]) if found else None
        if found is None or role not in roles:
            continue
        topology = roles[role]
        spec = _mapping(_mapping(data.get("roles")).get(role))
        args = {**_mapping(spec.get("args")), **_mapping(spec.get("options"))}     # TensorRT-LLM: its LLM-API options
        engine = data.get("engine")
        engine = engine.get("type") if isinstance(engine, dict) else engine
        out.append((f"label {role}", found["label"], recipe_parallel_label(args, str(engine or "sglang")), f"parallel sizes of the {role} role's args"))
        out.append((f"label {role} GPUs", label_gpus(found["label"]), topology.gpus, f"GPUs of one {role} worker"))
        if found["nodes"]:
            out.append((f"label {role} nodes", found["nodes"], topology.nodes_per_worker, f"nodes one {role} worker spans"))
    return out


def label_gpus(label: str) -> int:
    """The GPUs one worker of a parallel label takes, times its pipeline stages (`PP<n>`): DEP<n>; else TP x DP (a vLLM data-parallel part, `DP<n>`;
    SGLang's attention DP, `DPA<n>`, runs inside the TP group), or EP when larger (vLLM's expert parallel
    spans its TP x DP ranks: `TP1·EP8` is 8 GPUs)."""
    sizes = {name: int(n) for name, n in _LABEL_PART.findall(label)}
    if "DEP" in sizes:
        return sizes["DEP"] * sizes.get("PP", 1)
    return max(sizes.get("TP", 1) * sizes.get("DP", 1), sizes.get("EP", 1)) * sizes.get("PP", 1)


def _dynamo_version(install: tuple[str, ...]) -> str:
    """The Dynamo an install step gets: its `ai-dynamo==` pins, or the commit it builds from."""
    pins = {m for line in install for m in _DYNAMO_PIN.findall(line)}
    commits = {f"commit {m}" for line in install for m in _DYNAMO_COMMIT.findall(line)}
    return " / ".join(sorted(pins or commits)) or "none"


def _recipe_dynamo(data: dict[str, Any]) -> str:
    dynamo = _mapping(data.get("dynamo"))
    source = _mapping(dynamo.get("source"))
    version = source.get("wheel") or dynamo.get("version") or (f"commit {dynamo['hash']}" if dynamo.get("hash") else None)
    return str(version or "none") if dynamo.get("install") else "none"


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
