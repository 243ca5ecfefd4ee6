"""Issue 30, the rule tables and configuration inputs: each hostile input ends in seconds, in a
fresh process under the 1.5 GB limit (tests/support/bounded.py), with its numbers or with one line
(exit 1 for a rules file, 2 for a usage error) before the profile is read.

- A device name from the trace ("A10080GB" x 2,000; "V100" x 20,000) kept `summary` busy for
  minutes: Python's backtracking regex over the device table's patterns. Now polars' linear engine.
- A findings `when` of 2,000 `and` terms ran for minutes in polars' optimiser (ignoring SIGTERM);
  3,000 nested `not` was `internal error: RecursionError`. Now a limit of 200 terms and 32 levels.
- nan / inf thresholds and peaks, look-around in a device entry, and out-of-range model keys were
  accepted and failed after the whole load (or printed `nan ms`).
"""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import SAMPLES
from tests.support import bounded

RANK0 = next((SAMPLES / "dp4_nccl").glob("rank0.*.pt.trace.json.gz"))
DEADLINE_S = 20.0
#: The keys the analytical model needs besides the one a case breaks.
MODEL = ["--model", "layers=2", "--model", "heads=2", "--model", "seq=128", "--model", "micro_batch=1"]


def _profile_with_device_name(folder, name: str):
    """dp4_nccl's rank 0 with every deviceProperties name replaced by `name`."""
    doc = json.loads(gzip.decompress(RANK0.read_bytes()))
    for props in doc["deviceProperties"]:
        props["name"] = name
    folder.mkdir()
    (folder / "rank0.pt.trace.json").write_text(json.dumps(doc))
    return folder


def _rules(tmp_path, text: str):
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "name, entry",
    [("A10080GB" * 2000, "NVIDIA A100 80GB SXM"), ("V100" * 20000, "NVIDIA V100 SXM2")],
    ids=["A10080GB x 2000", "V100 x 20000"],
)
def test_a_long_device_name_ends_in_seconds(tmp_path, name, entry):
    profile = _profile_with_device_name(tmp_path / "p", name)
    args = [
        "summary",
        str(profile),
        "--no-cache",
        "-q",
        "--format",
        "json",
        "--tokens-per-step",
        "1e3",
        "--params",
        "1e6",
    ]
    out = bounded.run(args, DEADLINE_S)
    assert out.returncode == 0, (out.seconds, out.lines[-3:])
    assert out.peak_rss_bytes < bounded.MEMORY_LIMIT
    assert {row["peak_source"] for row in json.loads(out.stdout)["throughput"]} == {entry}  # the device was found


# (rules file, what the one line says): each a rules error (exit 1) before the profile is read.
BAD_RULES = {
    "when with 2,000 terms": (
        "[[findings.rule]]\nid = 'long_step'\nwhen = '" + " and ".join(["steps >= 1"] * 2000) + "'\n",
        "rule 'long_step': 'when' 'steps >= 1 and steps >= 1 and steps >= 1 and steps >= 1 ...': "
        "more than 200 terms (comparisons or Boolean facts)",
    ),
    "when with 20,000 terms": (
        "[[findings.rule]]\nid = 'long_step'\nwhen = '" + " and ".join(["steps >= 1"] * 20000) + "'\n",
        "more than 200 terms",
    ),
    "3,000 nested not": (
        "[[findings.rule]]\nid = 'long_step'\nwhen = '" + "not " * 3000 + "is_straggler'\n",
        "rule 'long_step': 'when' 'not not not not not not not not not not not not not not ...': "
        "more than 32 levels of 'not' and parentheses nested in each other",
    ),
    "3,000 nested parentheses": (
        "[[findings.rule]]\nid = 'long_step'\nwhen = '" + "(" * 3000 + "is_straggler" + ")" * 3000 + "'\n",
        "more than 32 levels",
    ),
    "threshold nan": (
        "[[findings.rule]]\nid = 'exposed_communication'\nabove = nan\n",
        "rule 'exposed_communication': 'above' must be a finite number, got nan",
    ),
    "peak inf": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = '.'\npeak_tflops = inf\n",
        "device peak 1 ('x'): 'peak_tflops' must be a number from 0.001 to 1e+06, got inf",
    ),
    "look-around in a device entry": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'H100(?!.*PCIe)'\npeak_tflops = 900.0\n",
        "a device name the entry must not match goes in 'exclude'",
    ),
}


@pytest.mark.parametrize("profile", ["absent", "dp4_nccl"])
@pytest.mark.parametrize("case", sorted(BAD_RULES))
def test_a_bad_rules_file_is_one_line_before_the_profile_is_read(tmp_path, case, profile):
    """On an absent profile a line about the rules proves they are read first; on the sample, a
    rules file that was accepted would run its analyses (2,000 terms: minutes)."""
    text, problem = BAD_RULES[case]
    rules = _rules(tmp_path, text)
    path = tmp_path / "absent" if profile == "absent" else SAMPLES / profile
    out = bounded.run(["summary", str(path), "--no-cache", "-q", "--rules", str(rules)], DEADLINE_S)
    assert out.returncode == 1, (out.seconds, out.lines[-3:])
    assert len(out.lines) == 1 and out.lines[0].startswith(f"traceview: error: {rules}: ")
    assert problem in out.lines[0] and len(out.lines[0]) < 1000


def test_a_bad_device_rules_file_of_roofline_is_one_line_before_the_profile_is_read(tmp_path):
    rules = _rules(tmp_path, "[[device_peaks.rule]]\nname = 'x'\nmatch = '.'\npeak_tflops = inf\n")
    out = bounded.run(["roofline", str(tmp_path / "absent"), "--no-cache", "--device-rules", str(rules)], DEADLINE_S)
    assert out.returncode == 1 and len(out.lines) == 1
    assert out.lines[0].startswith(f"traceview: error: {rules}: device peak 1 ('x'): 'peak_tflops' must be")


@pytest.mark.parametrize(
    "args, problem",
    [
        (["--model", "hidden=1" + "0" * 300], "hidden must be a positive integer from 1 to 2,147,483,648"),
        (["--model", "hidden=18446744073709551616", "--format", "json"], "hidden must be a positive integer"),
        (["--model", "hidden=64", "--model", "memory_tbps=1e-310"], "memory_tbps must be a positive number"),
        (["--model", "hidden=64", "--model", "peak_tflops=1e7"], "peak_tflops must be a positive number"),
        (["--peak-tflops", "inf", "--tokens-per-step", "1", "--params", "1"], "'inf' is not a positive finite number"),
        (["--params", "nan", "--tokens-per-step", "1"], "'nan' is not a positive finite number"),
    ],
    ids=[
        "hidden 1e300",
        "hidden 2**64 json",
        "memory_tbps 1e-310",
        "peak_tflops 1e7",
        "--peak-tflops inf",
        "--params nan",
    ],
)
def test_a_bad_model_value_is_a_usage_error_before_the_profile_is_read(tmp_path, args, problem):
    out = bounded.run(["summary", str(tmp_path / "absent"), "--no-cache", "-q", *MODEL, *args], DEADLINE_S)
    assert out.returncode == 2, (out.seconds, out.lines[-3:])
    errors = [line for line in out.lines if line.startswith("Error: ")]
    assert len(errors) == 1 and problem in errors[0] and "Traceback" not in out.stderr
