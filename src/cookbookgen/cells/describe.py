"""Pure descriptions of a deployment: topology label, spec-decode detail, image parts, exclusions,
disclosures and notes. No I/O except the notes table (package data, read once).
"""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Sequence, cast

from ..recipes.load import package_yaml, parse_yaml
from ..render.layout import PARALLEL_KEYS
from ..render.model import Block, Deployment
from .model import Exclusion

_NIGHTLY = re.compile(r"-(\d{8})-([0-9a-f]{8})$")
SHOWN_EXCLUSIONS = ("harness-only", "default-equivalent", "placeholder", "cluster-provided", "unclassified")
_SHOWN = frozenset(SHOWN_EXCLUSIONS)


def flag_value(block: Block, *flags: str) -> str | None:
    """The first value of the first of the block's args that is one of `flags`."""
    for arg in block.args:
        if arg[0] in flags and len(arg) > 1:
            return arg[1]
    return None


# Each spelling as a flag: `--tp-size`, trtllm-serve's `--tp_size`, and ATOM's (and vLLM's) `-tp`.
_PARALLEL_FLAGS = {**{f"--{spelt}": size for size, keys in PARALLEL_KEYS.items() for key in keys for spelt in (key, key.replace("-", "_"))},
                   "-tp": "tp"}
_TRTLLM_SERVE_OPTIONS = ("--extra_llm_api_options", "--config")     # trtllm-serve's options file: its enable_attention_dp
_ATOM = "atom.entrypoints"      # ATOM's attention DP and expert parallel span its TP ranks


def _parallel_sizes(block: Block) -> tuple[dict[str, str], bool]:
    """The first value of each parallel size's flags (as `flag_value` finds it) and whether DP attention
    is on, in one pass over the args (a point's label reads them all). An engine that takes its sizes
    elsewhere says them there: a TensorRT-LLM worker in its LLM-API options file (`--extra-engine-args`),
    a vLLM worker's `--enable-expert-parallel` in its tensor x data parallel size."""
    sizes: dict[str, str] = {}
    dpa = False
    for arg in block.args:
        size = _PARALLEL_FLAGS.get(arg[0])
        if size is not None:
            if len(arg) > 1:
                sizes.setdefault(size, arg[1])
        elif arg[0] == "--enable-dp-attention":
            dpa = True
        elif arg[0] == "--enable-expert-parallel":
            sizes.setdefault("ep", "vllm")
        elif arg[0] == "--extra-engine-args" and len(arg) > 1 and arg[1] in block.files:
            return _trtllm_sizes(block.files[arg[1]], arg[1])
        elif arg[0] in _TRTLLM_SERVE_OPTIONS and len(arg) > 1 and arg[1] in block.files:
            dpa = _trtllm_sizes(block.files[arg[1]], arg[1])[1]
    if dpa and "dp" not in sizes and (_ATOM in block.cmd or "trtllm-serve" in block.cmd):
        sizes["dp"] = sizes.get("tp", "1")     # attention DP over every TP rank
    if sizes.get("ep") == "vllm" and _ATOM in block.cmd:
        sizes["ep"] = sizes.get("tp", "1")
    if sizes.get("ep") == "vllm":      # vLLM's expert parallel spans every TP x DP rank
        sizes["ep"] = str(int(sizes.get("tp") or 1) * int(sizes.get("dp") or 1))
    return sizes, dpa


def _trtllm_sizes(options: str, name: str) -> tuple[dict[str, str], bool]:
    """A TensorRT-LLM worker's sizes from its options: tensor, pipeline and MoE expert parallel size; with
    attention DP every TP rank is an attention DP rank (SGLang's DP attention with DP = TP)."""
    data = parse_yaml(options, name).data
    data = data if isinstance(data, dict) else {}
    sizes = {size: str(data[key]) for size, key in _TRTLLM_KEYS.items() if isinstance(data.get(key), int)}
    dpa = data.get("enable_attention_dp") is True
    if dpa:
        sizes["dp"] = sizes.get("tp", "1")
    return sizes, dpa


_TRTLLM_KEYS = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "ep": "moe_expert_parallel_size"}


def parallel_label(block: Block) -> str:
    """`TP4`, `TP2·EP2`, `DEP16` (DP attention over every TP rank, as wide expert parallel): a worker's
    parallel sizes as its command (or its options file) says them."""
    return _label_of(*_parallel_sizes(block))


def recipe_parallel_label(args: dict[str, object], engine: str = "sglang") -> str:
    """The label `parallel_label` gives a worker, from a recipe role's args instead of a command: SGLang,
    vLLM and ATOM flags, trtllm-serve's (`tp_size`), or TensorRT-LLM's LLM-API options (`tensor_parallel_size`,
    `enable_attention_dp`)."""
    flat = {str(k).lstrip("-").replace("_", "-"): v for k, v in args.items()}
    sizes = {size: str(flat[key]) for size, keys in (*PARALLEL_KEYS.items(), ("ep", ("moe-expert-parallel-size",)))
             for key in keys if isinstance(flat.get(key), (int, str)) and not isinstance(flat.get(key), bool)}
    trtllm_dpa = flat.get("enable-attention-dp") is True
    dpa = flat.get("enable-dp-attention") is True or trtllm_dpa
    if trtllm_dpa or (dpa and engine == "atom" and "dp" not in sizes):
        sizes["dp"] = sizes.get("tp", "1")
    if flat.get("enable-expert-parallel") is True and engine == "atom":
        sizes.setdefault("ep", sizes.get("tp", "1"))
    if flat.get("enable-expert-parallel") is True:
        sizes.setdefault("ep", str(int(sizes.get("tp") or 1) * int(sizes.get("dp") or 1)))
    return _label_of(sizes, dpa)


def _label_of(sizes: dict[str, str], dpa: bool) -> str:
    """The label of these sizes; pipeline parallel (`·PP2`) when a worker's TP ranks repeat over stages, and
    data parallel replicas (`TP1·DP8`, 8 GPUs) unless expert parallel already spans them (`TP1·EP8`)."""
    tp, dp, ep, pp = (int(sizes.get(size) or 1) for size in ("tp", "dp", "ep", "pp"))
    stages = f"·PP{pp}" if pp > 1 else ""
    if dpa and dp == tp and ep == tp:
        return f"DEP{tp}{stages}"
    if dpa:
        return f"TP{tp}{stages}·DPA{dp}" + (f"·EP{ep}" if ep > 1 else "")
    replicas = f"·DP{dp}" if dp > 1 and ep < tp * dp else ""
    return f"TP{tp}{stages}{replicas}" + (f"·EP{ep}" if ep > 1 else "")


def _workers(dep: Deployment, role: str) -> list[Block]:
    return [b for b in dep.blocks if b.kind == "worker" and b.role == role]


def topology_label(dep: Deployment) -> str:
    agg = [b for b in _workers(dep, "agg") if not b.node_rank and not b.dp_rank]   # a later node's or DP rank's process: the same workers
    if agg:
        first = agg[0]
        count = sum(b.workers or 1 for b in agg)
        nodes = f" ({first.nodes_per_worker} nodes)" if (first.nodes_per_worker or 1) > 1 else ""
        return f"Agg {count}x {parallel_label(first)}{nodes}" if count > 1 else f"Agg {parallel_label(first)}{nodes}"
    prefill, decode = ([b for b in _workers(dep, role) if not b.node_rank and not b.dp_rank] for role in ("prefill", "decode"))
    p = sum(b.workers or 1 for b in prefill)
    d = sum(b.workers or 1 for b in decode)
    return f"Disagg {p}P{d}D · prefill {parallel_label(prefill[0])} · decode {parallel_label(decode[0])}"


def spec_detail(dep: Deployment) -> str:
    worker = next(b for b in dep.blocks if b.kind == "worker")
    algo = flag_value(worker, "--speculative-algorithm")
    if not algo:
        return ""
    if algo.upper() == "DSPARK":
        return f"DSpark {flag_value(worker, '--speculative-dspark-block-size') or ''}".strip()
    steps = flag_value(worker, "--speculative-num-steps")
    topk = flag_value(worker, "--speculative-eagle-topk")
    draft = flag_value(worker, "--speculative-num-draft-tokens")
    return f"MTP {steps}-{topk}-{draft}" if steps and topk and draft else algo


def image_parts(image: str) -> tuple[str, str | None, str | None]:
    """(image, digest, 8-hex commit parsed from a nightly tag)."""
    ref, _, digest = image.partition("@")
    tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
    m = _NIGHTLY.search(tag)
    return image, (digest or None), (m.group(2) if m else None)


# The front block that names a deployment's router; without one, a worker serves clients itself.
_FRONT_ROUTERS = {"dynamo-frontend": "dynamo", "vllm-router": "vllm-router", "smg": "smg", "atomesh": "atomesh"}
_OTHER_ENGINES = ("trtllm", "vllm")     # a word of their worker commands; SGLang's commands have neither


def router_of(blocks: Sequence[Block]) -> str:
    """dynamo or sglang (SGLang workers behind Dynamo, or an SGLang router / one worker), dynamo-<engine>
    (other engines behind Dynamo), vllm-router, smg, or vllm (one `vllm serve` worker)."""
    front = next((_FRONT_ROUTERS[b.kind] for b in blocks if b.kind in _FRONT_ROUTERS), None)
    engine = next((e for e in _OTHER_ENGINES if any(e in b.cmd for b in blocks if b.kind == "worker")), "sglang")
    if front == "dynamo":
        return front if engine == "sglang" else f"dynamo-{engine}"
    return front or engine


def kv_tier_of(blocks: Sequence[Block]) -> str:
    if any(b.kind == "mooncake-store" for b in blocks) or any(
            a[0] == "--enable-unified-cache-external-linker" for b in blocks for a in b.args):
        return "mooncake"
    if any(a[0] == "--enable-hierarchical-cache" for b in blocks for a in b.args):
        return "hicache"
    return "none"


def allocated_gpus(hardware: str | None, nodes: int, fallback: int | None = None) -> int | None:
    """The GPUs a deployment on `nodes` nodes of `hardware` allocates (`rules/explorer.yaml: gpus_per_node`);
    `fallback` when the hardware is not in the table."""
    per_node = cast(dict[str, int], package_yaml("rules/explorer.yaml")["gpus_per_node"]).get(str(hardware).lower())
    return nodes * per_node if per_node else fallback


# The settings that make a benchmark accept draft tokens at a golden (simulated) acceptance length:
# SGLang's env and ATOM's flag (benchmark scripts) state the length itself.
_GOLDEN_AL = (".env.SGLANG_SIMULATE_ACC_LEN", ".args.spec-decode-acceptance-length")


def golden_al(dep: Deployment) -> str | None:
    for s in dep.settings:
        if s.path.endswith(_GOLDEN_AL):
            return str(s.value)
    return None


def disclosures(deps: list[Deployment]) -> tuple[str, ...]:
    out = []
    if any(golden_al(d) for d in deps):
        out.append("synthetic-acceptance")
    if any("chat_template_kwargs" in str(s.value) for d in deps for s in d.settings if s.cls == "harness-only"):
        out.append("chat-template")
    if any(s.cls == "prohibited" for d in deps for s in d.settings):
        out.append("prohibited-setting")
    return tuple(out)


def exclusions(points: list[tuple[str, Deployment]]) -> tuple[Exclusion, ...]:
    """Every setting not published as-is, merged over the points (which points each one applies to)."""
    merged: dict[tuple[str, str, str, str], list[str]] = {}
    for label, dep in points:
        for s in dep.settings:
            if s.cls in _SHOWN:
                merged.setdefault((s.path, s.cls, s.reason, _short(s.value)), []).append(label)
    return tuple(Exclusion(path=p, cls=c, reason=r, value=v, points=tuple(dict.fromkeys(ls)))
                 for (p, c, r, v), ls in sorted(merged.items(), key=lambda kv: (SHOWN_EXCLUSIONS.index(kv[0][1]), kv[0][0])))


def _short(value: object, limit: int = 120) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def notes(deps: list[Deployment]) -> tuple[str, ...]:
    present: set[str] = set()
    blocks = {id(b): b for dep in deps for b in dep.blocks}    # the points of a cell share most blocks
    for b in blocks.values():
        present.update(map(itemgetter(0), b.args))
        present.update(b.env)
        present.update(map("=".join, b.env.items()))
    flagged = {f"Prohibited setting {s.path} = {_short(s.value)}: {s.reason}. Published as the benchmarked run used it.": None
               for dep in deps for s in dep.settings if s.cls == "prohibited"}
    return tuple(flagged) + tuple(text for key, text in cast(dict[str, str], package_yaml("rules/notes.yaml")["notes"]).items()
                                  if key in present)
