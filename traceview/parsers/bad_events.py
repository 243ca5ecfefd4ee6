"""Finding one bad event in a Chrome-trace array without decoding the whole buffer for each
candidate (`parsers.jsonio.ChromeEvents` drops it and counts it): an event that orjson rejects
only for a value (a NaN or Infinity literal, nesting past orjson's 1,024 levels) in otherwise
well-formed JSON. Every search reads up to the first bad value only, and finds the event's
bounds by its brackets outside strings (token by token for an ordinary event, vectorised with
numpy for a large one), so a buffer full of bad events costs a pass over it (issue 30)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import orjson

#: JSON's whitespace.
WHITESPACE = b" \t\r\n"


def cut_before(buf: bytearray, end: int) -> tuple[int | None, int]:
    """The last `,` before `end` that follows a `}` and precedes a `{` (whitespace allowed), and
    the position to search before next time; (None, 0) if there is none."""
    while True:
        brace = buf.rfind(b"}", 0, end)
        if brace < 0:
            return None, 0
        i = brace + 1
        n = len(buf)
        while i < n and buf[i] in WHITESPACE:
            i += 1
        if i < n and buf[i] == 0x2C:
            j = i + 1
            while j < n and buf[j] in WHITESPACE:
                j += 1
            if j < n and buf[j] == 0x7B:  # "{"
                return i, brace
        end = brace


#: orjson's messages for a value it rejects inside otherwise well-formed JSON (`bad_event`).
_BAD_VALUE_MESSAGES = ("depth limit exceeded",)
_BAD_LITERALS = (b"NaN", b"Infinity", b"-Infinity")


def bad_event(buf: bytearray, end: int) -> tuple[int, int] | None:
    """Where the first event of the array `buf[:end]` (it starts with `[`) that orjson rejects for
    a value lies, when that is the only reason: a NaN / Infinity / -Infinity literal (Python's json
    writes them; JSON has none) or nesting past orjson's 1,024 levels, in an event whose brackets
    and strings are otherwise well formed. Returns (before, after): the comma ending the last event
    before it (0 when it is the first), and the offset just past it. None for any other error
    (a cut inside an event, a damaged file: the whole-document reader then names it). Reads `buf`
    in place, up to the first error."""
    error = _first_error(buf, end)
    if error is None:
        return None
    pos, msg = error
    if pos >= end - 1:
        return None
    at = bytes(buf[max(pos - 1, 0) : pos + 9])
    literal = any(lit in at for lit in _BAD_LITERALS)
    if not literal and msg not in _BAD_VALUE_MESSAGES:
        return None
    before = _boundary_before(buf, pos)
    start = buf.find(b"{", before + 1 if before else 1)
    after = _object_end(buf, start, end) if 0 <= start < pos else None
    return None if after is None or after <= pos else (before, after)


def _error_in(buf: bytearray, end: int) -> tuple[int, str] | None:
    """orjson's error (position, message) for `buf[:end]` read as an array closed at `end`
    (`buf[end]` is `]` while it is read), or None when that decodes. No copy of `buf`. Not the
    exception itself: it holds the text it read, and its traceback a frame, which the paused
    garbage collector (`gc_paused`) would never free."""
    closing = end < len(buf)
    saved = buf[end] if closing else None
    if closing:
        buf[end] = 0x5D  # "]"
    try:
        with memoryview(buf) as view, view[: end + 1 if closing else end] as part:
            orjson.loads(part)
    except orjson.JSONDecodeError as exc:
        found = (exc.pos, exc.msg)
    else:
        found = None
    finally:
        if closing:
            buf[end] = saved
    return found


#: The first window `_first_error` reads: orjson reads (and checks) its whole input before it
#: parses, so a search over the whole buffer would cost a pass over it per bad event.
_FIRST_WINDOW = 1 << 16
_WINDOW_MARGIN = 64


def _first_error(buf: bytearray, end: int) -> tuple[int, str] | None:
    """orjson's first error in `buf[:end]` read as an array closed at `end`, or None, reading
    windows `buf[:w]` of 64 KiB, 256 KiB, ... closed at `w`: an error well before `w` is one of the
    text itself (closing a window inside a value errs at `w`, or a few bytes before it inside an
    escape such as `\\u12`: within _WINDOW_MARGIN of `w` the window grows instead)."""
    window = _FIRST_WINDOW
    while window < end:
        error = _error_in(buf, window)
        if error is not None and error[0] < window - _WINDOW_MARGIN:
            return error
        window *= 4
    return _error_in(buf, end)


def _boundary_before(buf: bytearray, pos: int) -> int:
    """The last comma before `pos` that ends a top-level event, 0 when there is none (the event at
    `pos` is the first). The nearest candidate cut (`cut_before`) is tried first (one decode up to
    it); when it lies inside the event (its args hold `},{`), `_last_top_comma` finds it in one
    vectorised pass: never a decode per candidate, which was quadratic in the candidates inside
    one event (a 400 KB event of `{},{},...` took 85 s)."""
    comma, _ = cut_before(buf, pos)
    if comma is None:
        return 0
    if _error_in(buf, comma) is None:
        return comma
    return _last_top_comma(buf, pos)


#: Bytes `_last_top_comma` reads at once (its arrays take about 10 bytes per byte read).
_SCAN_PIECE = 4 << 20


def _levels(buf: bytearray, start: int, end: int) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """For `buf[start:end]`, read from a point outside any string at depth 0, per piece of
    _SCAN_PIECE bytes: (its offset, its bytes, which are outside strings, the bracket depth after
    each). The depth, whether a string is open, and the run of backslashes before a piece (a quote
    after an odd run is escaped) carry over from piece to piece."""
    depth, in_string, run = 0, False, 0
    for lo in range(start, end, _SCAN_PIECE):
        a = np.frombuffer(bytes(buf[lo : min(lo + _SCAN_PIECE, end)]), dtype=np.uint8)
        idx = np.arange(a.size, dtype=np.int64)
        last_other = np.maximum.accumulate(np.where(a == 0x5C, -1, idx))  # last non-backslash so far
        before = np.empty(a.size, dtype=np.int64)  # backslashes right before each byte
        before[0] = run
        before[1:] = np.where(last_other[:-1] < 0, idx[1:] + run, idx[1:] - 1 - last_other[:-1])
        quote = (a == 0x22) & (before % 2 == 0)
        toggles = np.cumsum(quote) + in_string
        outside = (toggles % 2 == 0) & ~quote
        step = ((a == 0x7B) | (a == 0x5B)).astype(np.int64) - ((a == 0x7D) | (a == 0x5D))
        level = depth + np.cumsum(np.where(outside, step, 0))
        yield lo, a, outside, level
        depth, in_string = int(level[-1]), bool(toggles[-1] % 2)
        run = int(a.size - 1 - last_other[-1]) + (run if last_other[-1] < 0 else 0)


def _last_top_comma(buf: bytearray, end: int) -> int:
    """The offset of the last comma of `buf[:end]` (an array: `buf[0]` is `[`) at depth 1 outside
    strings, 0 when there is none (`_levels`: numpy, no Python loop per token)."""
    last = 0
    for lo, a, outside, level in _levels(buf, 0, end):
        commas = np.flatnonzero((a == 0x2C) & outside & (level == 1))
        if commas.size:
            last = lo + int(commas[-1])
    return last


#: A JSON string or a bracket: the tokens that end an object, for `_object_end`'s small window.
_STRUCTURE = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
#: `_object_end` reads this many tokens one by one (an ordinary event has a few dozen), the rest
#: of a larger object by `_levels`.
_TOKEN_LIMIT = 4096


def _object_end(buf: bytearray, start: int, end: int) -> int | None:
    """The offset just past the object that starts at `buf[start]` (`{`), found by matching its
    brackets outside strings: its first _TOKEN_LIMIT tokens one by one (an ordinary event ends
    there), a larger object by `_levels` in windows growing eightfold from 512 KiB, so that the
    cost is that of the object, not of the buffer after it; None when it does not end before
    `end`."""
    depth = 0
    for n, m in enumerate(_STRUCTURE.finditer(buf, start, end)):
        if n == _TOKEN_LIMIT:
            break
        token = m.group()
        if token[:1] == b'"':
            continue
        depth += 1 if token in (b"{", b"[") else -1
        if depth == 0:
            return m.end()
    else:
        return None
    window = 512 << 10
    while True:
        stop = min(start + window, end)
        for lo, _, _, level in _levels(buf, start, stop):
            closed = np.flatnonzero(level == 0)
            if closed.size:
                return lo + int(closed[0]) + 1
        if stop == end:
            return None
        window *= 8
