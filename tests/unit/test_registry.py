"""The declared analyses (traceview/analysis/declare.py, traceview/registry.py): the Trace methods
and docs they generate, the checks on a declaration, memo keys that accept any parameter value,
warnings that do not depend on what was called first."""

from __future__ import annotations

import inspect

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import traceview as tv
from tests.conftest import DATA, ROOT, run_cli
from tests.support.samples import shared_sample
from traceview import per_rank, registry
from traceview.analysis.declare import DECLARED, Declaration, Use, analysis, use
from traceview.trace import Trace
from traceview.trace_methods import AnalysisMethods


@pytest.fixture(scope="module")
def dp4():
    return shared_sample("dp4_nccl")


def test_trace_methods_are_generated_from_the_declarations():
    """traceview/trace_methods.py is what the declarations give today (regenerate it with
    `traceview analyses --write-methods`), so no default is written by hand twice."""
    assert registry.METHODS_FILE.read_text() == registry.methods_source()


def test_every_public_analysis_is_a_trace_method_with_the_declared_defaults():
    """Each method's parameters and defaults are the analysis' (the function's signature, plus the
    parameters it forwards to its inputs), keyword-only but the first (not a flag):
    checked on the live class, not the text."""
    methods = {n for n, v in vars(AnalysisMethods).items() if callable(v) and not n.startswith("_")} - {"run"}
    assert methods == set(registry.PUBLIC)
    for name in registry.PUBLIC:
        analysis = registry.REGISTRY[name]
        params = dict(list(inspect.signature(getattr(Trace, name)).parameters.items())[1:])
        named = {n: p.default for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
        assert named == dict(analysis.params), name
        assert any(p.kind is p.VAR_KEYWORD for p in params.values()) == analysis.any_keywords, name
        by_position = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
        assert by_position in ([], [*analysis.params][:1]), name  # at most the first, its own
        assert set(by_position) <= analysis.own, name
    # what no method offers is read by other analyses only
    internal = set(registry.REGISTRY) - set(registry.PUBLIC)
    assert internal == {"matched_collectives", "clock_offsets", "step_times", "platform_facts", "measured_roofline"}
    readers = {s.analysis for a in registry.REGISTRY.values() for s in a.inputs.values() if isinstance(s, Use)}
    assert internal <= readers


def test_every_input_is_a_frame_or_an_analysis_declared_before_its_reader():
    seen: set[str] = set()
    for name, entry in registry.REGISTRY.items():
        for source in entry.inputs.values():
            if isinstance(source, Use):
                assert source.analysis in seen, (name, source)
                assert set(source.bind.values()) <= set(entry.params), (name, source)
            else:
                assert source in registry.FRAMES or source in registry.RULE_INPUTS, (name, source)
        seen.add(name)


def test_a_bad_declaration_is_refused_where_it_is_written():
    def fn(tasks, n=1):
        return tasks

    with pytest.raises(TypeError, match="not parameters of"):
        analysis("x_test", inputs=("steps",))(fn)

    def positional(tasks, /, n=1):
        return tasks

    with pytest.raises(TypeError, match="'tasks' must be passable by name"):
        analysis("x_test", inputs=())(positional)
    assert "x_test" not in DECLARED
    circle = {
        "a": Declaration("a", fn, {"tasks": use("b")}),
        "b": Declaration("b", fn, {"tasks": use("a")}),
    }
    with pytest.raises(ValueError, match="circle: a -> b -> a"):
        registry._resolve(circle)
    unknown = {"a": Declaration("a", fn, {"tasks": use("b", m="n")}), "b": Declaration("b", fn, {"tasks": "steps"})}
    with pytest.raises(ValueError, match="binds 'm', not a parameter of b"):
        registry._resolve(unknown)
    typo = {"a": Declaration("a", fn, {"tasks": use("b", n="m")}), "b": Declaration("b", fn, {"tasks": "steps"})}
    with pytest.raises(ValueError, match="binds 'n' of b to 'm', which is not a parameter of its function"):
        registry._resolve(typo)
    own = {"a": Declaration("a", fn, {"tasks": use("b", n="n")}), "b": Declaration("b", fn, {"tasks": "steps"})}
    assert registry._resolve(own)["a"].params == {"n": 1}  # its own n, passed on too


def test_rule_tables_reach_the_analyses_that_read_them(dp4, tmp_path):
    """classified_tasks reads the trace's compute-class table: a trace with other rules
    classifies the tasks top_kernels counts, and the classified tasks are memoised once for
    both readers."""
    rules = tmp_path / "classes.toml"
    rules.write_text('[[compute_classes.rule]]\nclass = "elementwise"\nname = "."\n')
    user = dp4.with_rules(rules)
    top = user.top_kernels(3)
    assert set(top["class"]) - {"communication"} == {"elementwise"}  # a task's kind comes first
    assert user.classified_tasks() is user.run("classified_tasks")
    assert set(dp4.top_kernels(3)["class"]) - {"communication"} != {"elementwise"}
    assert registry.REGISTRY["classified_tasks"].declaration.rule_tables == ("compute_classes",)
    assert "classes" not in registry.REGISTRY["top_kernels"].params  # no rules-file parameter is left


def test_the_graph_names_every_analysis_and_input():
    text = registry.graph_text()
    for name, entry in registry.REGISTRY.items():
        assert f"{name}(" in text
        for param, source in entry.inputs.items():
            assert f"    {param} <- {source}" in text if isinstance(source, Use) else source in text
    dot = registry.graph_dot()
    assert dot.startswith("digraph") and '"classified_tasks" -> "top_kernels";' in dot
    data = registry.graph_json()
    assert {e["to"] for e in data["edges"]} <= set(registry.REGISTRY)
    assert {"from": "facts", "to": "findings", "how": "analysis"} in data["edges"]


#: A model config the analytical model accepts on any sample (its own peak and bandwidths).
SMALL_MODEL = {
    "layers": 4,
    "hidden": 1024,
    "heads": 8,
    "seq": 256,
    "micro_batch": 2,
    "peak_tflops": 100.0,
    "memory_tbps": 1.0,
}


@pytest.mark.parametrize("profile", ["dp4_nccl", "pp4_1f1b", "ascend_2rank"])
def test_each_row_declares_columns_its_output_has(profile):
    trace = shared_sample(profile)
    for name, row in registry.REGISTRY.items():
        if row.any_keywords:
            frame = trace.run(name, tokens_per_step=4096, params=1e9)
        elif "config" in row.params:  # the analytical model's: a config is required
            frame = trace.run(name, config=SMALL_MODEL)
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

    trace = shared_sample("pp4_1f1b")
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


def test_the_architecture_doc_shows_the_graph_as_it_is():
    """docs/ARCHITECTURE.md shows `traceview analyses --graph`; regenerate the block when it fails."""
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    block = doc.split("<!-- graph:start -->\n```\n", 1)[1].split("\n```\n<!-- graph:end -->", 1)[0]
    assert block == registry.graph_text()


def _shown(name: str) -> str:
    """How docs/api.md writes method `name`: `top_kernels(n=10, *, by=("rank",))`."""
    parts, starred = [], False
    for param in list(inspect.signature(getattr(Trace, name)).parameters.values())[1:]:
        if param.kind is param.VAR_KEYWORD:
            parts.append(f"**{param.name}")
            continue
        if param.kind is param.KEYWORD_ONLY and not starred:
            parts.append("*")
            starred = True
        shown = param.name if param.default is param.empty else f"{param.name}={param.default!r}"
        parts.append(shown.replace("'", '"'))
    return f"`{name}({', '.join(parts)})`"


def test_the_api_doc_lists_every_method_with_its_parameters():
    """docs/api.md's table of analyses names each Trace method with its parameters as declared."""
    doc = (ROOT / "docs" / "api.md").read_text()
    missing = [_shown(name) for name in registry.PUBLIC if _shown(name) not in doc]
    assert not missing


def test_the_analyses_command_lists_draws_and_exports_the_graph():
    listing = run_cli("analyses")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(registry.REGISTRY)
    assert any(line.startswith("iteration_breakdown") and " rank " in line for line in lines)
    graph = run_cli("analyses", "--graph")
    assert graph.stdout.rstrip("\n") == registry.graph_text()
    dot = run_cli("analyses", "--format", "dot")
    assert dot.stdout.startswith("digraph analyses {") and dot.stdout.rstrip().endswith("}")
    data = orjson.loads(run_cli("analyses", "--format", "json").stdout)
    assert [a["name"] for a in data["analyses"]] == list(registry.REGISTRY)
    assert {"from": "device_tasks", "to": "trace_breakdown", "how": "frame"} in data["edges"]
