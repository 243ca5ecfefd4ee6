"""The bad-input matrix: every command on every input of tests/data/bad/ (made by make_bad.py).

Fatal inputs: exit 1 and exactly one stderr line `traceview: error: cannot read <file>: <problem>
(<fix>)`, no traceback, nothing written, the dashboard never served. Recoverable inputs: exit 0,
each oddity counted once in the JSON `warnings` and on stderr, and every number of the good events
equal to the clean base's. A rank that is still being written: listed under failures, the other
ranks load, exit 1. What traceview does with each input, and why: docs/robustness.md.

The commands run in this process through click's CliRunner (a subprocess per run would take minutes
on a small machine); a few run as real subprocesses, and a hang fails the test (SIGALRM) instead of
blocking CI.
"""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import traceview as tv
from tests.conftest import DATA, ROOT
from tests.support.serve import serve
from traceview.cli.main import main

BAD = DATA / "bad"
TIMEOUT_S = 120


def _make_bad():
    spec = importlib.util.spec_from_file_location("make_bad", BAD / "make_bad.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _no_hang():
    """A command that hangs fails its test after TIMEOUT_S instead of blocking the run."""

    def expire(signum, frame):
        raise TimeoutError(f"a command ran past {TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TIMEOUT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------------------------------------
# What each input must give
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fatal:
    problem: str  # a fragment of the problem text
    file: str = ""  # the file the line names, relative to the input ("" = the input itself)


@dataclass(frozen=True)
class Loads:
    base: str  # the clean input whose numbers the good events must reproduce
    warnings: tuple[tuple[str, int], ...] = ()  # (fragment, count) of each expected warning line
    names_changed: bool = False  # names repaired: compare everything but kernel names
    same: str = "all"  # "all": every per-rank number; "trace": whole-trace terms only (no steps)
    # derived by the cross-rank analyses (Trace.warnings: every command that lists warnings shows them)
    summary_warnings: tuple[tuple[str, int | None], ...] = ()
    bases: tuple[tuple[int, str, int], ...] = ()  # (rank here, base input, rank there) when they differ


@dataclass(frozen=True)
class Partial:
    failed: str  # the file listed under failures
    problem: tuple[str, ...]
    base: str = "clean/rank0.pt.trace.json"


DUR = "complete events with a missing or non-numeric 'dur' dropped"
TS = "complete events with a missing or non-numeric 'ts' dropped"
NEG = "complete events with a negative 'dur' dropped"
DUP = "exact duplicate device tasks (same name, stream, start and end) dropped"
RANK0 = "clean/rank0.pt.trace.json"

CASES: dict[str, Fatal | Loads | Partial] = {
    "missing.json": Fatal("no such file or folder"),
    "empty.json": Fatal("the file is empty"),
    "random_bytes.json": Fatal("invalid JSON at byte 0"),
    "truncated.json": Fatal("truncated JSON: the text ends at byte 4,216"),
    "truncated.json.gz": Fatal("truncated gzip stream"),
    "not_a_trace.json": Fatal("not a Chrome trace: no 'traceEvents' key"),
    "numbers.json": Fatal("holds no trace events: the 4 entries of its event list are not JSON objects"),
    "no_profiles": Fatal("no profiles found in this folder"),
    "ascend_missing_column": Fatal(
        "required column 'Start Time(us)' is missing", "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    ),
    "ascend_renamed_unknown": Fatal(
        "required column 'Duration(us)' is missing", "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    ),
    "ascend_no_data": Fatal(
        "no kernel_details.csv, trace_view.json, ascend_pytorch_profiler_*.db or ascend_mindspore_profiler_*.db found",
        "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT",
    ),
    "clean": Loads("clean"),
    "clean_ascend": Loads("clean_ascend"),
    "no_ts_dur.json": Loads(RANK0, ((TS, 2), (DUR, 2))),
    "negative_dur.json": Loads(RANK0, ((NEG, 2),)),
    "text_ts.json": Loads(RANK0, ((TS, 2), (DUR, 1))),
    "huge_ts.json": Loads(RANK0, ((TS, 2),)),
    "four_malformed.json": Loads(RANK0, ((TS, 2), (DUR, 1), (NEG, 1))),
    "bad_unicode.json": Loads(RANK0, (("file(s) with invalid UTF-8 bytes or unicode escapes", 1),), names_changed=True),
    "nul_names.json": Loads(
        RANK0, (("event names with NUL characters: those replaced by U+FFFD", 2),), names_changed=True
    ),
    "bom.json": Loads(RANK0),
    "duplicated.json": Loads(RANK0, ((DUP, 3),)),
    "unknown_phase.json": Loads(
        RANK0,
        (("events with a missing or unknown 'ph' (phase) ignored", 3), ("duration events with ph 'B'/'E' ignored", 2)),
    ),
    "clock_skew": Loads("clean", summary_warnings=(("ranks' clocks disagree", None),)),
    "ascend_renamed_alias": Loads("clean_ascend"),
    "ascend_extra_columns": Loads("clean_ascend"),
    "ascend_padded_values": Loads("clean_ascend"),
    "ascend_duplicated_rows": Loads("clean_ascend", ((DUP, 2),)),
    "ascend_no_kernel_details": Loads(
        "clean_ascend", (("device tasks with no launch inside a ProfilerStep range", 60),), same="trace"
    ),
    "mixed": Loads("", bases=((0, "clean", 0), (1, "clean_ascend", 0))),
    "memory_odd.json": Loads(
        RANK0,
        (
            ("memory events with a missing or non-numeric 'ts' dropped", 1),
            ("event fields holding a list or object where a number or text belongs read as missing", 1),
        ),
    ),
    "ascend_memory_odd": Loads("clean_ascend", (("memory rows whose time is not decimal microseconds dropped", 2),)),
    "snapshot_truncated.pickle": Fatal("not a readable pickle"),
    "nsys_truncated.sqlite": Fatal("a SQLite database that cannot be read"),
    "snapshot_refused.pickle": Fatal("refused without running it: it refers to builtins.print"),
    "rocprof_truncated.json": Fatal("truncated JSON: the text ends at byte 7,294"),
    "rocprof_renamed_kernel_trace.csv": Fatal("not a rocprofv3 kernel trace (no Kernel_Name column)"),
    "being_written": Partial("rank1.pt.trace.json", ("truncated JSON", "still being written")),
    "partial_name": Partial("rank1.pt.trace.json.part", ("still being written", ".part")),
}
FATAL = [n for n, c in CASES.items() if isinstance(c, Fatal)]
LOADS = [n for n, c in CASES.items() if isinstance(c, Loads)]
PARTIAL = [n for n, c in CASES.items() if isinstance(c, Partial)]


# ------------------------------------------------------------------------------------------------
# Running commands
# ------------------------------------------------------------------------------------------------


@dataclass
class Out:
    code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


def cli(*args: str, cache: Path | None = None) -> Out:
    """Run `traceview ARGS` in this process (quiet, with the given cache folder or none)."""
    opts = ["--cache-dir", str(cache)] if cache else ["--no-cache"]
    result = CliRunner().invoke(main, [args[0], *args[1:], "-q", *opts], catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Out(result.exit_code, result.stdout, result.stderr)


def path_of(name: str) -> Path:
    return BAD / name.rstrip("/")


def assert_one_line_error(out: Out, name: str) -> None:
    case = CASES[name]
    target = path_of(name) / case.file if case.file else path_of(name)
    lines = out.stderr.splitlines()
    assert out.code == 1, (out.code, out.stderr)
    assert len(lines) == 1, out.stderr
    line = lines[0]
    assert line.startswith(f"traceview: error: cannot read {target}: "), line
    assert case.problem in line, line
    assert re.search(r" \(.+\)$", line), f"no fix in parentheses: {line}"
    assert "Traceback" not in out.stderr + out.stdout and "internal error" not in line


def warning_lines(lines: list[str], expected, where: str) -> None:
    """`lines` hold one line per expected (fragment, count), each naming a file of the input."""
    assert len(lines) == len(expected), (where, lines)
    for fragment, count in expected:
        hits = [w for w in lines if fragment in w]
        assert len(hits) == 1, (where, fragment, lines)
        if count is not None:
            assert re.search(rf": {count:,} {re.escape(fragment)}", hits[0]), (where, hits[0])


def stderr_warnings(out: Out) -> list[str]:
    lines = out.stderr.splitlines()
    assert all(line.startswith("traceview: warning: ") for line in lines), out.stderr
    return [line.removeprefix("traceview: warning: ") for line in lines]


_SUMMARIES: dict[str, dict] = {}


def summary_of(name: str) -> dict:
    """`traceview summary --format json` of an input (computed once per session)."""
    if name not in _SUMMARIES:
        out = cli("summary", str(path_of(name)), "--format", "json")
        assert out.code in (0, 1), out.stderr
        _SUMMARIES[name] = out.json()
    return _SUMMARIES[name]


def numbers(rank: dict, names_changed: bool, same: str) -> dict:
    """The numbers of one rank of a summary that the bad input must reproduce."""
    if same == "trace":
        return {"trace": rank["trace"], "compute_classes": rank["compute_classes"]}
    # memory: the memory inputs add records the clean bases lack (their numbers: test_memory_inputs)
    out = {k: v for k, v in rank.items() if k not in ("rank", "memory")}
    out["top_kernels"] = out["top_kernels"][:10]  # summary lists 10, report 20
    # start_us: where the step starts on the rank's own clock (clock_skew/ moves it by 5 s)
    out["trace"] = {k: v for k, v in (out["trace"] or {}).items() if k != "start_us"}
    out["steps"] = [{k: v for k, v in s.items() if k != "start_us"} for s in out["steps"]]
    if names_changed:
        out.pop("top_kernels")
        # a repaired name may split one kernel's rows in two: the totals stay
        out["kernel_totals"] = (
            sum(k["count"] for k in rank["top_kernels"]),
            round(sum(k["total_us"] for k in rank["top_kernels"]), 3),
        )
    return out


def assert_same_numbers(doc: dict, name: str) -> None:
    case = CASES[name]
    if isinstance(case, Partial):
        pairs = [(0, case.base, 0)]
    elif case.bases:
        pairs = list(case.bases)
    else:
        pairs = [(r["rank"], case.base, r["rank"]) for r in summary_of(case.base)["ranks"]]
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert sorted(ranks) == sorted(p[0] for p in pairs)
    for here, base, there in pairs:
        (ref,) = [r for r in summary_of(base)["ranks"] if r["rank"] == there]
        same = case.same if isinstance(case, Loads) else "all"
        changed = isinstance(case, Loads) and case.names_changed
        assert numbers(ranks[here], changed, same) == numbers(ref, changed, same), (name, here)
    if isinstance(case, Loads) and case.base and not case.bases and "cross_rank" in summary_of(case.base):
        assert doc["cross_rank"] == summary_of(case.base)["cross_rank"]


# ------------------------------------------------------------------------------------------------
# The corpus itself
# ------------------------------------------------------------------------------------------------


def test_generator_reproduces_the_committed_files(tmp_path):
    make_bad = _make_bad()
    make_bad.write(tmp_path)
    made = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(BAD).as_posix()
        for p in BAD.rglob("*")
        if p.is_file() and p.name != "make_bad.py" and "__pycache__" not in p.parts
    }
    assert made == committed
    for rel in sorted(made):
        assert (tmp_path / rel).read_bytes() == (BAD / rel).read_bytes(), f"{rel} drifted: run make_bad.py"


def test_every_input_has_an_expectation_and_a_readme_row():
    listed = [name.rstrip("/") for name, _, _ in _make_bad().CASES]
    assert sorted(listed) == sorted(CASES)
    assert not path_of("missing.json").exists()
    for name in CASES:
        assert name == "missing.json" or path_of(name).exists(), name


def test_memory_inputs_keep_their_good_records():
    """The memory records that could be read load with their values (the others are counted)."""
    t = tv.load(path_of("memory_odd.json"), use_cache=False)
    line = t.memory().filter(pl.col("device_type") == "cuda")
    assert line.select("ts_ns", "allocated_bytes", "reserved_bytes").row(0) == (1_100_000, 1 << 20, 2 << 20)
    assert t.memory()["device_type"].to_list().count("unknown") == 1  # the text Device Type
    asc = tv.load(path_of("ascend_memory_odd"), use_cache=False)
    assert asc.memory()["allocated_bytes"].to_list() == [round(935.9951171875 * 2**20), round(936.5 * 2**20)]
    assert asc.frame("memory_allocations").select("op", "size_bytes").rows() == [("aten::mm", 512 * 1024)]


def test_docs_list_every_input():
    text = (ROOT / "docs" / "robustness.md").read_text(encoding="utf-8")
    for name in CASES:
        assert f"`{name}" in text, f"docs/robustness.md does not list {name}"


# ------------------------------------------------------------------------------------------------
# Fatal inputs: one line, exit 1, for every command
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FATAL)
def test_fatal_info(name):
    assert_one_line_error(cli("info", str(path_of(name)), "--format", "json"), name)
    assert_one_line_error(cli("info", str(path_of(name))), name)


@pytest.mark.parametrize("name", FATAL)
def test_fatal_summary(name):
    out = cli("summary", str(path_of(name)), "--format", "json")
    assert_one_line_error(out, name)
    assert out.stdout == ""


@pytest.mark.parametrize("name", FATAL)
def test_fatal_report(name, tmp_path):
    for fmt in ("html", "json"):
        target = tmp_path / f"r.{fmt}"
        assert_one_line_error(cli("report", str(path_of(name)), "--format", fmt, "-o", str(target)), name)
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", FATAL)
def test_fatal_diff(name):
    good = str(path_of(RANK0))
    assert_one_line_error(cli("diff", good, str(path_of(name)), "--format", "json"), name)
    assert_one_line_error(cli("diff", str(path_of(name)), good), name)


@pytest.fixture
def fake_server(monkeypatch):
    """`traceview serve` builds its app and, instead of binding a port, fetches its pages."""
    from traceview.dashboards import server

    served: list[tuple[int, int]] = []

    def serve(app, host, port, open_browser=False):
        client = app.server.test_client()
        served.append((client.get("/").status_code, client.get("/_dash-layout").status_code))

    monkeypatch.setattr(server, "serve", serve)
    return served


@pytest.mark.parametrize("name", FATAL)
def test_fatal_serve_exits_before_serving(name, fake_server):
    out = cli("serve", str(path_of(name)), "--port", "8050")
    assert_one_line_error(out, name)
    assert fake_server == [] and "Serving" not in out.stdout


# ------------------------------------------------------------------------------------------------
# Recoverable inputs: exit 0, warnings counted once, the good events' numbers unchanged
# ------------------------------------------------------------------------------------------------


def _loads_with_its_warnings(command: str, name: str) -> dict:
    """`command` (info or summary) on a recoverable input: exit 0, no failures, the expected warnings
    in the JSON document, the same on stderr and in the text output. Returns the JSON document."""
    case = CASES[name]
    out = cli(command, str(path_of(name)), "--format", "json")
    assert out.code == 0, out.stderr
    doc = out.json()
    assert doc["failures"] == []
    warning_lines(doc["warnings"], case.warnings + case.summary_warnings, "json")
    assert stderr_warnings(out) == doc["warnings"]
    text = cli(command, str(path_of(name)))
    assert text.code == 0 and text.stderr == ""
    for line in doc["warnings"]:
        assert f"  - {line}\n" in text.stdout + "\n"
    return doc


@pytest.mark.parametrize("name", LOADS)
def test_loads_info(name):
    _loads_with_its_warnings("info", name)


@pytest.mark.parametrize("name", LOADS)
def test_loads_summary_with_the_clean_numbers(name):
    assert_same_numbers(_loads_with_its_warnings("summary", name), name)


@pytest.mark.parametrize("name", LOADS)
def test_loads_report(name, tmp_path):
    case = CASES[name]
    html = tmp_path / "r.html"
    out = cli("report", str(path_of(name)), "-o", str(html))
    assert out.code == 0, out.stderr
    page = html.read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "\x00" not in page and "\ud800" not in page
    data = tmp_path / "r.json"
    out = cli("report", str(path_of(name)), "--format", "json", "-o", str(data))
    assert out.code == 0, out.stderr
    doc = json.loads(data.read_text(encoding="utf-8"))
    lines = [line for line in out.stdout.splitlines() if not line.startswith("Wrote ")]
    assert lines == []
    warning_lines(stderr_warnings(out), case.warnings + case.summary_warnings, "stderr")
    assert stderr_warnings(out) == doc["warnings"]
    assert_same_numbers(doc, name)


def _zero_change(doc: dict) -> None:
    for row in doc["step_time"] + doc["terms"]:
        assert row.get("delta_us") in (0.0, None), row
    assert doc["device_time"]["delta_us"] == 0.0
    assert doc["kernel_counts"]["added"] == doc["kernel_counts"]["removed"] == 0


@pytest.mark.parametrize("name", LOADS)
def test_loads_diff_against_the_clean_base(name):
    case = CASES[name]
    if case.bases:  # mixed formats: compare with itself
        base = str(path_of(name))
    else:
        base = str(path_of(case.base))
    out = cli("diff", base, str(path_of(name)), "--format", "json")
    assert out.code == 0, out.stderr
    doc = out.json()
    assert doc["failures"] == []
    assert stderr_warnings(out) == doc["warnings"]
    new = [w.removeprefix("NEW: ") for w in doc["warnings"] if w.startswith("NEW: ")]
    cross_rank = [w for w in new if any(f in w for f, _ in case.summary_warnings)]
    warning_lines([w for w in new if w not in cross_rank], case.warnings, "diff")
    if case.same == "all" and not case.names_changed:
        _zero_change(doc)
    back = cli("diff", str(path_of(name)), base)
    assert back.code == 0 and back.stderr == ""


@pytest.mark.parametrize("name", LOADS)
def test_loads_serve_builds_the_dashboard(name, fake_server):
    case = CASES[name]
    out = cli("serve", str(path_of(name)), "--port", "8050")
    assert out.code == 0, out.stderr
    assert fake_server == [(200, 200)]
    assert "Serving" in out.stdout
    warning_lines(stderr_warnings(out), case.warnings + case.summary_warnings, "serve")


# ------------------------------------------------------------------------------------------------
# A rank still being written: a failure, the others load, exit 1
# ------------------------------------------------------------------------------------------------


def _failure_line(line: str, name: str) -> None:
    case = CASES[name]
    assert line.startswith(f"cannot read {path_of(name) / case.failed}: "), line
    for fragment in case.problem:
        assert fragment in line, line
    assert re.search(r" \(.+\)$", line), line


@pytest.mark.parametrize("name", PARTIAL)
def test_partial_info_and_summary(name):
    for command in ("info", "summary"):
        out = cli(command, str(path_of(name)), "--format", "json")
        assert out.code == 1, out.stderr
        doc = out.json()
        (failure,) = doc["failures"]
        _failure_line(failure, name)
        assert doc["warnings"] == []
        assert out.stderr.splitlines() == [f"traceview: error: {failure}"]
        assert [r["rank"] for r in doc["ranks"]] == [0]
        if command == "summary":
            assert_same_numbers(doc, name)
    text = cli("info", str(path_of(name)))
    assert text.code == 1 and text.stderr == "" and "Failed" in text.stdout


@pytest.mark.parametrize("name", PARTIAL)
def test_partial_report_diff_serve(name, tmp_path, fake_server):
    out = cli("report", str(path_of(name)), "--format", "json", "-o", str(tmp_path / "r.json"))
    assert out.code == 1
    (line,) = out.stderr.splitlines()
    _failure_line(line.removeprefix("traceview: error: "), name)
    assert_same_numbers(json.loads((tmp_path / "r.json").read_text()), name)
    out = cli("diff", str(path_of(RANK0)), str(path_of(name)), "--format", "json")
    assert out.code == 1 and len(out.json()["failures"]) == 1
    out = cli("serve", str(path_of(name)))
    assert out.code == 0 and fake_server == [(200, 200)]
    (line,) = out.stderr.splitlines()
    _failure_line(line.removeprefix("traceview: warning: "), name)


def test_file_completed_after_a_failed_read_loads(tmp_path):
    """A rank read while being written fails; once complete, it loads (no stale cache entry)."""
    cache = tmp_path / "cache"
    target = tmp_path / "rank0.pt.trace.json"
    target.write_bytes((BAD / "truncated.json").read_bytes())
    assert cli("info", str(target), cache=cache).code == 1
    time.sleep(0.01)
    target.write_bytes(path_of(RANK0).read_bytes())
    out = cli("info", str(target), "--format", "json", cache=cache)
    assert out.code == 0 and out.json()["ranks"][0]["device_tasks"] == 10


def test_warnings_survive_the_cache(tmp_path):
    """A recoverable input read back from the Parquet cache reports the same warnings."""
    cache = tmp_path / "cache"
    first = cli("info", str(path_of("duplicated.json")), "--format", "json", cache=cache).json()
    second = cli("info", str(path_of("duplicated.json")), "--format", "json", cache=cache).json()
    assert first == second and len(first["warnings"]) == 1


# ------------------------------------------------------------------------------------------------
# The same through real processes
# ------------------------------------------------------------------------------------------------


def run(*args: str, timeout: float = TIMEOUT_S - 10) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "traceview", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


@pytest.mark.parametrize("name", ["numbers.json", "ascend_missing_column", "truncated.json.gz"])
def test_fatal_in_a_real_process(name):
    out = run("summary", str(path_of(name)), "--no-cache", "-q")
    assert_one_line_error(Out(out.returncode, out.stdout, out.stderr), name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_in_a_real_process(tmp_path):
    """A recoverable input is served (HTTP 200 on /); a fatal one exits 1 before binding."""
    port = free_port()
    proc = serve(path_of("duplicated.json"), "--port", str(port), "--no-cache", "-q", text=True)
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as resp:
                    status = resp.status
                break
            except OSError:
                time.sleep(0.25)
        assert status == 200, proc.poll()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert DUP in err and "Traceback" not in err
    port = free_port()
    out = run("serve", str(path_of("truncated.json")), "--port", str(port), "--no-cache", "-q", timeout=60)
    assert out.returncode == 1 and "Serving" not in out.stdout
    assert_one_line_error(Out(out.returncode, out.stdout, out.stderr), "truncated.json")


def test_clock_offsets_are_estimated_from_collective_ends():
    import traceview as tv
    from traceview.analysis.collectives import clock_offsets, match_collectives

    skewed = tv.load(path_of("clock_skew"), use_cache=False)
    offsets = clock_offsets(match_collectives(skewed.device_tasks))
    assert offsets.rows() == [(0, 0, 2), (1, 5_000_000_000, 2)]
    clean = tv.load(path_of("clean"), use_cache=False)
    assert clock_offsets(match_collectives(clean.device_tasks)) is None
    assert skewed.collectives()["start_skew_us"].to_list() == clean.collectives()["start_skew_us"].to_list()
    assert not any("clocks" in w for w in clean.warnings)
