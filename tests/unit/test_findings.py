"""Findings (`traceview.analysis.findings`, docs/findings.md).

Every shipped rule fires on a profile that has the problem, with the value worked out here from
the profile's known numbers, and stays silent on one that does not; the rule-file loader rejects
bad files with one line naming the file and the rule; the `when` language; the GEMM dims behind
the alignment rule; input_shapes from Kineto `Input Dims`; the findings in the summary (JSON and
text). Profiles: the shipped samples, tiny traces in tests/data (see its README), traces written
here by `write_kineto`, and real traces from ../shared/traces (skipped when absent).

This file holds the topic's unit tests; the others are in tests/integration/test_findings.py, tests/corpus/test_findings.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, ROOT, SAMPLES
from tests.support.findings_shared import fired, load  # noqa: F401
from tests.support.kineto import complete_event, ns, write_trace
from tests.support.samples import shared_sample
from traceview import ruleset
from traceview.analysis import conditions
from traceview.analysis import facts as facts_mod
from traceview.analysis import findings as F
from traceview.cli.summary import summary_text
from traceview.errors import TraceError
from traceview.parsers.kineto import parse_kineto
from traceview.run_diff import int_ranges
from traceview.summary import build_summary

DOCS = ROOT / "docs" / "findings.md"


GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"


ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
)


def sample(name: str) -> tv.Trace:
    return load(str(SAMPLES / name))


def expected(name: str) -> dict:
    return json.loads((SAMPLES / name / "expected.json").read_text())


def write_kineto(path: Path, steps: list[list[tuple[float, float, float, str]]]) -> Path:
    """A one-rank Kineto trace: per step, kernels (start_us, dur_us, launch_start_us, name) on
    stream 7, each with a 4 µs cudaLaunchKernel of the same correlation, and a host and a
    GPU-side ProfilerStep#N spanning the step's launches and kernels."""
    events, corr = [], 0
    for n, kernels in enumerate(steps, start=1):
        first = min(min(k[0], k[2]) for k in kernels)
        last = max(k[0] + k[1] for k in kernels)
        device_first = min(k[0] for k in kernels)
        step = f"ProfilerStep#{n}"
        events.append(complete_event("user_annotation", step, 1, 1, ns(first - 1), ns(last - first + 2)))
        events.append(complete_event("gpu_user_annotation", step, 0, 7, ns(device_first), ns(last - device_first)))
        for start, dur, launch, name in kernels:
            corr += 1
            events.append(
                complete_event("cuda_runtime", "cudaLaunchKernel", 1, 1, ns(launch), 4000, {"correlation": corr})
            )
            args = {"device": 0, "stream": 7, "correlation": corr}
            events.append(complete_event("kernel", name, 0, 7, ns(start), ns(dur), args))
    return write_trace(path, events, rank=0, world_size=1, device="NVIDIA H100 80GB HBM3")


def host_bound_steps(n_steps: int = 3, kernels: int = 50) -> list:
    """Each kernel (20 µs) is launched 20 µs after the previous one ended and starts 8 µs after its
    launch: every gap (28 µs) is host_wait, the device is idle 28/48 of the time."""
    steps, t = [], 1000.0
    for _ in range(n_steps):
        step = []
        for _ in range(kernels):
            launch = t + 20
            step.append((launch + 8, 20.0, launch, GEMM))
            t = launch + 28
        steps.append(step)
        t += 100
    return steps


def queued_steps(durations: list[float], n_steps: int = 3) -> list:
    """GPU-bound: every kernel is launched (0.1 µs apart) before the previous step's last kernel ends,
    and runs back to back with 1 µs gaps; `durations` per step in order (µs)."""
    steps, t = [], 1000.0
    for _ in range(n_steps):
        step, start = [], t + 1000
        for i, d in enumerate(durations):
            step.append((start, d, t - 150 + i * 0.1, ELEMENTWISE))
            start += d + 1
        steps.append(step)
        t = start + 100
    return steps


def test_exposed_communication_fires_on_the_ranks_that_wait_for_the_slow_one():
    got = fired(sample("dp4_nccl"), "exposed_communication")
    assert set(got) == {0, 1, 3}  # rank 2 (the straggler) never waits: 4.1 %
    for rank in (0, 1, 3):
        steps = expected("dp4_nccl")["ranks"][str(rank)]["steps"].values()
        want = sum(s["communication_not_overlapped_ns"] for s in steps) / sum(s["window_ns"] for s in steps)
        assert got[rank]["value"] == pytest.approx(want, rel=1e-6)
        assert got[rank]["severity"] == "warning" and got[rank]["threshold"] == 0.10
        assert f"{want:.1%} of step time" in got[rank]["message"] and "bucket" in got[rank]["advice"]


def test_exposed_communication_ignores_pipeline_receives():
    trace = sample("pp4_1f1b")
    assert (trace.step_breakdown()["communication_not_overlapped_us"] > 1000).all()  # P2P waits are exposed...
    assert fired(trace, "exposed_communication") == {}  # ...but they are the bubble, not collective traffic


def test_host_bound_fires_when_every_gap_waits_for_a_launch(tmp_path):
    trace = load(str(write_kineto(tmp_path / "host.json", host_bound_steps())))
    got = fired(trace, "host_bound")
    assert got[0]["value"] == pytest.approx(1.0)
    facts = facts_mod.facts(
        trace.step_breakdown(),
        trace.trace_breakdown(),
        trace.classified_tasks(),
        stream_idle=trace.stream_idle(),
        launch_calls=trace.launch_calls(),
    )
    assert facts["device_idle_frac"][0] == pytest.approx(28 / 48, rel=0.01)
    assert facts["launch_us"][0] == pytest.approx(4.0)
    assert "A launch call takes 4.0 us" in got[0]["message"]


def test_host_bound_silent_when_the_queue_is_full(tmp_path):
    trace = load(str(write_kineto(tmp_path / "queued.json", queued_steps([20.0] * 50))))
    assert trace.stream_idle()["host_wait_us"].sum() == 0
    assert fired(trace, "host_bound") == {}
    assert fired(sample("dp4_nccl"), "host_bound") == {}


def test_host_bound_needs_idle_time():
    trace = sample("pp4_1f1b")  # the last stage's compute stream waits for launches, but is never idle
    facts = facts_mod.facts(
        trace.step_breakdown(), trace.trace_breakdown(), trace.classified_tasks(), stream_idle=trace.stream_idle()
    )
    rank3 = facts.filter(pl.col("rank") == 3).row(0, named=True)
    assert rank3["host_wait_frac"] > 0.5 and rank3["device_idle_frac"] < 0.10
    assert fired(trace, "host_bound") == {}


def test_summary_without_details_skips_the_idle_analysis(tmp_path):
    trace = tv.load(write_kineto(tmp_path / "host.json", host_bound_steps()), use_cache=False)
    doc = build_summary(trace, details=False)
    assert "host_bound" not in {f["rule"] for f in doc["findings"]}
    assert not any(isinstance(k, tuple) and k[0] == "stream_idle" for k in trace._memo)
    assert "host_bound" in {f["rule"] for f in build_summary(trace)["findings"]}


def test_tiny_kernels_fire_on_many_short_kernels(tmp_path):
    trace = load(str(write_kineto(tmp_path / "tiny.json", queued_steps([5.0] * 400 + [50.0] * 100))))
    got = fired(trace, "tiny_kernels")
    assert got[0]["value"] == pytest.approx(0.8)
    assert "500 kernels per step" in got[0]["message"] and "400 kernels, 2.00 ms" in got[0]["message"]


def test_tiny_kernels_need_enough_kernels_per_step(tmp_path):
    trace = load(str(write_kineto(tmp_path / "few.json", queued_steps([5.0] * 240 + [50.0] * 60))))
    facts = facts_mod.facts(trace.step_breakdown(), trace.trace_breakdown(), trace.classified_tasks())
    assert facts["tiny_kernel_frac"][0] == pytest.approx(0.8) and facts["kernels_per_step"][0] == 300
    assert fired(trace, "tiny_kernels") == {}
    assert fired(sample("dp4_nccl"), "tiny_kernels") == {}


def test_pipeline_bubble_on_the_1f1b_sample():
    want = expected("pp4_1f1b")
    got = fired(sample("pp4_1f1b"), "pipeline_bubble")
    assert set(got) == {0, 1, 2, 3}
    for rank, row in got.items():
        fracs = [s["ranks"][str(rank)]["bubble_fraction"] for s in want["steps"].values()]
        assert row["value"] == pytest.approx(sum(fracs) / len(fracs), rel=1e-6)
        # an ideal 1F1B with m = 8 has 3/11; the measured bubble includes 19 transfers, so m is just under 8
        assert "p = 4 stages" in row["message"] and "m = 7.9 micro-batches" in row["message"]
    assert fired(sample("dp4_nccl"), "pipeline_bubble") == {}


def test_pipeline_bubble_excess_against_the_given_micro_batches():
    trace = sample("pp4_1f1b")
    assert fired(trace, "pipeline_bubble_excess", micro_batches=8) == {}  # 27.5 % vs ideal 27.3 %
    got = fired(trace, "pipeline_bubble_excess", micro_batches=32)
    assert set(got) == {0, 1, 2, 3}
    assert got[0]["value"] == pytest.approx(0.27481492672609154 - 3 / 35, rel=1e-6)
    assert fired(trace, "pipeline_bubble_excess") == {}  # m unknown: no ideal


def test_input_shapes_from_kineto_input_dims():
    tasks = parse_kineto(DATA / "kineto_shapes.json").frames["device_tasks"]
    assert tasks["input_shapes"].to_list() == [
        "4096,4096;4096,4096",  # aten::mm
        "50257;4096,4096;4096,50257;;",  # aten::addmm: bias, mat1, mat2, beta, alpha
        "2,3;2,3;",  # aten::cat: a tensor list gives one entry per tensor
    ]
    assert parse_kineto(DATA / "kineto_minimal.json").frames["device_tasks"]["input_shapes"].null_count() == 5


def test_gemm_dims_take_k_from_the_shared_dim():
    shapes = {
        "8192,4096;4096,4096": (8192, 4096, 4096, True),
        "1024;8944,1024;1024,1024;;": (8944, 1024, 1024, True),  # addmm: the bias is not an operand
        "2,2048,4096;11008,4096;11008": (4096, 11008, 4096, True),  # linear: M = 2 x 2048
        "32,4096;32,9216": (4096, 9216, 32, True),  # Ascend, A stored transposed
        "96,3137,64;96,64,3137": (3137, 3137, 64, False),  # bmm: batch 96
        "46,2880;2880,201088": (46, 201088, 2880, False),
        "2,256,6,6;4096,9216;4096": (None, None, None, None),  # no shared dim: unknown, not unaligned
        "4096;": (None, None, None, None),
    }
    got = {
        r["input_shapes"]: (r["m"], r["n"], r["k"], r["gemm_aligned"])
        for r in facts_mod.gemm_dims(pl.Series(list(shapes))).to_dicts()
    }
    assert got == shapes


def test_gemm_unaligned_fires_on_a_vocabulary_of_50257():
    got = fired(load(str(DATA / "kineto_shapes.json")), "gemm_unaligned")
    assert got[0]["value"] == pytest.approx(100 / 400)  # 100 of the 400 µs of GEMMs have N = 50257
    assert "M=4096, N=50257, K=4096" in got[0]["message"] and "aten::addmm" in got[0]["message"]


def test_gemm_unaligned_silent_on_aligned_or_unknown_shapes():
    ascend = sample("ascend_2rank")
    assert (ascend.classified_tasks().filter(pl.col("compute_class") == "gemm")["input_shapes"].null_count()) == 0
    assert fired(ascend, "gemm_unaligned") == {}
    assert fired(sample("dp4_nccl"), "gemm_unaligned") == {}  # no shapes on its GEMM kernels: unknown


def test_exposed_memcpy_fires_on_a_copy_after_compute():
    got = fired(load(str(DATA / "kineto_exposed_memcpy.json")), "exposed_memcpy")
    assert got[0]["value"] == pytest.approx(200 / 1000)
    assert "100% of the memcpy time" in got[0]["message"] and "pin_memory" in got[0]["advice"]
    assert fired(sample("dp4_nccl"), "exposed_memcpy") == {}


def test_low_mfu_is_profile_wide():
    trace = sample("dp4_nccl")
    given = {"tokens_per_step": 131072, "params": 1e8}
    got = fired(trace, "low_mfu", throughput=given)
    assert set(got) == {None}
    assert got[None]["value"] == pytest.approx(trace.throughput(**given)["mfu_frac"].mean(), rel=1e-9)
    assert got[None]["severity"] == "warning" and "989 TFLOP/s" in got[None]["message"]
    assert fired(trace, "low_mfu", throughput={**given, "params": 4e7})[None]["severity"] == "critical"
    assert fired(trace, "low_mfu", throughput={**given, "params": 2e8}) == {}
    assert fired(trace, "low_mfu") == {}


def test_slow_rank_cost_from_the_others_extra_exposed_communication():
    got = fired(sample("dp4_nccl"), "straggler")
    assert set(got) == {2}
    ranks = expected("dp4_nccl")["ranks"]

    def per_step(rank: int, key: str) -> float:
        steps = ranks[str(rank)]["steps"].values()
        return sum(s[key] for s in steps) / len(steps)

    cost = [
        (per_step(r, "communication_not_overlapped_ns") - per_step(2, "communication_not_overlapped_ns"))
        / per_step(r, "window_ns")
        for r in (0, 1, 3)
    ]
    assert got[2]["value"] == pytest.approx(sum(cost) / 3, rel=1e-6)
    assert re.search(r"compute time is 1\.1[45]x", got[2]["message"])  # every kernel 1.15x longer


def test_no_slow_rank_without_collectives():
    assert fired(sample("pp4_1f1b"), "straggler") == {}  # P2P only: no straggler verdict
    assert fired(sample("cpu_single"), "straggler") == {}


def test_slow_step_fires_on_a_step_two_and_a_half_times_the_median():
    got = fired(load(str(DATA / "kineto_slow_step.json")), "long_step")
    assert got[0]["value"] == pytest.approx(2.5) and got[0]["severity"] == "info"
    assert got[0]["message"].startswith("Step 3 on rank 0 took 2.50 ms") and "more idle/free" in got[0]["message"]
    assert fired(sample("dp4_nccl"), "long_step") == {}


def test_slow_step_needs_three_steps(tmp_path):
    rules = tmp_path / "eager.toml"
    rules.write_text('[[rule]]\nid = "long_step"\nabove = 1.0001\n')
    eager = ruleset.build(findings=rules)
    assert set(fired(sample("dp4_nccl").with_rules(eager), "long_step")) == {0, 1, 2, 3}  # 3 steps
    assert fired(sample("pp4_1f1b").with_rules(eager), "long_step") == {}  # 2 steps: rank 3's 1.10x is no verdict


def test_shipped_rules_and_facts_are_documented():
    rules = F.finding_rules()
    ids = [r.id for r in rules]
    assert len(ids) == len(set(ids)) >= 10
    doc = DOCS.read_text(encoding="utf-8")
    for rule in rules:
        assert f"`{rule.id}`" in doc, f"rule {rule.id} missing from docs/findings.md"
        assert f"{rule.threshold:g}" in doc
    for fact in facts_mod.FACTS:
        assert f"`{fact}`" in doc, f"fact {fact} missing from docs/findings.md"


def test_user_file_changes_adds_and_disables_rules(tmp_path):
    trace = sample("dp4_nccl")
    rules = tmp_path / "mine.toml"
    rules.write_text(
        '[[rule]]\nid = "exposed_communication"\nabove = 0.2\n\n'
        '[[rule]]\nid = "straggler"\nenabled = false\n\n'
        '[[rule]]\nid = "busy_network"\ntitle = "Busy network"\nseverity = "info"\nmetric = "comm_ms"\n'
        'above = 30.0\nwhen = "not is_straggler"\nmessage = "{comm_ms:.1f} ms of communication per step on rank {rank}"\n'
        'advice = "Look at the collectives."\n'
    )
    found = trace.with_rules(ruleset.build(findings=rules)).findings()
    assert set(found["rule"]) == {"busy_network"}
    assert set(found["rank"]) == {0, 1, 3} and found["message"][0].startswith("33.5 ms of communication")


BAD_RULES = [
    ('[[rule]]\nid = "exposed_communication"\nthreshold = 0.2\n', "unknown key(s) threshold"),
    ('[[rule]]\nid = "exposed_communication"\nseverity = "urgent"\n', "severity 'urgent'"),
    (
        '[[rule]]\nid = "exposed_communication"\nmetric = "no_such_fact"\n',
        "metric 'no_such_fact' is not a numeric fact",
    ),
    ('[[rule]]\nid = "exposed_communication"\nmetric = "window"\n', "metric 'window' is not a numeric fact"),
    ('[[rule]]\nid = "exposed_communication"\nbelow = 0.2\nabove = 0.1\n', "exactly one threshold"),
    ('[[rule]]\nid = "exposed_communication"\ncritical = 0.05\n', "'critical' (0.05) must be beyond"),
    ('[[rule]]\nid = "exposed_communication"\nabove = "high"\n', "'above' must be a finite number"),
    ('[[rule]]\nid = "exposed_communication"\nmessage = "{nope:.1f}"\n', "unknown fact {nope}"),
    (
        '[[rule]]\nid = "exposed_communication"\nmessage = "{window:.1f}"\n',
        "format spec '.1f' does not fit fact window",
    ),
    ('[[rule]]\nid = "exposed_communication"\nmessage = "{rank!r}"\n', "conversions (!r) are not allowed"),
    ('[[rule]]\nid = "exposed_communication"\nextra = "one"\n', "'extra' must be a list"),
    ('[[rule]]\nid = "exposed_communication"\nwhen = "nope > 1"\n', "unknown fact 'nope'"),
    (
        '[[rule]]\nid = "exposed_communication"\nwhen = "step_ms >"\n',
        "expected a fact, a number or a string, found the end",
    ),
    ('[[rule]]\nid = "exposed_communication"\nwhen = "step_ms > 1 and"\n', "found the end"),
    ('[[rule]]\nid = "exposed_communication"\nwhen = "(step_ms > 1"\n', "expected ')'"),
    ('[[rule]]\nid = "exposed_communication"\nwhen = "step_ms ^ 2"\n', "unexpected '^ 2' at column 9"),
    ('[[rule]]\nid = "exposed_communication"\nwhen = "step_ms"\n', "expected a comparison operator"),
    ('[[rule]]\nid = "exposed_communication"\nwhen = "step_ms > 1 step_ms"\n', "expected 'and', 'or' or the end"),
    ('[[rule]]\nid = "exposed_communication"\nenabled = "no"\n', "'enabled' must be true or false"),
    (
        '[[rule]]\nid = "new_rule"\ntitle = "T"\nseverity = "info"\nmetric = "step_ms"\nabove = 1\nmessage = "m"\n',
        "missing key(s) advice",
    ),
    (
        '[[rule]]\nid = "new_rule"\ntitle = "T"\nseverity = "info"\nmetric = "step_ms"\nmessage = "m"\nadvice = "a"\n',
        "exactly one threshold",
    ),
    (
        '[[rule]]\nid = "NewRule"\ntitle = "T"\nseverity = "info"\nmetric = "step_ms"\nabove = 1\nmessage = "m"\nadvice = "a"\n',
        "must be lower_snake_case",
    ),
    ('[[rule]]\nid = "exposed_communication"\nabove = 0.2\n[other]\nx = 1\n', "unknown top-level key(s) other"),
    ('[[rules]]\nid = "x"\n', "unknown top-level key(s) rules"),
    ("# nothing\n", "no [[rule]] tables"),
    ('[[rule]]\ntitle = "no id"\n', "rule 1: missing 'id'"),
    ("[[rule]\n", "invalid TOML"),
]


@pytest.mark.parametrize("text, problem", BAD_RULES)
def test_bad_rules_file_is_one_line_naming_it(tmp_path, text, problem):
    path = tmp_path / "bad_rules.toml"
    path.write_text(text)
    with pytest.raises(TraceError) as err:
        ruleset.build(findings=path)
    message = str(err.value)
    assert problem in message and "bad_rules.toml" in message and "\n" not in message


def test_missing_rules_file(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        ruleset.build(findings=tmp_path / "absent.toml")


@pytest.mark.parametrize(
    "text, want",
    [
        ("step_ms > 5", [True, False, None]),
        ("step_ms > 5 or steps == 3 and window == 'trace'", [True, True, None]),  # and binds tighter
        ("(step_ms > 5 or steps == 3) and window == 'trace'", [False, True, None]),
        ("not is_straggler", [False, True, True]),
        ("is_straggler or bubble_frac >= 0.5", [True, False, True]),
        ("step_ms != computing_ms", [True, False, None]),
        ("steps >= 1e1", [False, False, False]),
    ],
)
def test_when_conditions(text, want):
    df = pl.DataFrame(
        {
            "step_ms": [10.0, 2.0, None],
            "computing_ms": [4.0, 2.0, 1.0],
            "steps": [2, 3, 5],
            "window": ["steps", "trace", "trace"],
            "is_straggler": [True, False, False],
            "bubble_frac": [None, 0.1, 0.6],
        }
    )
    got = df.select(F.condition(text).alias("c"))["c"].to_list()
    assert [bool(g) if g is not None else None for g in got] == want


def test_and_or_chains_keep_the_logic_of_nulls():
    """A chain of `and` / `or` terms is one all_horizontal / any_horizontal (flat, issue 30): the
    same Kleene logic as `&` / `|` on every combination of true, false and null."""
    values = [True, False, None]
    combos = [(a, b, c) for a in values for b in values for c in values]
    df = pl.DataFrame(
        {k: [row[i] for row in combos] for i, k in enumerate(("is_straggler", "ddp_seen", "fsdp_seen"))},
        schema=dict.fromkeys(("is_straggler", "ddp_seen", "fsdp_seen"), pl.Boolean),
    )
    a, b, c = pl.col("is_straggler"), pl.col("ddp_seen"), pl.col("fsdp_seen")
    cases = {
        "is_straggler and ddp_seen and fsdp_seen": a & b & c,
        "is_straggler or ddp_seen or fsdp_seen": a | b | c,
        "is_straggler and ddp_seen or fsdp_seen": (a & b) | c,
        "is_straggler or ddp_seen and not fsdp_seen": a | (b & ~c),
        "not (is_straggler or ddp_seen) and fsdp_seen": ~(a | b) & c,
    }
    for text, reference in cases.items():
        assert df.select(F.condition(text)).to_series().to_list() == df.select(reference).to_series().to_list(), text


def test_a_condition_at_the_limits_is_accepted():
    terms = " and ".join(f"steps >= {i}" for i in range(conditions.MAX_TERMS))
    nested = "(" * (conditions.MAX_DEPTH - 1) + "not is_straggler" + ")" * (conditions.MAX_DEPTH - 1)
    df = pl.DataFrame({"steps": [500, 5, None], "is_straggler": [False, False, True]})
    assert df.select(F.condition(terms)).to_series().to_list() == [True, False, None]
    assert df.select(F.condition(nested)).to_series().to_list() == [True, True, False]


@pytest.mark.parametrize(
    "text, problem",
    [
        # issue 30: 2,000 terms ran for minutes in polars' optimiser, 3,000 nested `not` was a RecursionError
        (
            " and ".join(["steps >= 1"] * 2000),
            "more than 200 terms (comparisons or Boolean facts), found 'steps' at column 3001",
        ),
        (" or ".join(["is_straggler"] * 201), "more than 200 terms"),
        ("not " * 3000 + "is_straggler", "more than 32 levels of 'not' and parentheses nested in each other"),
        ("(" * 3000 + "is_straggler" + ")" * 3000, "more than 32 levels of 'not' and parentheses"),
        ("steps > 1e999", "a number must be finite, found '1e999' at column 9"),
        ("steps > -1e400", "a number must be finite"),
    ],
    ids=["2000 and", "201 or", "3000 not", "3000 parentheses", "1e999", "-1e400"],
)
def test_a_condition_past_the_limits_is_one_line_naming_the_rule(text, problem):
    with pytest.raises(ValueError) as err:
        F.condition(text, "my.toml: rule 'r'")
    message = str(err.value)
    assert message.startswith("my.toml: rule 'r': 'when' ") and problem in message
    assert "\n" not in message and len(message) < 300


def test_summary_lists_findings_and_the_text_groups_them_by_rule():
    trace = sample("dp4_nccl")
    doc = build_summary(trace)
    assert [(f["rule"], f["rank"]) for f in doc["findings"]] == [
        ("exposed_communication", 0),
        ("exposed_communication", 1),
        ("exposed_communication", 3),
        ("straggler", 2),
    ]
    assert set(doc["findings"][0]) == {
        "rule",
        "title",
        "severity",
        "rank",
        "metric",
        "term",
        "value",
        "threshold",
        "message",
        "advice",
    }
    assert [(f["rule"], f["ranks"]) for f in doc["findings_by_rule"]] == [
        ("exposed_communication", [0, 1, 3]),
        ("straggler", [2]),
    ]
    text = summary_text(doc)
    assert "Findings (4: 4 warning;" in text
    assert (
        "[warning] Exposed communication outside pipeline transfers [exposed comm] (ranks 0-1, 3; shown: rank 1)"
        in text
    )
    assert [f["rule"] for f in build_summary(trace, details=False)["findings"]] == [f["rule"] for f in doc["findings"]]


def test_rank_ranges():
    assert int_ranges([7, 0, 1, 2, 5, 8]) == "0-2, 5, 7-8"
    assert int_ranges([3]) == "3"


def test_findings_by_rule_one_row_per_rule_with_its_ranks():
    """On the 8-rank DLRM profile the findings fire on many ranks; grouped, each rule is one row:
    its worst finding (most severe, farthest from the threshold) and every rank it fired on."""
    trace = shared_sample("dp4_nccl")
    found = trace.findings()
    grouped = F.by_rule(found)
    assert grouped["rule"].n_unique() == grouped.height == found["rule"].n_unique()
    for row in grouped.to_dicts():
        mine = found.filter(pl.col("rule") == row["rule"])
        assert row["ranks"] == sorted(mine["rank"].drop_nulls().unique().to_list())
        worst = mine.with_columns((pl.col("value") - pl.col("threshold")).abs().alias("d")).sort("d", descending=True)
        severities = set(mine["severity"])
        assert row["severity"] == ("critical" if "critical" in severities else worst["severity"][0])
        if len(severities) == 1:
            assert row["value"] == worst["value"][0] and row["rank"] == worst["rank"][0]
        assert row["term"] in F.TERMS_EXPLAINED
    # critical rules come first, then the rules' order
    levels = [{"critical": 0, "warning": 1, "info": 2}[s] for s in grouped["severity"]]
    assert levels == sorted(levels)


def test_every_shipped_rule_names_the_term_it_explains_and_a_bad_term_is_refused(tmp_path):
    """Every time finding names its term; the memory finding explains no time, so it names none."""
    for rule in F.finding_rules():
        assert rule.term in F.TERMS_EXPLAINED or (rule.term is None and rule.metric.startswith("memory_")), rule.id
    path = tmp_path / "rules.toml"
    path.write_text('[[rule]]\nid = "straggler"\nterm = "stragling"\n')
    with pytest.raises(TraceError, match="term 'stragling' is not a term"):
        ruleset.build(findings=path)
