"""Text from a trace made safe to show: names (kernels, files, threads) may hold any character.

A terminal acts on C0/C1 control characters instead of showing them (they move the cursor, retitle
the window, forge whole lines), and the Unicode bidi controls reorder the text around them, so a
name can make a table or a page say something the trace does not. Every text output (the CLI's
tables and lines, JSON on stdout) and every HTML view shows them as visible escapes instead
(`\\x1b`, `\\u202e`).
"""

from __future__ import annotations

import os
import re

#: Characters a terminal acts on instead of showing (C0 and C1 controls, DEL: they move the cursor,
#: retitle the window, forge lines) and the Unicode bidi controls that reorder what is shown.
#: Text from a trace (kernel and file names) may hold any of them.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: The same without newline and tab, for text that traceview laid out itself.
_CONTROL_IN_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: In JSON output orjson already escapes C0 controls; these remain raw inside strings.
_JSON_RAW = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text) -> str:
    """`text` as one line a terminal shows as written: every control character (newline
    included) and bidi control as a visible escape (`\\x1b`, `\\u202e`)."""
    return _CONTROL.sub(_escape, str(text))


def printable(text: str) -> str:
    """Text that traceview laid out (newlines and tabs kept) with any other control character
    escaped: the last guard before anything reaches a terminal."""
    return _CONTROL_IN_LAYOUT.sub(_escape, text)


def json_text(text: str) -> str:
    """JSON output with the characters orjson leaves raw inside strings (DEL, C1 controls, bidi
    controls) written as `\\u` escapes: the same JSON value, safe in a terminal."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def one_line_strings(value):
    """A copy of a JSON-ready document with every string passed through `one_line` (for text
    renderings: a name in a table cell or a heading can neither break the layout nor drive the
    terminal)."""
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, dict):
        return {k: one_line_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [one_line_strings(v) for v in value]
    return value


def path_text(path) -> str:
    """A path (or text made from one) as valid Unicode: bytes of a file name that are not UTF-8,
    which Python keeps as lone surrogates that JSON, Parquet and terminals refuse, shown as `\\xff`."""
    text = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte (text, not a file name)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


#: A CSV cell a spreadsheet reads as a formula (OWASP's CSV injection list): it starts with one of
#: these characters. Such a cell is written with a leading apostrophe, which a spreadsheet shows as
#: text and does not run (`=cmd|' /C calc'!A0` from a kernel name would run a program).
FORMULA_START = r"^[=+\-@\t\r]"


def csv_safe(frame):
    """A polars frame whose text cells that a spreadsheet would run as a formula (FORMULA_START)
    start with an apostrophe instead; numbers are untouched. Every CSV traceview writes goes
    through it (docs/report.md)."""
    import polars as pl

    text = [c for c, t in frame.schema.items() if t == pl.String]
    if not text:
        return frame
    return frame.with_columns(
        pl.when(pl.col(c).str.contains(FORMULA_START)).then(pl.lit("'") + pl.col(c)).otherwise(pl.col(c)).alias(c)
        for c in text
    )
