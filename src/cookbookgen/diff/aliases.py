"""CLI flags <-> SGLang ServerArgs fields, from the packaged alias table (`server_args_aliases.yaml`,
read once with `parse_yaml`). Used by the log reader (`diff.logs`) and the value comparison
(`diff.words`). No I/O but reading the packaged table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..recipes.load import Document, KeyPath, parse_yaml

ALIASES_RESOURCE = "server_args_aliases.yaml"


@dataclass(frozen=True)
class AliasTable:
    """The packaged alias table, checked: every flag names exactly one field."""

    field_of: dict[str, str]
    constants: dict[str, tuple[str, object]]
    not_server_args: frozenset[str]
    not_server_arg_prefixes: tuple[str, ...]


def _table_part(doc: Document, key: str, kind: type) -> Any:
    value = doc.data.get(key) if isinstance(doc.data, dict) else None
    if not isinstance(value, kind):
        raise doc.error((key,), f"expected a {kind.__name__}")
    return value


def _add_flag(doc: Document, field_of: dict[str, str], path: KeyPath, flag: object, field: str) -> None:
    if not isinstance(flag, str) or not flag.startswith("--"):
        raise doc.error(path, f"{flag!r} is not a --flag")
    if field_of.get(flag, field) != field:
        raise doc.error(path, f"{flag} already names field {field_of[flag]!r}")
    field_of[flag] = field


def _alias_flags(doc: Document, field_of: dict[str, str]) -> None:
    for field, spellings in _table_part(doc, "fields", dict).items():
        if not isinstance(spellings, list) or not spellings:
            raise doc.error(("fields", field), "expected a non-empty list of flags")
        for i, flag in enumerate(spellings):
            _add_flag(doc, field_of, ("fields", field, i), flag, field)


def _alias_constants(doc: Document, field_of: dict[str, str]) -> dict[str, tuple[str, object]]:
    constants: dict[str, tuple[str, object]] = {}
    for flag, target in _table_part(doc, "switch_constants", dict).items():
        path = ("switch_constants", flag)
        if not isinstance(target, dict) or set(target) != {"field", "value"}:
            raise doc.error(path, "expected {field: ..., value: ...}")
        _add_flag(doc, field_of, path, flag, str(target["field"]))
        constants[flag] = (str(target["field"]), target["value"])
    return constants


def load_alias_table(doc: Document) -> AliasTable:
    """Check and index an alias table document (the packaged one, or a test's)."""
    field_of: dict[str, str] = {}
    _alias_flags(doc, field_of)
    for flag, field in _table_part(doc, "deprecated", dict).items():
        _add_flag(doc, field_of, ("deprecated", flag), flag, str(field))
    constants = _alias_constants(doc, field_of)
    others = _table_part(doc, "not_server_args", list)
    prefixes = _table_part(doc, "not_server_arg_prefixes", list)
    return AliasTable(field_of, constants, frozenset(others), tuple(prefixes))


@lru_cache(maxsize=1)
def alias_table() -> AliasTable:
    """The packaged table (`server_args_aliases.yaml`), read once."""
    text = resources.files(__package__).joinpath(ALIASES_RESOURCE).read_text(encoding="utf-8")
    return load_alias_table(parse_yaml(text, f"cookbookgen/diff/{ALIASES_RESOURCE}"))


def normal_flag(flag: str) -> str:
    """`--mem_fraction_static` / `mem-fraction-static` -> `--mem-fraction-static`."""
    return "--" + flag.strip().lstrip("-").replace("_", "-")


def derived_field(flag: str) -> str:
    return normal_flag(flag)[2:].replace("-", "_")


def field_for_flag(flag: str) -> str:
    """The ServerArgs field a flag sets: `--tensor-parallel-size` and `--tp-size` -> `tp_size`."""
    normal = normal_flag(flag)
    return alias_table().field_of.get(normal, derived_field(normal))


def is_server_arg_flag(flag: str) -> bool:
    """False for flags known not to be ServerArgs fields (Dynamo's own options, `--config`)."""
    table = alias_table()
    normal = normal_flag(flag)
    return normal not in table.not_server_args and not normal.startswith(table.not_server_arg_prefixes)
