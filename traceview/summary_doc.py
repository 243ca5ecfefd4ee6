"""The summary document, typed: every section and row of `build_summary`'s document declared
once, as msgspec Structs (one rank's rows: `traceview.summary_rows`), and published as JSON
Schema (docs/summary.schema.json).

`document(doc)` checks a document against the declaration (`msgspec.ValidationError` naming the
path of a key that is missing, unknown or of another type) and gives it typed; `json_schema()` is
the schema the docs publish. A row's columns and units are those of the analysis it comes from
(docs/metrics.md, docs/api.md); times are µs (`_us`), bytes (`_bytes`), shares 0-1 (`_frac`,
`share`). A number that cannot be computed is null. A part that applies only to some profiles or
some requests is absent (msgspec's UNSET in the typed document): `cross_rank` (several ranks),
a rank's `roofline` (recorded with shapes), `throughput` and the headline's and rows' throughput
numbers (throughput options), `expected` (a model configuration).

Every shipped sample's document and every corpus golden is checked against it
(`tests/unit/test_summary_doc.py`), so a key added to the document without its declaration here fails
the tests, not a reader.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from traceview.analysis.model_config import ModelConfig
from traceview.summary_rows import RankSection, Row


class CompanionRow(Row):
    """A trace loaded beside a rank that describes it (a CUDA graph capture; `companions[]`)."""

    rank: int
    source: str
    kind: str
    device_tasks: int


class WaitRow(Row):
    """How long a rank waited in collectives, and how often it arrived last
    (`cross_rank.ranks[]`)."""

    instances: int
    is_straggler: bool
    last_arrivals: int
    max_start_skew_us: float | None
    mean_start_skew_us: float | None
    mean_wait_us: float | None
    rank: int
    total_wait_us: float | None


class StepSkewRow(Row):
    """The spread of one step's duration over the ranks (`cross_rank.step_skew[]`)."""

    longest_step_rank: int
    max_us: float | None
    mean_us: float | None
    min_us: float | None
    n_ranks: int
    shortest_step_rank: int
    skew_frac: float | None
    skew_us: float | None
    step: int


class CollectiveRow(Row):
    """One collective (and process group) over the profile: transfer, wait and bus bandwidth
    (`cross_rank.collectives[]`)."""

    busbw_gbps: float | None
    collective: str
    instances: int
    process_group: str | None
    transfer_us: float | None
    wait_us: float | None


class ExpectedTermRow(Row):
    """One term of the analytical model beside the measured value (`expected.terms[]`)."""

    term: str
    rank: int | None
    unit: str
    expected: float | None
    measured: float | None
    difference: float | None
    definition: str


class KernelRow(Row):
    """One kernel over all ranks (the kernels with the most device time; `kernels[]`)."""

    class_: str = msgspec.field(name="class")
    count: int
    max_rank: int
    mean_us: float | None
    name: str
    rank_max_us: float | None
    rank_median_us: float | None
    rank_min_us: float | None
    ranks: int
    share: float | None
    short_name: str
    total_us: float | None


class OperatorRow(Row):
    """One host operator and input shapes with the device time of what it launched
    (`operators[]`)."""

    calls: int
    device_per_call_us: float | None
    device_us: float | None
    input_shapes: str | None
    kernels: int
    operator: str
    share: float | None
    top_kernel: str
    top_kernel_short: str


class ThroughputRow(Row):
    """Tokens/s, TFLOP/s and MFU of one step (with throughput options; `throughput[]`)."""

    step: int
    step_time_us: float | None
    devices: int
    tokens_per_step: float | None
    tokens_per_s: float | None
    tokens_per_s_per_device: float | None
    model_flops_per_step: float | None
    model_tflops_per_device: float | None
    hardware_flops_per_step: float | None
    hardware_tflops_per_device: float | None
    peak_tflops: float | None
    peak_source: str | None
    mfu_frac: float | None
    hfu_frac: float | None
    mfu_formula: str
    hfu_formula: str
    check: str | None
    traced_tflops_per_device: float | None | UnsetType = UNSET
    traced_mfu_frac: float | None | UnsetType = UNSET
    flops_coverage_frac: float | None | UnsetType = UNSET
    traced_note: str | None | UnsetType = UNSET
    traced_formula: str | None | UnsetType = UNSET


class WhatIfRow(Row):
    """One what-if scenario: the iteration if one measured part changed (a bound; `what_if[]`)."""

    assumption: str
    bound_us: float | None
    iteration_us: float | None
    saving_us: float | None
    scenario: str
    speedup: float | None


class FindingRow(Row):
    """One finding: a rule that fired on a rank (rank null: profile-wide; `findings[]`)."""

    advice: str
    message: str
    metric: str
    rank: int | None
    rule: str
    severity: str
    term: str | None
    threshold: float | None
    title: str
    value: float | None


class FindingByRuleRow(Row):
    """A rule's worst finding, with every rank it fired on (`findings_by_rule[]`)."""

    advice: str
    message: str
    metric: str
    rank: int | None
    ranks: list[int]
    rule: str
    severity: str
    term: str | None
    threshold: float | None
    title: str
    value: float | None


class Headline(Row):
    """The profile's headline: mean step and iteration, each iteration term's share, the largest
    term (with throughput options: the mean tokens/s, TFLOP/s and MFU too; `headline`)."""

    communication_not_overlapped_frac: float | None
    data_loading_frac: float | None
    host_overhead_frac: float | None
    iteration_computing_frac: float | None
    iteration_exposed_comm_frac: float | None
    iteration_exposed_memcpy_frac: float | None
    iterations: int
    largest_term: str | None
    largest_term_frac: float | None
    mean_iteration_us: float | None
    mean_step_us: float | None
    other_idle_frac: float | None
    steps: int
    wall_backward_frac: float | None
    wall_forward_frac: float | None
    wall_optimizer_frac: float | None
    wall_other_frac: float | None
    tokens_per_s_per_device: float | None | UnsetType = UNSET
    mfu_frac: float | None | UnsetType = UNSET
    hfu_frac: float | None | UnsetType = UNSET
    mfu_formula: str | None | UnsetType = UNSET
    hfu_formula: str | None | UnsetType = UNSET


class CrossRank(Row):
    """What the ranks do to each other (several ranks): the straggler, waits, step skew, collectives
    (`cross_rank`)."""

    collectives: list[CollectiveRow]
    ranks: list[WaitRow]
    step_skew: list[StepSkewRow]
    straggler: int | None


class ExpectedSection(Row):
    """The analytical model (with a model configuration): its configuration, verdict and terms
    (`expected`)."""

    config: ModelConfig
    verdict: str
    terms: list[ExpectedTermRow]


class Summary(Row):
    """The summary document of a profile (`build_summary`, `traceview summary --format json`; `the
    document`)."""

    companions: list[CompanionRow]
    failures: list[str]
    findings: list[FindingRow]
    findings_by_rule: list[FindingByRuleRow]
    headline: Headline
    kernels: list[KernelRow]
    operators: list[OperatorRow]
    ranks: list[RankSection]
    source: str
    warnings: list[str]
    what_if: list[WhatIfRow]
    cross_rank: CrossRank | None | UnsetType = UNSET
    throughput: list[ThroughputRow] | None | UnsetType = UNSET
    expected: ExpectedSection | None | UnsetType = UNSET


def document(doc: dict) -> Summary:
    """`doc` (`build_summary`'s document, or one read back from JSON) as a typed `Summary`;
    msgspec.ValidationError naming the path of what does not match the declaration."""
    return msgspec.convert(doc, Summary)


def json_schema() -> dict:
    """The JSON Schema of the summary document (docs/summary.schema.json)."""
    return msgspec.json.schema(Summary)
