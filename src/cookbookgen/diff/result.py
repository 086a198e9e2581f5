"""Stage 5 of the diff (report input): what a run found, as the reports read it: every finding, each cell's
state, and the point runs a config's section is made of. No I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .model import CellState, Finding, Tally
from .pairing import Pair


@dataclass(frozen=True)
class DiffResult:
    cookbook: str
    kind: str
    checkout: str
    configs: tuple[str, ...]
    findings: tuple[Finding, ...]
    cells: tuple[CellState, ...] = ()
    notes: tuple[str, ...] = ()
    pairs: tuple[Pair, ...] = field(default=(), compare=False, repr=False)

    @property
    def tally(self) -> Tally:
        return Tally(self.cells, len(self.pairs), Counter(f.cls for f in self.findings))


PointRun = tuple[str | None, list[Finding]]
"""Findings of one compared point, which are all that point's whatever point they name (they may be
shared with an earlier point of the config: `compare.point_findings`); or, with None, findings that
each name their own point (pairing, variants)."""
