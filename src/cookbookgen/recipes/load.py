"""Read YAML and JSON safely; remember where every YAML value came from. The only module that
parses YAML or JSON inputs.

I/O: `read_yaml_file` and `read_text_file` read one file, `package_yaml` one table shipped in the package
(read once per process); `parse_yaml`, `parse_yaml_bytes` and `parse_json` work on what they are given
(a checkout's files come through `recipes.view`).

- Safe construction only: tags outside the YAML core schema (`!!python/...`) are refused.
- Merge keys (`<<: *anchor`, `<<: [*a, *b]`) are applied; explicit keys win over merged ones.
- Duplicate keys in one mapping are refused, naming both lines; for third-party recipes (`last_key_wins`)
  the last value is taken, as srtctl's `yaml.safe_load` does, and each is listed with both lines.
- Alias expansion is capped (`MAX_NODES`), so an alias bomb fails fast instead of eating memory.
- Nesting deeper than `MAX_DEPTH` and files larger than `MAX_BYTES` are refused (`MAX_INPUT_BYTES`
  for JSON and AgentX modules, which are larger than any YAML input).
- JSON: every failure (syntax, an integer past Python's digit limit, nesting past `MAX_DEPTH`, a lone
  surrogate escape that no file can hold) is one located problem, never a traceback.
"""

from __future__ import annotations

import gc
import json
import operator
import re
import stat
import sys
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import CookbookError, Problem, key_join

RawYaml = Any
KeyPath = tuple[str | int, ...]

MAX_BYTES = 16 * 1024 * 1024
MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_NODES = 2_000_000
MAX_DEPTH = 200

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"
_DIRECT_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null")
_Scalar, _Sequence, _Mapping = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode
_DEFAULT_TAGS = {_Scalar: _STR_TAG, _Sequence: _SEQ_TAG, _Mapping: _MAP_TAG}
_PLAIN_TAGS: dict[str, str] = {}  # plain scalar text -> resolved tag, for `_FastTagLoader` only
_PLAIN_TAGS_MAX = 50_000  # entries, each at most 64 characters of text


class _FastTagLoader(_BaseLoader):  # type: ignore[misc]
    """The safe loader with cheaper hooks for the composer, which calls `resolve` for every node and
    `descend_resolver`/`ascend_resolver` around it (a quarter of `yaml.compose`'s time before).

    Same tags as `Resolver.resolve` when the loader has no path resolvers and no wildcard implicit
    resolvers (PyYAML registries this package never touches; otherwise `_Loader` is the plain loader):
    then a collection, or a quoted or block scalar, always gets the default tag of its kind, and a
    plain scalar's tag (from the implicit resolvers for its first character) depends on its text
    alone, so it is memoized for short texts (`4`, `true`, `tp`: keys and values recur).
    The path hooks do nothing without path resolvers: builtins that ignore their arguments stand in.
    """

    descend_resolver = operator.is_  # called as (parent, index); the result is ignored
    ascend_resolver = tuple  # called with no arguments; the result is ignored

    def resolve(self, kind: type, value: str, implicit: tuple[bool, bool]) -> str:
        if kind is _Scalar and implicit[0]:
            tag = _PLAIN_TAGS.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(value) <= 64:
                    if len(_PLAIN_TAGS) >= _PLAIN_TAGS_MAX:
                        _PLAIN_TAGS.clear()
                    _PLAIN_TAGS[value] = tag
            return tag
        return _DEFAULT_TAGS[kind]


_STANDARD_RESOLVERS = not _BaseLoader.yaml_path_resolvers and None not in _BaseLoader.yaml_implicit_resolvers
_Loader: type = _FastTagLoader if _STANDARD_RESOLVERS else _BaseLoader


@dataclass(frozen=True)
class Shadowed:
    """A duplicate mapping key: `path`, first written at line `first`, written again (and taken) at `last`."""

    path: KeyPath
    first: int
    last: int


@dataclass(frozen=True)
class Document:
    """Plain data from one YAML file plus the line of every key path in it."""

    file: str
    data: RawYaml
    lines: dict[KeyPath, int] = field(default_factory=dict, compare=False, repr=False)
    bundle_base: Any = field(default=None, compare=False, repr=False)   # `bundle._base_of`, once per document
    shadowed: tuple["Shadowed", ...] = field(default=(), compare=False, repr=False)   # duplicate keys, last one taken

    def findings(self) -> list[str]:
        """One line per duplicate key whose earlier value the last one shadows."""
        return [f"{self.file}:{s.last}: {dotted(s.path)}: duplicate key; the value at line {s.last} is used and the one "
                f"at line {s.first} is ignored (srtctl's yaml.safe_load keeps the last)" for s in self.shadowed]

    def line_of(self, path: KeyPath) -> int:
        """Line of `path`, or of its nearest ancestor that has one (0 when none)."""
        p = tuple(path)
        while p and p not in self.lines:
            p = p[:-1]
        return self.lines.get(p, 0)

    def problem(self, path: KeyPath, message: str) -> Problem:
        return Problem(self.file, self.line_of(path), dotted(path), message)

    def error(self, path: KeyPath, message: str) -> CookbookError:
        return CookbookError([self.problem(path, message)])


def dotted(path: KeyPath) -> str:
    """`roles.prefill.args[3]`-style text of a key path."""
    out = ""
    for k in path:
        out = key_join(out, k)
    return out


@cache
def package_yaml(name: str) -> Any:
    """The data of a YAML table shipped in the package, e.g. `rules/render.yaml` (read-only: shared)."""
    text = resources.files("cookbookgen").joinpath(name).read_text(encoding="utf-8")
    return parse_yaml(text, f"cookbookgen/{name}").data


def read_yaml_file(path: Path, shown_as: str | None = None, last_key_wins: bool = False) -> Document:
    """Read and parse `path`. Errors name `shown_as` (default: the path as given)."""
    name = shown_as or str(path)
    return parse_yaml(read_text_file(path, name), name, last_key_wins)


def read_text_file(path: Path, name: str, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of `path`; missing, not a regular file, larger than `max_bytes` or not UTF-8 is
    one located problem naming `name`."""
    try:
        status = path.stat()
    except FileNotFoundError:
        raise CookbookError.at(name, 0, "", "the file does not exist") from None
    except OSError as exc:
        raise CookbookError.at(name, 0, "", f"cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(status.st_mode):
        raise CookbookError.at(name, 0, "", "not a regular file")
    size = status.st_size
    if size > max_bytes:
        raise CookbookError.at(name, 0, "", f"file is {size} bytes; the limit is {max_bytes}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CookbookError.at(name, 0, "", f"cannot read: {exc.strerror}") from None
    return decode_text(raw, name)


def decode_text(raw: bytes, name: str) -> str:
    """`raw` as UTF-8 text; bytes that are not UTF-8 are one located problem naming `name`."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CookbookError.at(name, line, "", f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None


def parse_yaml_bytes(raw: bytes, name: str, last_key_wins: bool = False) -> Document:
    """Parse the bytes of a YAML file (read through a `view.FileView`); errors name `name`."""
    return parse_yaml(decode_text(raw, name), name, last_key_wins)


# --- JSON --------------------------------------------------------------------------------------------
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_LONG_INTEGER = re.compile(r"\d{%d,}" % (sys.get_int_max_str_digits() + 1))
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def parse_json(text: str, file: str, first_line: int = 0) -> tuple[Any, int]:
    """The JSON value that starts `text` (after blanks) and the index just past it. `first_line` is
    the number of lines of the file before `text`; every failure is one problem."""
    begin = len(text) - len(text.lstrip())
    try:
        data, end = json.JSONDecoder().raw_decode(text, begin)
    except json.JSONDecodeError as exc:
        raise CookbookError.at(file, first_line + exc.lineno, "", f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise _too_deep(text, begin, file, first_line) from None
    except ValueError:   # the only other failure of the parser: an integer past the digit limit
        found = _LONG_INTEGER.search(text, begin)
        line = first_line + text.count("\n", 0, found.start()) + 1 if found else first_line
        limit = sys.get_int_max_str_digits()
        raise CookbookError.at(file, line, "", f"an integer of more than {limit} digits") from None
    if _json_depth_exceeds(data):
        raise _too_deep(text, begin, file, first_line)
    surrogate = _SURROGATE_ESCAPE.search(text, begin, end)
    if surrogate and not _encodable(data):
        line = first_line + text.count("\n", 0, surrogate.start()) + 1
        raise CookbookError.at(file, line, "", "a lone surrogate escape (\\uD800-\\uDFFF): not a character")
    return data, end


def _json_depth_exceeds(data: Any) -> bool:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def _too_deep(text: str, begin: int, file: str, first_line: int) -> CookbookError:
    """The problem for JSON nested deeper than `MAX_DEPTH`, at the line where it goes deeper."""
    depth, line = 0, first_line
    for token in _JSON_TOKEN.finditer(text, begin):
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(token.group(), 0)
        if depth > MAX_DEPTH:
            line = first_line + text.count("\n", 0, token.start()) + 1
            break
    return CookbookError.at(file, line, "", f"nesting deeper than {MAX_DEPTH} levels")


def _encodable(data: Any) -> bool:
    """Every string and key of `data` can be written as UTF-8."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_yaml(text: str, file: str, last_key_wins: bool = False) -> Document:
    """Parse one YAML document from `text`; `file` is only used in messages. `last_key_wins`: a
    duplicate key takes its last value, as srtctl's `yaml.safe_load` does, and is listed in
    `Document.shadowed` (for third-party recipes; our own files stay strict)."""
    if len(text) > MAX_BYTES:
        raise CookbookError.at(file, 0, "", f"text is {len(text)} characters; the limit is {MAX_BYTES}")
    # No cyclic garbage collection while a file is parsed. The parse only allocates: nodes, then
    # plain data (the one cycle, in the loader, `_Builder.close` breaks), so a collection finds
    # nothing, yet the allocations of a large file set off full collections, each of which scans every
    # object of the process: they took two thirds of the time of a 1.4 MB master config.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse(text, file, last_key_wins)
    finally:
        if enabled:
            gc.enable()


def _parse(text: str, file: str, last_key_wins: bool = False) -> Document:
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        raise CookbookError([_syntax_problem(exc, file)]) from None
    except yaml.YAMLError as exc:
        raise CookbookError.at(file, 0, "", f"YAML error: {exc}") from None
    except RecursionError:
        raise CookbookError.at(file, 0, "", f"nesting too deep to parse (limit {MAX_DEPTH})") from None
    if node is None:
        return Document(file, None, {(): 1})
    builder = _Builder(file, last_key_wins)
    try:
        data = builder.build(node, (), 0)
    finally:
        builder.close()
    return Document(file, data, builder.lines, shadowed=tuple(builder.shadowed))


def _syntax_problem(exc: yaml.MarkedYAMLError, file: str) -> Problem:
    """PyYAML's complaint at PyYAML's line (the problem mark); the construct it was in, and where
    that started (the context mark), follow in parentheses."""
    mark = exc.problem_mark or exc.context_mark
    detail = str(exc.problem or exc.context)
    if exc.context and exc.problem:
        started = f" at line {exc.context_mark.line + 1}" if exc.context_mark else ""
        detail += f" ({exc.context}{started})"
    return Problem(file, mark.line + 1 if mark else 0, "", f"YAML syntax: {detail}")


def _spelling(text: str, value: float) -> str:
    """How a float shows in a command: as the YAML wrote it, unless Python's float() (so an engine's
    argparse) cannot read that back (`.inf`, `-.Inf`, `.nan`, sexagesimal `1:30.5`); then as srtctl
    passes it, `str(value)` (`inf`, `-inf`, `nan`, `90.5`)."""
    try:
        float(text)
    except ValueError:
        return str(value)
    return text


class YamlFloat(float):
    """A float that remembers how the YAML wrote it, so `0.90` renders as `0.90`, not `0.9`."""

    text: str

    def __new__(cls, value: float, text: str) -> "YamlFloat":
        obj = super().__new__(cls, value)
        obj.text = text
        return obj

    def __reduce__(self) -> tuple[type[YamlFloat], tuple[float, str]]:   # pickled (and copied) with its text
        return YamlFloat, (float(self), self.text)

    def __str__(self) -> str:
        return self.text


class _Builder:
    """Turns a composed node graph into plain data, recording lines; applies merge keys.

    Fast paths, each giving what the generic route (`build` for every node, `construct_object` for
    every non-str scalar) gives:
    - The mapping and sequence loops do `build`'s node-count and depth checks inline for each child
      and record its line by plain assignment (a mapping value's line is its key's): every key path
      is built once (keys in one mapping are unique, a merged key is built only when it wins and no explicit key has it), so assignment
      equals `build`'s `setdefault`. They also build `path + (key,)` once per key and find duplicate
      keys in the result dict, whose first line is already in `lines`.
    - A ScalarNode tagged str (most keys and values) is its `.value`, which is all the str constructor
      returns; the loops take it inline, without a call.
    - int/float/bool/null scalars call PyYAML's constructor for the tag directly, not through
      `construct_object`, whose cache only returns an equal value again for an aliased node.
    - Dispatch on the node's exact class (the composer makes only the three `yaml` node classes).
    """

    def __init__(self, file: str, last_key_wins: bool = False) -> None:
        self.file = file
        self.last_key_wins = last_key_wins
        self.shadowed: list[Shadowed] = []
        self.lines: dict[KeyPath, int] = {}
        self.count = 0
        self.scalars = yaml.SafeLoader("")  # used only for its scalar constructors
        constructors = self.scalars.yaml_constructors
        self.direct: dict[str, Any] = {tag: constructors[tag] for tag in _DIRECT_TAGS if tag in constructors}

    def close(self) -> None:
        """Drop the constructor's cache of every node it built and its parser state (a reference
        cycle): without this, each file's nodes live until the cyclic garbage collector runs."""
        self.scalars.constructed_objects.clear()
        self.scalars.dispose()

    def fail(self, node: yaml.Node, path: KeyPath, message: str) -> CookbookError:
        return CookbookError.at(self.file, node.start_mark.line + 1, dotted(path), message)

    def over_limit(self, node: yaml.Node, path: KeyPath) -> CookbookError:
        """The error for a node that broke MAX_NODES (checked first) or MAX_DEPTH."""
        if self.count > MAX_NODES:
            return self.fail(node, path, f"more than {MAX_NODES} values after alias expansion (alias bomb?)")
        return self.fail(node, path, f"nesting deeper than {MAX_DEPTH} levels")

    def build(self, node: yaml.Node, path: KeyPath, depth: int) -> RawYaml:
        """Any node: the root, a merged value. Counts it, checks the limits, records its line if unset."""
        self.count += 1
        if self.count > MAX_NODES or depth > MAX_DEPTH:
            raise self.over_limit(node, path)
        self.lines.setdefault(path, node.start_mark.line + 1)
        return self.dispatch(node, path, depth)

    def dispatch(self, node: yaml.Node, path: KeyPath, depth: int) -> RawYaml:
        """Build a node already counted and checked."""
        if isinstance(node, yaml.MappingNode):
            return self.build_mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return self.build_sequence(node, path, depth)
        return self.build_scalar(node, path)

    def build_scalar(self, node: yaml.Node, path: KeyPath) -> RawYaml:
        """A scalar (or a key node of any kind) as PyYAML constructs it; a float keeps its spelling."""
        if not isinstance(node, yaml.ScalarNode):
            return self.construct(node, path, None)
        tag = node.tag
        if tag == _STR_TAG:
            return node.value          # what the str constructor returns, without its bookkeeping
        value = self.construct(node, path, self.direct.get(tag))
        return YamlFloat(value, _spelling(node.value, value)) if type(value) is float else value

    def construct(self, node: yaml.Node, path: KeyPath, constructor: Any) -> RawYaml:
        """`constructor(loader, node)`, or the loader's `construct_object`; errors name `path`."""
        try:
            if constructor is None:
                return self.scalars.construct_object(node, deep=True)
            return constructor(self.scalars, node)
        except yaml.constructor.ConstructorError as exc:
            raise self.fail(node, path, f"unsupported value: {exc.problem}") from None
        except (ValueError, OverflowError) as exc:
            raise self.fail(node, path, f"bad scalar: {exc}") from None

    def build_sequence(self, node: yaml.Node, path: KeyPath, depth: int) -> list[RawYaml]:
        if node.tag != _SEQ_TAG:
            raise self.fail(node, path, f"tag {node.tag!r} is not allowed")
        lines = self.lines
        out: list[RawYaml] = []
        depth += 1
        for i, item in enumerate(node.value):
            child = path + (i,)
            self.count += 1
            if self.count > MAX_NODES or depth > MAX_DEPTH:
                raise self.over_limit(item, child)
            lines[child] = item.start_mark.line + 1
            if type(item) is _Scalar:
                out.append(item.value if item.tag == _STR_TAG else self.build_scalar(item, child))
            else:
                out.append(self.dispatch(item, child, depth))
        return out

    def build_mapping(self, node: yaml.MappingNode, path: KeyPath, depth: int) -> dict[str, RawYaml]:
        if node.tag != _MAP_TAG:
            raise self.fail(node, path, f"tag {node.tag!r} is not allowed")
        lines = self.lines
        explicit: dict[str, RawYaml] = {}
        merges: list[yaml.Node] = []  # the values of this mapping's `<<` keys
        depth += 1
        for key_node, value_node in node.value:
            if key_node.tag == _STR_TAG and type(key_node) is _Scalar:
                key = key_node.value
            elif key_node.tag == _MERGE_TAG:
                merges.append(value_node)
                continue
            else:
                key = self.build_key(key_node, path)
            child = path + (key,)
            if key in explicit:
                if not self.last_key_wins:
                    raise self.fail(key_node, child, f"duplicate key (first at line {lines[child]})")
                self.shadowed.append(Shadowed(child, lines[child], key_node.start_mark.line + 1))
                for stale in [p for p in lines if p[: len(child)] == child and p != child]:
                    del lines[stale]
            lines[child] = key_node.start_mark.line + 1
            self.count += 1
            if self.count > MAX_NODES or depth > MAX_DEPTH:
                raise self.over_limit(value_node, child)
            if type(value_node) is _Scalar:
                explicit[key] = value_node.value if value_node.tag == _STR_TAG else self.build_scalar(value_node, child)
            else:
                explicit[key] = self.dispatch(value_node, child, depth)
        return self.apply_merges(merges, explicit, path, depth) if merges else explicit

    def build_key(self, key_node: yaml.Node, path: KeyPath) -> str:
        """A key that is not a plain string: an int, float, bool... becomes its text."""
        key = self.build_scalar(key_node, path)
        if isinstance(key, (dict, list)) or key is None:
            raise self.fail(key_node, path, "mapping keys must be scalars")
        return key if isinstance(key, str) else str(key)

    def apply_merges(self, merges: list[yaml.Node], explicit: dict[str, RawYaml], path: KeyPath, depth: int) -> dict[str, RawYaml]:
        """The mapping PyYAML makes of merged pairs followed by the explicit ones: a key sits where it
        first appears, and the last pair of a key gives its value (explicit keys win over merged ones).
        Only the winning value of each key is built. `depth` is the depth of the values."""
        winners: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in self.merged_pairs(merges, path, 0):
            winners[self.build_key(key_node, path)] = (key_node, value_node)
        out: dict[str, RawYaml] = {}
        for key, (key_node, value_node) in winners.items():
            if key in explicit:
                out[key] = explicit[key]
                continue
            child = path + (key,)
            self.lines[child] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, child, depth)
        for key, value in explicit.items():
            out.setdefault(key, value)
        return out

    def merged_pairs(self, merges: list[yaml.Node], path: KeyPath, level: int) -> list[tuple[yaml.Node, yaml.Node]]:
        """The key/value pairs the `<<` values bring, in PyYAML's order: each `<<` in turn; in a list
        of mappings the last one first, so an earlier mapping's value is assigned later and wins.
        A merged mapping's own `<<` keys are expanded first, the same way."""
        if level > MAX_DEPTH:
            raise self.fail(merges[0], path, f"merge keys nested deeper than {MAX_DEPTH} levels")
        pairs: list[tuple[yaml.Node, yaml.Node]] = []
        for value in merges:
            sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for source in reversed(sources):
                if not isinstance(source, yaml.MappingNode):
                    raise self.fail(source, path, "merge key `<<` needs a mapping or a list of mappings")
                own = [(k, v) for k, v in source.value if k.tag != _MERGE_TAG]
                inner = [v for k, v in source.value if k.tag == _MERGE_TAG]
                self.count += len(own)
                if self.count > MAX_NODES:
                    raise self.over_limit(source, path)
                pairs.extend(self.merged_pairs(inner, path, level + 1) if inner else ())
                pairs.extend(own)
        return pairs
