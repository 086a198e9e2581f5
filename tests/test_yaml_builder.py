"""The line-recording YAML builder gives the data PyYAML's safe loader gives, with the line of every key.

`parse_yaml` composes nodes with a loader whose tag resolution is memoized per plain-scalar text and
builds plain data itself (fast paths for str, int, float, bool and null scalars). These properties
hold it to `yaml.safe_load` on generated documents: plain, quoted and ambiguous scalars (`yes`, `0x1F`,
`1e3`, `~`, `.inf`), block and flow collections, anchors, aliases and merge keys.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.errors import CookbookError
from cookbookgen.recipes.load import YamlFloat, parse_yaml

from conftest import examples

# Plain scalars whose tag depends on the text: each resolves to str, int, float, bool or null.
AMBIGUOUS = [
    "0", "1", "-7", "+3", "0x1F", "0o17", "017", "1_000", "190:20:30",
    "0.5", "0.90", "1e3", "1.0e+3", "-.inf", ".NaN", ".5",
    "true", "True", "yes", "No", "off", "ON", "y", "n",
    "null", "Null", "~", "",
    "tp", "fp8", "v0.5.1", "1.2.3", "1e", "0x", "nullx", "trueish", "--tp-size", "a b",
]
plain = st.sampled_from([t for t in AMBIGUOUS if t])
scalar_text = st.one_of(
    plain,
    plain.map(lambda t: f"'{t}'"),          # quoted: always a str, whatever the plain text would be
    plain.map(lambda t: f'"{t}"'),
    st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True),
)
key_text = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)


def key_as_built(text: str) -> str:
    """The key a plain key text builds: its YAML value as text (`no` is the boolean, so `False`)."""
    return str(next(iter(yaml.safe_load(f"{text}: 0"))))


def normalise(value: Any) -> Any:
    """What the builder promises relative to safe_load, in a form whose equality sees key order (flag
    order comes from it): keys become text; NaN compares by kind."""
    if isinstance(value, dict):
        return [(str(k), normalise(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "<nan>"
    if isinstance(value, float):
        return float(value)
    return value


def block(tree: Any, indent: int = 0) -> list[str]:
    """YAML block lines for a tree of dict/list whose leaves are already scalar text."""
    pad = " " * indent
    out: list[str] = []
    items = tree.items() if isinstance(tree, dict) else ((None, v) for v in tree)
    for key, value in items:
        lead = f"{pad}{key}:" if key is not None else f"{pad}-"
        if isinstance(value, (dict, list)) and value:
            out.append(lead)
            out.extend(block(value, indent + 2))
        elif isinstance(value, (dict, list)):
            out.append(f"{lead} {'{}' if isinstance(value, dict) else '[]'}")
        else:
            out.append(f"{lead} {value}")
    return out


def collections(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=4) | st.dictionaries(key_text, children, max_size=4)


trees = st.recursive(scalar_text, collections, max_leaves=30)
# keys distinct as built (`no` and `false` are one key, which the builder refuses as a duplicate)
documents = st.dictionaries(key_text, trees, min_size=1, max_size=6).filter(lambda d: len(set(map(key_as_built, d))) == len(d))


@settings(max_examples=examples(300), deadline=None)
@given(documents)
def test_block_documents_build_as_safe_load_does(tree: dict[str, Any]) -> None:
    text = "\n".join(block(tree)) + "\n"
    doc = parse_yaml(text, "t.yaml")
    assert normalise(doc.data) == normalise(yaml.safe_load(text))
    for number, line in enumerate(text.splitlines(), start=1):   # every top-level key's line is recorded
        if line and not line.startswith(" ") and ":" in line:
            assert doc.lines[(key_as_built(line.split(":", 1)[0]),)] == number


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(scalar_text, min_size=1, max_size=12), st.lists(plain, min_size=1, max_size=12))
def test_flow_and_repeated_scalars_keep_their_tags(values: list[str], repeated: list[str]) -> None:
    # The same text plain, quoted and again plain in one document: the memo of tags and values must not
    # leak a plain scalar's int or bool into its quoted twin, nor the other way round.
    text = "a: [" + ", ".join(values) + "]\nb: {" + ", ".join(f"k{i}: {v}" for i, v in enumerate(repeated)) + "}\n"
    text += "c: [" + ", ".join(f"'{v}'" for v in repeated) + "]\nd: [" + ", ".join(repeated) + "]\n"
    doc = parse_yaml(text, "t.yaml")
    assert normalise(doc.data) == normalise(yaml.safe_load(text))
    assert all(type(v) is str for v in doc.data["c"])


def test_floats_keep_their_spelling_and_ints_stay_exact() -> None:
    doc = parse_yaml("a: 0.90\nb: 0.9\nc: [0.90, 1e3]\nd: 0x1F\ne: 1_000\n", "t.yaml")
    a, b, (c0, c1), d, e = (doc.data[k] for k in "abcde")
    assert isinstance(a, YamlFloat) and str(a) == "0.90" and str(b) == "0.9" and str(c0) == "0.90" and str(c1) == "1e3"
    assert (d, e) == (31, 1000) and type(d) is int


small_keys = st.sampled_from(["tp", "dp", "ep", "mem", "port"])
anchored = st.lists(st.dictionaries(small_keys, plain, max_size=4), min_size=1, max_size=4)


@settings(max_examples=examples(300), deadline=None)
@given(anchored, st.data())
def test_merge_keys_build_as_safe_load_does(anchors: list[dict[str, str]], data: st.DataObject) -> None:
    # Anchored mappings that may merge earlier ones, and a point merging some of them (one `<<`, a
    # list, or two `<<` keys) with explicit keys: values and key order as PyYAML gives them.
    lines: list[str] = []
    for i, pairs in enumerate(anchors):
        earlier = data.draw(st.lists(st.integers(0, i - 1), max_size=2)) if i else []
        merge = [f"<<: *a{j}" for j in earlier[:1]] + [f"<<: [{', '.join(f'*a{j}' for j in earlier[1:])}]"] * (len(earlier) > 1)
        lines.append(f"a{i}: &a{i} {{{', '.join(merge + [f'{k}: {v}' for k, v in pairs.items()])}}}")
    chosen = data.draw(st.lists(st.integers(0, len(anchors) - 1), min_size=1, max_size=3))
    form = data.draw(st.sampled_from(["one", "list", "two"]))
    refs = [f"*a{j}" for j in chosen]
    merge = {"one": [f"<<: {refs[0]}"], "list": [f"<<: [{', '.join(refs)}]"], "two": [f"<<: {r}" for r in refs[:2]]}[form]
    explicit = data.draw(st.dictionaries(small_keys, plain, max_size=3))
    lines.append("point:")
    lines += [f"  {m}" for m in merge] + [f"  {k}: {v}" for k, v in explicit.items()]
    text = "\n".join(lines) + "\n"
    assert normalise(parse_yaml(text, "t.yaml").data) == normalise(yaml.safe_load(text))


def test_a_merge_that_includes_itself_is_one_clear_error() -> None:
    with pytest.raises(CookbookError, match=r"^t.yaml:1: a: merge keys nested deeper than"):
        parse_yaml("a: &a {<<: *a, x: 1}\n", "t.yaml")


def test_merge_keys_anchors_and_lines_match_safe_load() -> None:
    text = (
        "base: &b\n"
        "  tp: 4\n"
        "  dp: 2\n"
        "  flags: [x, 'y', 1]\n"
        "point:\n"
        "  <<: *b\n"
        "  dp: 8\n"
        "other: *b\n"
    )
    doc = parse_yaml(text, "t.yaml")
    assert normalise(doc.data) == normalise(yaml.safe_load(text))
    assert list(doc.data["point"]) == ["tp", "dp", "flags"]        # the override keeps the merged key's place
    assert doc.lines[("point", "dp")] == 7 and doc.lines[("base", "flags", 2)] == 4 and doc.lines[("point", "tp")] == 2


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("text", ["a: 1\nb: [x, y]\n", "a: [1, 2\n"])
def test_a_parse_pauses_the_garbage_collector_and_leaves_it_as_it_found_it(enabled: bool, text: str) -> None:
    """The collector is off during a parse (it found nothing and cost two thirds of a large file's
    parse) and as it was before afterwards, also when the text is bad."""
    import gc

    seen: list[bool] = []
    real_compose = yaml.compose

    def compose(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real_compose(*args, **kwargs)

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(yaml, "compose", compose)
            try:
                parse_yaml(text, "f.yaml")
            except CookbookError as exc:
                assert "YAML syntax" in str(exc) and "[" in text
            assert seen == [False] and gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
