"""Check configuration: which checks run, their severities, when the run fails.

```toml
[tool.pedrag]
select = ["dead-rule", "conflict"]       # only these checks (default: every check)
extend-select = ["coverage-gap"]         # these as well as the selected ones
ignore = ["unused-metric"]               # never report these checks
severity = { coverage-gap = "error" }    # change a check's severity
fail-on = "warning"                      # exit 1 on warnings too (default: "error")
files = ["theories/*.yaml"]              # pedrag files even without a `pedrag:` key (editor, hook)
docs-url = "https://example.org/pedrag/" # where SARIF helpUri and the editor's links point
```

Each checked file uses the closest `pyproject.toml` with a `[tool.pedrag]` table in its own
folder or a parent folder (as ruff finds `[tool.ruff]`), so the same files give the same
result wherever the command is run from. The command line's `--select` replaces a file's
`select`, its `--extend-select` and `--ignore` add to the file's lists. Unknown keys and
unknown check names are errors with a "did you mean".

Per-file (`ignore:` at the top of a theory or curriculum file) and per-item (`ignore:` on a
rule, action or metric) ignores live in the files themselves and are applied by the driver.
Front-end checks (syntax-error, unknown-name, type-error, trust-boundary, duplicate-id) can be
neither ignored, deselected nor downgraded anywhere: a file with such an error cannot be
compiled, so hiding the error would only hide why.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from pedrag.dsl.diagnostics import Severity
from pedrag.kernel.errors import PedragError
from pedrag.kernel.suggest import did_you_mean

KEYS = ("select", "extend-select", "ignore", "severity", "fail-on", "files", "docs-url")

DOCS_URL = "https://pedrag.readthedocs.io/en/latest/"
"""The documentation site's default base URL (`docs-url` replaces it): each check has the page
`checks/<name>/` there (docs/gen_site.py builds it), the links SARIF and the editor give."""


def check_page(check: str, base: str | None = None) -> str:
    """The documentation page of `check` under the site at `base` (default `DOCS_URL`)."""
    root = base or DOCS_URL
    return f"{root if root.endswith('/') else root + '/'}checks/{check}/"


class ConfigError(PedragError):
    pass


@dataclass(frozen=True)
class CheckConfig:
    """The configuration one file is checked with."""

    select: frozenset[str] | None = None  # None: every check
    extend_select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    severity: dict[str, Severity] = field(default_factory=dict)
    fail_on: Severity = Severity.ERROR
    origin: str | None = None
    files: tuple[str, ...] = ()  # globs (relative to the pyproject's folder) of pedrag files
    docs_url: str | None = None

    def claims(self, path: str) -> bool:
        """Whether `path` matches a `files` glob (relative to the configuration's folder)."""
        if not self.files:
            return False
        target = Path(path).resolve()
        root = Path(self.origin).parent if self.origin else Path.cwd().resolve()
        try:
            relative = target.relative_to(root).as_posix()
        except ValueError:
            return False
        return any(fnmatch.fnmatchcase(relative, pattern) for pattern in self.files)

    def reports(self, check: str) -> bool:
        """Whether findings of `check` are reported (front-end checks always are: the driver
        never asks for them)."""
        if check in self.ignore:
            return False
        return self.select is None or check in self.select or check in self.extend_select

    def for_file(self, path: str) -> CheckConfig:
        return self

    def fails(self, severity: Severity) -> bool:
        return severity.rank >= self.fail_on.rank


class ConfigSource(Protocol):
    """Gives the configuration a file is checked with (a fixed one, or one found per file)."""

    def for_file(self, path: str) -> CheckConfig: ...


@dataclass(frozen=True)
class Overrides:
    """What the command line says on top of the files' configuration."""

    select: frozenset[str] | None = None
    extend_select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    fail_on: Severity | None = None

    def apply(self, config: CheckConfig) -> CheckConfig:
        return replace(
            config,
            select=self.select if self.select is not None else config.select,
            extend_select=config.extend_select | self.extend_select,
            ignore=config.ignore | self.ignore,
            fail_on=self.fail_on or config.fail_on,
        )


class ConfigFinder:
    """The configuration of each checked file, found upward from the file's folder (cached per
    folder), with the command line's overrides applied."""

    def __init__(
        self, known_checks: frozenset[str] = frozenset(), overrides: Overrides | None = None
    ) -> None:
        self.known_checks = known_checks
        self.overrides = overrides or Overrides()
        self._by_folder: dict[Path, CheckConfig] = {}
        # By the path as given too: resolving it is a few system calls, and a report asks
        # once per finding (5,000 findings: 0.25 s).
        self._by_path: dict[str, CheckConfig] = {}
        self.used: set[str] = set()

    def for_file(self, path: str) -> CheckConfig:
        config = self._by_path.get(path)
        if config is None:
            folder = Path(path).resolve().parent if path not in ("-", "") else Path.cwd().resolve()
            if folder not in self._by_folder:
                found = load_config(folder, self.known_checks)
                self._by_folder[folder] = self.overrides.apply(found)
            config = self._by_path[path] = self._by_folder[folder]
        if config.origin:
            self.used.add(config.origin)
        return config


def find_pyproject(start: Path) -> Path | None:
    """The closest pyproject.toml at or above `start` that has a `[tool.pedrag]` table."""
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text("utf-8")
            except (OSError, UnicodeDecodeError):
                return candidate  # load_config says why it cannot be read
            if re.search(r"^\s*\[\s*tool\s*\.\s*pedrag\s*[\].]", text, re.MULTILINE):
                return candidate
    return None


def _shown(path: Path) -> Path:
    """`path` relative to the working directory when under it (messages stay short)."""
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _where(path: Path, text: str, key: str) -> str:
    """`pyproject.toml:LINE` of `key`'s first assignment after `[tool.pedrag]`, for messages."""
    header = re.search(r"^\s*\[\s*tool\s*\.\s*pedrag\s*\]", text, re.MULTILINE)
    start = header.end() if header else 0
    found = re.compile(rf"^[ \t]*[\"']?{re.escape(key)}[\"']?[ \t]*=", re.MULTILINE).search(
        text, start
    )
    if found is None:
        return str(path)
    line = text.count("\n", 0, found.start())
    return f"{path}:{line + 1}"


def _did_you_mean(name: str, choices: list[str] | tuple[str, ...] | frozenset[str]) -> str:
    return did_you_mean(name.replace("_", "-"), choices, lead="; ")


def _names(value: Any, key: str, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(
            f'{where}: [tool.pedrag] {key} must be a list of check names, e.g. {key} = ["dead-rule"]'
        )
    return frozenset(value)


def _level(value: Any, what: str, where: str) -> Severity:
    try:
        return Severity(value)
    except ValueError:
        raise ConfigError(
            f"{where}: {what} must be error, warning or note, not {value!r}"
            + (_did_you_mean(value, [s.value for s in Severity]) if isinstance(value, str) else "")
        ) from None


def load_config(
    start: Path | None = None, known_checks: frozenset[str] = frozenset()
) -> CheckConfig:
    """The configuration for files in folder `start` (default: the working directory)."""
    path = find_pyproject((start or Path.cwd()).resolve())
    if path is None:
        return CheckConfig()
    try:
        text = path.read_text("utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{_shown(path)}: cannot read [tool.pedrag]: {exc}") from None
    origin, path = path, _shown(path)
    section = data.get("tool", {}).get("pedrag", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.pedrag] must be a table")
    for key in section:
        if key not in KEYS:
            raise ConfigError(
                f"{_where(path, text, key)}: unknown key `{key}` in [tool.pedrag]"
                + (_did_you_mean(key, KEYS) or f" (allowed: {', '.join(KEYS)})")
            )
    select = (
        _names(section["select"], "select", _where(path, text, "select"))
        if "select" in section
        else None
    )
    extend = _names(
        section.get("extend-select", []), "extend-select", _where(path, text, "extend-select")
    )
    ignore = _names(section.get("ignore", []), "ignore", _where(path, text, "ignore"))
    severity = section.get("severity", {})
    if not isinstance(severity, dict):
        raise ConfigError(
            f"{_where(path, text, 'severity')}: [tool.pedrag] severity must be a table of "
            'check = level, e.g. severity = { coverage-gap = "error" }'
        )
    levels = {
        name: _level(level, f"severity of `{name}`", _where(path, text, "severity"))
        for name, level in severity.items()
    }
    fail_on = (
        _level(section["fail-on"], "fail-on", _where(path, text, "fail-on"))
        if "fail-on" in section
        else Severity.ERROR
    )
    for key, names in (
        ("select", select or frozenset()),
        ("extend-select", extend),
        ("ignore", ignore),
        ("severity", frozenset(levels)),
    ):
        check_names(names, known_checks, f"{_where(path, text, key)}: [tool.pedrag] {key}")
    downgraded = {name for name, level in levels.items() if level is not Severity.ERROR}
    refuse_front_end(ignore | downgraded, f"{path}: [tool.pedrag]")
    files = section.get("files", [])
    if not isinstance(files, list) or not all(isinstance(item, str) for item in files):
        raise ConfigError(
            f"{_where(path, text, 'files')}: [tool.pedrag] files must be a list of globs, "
            'e.g. files = ["theories/*.yaml"]'
        )
    docs_url = section.get("docs-url")
    if docs_url is not None and (
        not isinstance(docs_url, str) or not re.match(r"https?://[^\s/]+", docs_url)
    ):
        raise ConfigError(
            f"{_where(path, text, 'docs-url')}: [tool.pedrag] docs-url must be an http(s) URL, "
            f'e.g. docs-url = "{DOCS_URL}"'
        )
    return CheckConfig(select, extend, ignore, levels, fail_on, str(origin), tuple(files), docs_url)


def check_names(names: frozenset[str], known_checks: frozenset[str], where: str) -> None:
    """Raise ConfigError on the first name that is not a check (with a did-you-mean)."""
    for name in sorted(names):
        if known_checks and name not in known_checks:
            raise ConfigError(
                f"{where} names unknown check `{name}`"
                + (_did_you_mean(name, known_checks) or " (see `pedrag check --list-checks`)")
            )


def refuse_front_end(names: frozenset[str] | set[str], where: str) -> None:
    """Front-end checks can be neither ignored nor downgraded: raise ConfigError."""
    from pedrag.compiler.checks import catalog

    for name in sorted(names):
        check = catalog().get(name)
        if check is not None and check.info.stage == "front-end":
            raise ConfigError(
                f"{where} cannot ignore or downgrade `{name}`: a file with a front-end error "
                "cannot be compiled"
            )
