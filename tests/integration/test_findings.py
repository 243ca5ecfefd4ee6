"""Findings (`traceview.analysis.findings`, docs/findings.md). The integration tests; the topic's
description and its other tests: tests/unit/test_findings.py, tests/corpus/test_findings.py.
"""

from __future__ import annotations

import json

from tests.conftest import SAMPLES


def test_cli_micro_batches_and_rules_file(tmp_path):
    """--micro-batches feeds the bubble-above-ideal rule (pp4_1f1b is built with m = 8, so m = 8
    matches its bubble and m = 16 claims a smaller ideal); --findings-rules adds or changes rules and
    a bad file is one line, exit 1, before any load."""
    import subprocess
    import sys

    def rules(*args):
        res = subprocess.run(
            [sys.executable, "-m", "traceview", "summary", str(SAMPLES / "pp4_1f1b"), "-q", "--format", "json", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 0, res.stderr
        return {f["rule"] for f in json.loads(res.stdout)["findings"]}

    assert "pipeline_bubble_excess" not in rules("--micro-batches", "8")
    assert "pipeline_bubble_excess" in rules("--micro-batches", "16")
    off = tmp_path / "off.toml"
    off.write_text('[[rule]]\nid = "pipeline_bubble"\nenabled = false\n')
    assert "pipeline_bubble" not in rules("--findings-rules", str(off))
    bad = tmp_path / "bad.toml"
    bad.write_text("x = [")
    res = subprocess.run(
        [sys.executable, "-m", "traceview", "summary", str(tmp_path / "missing"), "-q", "--findings-rules", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1 and "bad.toml" in res.stderr
