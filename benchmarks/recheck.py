"""Re-checking after an edit, through the CLI, as an editor's save or a CI run does it.

Each figure is a fresh `pedrag check` process (interpreter start, imports, front end, checks,
report), CPU seconds of the child (user + system) and wall seconds, median over `--repeat`
runs, on a copy of the files in a temporary folder with a cache folder of its own:

- **cold**: `--no-cache`, the baseline: the same check without the cache, in the same run;
- **unchanged**: the files as the last two checks saw them (the cache gives the whole report,
  `compiler/kept_report.py`, which the first check of those bytes kept); the second check
  of the same bytes, which reads it and keeps each file's front end, is shown on a line of
  its own (one run);
- **one-rule edit**: before each run one rule's condition is narrowed by a bound not used
  before (`frustration >= 0.kk1 and ...` with a new kk each time), so every run is a real miss
  for that rule and its pairs, as a designer's edit is (its front end is spliced into the
  unchanged file's, `pedrag/dsl/incremental.py`); `--edit then|priority|weight|id` edits
  instead the first rule's action, priority, weight or id, to a value not used before in the
  run (of the same type; the generated theory's first rule is given `priority: 5, weight: 2`
  for the two numbers, before any check). Each edit is then checked a second time, as a
  designer re-running the check does (**the edit checked again**: it reads the report the
  edit's check kept, and keeps the file's front end for the next edit's splice).

`--in-process` adds the language server's path (`pedrag.lsp.checking.analyse`, as a keystroke
runs it: the front end's findings, then the compiler's) in this long-running process, CPU
seconds of this process (`time.process_time`), next to the CLI's figures of the same run: the
open (the document's first check, nothing in memory, no disk cache), the unchanged text
checked again, and the same one-rule edits, each report compared with a `--no-cache` CLI
check of the edited file alone (the server checks one document). A whole collection of the
heap that falls due is run between keystrokes, as the server runs it when the editor is idle
(`pedrag.lsp.heap.collect_if_due`), and shown on a line of its own, not in any keystroke.

`--server` adds `pedrag check` answered by a check server (`pedrag daemon start`, with a cache
folder of its own): the first check (nothing held), the unchanged files and the same kind of
one-rule edits, each the CPU of the client process plus the server's CPU for that request
(`pedrag daemon status --json`, before and after), each edited report compared with a
`--no-cache` check; a whole collection the server runs once idle is shown apart.

Sets: the shipped theory folder (`theories/`, 5 files), and a generated theory of
`--rules` rules (`benchmarks/theory_gen.py`: no catch-all, a fixed 30 actions). Every edited
report is compared with a `--no-cache` report of the same files: they must be identical.
Compiled modules are kept between runs in a folder of the run's own, as an installed pedrag
keeps them (`benchmarks/compiled_modules.py`; `--compile-each-run`: as the environment says,
which on the shared machine, `PYTHONDONTWRITEBYTECODE=1`, compiles pedrag's modules from source
in every process).

    python benchmarks/recheck.py
    python benchmarks/recheck.py --rules 500 --repeat 5
    python benchmarks/recheck.py --edit then
    python benchmarks/recheck.py --in-process
    python benchmarks/recheck.py --in-process --server
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this tree's pedrag (`--in-process`)
sys.path.insert(0, str(ROOT / "benchmarks"))

from compiled_modules import add_flag, child_environment, kept_for_the_run  # noqa: E402
from theory_gen import generate  # noqa: E402


def run_check(target: Path, cache: Path, *extra: str) -> tuple[float, float, dict]:  # type: ignore[type-arg]
    """(CPU seconds, wall seconds, report) of one `pedrag check` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pedrag.cli", "check", str(target), "--format", "json", *extra],
        capture_output=True,
        text=True,
        env=child_environment(PEDRAG_CACHE_DIR=str(cache)),
        cwd=ROOT,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):
        raise SystemExit(f"pedrag check failed: {result.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(result.stdout)
    report["summary"].pop("seconds", None)
    return cpu, wall, report


_CONDITION = re.compile(r'when: "')


_EDIT = re.compile(r"frustration >= 0\.\d\d1 and ")


def edit(path: Path, k: int) -> None:
    """Narrow the first rule's condition with a bound not used before, `frustration >= 0.kk1`
    (undoing the previous run's edit first)."""
    original = path.read_text("utf-8")
    start = original.index("rules:")
    text = _EDIT.sub("", original[start:], count=1)
    at = _CONDITION.search(text)
    assert at is not None
    text = text[: at.end()] + f"frustration >= 0.{k % 100:02d}1 and " + text[at.end() :]
    path.write_text(original[:start] + text, "utf-8")


_FIRST_VALUE = {
    key: re.compile(rf"(?<=[{{ ]{key}: )[a-z0-9_.]+")
    for key in ("id", "then", "priority", "weight")
}


def edit_value(path: Path, original: str, kind: str, k: int) -> None:
    """The original file with its first rule's `kind` value made the k-th new one (a declared
    action; a priority 1..10; a weight of the same type; an id no rule has)."""
    start = original.index("\nrules:")
    found = _FIRST_VALUE[kind].search(original, start)
    assert found is not None, kind
    now = found.group()
    if kind == "then":
        actions = sorted(yaml.safe_load(original)["actions"])
        choices = [name for name in actions if name != now]
        new = choices[k % len(choices)]
    elif kind == "priority":
        new = str([p for p in range(1, 11) if str(p) != now][k % 9])
    elif kind == "weight":
        new = f"{k + 3}.5" if "." in now else str(k + 3)
    else:
        new = f"{now}_e{k}"
    path.write_text(original[: found.start()] + new + original[found.end() :], "utf-8")


def measure(name: str, folder: Path, edited: Path, repeat: int, kind: str = "when") -> None:
    cache = folder.parent / f"{name}-cache"
    med = statistics.median
    cold = [run_check(folder, cache, "--no-cache")[:2] for _ in range(repeat)]
    run_check(folder, cache)  # fill the cache
    # The first check of new bytes keeps the report; the second reads it and keeps each file's
    # front end (`LoadedFiles`); later ones read the report alone. The second is on its own line.
    second = [run_check(folder, cache)[:2]]
    unchanged = [run_check(folder, cache)[:2] for _ in range(repeat)]
    edits, edits_again, same = [], [], True
    original = edited.read_text("utf-8")
    for k in range(repeat):
        if kind == "when":
            edit(edited, k)
        else:
            edit_value(edited, original, kind, k)
        cpu, wall, report = run_check(folder, cache)
        edits.append((cpu, wall))
        cpu, wall, again = run_check(folder, cache)
        edits_again.append((cpu, wall))
        fresh = run_check(folder, cache / "unused", "--no-cache")[2]
        same = same and report == fresh and again == fresh
    base = med(c for c, _ in cold)
    for label, runs in (
        ("cold (--no-cache)", cold),
        ("unchanged, 2nd run", second),
        ("unchanged", unchanged),
        (f"one-rule edit ({kind})", edits),
        ("the edit checked again", edits_again),
    ):
        cpu, wall = med(c for c, _ in runs), med(w for _, w in runs)
        ratio = "" if runs is cold else f"  {base / cpu:5.1f}x faster than cold"
        goal = (
            "  (goal at 5,000 rules: < 0.3 s CPU)" if runs is edits and "generated" in name else ""
        )
        print(f"  {label:<25} CPU {cpu:6.3f} s  wall {wall:6.3f} s{ratio}{goal}")
    print(f"  edited reports identical to --no-cache: {'yes' if same else 'NO'}")


def in_process(edited: Path, repeat: int, kind: str, cache: Path) -> None:
    """The language server's re-check in this process (see the module docstring)."""
    from pedrag.compiler.config import CheckConfig
    from pedrag.compiler.reports.json_report import report_dict
    from pedrag.lsp import checking, heap

    checking.DISK_CACHE = False
    path, config = str(edited), CheckConfig()

    idle: list[float] = []  # whole collections run between keystrokes, as the server does

    def keystroke() -> tuple[float, list[dict]]:  # type: ignore[type-arg]
        text = edited.read_text("utf-8")
        started = time.process_time()
        checking.analyse(text, path, False, config)
        found = checking.analyse(text, path, True, config)
        cpu = time.process_time() - started
        started = time.process_time()
        if heap.collect_if_due():  # the server's idle time (`server.IDLE_SECONDS`)
            idle.append(time.process_time() - started)
        return cpu, report_dict([path], found, {})["diagnostics"]

    original = edited.read_text("utf-8")
    opened = keystroke()[0]
    unchanged = [keystroke()[0] for _ in range(repeat)]
    edits, same = [], True
    for k in range(repeat):
        if kind == "when":
            edit(edited, k + 50)  # bounds the CLI's edits did not use
        else:
            edit_value(edited, original, kind, k + 50)
        cpu, found = keystroke()
        edits.append(cpu)
        fresh = run_check(edited, cache / "unused", "--no-cache")[2]["diagnostics"]
        same = same and found == fresh
    edited.write_text(original, "utf-8")
    med = statistics.median
    print(f"  language server, in one process (CPU of this process, median of {repeat}):")
    print(f"    {'open (nothing in memory)':<27} CPU {opened:6.3f} s")
    print(f"    {'unchanged':<27} CPU {med(unchanged):6.3f} s")
    print(
        f"    {f'one-rule edit ({kind})':<27} CPU {med(edits):6.3f} s"
        f"  (each: {', '.join(f'{c:.3f}' for c in edits)})"
    )
    print(
        f"    {'idle whole collections':<27} {len(idle)}, CPU "
        f"{', '.join(f'{c:.3f}' for c in idle) or '-'} s (between keystrokes, not in them)"
    )
    print(f"  in-process reports identical to --no-cache: {'yes' if same else 'NO'}")


def _daemon(env: dict[str, str], *args: str) -> dict:  # type: ignore[type-arg]
    """`pedrag daemon ARGS` (`status` as JSON) in the run's environment."""
    result = subprocess.run(
        [sys.executable, "-m", "pedrag.cli", "daemon", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if result.returncode:
        raise SystemExit(f"pedrag daemon {' '.join(args)} failed: {result.stderr}")
    return json.loads(result.stdout) if "--json" in args else {}


def through_server(target: Path, edited: Path, repeat: int, kind: str, cache: Path) -> None:
    """`pedrag check` answered by a check server (`pedrag daemon`) holding the file: each
    figure is the client process's CPU (rusage of the child) and the server's CPU for that
    request (its `time.process_time`, from `pedrag daemon status` before and after; a whole
    collection the server runs once idle falls between requests and is shown apart)."""
    env = child_environment(PEDRAG_CACHE_DIR=str(cache))
    _daemon(env, "start")
    idle: list[float] = []
    last = [float(_daemon(env, "status", "--json")["cpu_seconds"])]

    def check() -> tuple[float, float, dict]:  # type: ignore[type-arg]
        before = float(_daemon(env, "status", "--json")["cpu_seconds"])
        idle.append(before - last[0])
        client, _, report = run_check(target, cache)
        last[0] = float(_daemon(env, "status", "--json")["cpu_seconds"])
        return client, last[0] - before, report

    original = edited.read_text("utf-8")
    try:
        opened = check()
        unchanged = [check() for _ in range(repeat)]
        edits, same = [], True
        for k in range(repeat):
            if kind == "when":
                edit(edited, k + 70)  # bounds no other part of the run used
            else:
                edit_value(edited, original, kind, k + 70)
            client, server, report = check()
            edits.append((client, server))
            fresh = run_check(target, cache / "unused", "--no-cache")[2]
            same = same and report == fresh
        time.sleep(1.5)  # the idle collection after the last edit, if one is due
        idle.append(float(_daemon(env, "status", "--json")["cpu_seconds"]) - last[0])
    finally:
        _daemon(env, "stop")
        edited.write_text(original, "utf-8")
    med = statistics.median
    print(f"  check server (client process CPU + server CPU for the request, median of {repeat}):")
    for label, runs in (
        ("first check (nothing held)", [opened[:2]]),
        ("unchanged", [u[:2] for u in unchanged]),
        (f"one-rule edit ({kind})", edits),
    ):
        client, server = med(c for c, _ in runs), med(s for _, s in runs)
        print(
            f"    {label:<27} CPU {client + server:6.3f} s  (client {client:.3f} + server "
            f"{server:.3f})"
        )
    print(
        "      each edit: "
        + ", ".join(f"{c:.3f} + {s:.3f}" for c, s in edits)
        + f"; between requests (idle collections): {', '.join(f'{c:.3f}' for c in idle)} s"
    )
    print(f"  reports through the server identical to --no-cache: {'yes' if same else 'NO'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rules", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--edit",
        choices=("when", "then", "priority", "weight", "id"),
        default="when",
        help="which value of the first rule each edit changes (default: its condition)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="also the language server's re-check in this long-running process",
    )
    parser.add_argument(
        "--server",
        action="store_true",
        help="also `pedrag check` answered by a check server (`pedrag daemon`) holding the file",
    )
    add_flag(parser)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, kept_for_the_run(args.compile_each_run):
        root = Path(tmp)
        shipped = root / "theories"
        shutil.copytree(
            ROOT / "theories", shipped, ignore=shutil.ignore_patterns("*.py", "__pycache__")
        )
        print(f"shipped set ({len(list(shipped.glob('*.yaml')))} files), median of {args.repeat}")
        measure("shipped", shipped, shipped / "socratic.yaml", args.repeat, args.edit)
        if args.in_process:
            in_process(shipped / "socratic.yaml", args.repeat, args.edit, root / "shipped-cache")
        if args.server:
            through_server(
                shipped, shipped / "socratic.yaml", args.repeat, args.edit, root / "shipped-server"
            )
        generated = root / "generated"
        generated.mkdir()
        theory = generated / f"gen_{args.rules}.yaml"
        text = generate(args.rules, 7, "weighted")
        if args.edit in ("priority", "weight"):
            first = text.index("}\n", text.index("\nrules:"))
            text = text[:first] + ", priority: 5, weight: 2" + text[first:]
        theory.write_text(text, "utf-8")
        print(f"generated theory, {args.rules} rules, median of {args.repeat}")
        measure("generated", theory, theory, args.repeat, args.edit)
        if args.in_process:
            in_process(theory, args.repeat, args.edit, root / "generated-cache")
        if args.server:
            through_server(theory, theory, args.repeat, args.edit, root / "generated-server")
    return 0


if __name__ == "__main__":
    sys.exit(main())
