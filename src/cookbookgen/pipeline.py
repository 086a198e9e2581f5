"""One call from a checkout and a point name to its Deployment: the stages chained. I/O only
through `recipes.workspace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .policy.rules import Policy
from .recipes.master import check_framework, find_point
from .recipes.workspace import ResolvedPoint, Workspace, model_id
from .render.deploy import RenderContext, RunMemo, render
from .render.model import Deployment


@dataclass(frozen=True)
class RenderedPoint:
    point: ResolvedPoint
    deployment: Deployment


def render_point(point: ResolvedPoint, policy: Policy, settings: bool = True, memo: RunMemo | None = None) -> Deployment:
    """The point's deployment; without `settings`, it lists no settings (`RenderContext.settings`).
    `memo`: shared with the other points of its config (`RunMemo`)."""
    cluster = point.entry.cluster if point.entry else None
    image = point.entry.image if point.entry else None
    return render(point.recipe, point.typed, RenderContext(model_id(point), policy, cluster, image or None, settings, memo or RunMemo()))


def render_config_point(ws: Workspace, policy: Policy, key: str, point: str,
                        sets: Sequence[str] = (), unsets: Sequence[str] = ()) -> RenderedPoint:
    entry = ws.entry(key)
    check_framework(entry)
    row, conc = find_point(entry, point)
    resolved = ws.point(entry, row, conc, sets, unsets)
    return RenderedPoint(resolved, render_point(resolved, policy))


def render_all_points(ws: Workspace, policy: Policy, key: str, settings: bool = True) -> list[RenderedPoint]:
    entry = ws.entry(key)
    check_framework(entry)
    out = []
    memo = RunMemo()        # the points of the config share what their recipes share
    ws.prefetch(entry)
    for row in entry.rows:
        for conc in row.concs:
            resolved = ws.point(entry, row, conc)
            out.append(RenderedPoint(resolved, render_point(resolved, policy, settings, memo)))
    return out
