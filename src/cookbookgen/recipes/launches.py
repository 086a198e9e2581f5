"""A single-node benchmark script's point as an effective recipe: the master row's variables
(`rules/script_variables.yaml`), the script run in the sandbox (`recipes.script`), and its captured
launches written as a `schema: 2` recipe, so the renderer and the policy treat it as any other.
I/O: through `recipes.script` only (the script's files arrive as bytes, `script.ScriptFiles`).

- the one SGLang worker launch (`python3 -m sglang.launch_server`, `sglang serve`) or vLLM worker
  launch (`vllm serve MODEL`, the model the config's) becomes `roles.agg` (its flags as args, the
  variables it exported as env); a `--flag v1 v2` is a list, a bare `--flag` is `true`;
- a trtllm-serve launch (`trtllm-serve MODEL`, alone or under `mpirun`, whose words become
  `roles.agg.launcher`) becomes `roles.agg` of engine `trtllm` served directly (`frontend.type: trtllm`):
  its flags as args, the LLM-API options file it names (`--extra_llm_api_options` / `--config`, which the
  script must have written) as `options` (its keys) and `options_file` (flag, name, text as written);
- an ATOM launch (`python3 -m atom.entrypoints.openai_server`, `--model` the config's) becomes
  `roles.agg` of engine `atom` served directly; its flags keep their spelling (`-tp`, `--kv_cache_dtype`);
- trtllm-serve and ATOM workers get `roles.agg.gpus` (TP x PP);
- the script's shell files are given to the sandbox with their paths under `/workspace` (the runners'
  container work folder, where the checkout is) pointed into the sandbox's home folder; the stubs give
  them back as `/workspace/...` in the launches, and the script's folder as the checkout names it;
- a router launch in front of the worker (SGLang's router before an SGLang worker, the vLLM router
  `vllm-router` before a vLLM worker, which DP-attention arms start once the worker is ready) makes
  `frontend.type: sglang-router` / `vllm-router` with its flags as `frontend.args`, and as
  `frontend.env` everything the script exported before launching it (the router process inherits the
  engine settings too, and the SGLang cookbook shows them on its block); without one, the worker's
  kind (the worker serves clients);
- `resources.gpus_per_node` is the worker's GPUs (TP x PP: the script runs on one node);
- setup steps (`python3 <script folder>/*.py`, `bash <script folder>/*.sh` patch scripts, package installs,
  `sed -i` of the image's files) are listed under `script.setup`;
- every setting is located at the script line of its launch.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Any, Iterable

import yaml

from ..errors import CookbookError, Problem
from .bundle import EffectiveRecipe
from .load import package_yaml
from .master import ConfigEntry, Row
from .merge import Origins, node_paths
from .script import Capture, Launch, ScriptFiles, run_script, sandbox

RawYaml = Any
RENDERED = ("sglang", "sglang-router", "vllm", "vllm-router", "trtllm", "atom")
WORKERS = ("sglang", "vllm", "trtllm", "atom")
ROUTED = {"sglang-router": "sglang", "vllm-router": "vllm"}     # a router the scripts start -> the worker kind it fronts
POSITIONAL_MODEL = ("vllm", "trtllm")      # `vllm serve MODEL`, `trtllm-serve MODEL`
MODEL_FLAG = {"atom": "model"}             # ATOM names the model with --model
OPTIONS_FLAGS = ("extra_llm_api_options", "config")    # trtllm-serve's flags naming its LLM-API options file
LAUNCHED_BY = {"sglang": "SGLang", "vllm": "vLLM", "sglang-router": "the SGLang router", "trtllm": "trtllm-serve", "atom": "ATOM",
               "dynamo": "Dynamo", "vllm-router": "the vLLM router (vllm-router)"}
_WORKSPACE = re.compile(r"(?<![\w./$-])/workspace(?=[/\"'\s};:)]|$)", re.M)
_MODEL_DIR = "$MODEL_DIR"       # the placeholder of the model's local copy (rules/render.yaml placeholders)
_SHORT_FLAG = re.compile(r"-[A-Za-z][\w-]*(=.*)?", re.S)      # `-tp 8` (ATOM): kept with its dash, as a flag name written as is
_COMPARED = re.compile(r"(?:[!=]=|\s=|-(?:eq|ne))\s*[\"']?$")     # `[[ $X != /workspace ]]`: a comparison, not a path written
MAX_AVAILABLE_CPU_DRAM_MIB = 2_861_022      # generate_sweep_configs.py MAX_AGENTIC_AVAILABLE_CPU_DRAM_MIB
RUNNERS_FILE = "configs/runners.yaml"


def script_variables(entry: ConfigEntry, row: Row, conc: int, runners: RawYaml = None) -> dict[str, str]:
    """The variables InferenceX's workflow gives the script for this point (see the table's header).
    `runners`: the checkout's parsed `configs/runners.yaml` (None when it has none)."""
    sources = {"entry": entry.data, "row": row.data, "group": row.extra, "point": {"conc": conc}, "scenario": {"name": row.scenario}}
    out = {}
    for name, spec in package_yaml("rules/script_variables.yaml")["variables"].items():
        if row.scenario == "agentic-coding" and "agentic" in spec:
            value = spec["agentic"]
        elif "value" in spec:
            value = spec["value"]
        elif "computed" in spec:
            value = _computed(spec["computed"], entry, row, runners)
        else:
            where, _, key = str(spec["from"]).partition(".")
            key, _, field = key.partition(".")
            value = sources[where].get(key, spec.get("default"))
            if field:
                value = value.get(field) if isinstance(value, dict) else None
        if value is not None:
            out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _computed(name: str, entry: ConfigEntry, row: Row, runners: RawYaml) -> int:
    """A value InferenceX's matrix generator computes (see the table's header)."""
    if name == "max-model-len":
        isl, osl = row.extra.get("isl"), row.extra.get("osl")
        return isl + osl + 256 if isinstance(isl, int) and isinstance(osl, int) else 0
    if name != "total-cpu-dram-gb":
        raise ValueError(name)
    if row.data.get("kv-offloading", "none") != "dram":
        return 0
    where = entry.doc.problem(row.path + ("kv-offloading",), "")
    runner = str(entry.data.get("runner", ""))
    hardware = runners.get("hardware", {}).get(runner) if isinstance(runners, dict) and isinstance(runners.get("hardware"), dict) else None
    mib, per_node = (hardware.get("available-cpu-dram-mib"), hardware.get("gpus-per-node")) if isinstance(hardware, dict) else (None, None)
    utilization = row.extra.get("dram-utilization")
    if not (isinstance(mib, int) and isinstance(per_node, int) and per_node > 0 and isinstance(utilization, (int, float))):
        raise CookbookError([Problem(where.file, where.line, where.key_path,
                                     f"kv-offloading: dram needs the runner's host memory: {RUNNERS_FILE} hardware.{runner} with "
                                     "available-cpu-dram-mib and gpus-per-node, and the scenario's dram-utilization")])
    gpus = math.prod(int(row.data.get(k, 1)) for k in ("tp", "pp", "pcp-size"))
    size = Decimal(min(mib, MAX_AVAILABLE_CPU_DRAM_MIB)) * 1024 * 1024 * Decimal(str(utilization)) * gpus / per_node
    return int(size / 1_000_000_000)


def dram_note(entry: ConfigEntry, runners: RawYaml) -> str | None:
    """What a reader needs to know when the entry's script sizes host memory from TOTAL_CPU_DRAM_GB
    (a row with kv-offloading: dram): the value is the runner's nominal one, and from where (POLICY.md)."""
    rows = [row for row in entry.rows if row.data.get("kv-offloading") == "dram"]
    if not rows or not str(rows[0].recipe.path).endswith(".sh") or str(rows[0].recipe.path).startswith("benchmarks/multi_node/"):
        return None         # a multi-node script's HiCache is sized by ratio (recipes/amd_disagg.py), not from TOTAL_CPU_DRAM_GB
    runner = str(entry.data.get("runner", ""))
    hardware = runners.get("hardware", {}).get(runner) if isinstance(runners, dict) and isinstance(runners.get("hardware"), dict) else None
    if not isinstance(hardware, dict):
        return None
    return (f"Host-memory sizes the script computes from TOTAL_CPU_DRAM_GB (--hicache-size, CPU KV offload bytes) use the runner's "
            f"nominal memory, as InferenceX's matrix generator computes it: {RUNNERS_FILE} hardware.{runner} available-cpu-dram-mib "
            f"{hardware.get('available-cpu-dram-mib')} (capped at {MAX_AVAILABLE_CPU_DRAM_MIB}), gpus-per-node {hardware.get('gpus-per-node')}, "
            f"the scenario's dram-utilization {rows[0].extra.get('dram-utilization')}; size them to your nodes' free memory.")


def script_recipe(script: ScriptFiles, shown: str, entry: ConfigEntry, row: Row, conc: int, runners: RawYaml = None,
                  runs: ScriptRuns | None = None) -> EffectiveRecipe:
    variables, capture = script_capture(script, shown, entry, row, conc, runners, runs)
    return recipe_from_capture(capture, shown, variables)


def script_capture(script: ScriptFiles, shown: str, entry: ConfigEntry, row: Row, conc: int,
                   runners: RawYaml = None, runs: ScriptRuns | None = None) -> tuple[dict[str, str], Capture]:
    """The variables the point's script runs with and what it launched (module docstring); `runs`:
    the run's earlier sandbox runs (`ScriptRuns`)."""
    variables = script_variables(entry, row, conc, runners)
    return variables, (runs or ScriptRuns()).capture(script, shown, variables)


class ScriptRuns:
    """The sandbox runs of one cookbookgen run: each distinct script and variables runs once, and its
    capture (or the located error it ended with) is kept for the run under a key of content: the files
    the sandbox is given, how reports name the script, the variables (never an object's identity).
    `prefetch` starts runs in the background, several at once, and `capture` waits for its own: a run
    spends most of its time waiting for bubblewrap to make and end its namespaces and for the script's
    processes, not on a core, so a caller that starts the runs of what it checks next has them done
    while it works. `stop` drops the runs not started yet (a run already started ends within its limits)."""

    WORKERS = 8     # sandboxes at once (each within the sandbox's own process and memory limits)

    def __init__(self) -> None:
        self._pointed: dict[str, ScriptFiles] = {}             # digest of a script's files -> them as the sandbox gets them
        self._done: dict[str, Capture | tuple[Problem, ...]] = {}
        self._started: dict[str, Future[Capture | tuple[Problem, ...] | None]] = {}
        self._pool: tuple[int, ThreadPoolExecutor] | None = None     # the process that made it, the threads

    def capture(self, script: ScriptFiles, shown: str, variables: dict[str, str]) -> Capture:
        key, pointed = self._job(script, shown, variables)
        done = self._done.get(key)
        if done is None:
            self._forked()
            started = self._started.pop(key, None)
            done = started.result() if started is not None and not started.cancelled() else None
            if done is None:        # not started, dropped, or not ended with a located error: run here (raising what it raises)
                done = self._run(pointed, shown, variables)
            self._done[key] = done
        if isinstance(done, tuple):
            raise CookbookError(done)
        return done

    def prefetch(self, jobs: Iterable[tuple[ScriptFiles, str, dict[str, str]]]) -> None:
        """Start the jobs (script, how reports name it, variables) not run or started yet, in the background,
        in order; a run that fails other than with a located error is left to `capture`, which runs it again."""
        todo: dict[str, tuple[ScriptFiles, str, dict[str, str]]] = {}
        for script, shown, variables in jobs:
            key, pointed = self._job(script, shown, variables)
            if key not in self._done and key not in self._started:
                todo[key] = (pointed, shown, variables)
        if not todo:
            return
        try:
            sandbox()       # probed once, before the threads
        except CookbookError:       # a host without what the sandbox needs: each point's `capture` says so
            return
        pool = self._threads()
        for key, job in todo.items():
            self._started[key] = pool.submit(self._attempt, *job)

    def stop(self) -> None:
        """Drop the runs not started yet."""
        self._forked()
        if self._pool is not None:
            self._pool[1].shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _threads(self) -> ThreadPoolExecutor:
        self._forked()
        if self._pool is None:
            self._pool = (os.getpid(), ThreadPoolExecutor(self.WORKERS, thread_name_prefix="cookbookgen-sandbox"))
        return self._pool[1]

    def _forked(self) -> None:
        """In a forked worker, forget the parent's threads and the runs they started: they are not this process's."""
        if self._pool is not None and self._pool[0] != os.getpid():
            self._started.clear()
            self._pool = None

    def _job(self, script: ScriptFiles, shown: str, variables: dict[str, str]) -> tuple[str, ScriptFiles]:
        digest = script.digest
        pointed = self._pointed.get(digest)
        if pointed is None:
            pointed = self._pointed[digest] = _pointed_files(script)
        key = hashlib.sha256(json.dumps([digest, shown, sorted(variables.items())]).encode()).hexdigest()
        return key, pointed

    @staticmethod
    def _run(pointed: ScriptFiles, shown: str, variables: dict[str, str]) -> Capture | tuple[Problem, ...]:
        try:
            capture = run_script(pointed, shown, variables)
        except CookbookError as exc:
            return exc.problems
        return _shown_paths(capture, "/workspace/" + str(PurePosixPath(pointed.main).parent), str(PurePosixPath(shown).parent))

    @classmethod
    def _attempt(cls, pointed: ScriptFiles, shown: str, variables: dict[str, str]) -> Capture | tuple[Problem, ...] | None:
        try:
            return cls._run(pointed, shown, variables)
        except Exception:       # noqa: BLE001 - not a located error: `capture` runs it again and raises it where it belongs
            return None


def _pointed_files(script: ScriptFiles) -> ScriptFiles:
    """The script's files with the `/workspace` paths of its shell files pointed at "$HOME/workspace"
    (module docstring)."""
    def pointed(name: str, data: bytes) -> bytes:
        if not name.endswith(".sh"):
            return data
        return _WORKSPACE.sub(_pointed, data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    return ScriptFiles(script.main, {name: pointed(name, data) for name, data in script.files.items()})


def _pointed(m: re.Match[str]) -> str:
    before = m.string[max(0, m.start() - 8): m.start()]
    return m.group(0) if _COMPARED.search(before) else "$HOME/workspace"


def _shown_paths(capture: Capture, copy: str, shown: str) -> Capture:
    """The launches with the script's folder in the sandbox (`copy`, as the stubs show it) named as the
    checkout names it."""
    def fix(word: str) -> str:
        return word.replace(copy + "/", shown + "/").replace(copy, shown)

    launches = tuple(replace(x, argv=tuple(map(fix, x.argv)), env={k: fix(v) for k, v in x.env.items()}) for x in capture.launches)
    # a step after the launch in the script is the benchmark's (its client's packages), not the server's setup; a launch in
    # the background may not have been recorded yet when the script reached it
    first = min((x.line for x in launches), default=0)
    return replace(capture, launches=launches, setup=tuple((line, argv) for line, argv in capture.setup if not first or line < first))


def recipe_from_capture(capture: Capture, shown: str, variables: dict[str, str]) -> EffectiveRecipe:
    for launch in capture.launches:
        if launch.kind not in RENDERED:
            raise CookbookError.at(shown, launch.line, "script", f"launches {LAUNCHED_BY.get(launch.kind, launch.kind)}, which cookbookgen "
                                                                 "does not render from a benchmark script yet (it renders SGLang, vLLM, their routers, "
                                                                 "trtllm-serve and ATOM)")
    workers = [x for x in capture.launches if x.kind in WORKERS]
    routers = [x for x in capture.launches if x.kind in ROUTED]
    if len(workers) != 1 or len(routers) > 1 or (routers and workers[0].kind != ROUTED[routers[0].kind]):
        first = (workers[1:] or routers[1:] or routers or capture.launches)[0]
        raise CookbookError.at(shown, first.line, "script", f"starts {len(workers)} engine workers and {len(routers)} routers; "
                                                            "one worker, with or without one router of its engine (SGLang's "
                                                            "before SGLang, vllm-router before vLLM), expected")
    worker = workers[0]
    if worker.wrapper and worker.kind != "trtllm":
        raise CookbookError.at(shown, worker.line, "script", f"starts {LAUNCHED_BY[worker.kind]} under {worker.wrapper[0]}, which "
                                                             "cookbookgen renders for trtllm-serve only")
    if worker.kind in POSITIONAL_MODEL:
        worker = _without_model(worker, shown, variables)
    if worker.kind in ("trtllm", "atom"):
        worker = _model_folder_placeholder(worker, shown, variables)
    gpus = max(1, math.prod(int(v) for v in (variables.get("TP", ""), variables.get("PP_SIZE", "")) if v.isdigit()))
    frontend: dict[str, RawYaml] = {"type": worker.kind}
    origins: Origins = {}
    if routers:
        router = routers[0]
        env = dict(sorted(router.env.items()))
        frontend = {"type": router.kind, "args": _args(router, shown), **({"env": env} if env else {})}
        origins.update({p: (shown, router.line) for p in node_paths(frontend, ("frontend",))})
    role: dict[str, RawYaml] = {"args": _args(worker, shown), **({"env": dict(sorted(worker.env.items()))} if worker.env else {})}
    if worker.kind in MODEL_FLAG:
        _model_flag_is_the_configs(role["args"], MODEL_FLAG[worker.kind], worker, shown, variables)
    if worker.kind in ("trtllm", "atom"):
        role["gpus"] = gpus
    if worker.kind == "trtllm":
        role.update(_options_file(role["args"], worker, shown))
        if worker.wrapper:
            role["launcher"] = list(worker.wrapper)
    data: dict[str, RawYaml] = {"engine": worker.kind, "resources": {"gpus_per_node": gpus}, "frontend": frontend, "roles": {"agg": role}}
    if capture.setup:
        data["script"] = {"setup": [shlex.join(argv) for _, argv in capture.setup]}
        origins.update({("script", "setup"): (shown, capture.setup[0][0])})
    for key in ("engine", "resources", "roles"):
        origins.update({p: (shown, worker.line) for p in node_paths(data[key], (key,))})
    return EffectiveRecipe(shown, None, data, origins)


def _model_flag_is_the_configs(args: dict[str, RawYaml], name: str, launch: Launch, shown: str, variables: dict[str, str]) -> None:
    """The `--model` of an ATOM launch left out of its args: it must be the config's model (or the local
    copy the script downloaded), which the renderer writes there."""
    model = args.pop(name, None)
    if model not in (variables.get("MODEL"), variables.get("MODEL_PATH")) or not isinstance(model, str):
        raise CookbookError.at(shown, launch.line, "script", f"serves {model!r} (--{name}), not the config's model {variables.get('MODEL')!r}")


def _model_folder_placeholder(launch: Launch, shown: str, variables: dict[str, str]) -> Launch:
    """A file inside the model's local copy (`$MODEL_PATH/chat_template.jinja`, the runner's staged
    weights; the sandbox's MODEL_PATH is the Hugging Face id) named with the placeholder $MODEL_DIR, the
    reader's local copy of the model (`rules/render.yaml`), never as a relative path that names nothing.
    Inside an options file, which is published as written, it is refused at the launch's line."""
    model = variables.get("MODEL", "")
    if not model:
        return launch
    written = next((line.strip() for _, text in launch.files for line in text.splitlines() if f"{model}/" in line), None)
    if written is not None:
        raise CookbookError.at(shown, launch.line, "script", f"writes {written!r} into its options file, a file inside the model's "
                                                             "local copy (MODEL_PATH, the runner's staged weights), which a command "
                                                             f"serving the Hugging Face id {model!r} cannot name as written")
    argv = tuple(_MODEL_DIR + word[len(model):] if word.startswith(f"{model}/") else word for word in launch.argv)
    return replace(launch, argv=argv)


def _options_file(args: dict[str, RawYaml], launch: Launch, shown: str) -> dict[str, RawYaml]:
    """A trtllm-serve launch's LLM-API options file, moved out of its args: `options` (the parsed keys,
    each a setting) and `options_file` (the flag, the file's name and its text exactly as the script
    wrote it, which the cookbook publishes)."""
    named = [flag for flag in OPTIONS_FLAGS if flag in args]
    if not named:
        return {}
    if len(named) > 1:
        raise CookbookError.at(shown, launch.line, "script", f"passes both --{named[0]} and --{named[1]} to trtllm-serve; keep one")
    flag, name = named[0], args.pop(named[0])
    text = dict(launch.files).get(name) if isinstance(name, str) else None
    if text is None:
        raise CookbookError.at(shown, launch.line, "script", f"names the LLM-API options file {name!r} (--{flag}), which the script "
                                                             "does not write before the launch; cookbookgen publishes only a file the script writes")
    try:
        options = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CookbookError.at(shown, launch.line, "script", f"writes the LLM-API options file {name!r}, which is not YAML: "
                                                             f"{str(exc).splitlines()[0]}") from None
    if not isinstance(options, dict):
        raise CookbookError.at(shown, launch.line, "script", f"writes the LLM-API options file {name!r}, which is not a YAML mapping")
    return {"options": options, "options_file": {"flag": f"--{flag}", "name": name, "text": text}}


def _without_model(launch: Launch, shown: str, variables: dict[str, str]) -> Launch:
    """A `vllm serve MODEL ...` launch without its positional model, which must be the config's (the
    renderer writes the config's model there); a local copy of it counts as it when the script
    downloaded it (`hf download` prints the Hugging Face id in the sandbox)."""
    if not launch.argv or launch.argv[0].startswith("-"):
        return launch
    model = launch.argv[0]
    if model not in (variables.get("MODEL"), variables.get("MODEL_PATH")):
        raise CookbookError.at(shown, launch.line, "script", f"serves {model!r}, not the config's model {variables.get('MODEL')!r}")
    return replace(launch, argv=launch.argv[1:])


def _args(launch: Launch, shown: str) -> dict[str, RawYaml]:
    """A launch's flags as recipe args: `--x=y` and `--x y` are `x: y`, `--x y z` a list, `--x` true.
    A flag given again with the same value is one setting (`--served-model-name=M ... --served-model-name M`);
    given again with another value, the point is refused (which one the engine keeps is its parser's)."""
    out: dict[str, RawYaml] = {}
    firsts: list[tuple[str, RawYaml]] = []      # a flag given again: its name and first value
    name = None
    for word in launch.argv:
        if word.startswith("--") or _SHORT_FLAG.fullmatch(word):
            name, eq, value = word.removeprefix("--").partition("=")
            if name in out:
                firsts.append((name, out[name]))
            out[name] = value if eq else True
        elif name is None:
            raise CookbookError.at(shown, launch.line, "script", f"passes {word!r} to {launch.kind} before any flag")
        else:
            value = out[name]
            out[name] = word if value is True else [*value, word] if isinstance(value, list) else [value, word]
    for name, first in firsts:
        if first != out[name]:
            raise CookbookError.at(shown, launch.line, "script", f"passes --{name} twice to {launch.kind}, with different values")
    return out
