"""One error type for every bad input: `CookbookError` carrying `Problem` values.

No I/O. Only `cli.main` prints problems (one line each: `file:line: key.path: message` where a line
applies, else a plain sentence naming the thing) and maps them to exit status 2.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Iterable, Mapping, Union, get_args, get_origin

from .text import one_line, unknown

if TYPE_CHECKING:  # pydantic loads with the stages that validate, not with the CLI
    from pydantic import BaseModel


@dataclass(frozen=True)
class Problem:
    """A located complaint about an input. `line` is 1-based; 0 means the whole file (printed without a
    line). No `file`: a complaint about the command line itself, printed without a location."""

    file: str
    line: int
    key_path: str
    message: str

    def __str__(self) -> str:
        """`file:line: key.path: message` when there is a line to point at; otherwise a plain sentence
        naming the thing (`file: message`, `--option: message`)."""
        if not self.file:
            return one_line(f"{self.key_path}: {self.message}" if self.key_path else self.message)
        if self.line <= 0:
            return one_line(f"{self.file}: {self.key_path}: {self.message}" if self.key_path else f"{self.file}: {self.message}")
        return one_line(f"{self.file}:{self.line}: {self.key_path or '(top)'}: {self.message}")


class CookbookError(Exception):
    """Bad input. Holds every problem found before work had to stop."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, file: str, line: int, key_path: str, message: str) -> "CookbookError":
        return cls([Problem(file, line, key_path, message)])

    @classmethod
    def usage(cls, what: str, message: str) -> "CookbookError":
        """A bad command line (`what`: the command or option): no file, no line."""
        return cls([Problem("", 0, what, message)])


def key_join(parent: str, key: object) -> str:
    """Grow a dotted key path: `roles` + `prefill` -> `roles.prefill`; ints become `[i]`."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


# Location parts pydantic adds for the member of a union or a validator it tried (`str`, `int`,
# `list[...]`, `function-wrap[...]`): not keys of the input.
_MEMBER_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none"})


def schema_messages(errors: Iterable[Mapping[str, Any]], model: type[BaseModel] | None = None) -> list[tuple[tuple[str | int, ...], str]]:
    """(key path, message) per bad value, from `model`'s pydantic `ValidationError.errors()`: one
    entry per key path, however many members of a union the value failed ("should be a valid string,
    a valid integer or a valid boolean (received list)"); an unknown key names the ones `model` allows there."""
    grouped: dict[tuple[str | int, ...], list[Mapping[str, Any]]] = {}
    for error in errors:
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p in _MEMBER_TAGS)))
        grouped.setdefault(loc, []).append(error)
    messages = [(loc, _schema_message(found, loc, model)) for loc, found in grouped.items()]
    return [(loc, text) for loc, text in messages if not _typo_of(loc, grouped)]


def _typo_of(loc: tuple[str | int, ...], grouped: Mapping[tuple[str | int, ...], list[Mapping[str, Any]]]) -> bool:
    """Whether `loc` is a required key reported missing only because an unknown key beside it is its
    misspelling (`titel:` for `title:`): that key's "did you mean" line says it all, once."""
    if not loc or not all(e["type"] == "missing" for e in grouped[loc]):
        return False
    extras = [str(other[-1]) for other, found in grouped.items() if other[:-1] == loc[:-1] and other
              and any(e["type"] == "extra_forbidden" for e in found)]
    return bool(difflib.get_close_matches(str(loc[-1]), extras, n=1, cutoff=0.6))


def _fields_at(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """The field names of the model that holds the values at `path` (none when it is not one model)."""
    kinds: list[Any] = [model]
    for part in path:
        inner = [_inner(member, part) for kind in kinds for member in _members(kind)]
        kinds = [kind for kind in inner if kind is not None]
    models = [member for kind in kinds for member in _members(kind) if _is_model(member)]
    return [field.alias or name for name, field in models[0].model_fields.items()] if len(models) == 1 else []


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and isinstance(getattr(kind, "model_fields", None), dict)


def _members(kind: Any) -> tuple[Any, ...]:
    """The types a hint allows: the members of a union (`X | None`), the type inside `Annotated`."""
    if get_origin(kind) is Annotated:
        return _members(get_args(kind)[0])
    if get_origin(kind) in (Union, UnionType):
        return tuple(m for arg in get_args(kind) for m in _members(arg))
    return (kind,)


def _inner(kind: Any, part: str | int) -> Any:
    """The type of `part` inside a value of type `kind` (a model's field, a list's item, a dict's value)."""
    if _is_model(kind):
        field = kind.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field else None
    args = get_args(kind)
    if get_origin(kind) in (list, tuple) and isinstance(part, int) and args:
        return args[0]
    return args[1] if get_origin(kind) is dict and len(args) == 2 else None


_ALTERNATIVES = ("a valid string", "a valid integer", "a valid number", "a valid boolean", "a valid list")


def _schema_message(errors: list[Mapping[str, Any]], loc: tuple[str | int, ...], model: type[BaseModel] | None) -> str:
    if any(e["type"] == "extra_forbidden" for e in errors):
        allowed = _fields_at(model, loc[:-1]) if model and loc else []
        return unknown("key", loc[-1], allowed) if allowed else "unknown key"
    if len(errors) == 1 and errors[0]["type"] == "value_error":   # a validator's own sentence
        return str(errors[0]["msg"]).removeprefix("Value error, ")
    got = errors[0].get("input")
    shown = type(got).__name__ if isinstance(got, (dict, list)) else repr(got)
    wants = list(dict.fromkeys(str(e["msg"]) for e in errors))
    if len(wants) > 1:   # the members of a union, each "Input should be a valid ...", in one order whatever the union's
        alternatives = sorted((w.removeprefix("Input should be ") for w in wants), key=lambda a: _ALTERNATIVES.index(a) if a in _ALTERNATIVES else len(_ALTERNATIVES))
        wants = ["Input should be " + ", ".join(alternatives[:-1]) + " or " + alternatives[-1]]
    return f"{wants[0]} (received {shown})"
