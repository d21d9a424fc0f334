"""The versions a cached answer was made by include the libraries that decide it
(`code_version.library_versions`), read from their installed metadata without importing them,
so an upgrade in place (`pip install -U z3-solver`) starts a new cache."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pedrag.compiler import code_version


@pytest.fixture
def fresh_versions() -> Iterator[None]:
    """The process's remembered versions forgotten before and after the test."""
    code_version.library_versions.cache_clear()
    code_version._entries.cache_clear()
    yield
    code_version.library_versions.cache_clear()
    code_version._entries.cache_clear()


def test_an_upgrade_in_place_changes_the_library_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_versions: None
) -> None:
    (tmp_path / "solverlib").mkdir()
    (tmp_path / "solverlib" / "__init__.py").write_text("raise ImportError('never imported')\n")
    (tmp_path / "Solver_Lib-4.12.0.dist-info").mkdir()
    (tmp_path / "other_lib-4.12.0.dist-info").mkdir()  # another distribution: not its version
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(code_version, "LIBRARIES", {"solverlib": ("solver-lib", "__version__")})
    before = code_version.library_versions()
    assert "Solver_Lib-4.12.0" in repr(before) and "other_lib" not in repr(before)

    (tmp_path / "Solver_Lib-4.12.0.dist-info").rename(tmp_path / "Solver_Lib-4.13.0.dist-info")
    code_version.library_versions.cache_clear()
    code_version._entries.cache_clear()  # a new process
    after = code_version.library_versions()
    assert after != before and "4.13.0" in repr(after)


def test_a_library_without_metadata_is_asked_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_versions: None
) -> None:
    (tmp_path / "bare_solver").mkdir()
    (tmp_path / "bare_solver" / "__init__.py").write_text(
        "def get_version_string():\n    return '9.8.7'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "bare_solver", raising=False)
    monkeypatch.setattr(
        code_version, "LIBRARIES", {"bare_solver": ("bare-solver", "get_version_string")}
    )
    ((name, version),) = code_version.library_versions()
    assert name == "bare_solver" and version.endswith(":9.8.7")


def test_the_installed_deciding_libraries_are_named_without_importing_them(
    fresh_versions: None,
) -> None:
    imported = {name for name in code_version.LIBRARIES if name in sys.modules}
    found = dict(code_version.library_versions())
    assert set(found) == {"z3", "yaml", "pydantic", "pydantic_core", "lark"}
    assert all(".dist-info" in version or ".egg-info" in version for version in found.values())
    assert {name for name in code_version.LIBRARIES if name in sys.modules} == imported


def test_a_single_module_library_is_found_beside_its_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_versions: None
) -> None:
    (tmp_path / "solo_solver.py").write_text("raise ImportError('never imported')\n")
    (tmp_path / "solo_solver-2.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(code_version, "LIBRARIES", {"solo_solver": ("solo-solver", "VERSION")})
    ((name, version),) = code_version.library_versions()
    assert version == f"{tmp_path}:solo_solver-2.0.dist-info"
