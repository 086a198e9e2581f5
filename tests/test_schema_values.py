"""`recipes.schema.ArgValue`: an engine arg's value is checked member by member by exact type (cheaper
than pydantic's smart union) and must give what the smart union gives: the same value, of the same
type (a YAML float keeps its spelling), and the same message for a bad value."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from cookbookgen.errors import schema_messages
from cookbookgen.recipes.load import YamlFloat
from cookbookgen.recipes.schema import ArgValue, Scalar

from conftest import examples

# the union as pydantic checks it by default (a list of mappings: ATOM's extra-kv-connectors, schema.MAPPING_LIST_ARGS)
SMART = TypeAdapter(dict[str, Scalar | list[Scalar] | list[dict[str, Any]] | None])
EXACT = TypeAdapter(dict[str, ArgValue])

SCALARS = st.one_of(st.text(max_size=5), st.booleans(), st.integers(),
                    st.floats(allow_nan=False).map(lambda f: YamlFloat(f, repr(f))))
BAD = st.one_of(st.dictionaries(st.text(max_size=2), st.integers(), max_size=2), st.dates(),
                st.builds(datetime.datetime, st.integers(2000, 2030), st.integers(1, 12), st.integers(1, 28)))
VALUES = st.one_of(st.none(), SCALARS, BAD, st.lists(st.one_of(SCALARS, BAD, st.lists(SCALARS, max_size=1)), max_size=3))


def _outcome(adapter: TypeAdapter[Any], args: dict[str, Any]) -> Any:
    try:
        value = adapter.validate_python(args)
    except ValidationError as exc:
        return ("error", schema_messages(exc.errors()))
    return ("ok", [(k, type(v), [(type(x), x) for x in v] if isinstance(v, list) else v,
                    str(v) if isinstance(v, float) else None) for k, v in value.items()])


@settings(max_examples=examples(400), deadline=None)
@given(args=st.dictionaries(st.sampled_from(["tp", "mem", "flag", "x"]), VALUES, max_size=4))
def test_exact_members_give_what_the_smart_union_gives(args: dict[str, Any]) -> None:
    assert _outcome(EXACT, args) == _outcome(SMART, args)


def test_a_bool_stays_a_bool_and_a_float_keeps_its_spelling() -> None:
    value = EXACT.validate_python({"a": True, "b": 1, "c": YamlFloat(0.9, "0.90"), "d": [False, 0, "0"]})
    assert value["a"] is True and type(value["b"]) is int and str(value["c"]) == "0.90"
    assert [type(x) for x in value["d"]] == [bool, int, str]
