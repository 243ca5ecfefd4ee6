"""The canonical schema: docs/schema.md is generated from it, and conform() enforces it."""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import ROOT
from traceview import schema


def test_docs_schema_is_up_to_date():
    assert (ROOT / "docs" / "schema.md").read_text(encoding="utf-8") == schema.markdown(), (
        "docs/schema.md is stale: run `python -m traceview.schema > docs/schema.md`"
    )


def test_columns_follow_naming_rules():
    for table, cols in schema.TABLES.items():
        for col, (dtype, doc) in cols.items():
            assert col == col.lower() and " " not in col, (table, col)
            assert doc.strip(), (table, col)
            if col.endswith("_ns"):
                assert dtype == pl.Int64, (table, col)  # timestamps are Int64 ns everywhere


def test_conform_adds_missing_columns_as_null_and_orders():
    df = pl.DataFrame({"name": ["k"], "start_ns": [5], "extra": [1]})
    out = schema.conform(df, "device_tasks")
    assert out.columns == list(schema.DEVICE_TASKS)
    assert out["end_ns"].to_list() == [None] and out["name"].to_list() == ["k"]


def test_conform_is_strict_about_wrong_types():
    with pytest.raises(pl.exceptions.InvalidOperationError):
        schema.conform(pl.DataFrame({"start_ns": ["not a number"]}), "device_tasks")
