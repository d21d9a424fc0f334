"""Front-end speed: load, validate and resolve the shipped theory set (no z3), per file and
in all, against a baseline measured in the same run: PyYAML's plain safe_load of the same
files (what any YAML-based format pays before checking anything).

    python benchmarks/frontend.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from importlib import resources
from pathlib import Path

import yaml

from pedrag.compiler.driver import check_paths


def _median_seconds(action, repeat: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
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
    plain = _median_seconds(lambda: [yaml.safe_load(t) for t in texts], args.repeat)
    print(
        f"shipped theory set: {len(files)} files, {sum(len(t.splitlines()) for t in texts)} lines"
    )
    print(f"  pedrag front end (load + validate + resolve, no z3): {ours * 1000:8.1f} ms median")
    print(f"  baseline yaml.safe_load only:                         {plain * 1000:8.1f} ms median")
    print(f"  ratio front end / plain YAML parse:                   {ours / plain:8.2f}x")
    for path in files:
        one = _median_seconds(
            lambda p=path: check_paths([str(p)], semantic=False), max(3, args.repeat // 4)
        )
        print(f"    {path.name:<26} {one * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
