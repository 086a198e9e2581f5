"""An InferenceX AMD multi-node disaggregated ATOM point (framework `atom-disagg`) as an effective recipe:
what `amd_utils/server_atom.sh` launches on each node for the row, composed from the row's topology, the
model's entry of `amd_utils/models_atom.yaml` (read as data) and `rules/amd_atom_disagg.yaml` (the values
of env_atom.sh, job.slurm and the script). No I/O: the caller passes the parsed models file and the texts
of server_atom.sh and env_atom.sh (for the lines settings are located at).

The chain (InferenceX 843c6254) is sglang-disagg's (`recipes.amd_disagg`) with ENGINE atom-disagg: one
container per node runs server.sh -> server_atom.sh. Node 0 runs prefill worker 0 and, once every server
answers, the atomesh router; the next prefill nodes the other prefill workers; the next yD nodes the
decode workers. Every server is `python3 -m atom.entrypoints.openai_server --model /models/<MODEL_NAME>
--host 0.0.0.0 --server-port <port> --trust-remote-code`, then `-tp <TP size>` with the entry's
DP-attention (or EP + DP-attention) flags, the MTP flags, its KV cache flags, `--block-size`,
`--gpu-memory-utilization`, `--max-num-seqs` (the decode's: the row's largest concurrency), the
model-length flags, `--no-enable_prefix_caching`, the online quantisation config and the Mooncake
`--kv-transfer-config` (the decode server's CUDA graph sizes after it). The recipe lists each role's
args in that order with frontend `as_written`, which `render.atom` starts as written (not srtctl's order).

- env_atom.sh's exports, the entry's `env` and its DP-mode env reach every process (the router's too);
  what env_atom.sh finds on the node or the image goes to `script.node` (recorded, not published).
- job.slurm's container variables other than those server_atom.sh composes flags from are the harness's
  plumbing, as for sglang-disagg.
- What server_atom.sh would do that is not rendered (a worker spanning nodes, a script not in the rules,
  a models_atom.yaml value or a row setting it cannot read) refuses that point, located.
"""

from __future__ import annotations

from typing import Any

from .amd_disagg import line_of, router_args, side_shape
from .bundle import EffectiveRecipe
from .load import Document, package_yaml
from .master import ConfigEntry, Row
from .merge import Origins, node_paths

RawYaml = Any
RULES = "rules/amd_atom_disagg.yaml"


def rules() -> dict[str, RawYaml]:
    table: dict[str, RawYaml] = package_yaml(RULES)
    return table


def atom_disagg_recipe(entry: ConfigEntry, row: Row, script: str, models: Document, texts: dict[str, str]) -> EffectiveRecipe:
    """The point's recipe (module docstring); the same for every concurrency of the row (one job runs
    them all). `texts`: server_atom.sh and env_atom.sh by their file names."""
    table = rules()
    if script not in table["scripts"]:
        raise entry.doc.error(row.path, f"{script} is not one of the atom-disagg scripts cookbookgen knows "
                                        "(rules/amd_atom_disagg.yaml scripts); its points are not rendered")
    top = _topology(entry, row)
    name = str(entry.model or "").rsplit("/", 1)[-1]
    data_models = models.data if isinstance(models.data, dict) else {}
    model = data_models.get(name)
    if not isinstance(model, dict):
        raise entry.doc.error((entry.key, "model"), f"{models.file} has no entry {name!r} (server_atom.sh would launch "
                                                    "without the model's flags)")
    values = _values(entry, row, model)
    env = _env(model, top, models, name)
    server, env_text = texts[table["server_script"]], texts[table["env_script"]]
    shown_server, shown_env = f"{table['folder']}/{table['server_script']}", f"{table['folder']}/{table['env_script']}"
    roles: dict[str, RawYaml] = {}
    for role in ("prefill", "decode"):
        words = _role_words(role, top, model, values, row)
        roles[role] = {"nodes": top[role]["workers"], "workers": top[role]["workers"], "gpus": top[role]["tp_size"],
                       "args": _ordered(words, models, name),
                       "env": dict(env)}
    frontend: dict[str, RawYaml] = {"type": "atomesh", "as_written": True, "args": router_args(table["router_args"]), "env": dict(env)}
    data: dict[str, RawYaml] = {"engine": "atom", "resources": {"gpus_per_node": table["gpus_per_node"]}, "frontend": frontend,
                                "roles": roles, "script": {"node": dict(table["env"]["node"])}}
    launch = {k: line_of(server, marker) for k, marker in table["launch_lines"].items()}
    origins: Origins = {}
    model_line = models.line_of((name,))
    env_lines = {n: line_of(env_text, f"export {n}=") for n in table["env"]["common"]}
    for role in ("prefill", "decode"):
        origins.update({p: (shown_server, launch[role]) for p in node_paths(roles[role], ("roles", role))})
        origins.update({("roles", role, "env", n): (shown_env, line) for n, line in env_lines.items()})
        origins.update({("roles", role, "env", n): (models.file, model_line) for n in env if n not in env_lines})
        origins.update({("roles", role, k): (entry.doc.file, entry.doc.line_of(row.path + (role,))) for k in ("nodes", "workers", "gpus")})
    origins.update({p: (shown_server, launch["router"]) for p in node_paths(frontend, ("frontend",))})
    origins.update({("frontend", "env", n): (shown_env, line) for n, line in env_lines.items()})
    origins.update({("frontend", "env", n): (models.file, model_line) for n in env if n not in env_lines})
    origins.update({("script", "node", n): (shown_env, line_of(env_text, f"export {n}")) for n in data["script"]["node"]})
    origins.update({("engine",): (shown_server, launch["prefill"]), ("resources", "gpus_per_node"): (shown_server, launch["prefill"])})
    return EffectiveRecipe(script, None, data, origins)


def _topology(entry: ConfigEntry, row: Row) -> dict[str, dict[str, RawYaml]]:
    """Each side's shape (`side_shape`) and DECODE_MTP_SIZE (the decode side's); a worker spanning nodes
    is refused (server_atom.sh would start one server per node of it, which is not rendered)."""
    table = rules()
    out: dict[str, dict[str, RawYaml]] = {}
    mtp = "0"
    for side in ("prefill", "decode"):
        settings, out[side] = side_shape(entry, row, side, table["row_settings"][side], table["gpus_per_node"], "atom-disagg",
                                         "server_atom.sh then starts a server per node of the worker, which is not rendered")
        mtp = settings.get("DECODE_MTP_SIZE", mtp)
    if not mtp.isdigit():
        raise entry.doc.error(row.path + ("decode", "additional-settings"), f"DECODE_MTP_SIZE must be a whole number (received {mtp!r})")
    out["decode"]["mtp"] = int(mtp)
    return out


def _text(model: dict[str, RawYaml], key: str, default: str = "") -> str:
    """server_atom.sh's `m.get(key, default)` printed by its inline Python (an f-string of the YAML value)."""
    value = model.get(key, default)
    return "" if value is None else str(value)


def _values(entry: ConfigEntry, row: Row, model: dict[str, RawYaml]) -> dict[str, str]:
    """The server tuning of lines 117-122: the entry's value, else job.slurm's (MAX_MODEL_LEN the workflow's)."""
    jobs = dict(rules()["job_defaults"])
    isl, osl = row.extra.get("isl"), row.extra.get("osl")
    if not (isinstance(isl, int) and isinstance(osl, int)):
        raise entry.doc.error(row.path, "a fixed-seq-len row with isl and osl expected (the workflow's MAX_MODEL_LEN is isl + osl + 256)")
    jobs["MAX_MODEL_LEN"] = str(isl + osl + 256)
    keys = {"BLOCK_SIZE": "block_size", "MEM_FRAC_STATIC": "mem_frac_static", "MAX_MODEL_LEN": "max_model_len",
            "MAX_NUM_SEQS": "max_num_seqs", "MAX_NUM_BATCHED_TOKENS": "max_num_batched_tokens", "SCHEDULER_DELAY_FACTOR": "scheduler_delay_factor"}
    return {**jobs, **{n: _text(model, k) for n, k in keys.items() if _text(model, k)}}


def _parallel(role: str, side: dict[str, RawYaml], model: dict[str, RawYaml]) -> list[str]:
    """PREFILL/DECODE_PARALLEL_ARGS (lines 161-190)."""
    words = ["-tp", str(side["tp_size"])]
    if side["dp"]:
        mode = "ep_dp" if side["ep"] else "tp_dp"
        words += _text(model, f"{role}_{mode}_flags", _text(model, f"{mode}_flags")).split()
    return words


def _role_words(role: str, top: dict[str, dict[str, RawYaml]], model: dict[str, RawYaml], values: dict[str, str], row: Row) -> list[str]:
    """The words after `--server-port <port>` of the role's command (lines 263-277, 558-573)."""
    table = rules()
    words = _parallel(role, top[role], model)
    mtp = top["decode"]["mtp"]
    spec = [*_text(model, "mtp_flags").split(), str(mtp)] if _text(model, "mtp_flags") and mtp > 0 else []
    seqs = str(max(row.concs)) if role == "decode" else values["MAX_NUM_SEQS"]
    lengths = [w for flag, n in (("--max-model-len", "MAX_MODEL_LEN"), ("--max-num-batched-tokens", "MAX_NUM_BATCHED_TOKENS"),
                                 ("--scheduler-delay-factor", "SCHEDULER_DELAY_FACTOR")) if values[n] for w in (flag, values[n])]
    prefill = top["prefill"]      # the prefill's DP switch picks the online quantisation config of both (lines 163-179)
    quant = _text(model, "online_quant_dpa_config", _text(model, "online_quant_config")) if prefill["dp"] else _text(model, "online_quant_config")
    kv = table["kv_transfer_config"].format(role=table["kv_roles"][role], port=values["HANDSHAKE_PORT"])
    out = ["--trust-remote-code", *words, *spec, *_text(model, "kv_cache_flags").split(), "--block-size", values["BLOCK_SIZE"],
           "--gpu-memory-utilization", values["MEM_FRAC_STATIC"], "--max-num-seqs", seqs, *lengths, "--no-enable_prefix_caching",
           *(["--online_quant_config", quant] if quant else []), "--kv-transfer-config", kv]
    return out + (["--cudagraph-capture-sizes", table["decode_cudagraph_sizes"]] if role == "decode" else [])


def _ordered(words: list[str], models: Document, name: str) -> dict[str, RawYaml]:
    """The words as role args in their order (`-tp` keeps its single dash, as written): `--x y` is `x: y`,
    `--x` true; a flag given twice is refused at the model's entry (which one ATOM keeps is its parser's)."""
    out: dict[str, RawYaml] = {}
    key = None
    for word in words:
        if word.startswith("-") and not word.lstrip("-")[:1].isdigit():
            key = word[2:] if word.startswith("--") else word
            if key in out:
                raise models.error((name,), f"the server gets {word} twice (server_atom.sh composes it from this entry and the row)")
            out[key] = True
        elif key is not None:
            value = out[key]
            out[key] = word if value is True else [*value, word] if isinstance(value, list) else [value, word]
    return out


def _env(model: dict[str, RawYaml], top: dict[str, dict[str, RawYaml]], models: Document, name: str) -> dict[str, str]:
    """env_atom.sh's exports, then the DP-mode env each side's DP branch exports (lines 164-190), then the
    entry's env (194-196): what every process of the job inherits."""
    env: dict[str, str] = dict(rules()["env"]["common"])
    pairs: list[str] = []
    for side in ("prefill", "decode"):
        if top[side]["dp"]:
            pairs += _text(model, "ep_dp_env" if top[side]["ep"] else "tp_dp_env").split()
    pairs += _text(model, "env").split()
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.isidentifier():
            raise models.error((name,), f"{pair!r} is not a KEY=VALUE pair (server_atom.sh exports each word)")
        env[key] = value
    return env
