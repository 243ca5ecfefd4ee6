"""`traceview serve` under many idle, slow and non-reading clients (issue 30): waitress' limits
(`dashboards/server.waitress_settings`) keep the dashboard answering, close idle connections, and
the Perfetto download is built once and sent from one copy in memory, never spooled per client.
Each test runs a real server process (tests/support/serve.py) and talks to it over raw sockets."""

from __future__ import annotations

import os
import select
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from tests.conftest import ROOT, SAMPLES
from tests.support.samples import shared_sample
from tests.support.serve import serve, stop
from traceview.dashboards.app import PERFETTO_PATH, create_app
from traceview.dashboards.server import IDLE_TIMEOUT
from traceview.summary import build_summary

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


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, port = start(SAMPLES / "dp4_nccl", tmp_path_factory.mktemp("limits"))
    yield port
    stop(proc)


def test_slowloris_connections_do_not_lock_the_dashboard(server):
    """120 connections, half silent and half sending a request line a byte every half second,
    and a normal client still gets `/` at once (waitress' default limit of 100 connections made
    it wait for the idle ones' timeout, minutes)."""
    port = server
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
    trickling = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
    for conn in trickling:
        conn.sendall(b"GET /timeline?q=")
    done = threading.Event()

    def trickle() -> None:
        while not done.wait(0.5):
            for conn in trickling:
                try:
                    conn.send(b"x")
                except OSError:
                    pass

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        t0 = time.monotonic()
        reply = get(port, "/", timeout=10)
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
        assert time.monotonic() - t0 < 10
        assert get(port, "/_dash-layout", timeout=10).startswith(b"HTTP/1.1 200")
    finally:
        done.set()
        thread.join()
        for conn in silent + trickling:
            conn.close()


def test_idle_connections_are_closed_after_the_idle_timeout(server):
    """A connection that never sends a request, and a keep-alive connection after its answer,
    are closed by the server once idle for IDLE_TIMEOUT seconds (checked every second)."""
    port = server
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    kept = socket.create_connection(("127.0.0.1", port))
    kept.sendall(f"GET /_favicon.ico HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    t0 = time.monotonic()
    closed_after = []
    try:
        for conn in [*silent, kept]:
            conn.settimeout(IDLE_TIMEOUT + 15)
            while conn.recv(1 << 16):  # the keep-alive one's answer, then the end of the stream
                pass
            closed_after.append(time.monotonic() - t0)
    finally:
        for conn in [*silent, kept]:
            conn.close()
    assert min(closed_after) >= IDLE_TIMEOUT - 1 and max(closed_after) <= IDLE_TIMEOUT + 15, closed_after


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
    """30 clients ask for the Perfetto download (3.8 MB here, above the 1 MiB an answer may keep
    in memory: one built per request would be spooled) and read nothing: the server holds no
    temporary file (before: each answer was spooled, 30 x 3.8 MB), and a client that reads gets
    the whole export."""
    from traceview.dashboards.server import OUT_IN_MEMORY

    assert OUT_IN_MEMORY < 3 << 20  # else this export would not be spooled anyway
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
    trace = shared_sample("cpu_single")
    app = create_app(trace, build_summary(trace, details=False))

    def download(_):
        return app.server.test_client().get(PERFETTO_PATH, headers={"Host": "127.0.0.1:8050"})

    with ThreadPoolExecutor(30) as pool:
        replies = list(pool.map(download, range(30)))
    assert len(calls) == 1
    assert all(r.status_code == 200 and r.data == b'{"traceEvents":[]}' for r in replies)


def _limits_in_child(soft: int, hard: int) -> tuple[int, int]:
    """(connection_limit(), the soft open-file limit after it) in a child started with these limits."""
    import resource
    import subprocess

    code = (
        "import resource; from traceview.dashboards.server import connection_limit; "
        "print(connection_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)),
    ).stdout.split()
    return int(out[0]), int(out[1])


@linux_only
def test_connection_limit_follows_the_open_file_limit():
    """1000 connections when the soft open-file limit can be raised to 3 files each (it is, from
    1024); fewer under a hard limit of 256, so that a connection never fails for want of a file."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 3064:
        pytest.skip(f"the hard open-file limit ({hard}) is below 3,064")
    assert _limits_in_child(1024, hard) == (1000, 3064)
    assert _limits_in_child(256, 256) == ((256 - 64) // 3, 256)
