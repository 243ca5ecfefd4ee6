"""Security (issue 7): strings from a trace never become markup, the server stays on this machine
and serves nothing but its pages, caches are Parquet and JSON only, and a gzip bomb or a giant
event stops at the memory guard with one line instead of exhausting memory.

What tests/integration/test_report.py (kernel, operator and folder names in the report) and
tests/integration/test_server_safety.py (path tricks) already prove is not repeated here; this file adds
stream, thread, process, device, annotation, collective and process-group names, template syntax,
a right-to-left override and a 200 KB name, hostile FILE names, the diff page, `Trace._repr_html_`,
the pages as chromium runs them (plotly hover labels, the canvas timeline's tooltip and task
details included), the server's bind (on the real socket) and debug settings, symlinks and the
profile's own files, tampered cache entries, the Ray transport, static checks of what the code may
load, and bombs.

This file holds the topic's integration tests; the others are in tests/browser/test_security.py.
"""

from __future__ import annotations

import ast
import gzip
import html
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, ROOT, SAMPLES, run_cli
from tests.support import callbacks
from tests.support.hostile import (
    ATTR,
    BREAKOUT,
    FOLDER_NAME,
    JS_URL,
    NAMES,
    SCRIPT,
    SVG,
    TEMPLATE,
    write_hostile,
)
from tests.support.security_shared import hostile, report_file  # noqa: F401
from tests.support.serve import serve
from traceview.dashboards.app import create_app
from traceview.dashboards.diff_report import diff_html
from traceview.errors import TraceError
from traceview.summary import build_summary

FORBIDDEN_TAGS = {"img", "svg", "iframe", "object", "embed", "form", "base", "link"}  # none in a report


class Doc(HTMLParser):
    """Start tags with attributes, script contents, and the text outside scripts."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.text = ""
        self._script: dict | None = None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attrs))
        if tag == "script":
            self._script = attrs
            self.scripts.append((attrs, ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        else:
            self.text += data


def assert_inert(page: str, code_scripts: int, shown: list[str]) -> Doc:
    """No element, attribute or script of `page` comes from a payload; `shown` payloads are still
    there, as text or as JSON strings (so the check is not passing on a page that dropped them)."""
    doc = Doc(page)
    assert not [t for t, _ in doc.tags if t in FORBIDDEN_TAGS]
    for tag, attrs in doc.tags:
        assert not [k for k in attrs if k.startswith("on")], (tag, attrs)
        assert not [v for v in attrs.values() if v.strip().lower().startswith("javascript:")], (tag, attrs)
    strings = [doc.text]
    code = 0
    for attrs, text in doc.scripts:
        if attrs.get("type") == "application/json":
            assert "<" not in text  # every '<' written as \u003c: nothing can close the block
            strings.append(json.dumps(json.loads(text), ensure_ascii=False))
        else:
            code += 1
            assert "__pwned" not in text and JS_URL not in text
    assert code == code_scripts  # plotly.js and the renderer only
    everything = "\n".join(strings).replace('\\"', '"')
    for payload in shown:
        assert payload in everything, payload
    return doc


def test_report_cli_has_no_live_markup(report_file, hostile):
    page = report_file.read_text(encoding="utf-8")
    shown = [NAMES[k] for k in ("kernel", "cpu_op", "collective", "group", "template", "long")]
    doc = assert_inert(page, 2, [*shown, str(hostile)])
    for payload in (SCRIPT, BREAKOUT, ATTR, SVG, NAMES["collective"], TEMPLATE):
        assert payload not in page
    assert TEMPLATE in doc.text  # in the kernel table, as text (`<b>` included)
    assert f'title="{html.escape(TEMPLATE)}' in page  # and its hover title, escaped


def test_diff_html_has_no_live_markup(hostile, tmp_path):
    other = write_hostile(tmp_path, FOLDER_NAME + SVG)
    res = run_cli("diff", str(hostile), str(other), "--format", "html", "-q", "--no-cache")  # the page on stdout
    assert res.returncode == 0, res.stderr
    page = res.stdout
    assert_inert(page, 2, [str(hostile), str(other)])
    for payload in (SCRIPT, BREAKOUT, ATTR, SVG):
        assert payload not in page
    # The same through the API, with payloads in every string field the diff page shows.
    doc = json.loads(
        json.dumps(
            {
                "base": {"source": SCRIPT},
                "new": {"source": ATTR},
                "terms": [{"rank": "all", "term": BREAKOUT, "base_us": 1.0, "new_us": 2.0}],
            }
        )
    )
    assert_inert(diff_html(doc), 2, [SCRIPT, ATTR, BREAKOUT])


def test_repr_html_escapes_everything(hostile):
    trace = tv.load(hostile, use_cache=False)
    page = trace._repr_html_()
    doc = assert_inert(page, 0, [str(hostile)])
    assert not [t for t, _ in doc.tags if t == "script"]
    assert SCRIPT not in page and ATTR not in page


def test_dashboard_layout_carries_names_as_data(hostile):
    """The served pages hand the names to React as JSON data (rendered as text nodes; the browser
    tests below run it): the HTML of the pages holds none of them, the layout JSON holds them exactly."""
    trace = tv.load(hostile, use_cache=False)
    app = create_app(trace, build_summary(trace, details=False))
    client = app.server.test_client()
    for path in ("/", "/timeline", "/timeline?host=1"):
        page = client.get(path).data.decode()
        assert "__pwned" not in page and JS_URL not in page
    layout = client.get("/_dash-layout").data.decode()
    assert "__pwned" in layout  # the names are there, as JSON strings
    assert NAMES["kernel"] in json.dumps(json.loads(layout), ensure_ascii=False)


def _capture_serve(monkeypatch) -> list[dict]:
    """Calls of waitress.serve (what `traceview serve` runs), recorded instead of serving."""
    import waitress

    calls = []
    monkeypatch.setattr(waitress, "serve", lambda app, **kw: calls.append(dict(kw, app=app)))
    return calls


def test_serve_binds_loopback_with_debug_off(monkeypatch, capsys):
    calls = _capture_serve(monkeypatch)
    from traceview.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["serve", str(SAMPLES / "dp4_nccl"), "--port", "18561", "--quiet", "--no-cache"], prog_name="traceview")
    assert exc.value.code in (0, None)
    assert len(calls) == 1
    kw = calls[0]
    assert kw["host"] == "127.0.0.1" and kw["ident"] == "" and kw["max_request_body_size"] == 2 * 1024 * 1024
    assert kw["app"].debug is False  # Flask's debugger and reloader are never on
    assert "reachable from the network" not in capsys.readouterr().err


def test_serve_on_all_interfaces_warns(monkeypatch, capsys):
    calls = _capture_serve(monkeypatch)
    from traceview.cli.main import main

    with pytest.raises(SystemExit):
        main(
            ["serve", str(SAMPLES / "dp4_nccl"), "--host", "0.0.0.0", "--port", "18563", "--quiet", "--no-cache"],
            prog_name="traceview",
        )
    err = capsys.readouterr().err
    assert calls and calls[0]["host"] == "0.0.0.0"
    warning = [line for line in err.splitlines() if "reachable from the network" in line]
    assert len(warning) == 1 and warning[0].startswith("traceview: warning: --host 0.0.0.0")


@pytest.mark.parametrize(
    "host, local",
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("example.com", False),
    ],
)
def test_is_loopback(host, local):
    from traceview.dashboards.server import is_loopback

    assert is_loopback(host) is local


@pytest.fixture(scope="module")
def served_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("srv")
    profile = root / "profile"
    shutil.copytree(SAMPLES / "dp4_nccl", profile)
    (root / "secret.txt").write_text("traceview-secret-symlink")
    (profile / "link.txt").symlink_to(root / "secret.txt")
    (profile / "etc").symlink_to("/etc")
    trace = tv.load(profile, use_cache=False)
    return create_app(trace, build_summary(trace, details=False))


def test_symlinks_out_of_the_profile_are_not_served(served_app):
    client = served_app.server.test_client()
    for path in (
        "/link.txt",
        "/profile/link.txt",
        "/etc/passwd",
        "/etc/hostname",
        "/timeline/link.txt",
        "/_dash-component-suites/link.txt",
        "/_dash-component-suites/dash/link.txt",
        "/_dash-component-suites/etc/passwd",
        "/assets/link.txt",
    ):
        resp = client.get(path)
        assert resp.status_code == 404, path
        assert b"traceview-secret-symlink" not in resp.data and b"root:" not in resp.data
    for trace_file in (SAMPLES / "dp4_nccl").iterdir():  # the profile's own files: not downloadable either
        name = trace_file.name
        for path in (f"/{name}", f"/profile/{name}", f"/_dash-component-suites/{name}"):
            assert client.get(path).status_code == 404, path


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp* write them) of the sockets listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                found.append(local.rsplit(":", 1)[0])
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the listening sockets from Linux's /proc/net/tcp")
def test_served_socket_listens_on_loopback_only():
    """The real `traceview serve` process, default --host: its one listening socket is 127.0.0.1."""
    from tests.support.browser import free_port

    port = free_port()
    proc = serve(SAMPLES / "dp4_nccl", "--port", str(port), "--quiet", "--no-cache", stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not _listening(port) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _listening(port) == ["0100007F"], (_listening(port), proc.poll())  # 127.0.0.1, little-endian hex
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_debug_is_off_and_errors_show_no_traceback(served_app):
    server = served_app.server
    assert not server.debug and not server.config.get("PROPAGATE_EXCEPTIONS")
    assert not getattr(served_app, "_dev_tools", {}).get("ui", False)
    from dash import Input, Output

    served_app.callback(Output("boom", "children"), Input("boom-in", "value"))(
        lambda value: (_ for _ in ()).throw(RuntimeError(f"secret detail {value} /etc/passwd"))
    )
    client = server.test_client()
    bodies = [  # a callback that raises, dispatch errors of Dash, and a body that is not JSON
        {
            "output": "boom.children",
            "outputs": {"id": "boom", "property": "children"},
            "inputs": [{"id": "boom-in", "property": "value", "value": 1}],
            "changedPropIds": ["boom-in.value"],
        },
        {  # a real callback (the page switch) asked with too few inputs, one of the wrong type
            "output": (page := callbacks.dependency(client, "page-timeline.style"))["output"],
            "outputs": callbacks.outputs(page),
            "inputs": [{"id": "url", "property": "pathname", "value": {"not": "a path"}}],
            "changedPropIds": [],
        },
        {
            "output": "nope.children",
            "outputs": {"id": "nope", "property": "children"},
            "inputs": [],
            "changedPropIds": [],
        },
        "not json at all",
    ]
    statuses = []
    for body in bodies:
        kw = {"json": body} if isinstance(body, dict) else {"data": body, "content_type": "application/json"}
        resp = client.post("/_dash-update-component", **kw)
        statuses.append(resp.status_code)
        text = resp.data.decode(errors="replace")
        assert "Traceback" not in text and 'File "' not in text and ".py" not in text, text[:500]
        assert "secret detail" not in text and "/etc/passwd" not in text and "RuntimeError" not in text
        assert "Werkzeug Debugger" not in text and "__debugger__" not in text
    assert statuses[:3] == [500, 500, 500] and statuses[3] >= 400, statuses
    resp = client.get("/?__debugger__=yes&cmd=resource&f=style.css")  # the Werkzeug debugger's endpoint
    assert b"Werkzeug" not in resp.data and b"debugger" not in resp.data.lower()


def test_cache_holds_only_parquet_and_json(tmp_path):
    cache_dir = tmp_path / "cache"
    tv.load(SAMPLES / "dp4_nccl", cache_dir=cache_dir)
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert files and {p.suffix for p in files} <= {".parquet", ".json"}, {p.suffix for p in files}


#: The one module that may import pickle: the memory snapshot reader, whose unpickler constructs
#: nothing but containers and scalars (tests/unit/test_snapshot.py proves a hostile pickle is refused).
PICKLE_READER = "traceview/parsers/snapshot.py"


def test_no_module_imports_a_pickle_loader():
    banned = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "shelve", "joblib"}
    found = []
    for package in ("traceview",):  # parsers/ and dashboards/ are folders inside it
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "__import__":
                    names = [getattr(node.args[0], "value", "")] if node.args else []
                allowed = path.relative_to(ROOT).as_posix() == PICKLE_READER and names == ["pickle"]
                found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in banned and not allowed]
                if isinstance(node, ast.Attribute) and node.attr in ("read_pickle", "to_pickle"):
                    found.append(f"{path.relative_to(ROOT)}: .{node.attr}")
    assert found == []


def test_the_pickle_reader_never_uses_the_unrestricted_loaders():
    """traceview/parsers/snapshot.py reads through its own Unpickler subclass only: no pickle.load/loads,
    no Unpickler without find_class overridden."""
    tree = ast.parse((ROOT / PICKLE_READER).read_text(encoding="utf-8"))
    calls = [
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and getattr(node.func.value, "id", "") == "pickle"
    ]
    assert not set(calls) & {"load", "loads", "Unpickler"}, calls
    classes = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.ClassDef) and any(getattr(b, "attr", "") == "Unpickler" for b in n.bases)
    ]
    assert classes and all(
        any(f.name == "find_class" for f in c.body if isinstance(f, ast.FunctionDef)) for c in classes
    )


def test_readers_are_parquet_json_and_csv_only():
    """Static check: polars reads only Parquet (the cache) and CSV (Ascend's own text tables);
    nothing deserializes code (`LazyFrame.deserialize` can hold pickled functions), loads numpy,
    torch or yaml objects, or evaluates text."""
    allowed = {"read_parquet", "read_csv"}
    found = []
    for package in ("traceview",):  # parsers/ and dashboards/ are folders inside it
        for path in (ROOT / package).rglob("*.py"):
            where = path.relative_to(ROOT)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    owner, attr = node.value.id, node.attr
                    if owner in ("pl", "polars") and attr.startswith(("read_", "scan_")) and attr not in allowed:
                        found.append(f"{where}: {owner}.{attr}")
                    if owner in ("np", "numpy", "torch", "yaml") and attr in ("load", "loads", "unsafe_load"):
                        found.append(f"{where}: {owner}.{attr}")
                if isinstance(node, ast.Attribute) and node.attr == "deserialize":
                    found.append(f"{where}: .deserialize")
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec"):
                    found.append(f"{where}: {node.func.id}()")
    assert found == []


def test_ray_transport_is_parquet_and_json_only():
    """What a Ray task hands back (`cache.pack`): Parquet and JSON bytes only, read back by
    `unpack` into the same frames; a pickle in their place is refused, not loaded."""
    from traceview import cache
    from traceview.executors import parse_source
    from traceview.parsers.detect import discover

    source = discover(SAMPLES / "dp4_nccl")[0]
    parsed = parse_source(source)
    files = cache.pack(parsed)
    assert files and all(name.endswith((".parquet", ".json")) for name in files)
    back = cache.unpack(files)
    assert back.meta == parsed.meta and all(back.frames[t].equals(df) for t, df in parsed.frames.items())
    import pickle  # the test writes one; traceview must refuse it

    for name in files:
        tampered = dict(files, **{name: pickle.dumps(parsed.meta)})
        with pytest.raises((orjson.JSONDecodeError, pl.exceptions.PolarsError, KeyError)):  # what read_entry catches
            cache.unpack(tampered)


def _tamper(entry: Path, how: str) -> None:
    if how == "garbage_parquet":
        for p in entry.glob("*.parquet"):
            p.write_bytes(b"\x80\x04\x95garbage" * 100)
    elif how == "truncated_parquet":
        for p in entry.glob("*.parquet"):
            p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])
    elif how == "pickle_in_parquet":
        import pickle  # the test writes one; traceview must never read it

        for p in entry.glob("*.parquet"):
            p.write_bytes(pickle.dumps({"x": 1}))
    elif how == "meta_wrong_types":
        (entry / "meta.json").write_text(json.dumps({"meta": 5, "warnings": "not a list"}))
    elif how == "meta_list":
        (entry / "meta.json").write_text("[1, 2, 3]")
    elif how == "meta_other_version":
        blob = json.loads((entry / "meta.json").read_text())
        blob["meta"]["parser_version"] = 999
        blob["parser_version"] = 999
        blob["meta"]["rank"] = "zero"
        (entry / "meta.json").write_text(json.dumps(blob))
    elif how == "meta_garbage":
        (entry / "meta.json").write_bytes(b"\xff\xfe{{{")
    elif how == "swapped_tables":
        tasks, host = entry / "device_tasks.parquet", entry / "host_events.parquet"
        a, b = tasks.read_bytes(), host.read_bytes()
        tasks.write_bytes(b)
        host.write_bytes(a)
    elif how == "unknown_table":
        (entry / "evil.parquet").write_bytes((entry / "steps.parquet").read_bytes())
    elif how == "extra_files":
        (entry / "evil.pkl").write_bytes(b"\x80\x04K\x01.")
        (entry / "rank.parquet.pkl").write_bytes(b"\x80\x04K\x01.")


@pytest.mark.parametrize(
    "how",
    [
        "garbage_parquet",
        "truncated_parquet",
        "pickle_in_parquet",
        "meta_wrong_types",
        "meta_list",
        "meta_other_version",
        "meta_garbage",
        "swapped_tables",
        "unknown_table",
        "extra_files",
    ],
)
def test_tampered_cache_entry_is_reparsed(tmp_path, how):
    profile = tmp_path / "p"
    shutil.copytree(SAMPLES / "dp4_nccl", profile)
    cache_dir = tmp_path / "cache"
    clean = tv.load(profile, cache_dir=cache_dir)
    entries = [p for p in cache_dir.iterdir() if p.is_dir()]
    assert entries
    for entry in entries:
        _tamper(entry, how)
    again = tv.load(profile, cache_dir=cache_dir)
    assert again.step_breakdown().equals(clean.step_breakdown())
    assert again.info()["rank"].to_list() == clean.info()["rank"].to_list()
    assert not [w for w in again.warnings if "cache" in w.lower() and "error" in w.lower()]


HEADER = b'{"schemaVersion": 1, "traceEvents": ['


EVENT = b'{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"pid":0,"tid":7,"args":{"stream":7,"device":0}},'


def gzip_bomb(path: Path, inflated: int, fill: bytes, trailer_says: int | None = None, head: bytes = b"") -> Path:
    """A gzip file of HEADER + `head` + `fill` repeated to at least `inflated` bytes (the array
    never closed: it need not be). Written in a moment even for GBs: one 1 MiB block compressed
    after a full flush stands alone, so its deflate bytes are repeated. The trailer holds the true
    CRC and ISIZE (the size mod 2**32), or claims `trailer_says` bytes: how a member of 4 GiB + n
    bytes reads, emulated at a small size."""
    block = fill * ((1 << 20) // len(fill))
    first = HEADER + head
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = co.compress(first) + co.flush(zlib.Z_FULL_FLUSH)
    packed = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
    n = max(1, -(-(inflated - len(first)) // len(block)))
    crc = zlib.crc32(first)
    for _ in range(n):
        crc = zlib.crc32(block, crc)
    size = len(first) + n * len(block)
    with path.open("wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + start)
        for _ in range(n):
            out.write(packed)
        out.write(co.flush())
        out.write(struct.pack("<II", crc, (size if trailer_says is None else trailer_says) & 0xFFFFFFFF))
    return path


def test_gzip_bomb_helper_writes_valid_gzip(tmp_path):
    path = gzip_bomb(tmp_path / "b.gz", 5_000_000, EVENT)
    data = gzip.decompress(path.read_bytes())  # CRC and ISIZE checked by gzip
    assert data.startswith(HEADER) and len(data) >= 5_000_000 and data.endswith(EVENT)
    assert path.stat().st_size < 100_000


#: Runs argv[2:] and writes its peak RSS (KiB, this wrapper's children only) to argv[1]: the test
#: process's own RUSAGE_CHILDREN holds the largest of every subprocess the suite ran before.
_PEAK_WRAPPER = (
    "import resource, subprocess, sys; rc = subprocess.run(sys.argv[2:]).returncode; "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(rc)"
)


def _bounded_run(path: Path, limit: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """`traceview info PATH --no-cache` under TRACEVIEW_MEMORY_LIMIT=`limit`: (result, seconds, peak RSS bytes)."""
    peak_file = path.with_name(path.name + ".peak")
    start = time.perf_counter()
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            _PEAK_WRAPPER,
            str(peak_file),
            sys.executable,
            "-m",
            "traceview",
            "info",
            str(path),
            "--no-cache",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TRACEVIEW_MEMORY_LIMIT": limit},
    )
    return res, time.perf_counter() - start, int(peak_file.read_text()) * 1024


@pytest.mark.parametrize("fill", [b" ", b"x", EVENT], ids=["spaces", "giant_string", "events"])
def test_gzip_bomb_stops_at_the_memory_guard(tmp_path, fill):
    """A few hundred KB inflating to 300 MB whose trailer says 1 MB (the guard believes it), loaded
    with 200 MiB allowed: one line naming the file, the size and the way out; exit 1; well under
    the 300 MB it would inflate to."""
    head = b'{"ph":"X","cat":"kernel","name":"' if fill == b"x" else b""  # one name that never ends
    path = gzip_bomb(tmp_path / "bomb.pt.trace.json.gz", 300_000_000, fill, trailer_says=4_000_000, head=head)
    assert path.stat().st_size < 4_000_000
    res, seconds, peak = _bounded_run(path, "200M")
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr
    line = lines[0]
    assert str(path) in line and "inflates to more than" in line and "MB" in line
    assert "TRACEVIEW_MEMORY_LIMIT" in line and "gzip bomb" in line and "--ranks" in line and "--executor ray" in line
    assert seconds < 60 and peak < 700e6, (seconds, peak)


def test_gzip_trailer_wrapped_below_the_compressed_size_is_raised(tmp_path):
    """A real 4 GiB + 1 MiB bomb (4 MB on disk): its ISIZE (1 MiB, the size mod 2**32) is below the
    compressed size, so it is read as 4 GiB more and the guard refuses before any inflating: one
    line naming the file and the size."""
    path = gzip_bomb(tmp_path / "wrapped.pt.trace.json.gz", (1 << 32) + (1 << 20), b" ")
    from traceview.parsers.host_ram import uncompressed_size

    isize = struct.unpack("<I", path.read_bytes()[-4:])[0]
    assert isize < path.stat().st_size < 5_000_000
    assert uncompressed_size(path) == (1 << 32) + isize
    res, seconds, _ = _bounded_run(path, "1G")
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "needs about" in res.stderr and "4.3 GB" in res.stderr and str(path) in res.stderr
    assert "--ranks" in res.stderr and "--executor ray" in res.stderr and seconds < 30


def test_small_gzip_keeps_its_trailer_size(tmp_path):
    """A gzip smaller than its data plus gzip's overhead (an empty trace: 18 bytes in 38) cannot
    hold 4 GiB: its ISIZE is not raised (it was, and a near-empty rank needed 9.9 GB)."""
    path = tmp_path / "empty.pt.trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents":[]}'))
    from traceview.parsers.host_ram import uncompressed_size

    assert path.stat().st_size > 18 and uncompressed_size(path) == 18
    res = run_cli("info", str(path), "--no-cache", env={"TRACEVIEW_MEMORY_LIMIT": "1G"})
    assert res.returncode == 0, res.stderr


def test_huge_event_in_a_plain_file_stops_at_the_memory_guard(tmp_path):
    """One event with a 70 MB name: too long for the stream's cut (more than 8 chunks), and its
    whole read (PARSE_FACTOR x the file) does not fit in the 400 MiB allowed: one line, exit 1."""
    path = tmp_path / "line.pt.trace.json"
    with path.open("wb") as out:
        out.write(HEADER + EVENT + b'{"ph":"X","cat":"cpu_op","name":"')
        out.write(b"x" * 70_000_000)
        out.write(b'","ts":1,"dur":1,"pid":0,"tid":7}]}')
    res, seconds, _ = _bounded_run(path, "400M")
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "too large" in lines[0]
    assert "TRACEVIEW_MEMORY_LIMIT" in lines[0] and "--ranks" in lines[0] and seconds < 60


def test_bounds_leave_honest_files_alone(tmp_path):
    """A real gzip trace inflating well past its declared size is fine when it fits, and a
    genuine file loads under a limit that fits it: the bound is the memory, not the trailer."""
    src = tmp_path / "t.pt.trace.json.gz"
    doc = json.loads((DATA / "kineto_minimal.json").read_text())
    src.write_bytes(gzip.compress(json.dumps(doc).encode()))
    clean = tv.load(src, use_cache=False).step_breakdown()
    data = bytearray(src.read_bytes())
    data[-4:] = struct.pack("<I", 1_000)  # under-states, still above the compressed size
    lying = tmp_path / "lying.pt.trace.json.gz"
    lying.write_bytes(bytes(data))
    from traceview.parsers.jsonio import read_bytes, stream_bound

    assert stream_bound(lying) >= 1_000
    with pytest.raises(TraceError) as exc:  # gzip's own length check still catches the lie at the end
        read_bytes(lying)
    assert "corrupt gzip" in str(exc.value) or "inflates" in str(exc.value)
    res = run_cli("info", str(src), "--no-cache", env={"TRACEVIEW_MEMORY_LIMIT": "300M"})
    assert res.returncode == 0, res.stderr
    assert clean.height > 0
