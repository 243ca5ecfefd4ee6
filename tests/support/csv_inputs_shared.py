"""What the CSV-input test modules share: the rocprofv3 samples, and CSVs made wide (100,000 empty
columns appended: `wide_ascend`, `wide_rocprof`)."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import DATA, SAMPLES

ROCPROF = DATA / "rocprof"


EXTRA = 100_000


def _widen(path, extra: int = EXTRA) -> None:
    """Append `extra` empty columns to every line of a CSV."""
    lines = path.read_text().splitlines()
    header = lines[0] + "".join(f",extra_{i}" for i in range(extra))
    path.write_text("\n".join([header] + [line + "," * extra for line in lines[1:]]) + "\n")


@pytest.fixture
def wide_ascend(tmp_path):
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(SAMPLES / "ascend_2rank" / "rank0_ascend_pt", rank)
    _widen(rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv")
    return rank


@pytest.fixture
def wide_rocprof(tmp_path):
    for f in (ROCPROF / "omp_output").iterdir():
        shutil.copy(f, tmp_path / f.name)
    _widen(tmp_path / "omp_kernel_trace.csv")
    return tmp_path / "omp_kernel_trace.csv"
