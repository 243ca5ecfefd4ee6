"""`traceview` commands. Every command: errors are one line on stderr and exit 1 (usage errors
exit 2); `-v` adds the traceback."""

from __future__ import annotations

import sys
import traceback
from functools import wraps
from pathlib import Path

import click

from traceview.version import __version__

FORMATS = click.Choice(["text", "json"])


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


def _keep_spec(ctx: click.Context, param: click.Parameter, value: str | None):
    """Check a --ranks/--steps SPEC (a bad one is a usage error, exit 2) and keep it on the context."""
    if value is not None:
        from traceview.selection import Selection

        try:
            value = Selection.parse(value, param.name)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    ctx.meta[f"traceview.{param.name}"] = value


def load_options(func):
    """Options shared by every command that loads a profile. `--executor`/`--address` and
    `--ranks`/`--steps` are kept on the click context (not passed to the command) and read by
    `load_trace`, so they apply to every profile a command loads (both runs of `diff`)."""
    keep = lambda ctx, param, value: ctx.meta.__setitem__(f"traceview.{param.name}", value)  # noqa: E731
    func = click.option(
        "--steps",
        metavar="SPEC",
        default=None,
        expose_value=False,
        callback=_keep_spec,
        help="Keep only these steps, e.g. 3-5,8 (ProfilerStep#N / Step Id).",
    )(func)
    func = click.option(
        "--ranks",
        metavar="SPEC",
        default=None,
        expose_value=False,
        callback=_keep_spec,
        help="Load only these ranks, e.g. 0-7,12,16-19 (the others are not parsed).",
    )(func)
    func = click.option(
        "--address",
        default=None,
        expose_value=False,
        callback=keep,
        help="Ray cluster for --executor ray (default: $RAY_ADDRESS, else a local Ray).",
    )(func)
    func = click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        expose_value=False,
        callback=keep,
        help="Where ranks are parsed (and, with ray, their rank-local analyses run): local processes or Ray tasks (pip install 'traceview[ray]').",
    )(func)
    func = click.option("--quiet", "-q", is_flag=True, help="No progress display.")(func)
    func = click.option(
        "--jobs", "-j", type=click.IntRange(min=1), default=None, help="Parallel parse processes (default: CPUs)."
    )(func)
    func = click.option("--no-cache", is_flag=True, help="Do not read or write the Parquet cache.")(func)
    func = click.option(
        "--cache-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Cache folder (default: ~/.cache/traceview or $TRACEVIEW_CACHE_DIR).",
    )(func)
    return func


def load_trace(path: Path, quiet: bool, jobs, no_cache: bool, cache_dir, analyse: bool = True):
    """traceview.load with the CLI's progress display (`analyse`: Ray tasks also run the
    rank-local analyses; every command but `info` analyses)."""
    from traceview.cli.progress import LoadProgress
    from traceview.loader import load

    meta = click.get_current_context().meta
    with LoadProgress(path.name or str(path), quiet=quiet) as progress:
        return load(
            path,
            cache_dir=cache_dir,
            use_cache=not no_cache,
            jobs=jobs,
            progress=progress,
            executor=meta.get("traceview.executor", "local"),
            ray_address=meta.get("traceview.address"),
            ranks=meta.get("traceview.ranks"),
            steps=meta.get("traceview.steps"),
            analyse=analyse,
        )


def throughput_options(func):
    """The model/job options that turn step times into tokens/s, model TFLOP/s and MFU."""
    options = [
        click.option(
            "--tokens-per-step",
            type=click.FloatRange(min=0, min_open=True),
            help="Tokens per step, whole job (for throughput/MFU).",
        ),
        click.option(
            "--seq-len",
            type=click.IntRange(min=1),
            help="Sequence length (with --global-batch, instead of --tokens-per-step).",
        ),
        click.option("--global-batch", type=click.IntRange(min=1), help="Sequences per step, whole job."),
        click.option(
            "--params",
            type=click.FloatRange(min=0, min_open=True),
            help="Model parameters (model FLOPs = 6 x params x tokens).",
        ),
        click.option(
            "--flops-per-token",
            type=click.FloatRange(min=0, min_open=True),
            help="Model FLOPs per token (instead of --params).",
        ),
        click.option("--recompute", is_flag=True, help="Full activation recomputation (8 x params x tokens)."),
        click.option(
            "--devices", type=click.IntRange(min=1), help="Devices in the job (default: recorded world size)."
        ),
        click.option(
            "--peak-tflops",
            type=click.FloatRange(min=0, min_open=True),
            help="Dense peak TFLOP/s per device (default: from the device name).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def throughput_args(
    tokens_per_step, seq_len, global_batch, params, flops_per_token, recompute, devices, peak_tflops
) -> dict | None:
    """Keyword arguments of `Trace.throughput` from the `throughput_options` (None when none given)."""
    if (seq_len is None) != (global_batch is None):
        raise click.UsageError("give --seq-len and --global-batch together (or --tokens-per-step)")
    wanted = dict(
        tokens_per_step=tokens_per_step,
        seq_len=seq_len,
        global_batch=global_batch,
        params=params,
        flops_per_token=flops_per_token,
        devices=devices,
        peak_tflops=peak_tflops,
    )
    throughput = {k: v for k, v in wanted.items() if v is not None}
    if throughput:
        throughput["recompute"] = recompute
    return throughput or None


def check_classes(classes: Path | None) -> None:
    """Read a user's compute-class rules file before the (longer) load: TraceError if it is bad."""
    if classes is None:
        return
    from traceview.analysis.classes import load_rules
    from traceview.errors import TraceError

    try:
        load_rules(classes)
    except (ValueError, OSError) as exc:
        raise TraceError(None, str(exc)) from None


def findings_options(func):
    """--findings-rules FILE (a user's rules first) and --micro-batches N (pipeline bubble vs ideal)."""
    func = click.option(
        "--micro-batches",
        type=click.IntRange(min=1),
        default=None,
        help="Micro-batches per pipeline step (compares the bubble with (p-1)/(m+p-1)).",
    )(func)
    func = click.option(
        "--findings-rules",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Extra findings rules (TOML): add rules or change shipped ones by id.",
    )(func)
    return func


def check_findings_rules(path: Path | None) -> str | None:
    """Read a user's findings rules file before the load: TraceError if it is bad; its path as text."""
    if path is None:
        return None
    from traceview.analysis.findings import load_rules
    from traceview.errors import TraceError

    try:
        load_rules(path)
    except (ValueError, OSError) as exc:
        raise TraceError(None, str(exc)) from None
    return str(path)


CLASSES_OPTION = click.option(
    "--classes",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Extra compute-class rules (TOML), tried before the shipped ones.",
)


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
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@load_options
@handle_errors
def info(path: Path, fmt: str, quiet: bool, jobs, no_cache: bool, cache_dir) -> None:
    """What a profile holds: per rank the format, device, task counts, streams, steps and time span."""
    from traceview.cli.info import render_info

    trace = load_trace(path, quiet, jobs, no_cache, cache_dir, analyse=False)
    echo(render_info(trace, fmt))
    _warn_on_stderr(trace.warnings, trace.failures, fmt)
    if trace.failures:
        sys.exit(1)


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option("--step", type=int, default=None, help="Only this step (ProfilerStep#N / Step Id).")
@CLASSES_OPTION
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, help="Kernels listed per rank.")
@throughput_options
@findings_options
@load_options
@handle_errors
def summary(
    path: Path,
    fmt: str,
    step,
    classes,
    top: int,
    tokens_per_step,
    seq_len,
    global_batch,
    params,
    flops_per_token,
    recompute: bool,
    devices,
    peak_tflops,
    findings_rules,
    micro_batches,
    quiet: bool,
    jobs,
    no_cache: bool,
    cache_dir,
) -> None:
    """Where the step time went: per rank and step, computing, exposed communication, overlap,
    exposed memcpy, free, bubble and preparing time (definitions: docs/metrics.md)."""
    from traceview.cli.summary import render_summary
    from traceview.summary import build_summary

    check_classes(classes)
    rules = check_findings_rules(findings_rules)
    throughput = throughput_args(
        tokens_per_step, seq_len, global_batch, params, flops_per_token, recompute, devices, peak_tflops
    )
    trace = load_trace(path, quiet, jobs, no_cache, cache_dir)
    doc = build_summary(
        trace,
        step=step,
        classes=str(classes) if classes else None,
        top=top,
        throughput=throughput,
        findings_rules=rules,
        micro_batches=micro_batches,
    )
    echo(render_summary(doc, fmt))
    _warn_on_stderr(doc["warnings"], doc["failures"], fmt)
    if trace.failures:
        sys.exit(1)


@main.command()
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "html"]),
    default="text",
    show_default=True,
    help="Output format (html: a self-contained page on stdout).",
)
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, help="Kernels listed per table.")
@click.option("--step", type=int, default=None, help="Compare only this step of both runs (ProfilerStep#N / Step Id).")
@click.option("--whole-trace", is_flag=True, help="Compare whole traces (first to last device task), not steps.")
@CLASSES_OPTION
@load_options
@handle_errors
def diff(
    base: Path,
    new: Path,
    fmt: str,
    top: int,
    step,
    whole_trace: bool,
    classes,
    quiet: bool,
    jobs,
    no_cache: bool,
    cache_dir,
) -> None:
    """What changed from run BASE to run NEW: step time, its decomposition, compute classes, kernels
    and exposed communication per collective, per step and rank (definitions: docs/diff.md)."""
    from traceview.cli.diff import render_diff
    from traceview.run_diff import diff as compare

    if step is not None and whole_trace:
        raise click.UsageError("give --step or --whole-trace, not both")
    check_classes(classes)
    runs = [load_trace(p, quiet, jobs, no_cache, cache_dir) for p in (base, new)]
    result = compare(*runs, step=step, classes=str(classes) if classes else None, whole_trace=whole_trace)
    echo(render_diff(result, fmt, top))
    _warn_on_stderr(result.warnings, result.failures, fmt)
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
@CLASSES_OPTION
@click.option("--top", type=click.IntRange(min=0), default=20, show_default=True, help="Kernels listed per rank.")
@throughput_options
@findings_options
@load_options
@handle_errors
def report(
    paths: tuple[Path, ...],
    output,
    out_dir,
    force: bool,
    fmt: str,
    baseline,
    classes,
    top: int,
    tokens_per_step,
    seq_len,
    global_batch,
    params,
    flops_per_token,
    recompute: bool,
    devices,
    peak_tflops,
    findings_rules,
    micro_batches,
    quiet: bool,
    jobs,
    no_cache: bool,
    cache_dir,
) -> None:
    """Self-contained HTML report of a profile (opens from disk, no network), or its results as
    json/csv/parquet; several profiles with --out-dir: one report each plus an index page."""
    from traceview.cli import report as rep
    from traceview.dashboards import batch_index as batch
    from traceview.errors import TraceError
    from traceview.summary import build_summary

    if len(paths) > 1 and out_dir is None:
        raise click.UsageError("several profiles: give --out-dir DIR (one report each plus DIR/index.html)")
    if output is not None and (out_dir is not None or len(paths) > 1):
        raise click.UsageError("-o names one report: use --out-dir for several")
    check_classes(classes)
    rules = check_findings_rules(findings_rules)
    throughput = throughput_args(
        tokens_per_step, seq_len, global_batch, params, flops_per_token, recompute, devices, peak_tflops
    )
    base = load_trace(baseline, quiet, jobs, no_cache, cache_dir) if baseline is not None else None
    classes_text = str(classes) if classes else None

    def make(path: Path, out: Path, entry=None) -> list[str]:
        """Load `path`, write its report to `out`; returns the failed-rank lines."""
        rep.check_writable(out, fmt, force)
        trace = load_trace(path, quiet, jobs, no_cache, cache_dir)
        doc = build_summary(
            trace,
            classes=classes_text,
            top=top,
            throughput=throughput,
            findings_rules=rules,
            micro_batches=micro_batches,
        )
        run_diff = None
        if base is not None:
            from traceview.run_diff import diff as compare

            run_diff = compare(base, trace, classes=classes_text).to_dict()
            doc = {**doc, "diff": run_diff}
        if entry is not None:
            batch.headline(entry, doc)

        def render():
            if fmt != "html":
                return doc
            from traceview.dashboards.report import report_html

            return report_html(trace, doc, diff=run_diff)

        rep.write_output(out, fmt, render, force)
        for line in trace.warnings:
            echo_err(f"traceview: warning: {line}")
        for line in trace.failures:
            echo_err(f"traceview: error: {line}")
        echo(f"Wrote {out}")
        return list(trace.failures)

    if out_dir is None:
        # checked before the (long) load: a bad target fails at once
        out = rep.check_writable(output or rep.default_output(paths[0], fmt), fmt, force)
        failures = make(paths[0], out)
        if failures:
            sys.exit(1)
        return
    # Every target of the batch is checked before anything is loaded or written: a batch never
    # overwrites without --force, its index included.
    index = rep.index_target(out_dir, force)
    targets = [index.parent / rep.fit_name(name, rep.SUFFIX[fmt]) for name in rep.unique_names(list(paths))]
    for out in targets:
        rep.check_writable(out, fmt, force)
    entries = []
    for path, out in zip(paths, targets):
        entry = batch.BatchEntry(source=path)
        entries.append(entry)
        try:
            make(path, out, entry)
            entry.output = out
        except TraceError as exc:
            entry.error = str(exc)
            echo_err(f"traceview: error: {exc}")
    rep.write_output(index, "html", lambda: batch.index_html(entries, index.parent), force=True)
    echo(f"Wrote {index}")
    if any(e.error or e.failures for e in entries):
        sys.exit(1)


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (127.0.0.1: this machine only).")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8050, show_default=True, help="Port (the next free one if taken)."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the dashboard in a web browser.")
@throughput_options
@findings_options
@load_options
@handle_errors
def serve(
    path: Path,
    host: str,
    port: int,
    open_browser: bool,
    tokens_per_step,
    seq_len,
    global_batch,
    params,
    flops_per_token,
    recompute: bool,
    devices,
    peak_tflops,
    findings_rules,
    micro_batches,
    quiet: bool,
    jobs,
    no_cache: bool,
    cache_dir,
) -> None:
    """Interactive dashboard of a profile (Dash): step breakdown, step times, compute classes, kernels,
    timeline (docs/dashboard.md)."""
    from traceview.dashboards.app import create_app
    from traceview.dashboards.server import is_loopback, pick_port, url_for
    from traceview.dashboards.server import serve as run_server
    from traceview.errors import TraceError
    from traceview.summary import build_summary

    throughput = throughput_args(
        tokens_per_step, seq_len, global_batch, params, flops_per_token, recompute, devices, peak_tflops
    )
    rules = check_findings_rules(findings_rules)
    trace = load_trace(path, quiet, jobs, no_cache, cache_dir)
    app = create_app(
        trace,
        build_summary(trace, details=False, throughput=throughput, findings_rules=rules, micro_batches=micro_batches),
    )
    for line in [*trace.warnings, *trace.failures]:  # after the summary, which may add a warning
        echo_err(f"traceview: warning: {line}")
    try:
        port = pick_port(host, port)
    except OSError as exc:
        raise TraceError(None, str(exc)) from None
    if not is_loopback(host):
        click.echo(
            f"traceview: warning: --host {host}: the dashboard is reachable from the network, with no "
            "authentication: anyone who can reach this port sees the profile's kernel names and numbers "
            "(use the default --host 127.0.0.1, or an SSH tunnel, to keep it on this machine)",
            err=True,
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
