"""An InferenceX AMD multi-node disaggregated SGLang point (framework `sglang-disagg`) as an effective
recipe: what `amd_utils/server_sglang.sh` launches on each node for the row, composed from the row's
topology, the model's entry of `amd_utils/models.yaml` (read as data) and `rules/amd_disagg.yaml` (the
values of env.sh and of the scripts). No I/O: the caller passes the parsed models file and the texts of
server_sglang.sh and env.sh (for the lines settings are located at).

The chain (InferenceX 843c6254): the runner starts `benchmarks/multi_node/<name>.sh` with the row's
topology in its environment; that script calls `amd_utils/submit.sh PREFILL_NODES PREFILL_WORKERS
DECODE_NODES DECODE_WORKERS ISL OSL CONCS inf PREFILL_ENABLE_EP PREFILL_ENABLE_DP DECODE_ENABLE_EP
DECODE_ENABLE_DP PREFILL_TP DECODE_TP RATIO`, which sizes each worker (`*_TP_SIZE = NODES * TP / WORKERS`)
and submits job.slurm: one container per node, running server.sh -> server_sglang.sh. Node 0 runs
prefill worker 0 and the SGLang router; nodes 1..xP-1 the other prefill workers; the next yD nodes
the decode workers. Every server's command is `python3 -m sglang.launch_server --model-path
/models/<MODEL_NAME> --disaggregation-mode <role> --disaggregation-ib-device $IBDEVICES --host 0.0.0.0
--port 8000 --trust-remote-code` + `build_server_config` (parallel sizes, the model's base flags with
the row's KV transfer backend, EP / MTP / DP-attention flags, the role's mode flags), with env.sh's
exports and the role's own assignments in front (`SGLANG_MORI_*`, `MORI_IO_*`).

- The settings the script makes for every process (env.sh) are each role's `env` and the router's;
  values found on the node (NICs, interfaces, traffic class) go to `script.node`, the job's HiCache /
  Mooncake settings file to `script.job`: recorded, not published (the policy).
- The concurrency the decode and DP-attention prefill limits come from is BENCH_MAX_CONCURRENCY's
  largest: the row's for fixed-seq-len (one job runs every concurrency of a row), the point's for
  agentic-coding (one job per concurrency), as InferenceX's sweep generator gives them.
- An agentic row (its multi_node/agentic/ script, IS_AGENTIC) uses the model's `-AgentX` entry, keeps
  the radix cache, adds the HiCache flags of the settings file its script exports (KV offloading to
  DRAM), ENABLE_METRICS's flag, the agentic router policy, and the decode's simulated acceptance
  (harness-only, disclosed).
- job.slurm's container variables (node rank, IPs, benchmark client settings) are the harness's
  plumbing, as the workflow's variables of a single-node script are.
- What server_sglang.sh would do that is not rendered (a worker spanning nodes, a script whose exports
  are not in the rules, a Mooncake storage tier or a DRAM-sized --hicache-size, a formula or flag it
  cannot read) refuses that point at the line of the setting, never a command without it.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from .bundle import EffectiveRecipe
from .load import Document, KeyPath, package_yaml
from .master import ConfigEntry, Row
from .merge import Origins, node_paths

RawYaml = Any
RULES = "rules/amd_disagg.yaml"


def rules() -> dict[str, RawYaml]:
    table: dict[str, RawYaml] = package_yaml(RULES)
    return table


def disagg_recipe(entry: ConfigEntry, row: Row, conc: int, script: str, models: Document, texts: dict[str, str]) -> EffectiveRecipe:
    """The point's recipe (module docstring). `script`: the row's multi-node script as reports name it;
    `texts`: server_sglang.sh and env.sh by their file names (`rules/amd_disagg.yaml`)."""
    table = rules()
    scenario = table["scenarios"].get(row.scenario)
    exports = scenario["scripts"].get(script) if scenario else None
    if exports is None:
        raise entry.doc.error(row.path, f"{script} ({row.scenario}) is not one of the sglang-disagg scripts whose exports cookbookgen knows "
                                        "(rules/amd_disagg.yaml scenarios); its points are not rendered")
    top = _topology(entry, row)
    name = str(entry.model or "").rsplit("/", 1)[-1]
    key, model = _model_entry(models, name, scenario["key_suffix"], entry)
    run = _run(entry, row, conc, exports, name)
    exported, env_lines = _env(name, table, texts[table["env_script"]], exports.get("env", {}))
    values = _values(model, table["defaults"])
    args, env = _compose(top, values, exported, run, _kv_backend(entry, row), models, key, name)
    launch_line = {role: line_of(texts[table["server_script"]], marker) for role, marker in table["launch_lines"].items()}
    shown_server = f"{table['folder']}/{table['server_script']}"
    roles: dict[str, RawYaml] = {}
    for role in ("prefill", "decode"):
        role_env: dict[str, str] = {**env["common"], **env[role]}
        roles[role] = {"nodes": top[role]["workers"], "workers": top[role]["workers"], "args": args[role], "env": dict(sorted(role_env.items()))}
    policy = {**table["job_defaults"], **exports.get("env", {})}
    frontend: dict[str, RawYaml] = {"type": "sglang-router", "args": router_args([*table["router_args"], *(w.format(**policy) for w in scenario["router"])]),
                                    "env": dict(sorted({**env["common"], **table["router_env"]}.items()))}
    job = {n: str(exports.get("hicache", {}).get(n, "")) if run["hicache"] is not None else "" for n in table["env"]["job"]}
    data: dict[str, RawYaml] = {"engine": "sglang", "resources": {"gpus_per_node": table["gpus_per_node"]}, "frontend": frontend, "roles": roles,
                                "script": {"node": dict(table["env"]["node"]), "job": job}}
    origins: Origins = {}
    shown_env = f"{table['folder']}/{table['env_script']}"
    for role in ("prefill", "decode"):
        origins.update({p: (shown_server, launch_line[role]) for p in node_paths(roles[role], ("roles", role))})
        origins.update({("roles", role, "args", flag): (models.file, line) for flag, line in args[f"{role}_lines"].items()})
        origins.update({("roles", role, "env", n): (shown_env, env_lines[n]) for n in env["common"] if n in env_lines})
        origins.update({("roles", role, k): (entry.doc.file, entry.doc.line_of(row.path + (role,))) for k in ("nodes", "workers")})
    origins.update({p: (shown_server, launch_line["router"]) for p in node_paths(frontend, ("frontend",))})
    origins.update({("frontend", "env", n): (shown_env, env_lines[n]) for n in env["common"] if n in env_lines})
    env_text = texts[table["env_script"]]
    origins.update({("script", "node", n): (shown_env, line_of(env_text, f"export {n}")) for n in data["script"]["node"]})
    origins.update({p: (shown_env, line_of(env_text, "source /config/hicache_mc.env")) for p in node_paths(job, ("script", "job"))})
    origins.update({("engine",): (shown_server, launch_line["prefill"]), ("resources", "gpus_per_node"): (shown_server, launch_line["prefill"])})
    return EffectiveRecipe(script, None, data, origins)


def _run(entry: ConfigEntry, row: Row, conc: int, exports: dict[str, RawYaml], name: str) -> dict[str, RawYaml]:
    """What the job of the point runs with besides its topology: the concurrency that sizes it, whether it is
    agentic, ENABLE_METRICS, the HiCache settings (None: no KV offload tier) and the simulated acceptance."""
    table = rules()
    agentic = row.scenario == "agentic-coding"
    largest = max(row.concs) if table["scenarios"][row.scenario]["concurrency"] == "row" else conc
    offload = row.data.get("kv-offloading", "none") if agentic else "none"
    backend = row.data.get("kv-offload-backend")
    backend_name = backend.get("name") if isinstance(backend, dict) else backend if backend is not None else table["hicache"]["default_backend"]
    hicache = None
    if offload != "none":
        if backend_name != "hicache" or "hicache" not in exports:
            raise entry.doc.error(row.path + ("kv-offload-backend",), f"KV offload backend {backend_name!r} of this script is not rendered (HiCache only)")
        hicache = {**table["hicache"]["defaults"], **{k: v for k, v in exports["hicache"].items() if v != ""}}
        if hicache["HICACHE_STORAGE_BACKEND"] or (exports["hicache"].get("FORCE_HICACHE_RATIO") != "1" and "DeepSeek-V4" not in name):
            raise entry.doc.error(row.path + ("kv-offloading",), "a Mooncake storage tier or --hicache-size sized from TOTAL_CPU_DRAM_GB "
                                                                "(server_sglang.sh) is not rendered for sglang-disagg")
    return {"agentic": agentic, "conc": largest, "metrics": {**table["job_defaults"], **exports.get("env", {})}["ENABLE_METRICS"] == "1",
            "hicache": hicache}


def _topology(entry: ConfigEntry, row: Row) -> dict[str, dict[str, RawYaml]]:
    """Each side's shape (`side_shape`) and DECODE_MTP_SIZE, which server_sglang.sh reads on either side."""
    out: dict[str, dict[str, RawYaml]] = {}
    for side in ("prefill", "decode"):
        settings, shape = side_shape(entry, row, side, rules()["row_settings"][side], rules()["gpus_per_node"], "sglang-disagg",
                                     "job.slurm starts num-worker prefill + decode nodes only, which is not rendered")
        mtp = settings.get("DECODE_MTP_SIZE", "0")
        if not mtp.isdigit():
            raise entry.doc.error(row.path + (side, "additional-settings"), f"DECODE_MTP_SIZE must be a whole number (received {mtp!r})")
        out[side] = {**shape, "mtp": int(mtp)}
    return out


def side_shape(entry: ConfigEntry, row: Row, side: str, allowed: list[str], gpus_per_node: int, scripts: str,
               spanning: str) -> tuple[dict[str, str], dict[str, RawYaml]]:
    """One side (prefill or decode) of an AMD multi-node row as its scripts read it: the row's
    `additional-settings` (only names the `scripts` read there), and its workers, TP size per worker
    (submit.sh: <SIDE>_NODES * tp / num-worker), EP and DP-attention switches. A worker spanning nodes
    is refused; `spanning` says why it is not rendered."""
    prefix, spec, path = side.upper(), row.data.get(side), row.path + (side,)
    if not isinstance(spec, dict):
        raise entry.doc.error(path, "a disaggregated row needs a prefill and a decode side")
    settings = _settings(entry, spec.get("additional-settings") or [], path + ("additional-settings",), allowed, scripts)
    workers, tp, ep = (spec.get(k, d) for k, d in (("num-worker", 1), ("tp", 8), ("ep", 1)))
    nodes = settings.get(f"{prefix}_NODES")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (workers, tp, ep)):
        raise entry.doc.error(path, "num-worker, tp and ep must be positive integers")
    if nodes is None or not nodes.isdigit():
        raise entry.doc.error(path + ("additional-settings",), f"needs {prefix}_NODES=<nodes> (the multi-node script checks it)")
    tp_size = int(nodes) * tp // workers
    if not 0 < tp_size <= gpus_per_node:
        raise entry.doc.error(path + ("tp",), f"{prefix}_TP_SIZE {tp_size} ({prefix}_NODES * tp / num-worker, submit.sh) spans nodes: "
                                              f"{spanning}")
    return settings, {"workers": workers, "tp_size": tp_size, "ep": ep != 1, "dp": spec.get("dp-attn") is True}


def _kv_backend(entry: ConfigEntry, row: Row) -> str:
    """KV_P2P_TRANSFER: the row's `kv-p2p-transfer`, else the config's (generate_sweep_configs.py
    component_metadata), the workflow's input; empty when neither sets it."""
    where = row.path if "kv-p2p-transfer" in row.data else (entry.key,)
    value = row.data.get("kv-p2p-transfer", entry.data.get("kv-p2p-transfer"))
    if value is not None and not (isinstance(value, str) and re.fullmatch(r"[\w.-]+", value)):
        raise entry.doc.error(where + ("kv-p2p-transfer",), f"must be the name of a KV transfer backend (received {value!r})")
    return value or ""


def _settings(entry: ConfigEntry, items: RawYaml, path: KeyPath, allowed: list[str], scripts: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if not isinstance(items, list):
        raise entry.doc.error(path, "must be a list of KEY=VALUE strings")
    for i, item in enumerate(items):
        name, eq, value = str(item).partition("=")
        if not eq or name not in allowed:
            raise entry.doc.error(path + (i,), f"{item!r} is not a setting the {scripts} scripts read on this side "
                                               f"({', '.join(allowed)}); cookbookgen cannot tell what it changes")
        out[name] = value
    return out


def _model_entry(models: Document, name: str, suffix: str, entry: ConfigEntry) -> tuple[str, dict[str, RawYaml]]:
    data = models.data if isinstance(models.data, dict) else {}
    key = name + suffix if name + suffix in data else name
    if key not in data or not isinstance(data[key], dict):
        raise entry.doc.error((entry.key, "model"), f"{models.file} has no entry {name + suffix!r} nor {name!r} (server_sglang.sh stops)")
    return key, data[key]


def _env(name: str, table: dict[str, RawYaml], text: str, script_env: dict[str, str]) -> tuple[dict[str, str], dict[str, int]]:
    """env.sh's exports for MODEL_NAME `name` (None: unset) and the line of each in env.sh; a value the
    row's script exports (through job.slurm's docker -e) wins over env.sh's `${NAME:-default}`."""
    env: dict[str, str] = dict(table["env"]["common"])
    lines = {n: line_of(text, f"export {n}=") for n in env}
    env.update({n: v for n, v in script_env.items() if n in env and line_of(text, f'export {n}="${{{n}:-') == lines[n]})
    model = table["env"]["models"].get(name, {})
    start = line_of(text, f'if [[ "$MODEL_NAME" == "{name}" ]]') if model else 0
    for n, value in model.items():
        if value is None:
            env.pop(n, None)
            lines.pop(n, None)
        else:
            env[n] = value
            lines[n] = line_of(text, f"export {n}=", start)
    return env, lines


def _values(model: dict[str, RawYaml], defaults: dict[str, RawYaml]) -> dict[str, RawYaml]:
    """The model's entry with server_sglang.sh's defaults for what it leaves out (one level of sections)."""
    out: dict[str, RawYaml] = {}
    for key, default in defaults.items():
        given = model.get(key)
        if isinstance(default, dict):
            given = given if isinstance(given, dict) else {}
            out[key] = {k: (_values(_mapping(given.get(k)), d) if isinstance(d, dict) else given.get(k, d)) for k, d in default.items()}
        else:
            out[key] = given if key in model else default
    return out


def _mapping(value: RawYaml) -> dict[str, RawYaml]:
    return value if isinstance(value, dict) else {}


def _py(value: RawYaml) -> str:
    """A models.yaml value as server_sglang.sh's inline Python prints it (an f-string of yaml.safe_load's value)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return repr(float(value))
    return "" if value is None else str(value)


def _true(value: RawYaml) -> bool:
    return _py(value) in ("True", "true")


def _formula(value: RawYaml, names: dict[str, int]) -> int:
    """`eval_formula` of server_sglang.sh: a number, or names and integers joined by `*` (the only form
    models.yaml uses), the names read from the process's environment."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    product = 1
    for word in str(value).split("*"):
        word = word.strip()
        if word.isdigit():
            product *= int(word)
        elif word in names:
            product *= names[word]
        else:
            raise ValueError(f"{value!r}: cookbookgen reads only products of integers and of "
                             f"{', '.join(sorted(names))} (server_sglang.sh's eval_formula would evaluate it in Python)")
    return product


def _seq(spec: RawYaml, default: str) -> list[str]:
    """`parse_range` + `seq start end`."""
    text = _py(spec)
    start, _, end = (text if "-" in text else default).partition("-")
    return [str(i) for i in range(int(start), int(end) + 1)]


def _compose(top: dict[str, dict[str, RawYaml]], m: dict[str, RawYaml], env: dict[str, str], run: dict[str, RawYaml], kv_backend: str,
             models: Document, key: str, name: str) -> tuple[dict[str, RawYaml], dict[str, dict[str, str]]]:
    """server_sglang.sh lines 120-300 and `build_server_config`, then its ENABLE_METRICS and HiCache
    additions (458-600): each role's args, their models.yaml lines, and the env of every process
    (`common`) and of each role's own command."""
    p, d = top["prefill"], top["decode"]
    conc = int(run["conc"])
    pflags, p_context, two_batch = _prefill_mode(p, d, m["prefill"], env, conc, models, key)
    dflags, dispatch_decode, threshold = _decode_mode(d, m["decode"], env, conc, p_context)
    common = {**env, **({"SGLANG_MORI_DISPATCH_INTER_KERNEL_SWITCH_THRESHOLD": threshold} if threshold else {})}
    args = _role_args(top, m, {"prefill": pflags, "decode": dflags}, run, kv_backend, models, key, name)
    simulated = _simulated_acceptance(name, d["mtp"]) if run["agentic"] else {}
    moe = {"prefill": env.get("MORI_MOE_MAX_INPUT_TOKENS_PREFILL"), "decode": env.get("MORI_MOE_MAX_INPUT_TOKENS_DECODE")}
    own: dict[str, dict[str, str]] = {}
    for role, dispatch in (("prefill", env.get("MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK_PREFILL") or env["MORI_MAX_DISPATCH_TOKENS_PREFILL"]),
                           ("decode", env.get("MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK_DECODE") or str(dispatch_decode))):
        own[role] = {"SGLANG_MORI_COMBINE_DTYPE": env[f"MORI_COMBINE_DTYPE_{role.upper()}"],
                     **({"MORI_ENABLE_SDMA": "true"} if role == "prefill" and two_batch else {}),
                     **({"SGLANG_MORI_MOE_MAX_INPUT_TOKENS": str(moe[role])} if moe[role] else {}),
                     "SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK": dispatch,
                     "MORI_IO_SQ_BACKOFF_TIMEOUT_US": env["MORI_IO_SQ_BACKOFF_TIMEOUT_US"], "MORI_IO_QP_MAX_SEND_WR": env["MORI_IO_QP_MAX_SEND_WR"],
                     **(simulated if role == "decode" else {})}
    return args, {"common": common, **own}


def _prefill_mode(p: dict[str, RawYaml], d: dict[str, RawYaml], pre: dict[str, RawYaml], env: dict[str, str], conc: int,
                  models: Document, key: str) -> tuple[list[str], str, bool]:
    """PREFILL_MODE_FLAGS (server_sglang.sh 190-280), the prefill context length, and whether two-batch
    overlap (and so MORI_ENABLE_SDMA) is on."""
    section = "dp" if p["dp"] else "no_dp"
    mode = pre[section]
    names = {"MORI_MAX_DISPATCH_TOKENS_PREFILL": int(env["MORI_MAX_DISPATCH_TOKENS_PREFILL"]),
             "MORI_MAX_DISPATCH_TOKENS_DECODE": int(env["MORI_MAX_DISPATCH_TOKENS_DECODE"]),
             "PREFILL_TP_SIZE": p["tp_size"], "DECODE_TP_SIZE": d["tp_size"], "xP": p["workers"], "yD": d["workers"]}
    try:
        chunked = _formula(mode["chunked_prefill_size"], names)
    except ValueError as exc:
        raise models.error((key, "prefill", section, "chunked_prefill_size"), str(exc)) from None
    running = conc if p["dp"] and p["ep"] else mode["max_running_requests"]
    graph = _py(mode["cuda_graph_bs"]).split() if p["dp"] else _seq(mode["cuda_graph_bs_range"], "1-128")
    two_batch = bool(p["dp"]) and _true(mode["enable_two_batch_overlap"])
    context = _py(mode["context_length"])
    flags = ["--mem-fraction-static", _py(pre["mem_fraction_static"]), "--max-running-requests", _py(running), "--chunked-prefill-size", str(chunked)]
    flags += ["--disable-cuda-graph"] if _true(pre["disable_cuda_graph"]) else ["--cuda-graph-bs", *graph]
    flags += ["--disable-radix-cache"] if _true(pre["disable_radix_cache"]) else []
    flags += ["--context-length", context] if context else []
    flags += ["--max-total-tokens", _py(mode["max_total_tokens"])] if _py(mode["max_total_tokens"]) else []
    flags += ["--enable-two-batch-overlap"] if two_batch else []
    return flags, context, two_batch


def _decode_mode(d: dict[str, RawYaml], dec: dict[str, RawYaml], env: dict[str, str], conc: int, prefill_context: str) -> tuple[list[str], int, str | None]:
    """DECODE_MODE_FLAGS (server_sglang.sh 218-300: DP > EP-only > no DP), the decode's dispatch tokens
    per rank, and the inter-kernel threshold the DP+EP override exports (None: env.sh's stands)."""
    section = "dp" if d["dp"] else "ep_only" if d["ep"] else "no_dp"
    mode = dec[section]
    graph = _seq(mode["cuda_graph_bs_range"], dict(dp="1-160", ep_only="1-256", no_dp="1-128")[section])
    running = int(graph[-1]) * d["tp_size"] if d["dp"] else mode["max_running_requests"]
    context = _py(mode["context_length"]) or prefill_context       # decode admits what prefill admits
    dispatch, threshold = int(env["MORI_MAX_DISPATCH_TOKENS_DECODE"]), None
    if d["dp"] and d["ep"]:
        running, dispatch = conc, conc // d["tp_size"]
        threshold = str(dispatch * 2)
    flags = ["--mem-fraction-static", _py(dec["mem_fraction_static"]), "--max-running-requests", _py(running), "--cuda-graph-bs", *graph]
    flags += ["--prefill-round-robin-balance"] if _true(dec["prefill_round_robin_balance"]) else []
    flags += ["--context-length", context] if context else []
    flags += ["--disaggregation-decode-enable-radix-cache"] if _true(dec["disagg_decode_enable_radix_cache"]) else []
    return flags, dispatch * (d["mtp"] + 1), threshold


def _role_args(top: dict[str, dict[str, RawYaml]], m: dict[str, RawYaml], modes: dict[str, list[str]], run: dict[str, RawYaml],
               kv_backend: str, models: Document, key: str, name: str) -> dict[str, RawYaml]:
    """Each server's words (the launch's own, then build_server_config's parallel sizes, base, EP, MTP,
    DP and mode flags, then ENABLE_METRICS's and HiCache's), as args with their models.yaml lines."""
    mtp = top["decode"]["mtp"]
    base = _py(m["base_flags"]).split()
    if kv_backend:       # apply_kv_p2p_transfer_override: the row's backend replaces the model's
        base = _without(base, "--disaggregation-transfer-backend") + ["--disaggregation-transfer-backend", kv_backend]
    line = {k: models.line_of((key, k)) for k in ("base_flags", "ep_flags", "mtp_flags", "dp_flags", "prefill", "decode")}
    spec = (_py(m["mtp_flags"]).split() + ["--speculative-num-steps", str(mtp), "--speculative-num-draft-tokens", str(mtp + 1)]) if mtp > 0 else []
    args: dict[str, RawYaml] = {}
    for role, side in top.items():
        lead = ["--model-path", f"{rules()['model_dir']}/{name}", "--disaggregation-mode", role, *rules()["worker_args"],
                "--tp-size", str(side["tp_size"])]
        lead += ["--ep-size", str(side["tp_size"])] if side["ep"] else []
        lead += ["--dp-size", str(side["tp_size"])] if side["dp"] else []
        groups = [(lead, 0), (base, line["base_flags"]), (_py(m["ep_flags"]).split() if side["ep"] else [], line["ep_flags"]),
                  (spec, line["mtp_flags"]), (_py(m["dp_flags"]).split() if side["dp"] else [], line["dp_flags"]), (modes[role], line[role])]
        groups += [(["--enable-metrics"], 0)] if run["metrics"] and not any("--enable-metrics" in words for words, _ in groups) else []
        groups += [(_hicache_flags(run["hicache"], role), 0)] if run["hicache"] is not None else []
        if (run["agentic"] and role == "prefill") or run["hicache"] is not None:      # radix cache kept (agentic runs, HiCache)
            groups = [([w for w in words if w != "--disable-radix-cache"], n) for words, n in groups]
        args[role], args[f"{role}_lines"] = _flags(groups, models, key, role)
    return args


def _hicache_flags(h: dict[str, str], role: str) -> list[str]:
    """build_hicache_flags for the prefill server (sized by ratio: the only form rendered, `_run`); the
    decode server mirrors the page size only."""
    if role == "decode":
        return ["--page-size", h["HICACHE_PAGE_SIZE"]]
    return ["--page-size", h["HICACHE_PAGE_SIZE"], "--enable-hierarchical-cache", "--hicache-ratio", h["HICACHE_RATIO"],
            "--hicache-io-backend", h["HICACHE_IO_BACKEND"], "--hicache-mem-layout", h["HICACHE_MEM_LAYOUT"],
            "--hicache-write-policy", h["HICACHE_WRITE_POLICY"], "--hicache-storage-prefetch-policy", h["HICACHE_PREFETCH_POLICY"]]


def _simulated_acceptance(name: str, mtp: int) -> dict[str, str]:
    """DECODE_SIM_ACC_ENV of an agentic MTP run: the model's golden acceptance length, when the script has one."""
    for pattern, lengths in rules()["hicache"]["simulated_acceptance"].items():
        if mtp > 0 and fnmatch.fnmatchcase(name, pattern) and str(mtp) in lengths:
            return {"SGLANG_SIMULATE_ACC_LEN": str(lengths[str(mtp)]), "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                    "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}
    return {}


def _without(words: list[str], flag: str) -> list[str]:
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word == flag:
            skip = True
        else:
            out.append(word)
    return out


def _flags(groups: list[tuple[list[str], int]], models: Document, key: str, role: str) -> tuple[dict[str, RawYaml], dict[str, int]]:
    """The words after `python3 -m sglang.launch_server`, in groups each with the models.yaml line it comes
    from (0: the script's own), as args: `--x y` is `x: y`, `--x y z` a list, `--x` true; and the line of
    each flag. A flag given again with the same value is one setting (HiCache's `--page-size` after the
    entry's); with another value, it is refused at the model's entry (which one SGLang keeps is its parser's)."""
    out: dict[str, RawYaml] = {}
    lines: dict[str, int] = {}
    firsts: list[tuple[str, RawYaml]] = []
    name = None
    for words, line in groups:
        for word in words:
            if word.startswith("--"):
                name = word[2:]
                if name in out:
                    firsts.append((name, out[name]))
                out[name] = True
                if line and name not in lines:
                    lines[name] = line
            elif name is not None:
                value = out[name]
                out[name] = word if value is True else [*value, word] if isinstance(value, list) else [value, word]
    for name, first in firsts:
        if first != out[name]:
            raise models.error((key,), f"the {role} server gets --{name} twice, with different values (server_sglang.sh composes it "
                                       "from this entry and the row)")
    return out, lines


def router_args(words: list[str]) -> dict[str, RawYaml]:
    out: dict[str, RawYaml] = {}
    name = None
    for word in words:
        if word.startswith("--"):
            name = word[2:]
            out[name] = True
        elif name is not None:
            out[name] = word
    return out


def line_of(text: str, marker: str, start: int = 0) -> int:
    """The 1-based line of the first line at or after `start` whose text (indent left out) begins with `marker` (0: none)."""
    for n, line in enumerate(text.splitlines()[start:], start + 1):
        if line.lstrip().startswith(marker):
            return n
    return 0
