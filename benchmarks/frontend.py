"""Front-end speed: load, validate and resolve theories (no z3), against a baseline measured in
the same run: PyYAML's safe load of the same text with libyaml (`CSafeLoader`, what pedrag's own
loader composes with, so the baseline is the parse any YAML-based format pays at its fastest).
The pure-Python `SafeLoader` is shown beside it for reference, not as the baseline.

The shipped theory set per file and in all, then generated theories of 500, 5,000 and 20,000
rules (`benchmarks/theory_gen.py`): the front end is the floor under every `pedrag check`, cached
or not. Every figure is CPU time (`time.process_time`), median of the runs.

    python benchmarks/frontend.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import yaml

from pedrag.compiler.driver import check_paths

sys.path.insert(0, str(Path(__file__).resolve().parent))
from theory_gen import generate  # noqa: E402

FAST_YAML = getattr(yaml, "CSafeLoader", None)


def _median_seconds(action, repeat: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        started = time.process_time()
        action()
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    folder = Path(str(resources.files("pedrag.theories")))
    files = sorted(folder.glob("*.yaml"))
    texts = [f.read_text("utf-8") for f in files]
    check_paths([str(folder)], semantic=False)  # warm the parser cache
    ours = _median_seconds(lambda: check_paths([str(folder)], semantic=False), args.repeat)
    if FAST_YAML is None:
        print("PyYAML was built without libyaml: no CSafeLoader to compare with", file=sys.stderr)
        return
    fast = _median_seconds(lambda: [yaml.load(t, Loader=FAST_YAML) for t in texts], args.repeat)
    pure = _median_seconds(lambda: [yaml.safe_load(t) for t in texts], args.repeat)
    print(
        f"shipped theory set: {len(files)} files, {sum(len(t.splitlines()) for t in texts)} lines"
    )
    print(
        f"  pedrag front end (load + validate + resolve, no z3): {ours * 1000:8.1f} ms CPU median"
    )
    print(
        f"  baseline: libyaml (CSafeLoader) load only:           {fast * 1000:8.1f} ms CPU median"
    )
    print(f"  ratio front end / libyaml parse:                     {ours / fast:8.2f}x")
    print(f"  (pure-Python yaml.safe_load, for reference:          {pure * 1000:8.1f} ms)")
    for path in files:
        one = _median_seconds(
            lambda p=path: check_paths([str(p)], semantic=False), max(3, args.repeat // 4)
        )
        print(f"    {path.name:<26} {one * 1000:7.1f} ms")
    folder = Path(tempfile.mkdtemp(prefix="pedrag-frontend-"))
    for size in (500, 5000, 20000):
        path = folder / f"gen_{size}.yaml"
        text = generate(size)
        path.write_text(text, "utf-8")
        repeat = 1 if size >= 20000 else 3 if size >= 5000 else 5
        ours = _median_seconds(lambda p=path: check_paths([str(p)], semantic=False), repeat)
        fast = _median_seconds(lambda t=text: yaml.load(t, Loader=FAST_YAML), repeat)
        print(
            f"generated {size} rules: front end {ours * 1000:8.1f} ms CPU, libyaml load "
            f"{fast * 1000:7.1f} ms, ratio {ours / fast:6.1f}x ({ours / size * 1e6:.0f} µs per rule)"
        )


if __name__ == "__main__":
    main()
