"""A relative `$PEDRAG_CACHE_DIR` names one folder per project and process: taken from the
project's root when first read (`cache_folder.default_folder`), not from whatever the working
folder is at each use."""

from __future__ import annotations

from pathlib import Path

import pytest

from pedrag.compiler import cache_folder


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "theories" / "drafts").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.pedrag]\n", "utf-8")
    monkeypatch.setattr(
        cache_folder, "_RESOLVED", {}, raising=False
    )  # a process that has read nothing yet
    monkeypatch.setenv(cache_folder.ENV_CACHE_DIR, ".cache")
    return root


@pytest.mark.parametrize("folder", ["", "theories", "theories/drafts"])
def test_a_relative_setting_is_taken_from_the_project_root(
    project: Path, folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / folder)
    assert cache_folder.default_folder() == project.resolve() / ".cache"


def test_a_process_that_changes_folder_keeps_its_cache(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "theories")
    first = cache_folder.default_folder()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # outside the project, as the check server in a client's folder
    assert cache_folder.default_folder() == first == project.resolve() / ".cache"


def test_outside_a_project_it_is_the_working_folder_and_absolute_settings_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_folder, "_RESOLVED", {}, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(cache_folder.ENV_CACHE_DIR, "kept")
    assert cache_folder.default_folder() == tmp_path.resolve() / "kept"
    monkeypatch.setenv(cache_folder.ENV_CACHE_DIR, str(tmp_path / "absolute"))
    assert cache_folder.default_folder() == tmp_path / "absolute"
