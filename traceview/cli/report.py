"""`traceview report`: where reports go, one profile or a batch with an index page.

One profile: the report goes beside the input (`run1/` -> `run1.report.html`, `rank0.json.gz` ->
`rank0.report.html`; `.json`, `.csv`/`.parquet` folders likewise) unless `-o` names it. An
existing output is never overwritten without `--force`. Several profiles need `--out-dir DIR`:
one report per profile, named after it (made unique), and `DIR/index.html` listing each with its
headline numbers, or why it failed; the others are still written when one fails.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from traceview.errors import TraceError

SUFFIX = {"html": ".report.html", "json": ".report.json", "csv": ".report-csv", "parquet": ".report-parquet"}
TRACE_EXTENSIONS = (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json")


def profile_stem(path: Path) -> str:
    """The profile's name without trace extensions (`rank0.pt.trace.json.gz` -> `rank0`)."""
    name = path.resolve().name or "profile"
    for ext in TRACE_EXTENSIONS:
        if name.lower().endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


def default_output(path: Path, fmt: str) -> Path:
    """Beside the input: the input's folder, the profile's name + the format's suffix."""
    return path.resolve().parent / (profile_stem(path) + SUFFIX[fmt])


def check_writable(out: Path, force: bool) -> None:
    if out.exists() and not force:
        raise TraceError(None, f"{out} exists: pass --force to overwrite it (or -o another path)")
    if not out.parent.is_dir():
        raise TraceError(None, f"cannot write {out}: no folder {out.parent} (create it, or pass -o elsewhere)")


def write_output(out: Path, fmt: str, render, force: bool) -> None:
    """Write the report in `fmt`; `render` gives the HTML text, or the summary for data formats.
    Writes a temporary file/folder first, then moves it in place (no half-written report)."""
    tmp = out.with_name(out.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
    if fmt == "html":
        tmp.write_text(render(), encoding="utf-8")
    elif fmt == "json":
        tmp.write_bytes(orjson.dumps(render(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    else:
        from traceview.export import write_tables

        write_tables(render(), tmp, fmt)
    if out.exists() and force:
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    tmp.replace(out)


@dataclass
class BatchEntry:
    """One profile of a batch: where its report went, its headline numbers, or why it failed."""

    source: Path
    output: Path | None = None
    error: str | None = None
    ranks: int | None = None
    device: str | None = None
    step_ms: float | None = None
    exposed_comm_frac: float | None = None
    findings: int = 0
    failures: list[str] = field(default_factory=list)


def headline(entry: BatchEntry, summary: dict) -> None:
    """Fill `entry` from a summary: ranks, device, mean step time (ms), exposed communication share."""
    ranks = summary.get("ranks", [])
    steps = [s for r in ranks for s in r["steps"] if s.get("duration_us")]
    entry.ranks = len(ranks)
    entry.device = ", ".join(sorted({r["device"] for r in ranks if r.get("device")})) or None
    if steps:
        entry.step_ms = sum(s["duration_us"] for s in steps) / len(steps) / 1000
        total = sum(s["duration_us"] for s in steps)
        entry.exposed_comm_frac = sum(s.get("communication_not_overlapped_us") or 0 for s in steps) / total
    entry.findings = len(summary.get("findings") or [])
    entry.failures = list(summary.get("failures") or [])


def unique_names(paths: list[Path]) -> list[str]:
    """Report names for a batch: the profile names, with -2, -3 ... where two are equal."""
    seen: dict[str, int] = {}
    names = []
    for path in paths:
        stem = profile_stem(path)
        seen[stem] = seen.get(stem, 0) + 1
        names.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
    return names
