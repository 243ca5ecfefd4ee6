"""The typed summary document (`traceview.summary_doc`): every document `build_summary` gives, with
every option, matches the declaration; the shipped samples' recorded goldens match it (the
corpus' goldens are narrow: tests/corpus/test_corpus_goldens.py checks each live corpus document instead); the published JSON Schema is current; a key the declaration lacks, or one it
needs that is missing, fails with the path named."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import msgspec
import polars as pl
import pytest

import traceview as tv
from tests.conftest import ROOT
from traceview import summary_doc, summary_rows
from traceview.analysis import findings, roofline, throughput, what_if
from traceview.summary import build_summary

SAMPLES = ROOT / "sample_traces"
GOLDENS = sorted((ROOT / "tests" / "golden").glob("*.json"))
SCHEMA_FILE = ROOT / "docs" / "summary.schema.json"
MODEL = {"layers": 4, "hidden": 1024, "heads": 8, "seq": 1024, "micro_batch": 1, "device": "H100"}


def _fields(struct) -> set[str]:
    return {f.encode_name for f in msgspec.structs.fields(struct)}


@pytest.fixture(scope="module")
def traces() -> dict[str, tv.Trace]:
    return {
        p.name: tv.load(p, use_cache=False) for p in sorted(SAMPLES.iterdir()) if p.is_dir() and p.name != "samplegen"
    }


def test_every_sample_document_matches_the_declaration_with_every_option(traces):
    """Plain, one step, without details, with throughput (and the traced estimate beside it), the
    pipeline's micro-batches and the analytical model: each document converts, key for key."""
    assert len(traces) >= 4
    for name, trace in traces.items():
        step = int(trace.steps["step"].min()) if trace.steps.height else None
        options = [
            {},
            {"details": False},
            {"throughput": {"tokens_per_step": 4096, "params": 1e9}, "micro_batches": 4},
            {"step": step},
        ]
        if trace.ranks["device_name"].drop_nulls().len():
            options.append({"model_config": dict(MODEL)})
        for given in options:
            doc = build_summary(trace, **given)
            typed = summary_doc.document(doc)
            assert msgspec.to_builtins(typed) == json.loads(json.dumps(doc)), (name, given)
            if "throughput" in given:
                assert typed.throughput and typed.headline.mfu_formula, name
            if "model_config" in given:
                assert typed.expected is not None and typed.expected.terms, name


@pytest.mark.parametrize("path", GOLDENS, ids=[p.name for p in GOLDENS])
def test_every_recorded_golden_matches_the_declaration(path):
    summary_doc.document(json.loads(path.read_text()))


def test_the_published_schema_is_current():
    """docs/summary.schema.json is `summary_doc.json_schema()`; TRACEVIEW_UPDATE_GOLDEN=1 rewrites it."""
    text = json.dumps(summary_doc.json_schema(), indent=2, sort_keys=True) + "\n"
    if os.environ.get("TRACEVIEW_UPDATE_GOLDEN"):
        SCHEMA_FILE.write_text(text)
    assert SCHEMA_FILE.read_text() == text, "regenerate docs/summary.schema.json (see this test's docstring)"
    schema = json.loads(text)
    assert schema["$ref"] == "#/$defs/Summary"
    assert "communication_not_overlapped_us" in schema["$defs"]["StepRow"]["properties"]


def test_an_undeclared_or_missing_key_fails_naming_its_path(traces):
    doc = build_summary(traces["dp4_nccl"])
    added = copy.deepcopy(doc)
    added["ranks"][1]["steps"][0]["new_number_us"] = 1.0
    with pytest.raises(
        msgspec.ValidationError, match=r"Object contains unknown field `new_number_us` - at `\$.ranks\[1\].steps\[0\]`"
    ):
        summary_doc.document(added)
    missing = copy.deepcopy(doc)
    del missing["headline"]["mean_step_us"]
    with pytest.raises(msgspec.ValidationError, match=r"missing required field `mean_step_us` - at `\$.headline`"):
        summary_doc.document(missing)
    retyped = copy.deepcopy(doc)
    retyped["ranks"][0]["rank"] = "0"
    with pytest.raises(msgspec.ValidationError, match=r"Expected `int`, got `str` - at `\$.ranks\[0\].rank`"):
        summary_doc.document(retyped)


@pytest.mark.parametrize(
    "struct, schema, extra",
    [
        (
            summary_doc.ThroughputRow,
            throughput.THROUGHPUT_SCHEMA,
            {"traced_tflops_per_device", "traced_mfu_frac", "flops_coverage_frac", "traced_note", "traced_formula"},
        ),
        (summary_doc.WhatIfRow, what_if.SCHEMA, set()),
        (summary_doc.FindingRow, findings.FINDINGS_SCHEMA, set()),
    ],
)
def test_rows_copied_from_an_analysis_declare_its_columns(struct, schema: pl.Schema, extra):
    """A row that is an analysis' frame row declares that frame's columns (and only the ones the
    summary adds), so the two cannot drift apart."""
    assert _fields(struct) == set(schema.names()) | extra


def test_the_roofline_rows_declare_the_roofline_columns_the_summary_keeps():
    kept = _fields(summary_rows.RooflineRow)
    assert kept <= set(roofline.ROOFLINE_SCHEMA.names()) | {"gflop", "bytes", "count"}, kept - set(
        roofline.ROOFLINE_SCHEMA.names()
    )


def test_the_document_is_in_the_docs():
    text = (ROOT / "docs" / "api.md").read_text()
    assert "docs/summary.schema.json" in text or "summary.schema.json" in text
    assert Path(SCHEMA_FILE).is_file()


def test_the_term_rows_declare_the_summary_columns():
    """The step and whole-trace terms, the iteration and the stream idle rows hold the columns the
    summary writes (`traceview.summary`'s constants), no more, no fewer."""
    from traceview import summary

    assert _fields(summary_rows.TraceTerms) == set(summary.TERM_COLUMNS)
    iteration = {"step", "gap_before_us", "iteration_rule", *summary.ITERATION_COLUMNS}
    assert _fields(summary_rows.StepRow) == set(summary.TERM_COLUMNS) | iteration
    assert _fields(summary_rows.StreamIdleRow) == set(summary.STREAM_IDLE_COLUMNS) - {"rank"}
