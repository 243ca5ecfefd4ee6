"""`traceview serve` and the dashboards package. The integration tests; the topic's description and its
other tests: tests/unit/test_dashboard.py.
"""

from __future__ import annotations

import socket
import time
import urllib.request

from tests.support.dashboard_shared import run_cli  # noqa: F401
from tests.support.hostile import HOSTILE, hostile_trace  # noqa: F401 - fixture
from tests.support.serve import serve, stop


def test_serve_bad_path_exits_1_with_one_line(tmp_path):
    out = run_cli("serve", str(tmp_path / "missing"), "-q", timeout=30)
    assert out.returncode == 1
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("traceview: error: ") and "missing" in lines[0]


def test_serve_starts_a_real_server_on_the_next_free_port(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = serve("sample_traces/dp4_nccl", "-q", "--port", str(port), "--cache-dir", str(tmp_path), text=True)
        try:
            line = proc.stdout.readline()  # printed before the server starts
            assert line.startswith("Serving sample_traces/dp4_nccl at http://127.0.0.1:"), line
            served = int(line.split("127.0.0.1:")[1].split("/")[0])
            assert served > port and line.rstrip().endswith("(Ctrl+C to stop)")
            deadline, status = time.monotonic() + 20, None
            while time.monotonic() < deadline and status is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{served}/", timeout=2) as resp:
                        status = resp.status
                except OSError:
                    assert proc.poll() is None, proc.stderr.read()
                    time.sleep(0.2)
            assert status == 200
        finally:
            stop(proc)
