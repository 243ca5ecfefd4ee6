"""`traceview export --format perfetto`. The integration tests; the topic's description and its other
tests: tests/unit/test_export.py, tests/corpus/test_export.py.
"""

from __future__ import annotations

import orjson

from tests.conftest import SAMPLES, run_cli
from tests.support.samples import shared_sample
from traceview.dashboards.perfetto import perfetto_json


def test_cli_export_writes_and_refuses(tmp_path):
    cli = run_cli
    out = tmp_path / "p.json"
    result = cli("export", str(SAMPLES / "pp4_1f1b"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert orjson.loads(out.read_bytes())["traceEvents"]
    again = cli("export", str(SAMPLES / "pp4_1f1b"), "-o", str(out))
    assert again.returncode == 1 and "--force" in again.stderr and "Traceback" not in again.stderr
    folder = cli("export", str(SAMPLES / "pp4_1f1b"), "-o", str(tmp_path))
    assert folder.returncode == 1 and "is a folder" in folder.stderr
    assert cli("export", str(SAMPLES / "pp4_1f1b"), "-o", str(out), "--force").returncode == 0


def test_the_dashboard_downloads_the_export():
    """`traceview serve`'s "Perfetto JSON" link: the same document as `traceview export`, as an
    attachment named after the profile; no other /download path is served."""
    from traceview.dashboards.app import PERFETTO_PATH, create_app
    from traceview.summary import build_summary

    trace = shared_sample("pp4_1f1b")
    app = create_app(trace, build_summary(trace, details=False))
    client = app.server.test_client()
    host = {"Host": "127.0.0.1:8050"}
    got = client.get(PERFETTO_PATH, headers=host)
    assert got.status_code == 200
    assert got.headers["Content-Disposition"] == 'attachment; filename="pp4_1f1b.perfetto.json"'
    assert got.data == perfetto_json(trace)
    assert b"nav-perfetto" in client.get("/_dash-layout", headers=host).data
    assert client.get("/download/other.json", headers=host).status_code == 404
