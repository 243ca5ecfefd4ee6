"""`traceview report`: where reports go, one profile or a batch with an index page.

One profile: the report goes beside the input (`run1/` -> `run1.report.html`, `rank0.json.gz` ->
`rank0.report.html`; `.json`, `.csv`/`.parquet` folders likewise) unless `-o` names it. An
existing output is never overwritten without `--force`. Several profiles need `--out-dir DIR`:
one report per profile, named after it (made unique), and `DIR/index.html` listing each with its
headline numbers, or why it failed; the others are still written when one fails.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from traceview.errors import TraceError

SUFFIX = {
    "html": ".report.html",
    "json": ".report.json",
    "csv": ".report-csv",
    "parquet": ".report-parquet",
    "perfetto": ".perfetto.json",
}
#: Formats written as a folder of tables (the others are one file).
FOLDER_FORMATS = ("csv", "parquet")
TRACE_EXTENSIONS = (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json")
#: Bytes in one file name on Linux and macOS file systems.
NAME_MAX = 255
#: The list of files traceview wrote into a csv/parquet report folder: the only files a later
#: `--force` may replace or remove there (a folder without it is not traceview's to touch).
MANIFEST = "traceview-export.json"
#: A table file's name in a report folder (what a manifest may name).
TABLE_FILE = re.compile(r"^[a-z_]+\.(csv|parquet)$")


def profile_stem(path: Path) -> str:
    """The profile's name without trace extensions (`rank0.pt.trace.json.gz` -> `rank0`)."""
    name = Path(os.path.abspath(path)).name or "profile"
    for ext in TRACE_EXTENSIONS:
        if name.lower().endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


def fit_name(stem: str, suffix: str) -> str:
    """`stem + suffix`, the stem shortened (with 8 hex digits of its digest, so two long names stay
    apart) where the whole would exceed NAME_MAX bytes."""
    name = stem + suffix
    if len(os.fsencode(name)) <= NAME_MAX:
        return name
    digest = "-" + hashlib.sha256(os.fsencode(stem)).hexdigest()[:8]
    room = NAME_MAX - len(os.fsencode(digest + suffix))
    cut = stem
    while len(os.fsencode(cut)) > room:
        cut = cut[:-1]
    return cut + digest + suffix


def default_output(path: Path, fmt: str) -> Path:
    """Beside the input: the input's folder, the profile's name + the format's suffix."""
    return Path(os.path.abspath(path)).parent / fit_name(profile_stem(path), SUFFIX[fmt])


def check_writable(out: Path, fmt: str, force: bool, folder: bool | None = None) -> Path:
    """The absolute output path, after checking that writing `fmt` there loses nothing: TraceError
    (one line) for a folder where a file goes, a file, link or foreign folder where a folder goes,
    anything that is not a regular file (or, for csv/parquet, a folder traceview wrote), an
    existing output without `force`, or a missing parent folder. `folder`: whether `fmt` is
    written as a folder (default: csv and parquet are; `traceview compare` writes csv as a file)."""
    folder = fmt in FOLDER_FORMATS if folder is None else folder
    out = Path(os.path.abspath(out))
    noun = "folder" if folder else "file"
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise TraceError(None, f"cannot write {out}: {exc.strerror or exc}") from None
    if st is None:
        if not out.parent.is_dir():
            raise TraceError(None, f"cannot write {out}: no folder {out.parent} (create it, or pass -o elsewhere)")
        return out
    if stat.S_ISLNK(st.st_mode):
        raise TraceError(
            None, f"{out} is a symbolic link: traceview writes no report through a link (pass -o a new {noun} name)"
        )
    if folder:
        if not stat.S_ISDIR(st.st_mode):
            raise TraceError(
                None,
                f"{out} exists and is not a folder: the {fmt} report is a folder of tables (pass -o a new folder name)",
            )
        if written_files(out) is None:
            raise TraceError(
                None,
                f"{out} is a folder traceview did not write (no {MANIFEST} in it): traceview "
                "never replaces it (pass -o a new folder name)",
            )
    elif stat.S_ISDIR(st.st_mode):
        raise TraceError(
            None,
            f"{out} is a folder: the {fmt} report is one file (pass -o a file name, e.g. -o {out / ('report.' + fmt)})",
        )
    elif not stat.S_ISREG(st.st_mode):
        raise TraceError(
            None, f"{out} exists and is not a regular file: traceview never replaces it (pass -o another path)"
        )
    if not force:
        raise TraceError(None, f"{out} exists: pass --force to overwrite it (or -o another path)")
    return out


def written_files(folder: Path) -> list[str] | None:
    """The table files a csv/parquet report folder's manifest lists (names only), or None when the
    folder has no readable manifest of ours."""
    try:
        blob = orjson.loads((folder / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    files = blob.get("files") if isinstance(blob, dict) and blob.get("traceview") == "report" else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return [f for f in files if TABLE_FILE.match(f)]


def write_output(out: Path, fmt: str, render, force: bool, folder: bool | None = None) -> None:
    """Write the report in `fmt` to `out` (checked by `check_writable`); `render` gives the HTML
    text, or the summary for data formats. Written under a fresh temporary name beside `out`,
    then moved in place, so no half-written report is left and nothing but traceview's own
    output is replaced: a file by `os.replace`, a report folder file by file (files its manifest
    lists and the new report lacks are removed, any other file stays); text (a str) is written as
    it is, data as JSON. `folder`: whether `fmt` is a folder of tables (default: csv and
    parquet are). An OSError (full disk, name too long, no permission) is a TraceError."""
    folder = fmt in FOLDER_FORMATS if folder is None else folder
    out = check_writable(out, fmt, force, folder)
    tmp = out.parent / f".traceview-{uuid.uuid4().hex[:12]}.partial"
    try:
        if folder:
            from traceview.dashboards.tables import write_tables

            names = [p.name for p in write_tables(render(), tmp, fmt)]
            (tmp / MANIFEST).write_bytes(orjson.dumps({"traceview": "report", "format": fmt, "files": names}))
            _move_folder(tmp, out, names)
        else:
            data = render()
            if isinstance(data, bytes):  # a document already encoded (the Perfetto export)
                tmp.write_bytes(data)
            elif isinstance(data, str):  # html, or any text a command laid out
                tmp.write_text(data, encoding="utf-8")
            else:
                tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
            os.replace(tmp, out)
    except OSError as exc:
        raise TraceError(None, f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        _remove_own(tmp)


def _move_folder(tmp: Path, out: Path, names: list[str]) -> None:
    """Move the report folder `tmp` to `out`: a rename when `out` is new, else file by file."""
    old = written_files(out) if out.exists() else None
    if old is None:
        os.rename(tmp, out)
        return
    for name in names:
        os.replace(tmp / name, out / name)
    for name in set(old) - set(names):
        path = out / name
        if path.is_file() and not path.is_symlink():
            path.unlink()
    os.replace(tmp / MANIFEST, out / MANIFEST)


def _remove_own(tmp: Path) -> None:
    """Remove the temporary file or folder this process made (a unique name: nobody else's)."""
    try:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists() or tmp.is_symlink():
            tmp.unlink()
    except OSError:
        pass


def index_target(out_dir: Path, force: bool) -> Path:
    """`out_dir/index.html` after the same checks as a report (`check_writable`), with `out_dir`
    created when missing (a file there is a TraceError)."""
    out_dir = Path(os.path.abspath(out_dir))
    if out_dir.exists() and not out_dir.is_dir():
        raise TraceError(None, f"--out-dir {out_dir} exists and is not a folder (pass a folder)")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TraceError(None, f"cannot create {out_dir}: {exc.strerror or exc}") from None
    return check_writable(out_dir / "index.html", "html", force)


def unique_names(paths: list[Path]) -> list[str]:
    """Report names for a batch: the profile names, with -2, -3 ... where two are equal."""
    seen: dict[str, int] = {}
    names = []
    for path in paths:
        stem = profile_stem(path)
        seen[stem] = seen.get(stem, 0) + 1
        names.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
    return names


@dataclass
class ReportJob:
    """`traceview report`'s work: load each profile, build its summary (with the diff against
    `base` when given), write the report; for a batch, check every target first and write the
    index last. `load` loads a path (`LoadOptions.load`, with the command's rules);
    `echo`/`echo_err` print a line."""

    fmt: str
    force: bool
    top: int
    throughput: dict | None
    summary_args: dict
    load: Callable
    echo: Callable[[str], None]
    echo_err: Callable[[str], None]
    base: object = None

    def one(self, path: Path, output: Path | None) -> bool:
        """Write one report (to `output`, else beside the profile); True if a rank failed."""
        out = check_writable(output or default_output(path, self.fmt), self.fmt, self.force)  # before the load
        return bool(self._write(path, out))

    def batch(self, paths: tuple[Path, ...], out_dir: Path) -> bool:
        """One report per profile in `out_dir` and its index page; True if any failed. Every
        target, the index included, is checked before anything is loaded or written: a batch never
        overwrites without --force."""
        from traceview.dashboards import batch_index as batch

        index = index_target(out_dir, self.force)
        targets = [index.parent / fit_name(name, SUFFIX[self.fmt]) for name in unique_names(list(paths))]
        for out in targets:
            check_writable(out, self.fmt, self.force)
        entries = []
        for path, out in zip(paths, targets):
            entry = batch.BatchEntry(source=path)
            entries.append(entry)
            try:
                self._write(path, out, entry)
                entry.output = out
            except TraceError as exc:
                entry.error = str(exc)
                self.echo_err(f"traceview: error: {exc}")
        write_output(index, "html", lambda: batch.index_html(entries, index.parent), force=True)
        self.echo(f"Wrote {index}")
        return any(e.error or e.failures for e in entries)

    def _write(self, path: Path, out: Path, entry=None) -> list[str]:
        """Load `path`, write its report to `out`; returns the failed-rank lines."""
        from traceview.summary import build_summary

        check_writable(out, self.fmt, self.force)
        trace = self.load(path)
        doc = build_summary(trace, top=self.top, throughput=self.throughput, **self.summary_args)
        run_diff = None
        if self.base is not None:
            from traceview.run_diff import diff as compare

            run_diff = compare(self.base, trace).to_dict()
            doc = {**doc, "diff": run_diff}
        if entry is not None:
            from traceview.dashboards.batch_index import headline

            headline(entry, doc)

        def render():
            if self.fmt != "html":
                return doc
            from traceview.dashboards.report import report_html

            return report_html(trace, doc, diff=run_diff)

        write_output(out, self.fmt, render, self.force)
        for line in trace.warnings:
            self.echo_err(f"traceview: warning: {line}")
        for line in trace.failures:
            self.echo_err(f"traceview: error: {line}")
        self.echo(f"Wrote {out}")
        return list(trace.failures)
