"""Identical inputs give byte-identical output in every format, whatever the cache, the number of
worker processes or the run (issue 14: ties in `cross_rank.collectives` came out in group_by
order; the report carried the time it was written).

This file holds the topic's integration tests; the others are in tests/corpus/test_deterministic_output.py.
"""

from __future__ import annotations

import pytest

from tests.conftest import SAMPLES
from tests.support.deterministic_output_shared import _outputs  # noqa: F401


@pytest.mark.parametrize("sample", ["dp4_nccl", "pp4_1f1b", "ascend_2rank"])
def test_every_format_is_byte_identical_across_runs_caches_and_workers(sample, tmp_path):
    profile = SAMPLES / sample
    cache = str(tmp_path / "cache")
    runs = [
        _outputs(profile, tmp_path, "cold", "--no-cache", "--jobs", "1"),
        _outputs(profile, tmp_path, "fill", "--cache-dir", cache, "--jobs", "2"),
        _outputs(profile, tmp_path, "cached", "--cache-dir", cache),
    ]
    assert runs[0] == runs[1] == runs[2]
