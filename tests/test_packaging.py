"""The wheel ships the whole library: every package under memory_core is listed for setuptools.

An editable install (make setup, CI) finds subpackages by path, so a subpackage missing from
pyproject.toml passes every other test and breaks only an installed wheel.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_of_memory_core_is_in_the_wheel() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "memory_core").rglob("__init__.py")}
    assert on_disk <= listed, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(on_disk - listed)}"
    data_only = listed - on_disk
    assert data_only == {"memory_core.demo.data"}, f"listed packages that are not in memory_core/: {data_only}"
