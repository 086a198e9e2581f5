"""Pick one variant of a recipe file and build its effective recipe. No I/O.

A recipe file is either a plain recipe, a plain recipe with a top-level `sweep:`, or an override
bundle: `base:` plus `override_<name>:` sections (selector `override_<name>`) and
`zip_override_<name>:` sections (selector `zip_override_<name>[i]`). Top-level keys of a bundle
other than `base` and the variants (e.g. `schema: 2`) belong to the base.

Precedence, lowest first: base, the selected override (deep merge, `null` deletes), sweep
substitution, then `--set` / `--unset` in the order given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import CookbookError, Problem
from ..text import listing, unknown
from .load import Document, KeyPath, dotted, parse_yaml
from .merge import Origins, deep_merge, node_paths, set_path, SWEEP_LIMIT, substitute, sweep_combination, sweep_count, unset_path, zip_length, zip_variant

RawYaml = Any
_ZIP_SELECTOR = re.compile(r"(zip_override_[\w.-]+)\[(\d+)\]")
_SWEEP_SELECTOR = re.compile(r"sweep\[(\d+)\]")


@dataclass(frozen=True)
class EffectiveRecipe:
    """A resolved recipe: plain data plus, for every path, the file and line that set it."""

    file: str
    selector: str | None
    data: dict[str, RawYaml]
    origins: Origins = field(compare=False, repr=False)
    # The trees `data` was merged from (`deep_merge` makes no path that none of them has), shared by
    # the variants of a file; None when `data` may have other paths (sweeps, --set, a v1 recipe).
    parts: tuple[RawYaml, ...] | None = field(default=None, compare=False, repr=False)

    def problem(self, path: KeyPath, message: str) -> Problem:
        p = tuple(path)
        while p and p not in self.origins:
            p = p[:-1]
        file, line = self.origins.get(p, (self.file, 0))
        return Problem(file, line, dotted(path), message)

    def error(self, path: KeyPath, message: str) -> CookbookError:
        return CookbookError([self.problem(path, message)])

    @property
    def label(self) -> str:
        return f"{self.file}:{self.selector}" if self.selector else self.file


def is_bundle(doc: Document) -> bool:
    return isinstance(doc.data, dict) and "base" in doc.data


# The selectors of the documents read last (a sweep may offer 10,000: listed once per document, not
# once per point). Keyed by id(), the document kept with them so the id cannot be reused meanwhile.
_VARIANTS: dict[int, tuple[Document, list[str], frozenset[str]]] = {}


def variant_names(doc: Document) -> list[str]:
    """Every selector the file offers, in file order (empty for a plain recipe)."""
    return list(_variants(doc)[0])


def _variants(doc: Document) -> tuple[list[str], frozenset[str]]:
    hit = _VARIANTS.get(id(doc))
    if hit is None or hit[0] is not doc:
        names = _variant_names(doc)
        if len(_VARIANTS) >= 256:
            _VARIANTS.clear()
        hit = _VARIANTS[id(doc)] = (doc, names, frozenset(names))
    return hit[1], hit[2]


def _variant_names(doc: Document) -> list[str]:
    data = doc.data if isinstance(doc.data, dict) else {}
    names: list[str] = []
    for key, value in data.items():
        if key.startswith("override_"):
            names.append(key)
        elif key.startswith("zip_override_"):
            try:
                n, _ = zip_length(value)
            except ValueError as exc:
                raise doc.error((key,), str(exc)) from None
            names.extend(f"{key}[{i}]" for i in range(n))
    if not is_bundle(doc) and isinstance(data.get("sweep"), dict):
        count = sweep_count(data["sweep"])
        if count > SWEEP_LIMIT:
            raise doc.error(("sweep",), f"{count} combinations, more than the {SWEEP_LIMIT} a sweep may have "
                                        f"(the product of its {len(data['sweep'])} lists' lengths); split it into several files")
        names.extend(f"sweep[{i}]" for i in range(count))
    return names


def _origins_of(doc: Document, data: RawYaml, doc_prefix: KeyPath, into: KeyPath = ()) -> Origins:
    """`file:line` of every path under `data` (found at `doc_prefix` in `doc`), the paths put under `into`."""
    lines, file, cut = doc.lines, doc.file, len(doc_prefix)
    out: Origins = {}
    for path in node_paths(data, doc_prefix):
        line = lines.get(path)
        out[into + path[cut:]] = (file, line if line is not None else doc.line_of(path))
    return out


def _base_of(doc: Document) -> tuple[dict[str, RawYaml], Origins]:
    """The base of a document, computed once per document: every variant starts from it, and the
    variants share its subtrees (the same objects), which lets their points share work."""
    if doc.bundle_base is None:
        object.__setattr__(doc, "bundle_base", _compute_base(doc))
    data, origins = doc.bundle_base
    return data, dict(origins)


def _compute_base(doc: Document) -> tuple[dict[str, RawYaml], Origins]:
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), f"a recipe must be a mapping, got {type(data).__name__}")
    if not is_bundle(doc):
        body = {k: v for k, v in data.items() if k != "sweep"}
        return body, _origins_of(doc, body, ())
    base = data["base"]
    if not isinstance(base, dict):
        raise doc.error(("base",), f"must be a mapping, got {type(base).__name__}")
    shared = {k: v for k, v in data.items() if k != "base" and not k.startswith(("override_", "zip_override_"))}
    origins = _origins_of(doc, shared, ())
    origins.update(_origins_of(doc, base, ("base",)))
    return deep_merge(shared, base, keep_nulls=True), origins


def select(doc: Document, selector: str | None) -> EffectiveRecipe:
    """The effective recipe of `selector` in `doc` (None: a plain recipe, or a bundle's base)."""
    data, origins = _base_of(doc)
    names, offered = _variants(doc)
    if selector is None:
        if names and (is_bundle(doc) or "sweep" in doc.data):
            raise doc.error((), f"the file has {len(names)} variants; pick one with FILE:SELECTOR ({listing(names)})")
        return EffectiveRecipe(doc.file, None, data, origins, (data,))
    if selector not in offered:
        raise doc.error((selector.split("[")[0],), unknown("selector", selector, names))
    over, over_path = _variant_section(doc, selector)
    if isinstance(over, dict) and "sweep" not in over_path:
        origins.update(_origins_of(doc, over, over_path))
        return EffectiveRecipe(doc.file, selector, deep_merge(data, over), origins, (data, over))
    return EffectiveRecipe(doc.file, selector, substitute(data, over), origins)


def _variant_section(doc: Document, selector: str) -> tuple[RawYaml, KeyPath]:
    zipped = _ZIP_SELECTOR.fullmatch(selector)
    if zipped:
        return zip_variant(doc.data[zipped.group(1)], int(zipped.group(2))), (zipped.group(1),)
    swept = _SWEEP_SELECTOR.fullmatch(selector)
    if swept:
        return sweep_combination(doc.data["sweep"], int(swept.group(1))), ("sweep",)
    section = doc.data[selector]
    if section is None:
        return {}, (selector,)
    if not isinstance(section, dict):
        raise doc.error((selector,), f"an override must be a mapping, got {type(section).__name__}")
    return section, (selector,)


def apply_overrides(recipe: EffectiveRecipe, sets: Sequence[str], unsets: Sequence[str]) -> EffectiveRecipe:
    """Apply `--set dotted.path=value` and `--unset dotted.path` (values parsed as YAML)."""
    if not sets and not unsets:
        return recipe
    data, origins = recipe.data, dict(recipe.origins)
    for item in sets:
        path_text, sep, value_text = item.partition("=")
        path = _parse_dotted(path_text, "--set", item)
        if not sep:
            raise CookbookError.usage("--set", f"{item!r}: expected dotted.path=value")
        try:
            value = parse_yaml(value_text, "--set").data
        except CookbookError as exc:
            raise CookbookError.usage("--set", f"{item!r}: {exc.problems[0].message}") from None
        data = set_path(data, path, value)
        for p in node_paths(value, tuple(path)):
            origins[p] = (f"--set {item}", 0)
    for item in unsets:
        path = _parse_dotted(item, "--unset", item)
        data, found = unset_path(data, path)
        if not found:
            raise CookbookError.usage("--unset", f"{item!r}: no such setting in the effective recipe")
    return EffectiveRecipe(recipe.file, recipe.selector, data, origins)


def _parse_dotted(text: str, option: str, item: str) -> list[str]:
    parts = text.strip().split(".")
    if not item.isascii():
        try:
            item.encode()
        except UnicodeEncodeError:     # a byte argv could not decode, kept as a surrogate
            raise CookbookError.usage(option, f"{item!r}: not UTF-8") from None
    if not text.strip() or any(not p for p in parts):
        raise CookbookError.usage(option, f"{item!r}: expected a dotted path such as roles.decode.args.max-running-requests")
    if any(p.endswith("]") and "[" in p for p in parts):
        raise CookbookError.usage(option, f"{item!r}: a dotted path names mapping keys, not list items; set the whole list")
    return parts
