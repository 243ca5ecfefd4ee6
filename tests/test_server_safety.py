"""The dashboard server answers only its pages, Dash's endpoints and Dash's registered bundles:
no file of the profile, beside it, or anywhere else, whatever the path trick (DESIGN.md section 4,
issue 4). Requests go both through Flask's test client and as raw bytes over a real socket, so
that no client-side path normalisation hides a `..`."""

from __future__ import annotations

import shutil
import socket
import threading

import pytest
from werkzeug.serving import make_server

import traceview as tv
from dashboards.app import create_app
from dashboards.server import allowed_path
from tests.conftest import SAMPLES
from traceview.summary import build_summary

SECRET = "traceview-secret-7f3a9c"

TRICKS = [
    "/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt", "/%2e%2e%2fsecret.txt", "/./secret.txt",
    "/secret.txt", "/profile/rank0.pt.trace.json.gz", "/assets/../secret.txt", "/assets/secret.txt",
    "/static/../../secret.txt", "/static/secret.txt", "/timeline/../../secret.txt", "/..\\secret.txt",
    "/_dash-component-suites/dash/../../../secret.txt", "/_dash-component-suites/dash/..%2f..%2fsecret.txt",
    "/_dash-component-suites/dash/deps/../../../../../../etc/passwd", "/_dash-component-suites/os/path.py",
    "/_dash-component-suites/dash/__init__.py", "/_dash-component-suites/traceview/cache.py",
    "//etc/passwd", "/etc/passwd", "/%00/etc/passwd", "/_dash-layout/../secret.txt",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """An app over a copy of dp4_nccl in profile/, with a secret file beside it and one inside."""
    root = tmp_path_factory.mktemp("serve")
    profile = root / "profile"
    shutil.copytree(SAMPLES / "dp4_nccl", profile)
    (root / "secret.txt").write_text(SECRET)
    (profile / "secret.txt").write_text(SECRET)
    trace = tv.load(profile, cache_dir=root / "cache")
    return create_app(trace, build_summary(trace, details=False)), profile


def test_path_tricks_get_404_and_no_file(served):
    app, profile = served
    client = app.server.test_client()
    gz_head = next(profile.glob("*.gz")).read_bytes()[:64]
    for path in TRICKS:
        resp = client.get(path)
        assert resp.status_code == 404, (path, resp.status_code)
        assert SECRET.encode() not in resp.data and gz_head not in resp.data and b"root:" not in resp.data


def test_pages_and_bundles_still_served(served):
    app, _ = served
    client = app.server.test_client()
    for path in ("/", "/timeline", "/timeline/", "/_dash-layout", "/_dash-dependencies"):
        assert client.get(path).status_code == 200, path
    index = client.get("/").data.decode()
    bundles = [part.split('"')[0] for part in index.split('src="')[1:]]
    assert bundles and all(b.startswith("/_dash-component-suites/") for b in bundles)
    for path in bundles:
        assert client.get(path).status_code == 200, path


def _raw_get(port: int, path: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_raw_requests_over_a_socket(served):
    app, _ = served
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        for path in TRICKS:
            reply = _raw_get(server.server_port, path)
            status = reply.split(b"\r\n", 1)[0]
            assert b" 200 " not in status and SECRET.encode() not in reply, (path, status)
        assert b" 200 " in _raw_get(server.server_port, "/").split(b"\r\n", 1)[0]
    finally:
        server.shutdown()


@pytest.mark.parametrize("path, ok", [
    ("/", True), ("/timeline", True), ("/_dash-update-component", True),
    ("/_dash-component-suites/plotly/package_data/plotly.min.js", True),
    ("/assets/x.css", False), ("/static/x", False), ("/a/../timeline", False), ("/x", False), ("/./", False),
])
def test_allowed_path(path, ok):
    assert allowed_path(path) is ok
