"""The numbers of every real profile in ../shared/traces, kept as golden JSON (tests/golden/corpus/).

Every profile listed in ../shared/traces/INDEX.md (each file or folder of its tables) and the
multi-rank folders a user would point at load to a `traceview summary --format json` document
whose shape is the declared one (`traceview.summary_doc`, key for key) and whose numbers that
matter are the recorded ones (or fail with exactly the recorded line). What is recorded is narrow
(`narrow`): the headline, each rank's whole-trace terms and the ids of the findings, so a new key
or a reworded finding rewrites no golden while a moved headline number, rank term or finding
still fails (the per-step rows and the tables are not pinned here: the shipped samples keep
whole-document goldens, tests/unit/test_summary.py, and the corpus tests of each analysis check
them against the reference tools). An intended change of numbers regenerates
them: `TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/corpus/test_corpus_goldens.py`, then review the
diff.
"""

from __future__ import annotations

import os
import re

import orjson
import pytest

import traceview as tv
from tests.conftest import ROOT, SHARED_TRACES, needs_shared
from tests.support.corpus import corpus_paths
from traceview import summary_doc
from traceview.errors import TraceError
from traceview.summary import build_summary

GOLDEN = ROOT / "tests" / "golden" / "corpus"


def summary_of(rel: str) -> dict:
    """The summary document of one profile, or {"error": the one-line error} when it cannot be read."""
    try:
        trace = tv.load(SHARED_TRACES / rel, use_cache=False, jobs=1)
    except TraceError as exc:
        return {"error": str(exc).replace(str(SHARED_TRACES), "<traces>")}
    doc = build_summary(trace)
    # paths as the corpus writes them, wherever ../shared is
    return orjson.loads(orjson.dumps(doc).decode().replace(str(SHARED_TRACES), "<traces>"))


def narrow(doc: dict) -> dict:
    """What a corpus golden records of a summary document: the error line of a profile that cannot be
    read; else the headline, each rank's whole-trace terms (`ranks[].trace`, with the rank's
    number, format, device and step window rule) and each finding's id (rule, rank, term)."""
    if "error" in doc:
        return {"error": doc["error"]}
    return {
        "headline": doc["headline"],
        "ranks": [
            {key: rank[key] for key in ("rank", "format", "device", "window_rule", "trace")} for rank in doc["ranks"]
        ],
        "findings": [{key: f[key] for key in ("rule", "rank", "term")} for f in doc["findings"]],
    }


def golden_file(rel: str):
    return GOLDEN / (re.sub(r"[^A-Za-z0-9._-]+", "__", rel) + ".json")


@needs_shared
def test_the_corpus_is_listed():
    assert len(corpus_paths()) >= 85


@needs_shared
@pytest.mark.parametrize("rel", corpus_paths())
def test_summary_matches_golden(rel):
    doc = summary_of(rel)
    if "error" not in doc:
        summary_doc.document(doc)  # the declared shape (traceview.summary_doc), key for key
    recorded = narrow(doc)
    path = golden_file(rel)
    if os.environ.get("TRACEVIEW_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(recorded, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    assert path.is_file(), f"no golden for {rel}: record it (see the module docstring)"
    assert recorded == orjson.loads(path.read_bytes()), f"numbers of {rel} changed; if intended, regenerate"
