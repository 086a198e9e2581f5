"""A whole InferenceX checkout without a manifest (issue 31): one bad config never blocks the rest.
`build --source` publishes every config that renders, with its perf-changelog provenance (status
`changelog`, the checkout's commit and the entry's day from git), lists each refused config and
point with its located reason on the home page and in cookbook.json; `--strict` exits 1 for CI;
`diff` of that site against the checkout marks the refused ones unpaired (`not-rendered`)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cookbookgen.cli import main
from cookbookgen.commands.diff import run_diff

from conftest import DATA, bundled_keys

BROKEN = """
broken-rows-config:
  model: org/model
  framework: dynamo-sglang
  scenarios:
    fixed-seq-len:
      - search-space: not-a-list
"""
MASTER = "inferencex-e2e/configs/amd-master.yaml"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2026-10-20T12:00:00Z", "GIT_COMMITTER_DATE": "2026-10-20T12:00:00Z",
           "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled checkout plus one config that cannot be read, committed to a git work tree."""
    root = tmp_path_factory.mktemp("whole") / "checkout"
    shutil.copytree(DATA / "inferencex", root)
    master = root / MASTER
    master.write_text(master.read_text(encoding="utf-8") + BROKEN, encoding="utf-8")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "checkout"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=GIT_ENV)
    return root


@pytest.fixture(scope="module")
def site(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    assert main(["build", "--source", str(checkout), "--out", str(out), "--no-cache", "--date", "2026-11-01"]) == 0
    return out


def test_build_publishes_every_other_config_with_changelog_provenance(checkout: Path, site: Path) -> None:
    data = json.loads((site / "cookbook.json").read_text(encoding="utf-8"))
    keys = {c["config_key"] for page in data["pages"] for c in page["cells"]}
    assert keys == set(bundled_keys())
    lines = (checkout / MASTER).read_text(encoding="utf-8").count("\n") - BROKEN.count("\n")
    assert data["refused"] == [{"config": "broken-rows-config", "point": None,
                                "reason": f"{MASTER}:{lines + 7}: broken-rows-config.scenarios.fixed-seq-len[0]: "
                                          "expected a mapping with a `search-space` list"}]
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    agg = next(c for page in data["pages"] for c in page["cells"] if c["config_key"] == "dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg")
    prov = agg["provenance"]
    assert (prov["status"], prov["pr"], prov["commit"], prov["run"], prov["date"]) == ("changelog", 4180, head, None, "2026-10-20")
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "Not published" in home and "broken-rows-config" in home and "expected a mapping with a" in home
    page = next(site.rglob("dsv41flash-fp4-gb300-dynamo-sglang-agentic-agg-0/index.html")).read_text(encoding="utf-8")
    assert "History" in page and "pull/4180" in page and "Move the GB300 DeepSeek-V4.1-Flash" in page


def test_strict_build_exits_1_when_anything_is_refused(checkout: Path, tmp_path: Path) -> None:
    assert main(["build", "--source", str(checkout), "--out", str(tmp_path / "site"), "--no-cache", "--strict",
                 "--date", "2026-11-01"]) == 1
    assert (tmp_path / "site" / "index.html").is_file(), "the site is still built"


def test_diff_marks_the_refused_config_unpaired(checkout: Path, site: Path) -> None:
    import argparse

    def diff(*extra: str) -> tuple[int, str]:
        args = argparse.Namespace(cookbook=[site], source=checkout, config=None, logs=None, format="json", policy=None, cache=None,
                                  allow_unpaired="--allow-unpaired" in extra, verbose=False, explain=None, cell=None, jobs=1)
        out = io.StringIO()
        return run_diff(args, out), out.getvalue()

    code, text = diff()
    report = json.loads(text)
    unpaired = [c for c in json.dumps(report).split("not-rendered")][1:]
    assert code == 1 and unpaired, text[:2000]
    assert "broken-rows-config" in text and "expected a mapping with a `search-space` list" in text
    assert diff("--allow-unpaired")[0] == 0


def test_a_variant_that_cannot_be_derived_is_listed_not_fatal(checkout: Path) -> None:
    """A derived router/KV-tier variant whose commands fail their consistency check stopped a whole-checkout
    build (InferenceX 843c6254: a co-located prefill port clash); it is now listed with the refused, the cell kept."""
    from cookbookgen.cells.assemble import load_cookbook
    from cookbookgen.cells.cache import with_variants_cached
    from cookbookgen.errors import CookbookError
    import cookbookgen.cells.variants as variants

    cookbook = load_cookbook(checkout)
    real = variants.derive

    def failing(dep, measured_router, measured_kv, router, kv, donors):  # type: ignore[no-untyped-def]
        if kv == "hicache":
            raise CookbookError.at("x", 0, "", "port 8998 is used by both prefill workers")
        return real(dep, measured_router, measured_kv, router, kv, donors)

    try:
        variants.derive = failing
        whole = with_variants_cached(cookbook, None, whole=True)
        with pytest.raises(CookbookError, match="port 8998"):
            with_variants_cached(cookbook, None)
    finally:
        variants.derive = real
    skipped = [r for r in whole.refused if r.point and "KV tier hicache" in r.point]
    assert skipped and all("port 8998 is used by both prefill workers" in r.reason for r in skipped)
    cells = [c for page in whole.pages for c in page.cells]
    assert cells and all(all(v.kv != "hicache" for v in c.variants) for c in cells)
    assert any(c.variants for c in cells)


def test_the_site_reader_takes_back_a_multi_line_argument() -> None:
    """A benchmark script passes --kv-transfer-config as multi-line JSON (InferenceX 843c6254,
    dsv4_fp4_b300_vllm_mtp.sh); the diff read the site's command line by line and stopped with a traceback."""
    from cookbookgen.diff.site import parse_block_text
    from cookbookgen.render.model import Block
    from cookbookgen.render.shell import format_block

    value = '{\n  "kv_connector": "SimpleCPUOffloadConnector",\n  "kv_role": "kv_both"\n}'
    block = Block(kind="worker", role="agg", title="Aggregated worker", cmd="vllm serve org/m",
                  args=(("--host", "0.0.0.0"), ("--kv-transfer-config", value), ("--block-size", "256")), env={"A": "1"})
    parsed = parse_block_text(format_block(block))
    assert (parsed["cmd"], parsed["args"], parsed["env"]) == ("vllm serve org/m", block.args, {"A": "1"})


def test_a_frontend_nginx_setting_no_table_names_is_a_finding_not_a_crash() -> None:
    """InferenceX 843c6254's recipes set frontend.nginx_container; the diff's nginx.conf table has no line for
    it, and the whole-tree diff stopped with KeyError. It is now a mismatch naming the setting."""
    from types import SimpleNamespace

    from cookbookgen.diff.structure import file_setting

    cls, detail, role = file_setting(SimpleNamespace(nginx=True), ("frontend", "nginx_container"), "nginx:1.27", ())  # type: ignore[arg-type]
    assert (cls, role) == ("mismatch", "nginx") and "nginx_container" in detail
