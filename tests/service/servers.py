"""Run a real `pedrag serve` in a subprocess for a test module, and wait until it is ready."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.service.postgres import free_port


@contextmanager
def running_server(
    db: str,
    *,
    workers: int,
    log: Path,
    env: dict[str, str] | None = None,
    started: list[subprocess.Popen[bytes]] | None = None,
    cwd: Path | None = None,
) -> Iterator[str]:
    """``pedrag serve --workers N`` on 127.0.0.1 (offline backend); yields its base URL.
    ``env`` adds variables; the server process is appended to ``started`` when given; ``cwd``
    runs the server from that folder (``python -m`` imports pedrag from there first: another
    source tree, for benchmarks/service_load.py's ``--compare``)."""
    port = free_port()
    env = {**os.environ, "PEDRAG_LLM": "offline", "PEDRAG_DB": db, **(env or {})}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pedrag.cli",
                "serve",
                "--port",
                str(port),
                "--workers",
                str(workers),
                "--log-level",
                "warning",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    if started is not None:
        started.append(process)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        ready = 0
        while ready < 2 * workers:  # several answers in a row: the workers are up, not one
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pedrag serve did not start:\n{log.read_text()[-4000:]}")
            try:
                ready = (
                    ready + 1 if httpx.get(f"{base}/readyz", timeout=5).status_code == 200 else 0
                )
            except httpx.HTTPError:
                ready = 0
                time.sleep(0.3)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
