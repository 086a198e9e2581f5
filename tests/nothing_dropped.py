"""An independent check that rendering drops no recipe setting, written without the renderer's code.

The effective recipe is built here from plain PyYAML (`yaml.safe_load`, base + override deep merge,
zip-override slicing, sweep substitution, as srt-slurm documents them), not with cookbookgen's loader.
Every leaf of it must then be found in the rendered deployment as srtctl v1.0.68 would pass it (and a
schema-2 recipe's `roles.<role>.args.KEY` / `roles.<role>.env.NAME` as srtctl 2.x does: a flag / env entry of
that role's workers, an ATOM flag spelled as written, a key of an ATOM `extra-kv-connectors` entry inside that
worker's --kv-transfer-config JSON):
- `backend.<engine>_config.<mode>.KEY` of SGLang and vLLM: a `--KEY` flag (each `_` a `-`) of a worker of
  that mode with the value (a `false` switch: no flag, as srtctl omits it); of TRT-LLM: the same key path
  with the same value in that mode's options file;
- `backend.kv_events_config` (`true`, or per mode `true` or a mapping): `--kv-events-config` JSON on
  those workers (with the mapping's keys);
- `backend.<mode>_environment.NAME` and top-level `environment.NAME`: an env entry of that mode's workers;
- `frontend.args.KEY` / `frontend.env.NAME`: a flag / env entry of the frontend or router;
- `backend.mooncake_kv_store`: its `env.NAME` an env entry of every worker, its `store_config.KEY` that key
  in a JSON file of every worker, each of its `master_extra_args` (`--flag=value`) a flag of the one
  Mooncake master;
- a `null` env/args section: empty, nothing to pass;
- any other leaf: a policy class with a reason (the shipped policy, asked about the leaf's own path or
  its v2 name).
A command leaf the policy holds back (harness-only, default-equivalent), replaces (placeholder) or the
cluster provides is accounted for by that class. A leaf that maps to nothing is reported.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from pathlib import Path
from typing import Any

import yaml

from cookbookgen.policy.rules import load_policy
from cookbookgen.render.model import Deployment

MODES = {"prefill": "prefill", "decode": "decode", "aggregated": "agg"}
HELD_BACK = {"harness-only", "default-equivalent", "placeholder", "cluster-provided"}
# srtctl-owned flags a worker's config may repeat (the command has them from srtctl itself)
_V1_TO_V2 = [(r"^resources\.(prefill|decode|agg)_(nodes|workers)$", r"roles.\1.\2"),
             (r"^resources\.gpus_per_(prefill|decode|agg)$", r"roles.\1.gpus"),
             (r"^backend\.type$", "engine"), (r"^backend\.connector$", "engine.connector"),
             (r"^backend\.(\w+)$", r"engine.\1")]


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = _merge(base.get(key), value)
        return out
    return copy.deepcopy(over)


def _zip_slice(node: Any, i: int) -> Any:
    if isinstance(node, dict):
        return {k: _zip_slice(v, i) for k, v in node.items()}
    if isinstance(node, list):
        return node[i] if len(node) > 1 else node[0]
    return node


def _substitute(node: Any, values: dict[str, Any]) -> Any:
    """srt-slurm's sweep placeholders: `{name}` becomes str(value); a string that is only the
    placeholder of a list value becomes the list."""
    if isinstance(node, dict):
        return {k: _substitute(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, values) for v in node]
    if isinstance(node, str):
        for name, value in values.items():
            token = "{" + name + "}"
            if isinstance(value, list) and node == token:
                return value
            node = node.replace(token, ",".join(map(str, value)) if isinstance(value, list) else str(value))
    return node


def effective(path: Path, selector: str | None) -> dict[str, Any]:
    """The variant's effective recipe from plain PyYAML."""
    raw = yaml.safe_load(path.read_text())
    if selector is None:
        return {k: v for k, v in raw.items() if k != "sweep"}
    zipped = re.fullmatch(r"(zip_override_[\w-]+)\[(\d+)\]", selector)
    if zipped:
        return _merge(raw["base"], _zip_slice(raw[zipped.group(1)], int(zipped.group(2))))
    swept = re.fullmatch(r"sweep\[(\d+)\]", selector)
    if swept:
        names = list(raw["sweep"])
        combo = list(itertools.product(*(raw["sweep"][n] for n in names)))[int(swept.group(1))]
        return _substitute({k: v for k, v in raw.items() if k != "sweep"}, dict(zip(names, combo)))
    return _merge(raw["base"], raw[selector] or {})


def leaves(node: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict) and node:
        return [leaf for k, v in node.items() for leaf in leaves(v, prefix + (str(k),))]
    if isinstance(node, list) and node and all(isinstance(v, dict) for v in node):
        return [leaf for i, v in enumerate(node) for leaf in leaves(v, prefix + (str(i),))]
    return [(prefix, node)]


_HARNESS_VALUE = re.compile(r"@(?:fabric|dram)\.[\w.-]+")      # a site value the benchmark harness fills in


def _same(shown: str, value: Any) -> bool:
    if isinstance(value, str) and _HARNESS_VALUE.search(value):       # published as a shell placeholder ($NAME)
        pattern = r"\$[A-Z][A-Z0-9_]*".join(map(re.escape, _HARNESS_VALUE.split(value)))
        return re.fullmatch(pattern, shown) is not None or re.fullmatch(pattern, shown.replace('"', "")) is not None
    if isinstance(value, bool):
        return shown.lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            return float(shown) == float(value)
        except ValueError:
            return False
    if isinstance(value, list):
        return shown == " ".join(map(str, value))
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(shown) == json.loads(value)
        except ValueError:
            pass
    return shown == str(value)


def unmapped(recipe: dict[str, Any], deployment: Deployment) -> list[str]:
    """Every leaf of `recipe` that `deployment` neither shows nor classifies, with why."""
    policy = load_policy()
    engine = (recipe.get("backend") or {}).get("type", recipe.get("engine", "sglang"))
    engine = engine.get("type") if isinstance(engine, dict) else engine       # schema 2: `engine: {type: ...}`
    workers = [b for b in deployment.blocks if b.kind == "worker"]
    fronts = [b for b in deployment.blocks if b.kind in ("dynamo-frontend", "sglang-router", "vllm-router", "smg", "atomesh")]
    problems = []
    for path, value in leaves(recipe):
        dotted = ".".join(path)
        if value is None and path[-1] in ("env", "args", "environment") or path[-1].endswith("_environment") and value is None:
            continue        # a null section: srtctl reads it as empty, nothing to pass
        if path[:1] == ("backend",) and len(path) >= 4 and path[1] == f"{engine}_config" and path[2] in MODES:
            found = _in_worker(workers, MODES[path[2]], path[3:], value, engine)
        elif path[:1] == ("roles",) and len(path) >= 6 and path[2:4] == ("args", "extra-kv-connectors") and engine == "atom":
            found = _in_kv_connectors(workers, path[1], path[5:], value)   # ATOM: inside --kv-transfer-config
        elif path[:1] == ("roles",) and len(path) >= 4 and path[1] in MODES.values() and path[2] == "args":
            found = _in_worker(workers, path[1], path[3:], value, engine)      # schema 2: a role's flag (TRT-LLM: option)
        elif path[:1] == ("roles",) and len(path) == 4 and path[1] in MODES.values() and path[2] == "env":
            found = any(_same(b.env.get(path[3], "\0"), value) for b in workers if b.role == path[1])
        elif path[:1] == ("backend",) and len(path) == 3 and path[1].endswith("_environment") and path[1][:-12] in MODES:
            found = any(_same(b.env.get(path[2], "\0"), value) for b in workers if b.role == MODES[path[1][:-12]])
        elif path[:2] == ("backend", "kv_events_config"):
            modes = [MODES[path[2]]] if len(path) > 2 and path[2] in MODES else ["prefill", "decode"]
            found = value is False or all(_kv_events(b.args, path[3:], value) for b in workers if b.role in modes)
        elif path[:1] == ("environment",) and len(path) == 2:
            found = bool(workers) and all(_same(b.env.get(path[1], "\0"), value) for b in workers)
        elif path[:3] == ("backend", "mooncake_kv_store", "env") and len(path) == 4:
            found = bool(workers) and all(_same(b.env.get(path[3], "\0"), value) for b in workers)
        elif path[:3] == ("backend", "mooncake_kv_store", "store_config") and len(path) == 4:
            found = bool(workers) and all(_in_json_file(b.files, path[3], value) for b in workers)
        elif path == ("backend", "mooncake_kv_store", "master_extra_args"):
            masters = [b for b in deployment.blocks if b.kind == "mooncake-master"]
            found = len(masters) == 1 and all(_has_word_flag(masters[0].args, word) for word in value)
        elif len(path) == 3 and path[0] == "roles" and path[1] in MODES.values() and path[2] == "extra_args":
            found = any(_has_word_flag(b.args, str(w)) for b in workers if b.role == path[1] for w in value if str(w).startswith("-"))
        elif path[:2] == ("frontend", "args") and len(path) == 3:
            found = any(_has_flag(b.args, path[2], value) for b in fronts)
        elif path[:2] == ("frontend", "env") and len(path) == 3:
            found = any(_same(b.env.get(path[2], "\0"), value) for b in fronts)
        else:
            if _classified(policy, path, value, command=False):
                continue
            problems.append(f"{dotted}: no policy class")
            continue
        if not found and not _classified(policy, path, value, command=True):
            problems.append(f"{dotted} = {value!r}: in no command, and no policy class holds it back")
    return problems


def _in_kv_connectors(workers: list[Any], role: str, key: tuple[str, ...], value: Any) -> bool:
    """A key of one of ATOM's extra KV connectors: in a connector of the role's --kv-transfer-config JSON (the
    config itself, or an entry of a `multi` config's `connectors`), as the runners' patched srtctl folds them in."""
    for block in workers:
        for arg in block.args:
            if block.role != role or arg[0] != "--kv-transfer-config":
                continue
            config = json.loads(arg[1].replace("$NODE_IP", "0.0.0.0"))
            for connector in [config, *config.get("connectors", [])]:
                node = connector
                for part in key:
                    node = node.get(part, "\0") if isinstance(node, dict) else "\0"
                if node == value:
                    return True
    return False


def _in_json_file(files: dict[str, str], key: str, value: Any) -> bool:
    return any(json.loads(text).get(key) == value for name, text in files.items() if name.endswith(".json"))


def _has_word_flag(args: Any, word: str) -> bool:
    name, eq, value = word.partition("=")
    return any(a[0] == name and (not eq or (len(a) > 1 and a[1] == value)) for a in args)


def _in_worker(workers: list[Any], role: str, key: tuple[str, ...], value: Any, engine: str) -> bool:
    mine = [b for b in workers if b.role == role]
    if engine == "trtllm":
        for block in mine:
            for text in block.files.values():
                node = yaml.safe_load(text)
                for part in key:
                    node = node.get(part, "\0") if isinstance(node, dict) else "\0"
                if node == value or (isinstance(value, float) and isinstance(node, (int, float)) and float(node) == value):
                    return True
        return False
    if value is False or value is None:        # srtctl passes no flag for a false switch or a null
        return all(not _has_flag(b.args, key[0], True) for b in mine)
    return any(_has_flag(b.args, key[0], value) for b in mine)


def _kv_events(args: Any, key: tuple[str, ...], value: Any) -> bool:
    """srtctl's `--kv-events-config` JSON on the worker, holding `key: value` when the mode's setting is a mapping."""
    for arg in args:
        if arg[0] == "--kv-events-config" and len(arg) > 1:
            config = json.loads(arg[1])
            return not key or config.get(key[0]) == value
    return False


def _has_flag(args: Any, key: str, value: Any) -> bool:
    """`--KEY` with each `_` a `-` (srtctl's SGLang, vLLM, routers) or as written (ATOM's native spelling)."""
    names = {"--" + key.replace("_", "-"), "--" + key}
    for arg in args:
        if arg[0] not in names:
            continue
        if value is True and len(arg) == 1:
            return True
        if len(arg) > 1 and _same(" ".join(arg[1:]), value):
            return True
    return False


def _classified(policy: Any, path: tuple[str, ...], value: Any, command: bool) -> bool:
    names = [".".join(path)]
    dotted = ".".join(path)
    for pattern, repl in _V1_TO_V2:
        if re.match(pattern, dotted):
            names.append(re.sub(pattern, repl, dotted))
            break
    if path[:1] == ("backend",) and len(path) >= 4 and path[2] in MODES:
        kind = "options" if path[1] == "trtllm_config" else "args"
        names.append(".".join(("roles", MODES[path[2]], kind, path[3].replace("_", "-") if kind == "args" else path[3], *path[4:])))
    if path[:1] == ("backend",) and len(path) == 3 and path[1].endswith("_environment"):
        names.append(f"roles.{MODES.get(path[1][:-12], path[1][:-12])}.env.{path[2]}")
    if path[:1] == ("environment",):
        names.append(f"roles.agg.env.{path[1]}")
    for name in names:
        rule = policy.first_match(tuple(name.split(".")), value)
        if rule is not None and rule.reason and (not command or rule.cls in HELD_BACK):
            return True
    return False
