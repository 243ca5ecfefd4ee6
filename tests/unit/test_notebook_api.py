"""The notebook API: `Trace.plot` figures carry the numbers of the Trace's frames (converted to ms),
the timeline draws exactly the tasks of its window and bins beyond the raw-task limit, figures are
returned and never shown, `Trace._repr_html_` escapes trace text, `import traceview` + `load` do not
import plotly until `.plot` is used, and examples/quickstart.ipynb runs top to bottom in-process.

This file holds the topic's unit tests; the others are in tests/integration/test_notebook_api.py.
"""

from __future__ import annotations

import html
import json

import plotly.graph_objects as go
import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, SAMPLES, timeline_segments
from tests.support.notebook_api_shared import NOTEBOOK, never_shown  # noqa: F401 - never_shown is autouse
from traceview.analysis import timeline as tl
from traceview.dashboards import timeline_page
from traceview.dashboards.colors import CLASS_COLORS
from traceview.dashboards.timeline_page import X_TITLE, hover_safe

HOSTILE = "</script><img src=x onerror=alert(1)>"


HOSTILE_DIR = "<img src=x onerror=alert(2)>"  # a folder name may hold anything but "/"


MS = 1e-6  # summary values are rounded to the ns: 1e-6 ms


@pytest.fixture(scope="module")
def dp4(tmp_path_factory):
    return tv.load(SAMPLES / "dp4_nccl", cache_dir=tmp_path_factory.mktemp("cache"))


def by_meta(fig, meta):
    (trace,) = [t for t in fig.data if t.meta == meta]
    return trace


def ms(us: list[float]) -> list[float]:
    return [v / 1000 for v in us]


ALL_PLOTS = {
    "step_breakdown": {},
    "step_time": {},
    "heatmap": {},
    "compute_classes": {},
    "kernels": {"top": 5},
    "timeline": {"ranks": 0, "start_ms": 50, "end_ms": 52},
}


@pytest.mark.parametrize("method", ALL_PLOTS)
def test_each_plot_is_a_titled_figure_with_ms_units(dp4, method):
    fig = getattr(dp4.plot, method)(**ALL_PLOTS[method])
    assert isinstance(fig, go.Figure) and fig.data
    assert fig.layout.title.text
    axis_titles = [fig.layout.xaxis.title.text, fig.layout.yaxis.title.text]
    colorbars = [t.colorbar.title.text for t in fig.data if isinstance(t, go.Heatmap)]
    assert all(axis_titles), axis_titles
    assert any("ms" in str(t) for t in axis_titles + colorbars) or colorbars == ["vs median (%)"]


def test_step_breakdown_bars_are_the_step_breakdown_frame_in_ms(dp4):
    frame = dp4.step_breakdown().sort("rank", "step")
    assert frame.height == 12  # 4 ranks x 3 steps
    fig = dp4.plot.step_breakdown()
    ranks, steps = (list(level) for level in by_meta(fig, "free").x)
    assert ranks == [f"rank {r}" for r in frame["rank"]] and steps == [f"step {s}" for s in frame["step"]]
    for term in ("overlapped", "communication_not_overlapped", "exposed_memcpy", "free"):
        assert list(by_meta(fig, term).y) == pytest.approx(ms(frame[f"{term}_us"].to_list()), abs=MS)
    computing = (frame["computing_us"] - frame["overlapped_us"]).to_list()
    assert list(by_meta(fig, "computing").y) == pytest.approx(ms(computing), abs=MS)
    # the stack is the busy span: last busy end - first busy start
    busy_span = ((frame["last_busy_ns"] - frame["first_busy_ns"]) / 1e6).to_list()
    terms = ("computing", "overlapped", "communication_not_overlapped", "exposed_memcpy", "free")
    stacked = [sum(v) for v in zip(*(by_meta(fig, t).y for t in terms))]
    assert stacked == pytest.approx(busy_span, abs=5 * MS)


def test_step_breakdown_filters_ranks_and_steps(dp4):
    fig = dp4.plot.step_breakdown(ranks=[3, 1], steps=4)
    frame = dp4.step_breakdown().filter(pl.col("rank").is_in([1, 3]) & (pl.col("step") == 4)).sort("rank")
    assert [list(level) for level in by_meta(fig, "free").x] == [["rank 1", "rank 3"], ["step 4", "step 4"]]
    assert list(by_meta(fig, "communication_not_overlapped").y) == pytest.approx(
        ms(frame["communication_not_overlapped_us"].to_list()), abs=MS
    )


def test_step_time_lines_and_heatmap_are_the_step_durations(dp4):
    frame = dp4.step_breakdown().sort("rank", "step")
    lines = dp4.plot.step_time()
    heat = dp4.plot.heatmap()
    (hm,) = heat.data
    assert list(hm.y) == ["0", "1", "2", "3"] and list(hm.x) == ["3", "4", "5"]
    for i, rank in enumerate(range(4)):
        rows = frame.filter(pl.col("rank") == rank)
        line = by_meta(lines, rank)
        assert list(line.x) == rows["step"].to_list()
        assert list(line.y) == pytest.approx(ms(rows["duration_us"].to_list()), abs=MS)
        assert list(hm.customdata[i]) == pytest.approx(ms(rows["duration_us"].to_list()), abs=MS)
    slow = dp4.long_steps()
    assert any(t.meta == "long_step" for t in lines.data) == (slow.height > 0)
    assert [t.meta for t in dp4.plot.step_time(ranks=2).data if t.meta != "long_step"] == [2]


def test_compute_class_bars_are_the_compute_classes_frame_in_ms(dp4):
    frame = dp4.compute_classes()
    fig = dp4.plot.compute_classes()
    assert {t.meta for t in fig.data} == set(frame["class"])
    for bar in fig.data:
        want = [
            frame.filter((pl.col("rank") == r) & (pl.col("class") == bar.meta))["time_us"].sum() / 1000
            for r in range(4)
        ]
        assert list(bar.y) == pytest.approx(want, abs=MS)
        assert bar.marker.color == CLASS_COLORS[bar.meta]
    assert list(dp4.plot.compute_classes(ranks=1).data[0].x) == ["rank 1"]


def bars_by_label(fig) -> dict[str, float]:
    return {label: x for bar in fig.data for label, x in zip(bar.y, bar.x)}


def test_kernel_bars_are_the_top_kernels_frame_in_ms(dp4):
    top = dp4.top_kernels(5, by=())
    fig = dp4.plot.kernels(top=5)
    labels = list(fig.layout.yaxis.categoryarray)
    assert len(labels) == 5 and len(set(labels)) == 5
    drawn = bars_by_label(fig)
    assert [drawn[label] for label in labels] == pytest.approx(ms(top["total_us"].to_list()), abs=MS)
    for label, name in zip(labels, top["name"]):
        assert label.startswith(hover_safe(f"{labels.index(label) + 1}. {name[:20]}"))
    for bar in fig.data:
        assert bar.marker.color == CLASS_COLORS[bar.meta]
        assert [top["class"][labels.index(label)] for label in bar.y] == [bar.meta] * len(bar.y)
    # one rank: that rank's own top kernels (Trace.top_kernels per rank)
    rank1 = dp4.top_kernels(3).filter(pl.col("rank") == 1)
    fig1 = dp4.plot.kernels(top=3, ranks=1)
    assert [bars_by_label(fig1)[label] for label in fig1.layout.yaxis.categoryarray] == pytest.approx(
        ms(rank1["total_us"].to_list()), abs=MS
    )


def drawn_tasks(fig) -> list[tuple[str, float, float]]:
    """(lane label, start ms, end ms) of every task segment drawn in a raw timeline figure."""
    out = []
    for trace in fig.data:
        assert isinstance(trace, go.Scattergl)
        out += [(lane, round(a, 9), round(b, 9)) for lane, a, b in timeline_segments(trace)]
    return sorted(out)


def expected_tasks(trace, ranks, lo_ns, hi_ns) -> list[tuple[str, float, float]]:
    """The device tasks overlapping [lo, hi) (timeline rule), computed here from the frame."""
    tasks = trace.device_tasks
    t0 = tasks["start_ns"].min()
    hit = tasks.filter(
        pl.col("rank").is_in(ranks)
        & (pl.col("start_ns") < hi_ns)
        & ((pl.col("end_ns") > lo_ns) | ((pl.col("end_ns") == pl.col("start_ns")) & (pl.col("start_ns") >= lo_ns)))
    )
    return sorted(
        (f"rank {r} · stream {s}", round((a - t0) / 1e6, 9), round((b - t0) / 1e6, 9))
        for r, s, a, b in hit.select("rank", "stream", "start_ns", "end_ns").iter_rows()
    )


def test_timeline_narrow_window_draws_exactly_its_tasks(dp4):
    fig = dp4.plot.timeline(ranks=[0, 2], start_ms=50, end_ms=52)
    t0 = dp4.device_tasks["start_ns"].min()
    want = expected_tasks(dp4, [0, 2], t0 + 50_000_000, t0 + 52_000_000)
    assert 0 < len(want) < dp4.device_tasks.height
    assert drawn_tasks(fig) == want
    assert list(fig.layout.xaxis.range) == pytest.approx([50, 52])
    assert fig.layout.xaxis.title.text == X_TITLE
    assert fig.layout.meta["mode"] == "raw" and f"{len(want):,} tasks" in fig.layout.title.text
    assert {label.split(" · ")[0] for label in fig.layout.yaxis.categoryarray} == {"rank 0", "rank 2"}


def test_timeline_window_in_ns_is_absolute_and_in_ms_relative(dp4):
    t0 = int(dp4.device_tasks["start_ns"].min())
    lo, hi = t0 + 50_000_000, t0 + 52_000_000
    by_ns = dp4.plot.timeline(ranks=[0, 2], start_ns=lo, end_ns=hi)
    assert drawn_tasks(by_ns) == drawn_tasks(dp4.plot.timeline(ranks=[0, 2], start_ms=50, end_ms=52))
    assert by_ns.layout.meta["start_ns"] == lo and by_ns.layout.meta["end_ns"] == hi
    assert by_ns.layout.meta["t0_ns"] == t0
    # a single bound: the other runs to the trace's edge
    tail = dp4.plot.timeline(ranks=1, start_ms=150)
    end = int(dp4.device_tasks["end_ns"].max())
    assert drawn_tasks(tail) == expected_tasks(dp4, [1], t0 + 150_000_000, end)


def test_timeline_step_window_is_the_steps_device_window(dp4):
    steps = dp4.steps.filter((pl.col("step") == 4) & pl.col("rank").is_in([0, 1]))
    lo, hi = int(steps["device_start_ns"].min()), int(steps["device_end_ns"].max())
    fig = dp4.plot.timeline(ranks=[0, 1], step=4)
    assert (fig.layout.meta["start_ns"], fig.layout.meta["end_ns"]) == (lo, hi)
    assert drawn_tasks(fig) == expected_tasks(dp4, [0, 1], lo, hi)


def test_timeline_raw_up_to_the_limit_then_binned(dp4, monkeypatch):
    t0 = int(dp4.device_tasks["start_ns"].min())
    lo, hi = t0 + 40_000_000, t0 + 60_000_000
    n = len(expected_tasks(dp4, [0, 1, 2, 3], lo, hi))
    assert n > 10
    monkeypatch.setattr(timeline_page, "LIMIT", n)
    at_limit = dp4.plot.timeline(start_ns=lo, end_ns=hi)
    assert at_limit.layout.meta["mode"] == "raw" and len(drawn_tasks(at_limit)) == n
    monkeypatch.setattr(timeline_page, "LIMIT", n - 1)
    over = dp4.plot.timeline(start_ns=lo, end_ns=hi)
    assert over.layout.meta["mode"] == "binned" and "binned" in over.layout.title.text
    assert not any(isinstance(t, go.Scattergl) for t in over.data)
    # the whole trace binned: each lane's busy fraction x bin width adds up to the lane's busy time
    monkeypatch.setattr(timeline_page, "LIMIT", 100)
    whole = dp4.plot.timeline()
    (heat,) = whole.data
    assert isinstance(heat, go.Heatmap) and whole.layout.meta["mode"] == "binned"
    bin_ms = (whole.layout.meta["end_ns"] - whole.layout.meta["start_ns"]) / len(heat.x) / 1e6
    lanes = tl.lanes(dp4.device_tasks)
    assert list(heat.y) == lanes["label"].to_list()
    assert [sum(row) * bin_ms for row in heat.z] == pytest.approx(ms(lanes["busy_us"].to_list()), abs=1e-3)


def test_bad_arguments_say_what_is_wrong(dp4):
    with pytest.raises(ValueError, match=r"no rank 9 .*ranks: 0, 1, 2, 3"):
        dp4.plot.step_breakdown(ranks=9)
    with pytest.raises(ValueError, match=r"no step 99 .*steps: 3, 4, 5"):
        dp4.plot.heatmap(steps=[4, 99])
    with pytest.raises(ValueError, match="not both"):
        dp4.plot.timeline(start_ms=1, start_ns=1)
    with pytest.raises(ValueError, match="not both"):
        dp4.plot.timeline(step=4, end_ms=3)
    with pytest.raises(ValueError, match="must be after start"):
        dp4.plot.timeline(start_ms=5, end_ms=5)
    with pytest.raises(ValueError, match="step 99"):
        dp4.plot.timeline(step=99)


def test_repr_html_summarises_the_trace(dp4):
    page = dp4._repr_html_()
    info = dp4.info()
    for text in (
        "sample_traces",
        "4 (0–3)",
        "NVIDIA H100 80GB HBM3",
        "kineto",
        "1,608",
        "3 (3–5)",
        f"{info['span_us'].max() / 1000:,.3f} ms",
    ):
        assert text in page, text
    assert page.startswith("<table") and page.endswith("</table>")
    assert "<Trace " in repr(dp4)


@pytest.fixture
def hostile_trace(tmp_path):
    """A Kineto trace whose kernel name, device name and folder name are markup, with a dropped
    event so that a warning names the (hostile) file."""
    doc = json.loads((DATA / "kineto_minimal.json").read_text())
    doc["deviceProperties"][0]["name"] = HOSTILE
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"].startswith("sm90"):
            event["name"] = HOSTILE
            broken = {k: v for k, v in event.items() if k != "dur"}
    doc["traceEvents"].append(broken)
    folder = tmp_path / HOSTILE_DIR
    folder.mkdir()
    (folder / "rank0.pt.trace.json").write_text(json.dumps(doc))
    trace = tv.load(folder, use_cache=False)
    assert trace.warnings and HOSTILE_DIR in trace.warnings[0]
    return trace


def test_repr_html_escapes_trace_text(hostile_trace):
    page = hostile_trace._repr_html_()
    assert "<img" not in page and "<script" not in page.lower() and "</script" not in page.lower()
    assert html.escape(HOSTILE) in page  # the device name, as text
    assert page.count(html.escape(HOSTILE_DIR)) >= 2  # the source and the warning naming the file


def test_kernel_names_are_escaped_in_figures(hostile_trace):
    kernels = hostile_trace.plot.kernels()
    labels = list(kernels.layout.yaxis.categoryarray)
    hovers = [h for bar in kernels.data for h in bar.hovertext]
    assert any(html.escape(HOSTILE, quote=False) in h for h in labels + hovers)
    assert not any("<img" in h or "</script" in h for h in labels + hovers)
    timeline = hostile_trace.plot.timeline()
    texts = [h for trace in timeline.data for h in trace.hovertext if h]
    assert any(hover_safe(HOSTILE) in h for h in texts) and not any("<img" in h for h in texts)


def test_notebook_is_a_clean_nbformat_v4_notebook():
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4 and nb["metadata"]["kernelspec"]["language"] == "python"
    assert {c["cell_type"] for c in nb["cells"]} == {"code", "markdown"}
    for cell in nb["cells"]:
        assert isinstance(cell["source"], list) and isinstance(cell["metadata"], dict)
        if cell["cell_type"] == "code":  # committed without outputs
            assert cell["outputs"] == [] and cell["execution_count"] is None
