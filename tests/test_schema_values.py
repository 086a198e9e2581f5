"""`recipes.schema.ArgValue`: an engine arg's value is checked member by member by exact type (cheaper
than pydantic's smart union) and must give what the smart union gives: the same value, of the same
type (a YAML float keeps its spelling), and the same message for a bad value."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

from cookbookgen.errors import CookbookError, schema_messages
from cookbookgen.recipes.bundle import EffectiveRecipe
from cookbookgen.recipes.merge import deep_merge
from cookbookgen.recipes.load import YamlFloat
from cookbookgen.recipes.schema import ArgValue, Scalar, normalise

SMART = TypeAdapter(dict[str, Scalar | list[Scalar] | None])    # the union as pydantic checks it by default
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


@settings(max_examples=400, deadline=None)
@given(args=st.dictionaries(st.sampled_from(["tp", "mem", "flag", "x"]), VALUES, max_size=4))
def test_exact_members_give_what_the_smart_union_gives(args: dict[str, Any]) -> None:
    assert _outcome(EXACT, args) == _outcome(SMART, args)


def test_a_bool_stays_a_bool_and_a_float_keeps_its_spelling() -> None:
    value = EXACT.validate_python({"a": True, "b": 1, "c": YamlFloat(0.9, "0.90"), "d": [False, 0, "0"]})
    assert value["a"] is True and type(value["b"]) is int and str(value["c"]) == "0.90"
    assert [type(x) for x in value["d"]] == [bool, int, str]


# --- a variant's typed view made from a sibling's ------------------------------------------------------

ARG_VALUES = st.one_of(SCALARS, st.none(), st.lists(SCALARS, max_size=2), st.dictionaries(st.just("k"), st.integers(), max_size=1))
SECTION = st.dictionaries(st.sampled_from(["tp", "mem", "x", "y"]), ARG_VALUES, max_size=3)
OVERRIDE = st.fixed_dictionaries({}, optional={     # mostly valid: a variant is made from a sibling that validates
    "roles": st.fixed_dictionaries({"agg": st.fixed_dictionaries({}, optional={
        "args": SECTION, "env": st.dictionaries(st.sampled_from(["E", "F"]), st.one_of(SCALARS, st.none()), max_size=2),
        "gpus": st.integers(1, 4), "workers": st.integers(0, 2)})}),
    "benchmark": st.fixed_dictionaries({"env": st.fixed_dictionaries({"CONC": st.sampled_from(["1", "2"])})}),
    "resources": st.fixed_dictionaries({"gpus_per_node": st.integers(1, 8)})})


def _exact(value: Any) -> Any:
    """A value with the type of everything in it (`0.90` and `0.9`, `True` and `1` stay apart)."""
    if isinstance(value, BaseModel):
        return (type(value), _exact(value.__dict__), _exact(value.__pydantic_extra__ or {}))
    if isinstance(value, dict):
        return tuple((k, _exact(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(map(_exact, value)))
    return (type(value), str(value), value)


def _typed(recipe: EffectiveRecipe, sibling: Any = None) -> Any:
    try:
        normal, typed = normalise(recipe, sibling)
    except CookbookError as exc:
        return ("error", str(exc))
    return _exact(typed)


@settings(max_examples=300, deadline=None)
@given(first=OVERRIDE, second=OVERRIDE)
@example(first={}, second={"roles": {"agg": {"args": {"x": {}}}}})         # a bad value only the variant has
@example(first={"roles": {"agg": {"env": {"F": "1"}}}}, second={"roles": {"agg": {"env": {"F": YamlFloat(1.5, "1.50")}}}})
def test_a_variant_made_from_its_sibling_is_the_variant_validated_whole(first: dict[str, Any], second: dict[str, Any]) -> None:
    base = {"roles": {"agg": {"gpus": 4, "args": {"tp": 4, "x": YamlFloat(0.9, "0.90")}, "env": {"E": "1"}}},
            "benchmark": {"env": {"CONC": "1"}, "type": "custom"}, "model": {"path": "hf:org/m"}}
    variants = [EffectiveRecipe("r.yaml", f"override_{i}", deep_merge(base, over), {}, (base, over)) for i, over in enumerate((first, second))]
    try:
        sibling = normalise(variants[0])
    except CookbookError:
        return                                   # only a variant that normalises can be a sibling
    assert _typed(variants[1], sibling) == _typed(variants[1])


def test_a_sibling_is_used_only_where_the_two_differ_in_args_env_or_outside_the_schema() -> None:
    from cookbookgen.recipes import schema

    base = {"roles": {"agg": {"args": {"tp": 4}, "env": {"E": "1"}}}, "benchmark": {"env": {"CONC": "1"}}}
    first = EffectiveRecipe("r.yaml", "override_a", deep_merge(base, {"roles": {"agg": {"args": {"mem": 0.8}}}}), {})
    second = EffectiveRecipe("r.yaml", "override_b", deep_merge(base, {"roles": {"agg": {"args": {"mem": 0.7}}}, "benchmark": {"env": {"CONC": "2"}}}), {})
    sibling = normalise(first)
    made = schema._from_sibling(second, sibling)
    assert made is not None and made.roles["agg"].args == {"tp": 4, "mem": 0.7} and made.model_extra == {"benchmark": {"env": {"CONC": "2"}}}
    assert sibling[1].roles["agg"].args == {"tp": 4, "mem": 0.8}               # the sibling's view is left as it was
    other = EffectiveRecipe("r.yaml", "override_c", deep_merge(base, {"model": {"path": "hf:x"}}), {})
    assert schema._from_sibling(other, sibling) is None                        # a field of the schema differs: validated whole
