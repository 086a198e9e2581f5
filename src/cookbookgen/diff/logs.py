"""Stage 4 of the diff (compare, with logs): read what SGLang workers logged and compare it with the commands we publish.

SGLang logs its resolved configuration once per rank as
`server_args=ServerArgs(model_path='...', tp_size=4, ...)`. This module

- parses that Python repr with a small hand-written reader (never `eval`, `exec` or
  `ast.literal_eval`): strings with escapes, numbers (`1e-05`, `inf`), True/False/None, lists,
  tuples, dicts, sets, enum reprs (`<LoadFormat.AUTO: 'auto'>`) and calls (`CudaGraphConfig(...)`),
  the last two kept verbatim as strings;
- maps CLI flags to ServerArgs fields and back (`server_args_aliases.yaml`, read once from the
  package with `parse_yaml`);
- compares a block's ordered args with the logged fields (`compare_with_args`);
- reads srt-slurm's resolved job config (`config_*.yaml`, schema 2 or v1) into per-role args/env.

No I/O, except reading the packaged alias table and the two `read_*_file` helpers at the end.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

from ..errors import CookbookError, Problem, key_join
from ..recipes.load import Document, KeyPath, parse_yaml, read_text_file
from .aliases import derived_field, alias_table, is_server_arg_flag, normal_flag

MAX_NESTING = 64

DifferenceKind = Literal["different", "missing-in-log", "not-a-server-arg"]
ServerArgsDict = dict[str, object]


# --- Reading the `ServerArgs(...)` repr -----------------------------------------------------------

_SERVER_ARGS = re.compile(r"(?<!\w)ServerArgs\(")
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_FIELD = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_KEYWORD = re.compile(r"([A-Za-z_]\w*)\s*=(?!=)")
_ENUM = re.compile(r"<[\w.]+: (.*)>", re.DOTALL)
_CONSTANTS: dict[str, object] = {"True": True, "False": False, "None": None, "inf": math.inf, "nan": math.nan}
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "r": "\r", "t": "\t",
            "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\n": ""}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_STRING_STOP = {"'": re.compile(r"[\\']"), '"': re.compile(r'[\\"]')}


class _ReprError(Exception):
    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos


class _Reader:
    """A cursor over one line that reads Python-repr values. Raises `_ReprError`."""

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.pos = pos
        self.depth = 0
        self.field = ""  # the ServerArgs field being read, for messages

    def fail(self, message: str) -> _ReprError:
        return _ReprError(self.pos, message)

    def peek(self) -> str:
        """Skip blanks; the next character, or "" at the end of the line."""
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def found(self) -> str:
        ch = self.peek()
        return f"found {ch!r}" if ch else "the line ends"

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            raise self.fail(f"expected {ch!r}, {self.found()}")
        self.pos += 1

    def value(self) -> object:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(f"values nested deeper than {MAX_NESTING} levels")
        try:
            return self._value(self.peek())
        finally:
            self.depth -= 1

    def _value(self, ch: str) -> object:
        if ch in ("'", '"'):
            return self.string()
        if ch == "[":
            self.pos += 1
            return self.items("]")
        if ch == "(":
            self.pos += 1
            return tuple(self.items(")"))
        if ch == "{":
            return self.brace()
        if ch == "<":
            return self.angle()
        if ch and (ch in "+-." or ch.isdigit()):
            return self.number()
        if ch and (ch.isalpha() or ch == "_"):
            return self.name()
        raise self.fail(f"expected a value, {self.found()}")

    def string(self) -> str:
        start, quote = self.pos, self.text[self.pos]
        self.pos += 1
        parts: list[str] = []
        while True:
            stop = _STRING_STOP[quote].search(self.text, self.pos)
            if stop is None:
                raise _ReprError(start, "unterminated string")
            parts.append(self.text[self.pos : stop.start()])
            self.pos = stop.start()
            if self.text[self.pos] == quote:
                self.pos += 1
                return "".join(parts)
            parts.append(self.escape())

    def escape(self) -> str:
        """At a backslash: the character it stands for, as Python's string reader would."""
        code = self.text[self.pos + 1 : self.pos + 2]
        if not code:
            raise self.fail("unterminated string (the line ends after a backslash)")
        self.pos += 2
        if code in _ESCAPES:
            return _ESCAPES[code]
        if code in _HEX_DIGITS:
            return self.hex_escape(code, _HEX_DIGITS[code])
        if code in "01234567":
            return self.octal_escape(code)
        return "\\" + code

    def hex_escape(self, code: str, width: int) -> str:
        digits = self.text[self.pos : self.pos + width]
        if len(digits) != width or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise self.fail(f"bad \\{code} escape: needs {width} hex digits")
        point = int(digits, 16)
        if point > 0x10FFFF:
            raise self.fail(f"bad \\{code} escape: {digits} is not a code point")
        self.pos += width
        return chr(point)

    def octal_escape(self, first: str) -> str:
        digits = first
        while len(digits) < 3 and self.text[self.pos : self.pos + 1] in tuple("01234567"):
            digits += self.text[self.pos]
            self.pos += 1
        return chr(int(digits, 8))

    def number(self) -> object:
        start = self.pos
        sign = self.text[self.pos] if self.text[self.pos] in "+-" else ""
        self.pos += len(sign)
        word = _NAME.match(self.text, self.pos)
        if sign and word and word.group() in ("inf", "nan"):
            self.pos = word.end()
            return float(sign + word.group())
        match = _NUMBER.match(self.text, self.pos)
        after = self.text[match.end() : match.end() + 1] if match else ""
        if match is None or after.isalnum() or after in ("_", "."):     # glued to what follows
            self.pos = start
            raise self.fail("malformed number")
        self.pos = match.end()
        token = self.text[start : self.pos]
        try:
            return float(token) if any(c in token for c in ".eE") else int(token)
        except ValueError as exc:  # e.g. an int beyond Python's digit limit
            raise self.fail(f"malformed number: {exc}") from None

    def name(self) -> object:
        match = _NAME.match(self.text, self.pos)
        assert match is not None
        self.pos = match.end()
        if match.group() in _CONSTANTS:
            return _CONSTANTS[match.group()]
        if self.peek() != "(":
            return match.group()
        self.pos += 1
        self.items(")", keywords=True)       # checked; the caller keeps the text
        call = self.text[match.start() : self.pos]
        return set() if call == "set()" else call

    def separator(self, close: str) -> None:
        if self.peek() == ",":
            self.pos += 1
        elif self.peek() != close:
            raise self.fail(f"expected ',' or {close!r}, {self.found()}")

    def items(self, close: str, keywords: bool = False) -> list[object]:
        """The values up to `close` and past it; with `keywords`, a call's arguments (`a, b=c`)."""
        out: list[object] = []
        while self.peek() != close:
            keyword = _KEYWORD.match(self.text, self.pos) if keywords else None
            if keyword:
                self.pos = keyword.end()
            out.append(self.value())
            self.separator(close)
        self.pos += 1
        return out

    def brace(self) -> object:
        self.pos += 1
        if self.peek() == "}":
            self.pos += 1
            return {}
        first = self.value()
        return self.dict_from(first) if self.peek() == ":" else self.set_from(first)

    def dict_from(self, key: object) -> dict[object, object]:
        out: dict[object, object] = {}
        while True:
            self.expect(":")
            at = self.pos
            try:
                out[key] = self.value()
            except TypeError:
                raise _ReprError(at, f"dict key {key!r} is not hashable") from None
            self.separator("}")
            if self.peek() == "}":
                self.pos += 1
                return out
            key = self.value()

    def set_from(self, first: object) -> set[object]:
        items = [first]
        self.separator("}")
        items.extend(self.items("}"))
        try:
            return set(items)
        except TypeError:
            raise self.fail("set item is not hashable") from None

    def angle(self) -> str:
        """`<Enum.MEMBER: 'value'>` or `<function f at 0x...>`: kept verbatim."""
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in ("'", '"'):
                self.string()
                continue
            depth += {"<": 1, ">": -1}.get(ch, 0)
            self.pos += 1
            if depth == 0:
                return self.text[start : self.pos]
        raise _ReprError(start, "unterminated '<...>'")


def parse_server_args(line: str, file: str = "<log>", line_no: int = 0) -> ServerArgsDict:
    """The fields of the `ServerArgs(...)` repr in `line`, in logged order.

    Raises `CookbookError` with one problem naming `file`, `line_no` and the field being read.
    """
    match = _SERVER_ARGS.search(line)
    if match is None:
        raise CookbookError.at(file, line_no, "ServerArgs", "no `ServerArgs(` in this line")
    reader = _Reader(line, match.end())
    out: ServerArgsDict = {}
    try:
        _read_fields(reader, out)
    except _ReprError as exc:
        where = key_join("ServerArgs", reader.field) if reader.field else "ServerArgs"
        after = f" (after field {next(reversed(out))!r})" if out and not reader.field else ""
        raise CookbookError.at(file, line_no, where, f"column {exc.pos + 1}: {exc}{after}") from None
    return out


def _read_fields(reader: _Reader, out: ServerArgsDict) -> None:
    while reader.peek() != ")":
        reader.field = ""
        if reader.text.startswith("...", reader.pos):  # an elided tail, as in `a=1, ...)`
            reader.pos += 3
            break
        name = _FIELD.match(reader.text, reader.pos)
        if name is None:
            raise reader.fail(f"expected a field name, {reader.found()}")
        reader.field = name.group()
        if reader.field in out:
            raise reader.fail("field appears twice")
        reader.pos = name.end()
        reader.expect("=")
        out[reader.field] = reader.value()
        reader.separator(")")
    reader.expect(")")


def find_server_args(text: str, file: str) -> list[tuple[int, ServerArgsDict]]:
    """Every `ServerArgs(...)` line of a log with its 1-based line number.

    Lines are split on "\\n" only, as editors number them. All malformed lines are reported together.
    """
    return _collect(text.split("\n"), file)


def _collect(lines: Iterable[str], file: str) -> list[tuple[int, ServerArgsDict]]:
    found: list[tuple[int, ServerArgsDict]] = []
    problems: list[Problem] = []
    for number, line in enumerate(lines, 1):
        if "ServerArgs(" not in line or not _SERVER_ARGS.search(line):
            continue
        try:
            found.append((number, parse_server_args(line.rstrip("\r\n"), file, number)))
        except CookbookError as exc:
            problems.extend(exc.problems)
    if problems:
        raise CookbookError(problems)
    return found


def enum_value(logged: object) -> object:
    """`<LoadFormat.AUTO: 'auto'>` -> `'auto'`; anything else comes back unchanged."""
    if not isinstance(logged, str):
        return logged
    match = _ENUM.fullmatch(logged)
    if match is None:
        return logged
    reader = _Reader(match.group(1))
    try:
        value = reader.value()
    except _ReprError:
        return logged
    return value if reader.peek() == "" else logged


# --- Comparing a command with a log ---------------------------------------------------------------


@dataclass(frozen=True)
class LogDifference:
    """One disagreement between a command and a logged ServerArgs. `logged_value` is None when absent."""

    field: str
    flag: str
    command_value: object
    logged_value: object
    kind: DifferenceKind


def _command_flags(args: Iterable[tuple[str, ...]]) -> dict[str, tuple[str, object]]:
    """normal flag -> (flag as written, value); the last occurrence wins, as with argparse."""
    out: dict[str, tuple[str, object]] = {}
    for arg in args:
        flag, values = str(arg[0]), tuple(arg[1:])
        if not values and "=" in flag:
            flag, values = flag.split("=", 1)[0], (flag.split("=", 1)[1],)
        value: object = True if not values else values[0] if len(values) == 1 else list(values)
        out[normal_flag(flag)] = (flag, value)
    return out


def _target(flag: str, value: object, server_args: ServerArgsDict) -> tuple[str, object]:
    """(field, value the command means for it), preferring a field the log actually has."""
    derived = derived_field(flag)
    if derived in server_args:
        return derived, value
    table = alias_table()
    if flag in table.constants and value is True:
        return table.constants[flag]
    if flag.startswith("--no-") and value is True:
        positive = derived_field("--" + flag[5:])
        if isinstance(server_args.get(positive), bool):
            return positive, False
    return table.field_of.get(flag, derived), value


def compare_with_args(server_args: ServerArgsDict, args: Iterable[tuple[str, ...]]) -> list[LogDifference]:
    """Every flag of a command whose value the log contradicts or cannot confirm, in command order."""
    out: list[LogDifference] = []
    for normal, (flag, value) in _command_flags(args).items():
        field, meant = _target(normal, value, server_args)
        if field in server_args:
            if not values_equal(meant, server_args[field]):
                out.append(LogDifference(field, flag, meant, server_args[field], "different"))
        else:
            kind: DifferenceKind = "missing-in-log" if is_server_arg_flag(normal) else "not-a-server-arg"
            out.append(LogDifference(field, flag, meant, None, kind))
    return out


_NO_VALUE = object()


def values_equal(command: object, logged: object) -> bool:
    """Does a command value (a CLI string, True for a bare switch, a list of strings) mean the logged value?

    Numbers compare numerically ("0.80" == 0.8), "None"/"null" match None, JSON text matches by
    parsed value, lists item by item, enum reprs by their value; other strings exactly.
    """
    if isinstance(command, (list, tuple)) and not isinstance(logged, (list, tuple, set)):
        return False
    if isinstance(logged, (list, tuple, set)):
        return _sequence_equal(command, logged)
    if logged is None:
        return command is None or (isinstance(command, str) and command.strip().lower() in ("none", "null"))
    if isinstance(logged, bool):
        return _as_bool(command) is logged
    if isinstance(logged, (int, float)):
        mine = _as_number(command)
        return mine is not None and (mine == logged or mine != mine and logged != logged)  # NaN: both `nan`
    if isinstance(logged, dict):
        return _plain(_as_json(command)) == _plain(logged)
    if isinstance(logged, str):
        return _strings_equal(command, logged)
    return command == logged


def _strings_equal(command: object, logged: str) -> bool:
    if isinstance(command, str) and command == logged:
        return True
    member = enum_value(logged)
    if member is not logged:
        return values_equal(command, member)
    parsed, mine = _as_json(logged), _as_json(command)
    return isinstance(parsed, (dict, list)) and _plain(parsed) == _plain(mine)


def _sequence_equal(command: object, logged: list[object] | tuple[object, ...] | set[object]) -> bool:
    items = _as_json(command) if isinstance(command, str) else command
    if not isinstance(items, (list, tuple)):
        items = [command]
    if isinstance(logged, set):
        return {str(enum_value(x)) for x in items} == {str(enum_value(x)) for x in logged}
    return len(items) == len(logged) and all(values_equal(c, g) for c, g in zip(items, logged))


def _as_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in ("true", "1", "yes") else False if text in ("false", "0", "no") else None


def _as_number(value: object) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    for kind in (int, float):
        try:
            return kind(str(value).strip())
        except ValueError:
            continue
    return None


def _as_json(value: object) -> object:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return _NO_VALUE


def _plain(value: object) -> object:
    """Tuples as lists, recursively, so JSON and repr values compare."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# --- srt-slurm resolved job config (`config_*.yaml`) ----------------------------------------------

RoleSettings = dict[str, dict[str, object]]
V1_MODES = {"prefill": "prefill", "decode": "decode", "aggregated": "agg"}
_FLAG_KEY = re.compile(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_-]*")


def parse_srtslurm_config(text: str, file: str) -> dict[str, RoleSettings]:
    """`{role: {"args": {"--flag": value}, "env": {...}}}` from srt-slurm's resolved job config.

    Schema 2: `roles.<role>.args` / `roles.<role>.env`. v1: `backend.sglang_config.<mode>` and
    `backend.<mode>_environment`, with mode `aggregated` becoming role `agg`. Arg keys may be
    snake_case or kebab-case, with or without `--`; values are kept as the YAML gives them.
    """
    doc = parse_yaml(text, file)
    if not isinstance(doc.data, dict):
        raise doc.error((), "expected a mapping at the top of an srt-slurm config")
    if "roles" in doc.data:
        roles = _schema2_roles(doc)
    elif "backend" in doc.data:
        roles = _v1_roles(doc)
    else:
        raise doc.error((), "found neither `roles` (schema 2) nor `backend` (v1)")
    if not roles:
        raise doc.error(("roles",) if "roles" in doc.data else ("backend",), "no role has args or env")
    return roles


def _at(doc: Document, path: KeyPath) -> object:
    value: object = doc.data
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _mapping(doc: Document, path: KeyPath) -> dict[str, object]:
    """The mapping at `path`; absent or null is empty."""
    value = _at(doc, path)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise doc.error(path, f"expected a mapping, got {type(value).__name__}")
    return value


def _schema2_roles(doc: Document) -> dict[str, RoleSettings]:
    if not isinstance(_at(doc, ("roles",)), dict):
        raise doc.error(("roles",), "expected a mapping of role name -> {args, env}")
    out: dict[str, RoleSettings] = {}
    for name in _mapping(doc, ("roles",)):
        path: KeyPath = ("roles", name)
        _mapping(doc, path)
        role = "agg" if name == "aggregated" else name
        if role in out:
            raise doc.error(path, f"role {role!r} is given twice (`agg` and `aggregated`)")
        out[role] = {"args": _args(doc, path + ("args",)), "env": _env(doc, path + ("env",))}
    return out


def _v1_roles(doc: Document) -> dict[str, RoleSettings]:
    backend = _mapping(doc, ("backend",))
    kind = backend.get("type")
    if kind not in (None, "sglang"):
        raise doc.error(("backend", "type"), f"backend type {kind!r} is not sglang")
    modes = _mapping(doc, ("backend", "sglang_config"))
    for mode in modes:
        if mode not in V1_MODES:
            raise doc.error(("backend", "sglang_config", mode), f"unknown mode; expected one of {sorted(V1_MODES)}")
    out: dict[str, RoleSettings] = {}
    for mode, role in V1_MODES.items():
        env_key = f"{mode}_environment"
        if mode in modes or env_key in backend:
            args = _args(doc, ("backend", "sglang_config", mode))
            out[role] = {"args": args, "env": _env(doc, ("backend", env_key))}
    return out


def _args(doc: Document, path: KeyPath) -> dict[str, object]:
    out: dict[str, object] = {}
    written: dict[str, str] = {}
    for key, value in _mapping(doc, path).items():
        if not _FLAG_KEY.fullmatch(key):
            raise doc.error(path + (key,), "not a flag name")
        flag = normal_flag(key)
        if flag in out:
            raise doc.error(path + (key,), f"same flag as `{written[flag]}` ({flag})")
        out[flag], written[flag] = value, key
    return out


def _env(doc: Document, path: KeyPath) -> dict[str, object]:
    env = _mapping(doc, path)
    for key, value in env.items():
        if isinstance(value, (dict, list)):
            raise doc.error(path + (key,), f"environment values must be scalars, got {type(value).__name__}")
    return dict(env)


# --- The only I/O: reading a log or a config file -------------------------------------------------


def read_server_args_log_file(path: Path, shown_as: str | None = None) -> list[tuple[int, ServerArgsDict]]:
    """Read a worker log and return `find_server_args` of it. Undecodable bytes become U+FFFD."""
    name = shown_as or str(path)
    try:
        with path.open("r", encoding="utf-8", errors="replace", newline="\n") as lines:
            return _collect(lines, name)
    except FileNotFoundError:
        raise CookbookError.at(name, 0, "", "the file does not exist") from None
    except OSError as exc:
        raise CookbookError.at(name, 0, "", f"cannot read: {exc.strerror or exc}") from None


def read_srtslurm_config_file(path: Path, shown_as: str | None = None) -> dict[str, RoleSettings]:
    """Read an srt-slurm `config_*.yaml` and return `parse_srtslurm_config` of it."""
    name = shown_as or str(path)
    return parse_srtslurm_config(read_text_file(path, name), name)
