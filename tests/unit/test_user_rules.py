"""A user's rules file for all tables (`traceview.load(rules=...)`, `--rules`), read once into a
`RuleSet`: every table it extends changes the numbers that read it, on every parse path (workers
included, which read no file), cached analyses are those of the rules they were computed with,
and a bad file is one line before anything is parsed (docs/rules.md).

This file holds the topic's unit tests; the others are in tests/integration/test_user_rules.py.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import traceview as tv
from tests.conftest import DATA, run_cli
from tests.support.user_rules_shared import DP4, GEMM, RULES, SAMPLES, _gemms, _kinds, rules_file  # noqa: F401
from traceview import cache, executors, ruleset
from traceview.cache import unpack
from traceview.errors import TraceError

ASCEND = SAMPLES / "ascend_2rank"


def test_user_task_kinds_make_matching_kernels_communication(rules_file, tmp_path):
    shipped = tv.load(DP4, cache_dir=tmp_path / "c")
    user = tv.load(DP4, cache_dir=tmp_path / "c", rules=rules_file)
    assert _gemms(shipped).height > 0
    assert set(_gemms(shipped)["kind"]) == {"kernel"}
    assert set(_gemms(user)["kind"]) == {"communication"}
    moved = _gemms(shipped).height
    assert _kinds(user)["communication"] == _kinds(shipped)["communication"] + moved
    assert _kinds(user)["kernel"] == _kinds(shipped)["kernel"] - moved
    # the breakdown reads the kinds: more communication time
    assert user.step_breakdown()["communication_us"].sum() > shipped.step_breakdown()["communication_us"].sum()


def test_the_rules_enter_the_cache_key(rules_file, tmp_path):
    """A rank cached with the shipped rules is parsed again with the user's, and back."""
    cache_dir = tmp_path / "c"
    first = _kinds(tv.load(DP4, cache_dir=cache_dir))
    with_rules = _kinds(tv.load(DP4, cache_dir=cache_dir, rules=rules_file))
    again = _kinds(tv.load(DP4, cache_dir=cache_dir))
    again_with = _kinds(tv.load(DP4, cache_dir=cache_dir, rules=rules_file))
    assert first == again != with_rules == again_with
    assert len(list(cache_dir.iterdir())) == 2  # the 4 small ranks' group entry x 2 rule sets


def test_a_worker_process_parses_with_the_users_task_kinds(rules_file):
    """The worker entry (local process pool and Ray) gets the section with the source."""
    rank = sorted(DP4.glob("*.pt.trace.json*"))[0]
    section = ruleset.build(rules_file).task_kinds
    for given, expected in (("", {"kernel"}), (section, {"communication"})):
        _, error, files = executors.parse_packed([("kineto", str(rank), given)], False)
        assert error is None
        tasks = unpack(files).frames["device_tasks"]
        assert set(tasks.filter(pl.col("name").str.contains(GEMM))["kind"]) == expected


def test_user_ascend_rules_come_before_the_shipped_ones(tmp_path):
    shipped = tv.load(ASCEND, use_cache=False)
    name = shipped.device_tasks.filter(pl.col("kind") == "kernel")["name"].value_counts(sort=True)["name"][0]
    path = tmp_path / "rules.toml"
    pattern = "^" + "".join(c if c.isalnum() else "." for c in name) + "$"
    path.write_text(f'[[task_kinds.ascend.rule]]\nfield = "name"\npattern = "{pattern}"\nkind = "memcpy"\n')
    user = tv.load(ASCEND, use_cache=False, rules=path)
    assert set(user.device_tasks.filter(pl.col("name") == name)["kind"]) == {"memcpy"}
    others = shipped.device_tasks.filter(pl.col("name") != name)
    assert _kinds(user)["memcpy"] == _kinds(shipped).get("memcpy", 0) + (shipped.device_tasks.height - others.height)


def test_classes_peaks_and_findings_of_the_file_reach_every_analysis(rules_file, tmp_path):
    shipped = tv.load(DP4, use_cache=False)
    user = tv.load(DP4, use_cache=False, rules=rules_file)
    assert user.rules.files == (str(rules_file.resolve()),)

    def attention(t, **kw):
        return t.compute_classes(**kw).filter(pl.col("class") == "attention")["count"].sum()

    assert attention(user) > attention(shipped)
    peak = user.run("throughput", tokens_per_step=1e5, params=1e9)
    assert set(peak["peak_source"]) == {"the user's box"} and set(peak["peak_tflops"]) == {100.0}
    assert "straggler" in set(shipped.run("findings")["rule"])
    assert "straggler" not in set(user.run("findings")["rule"])
    # a selection of steps keeps the file
    step = int(user.steps["step"].min())
    assert attention(user.select_steps([step])) > attention(shipped.select_steps([step]))


def test_a_file_of_one_table_comes_before_the_rules_file(rules_file, tmp_path):
    """`--classes FILE` is `--rules` for one table: its entries come first."""
    mine = tmp_path / "mine.toml"
    mine.write_text('[[rule]]\nclass = "normalization"\nname = "elementwise"\n')
    rules = ruleset.build(rules_file, compute_classes=mine)
    assert rules.files == (str(mine.resolve()), str(rules_file.resolve()))
    user = tv.load(DP4, use_cache=False, rules=rules)
    counts = user.compute_classes()
    assert counts.filter(pl.col("class") == "normalization")["count"].sum() > 0
    classified = user.classified_tasks()
    elementwise = classified.filter(pl.col("name").str.contains("elementwise"))
    assert set(elementwise["compute_class"]) == {"normalization"}
    # without the table file, the rules file's entry wins
    only = tv.load(DP4, use_cache=False, rules=rules_file).classified_tasks()
    assert set(only.filter(pl.col("name").str.contains("elementwise"))["compute_class"]) == {"attention"}


def test_with_rules_gives_the_same_frames_other_numbers(tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text('[[compute_classes.rule]]\nclass = "normalization"\nname = "elementwise"\n')
    shipped = tv.load(DP4, use_cache=False)
    before = shipped.compute_classes()
    user = shipped.with_rules(mine)
    assert user.device_tasks is shipped.device_tasks
    assert user.compute_classes().filter(pl.col("class") == "normalization")["count"].sum() > 0
    assert shipped.compute_classes().equals(before)  # the first trace keeps its rules and numbers
    kinds = tmp_path / "kinds.toml"
    kinds.write_text(f'[[task_kinds.kineto.communication]]\npattern = "{GEMM}"\n')
    with pytest.raises(TraceError, match="task kinds, which apply while parsing"):
        shipped.with_rules(kinds)


def test_a_rank_cached_alone_keeps_the_analyses_of_the_rules_of_the_last_load(tmp_path):
    """One small rank (its analyses computed by the driver and added to its cache entry): loads
    with a user's rules and without, in both orders over one cache, each give the numbers of an
    uncached load with the same rules, and the entry's stamp names the rules of the last."""
    import orjson

    profile = DATA / "kineto_gpu_annotation.json"
    mine = tmp_path / "mine.toml"
    mine.write_text('[[compute_classes.rule]]\nclass = "normalization"\nname = "."\n')
    expected = {
        "mine": tv.load(profile, use_cache=False, rules=mine).compute_classes(),
        "shipped": tv.load(profile, use_cache=False).compute_classes(),
    }
    assert not expected["mine"].equals(expected["shipped"])
    cache_dir = tmp_path / "c"
    for which in ("mine", "mine", "shipped", "shipped", "mine"):
        rules = mine if which == "mine" else None
        got = tv.load(profile, cache_dir=cache_dir, analyse=True, rules=rules).compute_classes()
        assert got.equals(expected[which]), which
        (entry,) = cache_dir.iterdir()
        stamp = orjson.loads((entry / cache.STAMP_FILE).read_bytes())
        assert stamp["rules"] == ruleset.build(rules).digest, which


def test_diff_analyses_a_trace_and_a_path_with_the_same_rules(tmp_path):
    """tv.diff(rules=...): the loaded Trace is taken with the rules, the path loaded with them."""
    mine = tmp_path / "mine.toml"
    mine.write_text('[[compute_classes.rule]]\nclass = "normalization"\nname = "elementwise"\n')
    d = tv.diff(tv.load(DP4, use_cache=False), DP4, rules=mine)
    row = d.classes.filter(pl.col("class") == "normalization").row(0, named=True)
    assert row["base_count"] > 0 and row["base_count"] == row["new_count"]


def test_a_file_without_a_section_changes_nothing_there(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text('[[device_peaks.rule]]\nname = "x"\nmatch = "nothing matches this"\npeak_tflops = 1.0\n')
    shipped = tv.load(DP4, use_cache=False)
    user = tv.load(DP4, use_cache=False, rules=path)
    assert user.rules.tables == {"device_peaks"}
    assert _kinds(user) == _kinds(shipped)
    assert user.compute_classes().equals(shipped.compute_classes())
    assert user.run("findings").equals(shipped.run("findings"))


BAD = {
    "unknown section": (
        "[[compute_class.rule]]\nclass = 'gemm'\nname = 'x'\n",
        "unknown top-level key(s) compute_class",
    ),
    "a file of one table": ("[[rule]]\nclass = 'gemm'\nname = 'x'\n", "unknown top-level key(s) rule"),
    # the operator FLOP tables are shipped only: a section for them is refused, not ignored
    "an operator FLOP section": ("[[op_flops.rule]]\nname = 'aten::mm'\n", "unknown top-level key(s) op_flops"),
    "bad regex": ("[[task_kinds.kineto.communication]]\npattern = '(?<=a)b'\n", "look-around"),
    "unknown field": (
        "[[task_kinds.ascend.rule]]\nfield = 'nam'\npattern = 'a'\nkind = 'memcpy'\n",
        "'field' must be one of name, op_type, core_type",
    ),
    "unknown kind": (
        "[[task_kinds.mindspore.rule]]\nfield = 'name'\npattern = 'a'\nkind = 'comm'\n",
        "'kind' must be one of",
    ),
    "extra key": ("[[task_kinds.kineto.communication]]\npattern = 'a'\nkind = 'x'\n", "unknown key(s) kind"),
    "unknown class": ("[[compute_classes.rule]]\nclass = 'gem'\nname = 'x'\n", "unknown class 'gem'"),
    "turn off a rule that is not there": ("[[findings.rule]]\nid = 'stragler'\nenabled = false\n", "no such rule"),
    "peak not a number": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'a'\npeak_tflops = 'fast'\n",
        "'peak_tflops' must be a number from 0.001 to 1e+06, got 'fast'",
    ),
    "not TOML": ("[[task_kinds", "invalid TOML"),
    "devices per package 0": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'a'\npeak_tflops = 1.0\ndevices_per_package = 0\n",
        "'devices_per_package' must be an integer from 1 to 1024, got 0",
    ),
    # issue 30: every number of a device entry is finite, positive and in range, checked before parsing
    "peak inf": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'a'\npeak_tflops = inf\n",
        "device peak 1 ('x'): 'peak_tflops' must be a number from 0.001 to 1e+06, got inf",
    ),
    "dtype peak nan": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'a'\npeak_tflops = 1.0\ntflops = { bf16 = nan }\n",
        "'tflops.bf16' must be a number from 0.001 to 1e+06, got nan",
    ),
    "subnormal memory bandwidth": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'a'\npeak_tflops = 1.0\nmemory_tbps = 1e-310\n",
        "'memory_tbps' must be a number from 0.001 to 1e+06, got 1e-310",
    ),
    "negative link": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'a'\npeak_tflops = 1.0\nlink_gbps = { intra = -5.0 }\n",
        "'link_gbps.intra' must be a number from 0.001 to 1e+06, got -5.0",
    ),
    "unknown link": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'a'\npeak_tflops = 1.0\nlink_gbps = { intr = 5.0 }\n",
        "'link_gbps' has unknown key 'intr' (allowed: intra, inter)",
    ),
    "misspelt device key": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'a'\npeak_tflops = 1.0\nmemory_tpbs = 2.0\n",
        "unknown key(s) memory_tpbs",
    ),
    "look-around in a device match": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'H100(?!.*PCIe)'\npeak_tflops = 1.0\n",
        "device peak 1 ('x'): invalid regex for 'match': 'H100(?!.*PCIe)'",
    ),
    "look-around in a device exclude": (
        "[[device_peaks.rule]]\nname = 'x'\nmatch = 'H100'\nexclude = '(?<=x)y'\npeak_tflops = 1.0\n",
        "a device name the entry must not match goes in 'exclude'",
    ),
    "findings threshold nan": (
        "[[findings.rule]]\nid = 'exposed_communication'\nabove = nan\n",
        "rule 'exposed_communication': 'above' must be a finite number, got nan",
    ),
    "findings critical inf": (
        "[[findings.rule]]\nid = 'exposed_communication'\nabove = 0.1\ncritical = inf\n",
        "rule 'exposed_communication': 'critical' must be a finite number, got inf",
    ),
    "findings below -inf": (
        "[[findings.rule]]\nid = 'long_step'\nbelow = -inf\n",
        "rule 'long_step': 'below' must be a finite number, got -inf",
    ),
    "findings when with too many terms": (
        "[[findings.rule]]\nid = 'long_step'\nwhen = '" + " and ".join(["steps >= 1"] * 2000) + "'\n",
        "rule 'long_step': 'when' 'steps >= 1 and steps >= 1 and steps >= 1 and steps >= 1 ...': more than 200 terms",
    ),
    "findings when nested too deep": (
        "[[findings.rule]]\nid = 'long_step'\nwhen = '" + "not " * 3000 + "is_straggler'\n",
        "more than 32 levels of 'not' and parentheses",
    ),
    "findings when with an infinite number": (
        "[[findings.rule]]\nid = 'long_step'\nwhen = 'steps > 1e999'\n",
        "'when' 'steps > 1e999': a number must be finite, found '1e999' at column 9",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_rules_file_is_one_line_before_anything_is_parsed(case, tmp_path, monkeypatch):
    text, expected = BAD[case]
    path = tmp_path / "rules.toml"
    path.write_text(text)
    parsed = []
    monkeypatch.setattr(executors, "parse_source", lambda *a, **k: parsed.append(a) or None)
    with pytest.raises(TraceError) as info:
        tv.load(DP4, cache_dir=tmp_path / "c", rules=path)
    message = str(info.value)
    assert str(path) in message and expected in message and "\n" not in message
    assert parsed == [] and not (tmp_path / "c").exists()


def test_a_missing_rules_file_is_one_line(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        tv.load(DP4, rules=tmp_path / "absent.toml")


def test_the_rules_file_is_read_once_per_summary(rules_file, monkeypatch):
    """The checks before the load and every table that reads the file share one read (it was
    opened 9 times in one `summary`); an edited file is read again."""
    from traceview import rules as rule_tables

    reads = []
    read_bytes = Path.read_bytes

    def counted(self):
        if self.name == rules_file.name:
            reads.append(self)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    rule_tables._parsed.cache_clear()
    done = run_cli("summary", str(DP4), "--format", "json", "-q", "--no-cache", "--rules", str(rules_file))
    assert done.returncode == 0, done.stderr
    assert len(reads) == 1
    doc = rule_tables.read(rules_file)
    doc["findings"]["rule"][0]["id"] = "changed by a reader"  # a copy: no other reader sees it
    assert rule_tables.read(rules_file)["findings"]["rule"][0]["id"] == "straggler"
    assert len(reads) == 1
    rules_file.write_text(RULES.replace("100.0", "200.0"))  # another size: another file
    assert rule_tables.read(rules_file)["device_peaks"]["rule"][0]["peak_tflops"] == 200.0
    assert len(reads) == 2
