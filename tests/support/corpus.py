"""The real-trace corpus as ../shared/traces/INDEX.md lists it: its rows (relative path, format
column) and the paths of each kind, for the tests that run on every profile of a kind; every
profile the corpus goldens load (`corpus_paths`: the tables' paths, then the multi-rank folders)."""

from __future__ import annotations

import re

from tests.conftest import SHARED_TRACES


def _index_rows() -> list[tuple[str, str]]:
    """(relative path, format column) of every table row of INDEX.md."""
    index = SHARED_TRACES / "INDEX.md"
    if not index.is_file():
        return []
    rows = []
    for line in index.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `([^`]+)` \|[^|]*\|[^|]*\| ([^|]+) \|", line)
        if m:
            rows.append((m.group(1), m.group(2).strip()))
    return rows


ROWS = _index_rows()
KINETO = [p for p, fmt in ROWS if fmt.startswith("kineto json")]
ASCEND_DIRS = [p for p, fmt in ROWS if fmt == "ascend pt dir"]
MINDSPORE = [p for p, fmt in ROWS if fmt == "mindspore timeline json"]


#: Folders of several ranks, loaded as one profile (INDEX.md lists their files one by one).
MULTI_RANK = [
    "param/et_replay/tests/inputs/dlrm_kineto.tar.gz.extracted/dlrm_kineto",
    "hta/tests/data/trace_filter",
    "msinsight/test/data/pytorch/text/level0",
    "msinsight/test/data/pytorch/text/level1",
    "msinsight/test/data/pytorch/db/level2",
    "msinsight/server/src/test/test_data",
    "generated_cpu/ddp2",
    "generated_cpu/single",
]


def corpus_paths() -> list[str]:
    """Every path of INDEX.md's tables that exists, then MULTI_RANK (relative to ../shared/traces)."""
    if not SHARED_TRACES.is_dir():
        return []
    index = (SHARED_TRACES / "INDEX.md").read_text(encoding="utf-8")
    listed = [m.group(1).rstrip("/") for m in re.finditer(r"^\| `([^`]+)`", index, flags=re.M)]
    paths = [p for p in listed if (SHARED_TRACES / p).exists()]
    return list(dict.fromkeys(paths + [p for p in MULTI_RANK if (SHARED_TRACES / p).exists()]))
