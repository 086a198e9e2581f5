"""Shell text for blocks: quoting, the block layout, and the runnable "copy all" script. No I/O.

A reader pastes this text into a shell: only the documented placeholders (`$NAME` or `${NAME}` of the
`placeholders` table of `rules/render.yaml`, e.g. `$ETCD_IP`) may expand there; every other `$` is
literal, so a recipe value `http://x/${AWS_SECRET_ACCESS_KEY}` never expands the reader's secret.
Rules (the SGLang cookbook explorer's where a value has only documented placeholders):
- a value of only `[A-Za-z0-9_@%+=:,./-]` is bare;
- one that also has `$`, `{` or `}` (and nothing else) is double-quoted so placeholders expand, if
  every `$` starts a documented placeholder;
- anything else is single-quoted, `'` written as `'\\''` (the empty string is `''`), but for the
  documented placeholders in it, each double-quoted between the single-quoted pieces.
A block prints as preamble lines, one `K=V \\` line per env entry, `cmd \\`, then one
two-space-indented `--flag v1 v2 \\` line per arg, the last without the backslash.
"""

from __future__ import annotations

import re
import shlex
from typing import Callable

from ..text import one_line
from .model import Block
from .tables import tables

_BARE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_EXPANDABLE = re.compile(r"[A-Za-z0-9_@%+=:,./${}-]+")
_PLACEHOLDER = re.compile(r"\$(?:[A-Za-z]\w*|_\w+|\{(?:[A-Za-z]\w*|_\w+)\})")   # not `$_`, bash's last argument


def documented(name: str) -> bool:
    """Whether `$name` is a placeholder the reader sets (the table of `rules/render.yaml`)."""
    return tables().describe_placeholder(name) is not None


def quote(value: str) -> str:
    if _BARE.fullmatch(value):
        return value
    pieces: list[tuple[str, bool]] = []        # (text, a documented placeholder)
    start = 0
    for m in _PLACEHOLDER.finditer(value):
        if documented(m.group(0).strip("${}")):
            pieces += [(value[start:m.start()], False), (m.group(0), True)]
            start = m.end()
    pieces.append((value[start:], False))
    literal = "".join(text for text, placeholder in pieces if not placeholder)
    if len(pieces) == 1:
        return _single(value)
    if _EXPANDABLE.fullmatch(value) and "$" not in literal:
        return f'"{value}"'
    return "".join(f'"{text}"' if placeholder else _single(text) for text, placeholder in pieces if text)


def _single(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def heredoc(name: str, content: str) -> list[str]:
    """Lines that write `content` to file `name`.

    Documented placeholders (e.g. `$FRONTEND_0_IP` in nginx.conf), as `$NAME` or `${NAME}`, are
    expanded by the shell; every other `$` (nginx's own `$request_id`, `${AWS_SECRET_ACCESS_KEY}`,
    `${ETCD_IP:-x}`), backslash and backtick is escaped, so the file gets them literally. With no
    placeholder the delimiter is quoted and the body is taken verbatim.
    """
    tag = "COOKBOOK_EOF"
    while tag in content:
        tag += "_"
    body = content if content.endswith("\n") else content + "\n"
    used = [name for name in placeholders_in(body) if documented(name)]
    if not used:
        return [f"cat > {quote(name)} <<'{tag}'", *body.splitlines(), tag]
    names = "|".join(sorted(used, key=len, reverse=True))
    escaped = re.sub(r"[\\`]", lambda m: "\\" + m.group(0), body)
    escaped = re.sub(r"\$(?!(?:" + names + r")\b|\{(?:" + names + r")\})", r"\\$", escaped)
    return [f"cat > {quote(name)} <<{tag}", *escaped.splitlines(), tag]


def command_lines(block: Block, exec_: str = "") -> list[str]:
    """The env + cmd + args part of a block, one shell line each, joined by `\\` continuations
    (`exec_="exec "` makes the shell replace itself with the command, env assignments kept)."""
    parts = [f"{k}={quote(v)}" for k, v in block.env.items()]
    parts.append(exec_ + block.cmd)
    parts.extend("  " + " ".join(quote(x) for x in arg) for arg in block.args)
    return [p + " \\" for p in parts[:-1]] + [parts[-1]]


def format_block(block: Block, with_files: bool = True) -> str:
    """The text a reader copies for one block (config files first, as heredocs)."""
    lines: list[str] = []
    if with_files:
        for name, content in block.files.items():
            lines.extend(heredoc(name, content))
    lines.extend(block.preamble)
    lines.extend(command_lines(block))
    return "\n".join(lines)


def block_argv(block: Block) -> list[str]:
    """The argv the command lines stand for: `K=V` env words, the cmd words, then the args."""
    argv = [f"{k}={v}" for k, v in block.env.items()]
    argv.extend(shlex.split(block.cmd))
    for arg in block.args:
        argv.extend(arg)
    return argv


def placeholders_in(text: str) -> list[str]:
    """`$NAME` placeholders used in `text`, in first-use order."""
    seen: dict[str, None] = {}
    for name in re.findall(r"\$\{?([A-Z][A-Z0-9_]*)\b", text):
        seen.setdefault(name, None)
    return list(seen)


PROCESS_NAMES = {"dynamo-frontend": "frontend", "sglang-router": "router"}   # other kinds: the kind; workers: the role
_USAGE = """Usage: {script} --list | PROCESS | --wait HOST:PORT...
  --list           the processes of this deployment and where each runs
  PROCESS          check its placeholders and run it in the foreground (exec)
  --wait HOST:PORT wait until each port accepts connections (WAIT_TIMEOUT seconds, default 600)
Start order: services (etcd, NATS, stores), then workers, then the frontend or router. On each node run
its processes in that order, waiting for the ports they need: {script} --wait 10.0.0.1:2379 && {script} PROCESS"""


# How the dispatch ends without a process to run: exit 2, unless the script was pasted into an
# interactive shell (the site's "Copy all"), whose session an `exit` would close.
_LEAVE = "[[ $- == *i* ]] || exit 2"


def processes(blocks: list[Block]) -> list[tuple[str, int, int | None, str]]:
    """(name, block index, NODE_RANK or None, where it runs) for every process a node starts, in launch order.
    Workers are `<role>-<replica>`, the other ranks of a multi-node worker `<role>-<replica>-node<rank>`;
    other kinds are numbered only when the deployment runs more than one."""
    bases = [b.role or PROCESS_NAMES.get(b.kind, b.kind) for b in blocks]
    copies = [(b.workers or 1) * (b.count or 1) * (b.count_nodes or 1) for b in blocks]
    total = {base: sum(c for b2, c in zip(bases, copies) if b2 == base) for base in bases}
    seen: dict[str, int] = {}
    replicas: list[int] = []        # the replica numbers of the last head-node block (a `node_rank` 0 block)
    out = []
    for index, (block, base, n) in enumerate(zip(blocks, bases, copies)):
        if not block.node_rank:     # a later node's block (node_rank > 0) names the workers of the block before it
            replicas = [seen.setdefault(base, -1) + 1 + copy for copy in range(n)]
            seen[base] += n
        for copy, i in enumerate(replicas[:n]):
            name = f"{base}-{i}" if block.kind == "worker" or total[base] > 1 else base
            npw = block.nodes_per_worker or 1
            ranks = range(npw) if block.node_rank is None else (block.node_rank,)
            out += [(name + (f"-node{r}" if r else ""), index, r if npw > 1 else None, copy_where(block, copy, n, r if npw > 1 else None))
                    for r in ranks]
    return out


def copy_where(block: Block, copy: int, copies: int, rank: int | None) -> str:
    """Where one process of `block` runs: copy `copy` of `copies`, NODE_RANK `rank` of a multi-node worker.
    The block's own sentence says where all its copies run; this one names this copy's node."""
    pins = block.env.get("CUDA_VISIBLE_DEVICES")
    gpus = f", GPUs {pins}" if pins else ""
    if rank is not None:
        npw = block.nodes_per_worker or 1
        head = f" (its head node, {block.role.upper()}_HEAD_IP)" if rank == 0 and block.role else ""
        return f"node {rank + 1} of the {npw} nodes of this {block.role or block.kind} worker{head}, NODE_RANK={rank}"
    if block.kind == "worker" and (copies > 1 or pins) and not block.where.startswith("on the "):
        return f"on {block.role} node {copy + 1}{gpus}"
    if copies == 1:
        return one_line(block.where)
    return f"instance {copy + 1} of {copies}: {one_line(block.where)}"


def copy_all(blocks: list[Block], heading: list[str], describe: Callable[[str], str | None]) -> str:
    """The launch script: valid bash as pasted (`bash -n`), one process per call (`--list`, `PROCESS`,
    `--wait`, see `_USAGE`). A process checks its placeholders (`${NAME:?description}`), fixes
    NODE_RANK for its rank, writes its config files and `exec`s its command with the block's env."""
    procs = processes(blocks)
    width = max(len(n) for n, *_ in procs)
    bodies = [[*(line for name, content in block.files.items() for line in heredoc(name, content)),
               *block.preamble, *command_lines(block, "exec ")] for block in blocks]
    lines = ["#!/usr/bin/env bash", *(comment_line(h) for h in heading),
             *(comment_line(u) for u in _USAGE.format(script="./launch.sh").splitlines()),
             *(comment_line(f"Placeholders: {n} is {describe(n)}") for n in placeholders_in("\n".join(
                 line for body in bodies for line in body)) if describe(n)),
             "", "_list() {", "  cat <<'COOKBOOK_LIST'", *(f"{n:<{width}}  {safe_text(w)}" for n, _, _, w in procs),
             "COOKBOOK_LIST", "}", "", "_wait() {", '  local end=$((SECONDS + ${WAIT_TIMEOUT:-600})) target',
             '  for target in "$@"; do', '    until (exec 3<>"/dev/tcp/${target%:*}/${target##*:}") 2>/dev/null; do',
             '      if ((SECONDS >= end)); then echo "timed out waiting for $target" >&2; exit 1; fi',
             "      sleep 2", "    done", "  done", "}"]
    for index, (block, body) in enumerate(zip(blocks, bodies)):
        names = [n for n in placeholders_in("\n".join(body)) if describe(n)]
        lines += ["", block_comment(block), f"_block_{index}() {{",
                  *(f'  : "${{{n}:?{safe_text(describe(n) or n)}}}"' for n in names), *body, "}"]
    lines += ["", 'case "${1:-}" in', "  '') cat >&2 <<'COOKBOOK_USAGE'", *_USAGE.format(script="./launch.sh").splitlines(),
              "COOKBOOK_USAGE", f"    {_LEAVE} ;;", "  --list) _list ;;",
              '  --wait) shift; _wait "$@" ;;']
    lines += [f"  {name}) {'' if rank is None else f'NODE_RANK={rank}; '}_block_{index} ;;" for name, index, rank, _ in procs]
    lines += [f'  *) echo "unknown process \'$1\'; one of:" >&2; _list >&2; {_LEAVE} ;;', "esac"]
    return "\n".join(lines) + "\n"


def comment_line(text: str) -> str:
    """One comment line, whatever `text` holds (a model name with a newline must not become a command)."""
    return f"# {one_line(text)}"


def block_comment(block: Block) -> str:
    """The comment line above a block's command: its title and where it runs."""
    return comment_line(block.title + (f" -- {block.where}" if block.where else ""))


def safe_text(text: str) -> str:
    """`text` for a quoted heredoc or a `${NAME:?text}` message: an apostrophe (which would end the
    message's quoting) as a typographic one, anything else outside plain words and punctuation dropped."""
    return re.sub(r"[^A-Za-z0-9 ,.:;()/+=_’-]", "", text.replace("'", "’"))
