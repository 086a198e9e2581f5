"""A wheel carries the project files cookbookgen reads beside its code (`mkdocs.yml`, `templates/` and
the bundled example `data/`) inside the package, as `cookbookgen/_project/`, where
`cookbookgen.project` looks first; an editable install reads them from the checkout instead.
Everything else about the package is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PROJECT_FILES = ("mkdocs.yml", "templates", "data")


class BuildWithProjectFiles(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "cookbookgen" / "_project"
        shutil.rmtree(target, ignore_errors=True)
        for name in PROJECT_FILES:
            source = Path(name)
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildWithProjectFiles})
