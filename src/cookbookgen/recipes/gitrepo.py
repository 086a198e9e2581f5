"""A git repository (a clone or a bare mirror) as the source of checkouts, one per cited commit: each
commit's files are read as blobs, in memory, by their paths in its tree (`CommitView`, a
`view.FileView`). Nothing is checked out or written; the repository is only read.

Why a library (dulwich: its object store reads loose objects and packs itself) and never the `git`
program: a repository folder is the pull request's, so its `config` is the attacker's, and git 2.39
always reads it. Through it, reading objects can run commands: a promisor remote's `uploadpack`
fetches a missing object (`extensions.partialClone`; git 2.39 has no `GIT_NO_LAZY_FETCH`), as can
`core.fsmonitor`, filters, textconv, the pager and ssh. Here nothing reads the config at all, and
no command of any kind is run: a missing object is just missing.

What is read, and what is not:
- HEAD, then a branch it names: the loose ref file or `packed-refs` (names checked, files opened
  without following links); `objects/` and its packs, never `objects/info/alternates` (objects of
  other folders of the host are not this repository's);
- replace refs (`refs/replace/`) and grafts (`info/grafts`) are ignored: they make git show another
  commit, or other parents, in place of the one asked for, so a cell citing commit D would be checked
  against P's files while the report says D (a drifted recipe would pass as parity). A cell is
  checked against exactly the objects its commit id names;
- every object read is hashed and must match its id; a missing or corrupt object is `ObjectMissing`
  (the diff leaves the cells unpaired: `object-missing`); a commit id the repository lacks, or whose
  object is not a readable commit, is no commit (`commit-missing`);
- a tree's symbolic links are never followed (their targets would name the host's files), gitlinks
  (submodules) are not files, and a tree listing one name twice (which git objects allow, and a copy
  onto a file system would resolve through a link) is corrupt.
"""

from __future__ import annotations

import binascii
import datetime as dt
import hashlib
import os
import re
import stat
import weakref
import zlib
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from dulwich.object_store import DiskObjectStore
from dulwich.objects import ObjectID, RawObjectID, parse_tree

from ..errors import CookbookError
from .view import TOP, Kind, ObjectMissing, Outside, sub

_HEX = re.compile(r"[0-9a-f]{7,40}")
_SHA = re.compile(r"[0-9a-f]{40}")
_REF = re.compile(r"refs/(?:[A-Za-z0-9_+-][A-Za-z0-9_.+-]*/)*[A-Za-z0-9_+-][A-Za-z0-9_.+-]*")
_TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
_KINDS: dict[int, Kind] = {0o040000: "dir", 0o100644: "file", 0o100755: "file", 0o100664: "file", 0o120000: "link"}
MAX_OBJECT_BYTES = 64 * 1024 * 1024       # a loose object inflated past this is refused (corrupt, or a bomb)
MAX_REF_BYTES = 64 * 1024 * 1024          # packed-refs of the largest repositories are a few MB
MAX_HOPS = 5                              # symbolic refs, and tags of tags, followed at most
MAX_DELTA_CHAIN = 1000                    # a packed object's delta bases looked through at most (git makes 50)
_OFS_DELTA, _REF_DELTA = 6, 7


class _OwnObjects(DiskObjectStore):
    """The repository's own object store: `objects/info/alternates` is not read."""

    @property
    def alternates(self) -> list[Any]:
        return []


class GitRepo:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.git_dir = root / ".git" if (root / ".git").is_dir() else root
        objects = self.git_dir / "objects"
        if not objects.is_dir() or objects.is_symlink():
            raise CookbookError.at(str(root), 0, "--source", "not a git repository with its own objects folder (a .git folder, "
                                                             "or a bare repository; for a worktree or submodule, give the main repository)")
        self.store = _OwnObjects(str(objects), loose_object_size_limit=MAX_OBJECT_BYTES)
        weakref.finalize(self, self.store.close)
        self._trees: dict[str, dict[bytes, tuple[int, str]]] = {}
        self._views: dict[str, CommitView] = {}
        self._packed: dict[str, str] | None = None

    # --- commits ----------------------------------------------------------------------------------

    def commit(self, ref: str) -> str | None:
        """The full id of commit `ref` (7 to 40 hex digits, or HEAD), or None when the repository lacks
        it or its object is not a readable commit (a tag is followed to its commit)."""
        sha = self._head() if ref == "HEAD" else self._unique(ref) if _HEX.fullmatch(ref) else None
        for _ in range(MAX_HOPS):
            if sha is None:
                return None
            try:
                kind, data = self.object(sha)
            except ObjectMissing:
                return None
            if kind == 1:
                return sha if _field(data, b"tree") else None
            sha = _field(data, b"object") if kind == 4 else None
        return None

    def view(self, ref: str) -> CommitView | None:
        """The files of commit `ref` (None when there is no such commit), made once per commit."""
        sha = self.commit(ref)
        if sha is None:
            return None
        if sha not in self._views:
            tree = _field(self.object(sha)[1], b"tree")
            assert tree is not None       # `commit` checked it
            self._views[sha] = CommitView(self, sha, tree)
        return self._views[sha]

    def _unique(self, prefix: str) -> str | None:
        """The one object whose id starts with `prefix`, or of several the one commit (git's rule for `<id>^{commit}`)."""
        if len(prefix) == 40:
            return prefix
        found: list[str] = []
        try:
            for sha in self.store.iter_prefix(prefix.encode()):
                found.append(sha.decode())
                if len(found) > 16:
                    return None
        except Exception:    # noqa: BLE001 -- a damaged pack index: no object can be told by this prefix
            return None
        if len(found) > 1:
            found = [sha for sha in found if self._kind_or_none(sha) == 1]
        return found[0] if len(found) == 1 else None

    def _kind_or_none(self, sha: str) -> int | None:
        try:
            return self.object(sha)[0]
        except ObjectMissing:
            return None

    # --- refs -------------------------------------------------------------------------------------

    def _head(self) -> str | None:
        """The commit id HEAD names, directly or through a branch (loose, or in packed-refs)."""
        text = _small_file(self.git_dir / "HEAD", 4096)
        for _ in range(MAX_HOPS):
            if text is None or _SHA.fullmatch(text):
                return text
            name = text.removeprefix("ref: ").strip()
            if not text.startswith("ref: ") or not _REF.fullmatch(name) or "/." in name or name.endswith(".lock"):
                return None
            text = _small_file(self.git_dir.joinpath(*name.split("/")), 4096) or self._packed_refs().get(name)
        return None

    def named(self, name: str) -> tuple[str, str] | None:
        """The full ref and commit a tag or branch `name` names (refs/tags/, refs/heads/, then a clone's
        refs/remotes/origin/; loose or packed; an annotated tag followed to its commit), or None."""
        for full in (f"refs/tags/{name}", f"refs/heads/{name}", f"refs/remotes/origin/{name}"):
            if not _REF.fullmatch(full) or "/." in full or full.endswith(".lock"):
                return None
            text = _small_file(self.git_dir.joinpath(*full.split("/")), 4096) or self._packed_refs().get(full)
            sha = self.commit(text) if text is not None and _SHA.fullmatch(text) else None
            if sha is not None:
                return full, sha
        return None

    def committed(self, sha: str) -> int | None:
        """The committer time (seconds since the epoch) of commit `sha`, or None."""
        headers = self.object(sha)[1].split(b"\n\n", 1)[0].split(b"\n")
        stamp = next((h.rsplit(b" ", 2) for h in headers if h.startswith(b"committer ")), None)
        return int(stamp[-2]) if stamp is not None and stamp[-2].isdigit() else None

    def _packed_refs(self) -> dict[str, str]:
        if self._packed is None:
            lines = (_small_file(self.git_dir / "packed-refs", MAX_REF_BYTES) or "").splitlines()
            pairs = (line.split(" ", 1) for line in lines if line[:1] not in ("#", "^"))
            self._packed = {p[1]: p[0] for p in pairs if len(p) == 2 and _SHA.fullmatch(p[0])}
        return self._packed

    # --- objects ----------------------------------------------------------------------------------

    def object(self, sha: str) -> tuple[int, bytes]:
        """The type number and content of object `sha`, checked against its id; `ObjectMissing` otherwise."""
        try:
            self._check_packed_size(sha)
            kind, data = self.store.get_raw(ObjectID(sha.encode()))
        except ObjectMissing:
            raise
        except KeyError:
            raise ObjectMissing(str(self.root), f"object {sha} is missing") from None
        except Exception as exc:    # noqa: BLE001 -- the library's many ways of failing on a damaged file (zlib, struct, format, checksum)
            raise ObjectMissing(str(self.root), f"object {sha} is corrupt ({type(exc).__name__})") from None
        name = _TYPES.get(kind)
        if name is None or hashlib.sha1(b"%s %d\0" % (name, len(data)) + data).hexdigest() != sha:
            raise ObjectMissing(str(self.root), f"object {sha} is corrupt (its content does not match its id)")
        return kind, data

    def _check_packed_size(self, sha: str) -> None:
        """Refuse a packed object, or a delta base of it, that would inflate past MAX_OBJECT_BYTES, before
        any is inflated: a pack of a few hundred KB can hold a blob of gigabytes (loose objects are
        bounded by dulwich's own limit)."""
        raw = binascii.unhexlify(sha)
        for pack in self.store.packs:
            try:
                offset = pack.index.object_offset(RawObjectID(raw))
            except KeyError:
                continue
            with open(pack.data.path, "rb") as fh:
                for _ in range(MAX_DELTA_CHAIN):
                    kind, sizes, base = _packed_header(fh.fileno(), offset)
                    if max(sizes) > MAX_OBJECT_BYTES:
                        raise ObjectMissing(str(self.root), f"object {sha} would inflate past {MAX_OBJECT_BYTES} bytes (corrupt, or a bomb)")
                    if kind == _OFS_DELTA:
                        offset -= base
                    elif kind == _REF_DELTA:
                        offset = pack.index.object_offset(RawObjectID(base.to_bytes(20, "big")))
                    else:
                        return
            raise ObjectMissing(str(self.root), f"object {sha} has a delta chain of more than {MAX_DELTA_CHAIN} objects")

    def tree(self, sha: str) -> dict[bytes, tuple[int, str]]:
        """The entries of tree `sha` (name -> mode, id), read once; a tree listing a name twice is corrupt."""
        hit = self._trees.get(sha)
        if hit is None:
            kind, data = self.object(sha)
            try:
                entries = list(parse_tree(data, 20)) if kind == 2 else None
            except Exception as exc:    # noqa: BLE001 -- the parser's ways of failing on a malformed tree
                raise ObjectMissing(str(self.root), f"tree {sha} is corrupt ({type(exc).__name__})") from None
            if entries is None:
                raise ObjectMissing(str(self.root), f"object {sha} is not a tree")
            hit = {name: (mode, entry.decode()) for name, mode, entry in entries}
            if len(hit) != len(entries):
                raise ObjectMissing(str(self.root), f"tree {sha} is corrupt (it lists one name twice)")
            self._trees[sha] = hit
        return hit


    def first_parent_versions(self, head: str, rel: PurePosixPath, limit: int) -> Iterator[tuple[dt.date, bytes | None]]:
        """The commit day and the bytes of file `rel` (None when absent) of commit `head` and then its
        first parents, newest first, at most `limit` commits. A blob is read once per change, and the
        trees walked are not kept (`tree` caches; a long history would fill memory)."""
        sha: str | None = head
        last: str | None = None
        data: bytes | None = None
        for _ in range(limit):
            if sha is None:
                return
            kind, raw = self.object(sha)
            tree = _field(raw, b"tree")
            if kind != 1 or tree is None:
                return
            headers = raw.split(b"\n\n", 1)[0].split(b"\n")
            parent = next((h[7:].decode("ascii", "replace") for h in headers if h.startswith(b"parent ")), None)
            stamp = next((h.rsplit(b" ", 2) for h in headers if h.startswith(b"committer ")), [b"", b"0", b""])
            day = dt.datetime.fromtimestamp(int(stamp[-2]) if stamp[-2].isdigit() else 0, dt.timezone.utc).date()
            blob = self._path_blob(tree, rel)
            if blob != last:
                data, last = (None if blob is None else self.object(blob)[1]), blob
            yield day, data
            sha = parent if parent is not None and _SHA.fullmatch(parent) else None

    def _path_blob(self, tree: str, rel: PurePosixPath) -> str | None:
        """The id of the regular file `rel` of `tree` (None when there is none), without caching trees."""
        sha = tree
        for i, part in enumerate(rel.parts):
            kind, data = self.object(sha)
            if kind != 2:
                return None
            found = next((entry for name, mode, entry in parse_tree(data, 20) if name == part.encode()
                          and (mode == 0o040000) == (i < len(rel.parts) - 1) and mode != 0o120000), None)
            if found is None:
                return None
            sha = found.decode()
        return sha


class CommitView:
    """The files of one commit (a `view.FileView`): blobs read by path in its tree, in memory."""

    def __init__(self, repo: GitRepo, sha: str, tree: str) -> None:
        self.repo, self.sha, self.top = repo, sha, tree

    @property
    def name(self) -> str:
        return f"{self.repo.root}@{self.sha}"

    def _entry(self, rel: PurePosixPath) -> tuple[int, str] | None:
        """The mode and id of `rel` (a link met on the way is the entry); None when there is none."""
        mode, sha = 0o040000, self.top
        for part in sub(TOP, str(rel)).parts:
            if mode != 0o040000:
                return (mode, sha) if mode == 0o120000 else None
            found = self.repo.tree(sha).get(part.encode("utf-8", "surrogateescape"))
            if found is None:
                return None
            mode, sha = found
        return mode, sha

    def kind(self, rel: PurePosixPath) -> Kind | None:
        entry = self._entry(rel)
        return None if entry is None else _KINDS.get(entry[0], "other")

    def names(self, rel: PurePosixPath) -> list[str]:
        entry = self._entry(rel)
        if entry is None or entry[0] != 0o040000:
            return []
        out = []
        for name in self.repo.tree(entry[1]):
            try:
                out.append(name.decode("utf-8"))
            except UnicodeDecodeError:      # no path of the checkout's files can name it
                continue
        return sorted(out)

    def locate(self, rel: PurePosixPath) -> PurePosixPath:
        path = sub(TOP, str(rel))
        if path.parts[:1] == ("..",):
            raise Outside("leaves the checkout")
        if self.kind(path) == "link":
            raise Outside("is, or is under, a symbolic link (a git source follows none)")
        return path

    def read(self, rel: PurePosixPath, shown: str, max_bytes: int) -> bytes:
        entry = self._entry(rel)
        if entry is None:
            raise CookbookError.at(shown, 0, "", "file not found")
        if _KINDS.get(entry[0]) != "file":
            what = {"dir": "a folder", "link": "a symbolic link, which a git source does not follow"}.get(_KINDS.get(entry[0], "other"), "a submodule")
            raise CookbookError.at(shown, 0, "", f"not a regular file ({what} in commit {self.sha})")
        kind, data = self.repo.object(entry[1])
        if kind != 3:
            raise ObjectMissing(str(self.repo.root), f"object {entry[1]} ({shown}) is not a blob")
        if len(data) > max_bytes:
            raise CookbookError.at(shown, 0, "", f"file is {len(data)} bytes; the limit is {max_bytes}")
        return data


def _packed_header(fd: int, offset: int) -> tuple[int, tuple[int, ...], int]:
    """The type of the pack entry at `offset`, the sizes it declares (its own; for a delta, also the base's
    and the result's, from the start of the delta), and for a delta its base (a backward distance for
    an offset delta, an id as a number for a reference delta)."""
    head = os.pread(fd, 64, offset)
    byte = head[0]
    kind, size, shift, at = (byte >> 4) & 7, byte & 15, 4, 1
    while byte & 0x80:
        byte = head[at]
        size, shift, at = size | (byte & 0x7F) << shift, shift + 7, at + 1
    base = 0
    if kind == _OFS_DELTA:
        byte = head[at]
        base, at = byte & 0x7F, at + 1
        while byte & 0x80:
            byte = head[at]
            base, at = ((base + 1) << 7) | (byte & 0x7F), at + 1
    elif kind == _REF_DELTA:
        base, at = int.from_bytes(head[at:at + 20], "big"), at + 20
    else:
        return kind, (size,), 0
    start = zlib.decompressobj().decompress(os.pread(fd, 4096, offset + at), 20)
    sizes, value, shift = [size], 0, 0
    for byte in start:
        value, shift = value | (byte & 0x7F) << shift, shift + 7
        if not byte & 0x80:
            sizes.append(value)
            value, shift = 0, 0
            if len(sizes) == 3:
                break
    return kind, tuple(sizes), base


def _field(data: bytes, key: bytes) -> str | None:
    """The id a commit's first line (`tree <id>`) or a tag's (`object <id>`) names, or None."""
    first = data.split(b"\n", 1)[0]
    value = first.removeprefix(key + b" ").decode("ascii", "replace")
    return value if first.startswith(key + b" ") and _SHA.fullmatch(value) else None


def _small_file(path: Path, limit: int) -> str | None:
    """The stripped ASCII text of regular file `path` (opened without following a link), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = fh.read(limit + 1)
    return raw.decode("ascii", "replace").strip() if len(raw) <= limit else None
