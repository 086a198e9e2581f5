"""Run an InferenceX single-node benchmark script in a sandbox and capture its engine launches (never
executed). I/O: a temporary folder, one bash process.

The sandbox:
- the script and the files it may read (`ScriptFiles`, gathered by `view.script_files` from the
  checkout or from a git commit's blobs) are written as new regular files, under the same relative
  paths, into the temporary folder; the script runs from there, never from the checkout;
- a clean environment: the master row's variables (`rules/script_variables.yaml`), HOME and the
  working folder (a new temporary folder), PATH (a folder of the ALLOWED commands only);
- `rules/script_stubs.sh` sourced first (BASH_ENV): benchmark_lib.sh's functions as stubs, engine
  launches recorded, any other command refused;
- where the host allows it (`unshare`), new network and mount namespaces: no network device, the
  file system read-only but for the temporary folder, the usual bin folders empty; otherwise the
  stubs and PATH alone (one note on stderr says so);
- a time limit (LIMIT_SECONDS) and a size limit on every file it writes, stdout and stderr included
  (LIMIT_BYTES). A script that fails, is refused a command, runs over a limit or launches nothing is
  one `CookbookError` naming the script and the line bash reports.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import shlex
import signal
import subprocess
import sys
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Mapping

from ..errors import CookbookError

LIMIT_SECONDS = 10
LIMIT_BYTES = 1 << 20
ALLOWED = ("basename", "cat", "cut", "date", "dirname", "env", "grep", "head", "id", "mkdir", "seq",
           "sort", "tail", "tee", "touch", "tr", "uname", "wc")
CHECKOUT = "checkout"      # the folder of the work folder that the script's files are written to
HIDDEN = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/opt")
_BASH_SAYS = re.compile(r"line (\d+): (.*)$")


@dataclass(frozen=True)
class Launch:
    kind: str                   # sglang, sglang-router, vllm, dynamo
    line: int
    argv: tuple[str, ...]       # after the program and module that start it
    env: dict[str, str]         # what the script exported (the sandbox's own variables left out)


@dataclass(frozen=True)
class Capture:
    launches: tuple[Launch, ...]
    setup: tuple[tuple[int, tuple[str, ...]], ...]    # (line, argv) of each setup step (kernel-config installs)


@dataclass(frozen=True)
class ScriptFiles:
    """A script to run and the files the sandbox is given with it: relative POSIX paths inside the
    checkout (`main` among them) -> their bytes."""

    main: str
    files: Mapping[str, bytes]


def run_script(script: ScriptFiles, shown: str, variables: dict[str, str]) -> Capture:
    """The launches of `script` run with `variables` (see the module docstring)."""
    work = Path(tempfile.mkdtemp(prefix="cookbookgen-script-"))
    try:
        return _run(_write(script, work / CHECKOUT), shown, variables, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write(script: ScriptFiles, top: Path) -> Path:
    """Write the files under `top` as new regular files (never through a link; a path that is not
    relative and plain is refused) and return where the main script is."""
    for rel, data in script.files.items():
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or any(p in (".", "..") or "\0" in p for p in parts):
            raise ValueError(f"not a plain relative path: {rel!r}")
        target = top.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    return top.joinpath(*PurePosixPath(script.main).parts)


def _run(script: Path, shown: str, variables: dict[str, str], work: Path) -> Capture:
    box, bin_dir = work / ".sandbox", work / "bin"
    box.mkdir()
    bin_dir.mkdir()
    files = {name: box / name for name in ("status", "denied", "failed", "stdout", "stderr")}
    stubs = box / "stubs.sh"
    stubs.write_bytes(resources.files("cookbookgen").joinpath("rules/script_stubs.sh").read_bytes())
    env = {**variables, "HOME": str(work), "PWD": str(work), "PATH": str(bin_dir), "BASH_ENV": str(stubs),
           "CBG_CAPTURE": str(box / "capture"), "CBG_STATUS": str(files["status"]), "CBG_DENIED": str(files["denied"]),
           "CBG_FAILED": str(files["failed"])}
    argv = _sandboxed(work, bin_dir, box, script) if _isolation() else _plain(bin_dir, script)
    with open(files["stdout"], "wb") as out, open(files["stderr"], "wb") as err:
        proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True, preexec_fn=_limits)
        timed_out = _wait(proc)
    written = [*files.values(), *box.glob("capture.*")]
    text = {path.name: path.read_bytes().decode("utf-8", "replace") if path.exists() else "" for path in written}
    line = _number(text["status"].split()[1:2])
    if text["denied"]:
        where, _, command = text["denied"].splitlines()[0].partition(" ")
        raise CookbookError.at(shown, _number([where]), "script",
                               f"runs `{command}`, which the sandbox refuses (allowed: the engine launches, benchmark_lib.sh's "
                               f"functions, hf download, nvidia-smi, the shell's builtins and {', '.join(ALLOWED)})")
    if timed_out:
        raise CookbookError.at(shown, line, "script", f"still running after {LIMIT_SECONDS} s (the sandbox's time limit)")
    if proc.returncode == -signal.SIGXFSZ or any(path.exists() and path.stat().st_size >= LIMIT_BYTES for path in written):
        raise CookbookError.at(shown, line, "script", f"writes more than {LIMIT_BYTES} bytes to one file or its output (the sandbox's size limit)")
    failed = text["failed"].split()
    if proc.returncode != 0 or failed:
        said = [m for m in map(_BASH_SAYS.search, text["stderr"].splitlines()) if m]
        if said:
            raise CookbookError.at(shown, int(said[0].group(1)), "script", f"bash: {said[0].group(2)}")
        last = [x.strip() for x in text["stderr"].splitlines() if x.strip()][-1:]
        why = f"a command fails with exit status {failed[0]}" if failed else f"fails with exit status {proc.returncode}"
        raise CookbookError.at(shown, _number(failed[1:2]) if failed else line, "script", ": ".join([why, *last]))
    try:
        capture = _parse([text[p.name] for p in sorted(box.glob("capture.*"))], env, str(script.parent) + "/")
    except (ValueError, IndexError):
        raise CookbookError.at(shown, line, "script", "the record of its launches is garbled (the script wrote to the sandbox's own files)") from None
    if not capture.launches:
        raise CookbookError.at(shown, line, "script", "launches no engine (python3 -m sglang.launch_server, sglang_router, vllm serve, "
                                                      "python3 -m dynamo.*)")
    return capture


def _number(words: list[str]) -> int:
    """The line number a sandbox file records (0 when the script wrote something else there)."""
    return int(words[0]) if words and words[0].isdigit() else 0


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT_BYTES, LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _wait(proc: subprocess.Popen[bytes]) -> bool:
    """Wait for the script within the time limit; then end every process it started. True on a timeout
    (the script gets SIGTERM first, so its EXIT trap records the line it was at)."""
    timed_out = False
    try:
        proc.wait(LIMIT_SECONDS)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(1)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return timed_out


def _tool(name: str) -> str:
    found = shutil.which(name, path=os.defpath + ":/usr/bin:/bin")
    if found is None:
        raise CookbookError.usage("script", f"the sandbox needs `{name}`, which this host lacks")
    return os.path.realpath(found)


def _plain(bin_dir: Path, script: Path) -> list[str]:
    for name in ALLOWED:
        (bin_dir / name).symlink_to(_tool(name))
    return [_tool("bash"), "--noprofile", "--norc", str(script)]


def _sandboxed(work: Path, bin_dir: Path, box: Path, script: Path) -> list[str]:
    """`unshare` with new user, network and mount namespaces, then a setup shell that keeps the work
    folder writable (but the checkout's files written there: read-only), binds the allowed commands
    (and bash) into it, makes the rest read-only and empties the bin folders before it runs the script."""
    binds = [(_tool(name), bin_dir / name) for name in ALLOWED] + [(_tool(name), box / name) for name in ("bash", "mount")]
    for _, target in binds:
        target.touch()
    mount, q = shlex.quote(str(box / "mount")), shlex.quote     # the bound mount: still there once the bin folders are emptied
    steps = [f'{q(_tool("mount"))} --bind "$1" "$1"'] + [f'{q(_tool("mount"))} --bind {q(src)} {q(str(dst))}' for src, dst in binds]
    top = q(str(work / CHECKOUT))
    steps += [f"{mount} --bind {top} {top}", f"{mount} -o remount,bind,ro {top}", f"{mount} -o remount,bind,ro /"]
    steps += [f"{mount} -t tmpfs -o ro,size=4k none {q(d)}" for d in HIDDEN if os.path.isdir(d) and not os.path.islink(d)]
    steps.append(f'cd "$1" && exec {q(str(box / "bash"))} --noprofile --norc "$2"')
    return [_tool("unshare"), "--user", "--map-root-user", "--net", "--mount", "--", _tool("sh"), "-ec",
            " && ".join(steps), "sandbox", str(work), str(script)]


@cache
def _isolation() -> bool:
    """Whether this host gives the sandbox its namespaces (checked once per process)."""
    try:
        unshare = _tool("unshare")
        ok = subprocess.run([unshare, "--user", "--map-root-user", "--net", "--mount", "--", _tool("true")],
                            env={}, capture_output=True, timeout=LIMIT_SECONDS).returncode == 0
    except (CookbookError, OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        print("cookbookgen: note: no user/network/mount namespaces on this host (unshare failed): benchmark scripts run "
              "with the project's stubs and a restricted PATH only", file=sys.stderr)
    return ok


def _parse(records: list[str], sandbox_env: dict[str, str], folder: str) -> Capture:
    """The launches and setup steps of the record files (in the order of their lines); paths in the
    script's folder are shown relative to it."""
    words = [w for record in records for w in record.split("\0")]
    launches: list[Launch] = []
    setup: list[tuple[int, tuple[str, ...]]] = []
    i = 0
    while i < len(words):
        if words[i] == "":
            i += 1
        elif words[i] == "SETUP":
            line, count = int(words[i + 1]), int(words[i + 2])
            setup.append((line, tuple(w.removeprefix(folder) for w in words[i + 3: i + 3 + count])))
            i += 3 + count
        elif words[i] == "LAUNCH":
            kind, line, count = words[i + 1], int(words[i + 2]), int(words[i + 3])
            argv = tuple(words[i + 4: i + 4 + count])
            end = words.index("END", i + 4 + count)
            pairs = (w.partition("=") for w in words[i + 4 + count: end])
            env = {k: v for k, _, v in pairs if sandbox_env.get(k) != v and k not in ("PWD", "OLDPWD", "SHLVL", "_")}
            launches.append(Launch(kind, line, argv, env))
            i = end + 1
        else:
            raise ValueError(words[i])
    return Capture(tuple(sorted(launches, key=lambda launch: launch.line)), tuple(sorted(setup)))
