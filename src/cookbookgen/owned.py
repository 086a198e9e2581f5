"""The folders a command writes, and the markers that prove cookbookgen wrote what it replaces. I/O.

A command deletes or overwrites only what it wrote itself, and refuses anything else with one line
before it writes anything:
- a folder it replaces (`build --out`, the `docs/` and `mkdocs.yml` of `build --keep-docs`) is missing,
  empty, or holds a marker (`write_marker`) whose list names every file in the part to be replaced:
  a marker that is not ours, or a file the user added since, is refused (`check_replaceable`);
- a path under a file, or a file where a folder is wanted, is refused (`check_folder_path`);
- no two of the folders of one run are the same or one inside the other (`check_apart`).
A marker is `<name> 1 sha256:<digest of the list>`, a fixed note, then one file per line.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path
from typing import Iterable

from .errors import CookbookError

_NOTE = "# Written by cookbookgen: the files it wrote here. Only these may be replaced by its next run."


def check_folder_path(path: Path, option: str) -> None:
    """`path` is a folder, or nothing is there yet and its nearest existing parent is a folder."""
    if path.exists() and not path.is_dir():
        raise CookbookError.at(str(path), 0, option, "exists and is not a folder; give a folder")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise CookbookError.at(str(path), 0, option, f"{parent} is a file, not a folder; give a folder")
            return
        if parent.is_symlink():
            raise CookbookError.at(str(path), 0, option, f"{parent} is a broken link; give a folder")


def check_apart(folders: dict[str, Path]) -> None:
    """No two of the folders (by option) are the same or one inside the other."""
    resolved = {option: path.resolve() for option, path in folders.items()}
    for (a, path_a), (b, path_b) in itertools.combinations(resolved.items(), 2):
        if path_a == path_b or path_a in path_b.parents or path_b in path_a.parents:
            how = "is the same folder as" if path_a == path_b else "is inside, or holds,"
            raise CookbookError.at(str(folders[b]), 0, b, f"{how} {a} {folders[a]}; give separate folders")


def files_under(folder: Path) -> list[str]:
    """Every file and link under `folder`, as sorted POSIX paths relative to it."""
    found: list[str] = []
    for top, dirs, names in os.walk(folder):
        rel = Path(top).relative_to(folder)
        found += [(rel / name).as_posix() for name in names]
        found += [(rel / name).as_posix() for name in dirs if os.path.islink(os.path.join(top, name))]
    return sorted(found)


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def write_marker(folder: Path, name: str, files: Iterable[str]) -> None:
    """Write the marker `name` into `folder`, listing `files` (POSIX paths relative to it)."""
    body = "".join(f"{rel}\n" for rel in files)
    (folder / name).write_text(f"{name} 1 sha256:{_digest(body)}\n{_NOTE}\n{body}", encoding="utf-8")


def written(folder: Path, name: str) -> set[str] | None:
    """The files the marker `name` in `folder` lists; None when there is none or it is not ours."""
    try:
        text = (folder / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    header, _, rest = text.partition("\n")
    note, _, body = rest.partition("\n")
    if header != f"{name} 1 sha256:{_digest(body)}" or note != _NOTE:
        return None
    return set(body.splitlines())


def check_replaceable(folder: Path, name: str, option: str, parts: tuple[str, ...] = ()) -> None:
    """Refuse unless `folder` (or, given `parts`, those entries of it) may be replaced: see the module docstring."""
    check_folder_path(folder, option)
    if folder.is_symlink():
        raise CookbookError.at(str(folder), 0, option, "is a link; give the folder itself")
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    listed = written(folder, name)
    if listed is None:
        raise CookbookError.at(str(folder), 0, option, f"is not empty and holds no {name} written by cookbookgen; refusing to replace it: "
                                                       "empty it or give another folder")
    extra = [rel for rel in files_under(folder) if rel not in listed and rel != name and (not parts or rel.split("/")[0] in parts)]
    if extra:
        raise CookbookError.at(str(folder), 0, option, f"holds {len(extra)} file(s) cookbookgen did not write, such as {extra[0]!r}; "
                                                       "refusing to replace it: move them out first")
