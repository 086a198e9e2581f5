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
Status: no run -> in-progress; run, not merged -> verified-pr; run and merged -> verified. A build of a
whole checkout without a manifest makes its sources from the perf-changelog (`ChangelogSource`):
status `changelog` (merged, no pinned run), the checkout's commit when it is a git work tree.

Values that become file names, nav titles or URLs are checked here, first, each with its line:
- `title` (the site name), a page's `title` (its nav entry) and a config `key` (its anchors and
  script names): 1 to 200 characters, no control characters;
- a page's `model`: a Hugging Face id (`org/name`, each part 1 to 96 letters, digits, `.`, `_`, `-`,
  starting with a letter or digit); its name gives the page folder, so no two pages may share one,
  nor two config keys their anchors;
- `repo` and `dashboard`: http(s) URLs of at most 500 characters without spaces;
- every metric: a finite number of magnitude below 1e15 (the tables, the charts' axes, cookbook.json).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path
from typing import Annotated, Callable, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ..errors import CookbookError, schema_messages
from ..recipes.load import Document, KeyPath, read_yaml_file

Status = Literal["verified", "verified-pr", "in-progress", "derived", "changelog"]


_HEX_COMMIT = re.compile("[0-9a-f]{7,40}")
_MODEL_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f]{1,492}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
NAME_MAX = 200
METRIC_MAX = 1e15      # a metric's magnitude: the charts' axes compute powers of ten above it


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 60 else f"{value[:60]!r}... ({len(value)} characters)"


def _name(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    if len(value) > NAME_MAX:
        raise ValueError(f"at most {NAME_MAX} characters, got {len(value)}")
    bad = _CONTROL.search(value)
    if bad:
        raise ValueError(f"control character {bad.group(0)!r} is not allowed")
    return value


def _matching(pattern: re.Pattern[str], what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if pattern.fullmatch(value) is None:
            raise ValueError(f"{what}, got {_shown(value)}")
        return value
    return check


def _metric(value: float) -> float:
    """A measured value the tables, the charts' axes and cookbook.json can show."""
    if not math.isfinite(value) or abs(value) >= METRIC_MAX:
        raise ValueError(f"expected a finite number of magnitude below 1e15, got {value!r}")
    return value


Name = Annotated[str, AfterValidator(_name)]
Metric = Annotated[float, AfterValidator(_metric)]
Url = Annotated[str, AfterValidator(_matching(_URL, "expected an http(s) URL of at most 500 characters without spaces"))]
ModelId = Annotated[str, AfterValidator(_matching(_MODEL_ID, "expected a Hugging Face id org/name: each part 1 to 96 letters, "
                                                             "digits, '.', '_' or '-', starting with a letter or digit"))]


class ConfigSource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: Name
    pr: Annotated[int, Field(strict=True, ge=1)] | None = None
    commit: Annotated[str, AfterValidator(_matching(_HEX_COMMIT, "a commit is 7 to 40 lower-case hex digits"))]
    run: Annotated[int, Field(strict=True, ge=1)] | None = None
    attempt: int = Field(default=1, ge=1)
    merged: bool = False
    date: dt.date | None = None
    metrics: dict[str, dict[str, Metric]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    dashboard: Url | None = None

    @property
    def status(self) -> Status:
        if self.run is None:
            return "in-progress"
        return "verified" if self.merged else "verified-pr"


class HistoryItem(BaseModel):
    """One perf-changelog entry that names a config: its PR, the day git says it was committed, what it says."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pr: int | None
    pr_url: str | None
    date: dt.date | None
    description: tuple[str, ...]


class ChangelogSource(ConfigSource):
    """A config of a whole-checkout build: PR and date from the latest perf-changelog entry that names
    it, the commit from git when the checkout is a work tree (else none), no run: nothing invented."""

    commit: str | None = None      # type: ignore[assignment]
    history: tuple[HistoryItem, ...] = ()

    @property
    def status(self) -> Status:
        return "changelog" if self.run is None else super().status


class PageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: ModelId
    title: Name | None = None
    configs: list[ConfigSource]

    @property
    def slug(self) -> str:
        """The page's folder in the site."""
        return slugify(self.model.split("/")[-1])


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    title: Name
    source: str
    policy: str | None = None
    repo: Url = "https://github.com/SemiAnalysisAI/InferenceX"
    generated_on: dt.date | None = None
    pages: list[PageSpec]


def read_manifest(path: Path) -> tuple[Manifest, Document]:
    doc = read_yaml_file(path)
    try:
        manifest = Manifest.model_validate(doc.data)
    except ValidationError as exc:
        raise CookbookError([doc.problem(loc, message) for loc, message in schema_messages(exc.errors(), Manifest)]) from None
    seen: dict[str, KeyPath] = {}
    anchors: dict[str, KeyPath] = {}
    folders: dict[str, KeyPath] = {}
    for p, page in enumerate(manifest.pages):
        if page.slug in folders:
            raise doc.error(("pages", p, "model"), f"the page of {page.model!r} would have the folder {page.slug}/ of the page at line "
                                                   f"{doc.line_of(folders[page.slug])}; give each model one page")
        folders[page.slug] = ("pages", p, "model")
        for c, config in enumerate(page.configs):
            where = ("pages", p, "configs", c, "key")
            if config.key in seen:
                raise doc.error(where, f"config {config.key!r} listed twice (first at line {doc.line_of(seen[config.key])})")
            if slugify(config.key) in anchors:
                raise doc.error(where, f"config {config.key!r} would have the page anchors of the config at line "
                                       f"{doc.line_of(anchors[slugify(config.key)])}")
            seen[config.key] = anchors[slugify(config.key)] = where
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
