"""What the split modules of test_rocprof.py share (helpers and fixtures)."""

from __future__ import annotations

from tests.conftest import DATA
from tests.support.browser import serve_answers, server_for  # noqa: F401 - fixture

ROCPROF = DATA / "rocprof"


CSV_RUN = ROCPROF / "omp_output" / "omp_kernel_trace.csv"


JSON_RUN = ROCPROF / "built" / "omp_results.json"
