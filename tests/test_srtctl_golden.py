"""cookbookgen against srtctl itself: 300 variants of NVIDIA/srt-slurm c88ef731 (v1.0.68), chosen by
scripts/srtctl_select.py so every engine, layout and feature appears, were launched by srtctl's own code
with its process launcher stubbed (scripts/srtctl_reference.py); each role's argv, env and options files
must agree with cookbookgen's render except for the documented classes (scripts/srtctl_compare.py).
The variants that still disagree are listed, each with its reason, in golden/known-differences.json:
any change in what agrees is a reviewed change of that file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data" / "srtctl"
sys.path.insert(0, str(Path(__file__).parent.parent / "scripts"))

import srtctl_compare  # noqa: E402


def test_every_golden_variant_agrees_with_srtctl_or_is_a_listed_difference() -> None:
    goldens = srtctl_compare.load_goldens(DATA / "golden" / "srtctl-v1.0.68.jsonl.gz")
    known = json.loads((DATA / "golden" / "known-differences.json").read_text())
    assert len(goldens) == 300 and {g["srt_slurm_commit"] for g in goldens} == {"c88ef731636890ff6385a783e152c1790e15b194"}
    found = {}
    for golden in goldens:
        diff = srtctl_compare.differences(golden, DATA / "srt-slurm")
        if diff:
            found[srtctl_compare.variant_name(golden)] = diff
    assert found == {name: entry["differences"] for name, entry in known.items()}
    assert len(goldens) - len(found) == 298


def test_the_comparison_catches_a_changed_flag() -> None:
    """Not vacuous: srtctl's record with one worker flag value changed no longer agrees."""
    goldens = srtctl_compare.load_goldens(DATA / "golden" / "srtctl-v1.0.68.jsonl.gz")
    golden = next(g for g in goldens if g["recipe"] == "recipes/vllm/qwen3-32b/disagg-kv-router.yaml")
    assert srtctl_compare.differences(golden, DATA / "srt-slurm") == []
    edited = json.loads(json.dumps(golden).replace('"--max-model-len", "131072"', '"--max-model-len", "65536"'))
    assert edited != golden
    diff = srtctl_compare.differences(edited, DATA / "srt-slurm")
    assert diff and "('--max-model-len', '131072.0')" in " ".join(diff)
