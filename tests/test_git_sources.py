"""`cookbookgen diff --source REPO` on a hostile repository (the pull request's author is the attacker):
each repository is built here with git's plumbing (`hash-object -w`, `mktree`, `commit-tree`, `replace`)
from the corpus checkout, and the public DeepSeek-V4 module's cells are pointed at its commits
(`test_diff_git`). Each case is refused or unpaired with one clear reason, writes nothing outside the
test's folder, runs no command the repository names, and never ends in a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import zlib
from pathlib import Path, PurePosixPath

import pytest

from cookbookgen.cli import main
from cookbookgen.recipes.gitrepo import GitRepo
from cookbookgen.recipes.script import run_script
from cookbookgen.recipes.view import script_files

from conftest import git as _git
from test_diff_git import AGG, CORPUS, DISAGG, DISAGG_RECIPE, MEGAMOE, _module

AGG_RECIPE = "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv4/sglang/gb300-fp4/agentx/agg-variants.yaml"
MEGAMOE_POINTS = {"1p1d-dep8-dep16/c480", "2p1d-dep8-dep16/c960", "3p1d-dep8-dep16/c1440"}


def _repo(top: Path) -> tuple[Path, str]:
    """A clone of the corpus checkout at one commit (A), and A's id."""
    root = top / "inferencex"
    subprocess.run(["cp", "-r", str(CORPUS / "inferencex"), str(root)], check=True)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "A")
    return root, _git(root, "rev-parse", "HEAD")


def _commit_with(root: Path, parent: str, entries: list[str], message: str) -> str:
    """A commit whose root tree is `parent`'s plus `entries` (`git mktree` lines, duplicates allowed)."""
    listing = _git(root, "ls-tree", parent) + "\n" + "\n".join(entries) + "\n"
    tree = subprocess.run(["git", "-C", str(root), "mktree"], input=listing, capture_output=True, text=True, check=True).stdout.strip()
    return _git(root, "commit-tree", tree, "-p", parent, "-m", message)


def _blob(root: Path, data: str) -> str:
    return subprocess.run(["git", "-C", str(root), "hash-object", "-w", "--stdin"], input=data, capture_output=True, text=True,
                          check=True).stdout.strip()


def _diff(capsys: pytest.CaptureFixture[str], tmp_path: Path, root: Path, shas: dict[str, str]) -> tuple[int, dict, str]:
    code = main(["diff", "--cookbook", str(_module(tmp_path, shas)), "--source", str(root), "--format", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _cells(doc: dict) -> dict[str, tuple[str, str | None, str]]:
    return {c["cell"]: (c["state"], c["reason"], c["detail"]) for c in doc["cells"]}


def _megamoe(doc: dict) -> set[str]:
    return {f["point"] for f in doc["findings"] if f["item"] == "--enable-w4a4-mxfp4-megamoe" and f["cls"] == "mismatch"}


def _loose(root: Path, sha: str) -> Path:
    return root / ".git" / "objects" / sha[:2] / sha[2:]


def test_a_link_and_a_folder_of_one_name_write_nothing_and_leave_the_cells_unpaired(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, a = _repo(tmp_path)
    target = tmp_path / "target" / "dir"
    target.mkdir(parents=True)
    pwned = _blob(root, "pwned\n")
    inner = subprocess.run(["git", "-C", str(root), "mktree"], input=f"100644 blob {pwned}\tPWNED\n",
                           capture_output=True, text=True, check=True).stdout.strip()
    link = _blob(root, str(target))
    hostile = _commit_with(root, a, [f"120000 blob {link}\tzz", f"040000 tree {inner}\tzz"], "zz twice")
    assert "zz" in _git(root, "ls-tree", "--name-only", hostile).splitlines(), "git holds the two entries as they were written"
    code, doc, err = _diff(capsys, tmp_path, root, {f"{AGG}#0": hostile, **{f"{DISAGG}#{i}": a for i in range(4)}})
    assert not (target / "PWNED").exists() and list(target.iterdir()) == []
    state, reason, detail = _cells(doc)[f"{AGG}#0"]
    assert (state, reason) == ("unpaired", "object-missing") and detail.endswith("is corrupt (it lists one name twice)")
    assert _cells(doc)[f"{DISAGG}#1"][0] == "checked", "the other cells go on"
    assert code == 1 and err == ""


def test_a_recipe_that_is_a_link_to_a_host_file_is_not_followed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The drifted recipe sits on the host; the commit's recipe path is a symbolic link to it."""
    root, a = _repo(tmp_path)
    outside = tmp_path / "outside.yaml"
    outside.write_text((root / AGG_RECIPE).read_text(encoding="utf-8").replace("tp8", "tp1"), encoding="utf-8")
    (root / AGG_RECIPE).unlink()
    os.symlink(outside, root / AGG_RECIPE)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a link out")
    linked = _git(root, "rev-parse", "HEAD")
    code, doc, err = _diff(capsys, tmp_path, root, {f"{AGG}#0": linked})
    state, reason, detail = _cells(doc)[f"{AGG}#0"]
    assert (state, reason) == ("unpaired", "recipe-missing") and "is, or is under, a symbolic link (a git source follows none)" in detail
    assert code == 1 and err == ""


def test_a_promisor_remote_is_never_asked_for_a_missing_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, a = _repo(tmp_path)
    marker = tmp_path / "marker"
    fetch = tmp_path / "fetch.sh"
    fetch.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    fetch.chmod(0o755)
    _git(root, "config", "core.repositoryformatversion", "1")
    _git(root, "config", "extensions.partialClone", "origin")
    _git(root, "config", "remote.origin.url", f"file://{tmp_path}/nowhere")
    _git(root, "config", "remote.origin.promisor", "true")
    _git(root, "config", "remote.origin.uploadpack", str(fetch))
    _git(root, "config", "core.fsmonitor", str(fetch))
    blob = _git(root, "rev-parse", f"{a}:{AGG_RECIPE}")
    _loose(root, blob).unlink()
    # git itself runs the command to fetch the object (what cookbookgen's earlier `git cat-file` did)
    assert subprocess.run(["git", "-C", str(root), "cat-file", "-p", blob], capture_output=True).returncode != 0
    assert marker.exists(), "the hostile configuration works on git"
    marker.unlink()
    code, doc, err = _diff(capsys, tmp_path, root, {f"{AGG}#0": a, **{f"{DISAGG}#{i}": a for i in range(4)}})
    assert not marker.exists(), "no command of the repository's config ran"
    cells = _cells(doc)
    assert cells[f"{AGG}#0"] == ("unpaired", "object-missing", f"object {blob} is missing")
    assert cells[f"{DISAGG}#1"][0] == "checked" and _megamoe(doc) == MEGAMOE_POINTS, "the other cells go on"
    assert code == 1 and err == ""


def test_a_replace_ref_and_grafts_do_not_hide_a_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A keeps the recipe's megamoe flag (which the module lacks: a mismatch); B drops it. `git replace A B`
    makes git show B's files for A: the cells citing A must still be checked against A's."""
    root, a = _repo(tmp_path)
    recipe = root / DISAGG_RECIPE
    head, _, tail = recipe.read_text(encoding="utf-8").rpartition(MEGAMOE)
    recipe.write_text(head + tail, encoding="utf-8")
    _git(root, "commit", "-q", "-am", "B")
    b = _git(root, "rev-parse", "HEAD")
    _git(root, "replace", a, b)
    (root / ".git" / "info" / "grafts").write_text(f"{a} {b}\n")
    assert _git(root, "show", f"{a}:{DISAGG_RECIPE}") == (head + tail).strip(), "git reads B in place of A"
    code, doc, err = _diff(capsys, tmp_path, root, {f"{DISAGG}#{i}": a for i in range(4)})
    assert _megamoe(doc) == MEGAMOE_POINTS, "A's recipe was compared: the drift is found"
    assert {c["tree"] for c in doc["cells"] if c["state"] == "checked"} == {f"{root}@{a}"}
    assert code == 1 and err == ""


def test_a_missing_or_corrupt_object_leaves_its_cells_unpaired(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, a = _repo(tmp_path)
    _git(root, "commit", "-q", "--allow-empty", "-m", "B")          # HEAD: A's files, A as its parent
    blob = _git(root, "rev-parse", f"HEAD:{AGG_RECIPE}")
    _loose(root, blob).unlink()                                     # a blob of HEAD's tree
    disagg = _git(root, "rev-parse", f"HEAD:{DISAGG_RECIPE}")
    path = _loose(root, disagg)
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob 5\0hello"))               # well formed, but not the object its id names
    code, doc, err = _diff(capsys, tmp_path, root, {f"{AGG}#0": a, **{f"{DISAGG}#{i}": a[:10] for i in range(4)}})
    cells = _cells(doc)
    assert cells[f"{AGG}#0"] == ("unpaired", "object-missing", f"object {blob} is missing")
    assert cells[f"{DISAGG}#0"] == ("unpaired", "object-missing", f"object {disagg} is corrupt (its content does not match its id)")
    assert {cells[f"{DISAGG}#{i}"] for i in range(4)} == {cells[f"{DISAGG}#0"]}, "every cell citing that commit"
    assert code == 1 and err == ""
    commit = _loose(root, a)
    commit.unlink()                                                  # the commit itself
    code, doc, err = _diff(capsys, tmp_path, root, {f"{AGG}#0": a})
    assert _cells(doc)[f"{AGG}#0"] == ("unpaired", "commit-missing", a) and code == 1 and err == ""
    assert main(["diff", "--explain", "object-missing"]) == 0 and "missing from the `--source` repository or corrupt" in capsys.readouterr().out


def test_a_packed_bare_mirror_reads_as_the_clone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, a = _repo(tmp_path)
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(root), str(bare)], check=True)
    _git(bare, "repack", "-adq")
    _git(bare, "pack-refs", "--all")
    assert not any((bare / "objects").glob("??/*")) and list((bare / "objects" / "pack").glob("*.pack"))
    shas = {f"{AGG}#0": a[:7], **{f"{DISAGG}#{i}": a for i in range(4)}}
    clone, mirror = _diff(capsys, tmp_path, root, shas), _diff(capsys, tmp_path, bare, shas)
    assert mirror[0] == clone[0] == 1 and mirror[1]["findings"] == clone[1]["findings"] and _megamoe(mirror[1]) == MEGAMOE_POINTS
    assert [c["state"] for c in mirror[1]["cells"]] == [c["state"] for c in clone[1]["cells"]]
    assert GitRepo(bare).commit("HEAD") == a and GitRepo(root).commit(a[:7]) == a


def test_a_benchmark_script_reaches_the_sandbox_as_the_bytes_of_its_blobs(tmp_path: Path) -> None:
    """The script, the shell files of its folder and benchmark_lib.sh; never a link (here: one to the host's
    /etc), a folder, nor a file the script does not source (helper.py)."""
    root, _ = _repo(tmp_path)
    folder = root / "benchmarks" / "single_node" / "fixed_seq_len"
    folder.mkdir(parents=True)
    (root / "benchmarks" / "benchmark_lib.sh").write_text("echo never sourced\n")
    (folder / "run.sh").write_text('source "$(dirname "$0")/../../benchmark_lib.sh"\n'
                                   'python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP"\n')
    (folder / "helper.py").write_text("print(1)\n")
    (folder / "common.env").write_text("X=1\n")
    os.symlink("/etc", folder / "etc")
    (folder / "sub").mkdir()
    (folder / "sub" / "x.sh").write_text("exit 0\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a script")
    view = GitRepo(root).view("HEAD")
    assert view is not None
    script = PurePosixPath("benchmarks/single_node/fixed_seq_len/run.sh")
    files = script_files(view, script, str(script))
    assert files.main == str(script)
    assert sorted(files.files) == ["benchmarks/benchmark_lib.sh", "benchmarks/single_node/fixed_seq_len/common.env", str(script)]
    assert files.files[str(script)] == (folder / "run.sh").read_bytes()
    capture = run_script(files, str(script), {"MODEL": "m", "TP": "2"})
    assert [(x.kind, x.argv) for x in capture.launches] == [("sglang", ("--model-path", "m", "--tp", "2"))]


def test_a_packed_blob_or_delta_that_would_inflate_past_the_limit_is_refused_before_inflating(tmp_path: Path,
                                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A pack of a few KB can hold a blob of gigabytes (zeros compress 1000 to 1): its declared size, and a
    delta's base and result sizes, are read first. Here the limit is 1 MiB and the files 2 MiB."""
    from cookbookgen.recipes import gitrepo
    from cookbookgen.recipes.view import ObjectMissing

    monkeypatch.setattr(gitrepo, "MAX_OBJECT_BYTES", 1 << 20)
    root = tmp_path / "bomb"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "small.yaml").write_text("a: 1\n")
    big = bytearray(2 << 20)
    for n in range(3):          # three versions of one big file: git stores two of them as deltas
        big[n * 1000] = 1
        (root / "big.yaml").write_bytes(bytes(big))
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", str(n))
    _git(root, "repack", "-adq", "--depth=5", "--window=5")
    shas = [_git(root, "rev-parse", f"HEAD~{n}:big.yaml") for n in range(3)]
    verify = _git(root, "verify-pack", "-v", *map(str, (root / ".git" / "objects" / "pack").glob("*.idx")))
    deltas = [line.split()[0] for line in verify.splitlines() if len(line.split()) == 7]
    assert set(deltas) & set(shas), "at least one version is a delta"
    repo = GitRepo(root)
    for n, sha in enumerate(shas):
        view = repo.view("HEAD" if n == 0 else _git(root, "rev-parse", f"HEAD~{n}"))
        assert view is not None and view.read(PurePosixPath("small.yaml"), "small.yaml", 100) == b"a: 1\n"
        with pytest.raises(ObjectMissing, match=f"object {sha} would inflate past 1048576 bytes"):
            view.read(PurePosixPath("big.yaml"), "big.yaml", 100)


def test_a_missing_tree_on_a_recipes_path_leaves_its_cells_object_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, a = _repo(tmp_path)
    folder = AGG_RECIPE.rsplit("/", 1)[0]
    tree = _git(root, "rev-parse", f"HEAD:{folder}")
    _loose(root, tree).unlink()
    code, doc, err = _diff(capsys, tmp_path, root, {f"{AGG}#0": a})
    assert _cells(doc)[f"{AGG}#0"] == ("unpaired", "object-missing", f"object {tree} is missing"), "not recipe-missing: the file may be there"
    assert code == 1 and err == ""
    assert main(["diff", "--cookbook", str(_module(tmp_path, {f"{AGG}#0": a})), "--source", str(root), "--config", AGG]) == 1
    out, err = capsys.readouterr()
    assert f"unpaired {AGG}#0 ({AGG}): object-missing: object {tree} is missing [{root}@{a}]" in out and err == ""


# --- the same view of a working tree ---------------------------------------------------------------

def test_a_working_trees_master_config_linked_out_of_the_checkout_or_a_fifo_recipe_is_one_clear_line(tmp_path: Path,
                                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from test_bad_input import one_problem, run_cli
    from test_bad_input_more import AGG as FLASH_AGG, _checkout, _master

    root = _checkout(tmp_path)
    master = _master(root)
    outside = tmp_path / "outside-master.yaml"
    outside.write_bytes(master.read_bytes())
    master.unlink()
    os.symlink(outside, master)
    argv = ["render", "--source", str(root), "--config", FLASH_AGG, "--point", "c1"]
    code, _, err = run_cli(capsys, argv)      # the whole file is at fault: no line
    assert (code, err) == (2, f"cookbookgen: error: inferencex-e2e/configs/nvidia-master.yaml: leaves the checkout (a symbolic link to {outside})\n")
    master.unlink()
    master.write_bytes(outside.read_bytes())
    recipe = root / "inferencex-e2e/benchmarks/multi_node/srt-slurm-recipes/dsv41flash/sglang/gb300-fp4/agentx/agg-variants.yaml"
    recipe.unlink()
    os.mkfifo(recipe)           # never opened: not a regular file, so not a recipe
    match = one_problem(capsys, argv)
    assert match["file"] == "inferencex-e2e/configs/nvidia-master.yaml" and match["msg"].startswith("recipe file not found: ")
