"""Decode an AgentX module into the commands the SGLang cookbook explorer shows. No I/O.

A Python reimplementation of the decoder in sgl-project/sglang `docs/src/snippets/_agentx.jsx`
(component 4661ab2b, described in AGENTX_FORMAT.md section 3): `ref`/`from`/`diff` block
materialization, per-point patches, the KV-tier transform, worker argument order, block titles,
"where" prose, placeholders and the "Copy all" text. On top of the explorer it gives a
`copy_all_runnable` variant that is valid bash, and it raises `CookbookError` for dangling or
cyclic references instead of crashing.
"""

from __future__ import annotations

import copy
import json
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, TypeGuard


from ..cells import TIERS
from ..cells.explorer import DEFAULT_FILE, block_text, explorer_texts, kv_transform, sort_args, to_blocks
from ..errors import CookbookError, key_join
from ..render.model import Block
from ..render.shell import format_block, heredoc
from ..render.tables import describe_placeholder

COUNT_KEYS = ("workers", "nodes_per_worker", "count", "count_nodes")
ENCODING_KEYS = ("from", "diff", "drop", "ref")
COPY_ALL_HEAD = "# Set per node before running the commands below"
_PLACEHOLDER = re.compile(r"\$([A-Z][A-Z0-9_]*)")

Json = dict[str, Any]


# ---- block algebra (explorer section 1) ----

def _diff_args(args: list[list[Any]], da: Json) -> list[list[Any]]:
    kept = [a for a in args if not (a[0] in da and da[a[0]] is None)]
    out = [[a[0], *da[a[0]]] if a[0] in da else a for a in kept]
    names = {a[0] for a in out}
    out.extend([k, *v] for k, v in da.items() if v is not None and k not in names)
    return out


def _diff_env(env: Json, de: Json) -> Json:
    out = {k: v for k, v in env.items() if not (k in de and de[k] is None)}
    out.update({k: v for k, v in de.items() if v is not None})
    return dict(sorted(out.items()))


def apply_diff(block: Json, diff: Json | None) -> Json:
    """A new block: `diff` None copies, `{block}` replaces, else args/env are edited (section 3.2)."""
    if diff is None:
        return copy.deepcopy(block)
    if diff.get("block") is not None:
        return copy.deepcopy(diff["block"])
    out = copy.deepcopy(block)
    args = _diff_args(out.get("args") or [], diff.get("args") or {})
    out["args"] = sort_args(args) if out.get("kind") == "worker" else args
    out["env"] = _diff_env(out.get("env") or {}, diff.get("env") or {})
    return out


def apply_patch(base: list[Json], patch: Any) -> list[Json]:
    """Point *i* blocks: patch None copies, `{replace}` swaps the list, a list diffs block by block."""
    if not patch:
        return copy.deepcopy(base)
    if not isinstance(patch, list):
        return copy.deepcopy(patch["replace"])
    return [apply_diff(b, patch[i] if i < len(patch) else None) for i, b in enumerate(base)]


def derive_block(target: Json, entry: Json) -> Json:
    """A `ref`/`from` entry applied to the block it points at: drop, override keys, then diff."""
    drop = entry.get("drop") or []
    out = {k: v for k, v in copy.deepcopy(target).items() if k not in drop}
    out.update({k: v for k, v in entry.items() if k not in ENCODING_KEYS})
    return apply_diff(out, entry.get("diff"))


# ---- materialization with reference checks ----

def _line_of_cell(module: Json, key_path: str) -> int:
    """The line of the cell a key path starts in, when the module was read from its text."""
    m = re.match(r"cells\[(\d+)\]", key_path)
    lines = getattr(module, "cell_lines", ())
    return lines[int(m.group(1))] if m and int(m.group(1)) < len(lines) else 0


MALFORMED = (TypeError, AttributeError, KeyError, IndexError, ValueError)   # what raw access to bad data raises


ListKey = tuple[int, str]   # (cell index, router): one materialized block list


@dataclass
class Decoder:
    """Decodes one module; memoises materialized (cell, router) block lists."""

    module: Json
    file: str = DEFAULT_FILE
    memo: dict[ListKey, list[Json]] = field(default_factory=dict)

    def fail(self, key_path: str, message: str) -> CookbookError:
        return CookbookError.at(self.file, _line_of_cell(self.module, key_path), key_path, message)

    @contextmanager
    def guard(self, key_path: str) -> Iterator[None]:
        """A published module is someone else's file: a value of an unexpected type or a missing key
        anywhere under `key_path` is one located problem, not a traceback."""
        try:
            yield
        except MALFORMED as exc:
            detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise self.fail(key_path, f"malformed module data: {detail}") from None

    def item(self, items: list[Json], index: Any, path: str, what: str, holder: str) -> Json:
        """`items[index]`, or a located problem: "no <what> 7 (<holder> has 3)"."""
        if not _is_whole(index) or not 0 <= index < len(items):
            raise self.fail(path, f"no {what} {index!r} ({holder} has {len(items)})")
        return items[index]

    def cell(self, index: Any, key_path: str) -> Json:
        return self.item(self.module["cells"], index, key_path, "cell", "module")

    def router_blocks(self, ci: int, router: Any, key_path: str) -> list[Json]:
        routers = self.cell(ci, key_path).get("routers") or {}
        if not isinstance(router, str) or router not in routers:
            raise self.fail(key_path, f"cell {ci} has no router {router!r}")
        return routers[router].get("blocks") or []

    def materialize(self, ci: int, router: Any, key_path: str = "") -> list[Json]:
        """Full blocks of point 0 of cell `ci` under `router` (section 3.1). The lists a `ref`/`from`
        points at are materialized first, from an explicit stack of the lists waiting for them (no
        recursion, whatever the length of a chain); a list met again on that stack is a cycle."""
        self.router_blocks(ci, router, key_path or key_join("cells", ci))
        if (ci, router) in self.memo:
            return self.memo[(ci, router)]
        waiting: list[ListKey] = [(ci, router)]
        on_stack = set(waiting)
        while waiting:
            key = waiting[-1]
            needed = next(((dep, path) for dep, path in self.references(*key) if dep not in self.memo), None)
            if needed is None:
                self.memo[key] = self.build(*key)
                on_stack.discard(waiting.pop())
            elif needed[0] in on_stack:
                raise self.fail(needed[1], "reference cycle: " + _cycle_text(waiting[waiting.index(needed[0]):]))
            else:
                waiting.append(needed[0])
                on_stack.add(needed[0])
        return self.memo[(ci, router)]

    def references(self, ci: int, router: str) -> Iterator[tuple[ListKey, str]]:
        """The block lists the entries of (cell, router) point at, each with the key path of its entry."""
        prefix = f"{key_join('cells', ci)}.routers.{router}.blocks"
        for i, entry in enumerate(self.router_blocks(ci, router, key_join("cells", ci))):
            if entry.get("ref"):
                ref, path = entry["ref"], key_join(key_join(prefix, i), "ref")
                if not isinstance(ref, list) or len(ref) != 3:
                    raise self.fail(path, "must be [cellIndex, router, blockIndex]")
                self.router_blocks(ref[0], ref[1], path)
                yield (ref[0], ref[1]), path
            elif entry.get("from") is not None:
                path = key_join(key_join(prefix, i), "from")
                submitted = self.cell(ci, path).get("submitted")
                self.router_blocks(ci, submitted, path)   # a string, then
                yield (ci, str(submitted)), path

    def build(self, ci: int, router: str) -> list[Json]:
        """The blocks of (cell, router), once every list its entries point at is in the memo."""
        prefix = f"{key_join('cells', ci)}.routers.{router}.blocks"
        entries = self.router_blocks(ci, router, key_join("cells", ci))
        paths = [key_join(prefix, i) for i in range(len(entries))]
        out = [self.entry(ci, e, path) for e, path in zip(entries, paths)]
        return [self.env_ref(b, path) for b, path in zip(out, paths)]

    def entry(self, ci: int, entry: Json, path: str) -> Json:
        if entry.get("ref"):
            ref = entry["ref"]
            return derive_block(self.item(self.memo[(ref[0], ref[1])], ref[2], key_join(path, "ref"), "block", "the referenced list"), entry)
        if entry.get("from") is not None:
            target = self.memo[(ci, self.module["cells"][ci]["submitted"])]
            return derive_block(self.item(target, entry["from"], key_join(path, "from"), "block", "the referenced list"), entry)
        return copy.deepcopy(entry)

    def env_ref(self, block: Json, path: str) -> Json:
        """`envRef` replaced by the sorted shared env it names."""
        if "envRef" not in block:
            return block
        envs = self.module.get("envs") or []
        if block["envRef"] is not None:
            self.item(envs, block["envRef"], key_join(path, "envRef"), "env", "module")
        out = {k: v for k, v in block.items() if k != "envRef"}
        out["env"] = dict(sorted(envs[block["envRef"]].items()))
        return out

    def point_dicts(self, ci: int, pi: int, router: str, kv: str | None) -> list[Json]:
        """Blocks of point `pi` under `router` and KV tier `kv` (None = the measured tier), as dicts."""
        cell = self.cell(ci, key_join("cells", ci))
        point = self.point(cell, ci, pi)
        base = self.materialize(ci, router, key_join("cells", ci))
        path = f"cells[{ci}].points[{pi}].patch.{router}"
        measured = copy.deepcopy(base) if pi == 0 else self.patched(base, point, router, path)
        source = point_kv(point)
        return kv_transform(measured, source, kv or source, cell, self.module, router, self.file)

    def patched(self, base: list[Json], point: Json, router: str, path: str) -> list[Json]:
        """Point *i* blocks; `envRef` in replacement blocks is resolved too (the explorer would drop it)."""
        patch = (point.get("patch") or {}).get(router)
        replace = isinstance(patch, dict) and isinstance(patch.get("replace"), list)
        if patch and not isinstance(patch, list) and not replace:
            raise self.fail(path, "a patch must be null, {replace: [blocks]} or a list of per-block diffs")
        return [self.env_ref(b, key_join(path, i)) for i, b in enumerate(apply_patch(base, patch))]

    def point(self, cell: Json, ci: int, pi: int) -> Json:
        points: list[Json] = cell.get("points") or []
        if not 0 <= pi < len(points):
            raise self.fail(key_join(key_join("cells", ci), "points"), f"no point {pi} (cell has {len(points)})")
        point, path = points[pi], f"cells[{ci}].points[{pi}]"
        concs = point.get("concs")
        if not isinstance(concs, list) or not concs or not all(_is_whole(c) and c >= 1 for c in concs):
            raise self.fail(f"{path}.concs", f"must be a list of whole numbers >= 1 (received {concs!r})")
        tiers = [*((cell.get("kv") or {}).get("available") or []), point.get("kv")]
        for where, tier in [*((f"cells[{ci}].kv.available[{j}]", t) for j, t in enumerate(tiers[:-1])), (f"{path}.kv", tiers[-1])]:
            if tier is not None and tier not in TIERS:
                raise self.fail(where, f"unknown KV tier {tier!r}; expected one of: {', '.join(TIERS)}")
        return point

    def router_files(self, ci: int, router: str) -> list[Json]:
        ids = self.cell(ci, key_join("cells", ci))["routers"][router].get("files") or []
        files = self.module.get("files") or {}
        for i, fid in enumerate(ids):
            if fid not in files:
                raise self.fail(f"cells[{ci}].routers.{router}.files[{i}]", f"no file {fid!r} in `files`")
        return [files[fid] for fid in ids]

    def check_counts(self, blocks: list[Json], path: str) -> None:
        """Counts are whole numbers >= 1: `true` is not 1, and a negative count is not a deployment."""
        for i, block in enumerate(blocks):
            for key in COUNT_KEYS:
                value = block.get(key)
                if value is not None and not (_is_whole(value) and value >= 1):
                    raise self.fail(f"{key_join(path, i)}.{key}", f"must be a whole number >= 1 (received {value!r})")

    def decode_point(self, ci: int, pi: int, router: str, kv: str | None) -> list[Block]:
        with self.guard(f"cells[{ci}].points[{pi}]"):
            dicts = self.point_dicts(ci, pi, router, kv)
            self.check_counts(dicts, f"cells[{ci}].routers.{router}.blocks")
            return to_blocks(dicts, router, self.router_files(ci, router), self.file, f"cells[{ci}].routers.{router}.blocks")


def _cycle_text(lists: list[ListKey], shown: int = 6) -> str:
    """`cells[0].routers.sglang -> cells[1].routers.sglang -> cells[0].routers.sglang`; a long cycle
    shows its first lists and how many there are."""
    names = [f"cells[{ci}].routers.{router}" for ci, router in lists]
    more = [f"... ({len(names)} lists)"] if len(names) > shown else []
    return " -> ".join([*names[:shown], *more, names[0]])


def _is_whole(value: Any) -> TypeGuard[int]:
    """An int that is not a bool (JSON `true` is a Python int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def point_kv(point: Json) -> str:
    """The tier a point was measured with (`none` when the point does not say)."""
    return point.get("kv") or "none"


# ---- placeholders and "Copy all" (sections 3.8, 3.9) ----

def placeholder_text(name: str) -> str:
    """The description of a `$NAME` placeholder, or "" when the explorer does not know it."""
    return describe_placeholder(explorer_texts(), name) or ""


def used_placeholders(text: str) -> list[str]:
    """Described `$NAME` placeholders in `text`, in first-use order."""
    names = dict.fromkeys(_PLACEHOLDER.findall(text))
    return [n for n in names if placeholder_text(n)]


def _files_json(files: list[Json]) -> str:
    return json.dumps(files, ensure_ascii=False, separators=(",", ":"))


def _sections(blocks: list[Block]) -> str:
    return "\n\n".join(f"# {b.title}\n{block_text(b)}" for b in blocks)


def copy_all_text(blocks: list[Block], files: list[Json]) -> str:
    """The explorer's "Copy all": `export NAME=<description>` lines, then every block under `# Title`."""
    body = _sections(blocks)
    names = used_placeholders(body + _files_json(files))
    if not names:
        return body
    exports = "\n".join(f"export {n}=<{placeholder_text(n)}>" for n in names)
    return f"{COPY_ALL_HEAD}\n{exports}\n\n{body}"


def _runnable_export(name: str) -> str:
    """`export NAME="${NAME:?set to: <description>}"`: valid bash that stops with the description if unset."""
    message = re.sub(r"([\\\"$`'}])", r"\\\1", f"set to: {placeholder_text(name)}")
    return f'export {name}="${{{name}:?{message}}}"'


def copy_all_runnable(blocks: list[Block], files: list[Json]) -> str:
    """A bash-valid "Copy all": required-variable exports, config files written before their block."""
    names = used_placeholders(_sections(blocks) + _files_json(files))
    sections = [COPY_ALL_HEAD + "\n" + "\n".join(_runnable_export(n) for n in names)] if names else []
    texts = [block_text(b) for b in blocks]
    loose = [f for f in files if not any(f["name"] in t for t in texts)]
    sections += ["\n".join([f"# {f['name']}", *heredoc(f["name"], f["content"])]) for f in loose]
    written: set[str] = set()
    for block, text in zip(blocks, texts):
        lines = [f"# {block.title}"]
        for fname, content in block.files.items():
            if fname not in written:
                lines.extend(heredoc(fname, content))  # $PLACEHOLDERS expand
                written.add(fname)
        sections.append("\n".join([*lines, format_block(block, with_files=False)]))
    return "\n\n".join(sections)


# ---- status and combinations (section 3.10) ----

def status_of(cell: Json, point: Json, router: str, kv: str) -> str:
    """What the explorer badges: the measured status (v1 per-point `status`, v2 `cell.prov.status`) only
    for the submitted router and measured tier."""
    if router == cell.get("submitted") and kv == point_kv(point):
        return point.get("status") or (cell.get("prov") or {}).get("status") or "unknown"
    return "derived"


def routers_of(cell: Json) -> list[str]:
    """The cell's routers, submitted first."""
    submitted = cell.get("submitted")
    rest = [r for r in cell.get("routers") or {} if r != submitted]
    return ([submitted] if submitted in (cell.get("routers") or {}) else []) + rest


def kv_tiers(cell: Json, point: Json) -> list[str]:
    """Selectable tiers: `cell.kv.available` (else `none`), plus the measured tier if missing."""
    available = (cell.get("kv") or {}).get("available") or ["none"]
    return list(dict.fromkeys([*available, point_kv(point)]))


def point_label(point: Json) -> str:
    return f"c{point['concs'][0]}"


def _combination(dec: Decoder, ci: int, pi: int, router: str, kv: str) -> Json:
    cell = dec.module["cells"][ci]
    point = cell["points"][pi]
    blocks = dec.decode_point(ci, pi, router, kv)
    files = dec.router_files(ci, router)
    return {
        "cell": cell["id"], "point": point_label(point), "router": router, "kv": kv,
        "status": status_of(cell, point, router, kv),
        "blocks": [b.to_json() for b in blocks],
        "copy_all": copy_all_text(blocks, files),
        "copy_all_runnable": copy_all_runnable(blocks, files),
    }


def combinations(module: Json, file: str = DEFAULT_FILE) -> list[Json]:
    """Every (cell, point, router, kv tier) the explorer can show, decoded."""
    dec = Decoder(module, file)
    out: list[Json] = []
    for ci, cell in enumerate(module["cells"]):
        with dec.guard(f"cells[{ci}]"):
            for pi, point in enumerate(cell.get("points") or []):
                for router in routers_of(cell):
                    out.extend(_combination(dec, ci, pi, router, kv) for kv in kv_tiers(cell, point))
    return out
