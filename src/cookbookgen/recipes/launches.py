"""A single-node benchmark script's point as an effective recipe: the master row's variables
(`rules/script_variables.yaml`), the script run in the sandbox (`recipes.script`), and its captured
launches written as a `schema: 2` recipe, so the renderer and the policy treat it as any other.
I/O: through `recipes.script` only (the script's files arrive as bytes, `script.ScriptFiles`).

- the one SGLang worker launch becomes `roles.agg` (its flags as args, the variables it exported as
  env); a `--flag v1 v2` is a list, a bare `--flag` is `true`;
- an SGLang router launch makes `frontend.type: sglang-router` with its flags as `frontend.args`,
  and as `frontend.env` everything the script exported before launching it (the router process
  inherits the engine settings too, and the SGLang cookbook shows them on its block); without one,
  `frontend.type: sglang` (the worker serves clients);
- `resources.gpus_per_node` is the worker's GPUs (TP x PP: the script runs on one node);
- setup steps (`python3 <script folder>/*.py`) are listed under `script.setup`;
- every setting is located at the script line of its launch.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import CookbookError
from .bundle import EffectiveRecipe
from .load import package_yaml
from .master import ConfigEntry, Row
from .merge import Origins, node_paths
from .script import Capture, Launch, ScriptFiles, run_script

RawYaml = Any
RENDERED = ("sglang", "sglang-router")


def script_variables(entry: ConfigEntry, row: Row, conc: int) -> dict[str, str]:
    """The variables InferenceX's workflow gives the script for this point (see the table's header)."""
    sources = {"entry": entry.data, "row": row.data, "point": {"conc": conc}, "scenario": {"name": row.scenario}}
    out = {}
    for name, spec in package_yaml("rules/script_variables.yaml")["variables"].items():
        if row.scenario == "agentic-coding" and "agentic" in spec:
            value = spec["agentic"]
        elif "value" in spec:
            value = spec["value"]
        else:
            where, _, key = str(spec["from"]).partition(".")
            value = sources[where].get(key, spec.get("default"))
        if value is not None:
            out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def script_recipe(script: ScriptFiles, shown: str, entry: ConfigEntry, row: Row, conc: int) -> EffectiveRecipe:
    variables = script_variables(entry, row, conc)
    return recipe_from_capture(run_script(script, shown, variables), shown, variables)


def recipe_from_capture(capture: Capture, shown: str, variables: dict[str, str]) -> EffectiveRecipe:
    for launch in capture.launches:
        if launch.kind not in RENDERED:
            raise CookbookError.at(shown, launch.line, "script", f"launches {launch.kind}, which cookbookgen does not render yet "
                                                                 f"(supported: {', '.join(RENDERED)})")
    workers = [x for x in capture.launches if x.kind == "sglang"]
    routers = [x for x in capture.launches if x.kind == "sglang-router"]
    if len(workers) != 1 or len(routers) > 1:
        first = (workers[1:] or routers[1:] or capture.launches)[0]
        raise CookbookError.at(shown, first.line, "script", f"starts {len(workers)} SGLang workers and {len(routers)} routers; "
                                                            "one worker, with or without one router, expected")
    worker = workers[0]
    gpus = max(1, math.prod(int(v) for v in (variables.get("TP", ""), variables.get("PP_SIZE", "")) if v.isdigit()))
    frontend: dict[str, RawYaml] = {"type": "sglang"}
    origins: Origins = {}
    if routers:
        router = routers[0]
        env = dict(sorted(router.env.items()))
        frontend = {"type": "sglang-router", "args": _args(router, shown), **({"env": env} if env else {})}
        origins.update({p: (shown, router.line) for p in node_paths(frontend, ("frontend",))})
    data: dict[str, RawYaml] = {"engine": "sglang", "resources": {"gpus_per_node": gpus}, "frontend": frontend,
                                "roles": {"agg": {"args": _args(worker, shown), "env": dict(sorted(worker.env.items()))}}}
    if capture.setup:
        data["script"] = {"setup": [" ".join(argv) for _, argv in capture.setup]}
        origins.update({("script", "setup"): (shown, capture.setup[0][0])})
    for key in ("engine", "resources", "roles"):
        origins.update({p: (shown, worker.line) for p in node_paths(data[key], (key,))})
    return EffectiveRecipe(shown, None, data, origins)


def _args(launch: Launch, shown: str) -> dict[str, RawYaml]:
    """A launch's flags as recipe args: `--x=y` and `--x y` are `x: y`, `--x y z` a list, `--x` true."""
    out: dict[str, RawYaml] = {}
    name = None
    for word in launch.argv:
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            if name in out:
                raise CookbookError.at(shown, launch.line, "script", f"passes --{name} twice to {launch.kind}")
            out[name] = value if eq else True
        elif name is None:
            raise CookbookError.at(shown, launch.line, "script", f"passes {word!r} to {launch.kind} before any flag")
        else:
            value = out[name]
            out[name] = word if value is True else [*value, word] if isinstance(value, list) else [value, word]
    return out
