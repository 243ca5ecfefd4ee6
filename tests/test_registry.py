"""The analysis registry (traceview/registry.py): one row per analysis, memo keys that accept any
parameter value, warnings that do not depend on what was called first."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import DATA, SAMPLES
from traceview import per_rank, registry
from traceview.trace import Trace


@pytest.fixture(scope="module")
def dp4():
    return tv.load(SAMPLES / "dp4_nccl", use_cache=False)


def test_every_trace_method_is_a_registry_row():
    """What a Trace offers and what the registry lists are the same set (no analysis outside it)."""
    offered = {
        name
        for name, value in vars(Trace).items()
        if callable(value)
        and not name.startswith("_")
        and name not in {"frame", "select_steps", "run", "memoised"}
        and name != "info"
    }
    internal = {"matched_collectives", "clock_offsets"}  # read through collectives() and warnings
    assert offered == set(registry.REGISTRY) - internal


@pytest.mark.parametrize("profile", ["dp4_nccl", "pp4_1f1b", "ascend_2rank"])
def test_each_row_declares_columns_its_output_has(profile):
    trace = tv.load(SAMPLES / profile, use_cache=False)
    for name, row in registry.REGISTRY.items():
        if row.defaults is registry.ANY_KEYWORDS:
            frame = trace.run(name, tokens_per_step=4096, params=1e9)
        else:
            frame = trace.run(name)
        if frame is None:  # clock_offsets: clocks agree
            assert name == "clock_offsets"
            continue
        assert set(row.keys) <= set(frame.columns), (name, row.keys, frame.columns)
    assert set(per_rank.ANALYSES) == {n for n, r in registry.REGISTRY.items() if r.scope == "rank"}


def test_lists_and_dicts_are_parameters_like_any_other(dp4):
    """by=['rank'] used to raise TypeError: unhashable type: 'list' in the memo."""
    as_list = dp4.compute_classes(by=["rank"])
    assert as_list is dp4.compute_classes(by=("rank",)) is dp4.compute_classes()
    by_stream = dp4.top_kernels(5, by=["rank", "stream"])
    assert by_stream.columns[:2] == ["rank", "stream"]
    assert by_stream.group_by("rank", "stream").len()["len"].max() <= 5
    assert_frame_equal(by_stream, dp4.top_kernels(5, by=("rank", "stream")))
    given = {"tokens_per_step": 131072, "params": [1e8][0], "recompute": False}
    first = dp4.findings(throughput=given)
    assert first is dp4.findings(throughput=dict(reversed(list(given.items()))))
    assert dp4.throughput(**given).height == dp4.steps["step"].n_unique()


def test_a_list_valued_analysis_argument_reaches_the_analysis(dp4):
    """A list inside a dict parameter is frozen for the key only; the analysis sees what was given
    (and answers for itself: the throughput analysis rejects a list seq_len with its own error)."""
    with pytest.raises(TypeError, match=r"seq_len must be a number, got \[1\]"):
        dp4.findings(throughput={"seq_len": [1], "global_batch": 8, "params": 1e8})


def test_unknown_parameter_is_a_type_error_naming_it(dp4):
    with pytest.raises(TypeError, match="'bogus'"):
        dp4.run("long_steps", bogus=1)


def test_freeze_makes_equal_values_equal_keys():
    assert registry.freeze([1, [2, 3]]) == registry.freeze((1, (2, 3)))
    assert registry.freeze({"b": 1, "a": [2]}) == registry.freeze({"a": (2,), "b": 1})
    assert registry.freeze({"a": 1}) != registry.freeze((("a", 1),))  # a dict is not a tuple of pairs
    hash(registry.freeze({"a": {1, 2}, "b": [{"c": None}]}))


def test_warnings_do_not_depend_on_call_order():
    """The clock-offset warning is derived from the collective matching, not appended by it."""
    skewed = DATA / "bad" / "clock_skew"
    before = tv.load(skewed, use_cache=False)
    first = before.warnings
    assert any("clocks disagree" in w for w in first)
    before.collectives()
    assert before.warnings == first
    after = tv.load(skewed, use_cache=False)
    after.collectives()
    after.stragglers()
    assert after.warnings == first
    assert not any("clocks" in w for w in after.load_warnings)
    # a step selection keeps the load warnings and derives its own
    chosen = after.select_steps(after.steps["step"].unique().sort().to_list()[:1])
    assert chosen.warnings.count(next(w for w in first if "clocks disagree" in w)) <= 1


def test_one_label_one_number_for_exposed_communication():
    """The summary's "exposed comm" (communication_not_overlapped), torch_npu's exclude-receive term and
    the findings' exposed communication outside pipeline transfers have a name each, in the facts
    and in the labels; on the pipeline sample (P2P kernels, no receive ops) the first two are one
    number (20-27 %: torch_npu's rule subtracts receive ops only) and the third is 0."""
    from traceview.analysis import breakdown, facts

    trace = tv.load(SAMPLES / "pp4_1f1b", use_cache=False)
    got = facts.facts(
        trace.step_breakdown(), trace.trace_breakdown(), trace.classified_tasks(), gpu_bubbles=trace.run("bubbles")
    ).sort("rank")
    per_rank = (
        trace.step_breakdown()
        .group_by("rank")
        .agg(
            (pl.col("communication_not_overlapped_us").sum() / pl.col("duration_us").sum()).alias("exposed"),
            (pl.col("communication_not_overlapped_exclude_receive_us").sum() / pl.col("duration_us").sum()).alias(
                "excl"
            ),
        )
        .sort("rank")
    )
    ranks = got.filter(pl.col("rank").is_not_null())
    assert ranks["exposed_comm_frac"].to_list() == pytest.approx(per_rank["exposed"].to_list(), rel=1e-9)
    assert per_rank["excl"].to_list() == pytest.approx(per_rank["exposed"].to_list(), rel=1e-12)
    assert min(per_rank["exposed"]) > 0.15 and max(ranks["exposed_comm_excl_p2p_frac"]) < 0.01
    labels = breakdown.TERM_LABELS
    assert len(set(labels.values())) == len(labels)  # no label names two terms
    assert labels["communication_not_overlapped_exclude_receive"] != labels["communication_not_overlapped"]
