"""Where the files cookbookgen keeps beside its package are: `mkdocs.yml`, `templates/` and the
bundled example `data/` (a cookbook manifest and a small InferenceX checkout), found from the
package's own location, never from the current folder. Reads nothing; only looks for paths.

A wheel carries them inside the package (`cookbookgen/_project/`, copied by setup.py); an
editable install (`pip install -e .`) finds them in its checkout, the first folder above the
package that holds `mkdocs.yml` and `templates/`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from .errors import CookbookError

EXAMPLE_MANIFEST = "data/cookbook.yaml"
EXAMPLE_SOURCE = "data/inferencex"


@cache
def _root() -> Path | None:
    package = Path(__file__).resolve().parent
    for parent in (package / "_project", *package.parents):
        if (parent / "mkdocs.yml").is_file() and (parent / "templates").is_dir():
            return parent
    return None


def project_root() -> Path:
    """The checkout holding `mkdocs.yml`, `templates/` and `data/`."""
    root = _root()
    if root is None:
        raise CookbookError.usage("cookbookgen", "mkdocs.yml and templates/ not found above the package; "
                                                 "reinstall cookbookgen (pip install -e . from its checkout, or its wheel)")
    return root


def bundled(relative: str) -> Path:
    """A file or folder of the project, e.g. `bundled(EXAMPLE_MANIFEST)`."""
    return project_root() / relative


def shown_default(relative: str) -> str:
    """How help texts name a bundled default: its real path when cookbookgen can find it."""
    root = _root()
    return f"the bundled example, {root / relative}" if root else f"the bundled example ({relative})"
