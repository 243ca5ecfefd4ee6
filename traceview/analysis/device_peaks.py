"""The device table (`traceview/rules/device_peaks.toml`, a user's `[[device_peaks.rule]]` entries
first): each device's peaks, found by the device name a trace records.

An entry's keys (docs/rules.md, docs/roofline.md):
- name: the product (text); match: a regex searched, case-insensitively, in the device name;
  exclude (optional): a regex that, found in the device name, makes the entry not match (Rust regex
  has no look-around: "H100 but not the PCIe or NVL part" is match = "H[18]00", exclude =
  "H[18]00.*(PCI[Ee]|NVL)"). The first entry that matches wins.
- peak_tflops: dense BF16/FP16 peak per datasheet product, TFLOP/s; tflops: dense peak per dtype
  (a table of dtype = TFLOP/s); memory_tbps: memory bandwidth, TB/s; memory_gib: memory size, GiB;
  link_gbps: { intra, inter }, GB/s per direction. Each a number from RATE_RANGE (1e-3 to 1e6 in
  its unit), so finite and positive.
- devices_per_package: devices one datasheet product is (1 to 1024, default 1); dtype: the dtype
  of peak_tflops (text); approximate: true when no datasheet states the figures (default false).

Device names come from the trace, so from anyone: they are matched with polars' regex engine
(Rust, linear time in the name, like every other rule table), once per distinct name and table
(a backtracking regex over a 16 KB name ran for minutes).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import polars as pl

from traceview import rules as rule_tables

PEAKS_FILE = rule_tables.shipped_path("device_peaks")

#: The range of every rate and size of an entry, in its unit (TFLOP/s, TB/s, GB/s, GiB).
RATE_RANGE = (1e-3, 1e6)
#: The range of devices_per_package.
PACKAGE_RANGE = (1, 1024)
KEYS = ("name", "match", "exclude", "peak_tflops", "dtype", "tflops", "memory_tbps", "memory_gib")
KEYS += ("link_gbps", "devices_per_package", "approximate")
LINKS = ("intra", "inter")
_LOOK_AROUND = "; a device name the entry must not match goes in 'exclude'"


def peak_entries(user: Sequence[tuple[str, dict]] = ()) -> tuple[dict, ...]:
    """The device peak table: a user's entries first (`user`: (file, its device-peaks part) pairs,
    from `traceview.ruleset`; each part's `[[rule]]` entries), then the shipped `[[rule]]` entries
    of device_peaks.toml, in order (keys: the module docstring). RulesError (a ValueError) naming
    the file and the entry for a missing or unknown key, a bad regex, or a number that is not one,
    out of range, nan or inf."""
    found: list[dict] = []
    for label, doc in user:
        found += _checked_peaks(doc, label)
    return tuple(found) + shipped_entries()


@functools.cache
def shipped_entries() -> tuple[dict, ...]:
    """The shipped device peak table (read and checked once per process)."""
    return _checked_peaks(rule_tables.shipped("device_peaks"), PEAKS_FILE)


def _checked_peaks(doc: dict, file) -> tuple[dict, ...]:
    entries = rule_tables.entries(doc, file)
    for i, e in enumerate(entries, start=1):
        _check_entry(e, f"{file}: device peak {i}")
    return tuple(entries)


def _check_entry(e: dict, where: str) -> None:
    if not {"name", "match", "peak_tflops"} <= set(e):
        raise rule_tables.RulesError(f"{where}: needs name, match and peak_tflops")
    if not isinstance(e["name"], str) or not e["name"].strip():
        raise rule_tables.RulesError(f"{where}: 'name' must be a non-empty string, got {rule_tables.shown(e['name'])}")
    where = f"{where} ({rule_tables.shown(e['name'])})"
    unknown = sorted(set(e) - set(KEYS))
    if unknown:
        raise rule_tables.RulesError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(KEYS)})")
    for key in ("match", "exclude"):
        if key in e:
            rule_tables.check_regex(e[key], where, key, prefix="(?i)", hint=_LOOK_AROUND)
    for key in ("peak_tflops", "memory_tbps", "memory_gib"):
        if key in e:
            rule_tables.check_number(e[key], where, key, *RATE_RANGE)
    for key, names in (("tflops", None), ("link_gbps", LINKS)):
        if key not in e:
            continue
        if not isinstance(e[key], dict) or not e[key]:
            raise rule_tables.RulesError(
                f"{where}: '{key}' must be a table of numbers, got {rule_tables.shown(e[key])}"
            )
        for sub, value in e[key].items():
            if names is not None and sub not in names:
                raise rule_tables.RulesError(f"{where}: '{key}' has unknown key {sub!r} (allowed: {', '.join(names)})")
            rule_tables.check_number(value, where, f"{key}.{sub}", *RATE_RANGE)
    if "devices_per_package" in e:
        rule_tables.check_number(e["devices_per_package"], where, "devices_per_package", *PACKAGE_RANGE, integer=True)
    if "dtype" in e and (not isinstance(e["dtype"], str) or not e["dtype"]):
        raise rule_tables.RulesError(f"{where}: 'dtype' must be a string, got {rule_tables.shown(e['dtype'])}")
    if "approximate" in e and not isinstance(e["approximate"], bool):
        raise rule_tables.RulesError(
            f"{where}: 'approximate' must be true or false, got {rule_tables.shown(e['approximate'])}"
        )


def device_peak(device_name: str | None, peaks: Sequence[dict] | None = None, needs: str | None = None) -> dict | None:
    """The entry of the device peak table `peaks` (`peak_entries`; None: the shipped table) for a
    device name (the first that matches; with `needs`, the first that matches and gives that key,
    e.g. the roofline's `tflops`), with `per_device_tflops` = peak_tflops / devices_per_package
    added; None when no entry matches (or no name)."""
    if not device_name or not isinstance(device_name, str):
        return None
    entries = shipped_entries() if peaks is None else peaks
    hits = _matches(device_name, tuple((e["match"], e.get("exclude")) for e in entries))
    for entry, hit in zip(entries, hits):
        if hit and (needs is None or needs in entry):
            per_device = float(entry["peak_tflops"]) / int(entry.get("devices_per_package", 1))
            return {**entry, "per_device_tflops": per_device}
    return None


@functools.lru_cache(maxsize=256)
def _matches(name: str, patterns: tuple[tuple[str, str | None], ...]) -> tuple[bool, ...]:
    """Whether each (match, exclude) pair matches `name`: match found and exclude (if any) not
    found, case-insensitively, by polars' linear-time regex engine."""
    text = pl.col("name")
    tests = []
    for i, (match, exclude) in enumerate(patterns):
        test = text.str.contains("(?i)" + match)
        if exclude:
            test = test & ~text.str.contains("(?i)" + exclude)
        tests.append(test.alias(str(i)))
    if not tests:
        return ()
    return tuple(bool(v) for v in pl.DataFrame({"name": [name]}, schema={"name": pl.String}).select(tests).row(0))
