"""The dashboard server answers only its pages, Dash's endpoints and Dash's registered bundles:
no file of the profile, beside it, or anywhere else, whatever the path trick (docs/robustness.md,
issue 4). Requests go both through Flask's test client and as raw bytes over a real socket, so
that no client-side path normalisation hides a `..`."""

from __future__ import annotations

import shutil
import socket
import threading

import pytest
from werkzeug.serving import make_server

import traceview as tv
from tests.conftest import SAMPLES
from tests.support import callbacks
from tests.support.serve import serve
from traceview.dashboards.app import create_app
from traceview.dashboards.server import ASSETS, allowed_path
from traceview.summary import build_summary

SECRET = "traceview-secret-7f3a9c"

TRICKS = [
    "/../secret.txt",
    "/..%2fsecret.txt",
    "/%2e%2e/secret.txt",
    "/%2e%2e%2fsecret.txt",
    "/./secret.txt",
    "/secret.txt",
    "/profile/rank0.pt.trace.json.gz",
    "/assets/../secret.txt",
    "/assets/secret.txt",
    "/static/../../secret.txt",
    "/static/secret.txt",
    "/timeline/../../secret.txt",
    "/..\\secret.txt",
    "/_dash-component-suites/dash/../../../secret.txt",
    "/_dash-component-suites/dash/..%2f..%2fsecret.txt",
    "/_dash-component-suites/dash/deps/../../../../../../etc/passwd",
    "/_dash-component-suites/os/path.py",
    "/_dash-component-suites/dash/__init__.py",
    "/_dash-component-suites/traceview/cache.py",
    "//etc/passwd",
    "/etc/passwd",
    "/%00/etc/passwd",
    "/_dash-layout/../secret.txt",
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
        # "//etc/passwd" reads as host "etc" to the test client: refused for its Host (403)
        assert resp.status_code == (403 if path.startswith("//") else 404), (path, resp.status_code)
        assert SECRET.encode() not in resp.data and gz_head not in resp.data and b"root:" not in resp.data


def test_pages_and_bundles_still_served(served):
    app, _ = served
    client = app.server.test_client()
    for path in ("/", "/timeline", "/timeline/", "/_dash-layout", "/_dash-dependencies"):
        assert client.get(path).status_code == 200, path
    index = client.get("/").data.decode()
    bundles = [part.split('"')[0] for part in index.split('src="')[1:]]
    # Dash's bundles and the canvas timeline's scripts (server.ASSETS), nothing else
    assert bundles and all(b.startswith("/_dash-component-suites/") or b.split("?")[0] in ASSETS for b in bundles)
    assert {b.split("?")[0] for b in bundles if b.startswith("/assets/")} == set(ASSETS)
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


@pytest.mark.parametrize(
    "path, ok",
    [
        ("/", True),
        ("/timeline", True),
        ("/roofline", True),  # a page, loaded by its address (a shared link)
        ("/compare", True),
        ("/_dash-update-component", True),
        ("/_dash-component-suites/plotly/package_data/plotly.min.js", True),
        ("/assets/x.css", False),
        ("/static/x", False),
        ("/a/../timeline", False),
        ("/x", False),
        ("/./", False),
    ],
)
def test_allowed_path(path, ok):
    assert allowed_path(path) is ok


# ---- Host names, security headers, request bodies, bad callback inputs (issue 14) --------------

import logging  # noqa: E402

import orjson  # noqa: E402

from traceview.dashboards.server import MAX_BODY, allowed_hosts, host_name  # noqa: E402


@pytest.mark.parametrize(
    "host, allowed",
    [
        ("127.0.0.1", {"127.0.0.1", "localhost", "::1"}),
        ("localhost", {"127.0.0.1", "localhost", "::1"}),
        ("::1", {"127.0.0.1", "localhost", "::1"}),
        ("10.1.2.3", {"10.1.2.3"}),
        ("Node7", {"node7"}),
        ("0.0.0.0", None),
        ("::", None),
    ],
)
def test_allowed_hosts_follow_the_bound_address(host, allowed):
    assert (None if allowed_hosts(host) is None else set(allowed_hosts(host))) == allowed


@pytest.mark.parametrize(
    "header, name",
    [
        ("localhost:8050", "localhost"),
        ("[::1]:8050", "::1"),
        ("127.0.0.1", "127.0.0.1"),
        ("EVIL.example:80", "evil.example"),
    ],
)
def test_host_name(header, name):
    assert host_name(header) == name


def test_a_foreign_host_header_is_refused(served):
    """DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 asks with its own Host."""
    app, _ = served
    client = app.server.test_client()
    for path in ("/", "/timeline", "/_dash-layout", "/_dash-dependencies"):
        for host in ("evil.example", "evil.example:8050", "127.0.0.1.evil.example"):
            resp = client.get(path, headers={"Host": host})
            assert resp.status_code == 403 and b"traceview" not in resp.data, (path, host)
        for host in ("localhost:8050", "127.0.0.1:8050", "[::1]:8050", "LOCALHOST"):
            assert client.get(path, headers={"Host": host}).status_code == 200, (path, host)


def test_every_answer_carries_the_security_headers(served):
    app, _ = served
    client = app.server.test_client()
    import re

    bundle = re.search(r'src="(/_dash-component-suites/[^"?]+)', client.get("/").data.decode()).group(1)
    for path in ("/", "/timeline", "/_dash-layout", "/_dash-dependencies", "/nothing-here", bundle):
        resp = client.get(path)
        csp = resp.headers.get("Content-Security-Policy", "")
        assert "frame-ancestors 'none'" in csp and "default-src 'self'" in csp and "object-src 'none'" in csp, path
        assert "script-src 'self' 'unsafe-eval' 'sha256-" in csp, "Dash's inline scripts by hash, none other"
        assert resp.headers["X-Frame-Options"] == "DENY" and resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["Referrer-Policy"] == "no-referrer"


def test_request_bodies_are_capped(served):
    app, _ = served
    resp = app.server.test_client().post(
        "/_dash-update-component", data=b"x" * (MAX_BODY + 1), headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 413


def _callback(client, output_id: str, inputs: list[dict]):
    dep = callbacks.dependency(client, output_id)
    outputs = callbacks.outputs(dep)
    payload = {
        "output": dep["output"],
        "outputs": outputs if len(outputs) > 1 else outputs[0],
        "inputs": inputs,
        "changedPropIds": [f"{inputs[-1]['id']}.{inputs[-1]['property']}"],
        "state": [],
    }
    return client.post(
        "/_dash-update-component",
        data=orjson.dumps(payload).replace(b'"NaN"', b"NaN").replace(b'"Infinity"', b"Infinity"),
        headers={"Content-Type": "application/json"},
    )


@pytest.mark.parametrize(
    "query",
    [
        "window?start=NaN&end=Infinity&px=100",
        "window?start=1&start=x&end=[1,2]&px=100",
        "window?start=not a range&end=10",
        "window?start=1e308&end=-1e308&px=100",
        f"window?start={-(10**30)}&end={10**30}&px=100",
        f"range?start={-(10**30)}&end={10**30}",
        "range?start=NaN&end=5",
        "window?start=0&end=10&px=1e9",
        f"window?start=0&end=10&ranks={10**30}",
        "search?q=a&ranks=NaN",
        "task?id=Infinity",
    ],
    ids=[
        "nan_inf",
        "wrong_types",
        "text",
        "huge_float",
        "huge_int",
        "range_huge",
        "range_nan",
        "px",
        "rank_huge",
        "rank_nan",
        "id_inf",
    ],
)
def test_malformed_timeline_requests_answer_400_and_log_no_traceback(served, query, caplog):
    """The canvas timeline's routes (what the page's zoom and pan ask for) refuse parameters the
    page would never send with a 400 and a one-line reason: no server error, no traceback."""
    app, _ = served
    client = app.server.test_client()
    with caplog.at_level(logging.WARNING):
        resp = client.get("/api/timeline/" + query)
    assert resp.status_code == 400 and resp.mimetype == "text/plain", resp.data[:300]
    assert b"\n" not in resp.data.strip() and b"Traceback" not in resp.data
    assert not [r for r in caplog.records if r.exc_info], "no traceback"
    # the widest window a client may ask for (times relative to the origin, up to 2**60 ns) is served
    assert client.get(f"/api/timeline/range?start={-(2**60)}&end={2**60}").status_code == 200
    for search in (5, ["?rank=1"], "?rank=NaN&step=1e400"):  # a query of the wrong type or values
        inputs = [
            {"id": "url", "property": "pathname", "value": "/"},
            {"id": "url", "property": "search", "value": search},
        ]
        resp = _callback(client, "fig-breakdown.figure", inputs)
        assert resp.status_code in (200, 204), (search, resp.data[:300])


def test_the_real_server_sends_no_banner_and_enforces_host_and_body(tmp_path):
    """`traceview serve` itself (waitress): raw requests over a socket."""
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = serve(SAMPLES / "dp4_nccl", "--port", str(port), "-q", "--cache-dir", str(tmp_path / "c"))
    try:

        def ask(raw: bytes) -> bytes:
            for _ in range(200):
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                        conn.sendall(raw)
                        data = b""
                        while chunk := conn.recv(65536):
                            data += chunk
                        return data
                except ConnectionRefusedError:
                    time.sleep(0.1)
            raise AssertionError("the server did not start")

        ok = ask(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port)
        head = ok.split(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"http/1.1 200") and b"\r\nserver:" not in head and b"werkzeug" not in ok.lower()
        assert b"content-security-policy:" in head
        evil = ask(b"GET /_dash-layout HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
        assert evil.startswith(b"HTTP/1.1 403")
        big = ask(
            b"POST /_dash-update-component HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (300 * 1024 * 1024)
        )
        assert big.startswith(b"HTTP/1.1 413")
        foreign = ask(
            b"GET /download/perfetto.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nSec-Fetch-Site: cross-site\r\n"
            b"Connection: close\r\n\r\n" % port
        )
        assert foreign.startswith(b"HTTP/1.1 403") and b"traceEvents" not in foreign
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert b"development server" not in out + err and b"Traceback" not in err, err.decode()[-2000:]


# ---- Requests from other sites (issue 30) --------------------------------

from traceview.dashboards.app import PERFETTO_PATH  # noqa: E402
from traceview.dashboards.server import DATA_PATHS, Refusals, foreign_request, host_port, same_origin  # noqa: E402

HOST = {"Host": "127.0.0.1:8050"}
#: One request for each kind of data path: Dash's JSON endpoints, the timeline's routes, the download.
DATA_REQUESTS = [
    ("GET", "/_dash-layout"),
    ("GET", "/_dash-dependencies"),
    ("POST", "/_dash-update-component"),
    ("GET", "/api/timeline/meta"),
    ("GET", "/api/timeline/range?start=0&end=1000"),
    ("GET", PERFETTO_PATH),
]
FOREIGN = [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},  # another port of this machine
    {"Sec-Fetch-Site": "Cross-Site "},
    {"Origin": "https://evil.example"},
    {"Origin": "http://127.0.0.1:9999"},
    {"Origin": "http://localhost:8050"},  # another name than the Host: another origin to the browser
    {"Origin": "null"},
    {"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"},
]
OWN = [{}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}, {"Origin": "http://127.0.0.1:8050"}]


def _ask(client, method: str, path: str, headers: dict):
    headers = {**HOST, **headers}
    if method == "POST":
        dep = callbacks.dependency(client, "fig-breakdown.figure")
        inputs = [{"id": "url", "property": "pathname", "value": "/"}, {"id": "url", "property": "search", "value": ""}]
        body = callbacks.request(dep, inputs, ["url.search"], state=[])
        return client.post(path, data=orjson.dumps(body), headers={**headers, "Content-Type": "application/json"})
    return client.get(path, headers=headers)


def test_data_paths_refuse_requests_from_other_sites(served):
    """A page of another site (or another port) open in the same browser can neither read the
    profile's data nor make the server compute it: 403 with a one-line body, before any work."""
    app, _ = served
    client = app.server.test_client()
    assert {path.split("?")[0] for _, path in DATA_REQUESTS} <= DATA_PATHS
    for method, path in DATA_REQUESTS:
        for headers in FOREIGN:
            resp = _ask(client, method, path, headers)
            assert resp.status_code == 403, (method, path, headers, resp.status_code)
            assert resp.data.count(b"\n") == 1 and len(resp.data) < 200 and resp.data.startswith(b"refused")
            assert resp.headers["X-Frame-Options"] == "DENY"
        for headers in OWN:  # the dashboard's own pages, a typed address, curl
            resp = _ask(client, method, path, headers)
            assert resp.status_code == 200, (method, path, headers, resp.status_code, resp.data[:200])


def test_pages_open_from_a_link_on_another_site(served):
    """A link to the dashboard on another page opens it (a navigation): only its data is guarded."""
    app, _ = served
    client = app.server.test_client()
    for path in ("/", "/timeline", "/_favicon.ico"):
        assert client.get(path, headers={**HOST, "Sec-Fetch-Site": "cross-site"}).status_code == 200, path


def test_refusals_are_logged_sparingly(caplog, monkeypatch):
    """A page that keeps asking cannot flood the terminal: the first refusal of a kind is
    logged, then the 10th, 100th, ... with the count."""
    # `serve` (run in this process by other tests) gives the logger its own handler and stops
    # propagation; caplog listens at the root
    monkeypatch.setattr(logging.getLogger("traceview.serve"), "propagate", True)
    # ... and its handler may write to a test's capture stream, closed since
    monkeypatch.setattr(logging.getLogger("traceview.serve"), "handlers", [])
    refusals = Refusals()
    with caplog.at_level(logging.WARNING, logger="traceview.serve"):
        for i in range(150):
            refusals.refused("a request from another site", f"/_dash-layout, Sec-Fetch-Site: cross-site #{i}")
        refusals.refused("a request for another host", "Host: evil.example\x1b]0;x\x07")
    # only this test's refusals: a dashboard left serving in this process by an earlier test (a
    # browser page still polling it) may log its own while this runs (the full suite once saw 8)
    lines = [m for r in caplog.records if "cross-site #" in (m := r.getMessage()) or "evil.example" in m]
    assert len(lines) == 4, lines
    assert lines[0] == "refused a request from another site (/_dash-layout, Sec-Fetch-Site: cross-site #0)"
    assert lines[1].endswith("#9); 10 such requests so far") and lines[2].endswith("#99); 100 such requests so far")
    assert lines[3] == "refused a request for another host (Host: evil.example\\x1b]0;x\\x07)"


@pytest.mark.parametrize(
    "origin, host, same",
    [
        ("http://127.0.0.1:8050", "127.0.0.1:8050", True),
        ("HTTP://LOCALHOST:8050", "localhost:8050", True),
        ("http://[::1]:8050", "[::1]:8050", True),
        ("http://localhost", "localhost", True),
        ("http://localhost:80", "localhost", True),
        ("https://node7", "node7", True),  # behind a TLS proxy: the scheme's default port
        ("http://localhost:8051", "localhost:8050", False),
        ("http://evil.example:8050", "localhost:8050", False),
        ("http://localhost:8050/", "localhost:8050", False),
        ("http://user@localhost:8050", "localhost:8050", False),
        ("null", "localhost:8050", False),
        ("file://", "localhost:8050", False),
        ("http://localhost:x", "localhost:8050", False),
        ("http://localhost:8050", "localhost:８０５０", False),
    ],
)
def test_same_origin(origin, host, same):
    assert same_origin(origin, host) is same


def test_host_port_and_foreign_request():
    assert host_port("[::1]:8050") == 8050 and host_port("localhost") is None and host_port("a:８０") is None
    assert foreign_request({}, "localhost:1") is None
    assert foreign_request({"Sec-Fetch-Site": "same-origin"}, "localhost:1") is None
    assert foreign_request({"Sec-Fetch-Site": "cross-site"}, "localhost:1") == "Sec-Fetch-Site: cross-site"
    assert foreign_request({"Sec-Fetch-Site": "unheard-of"}, "localhost:1")  # a value added later: refused


# ---- Integers the API and the address take (issue 30) -------------------------------------------

from traceview.dashboards.overview_tables import instances_link  # noqa: E402
from traceview.dashboards.query import parse_compare, parse_query  # noqa: E402


def _fullwidth(text: str) -> str:
    return text.translate({ord(d): ord(d) + 0xFEE0 for d in "0123456789"})


def test_api_integers_are_ascii_digits_only(served):
    """Python's int() takes '１２' (full-width), '١٢' (Arabic-Indic), '1_2' and '+12', and
    str.isdigit() takes '²': every integer the timeline's routes take is ASCII digits only (400)."""
    app, _ = served
    client = app.server.test_client()
    raw = client.get("/api/timeline/window?start=0&end=1000000&px=100").get_json()["raw"]
    item = str(raw["id"][0])
    arabic = {ord(d): ord(d) + 0x0660 - 0x30 for d in "0123456789"}
    good_bad = [
        ("window?start=0&end=1000000&px=100", [_fullwidth("window?start=0&end=1000000&px=100")]),
        ("window?start=0&end=1000000&px=100", ["window?start=0&end=1000000&px=" + "100".translate(arabic)]),
        ("window?start=0&end=1000000&px=100", ["window?start=0&end=1_000_000&px=100", "window?start=+0&end=10"]),
        ("window?start=0&end=1000000&px=100", ["window?start=%200&end=10", "window?start=0&end=10&px=1%C2%B2"]),
        (f"task?id={item}", [f"task?id={_fullwidth(item)}", f"task?id=+{item}"]),
        ("range?start=0&end=1000&ranks=0,1", [f"range?start=0&end=1000&ranks=0,{_fullwidth('1')}"]),
        ("search?q=nccl&ranks=1", [f"search?q=nccl&ranks={_fullwidth('1')}"]),
    ]
    for good, bads in good_bad:
        assert client.get("/api/timeline/" + good).status_code == 200, good
        for bad in bads:
            resp = client.get("/api/timeline/" + bad)
            assert resp.status_code == 400 and b"ASCII digits" in resp.data, (bad, resp.status_code, resp.data[:200])


def test_query_string_integers_are_ascii_digits_only():
    """The address's rank, step and compare (and a table row's id from the page) read ASCII
    digits only; another script's digits are not a rank, and '²' does not raise."""
    ranks, steps = [0, 1, 2, 12], [0, 1, 2]
    assert parse_query("?rank=1,12&step=2", ranks, steps) == ([1, 12], 2)
    assert parse_query(f"?rank={_fullwidth('1')},{_fullwidth('12')}&step={_fullwidth('2')}", ranks, steps) == (
        None,
        None,
    )
    assert parse_query("?rank=²&step=١", ranks, steps) == (None, None)
    assert parse_compare("?compare=2,0", ranks) == [2, 0]
    assert parse_compare(f"?compare={_fullwidth('2')},0", ranks) == [0]
    rows = [{"name": "gemm", "short_name": "gemm", "rank": 0}, {"name": "nccl", "short_name": "nccl", "rank": 1}]
    cell = {"colId": "short_name", "rowId": "1"}
    assert instances_link("kernel-table", cell, rows, "") is not None
    for row_id in (_fullwidth("1"), "²", "+1", " 1"):
        assert instances_link("kernel-table", {**cell, "rowId": row_id}, rows, "") is None, row_id
