"""No pattern anchored with "^" is matched from a position.

``pattern.match(text, pos)`` anchors at ``pos`` by itself, and a "^" in the pattern (without
MULTILINE) then matches only at the start of the whole text, so the call fails everywhere
else, silently. Two such patterns hid for several rounds: the detector's operations written
after a number ("8 squared") were never read, and the stream released code lines holding a
sentence from their second sentence on. This walks pedrag's own source for the shape.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runtime", "compiler", "dsl", "kernel", "lsp", "evaluate", "extract", "pedrag")


def _anchored_patterns(tree: ast.Module) -> dict[str, int]:
    """Names bound to ``re.compile("^...")`` without MULTILINE, and their lines."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if getattr(call.func, "attr", None) != "compile" or not call.args:
            continue
        try:
            pattern = ast.literal_eval(call.args[0])
        except ValueError:
            continue
        flags = ast.unparse(call)
        if isinstance(pattern, str) and pattern.startswith("^") and "MULTILINE" not in flags:
            if not pattern.startswith("^(?m") and "re.M" not in flags:
                found.update({t.id: node.lineno for t in node.targets if isinstance(t, ast.Name)})
    return found


def _uses_from_a_position(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    anchored = _anchored_patterns(tree)
    wrong = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("match", "search", "fullmatch", "finditer", "findall")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in anchored
            and (len(node.args) >= 2 or any(k.arg == "pos" for k in node.keywords))
        ):
            name = node.func.value.id
            wrong.append(f"{path.relative_to(root)}:{node.lineno}: {name} (line {anchored[name]})")
    return wrong


def test_no_caret_anchored_pattern_is_matched_from_a_position() -> None:
    files = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    assert len(files) > 100  # the walk found the source
    wrong = [line for path in files for line in _uses_from_a_position(path)]
    assert wrong == []


def test_the_walk_finds_the_shape_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        'import re\n_P = re.compile(r"^\\s*x")\ndef f(t, i):\n    return _P.match(t, i)\n',
        encoding="utf-8",
    )
    assert _uses_from_a_position(sample, tmp_path) == ["sample.py:4: _P (line 2)"]
