"""Read YAML safely and remember where every value came from. The only module that parses YAML.

I/O: `read_yaml_file` reads one file; `parse_yaml` works on text only.

- Safe construction only: tags outside the YAML core schema (`!!python/...`) are refused.
- Merge keys (`<<: *anchor`, `<<: [*a, *b]`) are applied; explicit keys win over merged ones.
- Duplicate keys in one mapping are refused, naming both lines.
- Alias expansion is capped (`MAX_NODES`), so an alias bomb fails fast instead of eating memory.
- Nesting deeper than `MAX_DEPTH` and files larger than `MAX_BYTES` are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from ..errors import CookbookError, Problem, key_join

RawYaml = Any
KeyPath = tuple[str | int, ...]

MAX_BYTES = 16 * 1024 * 1024
MAX_NODES = 2_000_000
MAX_DEPTH = 200

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"


@dataclass(frozen=True)
class Document:
    """Plain data from one YAML file plus the line of every key path in it."""

    file: str
    data: RawYaml
    lines: dict[KeyPath, int] = field(default_factory=dict, compare=False, repr=False)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # derived values, e.g. the bundle base

    def line_of(self, path: KeyPath) -> int:
        """Line of `path`, or of its nearest ancestor that has one (0 when none)."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), 0)

    def problem(self, path: KeyPath, message: str) -> Problem:
        return Problem(self.file, self.line_of(path), dotted(path), message)

    def error(self, path: KeyPath, message: str) -> CookbookError:
        return CookbookError([self.problem(path, message)])


@lru_cache(maxsize=262144)
def _dotted(path: KeyPath) -> str:
    out = ""
    for k in path:
        out = key_join(out, k)
    return out


def dotted(path: KeyPath) -> str:
    """`roles.prefill.args[3]`-style text of a key path (cached: the same paths recur in every point)."""
    p = tuple(path)
    if all(type(k) is str or type(k) is int for k in p):  # True == 1 must not share a cache entry
        return _dotted(p)
    return _dotted.__wrapped__(p)


def read_yaml_file(path: Path, shown_as: str | None = None) -> Document:
    """Read and parse `path`. Errors name `shown_as` (default: the path as given)."""
    name = shown_as or str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise CookbookError.at(name, 0, "", "file not found") from None
    except OSError as exc:
        raise CookbookError.at(name, 0, "", f"cannot read: {exc.strerror}") from None
    if not path.is_file():
        raise CookbookError.at(name, 0, "", "not a regular file")
    if size > MAX_BYTES:
        raise CookbookError.at(name, 0, "", f"file is {size} bytes; the limit is {MAX_BYTES}")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CookbookError.at(name, line, "", f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    return parse_yaml(text, name)


def parse_yaml(text: str, file: str) -> Document:
    """Parse one YAML document from `text`; `file` is only used in messages."""
    if len(text) > MAX_BYTES:
        raise CookbookError.at(file, 0, "", f"text is {len(text)} characters; the limit is {MAX_BYTES}")
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        # The context mark is where the unfinished construct started; the problem mark is often EOF.
        mark = exc.context_mark or exc.problem_mark
        line = mark.line + 1 if mark else 0
        detail = f"{exc.problem} ({exc.context})" if exc.context else str(exc.problem)
        raise CookbookError.at(file, line, "", f"YAML syntax: {detail}") from None
    except yaml.YAMLError as exc:
        raise CookbookError.at(file, 0, "", f"YAML error: {exc}") from None
    except RecursionError:
        raise CookbookError.at(file, 0, "", f"nesting too deep to parse (limit {MAX_DEPTH})") from None
    if node is None:
        return Document(file, None, {(): 1})
    builder = _Builder(file)
    try:
        data = builder.build(node, (), 0)
    finally:
        builder.close()
    return Document(file, data, builder.lines)


class YamlFloat(float):
    """A float that remembers how the YAML wrote it, so `0.90` renders as `0.90`, not `0.9`."""

    text: str

    def __new__(cls, value: float, text: str) -> "YamlFloat":
        obj = super().__new__(cls, value)
        obj.text = text
        return obj

    def __str__(self) -> str:
        return self.text


class _Builder:
    """Turns a composed node graph into plain data, recording lines; applies merge keys."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[KeyPath, int] = {}
        self.count = 0
        self.scalars = yaml.SafeLoader("")  # used only for its scalar constructors

    def close(self) -> None:
        """Drop the constructor's cache of every node it built and its parser state (a reference
        cycle): without this, each file's nodes live until the cyclic garbage collector runs."""
        self.scalars.constructed_objects.clear()
        self.scalars.dispose()

    def fail(self, node: yaml.Node, path: KeyPath, message: str) -> CookbookError:
        return CookbookError.at(self.file, node.start_mark.line + 1, dotted(path), message)

    def build(self, node: yaml.Node, path: KeyPath, depth: int) -> RawYaml:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(node, path, f"more than {MAX_NODES} values after alias expansion (alias bomb?)")
        if depth > MAX_DEPTH:
            raise self.fail(node, path, f"nesting deeper than {MAX_DEPTH} levels")
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            return self.build_mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ_TAG:
                raise self.fail(node, path, f"tag {node.tag!r} is not allowed")
            return [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        return self.build_scalar(node, path)

    def build_scalar(self, node: yaml.Node, path: KeyPath) -> RawYaml:
        if node.tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
            return node.value          # what the str constructor returns, without its bookkeeping
        try:
            value = self.scalars.construct_object(node, deep=True)
            if type(value) is float and isinstance(node, yaml.ScalarNode):
                return YamlFloat(value, node.value)
            return value
        except yaml.constructor.ConstructorError as exc:
            raise self.fail(node, path, f"unsupported value: {exc.problem}") from None
        except (ValueError, OverflowError) as exc:
            raise self.fail(node, path, f"bad scalar: {exc}") from None

    def build_mapping(self, node: yaml.MappingNode, path: KeyPath, depth: int) -> dict[str, RawYaml]:
        if node.tag != _MAP_TAG:
            raise self.fail(node, path, f"tag {node.tag!r} is not allowed")
        explicit: dict[str, RawYaml] = {}
        seen: dict[str, int] = {}
        merged: list[yaml.MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged.extend(self.merge_sources(value_node, path))
                continue
            key = self.build_scalar(key_node, path)
            if isinstance(key, (dict, list)) or key is None:
                raise self.fail(key_node, path, "mapping keys must be scalars")
            key = key if isinstance(key, str) else str(key)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise self.fail(key_node, path + (key,), f"duplicate key (first at line {seen[key]})")
            seen[key] = line
            self.lines[path + (key,)] = line
            explicit[key] = self.build(value_node, path + (key,), depth + 1)
        if not merged:
            return explicit
        # As PyYAML does: merged keys come first, explicit keys override them in place.
        out: dict[str, RawYaml] = {}
        for source in merged:
            for key_node, value_node in source.value:
                key = str(self.build_scalar(key_node, path))
                if key in out or key in explicit or key_node.tag == _MERGE_TAG:
                    continue
                self.lines[path + (key,)] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, path + (key,), depth + 1)
        out.update(explicit)
        return out

    def merge_sources(self, value: yaml.Node, path: KeyPath) -> list[yaml.MappingNode]:
        sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
        for src in sources:
            if not isinstance(src, yaml.MappingNode):
                raise self.fail(src, path, "merge key `<<` needs a mapping or a list of mappings")
        return list(sources)
