"""`traceview export --format perfetto`: a Chrome-trace JSON that Perfetto opens, with every rank,
the events, flows from launches to tasks, and traceview's iteration, terms, phases and findings as
tracks whose numbers equal the summary's."""

from __future__ import annotations

import orjson
import polars as pl
import pytest

import traceview as tv
from tests.conftest import SAMPLES, SHARED_TRACES, needs_shared, run_cli
from tests.support.samples import shared_sample
from traceview.analysis import iteration
from traceview.dashboards.perfetto import OVERLAYS, perfetto_json


def _export(trace) -> list[dict]:
    doc = orjson.loads(perfetto_json(trace))
    assert set(doc) == {"displayTimeUnit", "traceEvents"}
    return doc["traceEvents"]


def _check(trace, events: list[dict]) -> None:
    """Every rank a process; the overlay tracks on each rank with iterations; device task time and
    the iteration terms per step equal traceview's own numbers (to the ns: ts/dur are exact)."""
    for e in events:
        assert e["ph"] in {"M", "X", "s", "f", "i"} and isinstance(e["ts"], (int, float)), e
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    ranks = trace.ranks["rank"].to_list()
    assert len(names) == len(ranks)
    assert [names[i].split(" · ")[0] for i in range(len(ranks))] == [f"rank {r}" for r in ranks]
    pid = {r: i for i, r in enumerate(ranks)}
    frame = pl.DataFrame([e for e in events if e["ph"] == "X"], infer_schema_length=None)
    device = frame.filter(pl.col("tid") < OVERLAYS["iteration"]).filter(pl.col("tid") >= 999_999_999)
    want = trace.device_tasks.group_by("rank").agg(pl.col("dur_ns").sum())
    for r, dur_ns in want.iter_rows():
        got = device.filter(pl.col("pid") == pid[r])["dur"].sum()
        assert got == pytest.approx(dur_ns / 1000, abs=1e-3 * max(1, want.height))
    its = trace.iteration_breakdown()
    tracks = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"}
    terms = frame.filter(pl.col("cat") == "term").with_columns(pl.col("args").struct.field("step").alias("step"))
    for row in its.to_dicts():
        assert all((pid[row["rank"]], track) in tracks for track in OVERLAYS)
        mine = terms.filter((pl.col("pid") == pid[row["rank"]]) & (pl.col("step") == row["step"]))
        for term in ("iteration_computing", "iteration_exposed_comm", "data_loading", "other_idle"):
            if row[f"{term}_us"] is None:
                continue
            got = mine.filter(pl.col("name") == iteration.LABELS[term])["dur"].sum()
            assert got == pytest.approx(row[f"{term}_us"], abs=1e-6 + 1e-3 * mine.height), (
                row["rank"],
                row["step"],
                term,
            )


@pytest.mark.parametrize("sample", ["dp4_nccl", "pp4_1f1b", "ascend_2rank", "cpu_single"])
def test_samples_export(sample):
    trace = shared_sample(sample)
    events = _export(trace)
    _check(trace, events)
    # a flow from every launch call to each task it launched
    starts = sum(e["ph"] == "s" for e in events)
    assert starts == sum(e["ph"] == "f" for e in events)
    if sample == "dp4_nccl":
        launched = trace.device_tasks.join(trace.launch_calls(), on=["rank", "correlation"], how="semi").height
        assert starts == launched > 0
        assert any(e["ph"] == "i" and e["name"].startswith("finding: ") for e in events)


def test_times_are_exact_on_epoch_clocks():
    """Ascend's epoch µs (1.7e15, parsed exactly from their decimal text): a float64 would round
    them to 0.25 µs; the export prints the parsed ns."""
    trace = shared_sample("ascend_2rank")
    text = perfetto_json(trace).decode()
    for row in trace.device_tasks.head(50).iter_rows(named=True):
        ns, dur = row["start_ns"], row["dur_ns"]
        assert f'"ts":{ns // 1000}.{ns % 1000:03d},"dur":{dur // 1000}.{dur % 1000:03d}' in text


def test_names_stay_what_they_were(tmp_path):
    path = tmp_path / "t.pt.trace.json"
    name = 'a "quoted"\nname </script> \u202e'
    path.write_text(
        orjson.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": name,
                        "pid": 1,
                        "tid": 7,
                        "ts": 10.5,
                        "dur": 2,
                        "args": {"stream": 7},
                    }
                ]
            }
        ).decode()
    )
    kernel = next(e for e in _export(tv.load(path, use_cache=False)) if e.get("cat") == "kernel")
    assert kernel["name"] == name


@pytest.mark.integration
def test_cli_export_writes_and_refuses(tmp_path):
    cli = run_cli
    out = tmp_path / "p.json"
    result = cli("export", str(SAMPLES / "pp4_1f1b"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert orjson.loads(out.read_bytes())["traceEvents"]
    again = cli("export", str(SAMPLES / "pp4_1f1b"), "-o", str(out))
    assert again.returncode == 1 and "--force" in again.stderr and "Traceback" not in again.stderr
    folder = cli("export", str(SAMPLES / "pp4_1f1b"), "-o", str(tmp_path))
    assert folder.returncode == 1 and "is a folder" in folder.stderr
    assert cli("export", str(SAMPLES / "pp4_1f1b"), "-o", str(out), "--force").returncode == 0


@needs_shared
@pytest.mark.parametrize(
    "rel",
    [
        "hta/tests/data/nccl_parser_config/nccl_data.json.gz",
        "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt",
        "tracelens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    ],
)
def test_real_profiles_export(rel):
    trace = tv.load(SHARED_TRACES / rel, use_cache=False)
    _check(trace, _export(trace))


@pytest.mark.integration
def test_the_dashboard_downloads_the_export():
    """`traceview serve`'s "Perfetto JSON" link: the same document as `traceview export`, as an
    attachment named after the profile; no other /download path is served."""
    from traceview.dashboards.app import PERFETTO_PATH, create_app
    from traceview.summary import build_summary

    trace = shared_sample("pp4_1f1b")
    app = create_app(trace, build_summary(trace, details=False))
    client = app.server.test_client()
    host = {"Host": "127.0.0.1:8050"}
    got = client.get(PERFETTO_PATH, headers=host)
    assert got.status_code == 200
    assert got.headers["Content-Disposition"] == 'attachment; filename="pp4_1f1b.perfetto.json"'
    assert got.data == perfetto_json(trace)
    assert b"nav-perfetto" in client.get("/_dash-layout", headers=host).data
    assert client.get("/download/other.json", headers=host).status_code == 404
