"""Identical inputs give byte-identical output in every format, whatever the cache, the number of
worker processes or the run (issue 14. The corpus tests; the topic's description and its other
tests: tests/integration/test_deterministic_output.py.
"""

from __future__ import annotations

from tests.conftest import SHARED_TRACES, needs_shared
from tests.support.deterministic_output_shared import _outputs  # noqa: F401

DLRM = SHARED_TRACES / "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto"


@needs_shared
def test_a_real_multi_rank_profile_is_byte_identical(tmp_path):
    cache = str(tmp_path / "cache")
    first = _outputs(DLRM, tmp_path, "a", "--cache-dir", cache)
    assert _outputs(DLRM, tmp_path, "b", "--no-cache", "--jobs", "2") == first
