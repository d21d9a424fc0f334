"""Check configuration: severity overrides and ignores from `[tool.pedrag]` in pyproject.toml.

```toml
[tool.pedrag]
ignore = ["unused-metric"]                    # never report these checks
severity = { coverage-gap = "error" }          # change a check's severity
```
Per-file (`ignore:` at the top of a theory or curriculum file) and per-item (`ignore:` on a
rule, action or metric) ignores live in the files themselves and are applied by the driver.
Front-end checks (syntax-error, unknown-name, type-error, trust-boundary, duplicate-id) can be
neither ignored nor downgraded anywhere: a file with such an error cannot be compiled, so
hiding the error would only hide why.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pedrag.dsl.diagnostics import Severity


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class CheckConfig:
    ignore: frozenset[str] = frozenset()
    severity: dict[str, Severity] = field(default_factory=dict)
    origin: str | None = None


def find_pyproject(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(
    start: Path | None = None, known_checks: frozenset[str] = frozenset()
) -> CheckConfig:
    path = find_pyproject((start or Path.cwd()).resolve())
    if path is None:
        return CheckConfig()
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path.name}: cannot read [tool.pedrag]: {exc}") from None
    section = data.get("tool", {}).get("pedrag", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path.name}: [tool.pedrag] must be a table")
    ignore = section.get("ignore", [])
    severity = section.get("severity", {})
    if not isinstance(ignore, list) or not all(isinstance(i, str) for i in ignore):
        raise ConfigError(f"{path.name}: [tool.pedrag] ignore must be a list of check names")
    if not isinstance(severity, dict):
        raise ConfigError(f"{path.name}: [tool.pedrag] severity must be a table of check = level")
    levels: dict[str, Severity] = {}
    for name, level in severity.items():
        try:
            levels[name] = Severity(level)
        except ValueError:
            raise ConfigError(
                f"{path.name}: severity of `{name}` must be error, warning or note, not {level!r}"
            ) from None
    for name in [*ignore, *levels]:
        if known_checks and name not in known_checks:
            raise ConfigError(f"{path.name}: [tool.pedrag] names unknown check `{name}`")
    from pedrag.compiler.checks import catalog

    for name in [*ignore, *(n for n, level in levels.items() if level is not Severity.ERROR)]:
        check = catalog().get(name)
        if check is not None and check.info.stage == "front-end":
            raise ConfigError(
                f"{path.name}: [tool.pedrag] cannot ignore or downgrade `{name}`: a file with a "
                "front-end error cannot be compiled"
            )
    return CheckConfig(frozenset(ignore), levels, str(path))
