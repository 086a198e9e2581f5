"""InferenceX master configs -> points: one concurrency of one search-space row. I/O: none here;
the caller passes parsed `Document`s (see `recipes.load`).

Recipe selection, in this order:
- `additional-settings: CONFIG_FILE=recipes/<path>[:<selector>]` on the worker or prefill side;
- `srt-recipe: <path>[:<selector>]` on the row, its worker/prefill side, or the entry (with `srt-recipe-dir`);
- a bundle named without a selector: the override whose tensor-parallel size equals the row's `tp`
  and whose `benchmark.env.CONC` equals the point's concurrency;
- none of these on a single-node entry (`multinode: false`): the benchmark script InferenceX's
  runners start, `benchmarks/single_node/<agentic|fixed_seq_len>/<model-prefix>_<precision>_<gpu>_<framework>[_mtp].sh`,
  or when that file does not exist the name without the framework (`_trt` kept for `trt`):
  `<model-prefix>_<precision>_<gpu>[_trt][_mtp].sh` (`runners/launch_*.sh`, BENCH_SCRIPT and its
  fallback, InferenceX 843c6254).

Concurrencies: `conc-list`, or `conc-start` doubled up to `conc-end` (which is always included), as
InferenceX's `utils/matrix_logic/generate_sweep_configs.py` does with its default step 2.
"""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..text import unknown
from .load import Document, KeyPath, package_yaml

RawYaml = Any
SUPPORTED_FRAMEWORKS: tuple[str, ...] = tuple(package_yaml("rules/engines.yaml")["frameworks"]["rendered"])
SCRIPTS = "benchmarks/single_node"
SCRIPT_NAME = "<model-prefix>_<precision>_<gpu>_<framework>[_mtp].sh"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9.]+(-[A-Za-z0-9.]+)*")


@dataclass(frozen=True)
class RecipeRef:
    path: str
    selector: str | None
    where: KeyPath  # key path of the setting in the master file
    fallback: str | None = None     # a benchmark script's name without the framework, used when `path` does not exist


@dataclass(frozen=True)
class Row:
    scenario: str
    index: int
    path: KeyPath
    data: dict[str, RawYaml]
    concs: tuple[int, ...]
    recipe: RecipeRef
    slug: str
    tp: int | None
    extra: dict[str, RawYaml] = field(default_factory=dict)  # scenario-level settings (dram-utilization, ...)


@dataclass(frozen=True)
class ConfigEntry:
    """One master config entry. Its rows are read when first asked for: a real master config holds
    entries of other harnesses, and one that cookbookgen cannot read stops only the runs that use it."""

    key: str
    doc: Document
    data: dict[str, RawYaml]

    @cached_property
    def rows(self) -> tuple[Row, ...]:
        scenarios = self.data.get("scenarios", {})
        if not isinstance(scenarios, dict):
            raise self.doc.error((self.key, "scenarios"), "must be a mapping of scenario name to a list of search spaces")
        rows: list[Row] = []
        for name, groups in scenarios.items():
            if not isinstance(groups, list):
                raise self.doc.error((self.key, "scenarios", name), "must be a list")
            for g, group in enumerate(groups):
                rows.extend(_rows(self.doc, self.key, self.data, name, g, group, len(rows)))
        _dedupe_slugs(rows)
        return tuple(rows)

    @property
    def framework(self) -> str:
        return str(self.data.get("framework", ""))

    @property
    def model(self) -> str | None:
        return self.data.get("model")

    @property
    def image(self) -> str:
        return str(self.data.get("image", ""))

    @property
    def cluster(self) -> str | None:
        runner = str(self.data.get("runner", ""))
        return runner.split(":", 1)[1] if runner.startswith("cluster:") else (runner or None)

    def point_ids(self) -> list[str]:
        return [f"{row.slug}/c{c}" for row in self.rows for c in row.concs]


def read_entries(doc: Document) -> dict[str, ConfigEntry]:
    if not isinstance(doc.data, dict):
        raise doc.error((), "a master config must be a mapping of config keys")
    return {key: _entry(doc, key, value) for key, value in doc.data.items()}


def _entry(doc: Document, key: str, data: RawYaml) -> ConfigEntry:
    if not isinstance(data, dict):
        raise doc.error((key,), "a config entry must be a mapping")
    return ConfigEntry(key, doc, data)


def _rows(doc: Document, key: str, entry: dict[str, RawYaml], scenario: str, g: int, group: RawYaml, start: int) -> list[Row]:
    base: KeyPath = (key, "scenarios", scenario, g)
    if not isinstance(group, dict) or not isinstance(group.get("search-space"), list):
        raise doc.error(base, "expected a mapping with a `search-space` list")
    extra = {k: v for k, v in group.items() if k != "search-space"}
    out: list[Row] = []
    for r, row in enumerate(group["search-space"]):
        path = base + ("search-space", r)
        if not isinstance(row, dict):
            raise doc.error(path, "a search-space row must be a mapping")
        concs = row.get("conc-list", _conc_range(row.get("conc-start"), row.get("conc-end")))
        if not isinstance(concs, list) or not concs or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in concs):
            raise doc.error(path + ("conc-list",), f"must be a non-empty list of positive integers (received {reprlib.repr(concs)})")
        twice = _first_repeat(concs)
        if twice is not None:
            raise doc.error(path + ("conc-list", twice), f"concurrency {concs[twice]} listed twice (each is one point)")
        ref = _recipe_ref(doc, entry, row, path, scenario)
        out.append(Row(scenario, start + len(out), path, row, tuple(concs), ref, _slug(row), _tp(row), extra))
    return out


def _first_repeat(values: list[int]) -> int | None:
    """The index of the first value listed before (in linear time: a list may be long)."""
    seen: set[int] = set()
    for i, value in enumerate(values):
        if value in seen:
            return i
        seen.add(value)
    return None


def _conc_range(start: RawYaml, end: RawYaml) -> list[int] | None:
    if not (isinstance(start, int) and isinstance(end, int)) or start <= 0 or start > end:
        return None
    concs = [start]
    while concs[-1] < end:
        concs.append(min(concs[-1] * 2, end))
    return concs


def _recipe_ref(doc: Document, entry: dict[str, RawYaml], row: dict[str, RawYaml], path: KeyPath, scenario: str) -> RecipeRef:
    for side in ("worker", "prefill", "decode"):
        settings = _side(row, side).get("additional-settings")
        if settings is not None and not isinstance(settings, list):
            raise doc.error(path + (side, "additional-settings"), f"must be a list of KEY=VALUE strings (received {type(settings).__name__})")
        for i, item in enumerate(settings or []):
            if isinstance(item, str) and item.startswith("CONFIG_FILE="):
                return _split_ref(item.removeprefix("CONFIG_FILE="), path + (side, "additional-settings", i))
    for holder, where in ((row, path), (row.get("worker"), path + ("worker",)), (row.get("prefill"), path + ("prefill",))):
        if isinstance(holder, dict) and isinstance(holder.get("srt-recipe"), str):
            return _split_ref(holder["srt-recipe"], where + ("srt-recipe",))
    if isinstance(entry.get("srt-recipe"), str):
        return _split_ref(entry["srt-recipe"], (path[0], "srt-recipe"))
    multi = _multi_node_ref(entry, path, scenario)
    if multi is not None:
        return multi
    script = _script_name(entry, row)
    if script is not None:
        folder = f"{SCRIPTS}/{'agentic' if scenario == 'agentic-coding' else 'fixed_seq_len'}"
        return RecipeRef(f"{folder}/{script[0]}", None, path, f"{folder}/{script[1]}")
    raise doc.error(path, "no recipe: expected `srt-recipe: <file>[:<selector>]` or additional-settings CONFIG_FILE=recipes/<file>[:<selector>]"
                          f", or (multinode: false) model-prefix, precision, runner and framework naming a script {SCRIPTS}/<scenario>/{SCRIPT_NAME}")


def _script_name(entry: dict[str, RawYaml], row: dict[str, RawYaml]) -> tuple[str, str] | None:
    """A single-node entry's script by InferenceX's convention (SCRIPT_NAME, `gpu` the runner's name
    up to its first `-`: `cluster:h200-dgxc` -> h200), and the runners' fallback name without the
    framework; None when a part is missing or not a plain name."""
    if entry.get("multinode", False) is not False:
        return None
    gpu = str(entry.get("runner", "")).removeprefix("cluster:").split("-")[0]
    parts = [entry.get("model-prefix"), entry.get("precision"), gpu, entry.get("framework")]
    names = [p for p in parts if isinstance(p, str) and _PLAIN_NAME.fullmatch(p)]
    if len(names) < len(parts):
        return None
    spec = "_mtp" if row.get("spec-decoding") == "mtp" else ""
    return "_".join(names) + spec + ".sh", "_".join(names[:3]) + ("_trt" if names[3] == "trt" else "") + spec + ".sh"


def _split_ref(text: str, where: KeyPath) -> RecipeRef:
    path, sep, selector = text.strip().partition(":")
    return RecipeRef(path, selector or None, where)


def _side(row: dict[str, RawYaml], side: str) -> dict[str, RawYaml]:
    value = row.get(side)
    return value if isinstance(value, dict) else {}


def _tp(row: dict[str, RawYaml]) -> int | None:
    for holder in (row, _side(row, "worker"), _side(row, "prefill")):
        tp = holder.get("tp")
        if isinstance(tp, int):
            return tp
    return None


def _par(spec: dict[str, RawYaml]) -> str:
    tp, ep = spec.get("tp", 1), spec.get("ep", 1)
    if spec.get("dp-attn"):
        return f"dep{tp}"
    return f"tp{tp}" + (f"-ep{ep}" if isinstance(ep, int) and ep > 1 else "")


def _slug(row: dict[str, RawYaml]) -> str:
    if "prefill" in row and "decode" in row:
        p, d = _side(row, "prefill"), _side(row, "decode")
        return f"{p.get('num-worker', 1)}p{d.get('num-worker', 1)}d-{_par(p)}-{_par(d)}"
    spec = _side(row, "worker") or row
    workers = spec.get("num-worker", 1)
    return (f"{workers}x-" if isinstance(workers, int) and workers > 1 else "") + _par(spec)


def _dedupe_slugs(rows: list[Row]) -> None:
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        clash = {c for r in rows[:i] if r.slug == row.slug for c in r.concs} & set(row.concs)
        if clash:
            seen[row.slug] = seen.get(row.slug, 1) + 1
            rows[i] = replace(row, slug=f"{row.slug}-{seen[row.slug]}")


def check_framework(entry: ConfigEntry) -> None:
    """A framework InferenceX runs that cookbookgen does not render through scripts is fine when every
    row names a recipe (the current layout: the recipe's engine decides); otherwise, and for a framework
    no table names, the entry is refused with why."""
    table = package_yaml("rules/engines.yaml")["frameworks"]
    why = table["refused"].get(entry.framework)
    if why and entry.framework in table["scripts"]:
        why = why.format(script=_multi_node_script(entry, table["scripts"][entry.framework]))
    recipes = entry.framework not in table["own_configs"] and _all_recipes(entry)
    if entry.framework not in SUPPORTED_FRAMEWORKS and not (why and recipes):
        raise entry.doc.error((entry.key, "framework"), f"framework {entry.framework!r} is not rendered: {why}" if why else
                              f"framework {entry.framework!r} is not supported yet (supported: {', '.join(SUPPORTED_FRAMEWORKS)})")


def _multi_node_ref(entry: dict[str, RawYaml], path: KeyPath, scenario: str) -> RecipeRef | None:
    """A row of a multi-node framework cookbookgen renders from InferenceX's own scripts (`rules/engines.yaml`
    `rendered` and `scripts`): the script the runner starts for it (`agentic/` for an agentic-coding row,
    runners/launch_mi355x-amds.sh BENCHMARK_SUBDIR), or None."""
    table = package_yaml("rules/engines.yaml")["frameworks"]
    framework = entry.get("framework")
    parts = _script_parts(entry)
    if framework not in table["rendered"] or framework not in table["scripts"] or entry.get("multinode") is not True or parts is None:
        return None
    return RecipeRef(table["scripts"][framework].format(agentic="agentic/" if scenario == "agentic-coding" else "", **parts), None, path)


def _script_parts(entry: dict[str, RawYaml]) -> dict[str, str] | None:
    parts = {"prefix": entry.get("model-prefix"), "precision": entry.get("precision"),
             "gpu": str(entry.get("runner", "")).removeprefix("cluster:").split("-")[0]}
    return {k: v for k, v in parts.items() if isinstance(v, str)} if all(isinstance(v, str) and _PLAIN_NAME.fullmatch(v) for v in parts.values()) \
        else None


def _multi_node_script(entry: ConfigEntry, pattern: str) -> str:
    """The multi-node script InferenceX's runner starts for the entry (`rules/engines.yaml` scripts)."""
    parts = _script_parts(entry.data)
    if parts is None:
        return pattern.replace("{agentic}", "[agentic/]").replace("{prefix}", "<model-prefix>").replace(
            "{precision}", "<precision>").replace("{gpu}", "<gpu>")
    scenarios = entry.data.get("scenarios")
    agentic = "agentic/" if isinstance(scenarios, dict) and "agentic-coding" in scenarios else ""
    return pattern.format(agentic=agentic, **parts)


def find_point(entry: ConfigEntry, point: str) -> tuple[Row, int]:
    """A point by full id (`tp4/c16`) or by label (`c16`) when the label is unique in the config."""
    matches = [(row, c) for row in entry.rows for c in row.concs if point in (f"{row.slug}/c{c}", f"c{c}")]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise entry.doc.error((entry.key,), unknown("point", point, entry.point_ids()))
    raise entry.doc.error((entry.key,), f"point {point!r} is ambiguous; use one of: {', '.join(f'{r.slug}/c{c}' for r, c in matches)}")


def _all_recipes(entry: ConfigEntry) -> bool:
    """Whether every row of the entry names a recipe file (not a benchmark script, not nothing)."""
    from ..errors import CookbookError

    try:
        rows = entry.rows
    except CookbookError:
        return False
    return bool(rows) and all(not row.recipe.path.endswith(".sh") for row in rows)
