"""A checkout's files, read-only, whatever holds them: the one way the loaders (`checkout`, `workspace`,
the master, recipe and changelog readers, the script runner) reach a checkout. Paths are relative
POSIX paths (`PurePosixPath`) from the checkout's top; nothing else names a file.

Two views:
- `FolderView`, a working tree on disk (I/O: `stat`, `listdir`, `open`): a path is resolved through
  its symbolic links and must stay under the folder (`locate`); a file is opened without following a
  link and must be a regular file (no FIFO, device or socket: opening never blocks);
- `gitrepo.CommitView`, one commit of a git repository, read from its objects in memory (see there).

`script_files` gathers what the benchmark-script sandbox is given of a checkout: the only files of a
checkout that are ever written out, as regular files into the sandbox's own folder (`recipes.script`).
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Literal, Protocol

from ..errors import CookbookError, Problem
from .script import LIMIT_FILES, LIMIT_FILES_BYTES, ScriptFiles

Kind = Literal["file", "dir", "link", "other"]
"""What a path is: a regular file, a folder, a symbolic link a view does not follow, anything else."""
TOP = PurePosixPath(".")

SOURCED = (".sh", ".env")                 # the files of a script's folder it may source or run
LIBRARIES = ("benchmark_lib.sh",)         # what the scripts source from a folder above their own
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)     # what `Path.is_file` takes for "not there"


class ObjectMissing(CookbookError):
    """A git object (tree or blob) a commit's files need is missing or corrupt: the diff leaves the
    cells that cite the commit unpaired (`object-missing`, with `detail`); elsewhere it is bad input."""

    def __init__(self, repo: str, detail: str) -> None:
        super().__init__([Problem(repo, 0, "--source", detail)])
        self.detail = detail


class Outside(Exception):
    """A path a view will not give: `reason` completes "recipe path 'x' ..." (e.g. "leaves the checkout")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FileView(Protocol):
    """Read-only access to one checkout's files."""

    @property
    def name(self) -> str:
        """How reports name the checkout (a folder's path; `repo@commit` for a commit)."""

    def kind(self, rel: PurePosixPath) -> Kind | None:
        """What `rel` is (links the view follows are followed); None when there is nothing."""

    def names(self, rel: PurePosixPath) -> list[str]:
        """The names in folder `rel`, sorted (empty when it is not a folder)."""

    def locate(self, rel: PurePosixPath) -> PurePosixPath:
        """`rel` with the links the view follows resolved; `Outside` when the view will not give it,
        `OSError` or `RuntimeError` (a loop) when the path cannot be resolved."""

    def read(self, rel: PurePosixPath, shown: str, max_bytes: int) -> bytes:
        """The bytes of regular file `rel`; a `CookbookError` naming `shown` otherwise."""


def sub(base: PurePosixPath, *parts: str) -> PurePosixPath:
    """`base` joined with `parts`, normalised (`a/../b` is `b`; `.` is the top)."""
    return PurePosixPath(posixpath.normpath(str(base.joinpath(*parts))))


def matching(view: FileView, folder: PurePosixPath, pattern: str) -> list[PurePosixPath]:
    """The paths of folder `folder` whose names match `pattern` (fnmatch, case-sensitive), sorted."""
    return [folder / n for n in view.names(folder) if fnmatchcase(n, pattern)]


class FolderView:
    """A working tree on disk (see the module docstring). `root` is resolved once."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._located: dict[PurePosixPath, PurePosixPath] = {}

    @property
    def name(self) -> str:
        return str(self.root)

    def _path(self, rel: PurePosixPath) -> Path:
        return self.root.joinpath(*rel.parts)

    def kind(self, rel: PurePosixPath) -> Kind | None:
        """As `Path.is_file` and `is_dir` tell: a name too long for the system is an `OSError`."""
        try:
            mode = self._path(rel).stat().st_mode
        except OSError as exc:
            if exc.errno not in _ABSENT:
                raise
            return None
        except ValueError:
            return None
        return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"

    def names(self, rel: PurePosixPath) -> list[str]:
        try:
            return sorted(os.listdir(self._path(rel)))
        except (OSError, ValueError):
            return []

    def locate(self, rel: PurePosixPath) -> PurePosixPath:
        """Resolved once per path and run (a recipe is located, then read)."""
        hit = self._located.get(rel)
        if hit is None:
            path = self._path(rel).resolve()
            if not path.is_relative_to(self.root):
                raise Outside("leaves the checkout")
            hit = self._located[rel] = PurePosixPath(path.relative_to(self.root).as_posix())
        return hit

    def read(self, rel: PurePosixPath, shown: str, max_bytes: int) -> bytes:
        try:
            real = self.locate(rel)
        except Outside as exc:
            raise CookbookError.at(shown, 0, "", f"{exc.reason} (a symbolic link to {self._path(rel).resolve()})") from None
        except RuntimeError:
            raise CookbookError.at(shown, 0, "", "cannot read: a loop of symbolic links") from None
        except OSError as exc:
            raise CookbookError.at(shown, 0, "", f"cannot read: {exc.strerror}") from None
        try:
            fd = os.open(self._path(real), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            raise CookbookError.at(shown, 0, "", "file not found") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO):      # a link put there since `locate`, a socket
                raise CookbookError.at(shown, 0, "", "not a regular file") from None
            raise CookbookError.at(shown, 0, "", f"cannot read: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as fh:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise CookbookError.at(shown, 0, "", "not a regular file")
            if status.st_size > max_bytes:
                raise CookbookError.at(shown, 0, "", f"file is {status.st_size} bytes; the limit is {max_bytes}")
            try:
                raw = fh.read(max_bytes + 1)
            except OSError as exc:
                raise CookbookError.at(shown, 0, "", f"cannot read: {exc.strerror}") from None
        if len(raw) > max_bytes:                              # grew since the fstat
            raise CookbookError.at(shown, 0, "", f"file is over {max_bytes} bytes; the limit is {max_bytes}")
        return raw


def is_git_repository(path: Path) -> bool:
    """Whether `path` is the top of a clone (has `.git`) or a bare repository (HEAD, objects/): then
    `gitrepo.GitRepo` reads it (kept here so that a folder's diff never loads the git reader)."""
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def script_files(view: FileView, script: PurePosixPath, shown: str) -> ScriptFiles:
    """What the sandbox is given to run `script` (a located regular file of `view`): the script, the
    shell files of its folder (`SOURCED`: other scripts it sources or runs) and the libraries
    (`LIBRARIES`) found in the folders above it, which the scripts source as
    `$(dirname "$0")/../../benchmark_lib.sh`. Links, folders and names that are not one plain path
    component are left out; more than `LIMIT_FILES` files or `LIMIT_FILES_BYTES` bytes is an
    error naming the script."""
    folder = script.parent
    wanted = [script] + [folder / n for n in view.names(folder) if n.endswith(SOURCED) and _plain(n)]
    for above in folder.parents:
        wanted += [above / lib for lib in LIBRARIES]
    files: dict[str, bytes] = {}
    total = 0
    for rel in dict.fromkeys(wanted):
        if view.kind(rel) != "file" or (rel != script and not _inside(view, rel)):
            continue
        if len(files) == LIMIT_FILES:
            raise CookbookError.at(shown, 0, "script", f"its folder holds more than {LIMIT_FILES} shell files "
                                                       "(the sandbox's limit)")
        data = view.read(rel, str(rel), LIMIT_FILES_BYTES - total)
        total += len(data)
        files[str(rel)] = data
    if str(script) not in files:
        raise CookbookError.at(shown, 0, "", "not a regular file")
    return ScriptFiles(str(script), files)


def _inside(view: FileView, rel: PurePosixPath) -> bool:
    """Whether the view gives `rel` (a link out of the checkout, or a loop, is left out of a script's files)."""
    try:
        view.locate(rel)
    except (Outside, OSError, RuntimeError):
        return False
    return True


def _plain(name: str) -> bool:
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name
