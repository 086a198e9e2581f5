"""The day of each perf-changelog entry of a whole-checkout build, read from the git history with the
object reader (`Checkout.git_facts`: no git program, no repository config), and the entry naming rule."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

from cookbookgen.recipes.checkout import Checkout, entry_days
from cookbookgen.recipes.view import FolderView

ENTRY_A = "- config-keys:\n    - a*\n  description:\n    - \"first\"\n  pr-link: https://github.com/o/r/pull/1\n"
ENTRY_B = "- config-keys:\n    - b*\n  description:\n    - \"second\"\n  pr-link: https://github.com/o/r/pull/2\n"


def _commit(root: Path, text: str, when: str) -> None:
    (root / "perf-changelog.yaml").write_text(text)
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", when], check=True, env=env)


def test_each_entry_is_dated_by_the_commit_that_added_it_and_an_edit_keeps_the_day(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    _commit(root, ENTRY_A, "2026-03-01T12:00:00Z")
    _commit(root, ENTRY_A + "\n" + ENTRY_B, "2026-04-02T12:00:00Z")
    # a later edit of A's description: the entry (named by its pr-link) keeps the day it was added
    _commit(root, ENTRY_A.replace("first", "first, reworded") + "\n" + ENTRY_B, "2026-05-03T12:00:00Z")
    facts = Checkout(FolderView(root)).git_facts()
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert facts.commit == head
    assert facts.changelog_days == {1: dt.date(2026, 3, 1), 7: dt.date(2026, 4, 2)}


def test_a_folder_that_is_no_git_work_tree_has_no_facts(tmp_path: Path) -> None:
    (tmp_path / "perf-changelog.yaml").write_text(ENTRY_A)
    facts = Checkout(FolderView(tmp_path)).git_facts()
    assert (facts.commit, facts.changelog_days) == (None, {})


def test_an_entry_removed_and_added_again_is_dated_by_its_return() -> None:
    day = dt.date
    versions = [(day(2026, 6, 1), (ENTRY_A + ENTRY_B).encode()), (day(2026, 5, 1), ENTRY_B.encode()),
                (day(2026, 4, 1), (ENTRY_A + ENTRY_B).encode()), (day(2026, 3, 1), None)]
    assert entry_days(versions) == {1: day(2026, 6, 1), 6: day(2026, 4, 1)}
