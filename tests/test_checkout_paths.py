"""`Checkout.recipe_path` of a working tree (`FolderView`) on any tree of folders, files and symbolic links
(inside the checkout, out of it, dangling, in loops) finds what `Path.resolve` finds (as a path relative to
the checkout), and a path it cannot resolve is one clear error, not a traceback."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.errors import CookbookError, Problem
from cookbookgen.recipes.checkout import Checkout
from cookbookgen.recipes.view import FolderView

from test_bad_input import _copy_source, one_problem

from conftest import examples

NAMES = ["a", "b", "c", "l1", "l2", "f.yaml"]
FOLDERS = ["a", "b", "a/c", "b/c"]
# link (under the e2e root) -> target, relative to the link's folder or absolute (`/` marks the e2e root,
# `^` the folder outside the checkout)
TARGETS = ["a", "b", "c", "a/c", "../a", "../../outside", "f.yaml", "l1", "l2", "missing", "/a", "^", "^/f.yaml"]
LINKS = st.dictionaries(st.sampled_from(["l1", "l2", "a/l1", "b/l2", "a/c/l1"]), st.sampled_from(TARGETS), max_size=4)
QUERIES = st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map("/".join), min_size=1, max_size=6)
# an entry's `srt-recipe-dir`, which the recipe's path is under: `..` in it may leave the checkout
RECIPE_DIRS = st.sampled_from([None, "a", "a/c", "l1", "a/..", "../../outside", "/tmp"])


def _tree(top: Path, links: dict[str, str]) -> Path:
    e2e = top / "checkout" / "inferencex-e2e"
    outside = top / "outside"
    for folder in FOLDERS:
        (e2e / folder).mkdir(parents=True, exist_ok=True)
        (e2e / folder / "f.yaml").write_text("a: 1\n")
    outside.mkdir()
    (outside / "f.yaml").write_text("a: 1\n")
    for link, target in links.items():
        place = e2e / link
        if target.startswith("/"):
            target = str(e2e / target[1:])
        elif target.startswith("^"):
            target = str(outside) + target[1:]
        if place.parent.is_dir() and not place.exists() and not place.is_symlink():
            os.symlink(target, place)
    return top / "checkout"


def _expected(root: Path, ref: str, recipe_dir: str | None) -> tuple[str, str]:
    """What `recipe_path` of `ref` should give, from `Path.resolve` of the whole path."""
    real_root = root.resolve()
    try:
        path = (root / "inferencex-e2e" / (recipe_dir or "") / ref).resolve()
    except RuntimeError:
        return ("error", "a loop of symbolic links")
    except OSError as exc:
        return ("error", str(exc.strerror))
    if not path.is_relative_to(real_root):
        return ("error", "leaves the checkout")
    if not path.is_file():
        return ("error", "recipe file not found")
    return ("path", str(path.relative_to(real_root)))


def _got(checkout: Checkout, ref: str, recipe_dir: str | None) -> tuple[str, str]:
    try:
        return ("path", str(checkout.recipe_path(ref, Problem("master.yaml", 3, "k", ""), recipe_dir)))
    except CookbookError as exc:
        return ("error", exc.problems[0].message)


@settings(max_examples=examples(150), deadline=None)
@given(LINKS, QUERIES, RECIPE_DIRS)
def test_a_recipe_path_resolves_as_the_whole_path_does(links: dict[str, str], refs: list[str], recipe_dir: str | None) -> None:
    with tempfile.TemporaryDirectory() as top:
        root = _tree(Path(top), links)
        checkout = Checkout(FolderView(root))     # one checkout for every query
        for ref in refs:
            kind, text = _got(checkout, ref, recipe_dir)
            want_kind, want_text = _expected(root, ref, recipe_dir)
            assert kind == want_kind, (ref, text, want_text)
            assert text == want_text if kind == "path" else want_text in text, (ref, text, want_text)


def test_a_recipe_through_a_loop_of_links_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy_source(tmp_path)
    recipes = root / "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes"
    os.symlink("loop-b", recipes / "loop-a")
    os.symlink("loop-a", recipes / "loop-b")
    master = root / "inferencex-e2e/configs/nvidia-master.yaml"
    master.write_text(master.read_text().replace("recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml:override_tp4_c1",
                                                 "recipes/loop-a/agg-variants.yaml:override_tp4_c1"))
    match = one_problem(capsys, ["render", "--source", str(root), "--config", "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg", "--point", "c1"])
    assert match["file"].endswith("nvidia-master.yaml") and "a loop of symbolic links" in match["msg"]
