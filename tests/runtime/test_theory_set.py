"""Loading theory sets: folders are found as `pedrag check` finds them, ids are unique."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest

from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet


def _copy_shipped(folder: Path, *names: str) -> None:
    root = Path(str(resources.files("pedrag.theories")))
    for name in names:
        shutil.copy(root / name, folder / name)


def test_a_folder_skips_yaml_that_is_not_pedrag_and_hidden_folders(tmp_path: Path) -> None:
    _copy_shipped(tmp_path, "socratic.yaml", "srl.yaml")
    (tmp_path / "docker-compose.yml").write_text("services: {web: {image: nginx}}\n")
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "ci.yaml").write_text("on: push\njobs: {}\n")
    theories = TheorySet.from_paths([tmp_path])
    assert theories.ids == ("socratic", "srl")


def test_a_theory_id_defined_twice_is_an_error_naming_both_files(tmp_path: Path) -> None:
    _copy_shipped(tmp_path, "srl.yaml")
    (tmp_path / "nested").mkdir()
    _copy_shipped(tmp_path / "nested", "srl.yaml")
    with pytest.raises(TheoryLoadError, match="theory id `srl` is already defined in"):
        TheorySet.from_paths([tmp_path])
    assert TheorySet.from_paths([tmp_path], strict=False).ids == ("srl",)


def test_a_missing_path_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(TheoryLoadError, match="no such file or directory"):
        TheorySet.from_paths([tmp_path / "nope"])
