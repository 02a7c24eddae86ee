"""``capsim serve`` in a child process: start it, read where it listens, stop it.

For the soak (``benchmarks/bench_emulator_soak.py``, which measures the server's memory
apart from its clients') and tests that need a separate server process.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_PORT = re.compile(r"^listening on https://\S+:(\d+) ")
_CA = "CA certificate: "


@dataclass
class Child:
    """A running ``capsim serve``: its process, port, CA path and output lines so far
    (a thread keeps reading them, so that a full pipe never stalls the server)."""

    proc: subprocess.Popen
    port: int
    ca: str
    lines: list[str]
    reader: threading.Thread | None = None


def start(args: list[str], cert_dir: Path, *, limit_s: float = 60.0,
          env: dict | None = None, cwd: Path | None = None) -> Child:
    """Run ``capsim serve ARGS --port 0 --cert-dir CERT_DIR`` and wait (at most
    ``limit_s``) until it announces its port and CA; stderr is merged into stdout."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim.cli.main", "serve", *args, "--port", "0",
         "--cert-dir", str(cert_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    port, ca, lines = None, None, []
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and (port is None or ca is None):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if m := _PORT.match(line):
            port = int(m.group(1))
        if line.startswith(_CA):
            ca = line[len(_CA):].strip()
    child = Child(proc, port or 0, ca or "", lines)
    if port is None or ca is None:
        _, out = stop(child)
        raise RuntimeError("capsim serve did not announce its port and CA:\n" + out)
    child.reader = threading.Thread(target=_read, args=(proc, lines), daemon=True)
    child.reader.start()
    return child


def _read(proc: subprocess.Popen, lines: list[str]) -> None:
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))


def stop(child: Child, timeout_s: float = 20.0,
         sig: signal.Signals = signal.SIGTERM) -> tuple[int, str]:
    """Signal ``sig`` (killed after ``timeout_s``): its exit code and all its output."""
    proc = child.proc
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if child.reader is not None:
        child.reader.join(5)
    else:
        child.lines.extend(proc.stdout.read().splitlines())
    proc.stdout.close()
    return proc.returncode, "\n".join(child.lines)


@contextlib.contextmanager
def running(args: list[str], cert_dir: Path, **kw) -> Iterator[Child]:
    """:func:`start` for the ``with`` block, :func:`stop` after it."""
    child = start(args, cert_dir, **kw)
    try:
        yield child
    finally:
        stop(child)
