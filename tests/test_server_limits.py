"""`traceview serve` under clients that ask for the Perfetto download and never read it (issue 30):
the export is built once and sent from one copy in memory, never spooled per client. The tests
run a real server process (tests/support/serve.py) and talk to it over raw sockets."""

from __future__ import annotations

import os
import select
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

import traceview as tv
from tests.conftest import SAMPLES
from tests.support.serve import serve, stop
from traceview.dashboards.app import PERFETTO_PATH, create_app
from traceview.summary import build_summary

pytestmark = pytest.mark.integration

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts open files through /proc")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str, timeout: float = 10.0) -> bytes:
    """A whole answer to `GET path` on a new connection (Connection: close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := conn.recv(1 << 16):
            data += chunk
    return data


def start(target: Path, tmp_path: Path) -> tuple:
    """`traceview serve TARGET` on a free port, once it answers `/`: (process, port)."""
    port = free_port()
    proc = serve(target, "--port", str(port), "-q", "--cache-dir", str(tmp_path / "cache"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if get(port, "/", timeout=5).startswith(b"HTTP/1.1 200"):
                return proc, port
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise AssertionError("the server did not start")


def temp_bytes(pid: int, folder: Path) -> int:
    """Bytes of the files under `folder` that process `pid` holds open (unlinked ones included:
    waitress' buffer files are tempfile.TemporaryFile)."""
    total = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd).startswith(str(folder)):
                total += os.stat(fd).st_size
        except OSError:
            continue
    return total


def answer(conn: socket.socket) -> tuple[dict, bytes]:
    """Read one answer with a Content-Length from `conn`: (lower-case headers, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(1 << 16)
    head, body = data.split(b"\r\n\r\n", 1)
    headers = dict(line.decode().lower().split(": ", 1) for line in head.split(b"\r\n")[1:])
    length = int(headers["content-length"])
    while len(body) < length:
        chunk = conn.recv(1 << 20)
        assert chunk, "the answer ended early"
        body += chunk
    return headers, body


@linux_only
def test_clients_that_never_read_the_download_spool_nothing(tmp_path, monkeypatch):
    """30 clients ask for the Perfetto download (3.8 MB here) and read nothing: the server holds
    no temporary file (before: each answer was spooled, 30 x 3.8 MB), and a client that reads
    gets the whole export."""
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setenv("TMPDIR", str(spool))
    proc, port = start(SAMPLES / "pp4_1f1b", tmp_path)
    clients = []
    try:
        for _ in range(30):
            conn = socket.socket()
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            conn.connect(("127.0.0.1", port))
            conn.sendall(f"GET {PERFETTO_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            clients.append(conn)
        waiting, deadline = set(clients), time.monotonic() + 90
        while waiting and time.monotonic() < deadline:  # every answer has started
            waiting -= set(select.select(list(waiting), [], [], 1.0)[0])
        assert not waiting, f"{len(waiting)} clients got no answer"
        held = temp_bytes(proc.pid, spool)
        assert held == 0, f"{held:,} bytes in temporary files for 30 clients that do not read"
        for conn in clients:
            conn.close()
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:  # a client that reads
            conn.sendall(f"GET {PERFETTO_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            headers, body = answer(conn)
        assert headers["content-disposition"] == 'attachment; filename="pp4_1f1b.perfetto.json"'
        assert len(body) > 1 << 20 and orjson.loads(body)["traceEvents"]
    finally:
        for conn in clients:
            conn.close()
        stop(proc)


def test_concurrent_first_downloads_build_the_export_once(monkeypatch):
    """30 requests for the download arriving together start one build; they all get its bytes."""
    import traceview.dashboards.perfetto as perfetto

    calls = []

    def build(trace) -> bytes:
        calls.append(trace)
        time.sleep(0.2)  # long enough for the others to arrive meanwhile
        return b'{"traceEvents":[]}'

    monkeypatch.setattr(perfetto, "perfetto_json", build)
    trace = tv.load(SAMPLES / "cpu_single", use_cache=False)
    app = create_app(trace, build_summary(trace, details=False))

    def download(_):
        return app.server.test_client().get(PERFETTO_PATH, headers={"Host": "127.0.0.1:8050"})

    with ThreadPoolExecutor(30) as pool:
        replies = list(pool.map(download, range(30)))
    assert len(calls) == 1
    assert all(r.status_code == 200 and r.data == b'{"traceEvents":[]}' for r in replies)
