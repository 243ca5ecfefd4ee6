"""rocprofv3 output (`parsers/rocprof.py`). The integration tests; the topic's description and its
other tests: tests/unit/test_rocprof.py.
"""

from __future__ import annotations

from tests.conftest import run_cli
from tests.support.browser import serve_answers, server_for  # noqa: F401 - fixture
from tests.support.rocprof_shared import CSV_RUN, JSON_RUN, ROCPROF  # noqa: F401


def test_info_summary_and_report_of_both_outputs(tmp_path):
    for i, path in enumerate((CSV_RUN, JSON_RUN, ROCPROF / "omp_output")):
        for command in (("info",), ("summary",), ("report", "-o", str(tmp_path / f"r{i}.html"))):
            out = run_cli(command[0], str(path), *command[1:])
            assert out.returncode == 0, out.stderr
            assert "Traceback" not in out.stderr
    assert "AMD Instinct MI300A" in run_cli("summary", str(JSON_RUN)).stdout


def test_serve_answers_for_rocprof_output(server_for):
    meta, _ = serve_answers(server_for(JSON_RUN))
    assert "device" in set(meta["lanes"]["kind"])
