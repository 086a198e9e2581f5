"""The cookbook manifest: which configs a cookbook shows and their provenance. I/O: `read_manifest`.

```yaml
title: DeepSeek cookbook
source: inferencex            # InferenceX-layout checkout, relative to this file
policy: policy.yaml           # optional extra policy rules, relative to this file
pages:
  - model: deepseek-ai/DeepSeek-V4.1-Flash
    configs:
      - key: <config key>
        pr: 4180                # or null when unknown
        commit: <7..40 hex>     # PR head the recipe was read at
        run: 38911006463        # pinned run (`/use <run_id>`), or null while in progress
        attempt: 1
        merged: false
        date: 2026-10-16
        metrics: {c16: {throughput_per_gpu: 29122.0, p90_e2el_s: 6.862}}
```
Status: no run -> in-progress; run, not merged -> verified-pr; run and merged -> verified.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ..errors import CookbookError, schema_messages
from ..recipes.load import Document, KeyPath, read_yaml_file

Status = Literal["verified", "verified-pr", "in-progress", "derived"]


_HEX_COMMIT = re.compile("[0-9a-f]{7,40}")


def _hex_commit(value: str) -> str:
    text = str(value)
    if _HEX_COMMIT.fullmatch(text) is None:
        raise ValueError(f"a commit is 7 to 40 lower-case hex digits, got {text!r}")
    return text


class ConfigSource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    pr: Annotated[int, Field(strict=True, ge=1)] | None = None
    commit: Annotated[str, AfterValidator(_hex_commit)]
    run: Annotated[int, Field(strict=True, ge=1)] | None = None
    attempt: int = Field(default=1, ge=1)
    merged: bool = False
    date: dt.date | None = None
    metrics: dict[str, dict[str, float]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    dashboard: str | None = None

    @property
    def status(self) -> Status:
        if self.run is None:
            return "in-progress"
        return "verified" if self.merged else "verified-pr"


class PageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    title: str | None = None
    configs: list[ConfigSource]


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    source: str
    policy: str | None = None
    repo: str = "https://github.com/SemiAnalysisAI/InferenceX"
    generated_on: dt.date | None = None
    pages: list[PageSpec]


def read_manifest(path: Path) -> tuple[Manifest, Document]:
    doc = read_yaml_file(path)
    try:
        manifest = Manifest.model_validate(doc.data)
    except ValidationError as exc:
        raise CookbookError([doc.problem(loc, message) for loc, message in schema_messages(exc.errors())]) from None
    seen: dict[str, KeyPath] = {}
    for p, page in enumerate(manifest.pages):
        for c, config in enumerate(page.configs):
            where = ("pages", p, "configs", c, "key")
            if config.key in seen:
                raise doc.error(where, f"config {config.key!r} listed twice (first at line {doc.line_of(seen[config.key])})")
            seen[config.key] = where
    return manifest, doc


def source_root(manifest_path: Path, manifest: Manifest, doc: Document) -> Path:
    try:
        root = (manifest_path.parent / manifest.source).resolve()
        found = root.is_dir()
    except OSError as exc:     # a name too long, a loop of links...
        raise doc.error(("source",), f"checkout {manifest.source!r} cannot be read: {exc.strerror}") from None
    if not found:
        raise doc.error(("source",), f"checkout not found: {root}")
    return root
