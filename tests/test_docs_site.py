"""The documentation site (mkdocs.yml, MkDocs with Material) builds with warnings as errors, its
internal links and anchors checked, and every help link pedrag emits lands on a page of it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from pedrag.compiler.checks import catalog
from pedrag.compiler.config import DOCS_URL, check_page
from pedrag.compiler.reports.sarif import format_sarif

ROOT = Path(__file__).resolve().parent.parent


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # Not `-q`: quiet mode drops warnings before strict mode counts them.
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)]
        + ["-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)},
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    built = _build(ROOT / "mkdocs.yml", target)
    assert built.returncode == 0, built.stdout + built.stderr
    return target


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(value for name, value in attrs if name == "id" and value)


def _lands(site: Path, url: str) -> bool:
    """Whether `url` (under the site's base) names a built page, and its anchor an id there."""
    assert url.startswith(DOCS_URL), url
    parts = urlsplit(url)
    page = site / url[len(DOCS_URL) :].split("#")[0] / "index.html"
    if not page.is_file():
        return False
    if not parts.fragment:
        return True
    ids = _Ids()
    ids.feed(page.read_text("utf-8"))
    return parts.fragment in ids.ids


def test_the_site_builds_strictly_with_one_page_per_check(site: Path) -> None:
    for name in catalog():
        page = site / "checks" / name / "index.html"
        assert page.is_file(), name
        ids = _Ids()
        ids.feed(page.read_text("utf-8"))
        assert {name, "how-to-fix"} <= ids.ids


def test_the_default_docs_url_is_the_sites_own_address() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))
    assert config["site_url"] == DOCS_URL


def test_every_sarif_help_link_and_editor_link_lands_on_a_page(site: Path) -> None:
    sarif = json.loads(format_sarif([]))
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    assert {rule["id"] for rule in rules} == set(catalog())
    for rule in rules:
        assert _lands(site, rule["helpUri"]), rule["helpUri"]
        assert rule["helpUri"] == check_page(rule["id"])  # the editor's codeDescription.href
    assert _lands(site, sarif["runs"][0]["tool"]["driver"]["informationUri"] + "#pedrag")


def test_a_broken_internal_link_fails_the_build(tmp_path: Path) -> None:
    """The check is real: the same configuration over docs with one dead anchor fails."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    index = docs / "index.md"
    index.write_text(index.read_text("utf-8") + "\n[gone](cli.md#no-such-section)\n", "utf-8")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "no-such-section" in built.stdout + built.stderr
