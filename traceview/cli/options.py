"""The CLI's option groups: each a dataclass that a command receives as one parameter.

`@LoadOptions.options` adds --jobs, --no-cache, --cache-dir, --quiet, --executor, --address,
--ranks, --steps and --rules to a command and hands it `load: LoadOptions`; `@ModelOptions.options` the
model/job options that give throughput and MFU (`model: ModelOptions`); `@ClassOptions.options`
--classes, a shorthand of --rules for the compute-class table (`classes`); `@AdviceOptions.options`
--findings-rules (the same for the findings table) and --micro-batches (`advice`). A command
with table files builds its rules once (`LoadOptions.ruleset`) and loads every profile with
them; `@ExpectOptions.options` the analytical model's transformer
configuration (`expect`). A command states which groups it takes; the values travel together
(both runs of `diff` load with the same `load`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import click


def _rules_file(flag: str, help: str):
    """An option naming a rules file (TOML), a Path; None when not given."""
    return click.option(flag, type=click.Path(dir_okay=False, path_type=Path), default=None, help=help)


def _group(cls, name: str, options: list):
    """A decorator adding `options` to a command and passing their values as one `cls` named `name`."""
    fields = [f.name for f in dataclasses.fields(cls)]

    def decorate(command):
        @functools.wraps(command)
        def run(*args, **kwargs):
            kwargs[name] = cls(**{f: kwargs.pop(f) for f in fields})
            return command(*args, **kwargs)

        for option in reversed(options):
            run = option(run)
        return run

    return decorate


def _spec(ctx: click.Context, param: click.Parameter, value: str | None):
    """A --ranks/--steps SPEC as a Selection (a bad one is a usage error, exit 2)."""
    if value is None:
        return None
    from traceview.selection import Selection

    try:
        return Selection.parse(value, param.name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


@dataclass(frozen=True)
class LoadOptions:
    """How a command loads its profiles (`traceview.load`'s options)."""

    #: the decorator adding these options to a command (set below, `_group`)
    options: ClassVar[Callable[[Callable], Callable]]

    jobs: int | None = None
    no_cache: bool = False
    cache_dir: Path | None = None
    quiet: bool = False
    executor: str = "local"
    address: str | None = None
    ranks: object = None  # a Selection
    steps: object = None  # a Selection
    rules: Path | None = None

    def ruleset(self, **tables: Path | None):
        """The rules of this command: --rules extended by the files of one table `tables`
        (`compute_classes=`, `findings=`, `device_peaks=`: --classes, --findings-rules,
        --device-rules), whose entries come first; read and checked once, before any load
        (TraceError naming the file and the entry). `traceview.ruleset.build`."""
        from traceview.ruleset import build

        return build(self.rules, **tables)

    def load(self, path: Path, analyse: bool = True, rules=None):
        """`traceview.load` of `path` with the progress display (`analyse`: where ranks are parsed,
        their rank-local analyses too; every command but `info` analyses), with `rules` (a
        RuleSet: `ruleset`; None: --rules)."""
        from traceview.cli.progress import LoadProgress
        from traceview.loader import load

        with LoadProgress(path.name or str(path), quiet=self.quiet) as progress:
            return load(
                path,
                cache_dir=self.cache_dir,
                use_cache=not self.no_cache,
                jobs=self.jobs,
                progress=progress,
                executor=self.executor,
                ray_address=self.address,
                ranks=self.ranks,
                steps=self.steps,
                analyse=analyse,
                rules=self.rules if rules is None else rules,
            )


LoadOptions.options = _group(
    LoadOptions,
    "load",
    [
        click.option(
            "--jobs", "-j", type=click.IntRange(min=1), default=None, help="Parallel parse processes (default: CPUs)."
        ),
        click.option("--no-cache", is_flag=True, help="Do not read or write the Parquet cache."),
        click.option(
            "--cache-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="Cache folder (default: ~/.cache/traceview or $TRACEVIEW_CACHE_DIR).",
        ),
        click.option("--quiet", "-q", is_flag=True, help="No progress display."),
        click.option(
            "--executor",
            type=click.Choice(["local", "ray"]),
            default="local",
            show_default=True,
            help="Where ranks are parsed (and, with ray, their rank-local analyses run): local processes or "
            "Ray tasks (pip install 'traceview[ray]').",
        ),
        click.option(
            "--address", default=None, help="Ray cluster for --executor ray (default: $RAY_ADDRESS, else a local Ray)."
        ),
        click.option(
            "--ranks",
            metavar="SPEC",
            default=None,
            callback=_spec,
            help="Load only these ranks, e.g. 0-7,12,16-19 (the others are not parsed).",
        ),
        click.option(
            "--steps",
            metavar="SPEC",
            default=None,
            callback=_spec,
            help="Keep only these steps, e.g. 3-5,8 (ProfilerStep#N / Step Id).",
        ),
        _rules_file(
            "--rules",
            "A rules file (TOML) extending the task kinds, compute classes, findings and device peaks (docs/rules.md).",
        ),
    ],
)


@dataclass(frozen=True)
class ModelOptions:
    """The model and job: what turns step times into tokens/s, model TFLOP/s and MFU."""

    #: the decorator adding these options to a command (set below, `_group`)
    options: ClassVar[Callable[[Callable], Callable]]

    tokens_per_step: float | None = None
    seq_len: int | None = None
    global_batch: int | None = None
    params: float | None = None
    flops_per_token: float | None = None
    recompute: bool = False
    devices: int | None = None
    peak_tflops: float | None = None

    def throughput(self) -> dict | None:
        """Keyword arguments of `Trace.throughput` (None when no option was given)."""
        if (self.seq_len is None) != (self.global_batch is None):
            raise click.UsageError("give --seq-len and --global-batch together (or --tokens-per-step)")
        given = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "recompute"}
        given = {k: v for k, v in given.items() if v is not None}
        return {**given, "recompute": self.recompute} if given else None


class _Positive(click.ParamType):
    """A positive finite number (click's FloatRange lets nan and inf through)."""

    name = "float"

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not 0 < number < float("inf"):
            self.fail(f"{value!r} is not a positive finite number", param, ctx)
        return number


_POSITIVE = _Positive()
ModelOptions.options = _group(
    ModelOptions,
    "model",
    [
        click.option("--tokens-per-step", type=_POSITIVE, help="Tokens per step, whole job (for throughput/MFU)."),
        click.option(
            "--seq-len",
            type=click.IntRange(min=1),
            help="Sequence length (with --global-batch, instead of --tokens-per-step).",
        ),
        click.option("--global-batch", type=click.IntRange(min=1), help="Sequences per step, whole job."),
        click.option("--params", type=_POSITIVE, help="Model parameters (model FLOPs = 6 x params x tokens)."),
        click.option("--flops-per-token", type=_POSITIVE, help="Model FLOPs per token (instead of --params)."),
        click.option(
            "--recompute", is_flag=True, help="Full activation recomputation: HFU counts 8 x params x tokens (MFU 6 x)."
        ),
        click.option(
            "--devices", type=click.IntRange(min=1), help="Devices in the job (default: recorded world size)."
        ),
        click.option(
            "--peak-tflops", type=_POSITIVE, help="Dense peak TFLOP/s per device (default: from the device name)."
        ),
    ],
)


@dataclass(frozen=True)
class ClassOptions:
    """--classes: a file of compute-class rules, tried before the shipped ones (a shorthand of
    --rules for that one table)."""

    #: the decorator adding these options to a command (set below, `_group`)
    options: ClassVar[Callable[[Callable], Callable]]

    classes: Path | None = None

    def tables(self) -> dict[str, Path | None]:
        """The table file it gives (`LoadOptions.ruleset`)."""
        return {"compute_classes": self.classes}


ClassOptions.options = _group(
    ClassOptions,
    "classes",
    [
        _rules_file(
            "--classes",
            "Extra compute-class rules (TOML), tried before the shipped ones: --rules for that one table.",
        ),
    ],
)


@dataclass(frozen=True)
class AdviceOptions:
    """What the findings need from the user: extra rules, and the pipeline's micro-batches."""

    #: the decorator adding these options to a command (set below, `_group`)
    options: ClassVar[Callable[[Callable], Callable]]

    findings_rules: Path | None = None
    micro_batches: int | None = None

    def tables(self) -> dict[str, Path | None]:
        """The table file it gives (`LoadOptions.ruleset`)."""
        return {"findings": self.findings_rules}

    def summary_args(self) -> dict:
        """The keyword arguments of `build_summary` these options set."""
        return dict(micro_batches=self.micro_batches)


AdviceOptions.options = _group(
    AdviceOptions,
    "advice",
    [
        _rules_file(
            "--findings-rules",
            "Extra findings rules (TOML): add rules or change shipped ones by id (--rules for that one table).",
        ),
        click.option(
            "--micro-batches",
            type=click.IntRange(min=1),
            default=None,
            help="Micro-batches per pipeline step (compares the bubble with (p-1)/(m+p-1)).",
        ),
    ],
)


@dataclass(frozen=True)
class ExpectOptions:
    """The transformer configuration of the analytical model (`traceview.analysis.model_config`):
    a TOML file and KEY=VALUE overrides."""

    #: the decorator adding these options to a command (set below, `_group`)
    options: ClassVar[Callable[[Callable], Callable]]

    model_config: Path | None = None
    model_keys: tuple[str, ...] = ()

    def config(self):
        """The ModelConfig, None when neither option was given; a bad one is a usage error (exit 2)."""
        if self.model_config is None and not self.model_keys:
            return None
        from traceview.analysis.model_config import model_config

        try:
            return model_config(self.model_config, self.model_keys)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


ExpectOptions.options = _group(
    ExpectOptions,
    "expect",
    [
        click.option(
            "--model-config",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="A transformer's configuration (TOML) for the analytical model: expected step beside the "
            "measured one (docs/roofline.md).",
        ),
        click.option(
            "--model",
            "model_keys",
            multiple=True,
            metavar="KEY=VALUE",
            help="A model configuration key (repeatable; over --model-config): layers=32, hidden=4096, tp=8, ...",
        ),
    ],
)
