"""Stage 4 of the diff (compare, helper): CLI flags <-> SGLang ServerArgs fields, from the packaged alias table (`server_args_aliases.yaml`,
read once with `parse_yaml`). Used by the log reader (`diff.logs`) and the value comparison
(`diff.words`). No I/O but reading the packaged table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from ..errors import CookbookError, schema_messages
from ..recipes.load import Document, KeyPath, parse_yaml

ALIASES_RESOURCE = "server_args_aliases.yaml"
Flag = Annotated[str, StringConstraints(pattern=r"^--")]


class _Constant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    value: Any


class _AliasFile(BaseModel):
    """The shape of `server_args_aliases.yaml`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fields: dict[str, Annotated[list[Flag], Field(min_length=1)]]
    deprecated: dict[Flag, str]
    switch_constants: dict[Flag, _Constant]
    not_server_args: list[str]
    not_server_arg_prefixes: list[str]


@dataclass(frozen=True)
class AliasTable:
    """The packaged alias table, checked: every flag names exactly one field."""

    field_of: dict[str, str]
    constants: dict[str, tuple[str, object]]
    not_server_args: frozenset[str]
    not_server_arg_prefixes: tuple[str, ...]


def load_alias_table(doc: Document) -> AliasTable:
    """Check and index an alias table document (the packaged one, or a test's)."""
    try:
        table = _AliasFile.model_validate(doc.data)
    except ValidationError as exc:
        raise CookbookError([doc.problem(loc, message) for loc, message in schema_messages(exc.errors(), _AliasFile)]) from None
    named: list[tuple[KeyPath, str, str]] = [(("fields", field, i), flag, field)
                                             for field, flags in table.fields.items() for i, flag in enumerate(flags)]
    named += [(("deprecated", flag), flag, field) for flag, field in table.deprecated.items()]
    named += [(("switch_constants", flag), flag, constant.field) for flag, constant in table.switch_constants.items()]
    field_of: dict[str, str] = {}
    for path, flag, field in named:
        if field_of.setdefault(flag, field) != field:
            raise doc.error(path, f"{flag} already names field {field_of[flag]!r}")
    constants = {flag: (constant.field, constant.value) for flag, constant in table.switch_constants.items()}
    return AliasTable(field_of, constants, frozenset(table.not_server_args), tuple(table.not_server_arg_prefixes))


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
