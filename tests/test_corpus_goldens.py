"""The summary of every real profile in ../shared/traces, kept as golden JSON (tests/golden/corpus/).

Recorded before the redesign of issue 15 so that moving code changes no number: every profile
listed in ../shared/traces/INDEX.md (each file or folder of its tables) and the multi-rank folders
a user would point at load to exactly the recorded `traceview summary --format json` document (or
fail with exactly the recorded line). An intended change of numbers regenerates them:
`TRACEVIEW_UPDATE_GOLDEN=1 python -m pytest tests/test_corpus_goldens.py`, then review the diff.
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
    path = golden_file(rel)
    if os.environ.get("TRACEVIEW_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    assert path.is_file(), f"no golden for {rel}: record it (see the module docstring)"
    assert doc == orjson.loads(path.read_bytes()), f"summary of {rel} changed; if intended, regenerate"
