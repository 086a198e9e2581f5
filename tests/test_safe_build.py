"""`build` and `serve` lose nothing: they replace or delete only what they wrote (a marked site, a
marked cache, marked kept docs), check every folder before writing anything, stop on a signal with
one line and nothing left behind, and check `serve`'s address before building. Each test names the
hostile-input probe finding (issue 17) it locks."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from cookbookgen.cli import main
from cookbookgen.publish import site

from conftest import DATA

MANIFEST = DATA / "cookbook.yaml"
DATE = dt.date(2026, 11, 29)
WEEKS_AGO = time.time() - 30 * 24 * 3600
ENTRY = "0" * 64 + ".pickle"     # named as the cache names its entries


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _build(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(["build", "--cookbook", str(MANIFEST), "--date", DATE.isoformat(), *args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip().splitlines()


def _refused(capsys, option: str, message: str, *args: str) -> None:
    code, lines = _build(capsys, *args)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("cookbookgen: error: ") and f": {option}: " in lines[0] and message in lines[0], lines


def _user_folder(folder: Path, *names: str) -> dict[str, bytes]:
    """A folder of the user's with old files (older than the cache's pruning age)."""
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"the user's {name}")
        os.utime(path, (WEEKS_AGO, WEEKS_AGO))
    return _snapshot(folder)


# --- --out: only a site cookbookgen built is replaced -----------------------------------------------

def test_a_folder_holding_a_cookbook_json_is_not_taken_for_a_site(tmp_path: Path, capsys) -> None:
    # was: any folder with a file named cookbook.json was replaced, the user's other files deleted (exit 0)
    out = tmp_path / "work"
    before = _user_folder(out, "cookbook.json", "thesis.tex")
    _refused(capsys, "--out", "refusing to replace it", "--out", str(out), "--no-cache")
    assert _snapshot(out) == before


def test_a_file_added_to_a_built_site_is_refused_not_deleted(tmp_path: Path, capsys) -> None:
    out = tmp_path / "site"
    assert _build(capsys, "--out", str(out), "--no-cache")[0] == 0
    (out / "notes.md").write_text("mine")
    before = _snapshot(out)
    _refused(capsys, "--out", "cookbookgen did not write, such as 'notes.md'", "--out", str(out), "--no-cache")
    assert _snapshot(out) == before
    (out / "notes.md").unlink()
    marker = out / site.SITE_MARKER
    marker.write_text(marker.read_text() + "notes.md\n")           # a list that its digest does not prove
    (out / "notes.md").write_text("mine")
    _refused(capsys, "--out", "refusing to replace it", "--out", str(out), "--no-cache")
    assert (out / "notes.md").read_text() == "mine"


# --- --cache: only a cookbookgen cache is used, and only its own entries are pruned ------------------

def test_a_folder_that_is_not_a_cache_is_refused(tmp_path: Path, capsys) -> None:
    # was: old files under DIR/pages/ and DIR/render/ were deleted and DIR/.gitignore written (exit 0)
    cache = tmp_path / "mine"
    before = _user_folder(cache, "pages/draft.md", "render/photo.png", "notes.txt")
    _refused(capsys, "--cache", "is not a cookbookgen cache", "--out", str(tmp_path / "site"), "--cache", str(cache))
    assert _snapshot(cache) == before
    assert not (tmp_path / "site").exists()


def test_pruning_removes_only_what_the_cache_wrote(tmp_path: Path, capsys) -> None:
    cache = tmp_path / "cache"
    assert _build(capsys, "--out", str(tmp_path / "site"), "--cache", str(cache))[0] == 0
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55\n")
    _user_folder(cache, f"render/{ENTRY}", "render/notes.txt", "pages/draft.md", f"scripts/{ENTRY}")
    assert _build(capsys, "--out", str(tmp_path / "site"), "--cache", str(cache))[0] == 0
    assert not (cache / "render" / ENTRY).exists()                   # an old entry of its own: pruned
    assert not (cache / "scripts" / ENTRY).exists()                  # of every kind (scripts/ were never pruned)
    assert (cache / "render" / "notes.txt").is_file() and (cache / "pages" / "draft.md").is_file()


def test_an_empty_folder_becomes_a_cache_only_when_the_run_succeeds(tmp_path: Path, capsys) -> None:
    shutil.copytree(DATA, tmp_path / "data")
    manifest = tmp_path / "data" / "cookbook.yaml"
    manifest.write_text(manifest.read_text().replace("key: dsv41flash-fp4-gb300-sglang-agentic-dspark", "key: nope"))  # the last config
    cache = tmp_path / "cache"
    cache.mkdir()
    code = main(["build", "--cookbook", str(manifest), "--out", str(tmp_path / "site"), "--cache", str(cache)])
    assert code == 2 and "unknown config key 'nope'" in capsys.readouterr().err
    assert list(cache.iterdir()) == []                                # so it is still a folder the next run may use


# --- --keep-docs: only docs it kept are replaced ------------------------------------------------------

def test_keep_docs_refuses_a_folder_it_did_not_write(tmp_path: Path, capsys) -> None:
    # was: DIR/docs/ deleted and DIR/mkdocs.yml overwritten (exit 0)
    keep = tmp_path / "project"
    before = _user_folder(keep, "docs/index.md", "mkdocs.yml")
    _refused(capsys, "--keep-docs", "refusing to replace it", "--out", str(tmp_path / "site"), "--no-cache", "--keep-docs", str(keep))
    assert _snapshot(keep) == before and not (tmp_path / "site").exists()


def test_keep_docs_refuses_a_file_added_to_its_docs(tmp_path: Path, capsys) -> None:
    keep = tmp_path / "keep"
    assert _build(capsys, "--out", str(tmp_path / "site"), "--no-cache", "--keep-docs", str(keep))[0] == 0
    (keep / "docs" / "mine.md").write_text("mine")
    (keep / "site").mkdir()                                          # a plain `mkdocs build` of the kept docs: not replaced
    (keep / "site" / "index.html").write_text("plain")
    _refused(capsys, "--keep-docs", "such as 'docs/mine.md'", "--out", str(tmp_path / "site"), "--no-cache", "--keep-docs", str(keep))
    (keep / "docs" / "mine.md").unlink()
    assert _build(capsys, "--out", str(tmp_path / "site"), "--no-cache", "--keep-docs", str(keep))[0] == 0
    assert (keep / "site" / "index.html").read_text() == "plain"


# --- every folder is checked before anything is written ----------------------------------------------

FOLDER_CASES = {
    # was: --cache under a file swapped the new site in, then exited 2
    "cache under a file": (["--cache", "{file}/cache"], "--cache", "is a file, not a folder"),
    "keep-docs under a file": (["--no-cache", "--keep-docs", "{file}/keep"], "--keep-docs", "is a file, not a folder"),
    "cache is a file": (["--cache", "{file}"], "--cache", "exists and is not a folder"),
    "cache inside the site": (["--cache", "{out}/cache"], "--cache", "is inside, or holds, --out"),
    "kept docs are the site": (["--no-cache", "--keep-docs", "{out}"], "--keep-docs", "is the same folder as --out"),
    "kept docs in the cache": (["--cache", "{tmp}/cache", "--keep-docs", "{tmp}/cache/docs"], "--cache", "--keep-docs"),
}


@pytest.mark.parametrize("name", list(FOLDER_CASES))
def test_a_folder_that_cannot_be_written_is_refused_before_anything_is(tmp_path: Path, capsys, name: str) -> None:
    args, option, message = FOLDER_CASES[name]
    out = tmp_path / "site"
    assert _build(capsys, "--out", str(out), "--no-cache")[0] == 0
    (tmp_path / "file").write_text("a file")
    before = _snapshot(tmp_path)
    filled = [a.format(file=tmp_path / "file", out=out, tmp=tmp_path) for a in args]
    _refused(capsys, option, message, "--out", str(out), *filled)
    assert _snapshot(tmp_path) == before


# --- signals -----------------------------------------------------------------------------------------

def _interrupt(argv: list[str], started: Callable[[], bool], stop: str, **popen: Any) -> tuple[int, str]:
    """Run `argv`, send it signal `stop` once `started()` holds (it must still be running then), and
    return its exit status and stderr. SIGINT is delivered as a terminal does, even when this test
    runs where it is ignored (a background job)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **popen)
    try:
        for _ in range(3000):
            if started() or proc.poll() is not None:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the command ended before the signal could be sent"
        proc.send_signal(getattr(signal, stop))
    finally:
        _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith((".building", ".staging", ".tmp")))


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_a_signal_during_build_keeps_the_old_site_and_leaves_nothing(stop: str, tmp_path: Path) -> None:
    # was: a traceback, and SIGTERM left .site.*.building behind
    out, cache = tmp_path / "site", tmp_path / "cache"
    command = [sys.executable, "-m", "cookbookgen.cli", "build", "--cookbook", str(MANIFEST), "--out", str(out), "--cache", str(cache)]
    subprocess.run(command, check=True, capture_output=True)
    before = _snapshot(out)
    code, err = _interrupt([*command, "--date", "2027-01-01"], lambda: bool(list(tmp_path.glob(".site.*.building"))), stop)
    assert code == 128 + getattr(signal, stop), err
    assert err == "cookbookgen: interrupted\n"
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "site"] and _leftovers(tmp_path) == []


def test_a_signal_just_after_the_scratch_folder_is_made_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # was: a signal between mkdtemp and the `try` that removes the folder left .site.*.building behind
    real_mkdtemp = site.tempfile.mkdtemp

    def mkdtemp_then_signal(*args: Any, **kwargs: Any) -> str:
        made = real_mkdtemp(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        return made

    monkeypatch.setattr(site.tempfile, "mkdtemp", mkdtemp_then_signal)
    with pytest.raises(site.Interrupted), site.stop_on_signals():
        site.build_site(MANIFEST, tmp_path / "site", site.Dates(date=DATE), show_progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_signal_while_the_site_is_swapped_in_waits_for_the_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "site"
    site.build_site(MANIFEST, out, site.Dates(date=DATE), show_progress=False)
    real_rename = Path.rename

    def rename_then_signal(self: Path, target: Path) -> Path:        # Ctrl-C between the two renames of the swap
        moved = real_rename(self, target)
        if target.name == "previous-site":
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        return moved

    monkeypatch.setattr(Path, "rename", rename_then_signal)
    with pytest.raises(site.Interrupted), site.stop_on_signals():
        site.build_site(MANIFEST, out, site.Dates(date=dt.date(2027, 1, 1)), show_progress=False)
    assert "2027-01-01" in (out / "index.html").read_text()            # the new site, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


# --- serve ---------------------------------------------------------------------------------------------

def _serve(capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> list[str]:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    code = main(["serve", "--cookbook", str(MANIFEST), *args])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "Traceback" not in "\n".join(lines), lines
    assert not any(line.startswith("mkdocs:") for line in lines), "nothing was built"
    assert list(tmp_path.iterdir()) == []
    return [line for line in lines if line.startswith("cookbookgen: error: ")]


@pytest.mark.parametrize(("args", "message"), [
    (["--port", "70000"], "--port: expected a port number 1 to 65535, got '70000'"),
    (["--port", "-1"], "--port: expected a port number 1 to 65535"),
    (["--host", "nope.invalid"], "--host: expected an IP address or localhost, got 'nope.invalid'"),
    (["--host", "127.0.0.1:80"], "--host: expected an IP address or localhost"),
])
def test_serve_refuses_a_bad_address_before_building(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch,
                                                     args: list[str], message: str) -> None:
    # was: --port out of range built for seconds, then a traceback; --host gave two lines and left a folder
    (line,) = _serve(capsys, tmp_path, monkeypatch, *args)
    assert message in line


def test_serve_names_the_address_in_use(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (line,) = _serve(capsys, tmp_path, monkeypatch, "--port", str(port))
    assert line == f"cookbookgen: error: serve: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_serve_reports_a_broken_manifest_once(tmp_path: Path) -> None:
    # was: the same error every second while the manifest stayed broken
    shutil.copytree(DATA, tmp_path / "data")
    manifest = tmp_path / "data" / "cookbook.yaml"
    docs = tmp_path / "docs"
    dates = site.Dates(date=DATE)
    site.write_docs(site.generate(manifest, site.project_root(), dates)[1], docs)
    reports: list[str] = []
    stop = threading.Event()
    watcher = threading.Thread(target=site._watch, args=(manifest, site.project_root(), docs, dates, reports.append, stop))
    watcher.start()
    try:
        time.sleep(1.5)                                             # the watcher has taken its first look
        good = manifest.read_text()
        manifest.write_text(good.replace("title: DeepSeek", "title: [DeepSeek", 1))
        time.sleep(4.5)
        assert len(reports) == 1 and "cookbook.yaml" in reports[0] and "YAML syntax" in reports[0], reports
        manifest.write_text(good.replace("title: DeepSeek", "title: Fixed DeepSeek", 1))
        for _ in range(100):
            if len(reports) > 1:
                break
            time.sleep(0.1)
    finally:
        stop.set()
        watcher.join()
    assert reports[1].startswith("regenerated the docs"), reports


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_a_signal_before_serve_serves_stops_it_with_one_line_and_nothing_left(stop: str, tmp_path: Path) -> None:
    # was: a traceback (SIGINT), or temporary folders left behind (SIGTERM, before its handler was set)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    argv = [sys.executable, "-m", "cookbookgen.cli", "serve", "--cookbook", str(MANIFEST), "--port", str(port)]
    # sent once MkDocs' first build of the preview has begun
    code, err = _interrupt(argv, lambda: bool(list(scratch.rglob("mkdocs_*"))), stop, env={**os.environ, "TMPDIR": str(scratch)})
    assert code == 128 + getattr(signal, stop), err
    assert "Traceback" not in err and err.splitlines()[-1] == "cookbookgen: interrupted", err
    assert list(scratch.iterdir()) == []
