"""Stage 2 of the diff (pair): pair a cookbook's points with a checkout's points (master rows x concurrencies). No I/O.

A published point is matched, first rule that applies:
- by checkout point id (`tp4/c16`) when the artifact records it (our JSON, our site);
- by recipe override (`override_tp8`), and recipe file when both name one (AgentX modules);
- by recipe file alone (modules with one YAML per point, single-node scripts);
- by concurrency alone.
Without a point id or an override, a point that names its master row (`item` of an AgentX module: the
row's index in the master config's search space) is matched within that row only.
Then each of its concurrencies must be one of the matched rows' concurrencies. A concurrency the
checkout does not have is `extra in the cookbook`, and so is one that two rows still serve
(ambiguous); a checkout point no published point claims is `missing from the cookbook`. All are mismatches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..recipes.workspace import ResolvedPoint
from .expect import entry_where
from .model import EXTRA, MISSING, Finding, PublishedPoint, Variant

_E2E = "inferencex-e2e/"
_RECIPES = ("recipes/", "benchmarks/multi_node/srt-slurm-recipes/")


@dataclass(frozen=True)
class Pair:
    published: PublishedPoint
    resolved: ResolvedPoint


def same_recipe(a: str, b: str) -> bool:
    return _normal_recipe(a) == _normal_recipe(b)


def _normal_recipe(path: str) -> str:
    path = path.split(":", 1)[0].strip().removeprefix("./").removeprefix(_E2E)
    return _RECIPES[1] + path[len(_RECIPES[0]):] if path.startswith(_RECIPES[0]) else path


def candidates(point: PublishedPoint, resolved: Sequence[ResolvedPoint], by_id: dict[str, list[ResolvedPoint]]) -> list[ResolvedPoint]:
    """The checkout points `point` may be, by the first rule above that applies (`by_id`: `resolved` by point id)."""
    if point.point_id:
        return by_id.get(point.point_id, [])
    if point.override:
        hits = [r for r in resolved if r.recipe.selector == point.override]
        return [r for r in hits if same_recipe(r.recipe_path, point.recipe)] if point.recipe else hits
    hits = [r for r in resolved if same_recipe(r.recipe_path, point.recipe)] if point.recipe else list(resolved)
    return hits if point.item is None else [r for r in hits if r.row is not None and r.row.index == point.item]


def pair_config(config: str, published: Sequence[PublishedPoint], resolved: Sequence[ResolvedPoint]) -> tuple[list[Pair], list[Finding]]:
    """Pairs for every (published point, concurrency) the checkout has, and a finding for each pairing outcome."""
    pairs: list[Pair] = []
    findings: list[Finding] = []
    claimed: set[str] = set()
    by_id: dict[str, list[ResolvedPoint]] = {}
    for r in resolved:
        by_id.setdefault(r.point_id, []).append(r)
    for point in published:
        cands = candidates(point, resolved, by_id)
        for conc in point.concs or (None,):
            hits = [r for r in cands if conc is None or r.conc == conc]
            hit = hits[0] if len(hits) == 1 and hits[0].point_id not in claimed else None
            if hit is None:
                findings.append(_extra(config, point, conc, hits, resolved))
                continue
            claimed.add(hit.point_id)
            pairs.append(Pair(point, hit))
            findings.append(Finding(config, hit.point_id, "point", "point", point.cell, "match", detail="paired",
                                    recipe=hit.recipe.label, cookbook=_shown(point, conc)))
    for r in resolved:
        if r.point_id not in claimed:
            findings.append(Finding(config, r.point_id, "point", "point", r.point_id, "mismatch", detail=MISSING,
                                    recipe=r.recipe.label, reason="the checkout benchmarks this point; the cookbook does not show it",
                                    where=entry_where(r, r.row.path if r.row else None)))
    return pairs, findings


def _shown(point: PublishedPoint, conc: int | None) -> str:
    return f"{point.cell} c{conc}" if conc is not None else point.cell


def _extra(config: str, point: PublishedPoint, conc: int | None, hits: Sequence[ResolvedPoint], resolved: Sequence[ResolvedPoint]) -> Finding:
    via = f" ({point.override})" if point.override else ""
    served = [f"c{r.conc}" for r in resolved if point.override and r.recipe.selector == point.override]
    used = sorted({str(r.recipe.selector) for r in resolved if r.conc == conc and r.recipe.selector})
    if len(hits) == 1:
        reason = "another cookbook point already claims it"
    elif hits:
        reason = f"ambiguous: {len(hits)} master rows serve this concurrency ({', '.join(r.point_id for r in hits)}) and the point names none of them"
    elif point.item is not None and not point.override and not any(r.row is not None and r.row.index == point.item for r in resolved):
        reason = f"the master config has no row {point.item} (the point's item){via}"
    elif point.item is not None and not point.override and any(r.conc == conc for r in resolved):
        reason = f"master row {point.item} (the point's item) does not serve this concurrency{via}"
    elif point.override and used:
        reason = (f"wrong override label: {point.override} " + (f"serves {', '.join(served)}" if served else "is not a variant any master row uses")
                  + f"; c{conc} is served by {', '.join(used)}")
    elif point.override and not served:
        reason = f"{point.override} is not a variant any master row uses, and no master row serves this concurrency"
    else:
        reason = f"no master row of the checkout serves this concurrency{via}"
    return Finding(config, f"c{conc}" if conc is not None else point.label, "point", "point", point.cell, "mismatch",
                   detail=EXTRA, cookbook=_shown(point, conc) + via, reason=reason)


def variant_findings(variants: Sequence[Variant]) -> list[Finding]:
    return [Finding(v.config, v.point, "cell", "variant", f"{v.router}/{v.kv}", "derived", detail="never run; not compared",
                    cookbook=v.cell, reason="a router or KV-tier variant of a measured point (status derived)") for v in variants]
