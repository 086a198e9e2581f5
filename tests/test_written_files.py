"""Written files take the mode the umask gives (0644 under the usual 022), and `export --out DIR/`
writes inside DIR (issue 23: export wrote 0600 files, and `--out newdir/` made a file `newdir`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator

import pytest

from cookbookgen.cli import main
from conftest import DATA, sglang_manifest

MODULE = "agentx/deepseek-ai/deepseek-v4.1-flash.jsx"


@pytest.fixture
def umask_002() -> Iterator[None]:
    """A umask other than the usual, so a mode that ignores it shows."""
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def modes(folder: Path) -> set[int]:
    return {stat.S_IMODE(p.stat().st_mode) for p in folder.rglob("*") if p.is_file()}


def test_export_file_takes_the_umask_mode(tmp_path: Path, umask_002: None) -> None:
    out = tmp_path / "m.jsx"
    assert main(["export", "--cookbook", str(sglang_manifest(tmp_path / "in")), "--out", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o664
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "m.jsx"], "no temporary file left"


def test_export_file_is_0644_under_the_usual_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        assert main(["export", "--cookbook", str(sglang_manifest(tmp_path / "in")), "--format", "json", "--out", str(tmp_path / "m.json")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.json").stat().st_mode) == 0o644


def test_build_site_and_cache_take_the_umask_mode(tmp_path: Path, umask_002: None) -> None:
    assert main(["build", "--cookbook", str(DATA / "cookbook.yaml"), "--out", str(tmp_path / "site")]) == 0
    assert modes(tmp_path / "site") == {0o664}
    assert modes(tmp_path / ".cookbookgen-cache") == {0o664}, "cache entries and the site state too"
    assert stat.S_IMODE((tmp_path / "site").stat().st_mode) == 0o775


@pytest.mark.parametrize("fmt, name", [("agentx", MODULE), ("json", MODULE.replace(".jsx", ".json"))])
def test_export_out_with_a_slash_names_a_new_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, name: str) -> None:
    assert main(["export", "--cookbook", str(sglang_manifest(tmp_path / "in")), "--format", fmt, "--out", f"{tmp_path / 'newdir'}/"]) == 0
    assert (tmp_path / "newdir").is_dir() and (tmp_path / "newdir" / name).is_file()
    assert capsys.readouterr().out.startswith(f"wrote {tmp_path / 'newdir' / name}: ")


def test_export_from_module_into_an_existing_folder(tmp_path: Path) -> None:
    assert main(["export", "--cookbook", str(sglang_manifest(tmp_path / "in")), "--out", str(tmp_path / "a.jsx")]) == 0
    (tmp_path / "out").mkdir()
    assert main(["export", "--from-module", str(tmp_path / "a.jsx"), "--out", str(tmp_path / "out")]) == 0
    assert [p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file()] == ["agentx/a.jsx"]


def test_export_out_with_a_slash_naming_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("keep")
    assert main(["export", "--cookbook", str(DATA / "cookbook.yaml"), "--out", f"{tmp_path / 'f'}/"]) == 2
    assert capsys.readouterr().err == f"cookbookgen: error: --out: '{tmp_path / 'f'}/' names a folder, but {tmp_path / 'f'} is a file\n"
    assert (tmp_path / "f").read_text() == "keep"
