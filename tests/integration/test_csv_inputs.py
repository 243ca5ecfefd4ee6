"""CSV profiles that are wide, or whose files are not what their names say (issue 30). The integration
tests; the topic's description and its other tests: tests/unit/test_csv_inputs.py.
"""

from __future__ import annotations

import pytest

from tests.conftest import SAMPLES
from tests.support import bounded
from tests.support.csv_inputs_shared import ROCPROF, wide_ascend, wide_rocprof  # noqa: F401 - fixtures


@pytest.mark.parametrize("kind", ["ascend", "rocprof"])
def test_wide_csvs_end_in_seconds_within_the_memory_guard(request, kind):
    """Under a 1.5 GB address-space limit: seconds, and the peak of the narrow file's run plus
    the memory guard's estimate for the wide file (10 x its bytes)."""
    from traceview.parsers import host_ram

    wide = request.getfixturevalue(f"wide_{kind}")
    narrow = (
        SAMPLES / "ascend_2rank" / "rank0_ascend_pt"
        if kind == "ascend"
        else ROCPROF / "omp_output" / "omp_kernel_trace.csv"
    )
    size = sum(f.stat().st_size for f in (wide.rglob("*") if wide.is_dir() else [wide]) if f.is_file())
    base = bounded.run(["info", str(narrow), "--no-cache"])
    done = bounded.run(["info", str(wide), "--no-cache"])
    assert done.returncode == 0 and base.returncode == 0, done.stderr
    assert done.seconds < 20
    assert done.peak_rss_bytes < base.peak_rss_bytes + host_ram.PARSE_FACTOR * size
