"""`traceview` commands. Every command: errors are one line on stderr and exit 1 (usage errors
exit 2); `-v` adds the traceback."""

from __future__ import annotations

import os
import sys
import traceback
from functools import wraps
from pathlib import Path

import click

from traceview.cli import outputs
from traceview.cli.options import AdviceOptions, ClassOptions, ExpectOptions, LoadOptions, ModelOptions
from traceview.version import __version__


def echo(text: str) -> None:
    """Print on stdout what traceview laid out, any control character in it escaped
    (`traceview.cli.text.printable`: names from a trace never drive the terminal)."""
    from traceview.safe_text import printable

    click.echo(printable(text))


def echo_err(line: str) -> None:
    """One line on stderr (a warning or an error), escaped as one line."""
    from traceview.safe_text import one_line

    click.echo(one_line(line), err=True)


def _fail(message: str, verbose: bool) -> None:
    if verbose:
        traceback.print_exc()
    echo_err(f"traceview: error: {message}")
    sys.exit(1)


def handle_errors(func):
    """Turn TraceError (and any unexpected exception) into one stderr line and exit 1."""

    @wraps(func)
    def wrapper(*args, **kwargs):
        from traceview.errors import TraceError

        verbose = bool(click.get_current_context().find_root().params.get("verbose"))
        try:
            return func(*args, **kwargs)
        except TraceError as exc:
            _fail(str(exc), verbose)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`Terminated`): one line, no traceback
            term = isinstance(exc, Terminated)
            echo_err(f"traceview: {'terminated' if term else 'interrupted'}")
            sys.exit(143 if term else 130)
        except MemoryError:
            _fail("out of memory while loading (load fewer ranks with --ranks, or a smaller profile)", verbose)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - last line of defence: never a bare traceback
            _fail(f"internal error: {type(exc).__name__}: {exc} (run with -v for the traceback)", verbose)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="traceview")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks on errors.")
def main(verbose: bool) -> None:
    """Profiler trace analysis for torch.profiler (Kineto) and torch_npu (Ascend) profiles."""


def _warn_on_stderr(warnings: list[str], failures: list[str], fmt: str) -> None:
    """Warnings and failed ranks on stderr, one line each, when stdout is data (json, html) and so
    does not show them to a person (the text output lists them itself)."""
    if fmt == "text":
        return
    for line in warnings:
        echo_err(f"traceview: warning: {line}")
    for line in failures:
        echo_err(f"traceview: error: {line}")


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@outputs.INFO.option()
@LoadOptions.options
@handle_errors
def info(path: Path, fmt: str, load: LoadOptions) -> None:
    """What a profile holds: per rank the format, device, task counts, streams, steps and time span."""
    from traceview.cli.info import info_document

    trace = load.load(path, analyse=False)
    echo(outputs.INFO.render(fmt, info_document(trace)))
    _warn_on_stderr(trace.warnings, trace.failures, fmt)
    if trace.failures:
        sys.exit(1)


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@outputs.ROOFLINE.option()
@click.option("--top", type=click.IntRange(min=1), default=25, show_default=True, help="Rows in the text table.")
@click.option(
    "--device-rules",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Device peak entries (TOML [[rule]]) for a device not in the shipped table: --rules for that one table.",
)
@click.option("--by-step", is_flag=True, help="One row per step too (a step column after rank).")
@ExpectOptions.options
@LoadOptions.options
@handle_errors
def roofline(
    path: Path, fmt: str, top: int, device_rules, by_step: bool, expect: ExpectOptions, load: LoadOptions
) -> None:
    """How far each operator is from the device's limit: FLOPs and bytes from the recorded shapes,
    achieved TFLOP/s and TB/s, the share of the peak and of the roofline, the bound (definitions:
    docs/roofline.md). Needs a profile recorded with record_shapes=True. With --model-config (or
    --model KEY=VALUE), the analytical model's expected step beside the measured one."""
    from traceview.roofline_doc import roofline_result

    config = expect.config()
    if config is not None and fmt == "csv":
        raise click.UsageError("--format csv writes the operator rows only: use --format json or text with --model")
    trace = load.load(path, rules=load.ruleset(device_peaks=device_rules))
    echo(outputs.ROOFLINE.render(fmt, roofline_result(trace, top, config=config, by_step=by_step)))
    _warn_on_stderr(trace.warnings, trace.failures, fmt)
    if trace.failures:
        sys.exit(1)


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@outputs.SUMMARY.option()
@click.option("--step", type=int, default=None, help="Only this step (ProfilerStep#N / Step Id).")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, help="Kernels listed per rank.")
@ClassOptions.options
@ModelOptions.options
@AdviceOptions.options
@ExpectOptions.options
@LoadOptions.options
@handle_errors
def summary(
    path: Path,
    fmt: str,
    step,
    top: int,
    classes: ClassOptions,
    model: ModelOptions,
    advice: AdviceOptions,
    expect: ExpectOptions,
    load: LoadOptions,
) -> None:
    """Where the step time went: per rank and step, computing, exposed communication, overlap,
    exposed memcpy, free, bubble and preparing time (definitions: docs/metrics.md)."""
    from traceview.summary import build_summary

    rules = load.ruleset(**classes.tables(), **advice.tables())
    throughput = model.throughput()
    config = expect.config()
    trace = load.load(path, rules=rules)
    doc = build_summary(
        trace,
        step=step,
        top=top,
        throughput=throughput,
        model_config=config,
        **advice.summary_args(),
    )
    echo(outputs.SUMMARY.render(fmt, doc))
    _warn_on_stderr(doc["warnings"], doc["failures"], fmt)
    if trace.failures:
        sys.exit(1)


@main.command()
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@outputs.DIFF.option()
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, help="Kernels listed per table.")
@click.option("--step", type=int, default=None, help="Compare only this step of both runs (ProfilerStep#N / Step Id).")
@click.option("--whole-trace", is_flag=True, help="Compare whole traces (first to last device task), not steps.")
@ClassOptions.options
@LoadOptions.options
@handle_errors
def diff(
    base: Path, new: Path, fmt: str, top: int, step, whole_trace: bool, classes: ClassOptions, load: LoadOptions
) -> None:
    """What changed from run BASE to run NEW: step time, its decomposition, compute classes, kernels
    and exposed communication per collective, per step and rank (definitions: docs/diff.md)."""
    from traceview.run_diff import diff as compare

    if step is not None and whole_trace:
        raise click.UsageError("give --step or --whole-trace, not both")
    rules = load.ruleset(**classes.tables())
    runs = [load.load(p, rules=rules) for p in (base, new)]
    result = compare(*runs, step=step, whole_trace=whole_trace)
    echo(outputs.DIFF.render(fmt, result.to_dict(top)))
    _warn_on_stderr(result.warnings, result.failures, fmt)
    if result.failures:
        sys.exit(1)


@main.command("compare")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--label",
    "labels",
    multiple=True,
    help="A run's label in the output, once per run in order (default: each path's name).",
)
@outputs.COMPARE.option()
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), default=None, help="Write to this file (default: stdout)."
)
@click.option("--force", is_flag=True, help="Overwrite the -o file if it exists (a regular file only).")
@ModelOptions.options
@LoadOptions.options
@handle_errors
def compare_runs(
    paths: tuple[Path, ...],
    labels: tuple[str, ...],
    fmt: str,
    output,
    force: bool,
    model: ModelOptions,
    load: LoadOptions,
) -> None:
    """N runs side by side, each against the previous and the first (the experiment log): the mean
    iteration and its terms, the device step time and exposed communication, tokens/s and MFU with
    the model options, and the term that moved most (definitions: docs/compare.md)."""
    from traceview.cli.report import check_writable, write_output
    from traceview.errors import TraceError
    from traceview.run_compare import compare

    if len(paths) < 2:
        raise click.UsageError("give two runs or more to compare")
    if labels and len(labels) != len(paths):
        raise click.UsageError(f"{len(labels)} --label for {len(paths)} runs: give one --label per run, in order")
    throughput = model.throughput()
    for path in paths:  # before any (long) load
        if not os.path.lexists(path):
            raise TraceError(path, "no such file or folder", "check the path")
    kind = {"text": "txt"}.get(fmt, fmt)  # the file's kind in messages (`-o report.txt`)
    if output is not None:
        check_writable(output, kind, force, folder=False)
    result = compare([load.load(p) for p in paths], labels=list(labels) or None, model=throughput)
    doc = result.to_dict()
    if output is None:
        echo(outputs.COMPARE.render(fmt, doc).rstrip("\n"))
    else:
        write_output(output, kind, lambda: outputs.COMPARE.render(fmt, doc), force, folder=False)
        echo(f"Wrote {output}")
    _warn_on_stderr(result.warnings, result.failures, fmt if output is None else "file")
    if result.failures:
        sys.exit(1)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Report file (folder for csv/parquet). Default: beside the input, NAME.report.html.",
)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for one report per profile plus index.html (needed for several profiles).",
)
@click.option("--force", is_flag=True, help="Overwrite existing reports.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "json", "csv", "parquet"]),
    default="html",
    show_default=True,
    help="html: self-contained page; json/csv/parquet: the same results as data.",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path),
    default=None,
    help="A run to compare with (adds the `traceview diff BASELINE PATH` section).",
)
@click.option("--top", type=click.IntRange(min=0), default=20, show_default=True, help="Kernels listed per rank.")
@ClassOptions.options
@ModelOptions.options
@AdviceOptions.options
@ExpectOptions.options
@LoadOptions.options
@handle_errors
def report(
    paths: tuple[Path, ...],
    output,
    out_dir,
    force: bool,
    fmt: str,
    baseline,
    top: int,
    classes: ClassOptions,
    model: ModelOptions,
    advice: AdviceOptions,
    expect: ExpectOptions,
    load: LoadOptions,
) -> None:
    """Self-contained HTML report of a profile (opens from disk, no network), or its results as
    json/csv/parquet; several profiles with --out-dir: one report each plus an index page."""
    from traceview.cli.report import ReportJob

    if len(paths) > 1 and out_dir is None:
        raise click.UsageError("several profiles: give --out-dir DIR (one report each plus DIR/index.html)")
    if output is not None and (out_dir is not None or len(paths) > 1):
        raise click.UsageError("-o names one report: use --out-dir for several")
    rules = load.ruleset(**classes.tables(), **advice.tables())
    job = ReportJob(
        fmt=fmt,
        force=force,
        top=top,
        throughput=model.throughput(),
        summary_args={**advice.summary_args(), "model_config": expect.config()},
        load=lambda path: load.load(path, rules=rules),
        echo=echo,
        echo_err=echo_err,
    )
    if baseline is not None:
        job.base = job.load(baseline)
    failed = job.one(paths[0], output) if out_dir is None else job.batch(paths, out_dir)
    if failed:
        sys.exit(1)


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["perfetto"]), default="perfetto", show_default=True, help="Export format."
)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), default=None, help="Output file (default: beside PATH)."
)
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@LoadOptions.options
@handle_errors
def export(path: Path, fmt: str, output, force: bool, load: LoadOptions) -> None:
    """Write the profile for another viewer: --format perfetto is a Chrome-trace JSON file that
    ui.perfetto.dev and chrome://tracing open (every rank, the events, flows from launches to
    kernels, and traceview's iteration, terms, phases and findings as tracks; docs/export.md)."""
    from traceview.cli.report import check_writable, default_output, write_output
    from traceview.dashboards.perfetto import perfetto_json

    out = default_output(path, fmt) if output is None else output
    check_writable(out, fmt, force)  # before the load: a bad target costs nothing
    trace = load.load(path)
    write_output(out, fmt, lambda: perfetto_json(trace), force)
    echo_err(f"wrote {out}")
    _warn_on_stderr(trace.warnings, trace.failures, fmt)
    if trace.failures:
        sys.exit(1)


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (127.0.0.1: this machine only).")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8050, show_default=True, help="Port (the next free one if taken)."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the dashboard in a web browser.")
@click.option(
    "--compare",
    "others",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Another run to compare with PATH (repeat for more): adds the Compare page (docs/compare.md).",
)
@ModelOptions.options
@AdviceOptions.options
@ExpectOptions.options
@LoadOptions.options
@handle_errors
def serve(
    path: Path,
    host: str,
    port: int,
    open_browser: bool,
    others: tuple[Path, ...],
    model: ModelOptions,
    advice: AdviceOptions,
    expect: ExpectOptions,
    load: LoadOptions,
) -> None:
    """Interactive dashboard of a profile (Dash): step breakdown, step times, compute classes, kernels,
    timeline, and with --compare the runs side by side (docs/dashboard.md)."""
    from traceview.dashboards.app import create_app
    from traceview.dashboards.server import is_loopback, pick_port, url_for
    from traceview.dashboards.server import serve as run_server
    from traceview.errors import TraceError
    from traceview.summary import build_summary

    throughput = model.throughput()
    rules = load.ruleset(**advice.tables())
    config = expect.config()
    for other in others:  # before any (long) load
        if not os.path.lexists(other):
            raise TraceError(other, "no such file or folder", "check the path")
    trace = load.load(path, rules=rules)
    comparison = None
    if others:
        from traceview.run_compare import compare

        result = compare([trace, *(load.load(p, rules=rules) for p in others)], model=throughput)
        comparison = result.to_dict()
        warnings = [*result.warnings, *result.failures]
    else:
        warnings = [*trace.warnings, *trace.failures]
    summary = build_summary(trace, details=False, throughput=throughput, model_config=config, **advice.summary_args())
    app = create_app(trace, summary, comparison, warm_timeline=True)
    for line in warnings:
        echo_err(f"traceview: warning: {line}")
    try:
        port = pick_port(host, port)
    except OSError as exc:
        raise TraceError(None, str(exc)) from None
    if not is_loopback(host):
        echo_err(
            f"traceview: warning: --host {host}: the dashboard is reachable from the network, with no "
            "authentication: anyone who can reach this port sees the profile's kernel names and numbers "
            "(use the default --host 127.0.0.1, or an SSH tunnel, to keep it on this machine)"
        )
    echo(f"Serving {path} at {url_for(host, port)} (Ctrl+C to stop)")
    run_server(app, host, port, open_browser)


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a job scheduler) raised in the main thread: it leaves like Ctrl-C, so that
    worker processes are stopped and temporary files removed on the way out
    (`traceview.subprocesses.finish`), then exits 143."""


def _terminated(signum, frame) -> None:
    raise Terminated


def run() -> None:
    """Entry point of the `traceview` command (and `python -m traceview`)."""
    import signal

    signal.signal(signal.SIGTERM, _terminated)
    main(prog_name="traceview")
