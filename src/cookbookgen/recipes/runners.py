"""Which srt-slurm checkout an InferenceX multi-node runner makes, read from its launcher
(`runners/launch_<runner>.sh`) at run time: the clone step (`rules/srt_slurm.yaml` `section`) is an
if/elif/else chain whose branches `git clone` a repository, `git checkout` a ref and copy folders of
the InferenceX tree over the checkout (`cp -rT "$GITHUB_WORKSPACE/<src>" <dst>`). `clone_step` reads
that chain; `follow` walks it with one point's variables (`[[ ... ]]` tests of `==`, `!=`, `-n`, `-z`,
`&&`, `||`, `!` and parentheses) and returns the `Clone` the runner makes.

Anything else in a branch taken (a patch applied, a recipe edited, a test it cannot evaluate, a
variable it does not know) is an `Unreadable` naming the launcher's line: the caller refuses the
point rather than guess. No I/O: the caller passes the launcher's text.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Mapping, Union

from .load import package_yaml

RULES: dict[str, Any] = package_yaml("rules/srt_slurm.yaml")
WORKSPACE = "$GITHUB_WORKSPACE/"


class Unreadable(Exception):
    """A clone step this reader cannot follow: `line` (1-based) of the launcher and why."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line, self.reason = line, reason


@dataclass(frozen=True)
class Command:
    line: int
    text: str


@dataclass(frozen=True)
class Branch:
    line: int
    test: str | None          # None: `else`
    body: list[Node]


@dataclass(frozen=True)
class If:
    line: int
    branches: list[Branch]


Node = Union[Command, If]


@dataclass
class Clone:
    """What a clone step made: the repository URL, the ref checked out (None: the default branch),
    and the folders or files of the InferenceX tree copied over it, in order (checkout path, tree path)."""

    url: str | None = None
    ref: str | None = None
    overlays: list[tuple[str, str]] = field(default_factory=list)
    line: int = 0             # the `git clone` line
    ref_line: int = 0         # the line that named the ref (the clone's, or the last checkout's)
    helper: str | None = None  # a function of rules `functions` made the clone: its caller fills it in


# --- reading the chain -----------------------------------------------------------------------------

def clone_step(text: str) -> tuple[list[Node], dict[str, str]]:
    """The clone step of a launcher as a tree of commands and if-chains, and the plain assignments
    (`NAME="literal"`) made before it; `Unreadable` when there is no clone step or its ifs do not close."""
    lines = text.splitlines()
    start = next((i for i, t in enumerate(lines) if RULES["section"]["start"] in t and not t.lstrip().startswith("#")), None)
    end = next((i for i, t in enumerate(lines) if start is not None and i > start and RULES["section"]["end"] in t), None)
    if start is None or end is None:
        raise Unreadable(0, f"no srt-slurm clone step (from a line with {RULES['section']['start']!r} to one with {RULES['section']['end']!r})")
    assigned: dict[str, str] = {}
    for raw in lines[:start]:
        m = _ASSIGN.fullmatch(raw.strip())
        if m and "$" not in m.group(2) and "`" not in m.group(2):
            assigned[m.group(1)] = _unquote(m.group(2))
    commands = list(_commands(lines, start, end))
    nodes, at = _block(commands, 0, top=True)
    return nodes, assigned


_ASSIGN = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s;|&]*)")


def _unquote(value: str) -> str:
    return value[1:-1] if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) >= 2 else value


def _commands(lines: list[str], start: int, end: int) -> list[Command]:
    """The commands of lines `start`..`end` (0-based, end excluded): comments and blank lines dropped,
    continued lines joined, an `|| { ... }` handler (what a failed `test` does) dropped."""
    out: list[Command] = []
    i = start
    while i < end:
        number, text = i + 1, lines[i].strip()
        while text.endswith("\\") and i + 1 < end:
            i += 1
            text = text[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        if not text or text.startswith("#"):
            continue
        if text.endswith("{"):                   # `cmd || {` ... `}`: the failure handler
            depth = 1
            while i < end and depth:
                inner = lines[i].strip()
                depth += inner.endswith("{") - (inner == "}" or inner.startswith("}"))
                i += 1
            text = text.rsplit("||", 1)[0].strip()
        out.append(Command(number, text))
    return out


_IF = re.compile(r"(if|elif)\s+(.*?);\s*then")


def _block(commands: list[Command], at: int, top: bool = False) -> tuple[list[Node], int]:
    """The nodes from `commands[at]` up to the `elif`/`else`/`fi` that ends the block (the end of the step at top)."""
    nodes: list[Node] = []
    while at < len(commands):
        command = commands[at]
        word = command.text.split(None, 1)[0].rstrip(";")
        if word in ("elif", "else", "fi"):
            if top:
                raise Unreadable(command.line, f"`{word}` with no `if`")
            return nodes, at
        if word == "if":
            node, at = _if(commands, at)
            nodes.append(node)
            continue
        nodes.append(command)
        at += 1
    if not top:
        raise Unreadable(commands[-1].line if commands else 0, "an `if` that does not close before the clone step ends")
    return nodes, at


def _if(commands: list[Command], at: int) -> tuple[If, int]:
    first = commands[at].line
    branches: list[Branch] = []
    while True:
        command = commands[at]
        m = _IF.fullmatch(command.text)
        if command.text.split(None, 1)[0].rstrip(";") == "else":
            body, at = _block(commands, at + 1)
            branches.append(Branch(command.line, None, body))
        elif m:
            body, at = _block(commands, at + 1)
            branches.append(Branch(command.line, m.group(2), body))
        else:
            raise Unreadable(command.line, f"cannot read {command.text!r} (expected `if|elif TEST; then`)")
        if at >= len(commands):
            raise Unreadable(first, "an `if` that does not close before the clone step ends")
        if commands[at].text.rstrip(";") == "fi":
            return If(first, branches), at + 1


# --- following it -----------------------------------------------------------------------------------

_GIT_ACTS = ("clone", "checkout", "cp")


def follow(nodes: list[Node], values: Mapping[str, str]) -> Clone:
    """The clone the step makes for a point whose variables are `values` (see rules `variables`)."""
    clone = Clone()
    _run(nodes, dict(values), clone)
    if clone.url is None and clone.helper is None:
        raise Unreadable(0, "the clone step clones no repository for this point")
    return clone


def _run(nodes: list[Node], values: dict[str, str], clone: Clone) -> None:
    for node in nodes:
        if isinstance(node, If):
            if not _acts(node):
                continue                  # an if that clones, checks out and copies nothing
            for branch in node.branches:
                if branch.test is None or _test(branch.test, values, branch.line):
                    _run(branch.body, values, clone)
                    break
        else:
            _command(node, values, clone)


def _acts(node: Node) -> bool:
    if isinstance(node, Command):
        words = node.text.split()
        return bool(words) and (words[0] in ("cp", "sed", "find", "patch", *RULES["functions"])
                                or (words[0] == "git" and words[1:2] != ["rev-parse"]))
    return any(_acts(n) for b in node.branches for n in b.body)


def _command(command: Command, values: dict[str, str], clone: Clone) -> None:
    text = re.sub(r"\s*\|\|\s*exit(\s+\d+)?\s*$", "", command.text)
    m = _ASSIGN.fullmatch(text)
    if m:
        _assign(m.group(1), m.group(2), values, command.line)
        return
    try:
        words = shlex.split(text)
    except ValueError:
        raise Unreadable(command.line, f"cannot read {command.text!r}") from None
    if not words or words[0] in RULES["inert"] or words[:2] == ["git", "rev-parse"]:
        return
    words = [_expand(w, values, command.line) for w in words]
    if words[0] in RULES["functions"]:
        clone.url, clone.ref, clone.overlays, clone.helper = None, None, [], words[0]
        clone.line = clone.ref_line = command.line
    elif words[:2] == ["git", "clone"]:
        _clone(words[2:], command.line, clone)
    elif words[:2] == ["git", "checkout"] and len(words) == 3 and not words[2].startswith("-"):
        clone.ref, clone.ref_line, clone.overlays = words[2], command.line, []
    elif words[0] == "cp":
        _copy(words[1:], command.line, clone)
    else:
        raise Unreadable(command.line, f"the runner runs {command.text!r} on the checkout, which cookbookgen does not follow")


def _assign(name: str, raw: str, values: dict[str, str], line: int) -> None:
    """`NAME=value` in the step: the checkout's own folder keeps its name; a value this reader cannot
    work out (a command substitution) leaves the name unknown, an error only where it is used."""
    if name == RULES["checkout_dir"]:
        return
    try:
        values[name] = _unquote(raw) if raw.startswith("'") else _expand(_unquote(raw), values, line)
    except Unreadable:
        values.pop(name, None)


def _clone(args: list[str], line: int, clone: Clone) -> None:
    ref, rest = None, []
    i = 0
    while i < len(args):
        if args[i] in ("--branch", "-b") and i + 1 < len(args):
            ref, i = args[i + 1], i + 2
        elif args[i] in ("--single-branch", "-q", "--quiet"):
            i += 1
        elif args[i] == "--depth" and i + 1 < len(args):
            i += 2
        elif args[i].startswith("-"):
            raise Unreadable(line, f"git clone option {args[i]} is not followed")
        else:
            rest.append(args[i])
            i += 1
    if len(rest) != 2:
        raise Unreadable(line, "cannot tell the repository `git clone` clones")
    clone.url, clone.ref, clone.line, clone.ref_line, clone.overlays, clone.helper = rest[0], ref, line, line, [], None


def _copy(args: list[str], line: int, clone: Clone) -> None:
    """`cp -rT <tree folder> <dst>` (the folder's contents over dst) or `cp <tree file> <dst>[/]`."""
    flags = [a for a in args if a.startswith("-")]
    paths = [a for a in args if not a.startswith("-")]
    if len(paths) != 2 or not paths[0].startswith(WORKSPACE) or set(flags) - {"-rT", "-Tr", "-r", "-T"}:
        raise Unreadable(line, f"cannot follow `cp {' '.join(args)}` (expected cp -rT \"$GITHUB_WORKSPACE/<folder>\" <folder>)")
    src, dst = paths[0][len(WORKSPACE):].strip("/"), paths[1]
    if not flags:                                  # one file
        dst = dst.rstrip("/") + "/" + src.rsplit("/", 1)[-1] if dst.endswith("/") else dst
    elif flags[0] not in ("-rT", "-Tr"):
        raise Unreadable(line, f"cannot follow `cp {' '.join(args)}` (where `cp -r` puts a folder depends on what exists; expected -rT)")
    if dst.startswith(("/", "$")) or ".." in dst.split("/") or ".." in src.split("/") or not src:
        raise Unreadable(line, f"copies {src!r} to {dst!r}: a path leaving the tree or the checkout")
    clone.overlays.append((dst.strip("/"), src))


# --- tests ------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(&&|\|\||[()]|(?:\"[^\"]*\"|'[^']*'|[^\s()&|\"'])+)")


def _test(text: str, values: Mapping[str, str], line: int) -> bool:
    m = re.fullmatch(r"\[\[\s+(.*)\s+\]\]", text.strip())
    if not m:
        raise Unreadable(line, f"cannot evaluate the test {text!r} (only [[ ... ]] tests are followed)")
    tokens = _tokens(m.group(1), line)
    value, at = _or(tokens, 0, values, line)
    if at != len(tokens):
        raise Unreadable(line, f"cannot evaluate the test {text!r}")
    return value


def _tokens(text: str, line: int) -> list[str]:
    out, at = [], 0
    while at < len(text.rstrip()):
        m = _TOKEN.match(text, at)
        if not m:
            raise Unreadable(line, f"cannot read the test {text!r}")
        out.append(m.group(1))
        at = m.end()
    return out


def _or(tokens: list[str], at: int, values: Mapping[str, str], line: int) -> tuple[bool, int]:
    value, at = _and(tokens, at, values, line)
    while at < len(tokens) and tokens[at] == "||":
        right, at = _and(tokens, at + 1, values, line)
        value = value or right
    return value, at


def _and(tokens: list[str], at: int, values: Mapping[str, str], line: int) -> tuple[bool, int]:
    value, at = _unary(tokens, at, values, line)
    while at < len(tokens) and tokens[at] == "&&":
        right, at = _unary(tokens, at + 1, values, line)
        value = value and right
    return value, at


def _unary(tokens: list[str], at: int, values: Mapping[str, str], line: int) -> tuple[bool, int]:
    if at >= len(tokens):
        raise Unreadable(line, "a test ends too early")
    token = tokens[at]
    if token == "!":
        value, at = _unary(tokens, at + 1, values, line)
        return not value, at
    if token == "(":
        value, at = _or(tokens, at + 1, values, line)
        if at >= len(tokens) or tokens[at] != ")":
            raise Unreadable(line, "a test's parenthesis does not close")
        return value, at + 1
    if token in ("-n", "-z") and at + 1 < len(tokens):
        word = _expand(tokens[at + 1], values, line)
        return bool(word) == (token == "-n"), at + 2
    if at + 2 < len(tokens) and tokens[at + 1] in ("==", "=", "!="):
        left = _expand(tokens[at], values, line)
        right = tokens[at + 2]
        quoted = right[:1] in "\"'"
        expanded = _expand(right, values, line)
        same = left == expanded if quoted else fnmatchcase(left, expanded)
        return same == (tokens[at + 1] != "!="), at + 3
    raise Unreadable(line, f"cannot evaluate {token!r} in a test")


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))")


def _expand(word: str, values: Mapping[str, str], line: int) -> str:
    """A word with its quotes removed and its `$NAME`, `${NAME}`, `${NAME:-default}` replaced (none in
    single quotes); a variable the step does not know is `Unreadable`."""
    out = []
    for piece in re.findall(r"\"[^\"]*\"|'[^']*'|[^\"']+", word):
        if piece.startswith("'"):
            out.append(piece[1:-1])
            continue
        body = piece[1:-1] if piece.startswith('"') else piece
        if "$(" in body or "`" in body:
            raise Unreadable(line, f"cannot evaluate {piece!r} (a command substitution)")

        def value(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(3)
            if name in values:
                return values[name] or (m.group(2) or ":-")[2:]
            if m.group(2) is not None:
                return m.group(2)[2:]
            raise Unreadable(line, f"the clone step tests ${name}, which cookbookgen cannot tell for a point")

        out.append(_VAR.sub(value, body))
    return "".join(out)
