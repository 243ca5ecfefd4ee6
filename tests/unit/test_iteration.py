"""The iteration (traceview.analysis.iteration): its window tiles the run, its terms add up exactly,
each instant counted once by the documented priority, and it reproduces the TensorBoard plugin's
Overview on the plugin's own resnet50 sample.

This file holds the topic's unit tests; the others are in tests/corpus/test_iteration.py.
"""

from __future__ import annotations

import shutil

import polars as pl
import pytest

import traceview as tv
from tests.conftest import ROOT
from tests.support.iteration import TERMS_US, check_identity_and_tiling
from tests.support.kineto import complete_event, write_trace
from tests.support.samples import shared_sample
from traceview.analysis import iteration, phases

SAMPLES = ROOT / "sample_traces"


def _x(cat, name, start_us, dur_us, tid=1, **args):
    return complete_event(
        cat,
        name,
        1 if cat in ("kernel", "gpu_memcpy") else 0,
        tid,
        round(start_us * 1000),
        round(dur_us * 1000),
        args or None,
    )


def _launch(start_us, corr, dur_us=2):
    return _x("cuda_runtime", "cudaLaunchKernel", start_us, dur_us, correlation=corr)


def _kernel(start_us, dur_us, corr, name="gemm"):
    return _x("kernel", name, start_us, dur_us, tid=7, correlation=corr, stream=7)


def _load(tmp_path, events):
    return tv.load(write_trace(tmp_path / "t.pt.trace.json", events), use_cache=False)


def _row(frame, step):
    return frame.filter(pl.col("step") == step).row(0, named=True)


def test_iterations_tile_the_run_and_extend_to_the_launched_device_work(tmp_path):
    """Step 1's kernel runs past its host end into step 2's host range: iteration 1 ends with the
    kernel and iteration 2 starts there (the plugin's rule), so the two tile [0, 250)."""
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _launch(10, 1),
        _kernel(20, 120, 1),  # ends at 140, past step 1's host end (100)
        _x("user_annotation", "ProfilerStep#2", 100, 100),
        _launch(150, 2),
        _kernel(160, 90, 2),  # ends at 250, past step 2's host end (200)
    ]
    it = _load(tmp_path, events).iteration_breakdown()
    one, two = _row(it, 1), _row(it, 2)
    assert (one["iteration_start_ns"], one["iteration_end_ns"]) == (0, 140_000)
    assert (two["iteration_start_ns"], two["iteration_end_ns"]) == (140_000, 250_000)
    assert one["iteration_rule"] == two["iteration_rule"] == "host_launched"
    assert one["iteration_us"] + two["iteration_us"] == 250.0


def test_each_instant_goes_to_the_first_term_that_holds(tmp_path):
    """Priority: device busy > runtime > data loading > framework > other idle."""
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 1000),
        # data loading 0-400, a runtime call inside it at 100-110 (runtime wins)
        _x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 400),
        _x("cuda_runtime", "cudaMemcpyAsync", 100, 10),
        # framework op 400-600 with a launch at 500-502; its kernel runs 550-700 (device wins)
        _x("cpu_op", "aten::mm", 400, 200),
        _launch(500, 1),
        _kernel(550, 150, 1),
        # 700-1000: nothing on the host or the device (other idle)
    ]
    row = _row(_load(tmp_path, events).iteration_breakdown(), 1)
    assert row["iteration_us"] == 1000.0
    assert row["iteration_computing_us"] == 150.0  # 550-700
    assert row["host_runtime_us"] == 10.0 + 2.0  # 100-110 and the launch 500-502
    assert row["data_loading_us"] == 400.0 - 10.0
    assert row["host_framework_us"] == 550.0 - 400.0 - 2.0  # 400-550 without the launch
    assert row["host_overhead_us"] == row["host_runtime_us"] + row["host_framework_us"]
    assert row["other_idle_us"] == 300.0  # 700-1000
    assert sum(row[c] for c in TERMS_US) == row["iteration_us"]


def test_communication_and_memcpy_are_device_terms_of_the_iteration(tmp_path):
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _launch(1, 1),
        _kernel(10, 40, 1),  # 10-50 compute
        _launch(2, 2),
        _kernel(30, 40, 2, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL"),  # 30-70: 50-70 exposed
        _x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 65, 15, tid=8, correlation=3, stream=8),  # 70-80 exposed
        _launch(3, 3),
    ]
    row = _row(_load(tmp_path, events).iteration_breakdown(), 1)
    assert (row["iteration_computing_us"], row["iteration_exposed_comm_us"], row["iteration_exposed_memcpy_us"]) == (
        40.0,
        20.0,
        10.0,
    )


def test_a_rank_without_host_events_has_null_host_terms(tmp_path):
    """An Ascend rank with kernel_details.csv only: steps from its Step Id, no host events. The
    iteration is the device window (tiled), the host terms are unknown (null), not zero, and all
    device idle time is other idle."""
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(SAMPLES / "ascend_2rank/rank0_ascend_pt", rank)
    (rank / "ASCEND_PROFILER_OUTPUT/trace_view.json").unlink()
    trace = tv.load(rank, use_cache=False)
    assert trace.host_events.height == 0
    frame = trace.iteration_breakdown()
    assert frame.height == trace.steps.height > 0
    assert set(frame["iteration_rule"]) == {"device_window"}
    for row in frame.iter_rows(named=True):
        assert row["data_loading_us"] is None and row["host_overhead_us"] is None
        device = row["iteration_computing_us"] + row["iteration_exposed_comm_us"] + row["iteration_exposed_memcpy_us"]
        assert row["other_idle_us"] == pytest.approx(row["iteration_us"] - device, abs=1e-6)
    first = trace.headline().row(0, named=True)
    assert first["data_loading_frac"] is None and first["host_overhead_frac"] is None


@pytest.mark.parametrize("sample", ["dp4_nccl", "pp4_1f1b", "ascend_2rank", "cpu_single"])
def test_identity_and_tiling_on_every_sample(sample):
    trace = shared_sample(sample)
    frame = trace.iteration_breakdown()
    assert frame.height > 0
    check_identity_and_tiling(frame, sample)
    # the host-launched rule wherever launches are recorded
    if trace.ranks["format"][0] == "kineto" and trace.device_tasks.height:
        assert set(frame["iteration_rule"]) == {"host_launched"}


def test_input_bound_stays_quiet_without_data_loading():
    for sample in ("dp4_nccl", "pp4_1f1b", "ascend_2rank"):
        found = shared_sample(sample).findings()
        assert "input_bound" not in set(found["rule"]), sample


def test_input_bound_fires_on_a_data_loader_that_keeps_the_device_idle(tmp_path):
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 10_000),
        _x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 2_000),
        _launch(3_000, 1),
        _kernel(3_010, 6_990, 1),
    ]
    fired = _load(tmp_path, events).findings().filter(pl.col("rule") == "input_bound")
    assert fired.height == 1
    assert fired["value"][0] == pytest.approx(0.2)
    assert fired["severity"][0] == "warning"


def _training_run(path, data_loading_us: float, steps: int = 4):
    """A generated run: each step loads data (the device idle), launches 20 kernels of 400 µs and
    runs a 200 µs optimizer op; only the data loading time differs between two runs."""
    events, t, corr = [], 0.0, 0
    for step in range(1, steps + 1):
        start = t
        events.append(
            _x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, data_loading_us)
        )
        t += data_loading_us
        device = t + 20
        for _ in range(20):
            corr += 1
            events.append(_x("cpu_op", "aten::mm", t, 8))
            events.append(_launch(t + 1, corr, 5))
            events.append(_kernel(max(device, t + 10), 400, corr))
            device = max(device, t + 10) + 400
            t += 10
        t = device
        events.append(_x("cpu_op", "Optimizer.step#AdamW.step", t, 200))
        t += 200
        events.append(_x("user_annotation", f"ProfilerStep#{step}", start, t - start))
    return write_trace(path, events)


def test_diff_attributes_a_data_loading_change_to_data_loading(tmp_path):
    """Two runs that differ only in data loading (20 ms -> 5 ms per step): the iteration change is
    attributed to data loading (at least 90 %), in the API and in the CLI's first line."""
    base = _training_run(tmp_path / "base.pt.trace.json", 20_000)
    new = _training_run(tmp_path / "new.pt.trace.json", 5_000)
    result = tv.diff(base, new)
    rows = {r["term"]: r for r in result.iteration.filter(pl.col("rank").is_null()).to_dicts()}
    assert rows["iteration"]["delta_us"] == pytest.approx(-15_000, abs=1)
    assert rows["data_loading"]["share_of_change"] >= 0.9
    # the terms add up to the iteration, and so do the wall-time phases: each set's shares add up to 1
    assert sum(rows[t]["share_of_change"] for t in iteration.TERMS) == pytest.approx(1.0)
    assert sum(rows[c]["share_of_change"] for c in phases.WALL_COLUMNS) == pytest.approx(1.0)
    from traceview.cli.diff import diff_text

    text = diff_text(result.to_dict(10))
    lead = next(line for line in text.splitlines() if line.startswith("Iteration"))
    assert "-15.000 ms" in lead and lead.split(": ", 1)[1].startswith("data loading -15.000 ms (100 % of the change)")


def test_the_headline_leads_the_summary_the_report_and_the_dashboard(tmp_path):
    """One wording (traceview.summary_text.headline_lines) first in every view: the summary text's first
    lines, the report's first section and the top of the dashboard's overview."""
    from traceview.cli.summary import summary_text
    from traceview.dashboards.overview import overview_layout
    from traceview.dashboards.report import report_html
    from traceview.dashboards.state import DashboardState
    from traceview.summary import build_summary
    from traceview.summary_text import headline_lines

    trace = tv.load(_training_run(tmp_path / "run.pt.trace.json", 20_000), use_cache=False)
    doc = build_summary(trace)
    lines = headline_lines(doc["headline"])
    assert lines[0].startswith("Iteration: ") and "data loading" in " ".join(lines)
    assert f"{doc['headline']['mean_iteration_us'] / 1000:,.3f} ms" in lines[0]
    text = summary_text(doc).splitlines()
    assert text[1 : 1 + len(lines)] == lines
    page = report_html(trace, doc)
    assert page.index('id="iteration"') < page.index('id="findings"')
    assert "data loading" in page[page.index('id="headline"') :][:2000]
    layout = overview_layout(DashboardState(trace=trace, summary=doc))
    cards, first = layout.children[:2]  # the headline's stat cards, then its sentence
    assert cards.id == "headline-cards" and cards.children[0].id == "card-iteration"
    assert first.id == "headline" and [p.children for p in first.children] == [line.strip() for line in lines]


def test_device_work_belongs_to_the_host_step_that_launched_it(tmp_path):
    """A kernel launched in host step 1 that runs inside step 2's GPU annotation still extends
    iteration 1 (the launch decides, not the task's device-window step), and an iteration that
    ends where the previous one did is empty, not a window that swallows the next one."""
    gpu = "gpu_user_annotation"
    events = [
        _x("user_annotation", "ProfilerStep#1", 0, 10),
        _x("user_annotation", "ProfilerStep#2", 10, 10),
        _launch(8, 1),
        _kernel(30, 20, 1),  # launched in host step 1, runs 30-50
        _launch(12, 2),
        _kernel(50, 5, 2),  # launched in host step 2, runs 50-55
        _x(gpu, "ProfilerStep#1", 0, 30, tid=7),
        _x(gpu, "ProfilerStep#2", 30, 25, tid=7),  # holds both kernels
    ]
    trace = _load(tmp_path, events)
    assert set(trace.steps["window_rule"]) == {"gpu_annotation"}
    it = trace.iteration_breakdown()
    one, two = _row(it, 1), _row(it, 2)
    assert (one["iteration_start_ns"], one["iteration_end_ns"]) == (0, 50_000)
    assert (two["iteration_start_ns"], two["iteration_end_ns"]) == (50_000, 55_000)
    assert one["iteration_computing_us"] == 20.0 and two["iteration_computing_us"] == 5.0
    check_identity_and_tiling(it, "annotated")


def test_a_change_too_small_to_attribute_has_no_shares(tmp_path):
    """Two runs whose iterations differ by less than 0.5 %: the deltas are shown, the shares are
    null (a near-zero denominator would print -50,000 %), and the headline names no term."""
    from traceview.run_diff import iteration_headline

    base = _training_run(tmp_path / "base.pt.trace.json", 20_000)
    new = _training_run(tmp_path / "new.pt.trace.json", 20_010)
    result = tv.diff(base, new)
    rows = result.iteration.filter(pl.col("rank").is_null())
    assert rows.filter(pl.col("term") == "iteration")["delta_us"][0] == pytest.approx(10, abs=0.01)
    assert rows["share_of_change"].null_count() == rows.height
    assert "% of the change" not in iteration_headline(result.to_dict())
