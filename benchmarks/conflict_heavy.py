"""Checks of conflict-heavy theories: `selection: priority`, every rule against the rules above it.

Benchmark (issue 30, item 4). Takes rule counts; prints CPU seconds, each next to its goal and
a baseline measured in the same run:

- the CLI's cold check (`pedrag check --no-cache`) of a generated priority theory
  (`theory_gen.py --selection priority`: 10 priorities, no guards between them, so most pairs
  of one priority conflict and most rules are shadowed), with its findings per check;
- the language server's work for one keystroke in that file, as `pedrag.lsp.server` does it:
  the front end's findings published at once with the last semantic ones carried over, the
  semantic run (`pedrag.lsp.checking.analyse`), and its findings converted and serialised
  as the editor receives them, after the document was opened, then again after one rule's
  condition is narrowed (`theory_gen.one_rule_edit`); goal 10 s from keystroke to
  diagnostics. Each size runs in a fresh process without the on-disk cache, so the figures
  are that process's own;
- the shadowed-rule question alone (`Analysis.shadowed`, in process), against the form it
  replaced: the rule and the negation of every higher rule expanded into boxes
  (`Analysis.decide`), at a smaller size (`--baseline-rules`), since that form grows to
  thousands of boxes. Both must find the same shadowed rules; where several minimal
  shadowing sets exist they may name different ones (cutting names its own, z3 shrinks its
  unsat core), and the run says how many differ.

Child processes keep compiled modules between them, as an installed pedrag does
(`benchmarks/compiled_modules.py`; `--compile-each-run`: each compiles pedrag from source where
the environment says `PYTHONDONTWRITEBYTECODE`).

    python benchmarks/conflict_heavy.py 1000 2000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from compiled_modules import add_flag, child_environment, kept_for_the_run, warm_up  # noqa: E402
from theory_gen import generate  # noqa: E402

from pedrag.compiler import analysis as analysis_module  # noqa: E402
from pedrag.compiler import formula as F  # noqa: E402
from pedrag.compiler.analysis import Analysis, Outcome  # noqa: E402
from pedrag.dsl.ir import RuleInfo  # noqa: E402
from pedrag.dsl.loader import load_text  # noqa: E402

KEYSTROKE_GOAL = 10.0
"""Seconds from a keystroke to the semantic diagnostics of a 2,000-rule conflict-heavy file."""

# One process: open the document, then the keystroke, each as the server handles it
# (`pedrag.lsp.server`): the front end's findings published at once with the last semantic
# ones carried over, then the semantic run and its publish, each publish converted to the
# JSON the editor reads (`LspForms.convert`, then `LspForms.notification`). Prints the
# CPU seconds of each, and the semantic run's alone.
_SERVER = """
import json, sys, time
sys.path[:0] = [{root!r}, {bench!r}]
from theory_gen import generate, one_rule_edit
from pedrag.lsp import checking
checking.DISK_CACHE = False
text = generate({rules}, 7, "priority")
path, uri = {path!r}, "file://" + {path!r}
forms = checking.LspForms()
shown = None

def publish(text, found):
    return len(forms.notification(uri, 1, forms.convert(text, found, uri, None)).encode())

def keystroke(text):
    global shown
    front = checking.analyse(text, path, False, None)
    if shown is not None:
        shown = (text, checking.carry_over(shown[0], text, shown[1]))
        front = [*front, *shown[1]]
    publish(text, front)
    started = time.process_time()
    found = checking.analyse(text, path, True, None)
    semantic = time.process_time() - started
    shown = (text, checking.semantic_findings(found))
    size = publish(text, found)
    return semantic, len(found), size

started = time.process_time()
_, opened, _ = keystroke(text)
middle = time.process_time()
semantic, edited, size = keystroke(one_rule_edit(text))
done = time.process_time()
print(json.dumps([middle - started, done - middle, semantic, opened, edited, size]))
"""


class PreviousShadow(Analysis):
    """The shadowed-rule question as it was asked before cutting boxes: `decide` on the rule
    and the negation of every higher rule (its box form expands), then z3's core."""

    def _shadow(
        self, rule: RuleInfo, higher: list[RuleInfo]
    ) -> tuple[Outcome, tuple[int, ...]] | None:
        point = self.eligible_point(rule)
        if point is not None and not any(F.evaluate(self.eligible[h.id], point) for h in higher):
            return None  # eligible there and nothing that beats it is: as `Analysis._shadow`
        base = [self.eligible[rule.id]]
        tracked = [F.not_(self.eligible[h.id]) for h in higher]
        outcome = self.decide(base, tracked, witness=False)
        if outcome.sat:
            return None
        if outcome.unknown:
            return outcome, ()
        core = self.minimal_core(base, tracked, outcome.core)
        witness = self.decide([*base, *(self.eligible[higher[i].id] for i in core[:1])])
        return witness, core


def cli_check(path: Path) -> tuple[float, dict[str, Any]]:
    """(CPU seconds, report) of one `pedrag check --no-cache` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(
        [sys.executable, "-c", "from pedrag.cli import console; console()", "check"]
        + [str(path), "--no-cache", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_environment(PYTHONPATH=str(ROOT)),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):
        raise SystemExit(f"pedrag check failed: {result.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(result.stdout)


def server_keystroke(rules: int, path: Path) -> tuple[float, float, float]:
    """CPU seconds in a fresh server-side process: opening the document, one keystroke (to
    its semantic diagnostics published), and that keystroke's semantic run alone."""
    code = _SERVER.format(
        root=str(ROOT), bench=str(ROOT / "benchmarks"), rules=rules, path=str(path)
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        env=child_environment(),
    )
    opened, keystroke, semantic, *_ = json.loads(result.stdout.strip().splitlines()[-1])
    return opened, keystroke, semantic


def shadow_question(rules: int, kind: type[Analysis]) -> tuple[float, list[Any]]:
    """(CPU seconds of `shadowed()`, its findings as rule ids) on a fresh analysis."""
    loaded = load_text(generate(rules, 7, "priority"), "gen.yaml")
    assert loaded.theory is not None
    analysis_module._CACHE.clear()
    analysis = kind(loaded.theory)
    for rule in analysis.rules:  # rule status is shared by every check: not this question's
        analysis.rule_status(rule)
    started = time.process_time()
    found = analysis.shadowed()
    spent = time.process_time() - started
    return spent, [tuple(r.id for r in f.rules) for f in found]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rules", type=int, nargs="*", default=[1000, 2000])
    parser.add_argument("--baseline-rules", type=int, default=300)
    parser.add_argument("--no-server", action="store_true", help="skip the keystroke figure")
    add_flag(parser)
    args = parser.parse_args(argv)
    with kept_for_the_run(args.compile_each_run):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    # Each size's CLI check and server run once: check the shipped theories and import the
    # server's modules untimed first, so that no timed process is the one compiling them.
    warm_up([sys.executable, "-m", "pedrag.cli", "check", str(ROOT / "theories"), "--no-cache"])
    warm_up([sys.executable, "-c", "import pedrag.lsp.checking, pedrag.lsp.server"])

    now, found_now = shadow_question(args.baseline_rules, Analysis)
    before, found_before = shadow_question(args.baseline_rules, PreviousShadow)
    same_rules = [f[0] for f in found_now] == [f[0] for f in found_before]
    other_sets = sum(a != b for a, b in zip(found_now, found_before, strict=False))
    print(
        f"shadowed-rule question, {args.baseline_rules:,} rules: {now:.2f} s CPU cutting boxes, "
        f"{before:.2f} s expanding and z3's cores (same run); {len(found_now)} shadowed; "
        f"same shadowed rules: {'yes' if same_rules else 'NO'}; "
        f"another minimal shadowing set named for {other_sets}"
    )
    print()
    print(
        "| rules | CLI cold check | findings | open (server) | keystroke (server) "
        "| of which the semantic run | goal |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for rules in args.rules:
            path = Path(folder) / f"priority_{rules}.yaml"
            path.write_text(generate(rules, 7, "priority"), encoding="utf-8")
            cli, report = cli_check(path)
            counts = Counter(d["check"] for d in report["diagnostics"])
            findings = ", ".join(f"{n:,} {check}" for check, n in counts.most_common(3))
            opened = keystroke = semantic = "not run"
            if not args.no_server:
                open_cpu, key_cpu, semantic_cpu = server_keystroke(rules, path)
                opened, keystroke = f"{open_cpu:.1f} s", f"{key_cpu:.1f} s"
                semantic = f"{semantic_cpu:.1f} s"
            print(
                f"| {rules:,} | {cli:.1f} s | {findings} | {opened} | {keystroke} | {semantic} "
                f"| < {KEYSTROKE_GOAL:g} s (keystroke) |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
