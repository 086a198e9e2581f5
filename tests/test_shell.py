"""Quoting and layout: every rendered command is valid bash and `shlex.split` recovers the exact argv."""

from __future__ import annotations

import shlex
import subprocess

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


def test_copy_all_is_valid_bash_and_exports_placeholders() -> None:
    blocks = [Block(kind="etcd", title="etcd", cmd="etcd", args=(("--advertise-client-urls", "http://$ETCD_IP:2379"),)),
              Block(kind="worker", role="decode", title="Decode worker", cmd="python3 -m dynamo.sglang", workers=1, nodes_per_worker=2,
                    args=(("--dist-init-addr", "$DECODE_HEAD_IP:20000"), ("--node-rank", "$NODE_RANK")))]
    text = copy_all(blocks, ["heading"], {"ETCD_IP": "node running etcd", "DECODE_HEAD_IP": "head", "NODE_RANK": "rank"}.get)
    assert _bash_ok(text)
    assert 'export ETCD_IP="${ETCD_IP:?node running etcd}"' in text
    assert "<" not in text.split("# etcd")[0]
    assert "NODE_RANK=0, NODE_RANK=1" in text
