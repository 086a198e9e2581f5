"""Cookbook -> AgentX data module (the v2 layout of AGENTX_FORMAT.md), compact and checked. No I/O.

Input: a `Cookbook` (cells/model.py), or a decoded public module for `reencode`.
Output: the module object (`write_module_text` prints it); nothing is returned unless every
(cell, point, router, KV tier) decodes back exactly, through `agentx.decode`, to its source blocks
(rendered or derived); otherwise `CookbookError` names the output file and the cell/point.

Compactness (each choice is the smallest one that decodes back exactly):
- a base block is written in full, as `ref` to a block of an earlier cell, or (derived router) as
  `from` a block of the cell's submitted router, each with key overrides, `drop` and an args/env `diff`
  (tried against the `NEAREST` most similar of an exact copy and the `WINDOW` latest distinct earlier
  blocks of the same kind, computed once: the cost is linear in the cells);
- env dicts used by more than one full block go to the top-level `envs` (`envRef`);
- point *i* is a per-block patch of point 0 (`null`, an args/env diff or `{block}`), or `{replace}`.
Deterministic: the same input gives the same object, byte for byte once printed.
"""

from __future__ import annotations

import re

import copy
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..cells.describe import allocated_gpus
from ..cells.model import Cell, Cookbook, Point
from ..cells import ROUTERS, TIERS
from ..cells.variants import block_dict, donors_for, mooncake_donor, point_kv, with_variants
from ..errors import CookbookError
from ..render.model import Block, Deployment
from .decode import Decoder, apply_diff, apply_patch, combinations, derive_block, kv_tiers, routers_of
from .module import check_cell_ids, dumps

Json = dict[str, Any]
SIZE_INDENT = 6  # depth of a block inside a module; sizes compare encodings as the writer prints them
RELATIVE_KEYS = ("args", "env")


# ---- sizes and strict equality ----

def size(value: Any) -> int:
    """Characters the module writer spends on `value` at block depth."""
    return len(dumps(value, SIZE_INDENT))


def same_block(a: Json, b: Json) -> bool:
    """Equal, and env in the same order (the order the commands print)."""
    return a == b and list((a.get("env") or {}).items()) == list((b.get("env") or {}).items())


def same_blocks(a: list[Json], b: list[Json]) -> bool:
    return len(a) == len(b) and all(same_block(x, y) for x, y in zip(a, b))


# ---- relative encodings ----

def _by_flag(args: list[list[Any]]) -> dict[str, list[list[Any]]]:
    out: dict[str, list[list[Any]]] = {}
    for a in args:
        out.setdefault(a[0], []).append(list(a[1:]))
    return out


def args_diff(src: list[list[Any]], dst: list[list[Any]]) -> Json:
    """`diff.args` turning `src` into `dst` when flags are set/replaced/deleted (order is checked by the caller)."""
    s, d = _by_flag(src), _by_flag(dst)
    out: Json = {flag: values[-1] for flag, values in d.items() if s.get(flag) != values}
    out.update({flag: None for flag in s if flag not in d})
    return out


def env_diff(src: Json, dst: Json) -> Json:
    out: Json = {k: v for k, v in dst.items() if k not in src or src[k] != v}
    out.update({k: None for k in src if k not in dst})
    return out


def block_diff(src: Json, dst: Json) -> Json:
    """The `diff` that turns `src`'s args and env into `dst`'s (an empty part left out)."""
    diff = {"args": args_diff(src.get("args") or [], dst.get("args") or []), "env": env_diff(src.get("env") or {}, dst.get("env") or {})}
    return {k: v for k, v in diff.items() if v}


def _relative_forms(head: Json, src: Json, dst: Json) -> list[Json]:
    """Candidate `ref`/`from` entries: keys overridden + args/env diff, or every key overridden."""
    drop = [k for k in src if k not in dst]
    forms = []
    over = {k: v for k, v in dst.items() if k not in RELATIVE_KEYS and (k not in src or src[k] != v)}
    if all(k in dst for k in RELATIVE_KEYS):
        diff = block_diff(src, dst)
        if diff:
            forms.append({**head, **({"drop": drop} if drop else {}), **over, "diff": diff})
    full_over = {k: v for k, v in dst.items() if k not in src or not same_block({k: v}, {k: src[k]})}
    forms.append({**head, **({"drop": drop} if drop else {}), **full_over})
    return forms


def relative(head: Json, src: Json, dst: Json, below: int | None = None) -> Json | None:
    """The smallest `head`-relative entry that decodes to `dst` (and is smaller than `below`), or None."""
    forms = [f for f in _relative_forms(head, src, dst) if below is None or _lower_bound(f) < below]
    for n, form in sorted(((size(f), f) for f in forms), key=lambda t: t[0]):
        if below is not None and n >= below:
            break
        if same_block(derive_block(src, form), dst):
            return form
    return None


def _lower_bound(value: Any) -> int:
    """Compact JSON length: never more than what the module writer prints (cheap pre-filter)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


# ---- point patches ----

def block_patch(base: Json, dst: Json) -> Json | None:
    """Per-block patch: None (same), an args/env diff, or `{block}`."""
    if same_block(base, dst):
        return None
    diff = block_diff(base, dst)
    if diff and same_block(apply_diff(base, diff), dst):
        return diff
    return {"block": dst}


def point_patch(base: list[Json], dst: list[Json]) -> Any:
    """The smallest patch turning the base blocks into `dst`: None, a per-block list, or `{replace}`."""
    if same_blocks(base, dst):
        return None
    options: list[Any] = [{"replace": dst}]
    if len(base) == len(dst):
        per = [block_patch(b, d) for b, d in zip(base, dst)]
        while per and per[-1] is None:
            per.pop()
        options.append(per)
    valid = [o for o in options if same_blocks(apply_patch(base, o), dst)]
    return min(valid, key=size)


# ---- the compactor ----

@dataclass(frozen=True)
class CellSource:
    """One cell's blocks to encode: per router (submitted first), per point, full block dicts."""

    submitted: str
    routers: dict[str, list[list[Json]]]


@dataclass(frozen=True)
class Compacted:
    blocks: list[dict[str, list[Json]]]   # per cell, per router: entries
    patches: list[list[Json]]             # per cell, per point: {router: patch}
    envs: list[Json]


EnvKey = tuple[tuple[str, Any], ...]


def _env_key(env: Json) -> EnvKey | None:
    """A shareable env: non-empty and sorted (`envRef` decodes sorted)."""
    items = tuple(env.items())
    return items if items and list(env) == sorted(env) else None


def _shared_env(entry: Json, shared: dict[EnvKey, int]) -> Json:
    """A full entry with its env as `envRef` when `shared` holds it (in the env's place); else as it is."""
    key = None if "ref" in entry or "from" in entry else _env_key(entry.get("env") or {})
    index = shared.get(key) if key is not None else None
    if index is None:
        return entry
    return {("envRef" if k == "env" else k): (index if k == "env" else v) for k, v in entry.items()}


NEAREST = 6   # source blocks tried per block: the most similar ones
WINDOW = 128  # distinct earlier blocks of a kind scored per block (and an exact copy, wherever it is)
Signature = tuple[str, frozenset[str], frozenset[tuple[str, Any]], frozenset[str]]
Option = tuple[tuple[int, int], Json, Json, Signature]   # (rank for ties, head, source block, its signature)
Relative = tuple[Json, int] | None                        # a block's smallest relative entry, with its size


def _signature(block: Json) -> Signature:
    """The block's text (equality, env order included), and its args, env and other keys as sets (distance)."""
    text = json.dumps(block, ensure_ascii=False, separators=(",", ":"))
    others = frozenset(json.dumps([k, v], separators=(",", ":")) for k, v in block.items() if k not in RELATIVE_KEYS)
    env = block.get("env") or {}
    return (text, frozenset(json.dumps(a, separators=(",", ":")) for a in block.get("args") or []),
            frozenset((k, json.dumps(v)) for k, v in env.items()) if isinstance(env, dict) else frozenset(), others)


@dataclass
class Earlier:
    """The distinct blocks of the cells encoded so far (first occurrence of each text, whose head is
    the smallest), per kind in order, and by text. Ranks keep the order of a scan of every earlier block."""

    by_kind: dict[Any, list[Option]] = field(default_factory=dict)
    by_text: dict[str, Option] = field(default_factory=dict)

    def add(self, head: Json, block: Json, sig: Signature) -> None:
        if sig[0] not in self.by_text:
            option: Option = ((1, len(self.by_text)), head, block, sig)
            self.by_text[sig[0]] = option
            self.by_kind.setdefault(block.get("kind"), []).append(option)

    def similar(self, block: Json, sig: Signature) -> list[Option]:
        """An exact copy, and the `WINDOW` latest distinct blocks of the same kind: linear in the cells."""
        copy_of = self.by_text.get(sig[0])
        return ([copy_of] if copy_of else []) + self.by_kind.get(block.get("kind"), [])[-WINDOW:]


def _nearest(dst: Json, mine: Signature, options: Iterable[Option]) -> list[tuple[Json, Json]]:
    """The `NEAREST` sources of the same kind that differ from `dst` in the fewest args, env entries
    and other keys; of several equal sources only the first (the smallest head), ties in rank order."""
    seen: set[str] = set()
    scored: list[tuple[int, tuple[int, int], Json, Json]] = []
    for rank, head, src, theirs in options:
        if src.get("kind") != dst.get("kind") or theirs[0] in seen:
            continue
        seen.add(theirs[0])
        distance = len(mine[1] ^ theirs[1]) + len(mine[2] ^ theirs[2]) + len(mine[3] ^ theirs[3])
        scored.append((distance, rank, head, src))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [(head, src) for _, _, head, src in scored[:NEAREST]]


def _relatives(sources: list[CellSource]) -> list[dict[str, list[Relative]]]:
    """Per cell, router and base block: the smallest `ref`/`from` entry (and its size) over its nearest
    sources, a `from` the cell's submitted router and a `ref` an earlier cell. Computed once:
    the shared `envs` change only the full entries these compete with."""
    earlier = Earlier()
    out: list[dict[str, list[Relative]]] = []
    for ci, src in enumerate(sources):
        cell: dict[str, list[Relative]] = {}
        sigs = {r: [_signature(b) for b in pts[0]] for r, pts in src.routers.items()}
        submitted = list(zip(src.routers.get(src.submitted, [[]])[0], sigs.get(src.submitted, [])))
        for router in src.routers:
            own: list[Option] = [] if router == src.submitted else [((0, i), {"from": i}, b, sig) for i, (b, sig) in enumerate(submitted)]
            cell[router] = []
            for dst, sig in zip(src.routers[router][0], sigs[router]):
                cell[router].append(_smallest_relative(dst, _nearest(dst, sig, own + earlier.similar(dst, sig))))
        for router in sorted(src.routers, key=lambda r: r != src.submitted):
            for i, (b, sig) in enumerate(zip(src.routers[router][0], sigs[router])):
                earlier.add({"ref": [ci, router, i]}, b, sig)
        out.append(cell)
    return out


def _smallest_relative(dst: Json, nearest: list[tuple[Json, Json]]) -> Relative:
    """The smallest relative entry of `dst` from its nearest sources (the first of equal sizes), if
    smaller than the inline full block (the largest full entry, whatever env is shared)."""
    best: Relative = None
    bound = size(dst)
    for head, source in nearest:
        entry = relative(head, source, dst, below=bound)
        if entry is not None:
            bound = size(entry)
            best = entry, bound
    return best


def _entry(dst: Json, smallest: Relative, shared: dict[EnvKey, int]) -> Json:
    """The smaller of the full entry (its env shared when `shared` holds it) and the relative one (the
    full entry when equal). A full entry keeps its env inline until `compact` has chosen the `envs`."""
    full = copy.deepcopy(dst)
    return smallest[0] if smallest is not None and smallest[1] < size(_shared_env(full, shared)) else full


def _compact_pass(sources: list[CellSource], relatives: list[dict[str, list[Relative]]],
                  shared: dict[EnvKey, int]) -> list[dict[str, list[Json]]]:
    return [{r: [_entry(b, relatives[ci][r][i], shared) for i, b in enumerate(src.routers[r][0])] for r in src.routers}
            for ci, src in enumerate(sources)]


def _next_shared(blocks: list[dict[str, list[Json]]]) -> dict[EnvKey, int]:
    """Every env of more than one full entry, first use first, with its index in `envs`."""
    keys = [_env_key(e.get("env") or {}) for cell in blocks for entries in cell.values() for e in entries
            if "ref" not in e and "from" not in e]
    uses = Counter(key for key in keys if key is not None)
    return {key: i for i, key in enumerate(key for key, n in uses.items() if n > 1)}


def compact(sources: list[CellSource]) -> Compacted:
    """Encode every cell's base blocks and point patches; shared `envs` iterated to a fixed point."""
    relatives = _relatives(sources)
    shared: dict[EnvKey, int] = {}
    blocks = _compact_pass(sources, relatives, shared)
    for _ in range(3):
        nxt = _next_shared(blocks)
        if nxt == shared:
            break
        shared = nxt
        blocks = _compact_pass(sources, relatives, shared)
    final = _next_shared(blocks)
    patches = [[{r: point_patch(pts[0], pts[pi]) for r, pts in src.routers.items()} for pi in range(len(next(iter(src.routers.values()))))]
               for src in sources]
    return Compacted([{r: [_shared_env(e, final) for e in entries] for r, entries in cell.items()} for cell in blocks],
                     patches, [dict(key) for key in final])


# ---- cookbook -> module ----

def _other(router: str) -> str:
    return next(r for r in ROUTERS if r != router)


def expected(cell: Cell, point: Point, router: str, kv: str) -> Deployment:
    """The deployment shown for one selection: the rendered point or its derived variant."""
    if (router, kv) == (cell.router, point_kv(point)):
        return point.deployment
    dep = next((v.deployment for v in cell.variants if (v.router, v.kv, v.point) == (router, kv, point.id)), None)
    if dep is None:
        raise CookbookError.at(cell.id, 0, f"{point.id}.{router}.{kv}", "no such variant (run with_variants first)")
    return dep


def _cell_source(cell: Cell) -> CellSource:
    routers = {r: [[block_dict(b) for b in expected(cell, p, r, point_kv(p)).blocks] for p in cell.points]
               for r in (cell.router, _other(cell.router))}
    return CellSource(submitted=cell.router, routers=routers)


def file_id(name: str, content: str) -> str:
    return f"{name}#{hashlib.sha256(content.encode('utf-8')).hexdigest()[:8]}"


def _router_files(cell: Cell, router: str) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for p in cell.points:
        for tier in TIERS:
            for b in expected(cell, p, router, tier).blocks:
                for name, content in b.files.items():
                    out.setdefault(file_id(name, content), {"name": name, "content": content})
    return out


def _image_status(image: str) -> str:
    ref = image.partition("@")[0]
    return "digest-only" if "@" in image and ":" not in ref.rsplit("/", 1)[-1] else "ok"


def _prov(cell: Cell) -> Json:
    p = cell.provenance
    out: Json = {"sha": p.commit, "recipe": p.recipe}
    if p.run is not None:
        out["run"] = f"{p.run}/attempts/{p.attempt}"
    out["pr"] = str(p.pr) if p.pr is not None else None
    out["status"] = p.status
    if p.date is not None:
        out["date"] = p.date.isoformat()
    return out


def _point(cell: Cell, point: Point, item: int, patch: Json) -> Json:
    out: Json = {"concs": list(point.concs), "item": item}
    if point.override:
        out["override"] = point.override
    if point.recipe != cell.provenance.recipe:
        out["recipe"] = point.recipe
    if point.golden_al:
        out["goldenAL"] = point.golden_al
    out["kv"] = point_kv(point)
    if point.metrics:
        out["metrics"] = dict(point.metrics)
    return _with_patch(out, patch)


def _cell(cell: Cell, cookbook: Cookbook, entries: dict[str, list[Json]], patches: list[Json], first_item: int,
          files: dict[str, dict[str, Json]]) -> Json:
    donors = donors_for(cell, cookbook)
    return {
        "id": cell.id, "hw": cell.hw, "ckpt": cell.model, "label": cell.label, "detail": cell.detail,
        "gpus": allocated_gpus(cell.hw, cell.nodes, cell.gpus), "configKey": cell.config_key, "image": cell.image, "imageStatus": _image_status(cell.image),
        "imageCommit": cell.image_commit, "submitted": cell.router, "setup": [], "disclosures": list(cell.disclosures),
        "kv": {"available": list(TIERS), "unavailable": {}, "hicache": donors.hicache},
        "prov": _prov(cell),
        "points": [_point(cell, p, first_item + i if p.row is None else p.row, patches[i]) for i, p in enumerate(cell.points)],
        "routers": {r: {"install": [], "files": list(files[r]), "blocks": entries[r]} for r in entries},
    }


def _source(cells: list[Cell], repo: str) -> Json:
    prs: Json = {}
    for c in cells:
        p = c.provenance
        if p.pr is not None and str(p.pr) not in prs:
            run = f"{repo.rstrip('/')}/actions/runs/{p.run}" if p.run is not None else None
            prs[str(p.pr)] = {"run": run, "sha": p.commit, "status": p.status}
    return {"repo": repo, "prs": prs}


def all_cells(cookbook: Cookbook) -> list[Cell]:
    return [c for page in cookbook.pages for c in page.cells]


def _items(cells: list[Cell]) -> list[int]:
    """Index of each cell's first point among the points of its config."""
    seen: dict[str, int] = {}
    out = []
    for c in cells:
        out.append(seen.get(c.config_key, 0))
        seen[c.config_key] = out[-1] + len(c.points)
    return out


def encode(cookbook: Cookbook, file: str = "agentx") -> Json:
    """The module object for every cell of `cookbook`; raises unless it decodes back exactly."""
    if not all(c.variants for c in all_cells(cookbook)):
        cookbook = with_variants(cookbook)
    cells = all_cells(cookbook)
    check_cell_ids([c.id for c in cells], file)
    for c in cells:     # the module's cells hold Dynamo and SGLang-router commands of SGLang workers only
        if c.router not in ROUTERS:
            raise CookbookError.usage(f"config {c.config_key}", f"its cells run behind router {c.router!r}, and the AgentX module format "
                                                                f"holds SGLang cells under {' or '.join(ROUTERS)} only: name the SGLang configs "
                                                                "to export with --config KEY, without this one")
    compacted = compact([_cell_source(c) for c in cells])
    items = _items(cells)
    files = [{r: _router_files(c, r) for r in (c.router, _other(c.router))} for c in cells]
    encoded = [_cell(c, cookbook, compacted.blocks[i], compacted.patches[i], items[i], files[i]) for i, c in enumerate(cells)]
    module = {
        "model": cookbook.pages[0].title if len(cookbook.pages) == 1 else cookbook.title,
        "generatedOn": cookbook.generated_on.isoformat() if cookbook.generated_on else None,
        "source": _source(cells, cookbook.repo),
        "hardware": [{"id": hw, "label": hw.upper()} for hw in dict.fromkeys(c.hw for c in cells)],
        "checkpoints": [{"id": m} for m in dict.fromkeys(c.model for c in cells)],
        "envs": compacted.envs,
        "kvMooncake": mooncake_donor(),
        "files": {fid: file for per_router in files for found in per_router.values() for fid, file in found.items()},
        "cells": encoded,
    }
    verify(module, cells, file)
    return module


def _first_difference(got: list[Block], want: tuple[Block, ...]) -> str | None:
    """None when the decoded blocks equal the expected ones, else what differs first."""
    if len(got) != len(want):
        return f"{len(got)} blocks decoded, {len(want)} expected"
    for i, (g, w) in enumerate(zip(got, want)):
        a, b = g.to_json(), w.to_json()
        if a != b or list(g.env.items()) != list(w.env.items()):
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)) or ["env order"]
            return f"block {i} ({w.title}) differs in {', '.join(keys)}"
    return None


def verify(module: Json, cells: list[Cell], file: str) -> None:
    """Decode every (cell, point, router, tier) and compare with the rendered or derived blocks."""
    dec = Decoder(module, file)
    for ci, cell in enumerate(cells):
        for pi, point in enumerate(cell.points):
            for router in (cell.router, _other(cell.router)):
                for kv in TIERS:
                    problem = _first_difference(dec.decode_point(ci, pi, router, kv), expected(cell, point, router, kv).blocks)
                    if problem:
                        raise CookbookError.at(file, 0, f"cells[{ci}] {cell.id} {point.label} {router}/{kv}",
                                               f"does not decode back to its blocks: {problem}")


# ---- public modules: decode, then write again compactly ----

def reencode(module: Json, file: str = "agentx") -> Json:
    """`module` written again by this encoder, same layout; raises unless every combination is unchanged."""
    cells = module["cells"]
    before = combinations(module, file)     # decodes all of it first: a malformed module fails here, located
    dec = Decoder(module, file)
    sources = []
    for ci, c in enumerate(cells):
        with dec.guard(f"cells[{ci}]"):
            routers = {r: [dec.point_dicts(ci, pi, r, None) for pi in range(len(c["points"]))] for r in routers_of(c)}
            sources.append(CellSource(submitted=c["submitted"], routers=routers))
    with dec.guard("cells"):
        compacted = compact(sources)
    out = {k: v for k, v in module.items() if k != "cells"}
    if compacted.envs or "envs" in module:
        out = _with_key(out, "envs", compacted.envs, before="kvMooncake")
    out["cells"] = [_recell(c, compacted.blocks[i], compacted.patches[i]) for i, c in enumerate(cells)]
    after = combinations(out, file)
    if before != after:
        bad = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
        where = before[bad] if bad < len(before) else after[bad]
        raise CookbookError.at(file, 0, f"{where['cell']} {where['point']} {where['router']}/{where['kv']}",
                               "re-encoded module decodes differently")
    return out


def _with_key(data: Json, key: str, value: Any, before: str) -> Json:
    """`data` with `key` set to `value`: in its place, else just before `before` (else last)."""
    if key in data or before not in data:
        return {**data, key: value}
    items, at = list(data.items()), list(data).index(before)
    return dict(items[:at] + [(key, value)] + items[at:])


def _recell(cell: Json, entries: dict[str, list[Json]], patches: list[Json]) -> Json:
    out = copy.deepcopy(cell)
    out["routers"] = {r: {**cell["routers"][r], "blocks": entries[r]} for r in cell["routers"]}
    out["points"] = [_with_patch(p, patches[i]) for i, p in enumerate(cell["points"])]
    return out


def _with_patch(point: Json, patch: Json) -> Json:
    """`point` with the routers' patches that are not null (no `patch` key when none is)."""
    patch = {r: v for r, v in patch.items() if v is not None}
    out = {k: v for k, v in point.items() if k != "patch" or patch}
    if patch:
        out["patch"] = patch
    return out


# ---- reporting ----

def expanded_size(module: Json, file: str = "agentx") -> int:
    """Characters of every combination's decoded blocks, written the way the module writer prints blocks."""
    dec = Decoder(module, file)
    total = 0
    for ci, cell in enumerate(module["cells"]):
        for pi, point in enumerate(cell.get("points") or []):
            for router in routers_of(cell):
                for kv in kv_tiers(cell, point):
                    total += len(dumps(dec.point_dicts(ci, pi, router, kv), 0))
    return total


def header_lines(cookbook: Cookbook) -> list[str]:
    """The three comment lines of an exported module (no clock: the manifest's date only)."""
    prs = sorted({c.provenance.pr for c in all_cells(cookbook) if c.provenance.pr is not None})
    repo = cookbook.repo.rstrip("/").split("github.com/")[-1]
    return [
        f"// GENERATED by cookbookgen from {cookbook.title} — do not edit by hand.",
        f"// Launch commands of SemiAnalysis InferenceX AgentX recipes ({repo} PRs {', '.join(f'#{p}' for p in prs) or 'none'}), "
        "with SA-specific settings removed.",
        "// Every point, router and KV tier decodes back exactly to `cookbookgen render` or its checked derived variant.",
    ]


def module_path(cookbook: Cookbook) -> str:
    """`agentx/<org>/<model>.jsx` for the cookbook's first page."""
    model = cookbook.pages[0].model if cookbook.pages else "cookbook/cookbook"
    org, _, name = model.rpartition("/")
    return f"agentx/{_segment(org or 'models')}/{_segment(name)}.jsx"


def _segment(text: str) -> str:
    """One safe path segment from a name: lower case, `[a-z0-9._-]` only, never `.`/`..` or hidden."""
    safe = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip(".-")
    return safe or "model"


