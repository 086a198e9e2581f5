"""A git repository (a clone or a bare mirror) as the source of checkouts, one per cited commit.

I/O: `git` subprocesses that only read objects (`rev-parse`, `ls-tree`, `cat-file --batch`): nothing
is checked out and the repository is never written. `GitRepo.tree(commit)` copies that commit's files
(read in one `cat-file --batch`) into a private temporary folder, removed at exit, which `Workspace`
reads as it reads any checkout; so the rest of the pipeline is the same for a folder and a commit.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path, PurePosixPath

from ..errors import CookbookError

_HEX = re.compile(r"[0-9a-f]{7,40}")
_FILE_MODES = {"100644", "100755", "120000"}     # files and symbolic links; submodules are left out


class GitRepo:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._trees: dict[str, Path | None] = {}
        self._tmp = Path(tempfile.mkdtemp(prefix="cookbookgen-git-"))
        weakref.finalize(self, shutil.rmtree, self._tmp, True)

    @staticmethod
    def holds(path: Path) -> bool:
        """Whether `path` is the top of a clone (has `.git`) or a bare repository (HEAD, objects/)."""
        return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())

    def _git(self, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(["git", "-C", str(self.root), *args], input=data, capture_output=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CookbookError.at(str(self.root), 0, "--source", f"git failed: {exc}") from None

    def commit(self, ref: str) -> str | None:
        """The full id of commit `ref` (7 to 40 hex digits, or HEAD), or None when the repository lacks it."""
        if ref != "HEAD" and not _HEX.fullmatch(ref):
            return None
        done = self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def tree(self, ref: str) -> Path | None:
        """A folder holding the files of commit `ref` (None when the repository lacks it); made once per commit."""
        sha = self.commit(ref)
        if sha is None:
            return None
        if sha not in self._trees:
            self._trees[sha] = self._copy(sha, self._tmp / sha)
        return self._trees[sha]

    def _copy(self, sha: str, dest: Path) -> Path:
        listing = self._git("ls-tree", "-r", "-z", "--full-tree", sha)
        if listing.returncode != 0:
            raise CookbookError.at(str(self.root), 0, "--source", f"git ls-tree {sha}: {listing.stderr.decode(errors='replace').strip()}")
        entries = []
        for item in listing.stdout.split(b"\0"):
            if item:
                head, _, path = item.partition(b"\t")
                mode, _, blob = head.decode().split(" ")
                rel = PurePosixPath(path.decode("utf-8", errors="surrogateescape"))
                if mode in _FILE_MODES and not rel.is_absolute() and ".." not in rel.parts:
                    entries.append((mode, blob, rel))
        for (mode, _, rel), content in zip(entries, self._blobs([blob for _, blob, _ in entries])):
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":
                target.symlink_to(content.decode("utf-8", errors="surrogateescape"))
            else:
                target.write_bytes(content)
        dest.mkdir(parents=True, exist_ok=True)
        return dest

    def _blobs(self, ids: list[str]) -> list[bytes]:
        """The contents of blobs `ids`, in order, from one `git cat-file --batch`."""
        done = self._git("cat-file", "--batch", data="".join(f"{i}\n" for i in ids).encode())
        out, at = [], 0
        for _ in ids:
            end = done.stdout.index(b"\n", at)
            size = int(done.stdout[at:end].split(b" ")[2])
            out.append(done.stdout[end + 1:end + 1 + size])
            at = end + 1 + size + 1
        return out
