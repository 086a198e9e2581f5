"""Normalise an effective recipe (srt-slurm `schema: 2` or legacy v1) to one typed `Recipe`. No I/O.

v1 -> v2 mapping (paths in the settings report use the v2 names):
- `backend.type` -> `engine`;
- `backend.sglang_config.{prefill,decode,aggregated}` -> `roles.{prefill,decode,agg}.args`;
- `backend.{prefill,decode,aggregated}_environment` -> `roles.{...}.env`;
- `resources.{prefill,decode,agg}_{nodes,workers}` -> `roles.{...}.{nodes,workers}`;
- `backend.publish_events_and_metrics` -> `engine.*` (srt-slurm's mapping form), and so do the parts of
  `backend.mooncake_kv_store` the renderer reads (its other keys stay where they are, to be reported).
Role args (of every engine but TRT-LLM, whose args are options) are named as srtctl passes them: each
`_` of a key becomes `-` (`max_running_requests` -> `max-running-requests`).
Type errors are reported at the line of the value that set them (`EffectiveRecipe.origins`).
"""

from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError, ValidatorFunctionWrapHandler, WrapValidator

from ..errors import CookbookError, Problem, schema_messages
from ..text import listing, unknown
from .bundle import EffectiveRecipe
from .load import KeyPath, package_yaml
from .merge import Origins, deep_merge

RawYaml = Any


def _keep_float(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A float stays the object it is: a `YamlFloat` keeps its spelling (`0.90`), which pydantic's
    float validation would drop (`0.9`)."""
    return value if isinstance(value, float) else handler(value)


Float = Annotated[float, WrapValidator(_keep_float)]
Scalar = str | int | Float | bool
# An engine arg's value, checked member by member in order, each by its exact type (a bool before
# an int: `True` is an int too): the value a YAML scalar builds is kept as it is, as the smart
# union keeps it, at a third of the cost (a recipe holds hundreds of args, each checked per point).
_ExactScalar = Union[Annotated[str, Strict()], Annotated[bool, Strict()], Annotated[int, Strict()], Float]
# A list of mappings is one arg only ATOM takes (`MAPPING_LIST_ARGS`); anywhere else it is refused at its line.
ArgValue = Annotated[Union[_ExactScalar, list[_ExactScalar], list[dict[str, Any]], None], Field(union_mode="left_to_right")]
RoleName = Literal["agg", "prefill", "decode"]
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=4096)     # the same few names recur in every variant of every recipe
def _env_name(name: str) -> str:
    """A name the shell takes as an assignment in `NAME=value cmd`; any other word (`DYN-LOG=info`,
    `$(id)=1`) would be run as a command when the block is pasted."""
    if not _ENV_NAME.fullmatch(name):
        raise ValueError("not an environment variable name (letters, digits and _, not starting with a digit)")
    return name


EnvName = Annotated[str, AfterValidator(_env_name)]
Env = dict[EnvName, Scalar | None]
SUPPORTED_ENGINES = ("sglang", "vllm", "trtllm")
SCRIPT_ONLY_ENGINES = ("atom",)     # rendered as a benchmark script starts them, serving clients themselves, or behind their router
# Engines srtctl 2.x launches only behind one router of their own (`frontend.type`), their args spelled as written
# (SemiAnalysisAI/srt-slurm 05a3cec4 backends/atom.py: `backend.type: atom requires frontend.type: atomesh`).
ROUTED_ENGINES = {"atom": "atomesh"}
# Role args whose value is a list of mappings, by engine: ATOM's extra KV connectors, which the srtctl the
# InferenceX runners patch (runners/srt-slurm/patches/507-lmcache-server-atom-sglang.patch) folds into
# --kv-transfer-config (render.atom).
MAPPING_LIST_ARGS = {"atom": ("extra-kv-connectors",)}
# Engines whose recipe-wide `environment:` srt-slurm exports into every serving process (workers and
# the front process); it is moved into `roles.*.env` and `frontend.env`, where a role's own entry wins.
ENVIRONMENT_REACHES_PROCESSES = ("vllm",)
# Engines whose role `args` are nested LLM-API options written to a file, not CLI flags: they are
# moved to `roles.<role>.options` (so the CLI-flag rules of the policy and the diff leave them alone).
OPTIONS_FILE_ENGINES = ("trtllm",)
# Engines served directly (frontend.type the engine's name) whose role args are the CLI flags of the
# server, spelled as the benchmark script wrote them (`--tp_size`, `-tp`, `--kv_cache_dtype`): never
# re-spelled; a trtllm-serve role keeps its LLM-API options file beside them (`options`, `options_file`).
VERBATIM_ARGS_ENGINES = ("trtllm", "atom")
KNOWN_ENGINES = ("sglang", "vllm", "trtllm", "trt-llm", "tilert", "atom", "mocker")

# Worker args that size a parallel group: GPUs, nodes and labels are computed from them.
PARALLEL_SIZE_ARGS = ("tensor-parallel-size", "tp-size", "tp", "pipeline-parallel-size", "pp-size",
                      "data-parallel-size", "dp-size", "dp", "expert-parallel-size", "ep-size", "ep")

# v1 `backend` keys that are engine settings in the v2 shape (`engine.<key>`), where the renderer reads them.
_V1_ENGINE_KEYS = ("publish_events_and_metrics",)
_V1_MOONCAKE_KEYS = ("env", "store_config", "master_extra_args")     # of backend.mooncake_kv_store, which render.deploy reads
_V1_ROLES = {"prefill": "prefill", "decode": "decode", "aggregated": "agg", "agg": "agg"}


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class RoleSpec(_Closed):
    nodes: Annotated[int, Field(ge=0)] | Literal["colocate"] | None = None   # colocate: on the previous role's nodes
    workers: int | None = Field(default=None, ge=1)
    gpus: int | None = Field(default=None, ge=1)
    env: Env = Field(default_factory=dict)
    args: dict[str, ArgValue] = Field(default_factory=dict)
    kv_events: bool | dict[str, RawYaml] | None = None
    extra_args: list[Scalar] = Field(default_factory=list)     # srtctl passes these to trtllm-serve only (render.trtllm)


class OptionsFileSpec(_Closed):
    flag: Literal["--extra_llm_api_options", "--config"]
    name: str
    text: str


class OptionsRoleSpec(RoleSpec):
    """A role of an engine in OPTIONS_FILE_ENGINES: its `args` (moved here) are the LLM-API options.
    Served directly by trtllm-serve (frontend.type trtllm), `args` are its flags and `options` the keys of
    the options file `options_file` names; `launcher` is the program it runs under (`mpirun -n 1 ...`)."""

    options: dict[str, RawYaml] = Field(default_factory=dict)
    options_file: OptionsFileSpec | None = None
    launcher: list[str] = Field(default_factory=list)


class Placement(_Open):
    node: str | None = None       # a named node of the job, e.g. a CPU node of its own


class FrontendSpec(_Open):
    type: Literal["dynamo", "sglang", "sglang-router", "vllm", "vllm-router", "smg", "trtllm_serve", "trtllm", "atom", "atomesh"] = "dynamo"
    # srtctl's defaults (FrontendConfig, NVIDIA/srt-slurm since 2025-11); see `render.deploy.frontend_layout`
    enable_multiple_frontends: bool = True
    num_additional_frontends: int = Field(default=9, ge=0)
    args: dict[str, ArgValue] = Field(default_factory=dict)
    env: Env = Field(default_factory=dict)
    placement: Placement | None = None


class ServiceSpec(_Open):
    name: str
    type: Literal["etcd", "nats", "mooncake-master", "mooncake-store"]
    args: list[Scalar] | dict[str, ArgValue] = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    preamble: str | list[str] | None = None
    options: dict[str, RawYaml] = Field(default_factory=dict)
    placement: Placement | None = None


class InfraSpec(_Open):
    etcd_nats_dedicated_node: bool = False


class ResourcesSpec(_Open):
    gpu_type: str | None = None
    gpus_per_node: int = Field(default=4, ge=1)


class ModelSpec(_Open):
    path: str | None = None
    container: str | None = None
    precision: str | None = None


class EngineSpec(_Open):
    """srt-slurm's mapping form `engine: {type: vllm, connector: nixl, ...}`."""

    type: str
    connector: str | None = None          # KV connector of prefill/decode workers (nixl, lmcache, or JSON)


def _not_an_option(word: str | int) -> str | int:
    """A word the launch script passes to git: one starting with `-` would be read as an option."""
    if str(word).startswith("-"):
        raise ValueError("must not start with '-' (git would take it as an option)")
    return word


GitWord = Annotated[str, AfterValidator(_not_an_option)]
GitRev = Annotated[Union[str, int], AfterValidator(_not_an_option)]     # a hex commit may read as a number


class DynamoSource(_Open):
    git: GitWord | None = None         # the repository Dynamo is built from
    rev: GitRev | None = None          # its commit (HEAD when absent)


class DynamoSpec(_Open):
    request_plane: str | None = None   # nats, tcp, ... (None: srt-slurm's default)
    source: DynamoSource | None = None


class IdentityModel(_Open):
    repo: str | None = None       # the Hugging Face id


class IdentityContainer(_Open):
    image: str | None = None


class IdentitySpec(_Open):
    model: IdentityModel = IdentityModel()
    container: IdentityContainer = IdentityContainer()


class Recipe(_Open):
    """The parts of a recipe that rendering reads; everything else stays in `data` for the policy."""

    engine: str | EngineSpec = "sglang"
    model: ModelSpec = ModelSpec()
    resources: ResourcesSpec = ResourcesSpec()
    frontend: FrontendSpec = FrontendSpec()
    services: list[ServiceSpec] | None = None
    dynamo: DynamoSpec = DynamoSpec()
    identity: IdentitySpec = IdentitySpec()
    infra: InfraSpec = InfraSpec()
    roles: dict[RoleName, RoleSpec] = Field(default_factory=dict)

    @property
    def engine_type(self) -> str:
        return self.engine if isinstance(self.engine, str) else self.engine.type


class OptionsRecipe(Recipe):
    roles: dict[RoleName, OptionsRoleSpec] = Field(default_factory=dict)   # type: ignore[assignment]


Typed = tuple[EffectiveRecipe, Recipe]     # an effective recipe and its typed view, as `normalise` returns them


def normalise(recipe: EffectiveRecipe) -> Typed:
    """The v2-shaped effective recipe and its typed view. Raises CookbookError naming each bad key."""
    direct = served_directly(recipe.data)
    if _engine_type(recipe.data) in OPTIONS_FILE_ENGINES and not direct:
        for role, spec in (recipe.data.get("roles") or {}).items():
            for key in ("options", "options_file", "launcher"):
                if isinstance(spec, dict) and key in spec:
                    raise recipe.error(("roles", role, key), f"unknown key {key!r}; write the role's LLM-API options under args")
    _check_keys(recipe)
    normal = _null_sections_empty(recipe)
    if "backend" in normal.data and "roles" not in normal.data:
        normal = EffectiveRecipe(normal.file, normal.selector, *_from_v1(normal.data, dict(normal.origins)))
    _check_engine(normal)
    v1 = normal.data.get("schema") == 1       # srtctl v1.0.68 exports `environment:` into every worker and Dynamo frontend
    if (v1 or _engine_type(normal.data) in ENVIRONMENT_REACHES_PROCESSES) and isinstance(normal.data.get("environment"), dict):
        normal = EffectiveRecipe(normal.file, normal.selector, *_environment_to_processes(normal.data, dict(normal.origins)))
    if _engine_type(normal.data) in OPTIONS_FILE_ENGINES and not direct:
        normal = EffectiveRecipe(normal.file, normal.selector, *_args_to_options(normal.data, dict(normal.origins)))
    elif not direct and _engine_type(normal.data) not in ROUTED_ENGINES:
        normal = _dashed_args(normal)
    model = OptionsRecipe if _engine_type(normal.data) in OPTIONS_FILE_ENGINES else Recipe
    try:
        typed = model.model_validate(normal.data)
    except ValidationError as exc:
        raise CookbookError([normal.problem(loc, message) for loc, message in schema_messages(exc.errors(), model)]) from None
    if set(typed.roles) not in ({"agg"}, {"prefill", "decode"}):
        found = ", ".join(typed.roles) or "none"
        raise normal.error(("roles",), f"worker roles {found}: expected roles.agg, or roles.prefill and roles.decode")
    _check_parallel_sizes(normal, typed)
    _check_mapping_lists(normal, typed)
    return normal, typed


# Mapping sections srtctl reads as empty when a recipe writes `null` (`frontend.env: null`).
_NULLABLE_SECTIONS: tuple[tuple[str, ...], ...] = (("frontend", "env"), ("frontend", "args"), ("environment",),
                                           ("backend", "prefill_environment"), ("backend", "decode_environment"),
                                           ("backend", "aggregated_environment"))


def _null_sections_empty(recipe: EffectiveRecipe) -> EffectiveRecipe:
    """`null` for a mapping section (`frontend.env: null`) is that section empty, as srtctl reads it."""
    data = recipe.data
    for path in _NULLABLE_SECTIONS:
        parent = data.get(path[0]) if len(path) == 2 else data
        if isinstance(parent, dict) and path[-1] in parent and parent[path[-1]] is None:
            cleared = {k: v for k, v in parent.items() if k != path[-1]}
            data = {**data, path[0]: cleared} if len(path) == 2 else cleared
    for role, spec in (data.get("roles") or {}).items() if isinstance(data.get("roles"), dict) else ():
        if isinstance(spec, dict) and any(spec.get(k, {}) is None for k in ("env", "args")):
            data = {**data, "roles": {**data["roles"], role: {k: v for k, v in spec.items() if not (k in ("env", "args") and v is None)}}}
    return recipe if data is recipe.data else EffectiveRecipe(recipe.file, recipe.selector, data, recipe.origins)


def _check_keys(recipe: EffectiveRecipe) -> None:
    """Every key of the recipe is one its shape allows (`rules/recipe_keys.yaml`): a misspelt key
    (`gpus_per_nod`, `role:` for `roles:`) is a located error naming the nearest valid key, not a
    setting that silently does nothing."""
    table = package_yaml("rules/recipe_keys.yaml")
    shape = "v1" if "backend" in recipe.data and "roles" not in recipe.data else "v2"
    allowed = table[shape]
    if shape == "v2" and _engine_type(recipe.data) in OPTIONS_FILE_ENGINES and served_directly(recipe.data):
        roles = allowed["roles"]
        allowed = {**allowed, "roles": {**roles, "agg": {**roles["agg"], **table["served_directly_agg"]}}}
    problems: list[Problem] = []
    _walk_keys(recipe, recipe.data, allowed, (), problems)
    if problems:
        raise CookbookError(problems)


def _walk_keys(recipe: EffectiveRecipe, node: RawYaml, allowed: RawYaml, path: KeyPath, problems: list[Problem]) -> None:
    if not isinstance(allowed, dict) or not isinstance(node, dict):
        return      # `open`, or a value whose type validation reports
    for key, value in node.items():
        if key in allowed:
            _walk_keys(recipe, value, allowed[key], path + (key,), problems)
            continue
        near = difflib.get_close_matches(str(key), list(allowed), n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        problems.append(recipe.problem(path + (key,), f"unknown key {str(key)!r}; {hint}expected one of: {listing(allowed, str(key))}"))


def _check_parallel_sizes(recipe: EffectiveRecipe, typed: Recipe) -> None:
    """A parallel size is a positive whole number (`4` or `"4"`): never rounded, never ignored."""
    problems = [recipe.problem(("roles", role, "args", key), f"must be a positive whole number (received {spec.args[key]!r})")
                for role, spec in typed.roles.items() for key in PARALLEL_SIZE_ARGS
                if key in spec.args and not _positive_whole(spec.args[key])]
    if problems:
        raise CookbookError(problems)


def _check_mapping_lists(recipe: EffectiveRecipe, typed: Recipe) -> None:
    """A role arg whose value is a list of mappings is no flag value: only the args in MAPPING_LIST_ARGS take one."""
    allowed = MAPPING_LIST_ARGS.get(typed.engine_type, ())
    problems = [recipe.problem(("roles", role, "args", key), f"a list of mappings is not a value this engine's flags take (only "
                                                             f"{', '.join(allowed) or 'none'} for engine {typed.engine_type!r})")
                for role, spec in typed.roles.items() for key, value in spec.args.items()
                if isinstance(value, list) and any(isinstance(v, dict) for v in value) and key not in allowed]
    if problems:
        raise CookbookError(problems)


def _positive_whole(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value > 0
    return isinstance(value, str) and value.isdigit() and int(value) > 0


def served_directly(data: dict[str, RawYaml]) -> bool:
    """An engine of VERBATIM_ARGS_ENGINES serving clients itself (`frontend.type` its own name)."""
    frontend = data.get("frontend")
    engine = _engine_type(data)
    return engine in VERBATIM_ARGS_ENGINES and isinstance(frontend, dict) and frontend.get("type") == engine


def _engine_type(data: dict[str, RawYaml]) -> RawYaml:
    engine = data.get("engine", "sglang")
    return engine.get("type") if isinstance(engine, dict) else engine


def _check_engine(recipe: EffectiveRecipe) -> None:
    """`engine: sglang`, or srt-slurm's mapping form `engine: {type: vllm, connector: nixl, ...}`."""
    engine = _engine_type(recipe.data)
    where: KeyPath = ("engine", "type") if isinstance(recipe.data.get("engine"), dict) else ("engine",)
    frontend = recipe.data.get("frontend")
    front = frontend.get("type") if isinstance(frontend, dict) else None
    routed = ROUTED_ENGINES.get(str(engine))
    if routed is not None and front == routed:
        return
    if front in ROUTED_ENGINES.values() and routed != front:     # srtctl: frontend.type atomesh requires backend.type atom
        raise recipe.error(("frontend", "type"), f"frontend type {front} routes only to engine "
                                                 f"{next(e for e, f in ROUTED_ENGINES.items() if f == front)!r}, not {engine!r}")
    if engine in SUPPORTED_ENGINES or (engine in SCRIPT_ONLY_ENGINES and served_directly(recipe.data)):
        return
    if engine in SCRIPT_ONLY_ENGINES:
        raise recipe.error(where, f"engine {engine!r} is not supported yet (supported: {', '.join(SUPPORTED_ENGINES)}); it is rendered "
                                  f"as a benchmark script starts it, serving clients itself (frontend.type: {engine}), and as srtctl "
                                  f"starts it behind its router (frontend.type: {ROUTED_ENGINES[engine]})")
    if isinstance(engine, str) and engine in KNOWN_ENGINES:
        raise recipe.error(where, f"engine {engine!r} is not supported yet (supported: {', '.join(SUPPORTED_ENGINES)})")
    raise recipe.error(where, unknown("engine", engine, KNOWN_ENGINES))


def _environment_to_processes(data: dict[str, RawYaml], origins: Origins) -> tuple[dict[str, RawYaml], Origins]:
    """`environment:` entries into each role's env and the front process's env (own entries win);
    each moved entry keeps the line it was written at."""
    environment: dict[str, RawYaml] = data["environment"]
    out = {k: v for k, v in data.items() if k != "environment"}
    moved = dict(origins)
    targets: list[tuple[str, ...]] = [("roles", role) for role in (data.get("roles") or {})]
    frontend: dict[str, RawYaml] = data["frontend"] if isinstance(data.get("frontend"), dict) else {}
    reaches_front = frontend.get("type", "dynamo") == "dynamo" if data.get("schema") == 1 else frontend.get("type") != "vllm"
    # srtctl v1: the Dynamo frontend only (its router takes frontend.env alone); v2 vLLM: any front process but `vllm`
    if (frontend or data.get("schema") == 1) and reaches_front:
        targets.append(("frontend",))
    for target in targets:
        section = out
        for key in target:
            section = section.get(key) or {}
        own = section.get("env") or {}
        # srtctl v1.0.68 lays `environment:` over a worker's own env (worker_stage), under the frontend's
        wins = data.get("schema") == 1 and target[0] == "roles"
        moved.update({(*target, "env", name): origins[("environment", name)] for name in environment
                      if (wins or name not in own) and ("environment", name) in origins})
        update: dict[str, RawYaml] = {"env": {**own, **environment} if wins else {**environment, **own}}
        for key in reversed(target):
            update = {key: update}
        out = deep_merge(out, update)
    return out, moved


def _dashed_args(recipe: EffectiveRecipe) -> EffectiveRecipe:
    """Role args named as the flags srtctl passes: it writes every `_` of a key as `-`
    (`max_running_requests: 5` is `--max-running-requests 5`). A flag set under both spellings is an
    error: srtctl would pass it twice, and which value wins would hang on its key order."""
    roles = recipe.data.get("roles")
    if not isinstance(roles, dict):
        return recipe
    out: dict[str, RawYaml] = {}
    moves: list[tuple[KeyPath, KeyPath]] = []
    problems = []
    for role, spec in roles.items():
        args = spec.get("args") if isinstance(spec, dict) else None
        if not isinstance(args, dict) or "_" not in "".join(map(str, args)):       # the usual case, in one pass
            out[role] = spec
            continue
        dashed: dict[RawYaml, RawYaml] = {}
        written: dict[RawYaml, RawYaml] = {}      # the key as the recipe spells it, by flag name
        for key, value in args.items():
            name = key.replace("_", "-") if isinstance(key, str) else key
            if name in written:
                problems.append(recipe.problem(("roles", role, "args", key), f"the flag --{name}, which {written[name]} also sets; keep one"))
            dashed[name], written[name] = value, key
            if name != key:
                moves.append((("roles", role, "args", key), ("roles", role, "args", name)))
        out[role] = {**spec, "args": dashed}
    if problems:
        raise CookbookError(problems)
    if not moves:
        return recipe
    return EffectiveRecipe(recipe.file, recipe.selector, {**recipe.data, "roles": out}, _move_origins(dict(recipe.origins), moves))


def _args_to_options(data: dict[str, RawYaml], origins: Origins) -> tuple[dict[str, RawYaml], Origins]:
    roles = data.get("roles")
    if not isinstance(roles, dict):
        return data, origins
    moved = {role: {("options" if k == "args" else k): v for k, v in spec.items()} if isinstance(spec, dict) else spec
             for role, spec in roles.items()}
    return {**data, "roles": moved}, _move_origins(origins, [(("roles", role, "args"), ("roles", role, "options")) for role in roles])


def _from_v1(data: dict[str, RawYaml], origins: Origins) -> tuple[dict[str, RawYaml], Origins]:
    out = {"schema": 1, **{k: v for k, v in data.items() if k != "backend"}}    # `schema: 1`: srtctl v1's meaning applies
    moved: list[tuple[KeyPath, KeyPath]] = []
    backend = data.get("backend") or {}
    if not isinstance(backend, dict):
        return data, origins  # validation reports the type problem on `backend`
    rest = {k: v for k, v in backend.items()}
    roles: dict[str, dict[str, RawYaml]] = {}
    if "type" in rest:
        out["engine"] = rest.pop("type")
        moved.append((("backend", "type"), ("engine",)))
    switches = {key: rest.pop(key) for key in _V1_ENGINE_KEYS if key in rest}
    store = rest.get("mooncake_kv_store")
    if isinstance(store, dict) and any(key in store for key in _V1_MOONCAKE_KEYS):
        switches["mooncake_kv_store"] = {key: store[key] for key in _V1_MOONCAKE_KEYS if key in store}
        moved += [(("backend", "mooncake_kv_store", key), ("engine", "mooncake_kv_store", key)) for key in switches["mooncake_kv_store"]]
        left = {key: value for key, value in store.items() if key not in _V1_MOONCAKE_KEYS}
        if left:
            rest["mooncake_kv_store"] = left
        else:
            del rest["mooncake_kv_store"]
    if out.get("engine") == "vllm":     # srtctl v1.0.68 pins a vLLM worker's GPUs with --device-ids unless this is set
        switches["set_cuda_visible_devices"] = rest.pop("set_cuda_visible_devices", False)
    if switches:        # engine keys the renderer reads from srt-slurm's mapping form `engine: {type: ..., <key>: ...}`
        out["engine"] = {"type": out.get("engine", "sglang"), **switches}
        moved += [(("backend", key), ("engine", key)) for key in switches if key in _V1_ENGINE_KEYS]
        moved.append((("backend", "type"), ("engine", "type")))
    engine = _engine_type(out)
    section = f"{engine}_config" if isinstance(engine, str) else "sglang_config"
    configs = rest.get(section)
    for v1, v2 in _V1_ROLES.items():
        config = configs.get(v1) if isinstance(configs, dict) else None
        if config is not None:
            roles.setdefault(v2, {})["args"] = config
            moved.append((("backend", section, v1), ("roles", v2, "args")))
        env = rest.pop(f"{v1}_environment", None)
        if env is not None:
            roles.setdefault(v2, {})["env"] = env
            moved.append((("backend", f"{v1}_environment"), ("roles", v2, "env")))
    if isinstance(configs, dict):
        rest[section] = {k: v for k, v in configs.items() if k not in _V1_ROLES}    # any other key stays to be reported
        if not rest[section]:
            del rest[section]
    elif configs is None:
        rest.pop(section, None)
    _kv_events_from_v1(rest, roles, moved)
    if engine == "vllm":
        _vllm_connector_from_v1(rest, roles, moved, data.get("frontend"))
    resources = dict(out.get("resources") or {})
    for v1, v2 in _V1_ROLES.items():
        for key, what in ((f"{v1}_nodes", "nodes"), (f"{v1}_workers", "workers"), (f"gpus_per_{v1}", "gpus")):
            if key in resources:
                roles.setdefault(v2, {})[what] = resources.pop(key)
                moved.append((("resources", key), ("roles", v2, what)))
    _v1_gpus_defaults(data.get("resources"), roles, moved)
    dynamo = out.get("dynamo")
    if isinstance(dynamo, dict) and "request_plane" not in dynamo or dynamo is None:
        out["dynamo"] = {**(dynamo or {}), "request_plane": "tcp"}    # srtctl v1.0.68's default (DynamoConfig)
    out["resources"] = resources
    if rest:
        out["backend"] = rest
    out["roles"] = deep_merge(roles, {})
    return out, _move_origins(origins, moved)


def _v1_gpus_defaults(resources: RawYaml, roles: dict[str, dict[str, RawYaml]], moved: list[tuple[KeyPath, KeyPath]]) -> None:
    """GPUs per worker of a v1 recipe without `gpus_per_<role>`, as srtctl v1.0.68 sizes it
    (`ResourceConfig.gpus_per_*`): the role's nodes x GPUs per node / its workers, else a whole node;
    decode workers on no nodes of their own (`decode_nodes: 0`) take the prefill workers' size."""
    if not isinstance(resources, dict):
        return
    gpn = resources.get("gpus_per_node", 4)
    if not isinstance(gpn, int):
        return
    for v1, v2 in (("prefill", "prefill"), ("decode", "decode"), ("agg", "agg")):
        spec = roles.get(v2)
        if spec is None or "gpus" in spec:
            continue
        nodes, workers = spec.get("nodes"), spec.get("workers")
        if isinstance(nodes, int) and isinstance(workers, int) and nodes and workers:
            spec["gpus"] = nodes * gpn // workers
        elif v2 == "decode" and nodes == 0 and workers and "prefill" in roles:
            spec["gpus"] = roles["prefill"].get("gpus", gpn)
        else:
            spec["gpus"] = gpn
        moved.append((("resources", f"{v1}_nodes" if f"{v1}_nodes" in resources else "gpus_per_node"), ("roles", v2, "gpus")))


def _vllm_connector_from_v1(backend: dict[str, RawYaml], roles: dict[str, dict[str, RawYaml]],
                            moved: list[tuple[KeyPath, KeyPath]], frontend: RawYaml) -> None:
    """v1 vLLM's KV connector as srtctl v1.0.68 passes it (`VLLMProtocol.build_worker_command`): each
    Dynamo worker, aggregated ones too, gets `--kv-transfer-config` from its mode's `connector`, else
    `backend.connector` (default `nixl`); `null`/`none` passes none; a shorthand (`nixl`, `lmcache`,
    `kvbm`) becomes its JSON (written as srtctl's `json.dumps` writes it), anything else passes as
    written. A direct `vllm serve` (frontend type vllm) takes no connector."""
    default = backend.pop("connector", "nixl")
    direct = isinstance(frontend, dict) and frontend.get("type") == "vllm"
    presets = _engine_table()["vllm"]["connectors"]
    for v2, spec in roles.items():
        args = spec.get("args")
        own = args.get("connector") if isinstance(args, dict) else None
        if isinstance(args, dict) and "connector" in args:
            spec["args"] = {k: v for k, v in args.items() if k != "connector"}
        connector = own if own is not None else default
        if direct or connector in (None, "null", "none") or (isinstance(args, dict) and "kv-transfer-config" in args):
            continue
        preset = presets.get(str(connector).lower())
        spec.setdefault("args", {})
        spec["args"] = {**spec["args"], "kv-transfer-config": json.dumps(preset) if preset else str(connector)}
        v1 = next(k for k, v in _V1_ROLES.items() if v == v2)
        source: KeyPath = ("backend", "vllm_config", v1, "connector") if own is not None else ("backend", "connector")
        moved.append((source, ("roles", v2, "args", "kv-transfer-config")))


def _engine_table() -> dict[str, RawYaml]:
    return package_yaml("rules/engines.yaml")  # type: ignore[no-any-return]


def _kv_events_from_v1(backend: dict[str, RawYaml], roles: dict[str, dict[str, RawYaml]], moved: list[tuple[KeyPath, KeyPath]]) -> None:
    """`backend.kv_events_config` as srtctl reads it: `true` turns KV events on for prefill and decode;
    a mapping per mode (`prefill`, `decode`, `aggregated`) gives each its own setting."""
    setting = backend.get("kv_events_config")
    if setting is True:
        per_mode = {"prefill": True, "decode": True}
    elif isinstance(setting, dict):
        per_mode = dict(setting)
    else:
        return
    del backend["kv_events_config"]
    for v1, value in per_mode.items():
        v2 = _V1_ROLES.get(v1)
        if v2 is None:
            backend.setdefault("kv_events_config", {})[v1] = value      # an unknown mode stays to be reported
            continue
        roles.setdefault(v2, {})["kv_events"] = value
        moved.append((("backend", "kv_events_config") + ((v1,) if isinstance(setting, dict) else ()), ("roles", v2, "kv_events")))


def _move_origins(origins: Origins, moves: list[tuple[KeyPath, KeyPath]]) -> Origins:
    out = dict(origins)
    for old, new in moves:
        for path, where in origins.items():
            if path[: len(old)] == old:
                out[new + path[len(old):]] = where
    return out
