"""The index page of a batch of reports (`traceview report A B C --out-dir DIR`): one row per
profile with its headline numbers, linked to its report, or why it failed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from traceview.dashboards.html_page import esc
from traceview.terms import EXPOSED_COMM


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
    first = summary.get("headline") or {}
    entry.ranks = len(ranks)
    entry.device = ", ".join(sorted({r["device"] for r in ranks if r.get("device")})) or None
    if first.get("mean_step_us") is not None:
        entry.step_ms = first["mean_step_us"] / 1000
    entry.exposed_comm_frac = first.get(f"{EXPOSED_COMM}_frac")
    entry.findings = len(summary.get("findings") or [])
    entry.failures = list(summary.get("failures") or [])


def relative_link(path: str) -> str:
    """A link to a file beside the page: `./` plus the percent-encoded path, so that no file name
    (`javascript:alert(1).report.html`) is read as a URL scheme, a query or a fragment."""
    return "./" + quote(path, safe="/")


def index_html(entries: list[BatchEntry], out_dir: Path) -> str:
    """The index page of a `traceview report --out-dir` batch: one row per profile
    (`traceview.cli.report.BatchEntry`), linked to its report; failures in red."""
    rows = []
    for e in entries:
        if e.error:
            rows.append(
                f'<tr class="failed"><td class="t">{esc(e.source)}</td><td colspan="5" class="t bad">'
                f"failed: {esc(e.error)}</td></tr>"
            )
            continue
        link = esc(relative_link(e.output.relative_to(out_dir).as_posix())) if e.output else ""
        status = "ok" if not e.failures else f"{len(e.failures)} failed rank(s): " + "; ".join(e.failures)
        rows.append(
            f'<tr><td class="t"><a href="{link}">{esc(e.source)}</a></td><td>{esc(e.ranks)}</td><td class="t">{esc(e.device)}</td>'
            f"<td>{'-' if e.step_ms is None else f'{e.step_ms:,.3f}'}</td>"
            f"<td>{'-' if e.exposed_comm_frac is None else f'{e.exposed_comm_frac * 100:.1f}'}</td>"
            f'<td class="t{" bad" if e.failures else ""}">{esc(status)} · {e.findings} finding(s)</td></tr>'
        )
    failed = sum(1 for e in entries if e.error or e.failures)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>traceview reports</title><style>'
        "body{font-family:system-ui,sans-serif;margin:20px}table{border-collapse:collapse}td,th{border-bottom:1px solid #e5e7eb;"
        "padding:4px 10px;text-align:right}.t{text-align:left}.bad{color:#b91c1c}</style></head><body>"
        f"<h1>traceview reports</h1><p>{len(entries)} profile(s), {failed} with failures.</p>"
        '<table id="index"><thead><tr><th class="t">profile</th><th>ranks</th><th class="t">device</th>'
        '<th>mean step (ms)</th><th>exposed comm (% of step)</th><th class="t">status</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></body></html>"
    )
