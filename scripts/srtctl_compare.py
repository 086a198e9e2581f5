"""Compare cookbookgen's render of srt-slurm recipe variants with what srtctl itself launched for them
(the JSON files `srtctl_reference.py` records), role by role: argv, environment, options files.

    python scripts/srtctl_compare.py --checkout <srt-slurm checkout> GOLDEN_DIR_OR_JSONL[.gz] [--show N]

Equal means equal after these documented exclusions, and nothing else:
- placeholders: the model (srtctl names `hf:org/model` here; the cookbook the Hugging Face id), host
  addresses (`IP(node)` vs `$..._IP`, in flags and env values), node ranks, the options-file path and
  MOONCAKE_CONFIG_PATH's folder (srtctl's `/logs`; the files are compared);
- the port table: HTTP, bootstrap, NCCL, KV-event, NIXL, DP-RPC and system ports and their env variables;
- srtctl plumbing a reader never types: `--dump-config-to`, `HEAD_NODE_IP`, `DYN_SYSTEM_PORT`, the default
  `DYN_LOG`, `DYN_SKIP_SGLANG_LOG_FORMATTING`, `numactl`, `TRTLLM_EPLB_SHM_NAME`, srtctl's head-node setup script,
  `DYN_REQUEST_PLANE` on a worker that is not a Dynamo process (the engine never reads it);
- nsys and profiling wrappers (the `nsys` prefix, `PROFILE_*` and the profilers' env);
- harness-only settings: what the policy classes harness-only (the cookbook leaves them out on purpose), and
  the env srtctl derives from such sections (`DYNAMO_VERSION`/`DYNAMO_WHEEL_NAME` from `dynamo.wheel`,
  `DYN_LOG`, `DYN_LOGGING_*` and `OTEL_*` from `observability`).
Workers are compared as a multiset per role (one entry per launched process); frontends as a multiset of
commands; router worker URLs by their count and bootstrap ports; the Mooncake master by the value each of
its flags runs with (gflags takes a repeated flag's last).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from cookbookgen.errors import CookbookError
from cookbookgen.policy.rules import DROPPED, load_policy
from cookbookgen.recipes.workspace import Workspace
from cookbookgen.render.deploy import RenderContext, render
from cookbookgen.render.model import Block

MODEL = "org/model"
PLACEHOLDER_FLAGS = {"--model", "--model-path", "--served-model-name", "--master-addr", "--dist-init-addr",
                     "--data-parallel-address", "--node-rank", "--extra-engine-args", "--host"}
PORT_FLAGS = {"--port", "--http-port", "--nccl-port", "--disaggregation-bootstrap-port", "--data-parallel-rpc-port"}
PLUMBING_FLAGS = {"--dump-config-to"}
PLUMBING_ENV = {"HEAD_NODE_IP", "DYN_SYSTEM_PORT", "DYN_SKIP_SGLANG_LOG_FORMATTING", "TRTLLM_EPLB_SHM_NAME",
                "DYN_VLLM_KV_EVENT_PORT", "VLLM_NIXL_SIDE_CHANNEL_PORT", "VLLM_NIXL_SIDE_CHANNEL_HOST", "VLLM_PORT",
                "ETCD_ENDPOINTS", "NATS_SERVER"}
# Env srtctl derives from sections the policy holds back whole (profiling, observability, dynamo's wheel):
# the nsys/profiling wrappers and harness-only settings of the documented classes.
DERIVED_ENV_PREFIXES = ("PROFILE_", "PROFILING_MODE", "SGLANG_TORCH_PROFILER_DIR", "TLLM_PROFILE", "TLLM_LLMAPI_ENABLE_NVTX",
                        "DYNAMO_VERSION", "DYNAMO_WHEEL_NAME", "DYN_LOGGING_", "OTEL_", "DYN_REQUEST_TRACE")
DEFAULT_DYN_LOG = "info,dynamo_runtime::pipeline::network::ingress::push_handler=warn"
_MODES = ("prefill", "decode")


def _value(text: str) -> str:
    """A flag value in one spelling: JSON re-dumped compactly, numbers by value (0.90 is 0.9)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if isinstance(parsed, (dict, list)):
        return json.dumps(parsed, sort_keys=True, separators=(",", ":"))
    if isinstance(parsed, bool) or parsed is None:
        return text
    return repr(float(parsed)) if isinstance(parsed, (int, float)) else text


def _flags(argv: list[str]) -> tuple[str, tuple[tuple[str, ...], ...]]:
    """(command words, flags with their values) of an argv; `--a=b` is `--a b`."""
    words, flags = _words_and_flags(argv)
    return " ".join(words), tuple(sorted(tuple(f) for f in flags))


def _words_and_flags(argv: list[str]) -> tuple[list[str], list[list[str]]]:
    """The words before the first flag, and each flag with its values in order; `--a=b` is `--a b`."""
    words: list[str] = []
    flags: list[list[str]] = []
    for word in argv:
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            flags.append([name] + ([value] if eq else []))
        elif flags:
            flags[-1].append(word)
        else:
            words.append(word)
    return words, flags


def _normal_argv(argv: list[str], model_words: set[str]) -> tuple[str, tuple[tuple[str, ...], ...]]:
    if argv and argv[0] == "nsys":                # srtctl's profiler wrapper: up to the command it wraps
        starts = [i for i, w in enumerate(argv) if w in ("python3", "python", "numactl", "trtllm-llmapi-launch")]
        argv = argv[starts[0]:] if starts else argv
    while argv and argv[0] == "numactl":          # srtctl's NUMA binding prefix: plumbing
        argv = argv[3:]
    cmd, flags = _flags(argv)
    cmd = " ".join(w for w in cmd.split() if w not in model_words)
    out = []
    for name, *values in flags:
        if name in PLUMBING_FLAGS or name in PORT_FLAGS:
            continue
        if name in PLACEHOLDER_FLAGS:
            out.append((name,))
        elif name == "--kv-events-config":
            config = json.loads(values[0])
            config.pop("endpoint", None)
            out.append((name, json.dumps(config, sort_keys=True)))
        else:
            out.append((name, *map(_value, values)))
    return cmd, tuple(sorted(set(out)))     # a flag passed twice with the same value (srtctl's and the recipe's) is one


_ADDRESS = re.compile(r"IP\(node\d+\)|\$[A-Z][A-Z0-9_]*_IP\b")


def _address_free(text: str) -> str:
    """A value with each host address (srtctl's `IP(nodeNN)`, the cookbook's `$..._IP`) as `ADDR`."""
    return _ADDRESS.sub("ADDR", text)


def _normal_env(env: dict[str, str], dynamo: bool = True) -> tuple[tuple[str, str], ...]:
    env = {k: (Path(v).name if k == "MOONCAKE_CONFIG_PATH" else _address_free(str(v))) for k, v in env.items()}
    return tuple(sorted((k, str(v)) for k, v in env.items()
                        if k not in PLUMBING_ENV and not (k == "DYN_LOG" and v == DEFAULT_DYN_LOG)
                        and not k.startswith(DERIVED_ENV_PREFIXES) and not (k == "DYN_REQUEST_PLANE" and not dynamo)))


def _role_of(cmd_flags: tuple[str, tuple[tuple[str, ...], ...]]) -> str:
    modes = [f[1] for f in cmd_flags[1] if f[0] == "--disaggregation-mode" and len(f) > 1]
    return modes[0] if modes else "agg"


def srtctl_side(golden: dict[str, Any]) -> dict[str, Any]:
    workers: dict[str, Counter[Any]] = {}
    fronts: Counter[Any] = Counter()
    services: dict[str, dict[str, str]] = {}
    for proc in golden["processes"]:
        argv = proc["argv"]
        text = " ".join(argv)
        if "setup_head.py" in text:
            continue
        if "nginx" in text and argv[0] == "bash":
            fronts[("nginx",)] += 1
            continue
        if argv[0] == "mooncake_master":
            services[argv[0]] = _last_wins(argv)
            continue
        norm = _normal_argv(argv, {"org/model", "model"})
        if "dynamo.frontend" in norm[0] or "sglang_router" in norm[0] or "vllm-router" in norm[0]:
            env = {k: v for k, v in proc["env"].items() if not (k == "DYN_LOG" and golden.get("observability"))}
            fronts[_front_key(norm, _normal_env(env))] += 1
            continue
        role = _role_of(norm)
        env = {k: v for k, v in proc["env"].items() if not (k == "DYN_LOG" and golden.get("observability"))}
        workers.setdefault(role, Counter())[(norm, _normal_env(env, "dynamo." in norm[0]))] += 1
    files = {name: _file(name, text) for name, text in golden.get("files", {}).items()
             if name.startswith("trtllm_config_") or name == MOONCAKE_FILE}
    return {"workers": workers, "frontends": fronts, "files": files, "services": services}


MOONCAKE_FILE = "mooncake_store_config.json"


def _file(name: str, text: str) -> Any:
    """A launch file's data: an options file's YAML, or the Mooncake store JSON (its master's address as ADDR)."""
    return json.loads(_address_free(text)) if name == MOONCAKE_FILE else yaml.safe_load(text)


def _last_wins(argv: list[str]) -> dict[str, str]:
    """A gflags command's flags, each with the value it runs with (a repeated flag's last)."""
    return {f[0]: " ".join(f[1:]) for f in _words_and_flags(argv)[1]}


def _front_key(norm: tuple[str, tuple[tuple[str, ...], ...]], env: tuple[tuple[str, str], ...]) -> tuple[Any, ...]:
    """A frontend's command with worker URLs reduced to their count and bootstrap ports (placeholders)."""
    cmd, flags = norm
    cmd = cmd.replace("python ", "python3 ")
    kept = []
    urls = Counter()
    for f in flags:
        if f[0] in ("--prefill", "--decode", "--worker-urls"):
            urls[f[0]] += max(len(f) - 1, 1) if f[0] == "--worker-urls" else 1
        else:
            kept.append(f)
    return (cmd, tuple(kept), tuple(sorted(urls.items())), env)


def cookbook_side(blocks: list[Block], sglang_direct: bool = False) -> dict[str, Any]:
    workers: dict[str, Counter[Any]] = {}
    fronts: Counter[Any] = Counter()
    files: dict[str, Any] = {}
    services: dict[str, dict[str, str]] = {}
    for block in blocks:
        argv = block.cmd.split() + [w for arg in block.args for w in arg]
        if block.kind == "mooncake-master":
            services[argv[0]] = _last_wins(argv)
            continue
        norm = _normal_argv(argv, {MODEL})
        env = _normal_env(block.env, "dynamo." in norm[0])
        if block.kind == "worker":
            per_worker = 1 if "trtllm" in block.cmd or block.node_rank is not None else (block.nodes_per_worker or 1)
            role = block.role or "agg"
            workers.setdefault(role, Counter())[(norm, env)] += (block.workers or 1) * per_worker
            files.update({name: _file(name, text) for name, text in block.files.items()})
        elif block.kind == "nginx":
            fronts[("nginx",)] += block.count or 1
        elif block.kind in ("dynamo-frontend", "sglang-router", "vllm-router", "smg"):
            fronts[_front_key(norm, env)] += block.count or 1
    return {"workers": workers, "frontends": fronts, "files": files, "services": services}


def differences(golden: dict[str, Any], checkout: Path) -> list[str]:
    """What differs between srtctl's launch and cookbookgen's render of one variant ([] = agree)."""
    ref = golden["recipe"] + (f":{golden['selector']}" if golden.get("selector") else "")
    want_error = golden.get("error")
    try:
        point = Workspace(checkout).bare_recipe(str(checkout / ref))
        deployment = render(point.recipe, point.typed, RenderContext(MODEL, load_policy()))
    except CookbookError as exc:
        return [] if want_error else [f"cookbookgen refuses: {exc.problems[0].message}"]
    if want_error:
        return [f"srtctl refuses ({want_error}); cookbookgen renders"]
    observed = bool((point.recipe.data.get("observability") or {}).get("enabled"))
    mine = cookbook_side(list(deployment.blocks))
    theirs = srtctl_side({**_without_held_back(golden, deployment.settings), "observability": observed})
    out = []
    for role in sorted(set(mine["workers"]) | set(theirs["workers"])):
        a, b = mine["workers"].get(role, Counter()), theirs["workers"].get(role, Counter())
        if a != b:
            out.append(f"{role} workers: " + _describe(a - b, b - a))
    if mine["frontends"] != theirs["frontends"]:
        out.append("frontends: " + _describe(mine["frontends"] - theirs["frontends"], theirs["frontends"] - mine["frontends"]))
    if mine["services"] != theirs["services"]:
        out.append(f"services differ: {mine['services']} vs {theirs['services']}")
    theirs_files = {k: v for k, v in theirs["files"].items() if k.replace("trtllm_config_", "").replace(".yaml", "") in
                    set(theirs["workers"]) or k == MOONCAKE_FILE}
    if mine["files"] != theirs_files:
        out.append(f"options files differ: {sorted(mine['files'])} vs {sorted(theirs_files)}")
    return out


def _without_held_back(golden: dict[str, Any], settings: Any) -> dict[str, Any]:
    """srtctl's launch without the settings the policy holds back on purpose (harness-only,
    default-equivalent): the exclusion the cookbook documents for each of them."""
    held = [s.path.split(".") for s in settings if s.cls in DROPPED]
    env = {p[-1] for p in held if len(p) >= 3 and p[-2] == "env"}
    flags: dict[str, set[str]] = {}
    for p in held:
        if len(p) >= 4 and p[0] == "roles" and p[2] == "args":
            flags.setdefault(p[1], set()).add("--" + p[-1])
    front_flags = {"--" + p[-1] for p in held if len(p) == 3 and p[0] == "frontend" and p[1] == "args"}
    options = [(p[1], p[3:]) for p in held if len(p) >= 4 and p[0] == "roles" and p[2] == "options"]
    processes = []
    for proc in golden["processes"]:
        text = " ".join(proc["argv"])
        role = next((m for m in ("prefill", "decode") if f"--disaggregation-mode {m}" in text), "agg")
        front = any(w in text for w in ("dynamo.frontend", "sglang_router", "vllm-router"))
        flagset = front_flags if front else flags.get(role, set())
        argv, skip = [], False
        for word in proc["argv"]:
            if word.startswith("--"):
                skip = word.split("=")[0] in flagset
            if not skip:
                argv.append(word)
        processes.append({**proc, "argv": argv, "env": {k: v for k, v in proc["env"].items() if k not in env}})
    files = dict(golden.get("files", {}))
    for role, path in options:
        name = f"trtllm_config_{role}.yaml"
        if name in files:
            data = yaml.safe_load(files[name])
            node = data
            for key in path[:-1]:
                node = node.get(key, {}) if isinstance(node, dict) else {}
            if isinstance(node, dict):
                node.pop(path[-1], None)
            files[name] = yaml.safe_dump(data)
    return {**golden, "processes": processes, "files": files}


def _describe(extra: Counter[Any], missing: Counter[Any]) -> str:
    def flat(c: Counter[Any]) -> set[Any]:
        items: set[Any] = set()
        for key in c:
            items |= set(_items(key))
        return items
    only_mine, only_theirs = flat(extra) - flat(missing), flat(missing) - flat(extra)
    counts = f"{sum(extra.values())} cookbook vs {sum(missing.values())} srtctl entries"
    return f"{counts}; only cookbook: {sorted(map(str, only_mine))[:6]}; only srtctl: {sorted(map(str, only_theirs))[:6]}"


def _items(key: Any) -> list[Any]:
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], tuple):      # (argv, env) of a worker
        (cmd, flags), env = key
        return [("cmd", cmd), *flags, *(("env",) + e for e in env)]
    return [key]


def load_goldens(path: Path) -> list[dict[str, Any]]:
    """srtctl's recorded launches: a folder of `srtctl_reference.py` JSON files, or one JSON-lines file
    (gzipped when it ends in .gz) with one variant a line."""
    if path.is_dir():
        return [json.loads(p.read_text()) for p in sorted(path.glob("*.json"))]
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def variant_name(golden: dict[str, Any]) -> str:
    return golden["recipe"] + (f":{golden['selector']}" if golden.get("selector") else "")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", required=True, type=Path)
    parser.add_argument("golden", type=Path)
    parser.add_argument("--show", type=int, default=0, help="print the differences of this many disagreeing variants")
    args = parser.parse_args(argv)
    goldens = load_goldens(args.golden)
    disagree = []
    for golden in goldens:
        diff = differences(golden, args.checkout)
        if diff:
            disagree.append((variant_name(golden), diff))
    agree = len(goldens) - len(disagree)
    print(f"{agree} of {len(goldens)} variants agree ({100 * agree / max(len(goldens), 1):.1f} %)")
    reasons = Counter(re.sub(r"\d+", "N", d.split(";")[0])[:90] for _, diffs in disagree for d in diffs)
    for reason, n in reasons.most_common(25):
        print(f"  {n:4d}  {reason}")
    for name, diffs in disagree[: args.show]:
        print(name)
        for d in diffs:
            print("   ", d)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
