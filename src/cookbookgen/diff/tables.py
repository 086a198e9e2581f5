"""Stage 0 of the diff (data): the packaged tables it reads, each parsed once: `synthesized.yaml` (what a
cookbook may add to a recipe and how it is checked) and `classes.yaml` (what each finding class and unpaired
reason means). Every later stage (pair -> expect -> compare -> report) reads them through here.
"""

from __future__ import annotations

from typing import Any, cast

from ..recipes.load import package_yaml

RawYaml = Any


def table() -> dict[str, RawYaml]:
    """`synthesized.yaml`."""
    return cast(dict[str, RawYaml], package_yaml("diff/synthesized.yaml"))


def glossary() -> dict[str, dict[str, str]]:
    """`classes.yaml`: every finding class and unpaired reason with its meaning."""
    return cast(dict[str, dict[str, str]], package_yaml("diff/classes.yaml"))
