"""Quoting and layout: every rendered command is valid bash and `shlex.split` recovers the exact argv."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cookbookgen.render.model import Block
from cookbookgen.render.shell import block_argv, copy_all, format_block, heredoc, quote

from conftest import examples

values = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(list("$'\"{} \\`!*?;&|<>()#~=")), max_size=20)
flags = st.from_regex(r"--[a-z][a-z0-9-]{0,12}", fullmatch=True)
env_names = st.from_regex(r"[A-Z][A-Z0-9_]{0,10}", fullmatch=True)


def _bash_ok(text: str) -> bool:
    return subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True).returncode == 0


def test_quote_rules_match_the_explorer() -> None:
    assert quote("deepseek-ai/DeepSeek-V4.1-Flash") == "deepseek-ai/DeepSeek-V4.1-Flash"
    assert quote("http://$ETCD_IP:2379") == '"http://$ETCD_IP:2379"'
    assert quote('{"enable_multithread_load":true}') == "'{\"enable_multithread_load\":true}'"
    assert quote("it's") == "'it'\\''s'"
    assert quote("") == "''"
    assert quote("daemon off;") == "'daemon off;'"


@pytest.mark.parametrize("value", ["${", "a${b", "$}", "${}", "$1", "$$", "a$", "$_", "${X", "$X}{${"])
def test_a_dollar_that_starts_no_placeholder_is_single_quoted(value: str) -> None:
    # was: "${" came out double-quoted, which bash refuses (and "$1" would have expanded)
    quoted = quote(value)
    assert quoted.startswith("'") and _bash_ok(f"X={quoted}\n") and shlex.split(quoted) == [value]
    run = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, text=True)
    assert run.stdout == value


def test_placeholders_stay_double_quoted_so_they_expand() -> None:
    assert quote("${AGG_HEAD_IP}:${NODE_RANK}/$PREFILL_1_HEAD_IP") == '"${AGG_HEAD_IP}:${NODE_RANK}/$PREFILL_1_HEAD_IP"'
    run = subprocess.run(["bash", "-c", "AGG_HEAD_IP=10.0.0.1 NODE_RANK=0 PREFILL_1_HEAD_IP=x; "
                          f"printf %s {quote('${AGG_HEAD_IP}:${NODE_RANK}/$PREFILL_1_HEAD_IP')}"], capture_output=True, text=True)
    assert run.stdout == "10.0.0.1:0/x"


# A reader's shell holds secrets: only the documented placeholders may expand in pasted text.
READER_ENV = {"AWS_SECRET_ACCESS_KEY": "reader-secret", "HOME": "/home/reader", "ETCD_IP": "10.0.0.9", "NODE_IP": "10.0.0.2",
              "PATH": "/usr/bin:/bin"}
NOT_EXPANDED = ["http://x/${AWS_SECRET_ACCESS_KEY}", "http://x/$AWS_SECRET_ACCESS_KEY", "$HOME/.ssh", "${HOME}",
                "${ETCD_IP:-x}", "${ETCD_IP/10/11}", "$ETCD_IPX", "a b ${AWS_SECRET_ACCESS_KEY} $(id)", "`id`"]


@pytest.mark.parametrize("value", NOT_EXPANDED)
def test_an_undocumented_name_is_literal_in_the_readers_shell(value: str) -> None:
    quoted = quote(value)
    run = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, text=True, env=READER_ENV)
    assert run.stdout == value and shlex.split(quoted) == [value]


@pytest.mark.parametrize("value,expanded", [
    ("http://$ETCD_IP:2379", "http://10.0.0.9:2379"),
    ("http://${ETCD_IP}:2379", "http://10.0.0.9:2379"),
    ("$NODE_IP/${AWS_SECRET_ACCESS_KEY}", "10.0.0.2/${AWS_SECRET_ACCESS_KEY}"),
    ("a b ${NODE_IP} $HOME", "a b 10.0.0.2 $HOME"),
])
def test_documented_placeholders_expand_beside_literal_text(value: str, expanded: str) -> None:
    quoted = quote(value)
    run = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, text=True, env=READER_ENV)
    assert run.stdout == expanded and shlex.split(quoted) == [value] and _bash_ok(f"X={quoted}\n")


_NAMES = ["ETCD_IP", "NODE_RANK", "AGG_0_HEAD_IP", "AWS_SECRET_ACCESS_KEY", "HOME", "X"]
_DOCUMENTED = {"ETCD_IP", "NODE_RANK", "AGG_0_HEAD_IP"}
with_names = st.lists(st.one_of(values, st.sampled_from(_NAMES).map(lambda n: f"${n}"), st.sampled_from(_NAMES).map(lambda n: "${" + n + "}")),
                      max_size=5).map("".join)


@settings(max_examples=examples(100), deadline=None)
@given(with_names)
def test_only_documented_placeholders_expand_when_pasted(value: str) -> None:
    """Pasted into a shell holding a value for every name, a quoted value expands the documented
    placeholders and nothing else; `shlex.split` still gives the value itself."""
    quoted = quote(value)
    env = {"PATH": "/usr/bin:/bin", **{name: f"<{name}>" for name in _NAMES}}
    run = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, text=True, env=env)
    expected = re.sub(r"\$(?:([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\})",
                      lambda m: f"<{m[1] or m[2]}>" if (m[1] or m[2]) in _DOCUMENTED else m[0], value)
    assert run.stdout == expected and shlex.split(quoted) == [value]


def test_a_heredoc_expands_both_forms_of_a_documented_placeholder_only() -> None:
    """Options files (TRT-LLM's YAML) and configs: `${ETCD_IP}` and `$ETCD_IP` alike; nothing else."""
    content = "a: $ETCD_IP\nb: ${ETCD_IP}\nc: ${AWS_SECRET_ACCESS_KEY}\nd: $HOME\ne: ${ETCD_IP:-x}\nf: $(id)\n"
    script = "\n".join(heredoc("out.yaml", content)) + "\ncat out.yaml\n"
    run = subprocess.run(["bash", "-c", f'cd "$(mktemp -d)" && {script}'], text=True, capture_output=True, env=READER_ENV)
    assert run.returncode == 0, run.stderr
    assert run.stdout == content.replace("a: $ETCD_IP", "a: 10.0.0.9").replace("b: ${ETCD_IP}", "b: 10.0.0.9")


@settings(max_examples=examples(300))
@given(st.lists(st.tuples(flags, st.lists(values, max_size=3)), max_size=6), st.dictionaries(env_names, values, max_size=4))
def test_shlex_recovers_the_exact_argv(args, env) -> None:
    block = Block(kind="worker", role="agg", title="t", cmd="python3 -m sglang.launch_server",
                  args=tuple((f, *v) for f, v in args), env=env)
    text = format_block(block)
    assert shlex.split(text.replace("\\\n", " ")) == block_argv(block)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(flags, st.lists(values, max_size=2)), max_size=4), st.dictionaries(env_names, values, max_size=3))
def test_every_command_passes_bash_n(args, env) -> None:
    block = Block(kind="worker", role="agg", title="t", cmd="python3 -m sglang.launch_server",
                  args=tuple((f, *v) for f, v in args), env=env)
    assert _bash_ok(format_block(block))


def test_heredoc_expands_placeholders_only() -> None:
    content = "map $http_x $key;\nserver $FRONTEND_0_IP:8180;\nliteral \\ and `tick`\n"
    script = "\n".join(heredoc("out.conf", content)) + "\ncat out.conf\n"
    run = subprocess.run(["bash", "-c", f"cd \"$(mktemp -d)\" && FRONTEND_0_IP=10.0.0.5\n{script}"], text=True, capture_output=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == content.replace("$FRONTEND_0_IP", "10.0.0.5")


STUB = '#!/bin/sh\nprintf "%s\\0" "${0##*/}" "$@" > "$STUB_OUT"; env -0 > "$STUB_OUT.env"\n'


def run_with_stubs(script: str, arg: str, tmp_path: Path, commands: set[str],
                   env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[str], dict[str, str]]:
    """Run `script arg` with every command a stub that records its argv (NUL-separated) and environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in commands:
        (bin_dir / name).write_text(STUB)
        (bin_dir / name).chmod(0o755)
    out = tmp_path / "argv"
    out.unlink(missing_ok=True)
    (tmp_path / "launch.sh").write_text(script)
    run = subprocess.run(["bash", str(tmp_path / "launch.sh"), arg], capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_OUT": str(out), **env})
    if not out.exists():
        return run, [], {}
    got_env = dict(e.split("=", 1) for e in (tmp_path / "argv.env").read_text().split("\0")[:-1])
    return run, out.read_text().split("\0")[:-1], got_env


def test_launch_script_runs_exactly_one_process(tmp_path: Path) -> None:
    blocks = [Block(kind="etcd", title="etcd", cmd="etcd", args=(("--advertise-client-urls", "http://$ETCD_IP:2379"),), where="on one CPU node"),
              Block(kind="worker", role="decode", title="Decode worker", cmd="python3 -m dynamo.sglang", workers=2, nodes_per_worker=2,
                    env={"ETCD_ENDPOINTS": "http://$ETCD_IP:2379", "Q": "it's"},
                    args=(("--dist-init-addr", "$DECODE_HEAD_IP:20000"), ("--node-rank", "$NODE_RANK")), where="on 2 nodes")]
    text = copy_all(blocks, ["heading"], {"ETCD_IP": "node running etcd", "DECODE_HEAD_IP": "head", "NODE_RANK": "rank"}.get)
    assert _bash_ok(text)
    cluster = {"ETCD_IP": "10.0.0.1", "DECODE_HEAD_IP": "10.0.0.2"}
    stubs = {"etcd", "python3"}
    listed, _, _ = run_with_stubs(text, "--list", tmp_path, stubs, cluster)
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == ["etcd", "decode-0", "decode-0-node1", "decode-1", "decode-1-node1"] and "decode-1-node1  node 2 of the 2 nodes of this decode worker, NODE_RANK=1" in listed.stdout
    run, argv, env = run_with_stubs(text, "decode-1-node1", tmp_path, stubs, cluster)
    assert run.returncode == 0, run.stderr
    assert argv == ["python3", "-m", "dynamo.sglang", "--dist-init-addr", "10.0.0.2:20000", "--node-rank", "1"]
    assert env["ETCD_ENDPOINTS"] == "http://10.0.0.1:2379" and env["Q"] == "it's"
    assert run_with_stubs(text, "etcd", tmp_path, stubs, cluster)[1] == ["etcd", "--advertise-client-urls", "http://10.0.0.1:2379"]
    run, argv, _ = run_with_stubs(text, "etcd", tmp_path, stubs, {})
    assert run.returncode != 0 and "node running etcd" in run.stderr and argv == []     # placeholder unset: nothing runs
    run, argv, _ = run_with_stubs(text, "decode-2", tmp_path, stubs, cluster)
    assert run.returncode == 2 and argv == [] and "unknown process 'decode-2'" in run.stderr and "decode-1-node1" in run.stderr
    run, argv, _ = run_with_stubs(text, "", tmp_path, stubs, cluster)
    assert run.returncode == 2 and argv == [] and "Usage:" in run.stderr


def test_launch_script_pasted_into_a_terminal_leaves_the_shell_open(tmp_path: Path) -> None:
    """Bug: the site's "Copy all" copies the launch script; pasted into an interactive shell (a reader's
    SSH session), its dispatch saw no argument, printed the usage and ran `exit 2`, closing the session.
    Run as a script it still exits 2; pasted, it prints the usage, starts nothing and the shell goes on."""
    blocks = [Block(kind="etcd", title="etcd", cmd="etcd", args=(("--data-dir", "/tmp/etcd"),), where="on one CPU node")]
    text = copy_all(blocks, ["heading"], {}.get)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "etcd").write_text(STUB)
    (bin_dir / "etcd").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_OUT": str(tmp_path / "argv"), "HOME": str(tmp_path)}
    pasted = subprocess.run(["bash", "--norc", "--noprofile", "-i"], input=text + "echo still-open\n", capture_output=True,
                            text=True, cwd=tmp_path, env=env)
    assert "still-open" in pasted.stdout and "Usage:" in pasted.stderr, pasted.stderr
    assert not (tmp_path / "argv").exists()          # nothing was started
    run, argv, _ = run_with_stubs(text, "", tmp_path, {"etcd"}, {})
    assert run.returncode == 2 and argv == [] and "Usage:" in run.stderr
