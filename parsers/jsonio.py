"""Reading JSON profile files (plain or gzip) with one-line errors for every way they break."""

from __future__ import annotations

import gc
import gzip
import io
import json
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import numpy as np
import orjson

from traceview.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic (whatever its extension).

    Bounded by the memory guard (`whole_bound`): a file whose whole read would not fit in the
    memory available, or a gzip file that inflates past that (a gzip bomb, or a trailer that
    under-states the size), raises TraceError before the memory is taken."""
    bound = whole_bound(path)
    try:
        raw = path.read_bytes()  # its size (<= the declared size of a .gz) is within `bound`
    except FileNotFoundError:
        raise TraceError(path, "no such file", "check the path") from None
    except IsADirectoryError:
        raise TraceError(path, "is a folder, expected a file") from None
    except OSError as exc:
        raise TraceError(path, f"cannot open ({exc.strerror or exc})") from None
    if not raw:
        raise TraceError(path, "the file is empty", "re-export the profile")
    if raw[:2] == GZIP_MAGIC:
        try:
            if bound is None:
                raw = gzip.decompress(raw)
            else:
                with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
                    raw = gz.read(bound + 1)
                    if len(raw) > bound:
                        raise too_large(path, bound, inflated=True)
                    gz.read(1)  # reach the end: checks the CRC and length, reports a truncated stream
        except EOFError:
            raise TraceError(
                path,
                f"truncated gzip stream ({len(path.read_bytes()):,} compressed bytes, end missing)",
                "the file was cut short or is still being written; copy it again",
            ) from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise TraceError(path, f"corrupt gzip data ({exc})", "copy the file again") from None
        if not raw:
            raise TraceError(path, "the gzip file holds no data", "re-export the profile")
    return raw


def _guard():
    """(memory available or None when the check is off, the memory module); lazy: no import cycle."""
    from traceview.parsers import memory

    return memory.available(), memory


def whole_bound(path: Path) -> int | None:
    """Most bytes `path` may hold (uncompressed) to be read whole: what fits, at the memory guard's
    `PARSE_FACTOR + KEEP_FACTOR` per byte, in the memory available; None when the guard is off.
    Raises TraceError at once when the file's (declared) size is already over it."""
    limit, memory = _guard()
    if limit is None:
        return None
    bound = int(limit / (memory.PARSE_FACTOR + memory.KEEP_FACTOR))
    try:
        declared = memory.uncompressed_size(path)
    except OSError:
        return bound  # read_bytes reports the problem
    if declared > bound:
        raise too_large(path, bound, inflated=False, size=declared)
    return bound


def stream_bound(path: Path) -> int | None:
    """Most bytes a gzip file may inflate to while streamed: its declared size (the gzip trailer,
    `memory.uncompressed_size`, which the guard counted), or more when one streamed parse of more
    still fits the memory available; None when the guard is off."""
    limit, memory = _guard()
    if limit is None:
        return None
    fit = int((limit - memory.STREAM_FIXED) / (memory.STREAM_FACTOR + memory.KEEP_FACTOR))
    try:
        return max(memory.uncompressed_size(path), fit)
    except OSError:
        return fit


def too_large(path: Path, bound: int, inflated: bool, size: int | None = None) -> TraceError:
    """The one line for a file over the memory guard's bound (a gzip bomb, a giant event)."""
    from traceview.parsers.memory import LIMIT_ENV, _gb, available, uncompressed_size

    if inflated:
        what = f"the gzip data inflates to more than {_gb(bound)}"
        try:
            what += f" (its gzip trailer says {_gb(uncompressed_size(path))})"
        except OSError:
            pass
    else:
        what = f"{_gb(size)} to read whole (the streaming reader could not cut it into events)"
    return TraceError(
        path,
        f"{what}, more than fits in the {_gb(available() or 0)} of memory available: "
        f"{'a gzip bomb, or a file too large' if inflated else 'an event too large, or a damaged file'}",
        f"check the file; if it is genuine: load fewer ranks (--ranks SPEC, or point at a sub-folder), "
        f"--executor ray, a machine with more memory, or {LIMIT_ENV} higher",
    )


class _Bounded:
    """A binary stream that raises TraceError (`too_large`) once more than `bound` bytes were read."""

    def __init__(self, fh, path: Path, bound: int):
        self.fh, self.path, self.bound, self.seen = fh, path, bound, 0

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(self.bound + 1 - self.seen if n is None or n < 0 else min(n, self.bound + 1 - self.seen))
        self.seen += len(data)
        if self.seen > self.bound:
            raise too_large(self.path, self.bound, inflated=True)
        return data


def nested_too_deep(values) -> bool:
    """True when a value in `values` nests more than orjson's 255 levels (or holds an integer beyond
    64 bits). polars takes minutes to reject a list nested ~1,000 deep in a text column (found by
    bench/fuzz_parsers.py), so the parsers send such events to their per-field slow path directly.
    Costs an `orjson.dumps` of `values`: ~7 ms per 8 MiB chunk. Used by the Ascend trace_view reader
    and the Kineto dict decode; the Kineto typed decode needs no such guard (it never builds a
    nested value: `parsers.kineto_decode`)."""
    try:
        orjson.dumps(values)
    except TypeError:
        return True
    return False


def peek_bytes(path: Path, n: int = 4096) -> bytes:
    """The first `n` bytes of the (gunzipped) content, for format detection; b'' if unreadable."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == GZIP_MAGIC:
                with gzip.open(fh) as gz:
                    return gz.read(n)
            return fh.read(n)
    except (OSError, EOFError, zlib.error):
        return b""


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while building ~1e6 short-lived dicts.

    orjson's dicts and lists hold no reference cycles, so the collector's passes during the parse
    find nothing to free; pausing it roughly halves orjson.loads time on large traces. The
    collector is re-enabled on exit (also on an exception) only if it was enabled on entry.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def loads(raw: bytes, path: Path, warnings=None):
    """Parse JSON bytes with orjson; fall back to the stdlib for invalid UTF-8 (counted as a warning).

    Raises TraceError with the byte offset for malformed or truncated JSON.
    """
    if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM) :]
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "utf-8" not in str(exc).lower() and "surrogate" not in str(exc).lower():
            raise TraceError(path, *_describe_json_error(getattr(exc, "pos", None), exc.msg, len(raw))) from None
    # Invalid UTF-8 or lone surrogates: decode leniently, then replace what cannot be encoded.
    text = raw.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
        if warnings is not None:
            warnings.add("file(s) with invalid UTF-8 bytes or unicode escapes: those characters replaced by U+FFFD")
        return _scrub_surrogates(doc)
    except json.JSONDecodeError as exc:
        raise TraceError(path, *_describe_json_error(exc.pos, exc.msg, len(text))) from None
    except RecursionError:  # found by bench/fuzz_parsers.py: arrays nested ~1,000 deep
        raise TraceError(
            path, "invalid JSON: values nested too deeply", "re-export the profile or copy it again"
        ) from None


#: The fix named for a JSON file that ends before its document does.
TRUNCATED_FIX = "the file was cut short or is still being written: wait for the profiler to finish, or copy it again"


def _describe_json_error(pos: int | None, msg: str, size: int) -> tuple[str, str]:
    """(problem, fix) of a JSON decode error at `pos` of a `size`-long text."""
    if pos is not None and pos >= size - 1:
        return f"truncated JSON: the text ends at byte {size:,} before the document is complete", TRUNCATED_FIX
    where = f" at byte {pos:,}" if pos is not None else ""
    return f"invalid JSON{where}: {msg}", "re-export the profile or copy it again"


def _scrub_surrogates(obj):
    """Replace lone surrogates (not encodable as UTF-8) in every string of a parsed document."""
    if isinstance(obj, str):
        return obj.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")
    if isinstance(obj, list):
        return [_scrub_surrogates(v) for v in obj]
    if isinstance(obj, dict):
        return {_scrub_surrogates(k): _scrub_surrogates(v) for k, v in obj.items()}
    return obj


#: Bytes of events decoded at once by `ChromeEvents`: that chunk's dicts (~10x its bytes) are the
#: only decoded events alive at a time (why 8 MiB: docs/benchmarks.md, "Tuning constants").
CHUNK_BYTES = 8 << 20
#: How far into the document `ChromeEvents` looks for `"traceEvents": [` before giving up.
HEAD_LIMIT = 64 << 20
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"


class StreamUnsupported(Exception):
    """The streaming reader cannot follow this document: read it whole (`read_bytes` + `loads`),
    which also gives the precise error for a broken file."""


class NotJSON(Exception):
    """What a chunk decoder raises for bytes that are not one JSON array (a cut inside an event)."""


def decode_dicts(view) -> list:
    """The default chunk decoder: the events as orjson's dicts; NotJSON if the bytes are not JSON."""
    try:
        return orjson.loads(view)
    except orjson.JSONDecodeError:
        raise NotJSON from None


class ChromeEvents:
    """The events of a Chrome-trace JSON document, decoded chunk by chunk from a stream.

    Iterating yields the chunks in file order, each about `chunk_bytes` of JSON decoded by
    `decode` (bytes of one JSON array `[ev, ..., ev]` -> anything; NotJSON if they are not JSON;
    default `decode_dicts`: a list of event dicts); the whole file is never held (as bytes or as
    decoded events). After the iteration, `doc` holds the document's
    other keys (header and trailer: deviceProperties, distributedInfo, ...); it is `{}` for a
    top-level event list. Works on plain and gzip files (gunzipped as it is read).

    How a chunk is cut, without a tokenizer in Python: the buffer always starts with `[`; a cut is
    a `,` that follows a `}` and precedes a `{` (whitespace allowed between). That comma is
    replaced by `]` and the buffer up to it decoded by `decode`; the decode succeeds only if the cut
    lies between two top-level events (a comma inside a string or a nested object leaves an
    unterminated string or unbalanced brackets), so a wrong candidate is just skipped. At the end
    of the file, `_value_end` finds the end of the array. Anything
    else (no `"traceEvents": [` in the first `HEAD_LIMIT` bytes, a decode that never succeeds,
    invalid UTF-8, a truncated file, an I/O error) raises `StreamUnsupported` and the caller reads
    the file whole, which reports the exact problem.
    """

    def __init__(self, path: Path, chunk_bytes: int | None = None, decode=None):
        self.path = path
        self.chunk_bytes = chunk_bytes or CHUNK_BYTES
        self.decode = decode or decode_dicts
        self.doc: dict = {}
        #: events dropped because they are not valid JSON in a well-formed array (`bad_event`: a
        #: NaN or Infinity literal, nesting past orjson's 1,024 levels); the caller counts them
        self.dropped = 0

    def __iter__(self) -> Iterator:
        return self._walk(self._decode_head)

    def pieces(self) -> Iterator:
        """The events as undecoded pieces `[ev, ..., ev]` (bytes, about `chunk_bytes` each, for
        other processes to decode), then the last events decoded by `decode`. A piece is cut at the
        last candidate comma without checking it: a wrong cut makes that piece fail to decode,
        and the caller then falls back to iterating (which checks every cut)."""
        return self._walk(self._raw_head)

    def _walk(self, take) -> Iterator:
        """Fill the buffer chunk by chunk, `take` (decode or cut) its head, end with the last events."""
        with self._open() as fh:
            buf = self._find_events(fh)
            eof = False
            while True:
                buf, eof = self._fill(fh, buf, eof)
                if eof:
                    break
                items = take(buf)
                if items is None:
                    buf, eof = self._grow(fh, buf)
                    continue
                yield from items
            yield from self._decode_tail(buf)

    @contextmanager
    def _open(self):
        """The file as a binary stream (gunzipped as read); I/O and gzip errors -> StreamUnsupported."""
        try:
            with open(self.path, "rb") as raw:
                gz = raw.read(2) == GZIP_MAGIC
                raw.seek(0)
                bound = stream_bound(self.path) if gz else None
                stream = gzip.open(raw) if gz else raw
                yield _Bounded(stream, self.path, bound) if bound is not None else stream
        except (OSError, EOFError, zlib.error) as exc:
            raise StreamUnsupported(str(exc)) from None

    def _fill(self, fh, buf: bytearray, eof: bool) -> tuple[bytearray, bool]:
        """Read until `buf` holds `chunk_bytes` or the file ends."""
        while not eof and len(buf) < self.chunk_bytes:
            more = fh.read(self.chunk_bytes)
            eof = not more
            buf += more
        return buf, eof

    def _grow(self, fh, buf: bytearray) -> tuple[bytearray, bool]:
        """No usable cut in `buf`: read one more chunk (StreamUnsupported past 8 chunks)."""
        if len(buf) > 8 * self.chunk_bytes:
            raise StreamUnsupported("no cut between events decodes")
        more = fh.read(self.chunk_bytes)
        buf += more
        return buf, not more

    def _find_events(self, fh) -> bytearray:
        """Read up to the events array; fill `doc` with the header; return `[` + what follows."""
        head = bytearray()
        while True:
            more = fh.read(1 << 20)
            head += more
            body = head[3:] if head.startswith(UTF8_BOM) else head
            start = body.lstrip(_WS)[:1]
            if start == b"[":
                return bytearray(body.lstrip(_WS))
            if start not in (b"{", b""):
                raise StreamUnsupported("not a JSON object or array")
            m = _EVENTS_KEY.search(body)
            if m:
                break
            if not more or len(head) > HEAD_LIMIT:
                raise StreamUnsupported("no traceEvents array near the start")
        try:
            header = orjson.loads(bytes(body[: m.start()]) + b'"traceEvents":[]}')
        except orjson.JSONDecodeError:
            raise StreamUnsupported("the traceEvents key is not a top-level key") from None
        header.pop("traceEvents", None)
        self.doc = header
        return bytearray(b"[") + body[m.end() :]

    def _decode_head(self, buf: bytearray) -> list | None:
        """Decode the events before the last cut that decodes; drop them from `buf` (which keeps
        its leading `[`). None if no cut within the last few candidates decodes. When the first
        candidate fails because of bad events before it (`bad_event`), the events before each are
        decoded and each bad one dropped (counted in `dropped`) instead. A list of decoded items."""
        end = len(buf)
        for attempt in range(16):
            comma, end = _cut_before(buf, end)
            if comma is None:
                return None
            buf[comma] = 0x5D  # "]"
            try:
                events = self.decode(memoryview(buf)[: comma + 1])
            except NotJSON:
                events = NotJSON
            if events is NotJSON:  # (outside the except: its traceback holds a view of `buf`)
                buf[comma] = 0x2C  # ","
                if attempt == 0:
                    out = self._skip_bad_events(buf, len(buf) - comma)
                    if out:
                        return out
                continue
            buf[comma] = 0x5B  # "[": the rest becomes the next chunk's array
            del buf[:comma]
            return [events]
        return None

    def _skip_bad_events(self, buf: bytearray, tail: int) -> list:
        """While `buf` holds a bad event (`bad_event`) before its last `tail` bytes, drop it from
        `buf` and keep the events before it; those kept are then decoded at once (one item; []
        when there was no bad event). Each search stops at the first bad value, and `buf` loses
        what was read from its front (amortised O(1)), so a chunk of bad events costs a pass over
        it, not one per event."""
        kept: list[bytes] = []
        dropped = 0
        while (span := bad_event(buf, len(buf) - tail)) is not None:
            before, after = span
            if before:
                kept.append(bytes(buf[1:before]))
            rest = after
            while rest < len(buf) and buf[rest] in _WS:
                rest += 1
            if rest < len(buf) and buf[rest] == 0x2C:  # ","
                rest += 1
            buf[rest - 1] = 0x5B  # "[": what follows the bad event starts the array
            del buf[: rest - 1]
            dropped += 1
        self.dropped += dropped
        return [self.decode(b"[" + b",".join(kept) + b"]")] if dropped else []

    def _decode_tail(self, buf: bytearray) -> Iterator:
        """The last events (`_decode_last`), after dropping the bad events among them (each with
        the events before it decoded and yielded first)."""
        try:
            last = self._decode_last(buf)
        except StreamUnsupported:
            last = StreamUnsupported
        if last is StreamUnsupported:  # (outside the except: its traceback holds a view of `buf`)
            skipped = self._skip_bad_events(buf, 0)
            if not skipped:
                raise StreamUnsupported("the last events do not decode")
            yield from skipped
            last = self._decode_last(buf)
        yield last

    @staticmethod
    def _raw_head(buf: bytearray) -> list[bytes] | None:
        """The events before the last candidate cut, undecoded, as `[...]`; dropped from `buf`."""
        comma, _ = _cut_before(buf, len(buf))
        if comma is None:
            return None
        piece = bytes(buf[:comma]) + b"]"
        buf[comma] = 0x5B  # "["
        del buf[:comma]
        return [piece]

    def _decode_last(self, buf: bytearray):
        """The last events, up to the array's `]`; the document's remaining keys go to `doc`."""
        end = _value_end(buf)
        try:
            events = self.decode(buf if end is None else memoryview(buf)[:end])
        except NotJSON:
            raise StreamUnsupported("the last events do not decode") from None
        if end is None:
            return events  # a top-level array: nothing follows it
        try:
            tail = bytes(buf[end:]).strip(_WS)
            if tail.startswith(b","):
                extra = orjson.loads(b"{" + tail[1:])
                if isinstance(extra, dict):
                    self.doc.update(extra)
            elif tail != b"}":
                raise StreamUnsupported("unexpected text after the events")
        except orjson.JSONDecodeError as exc:
            raise StreamUnsupported(str(exc)) from None
        return events


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
    `pos` is the first). The nearest candidate cut (`_cut_before`) is tried first (one decode up to
    it); when it lies inside the event (its args hold `},{`), `_last_top_comma` finds it in one
    vectorised pass: never a decode per candidate, which was quadratic in the candidates inside
    one event (a 400 KB event of `{},{},...` took 85 s)."""
    comma, _ = _cut_before(buf, pos)
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


#: Skips one JSON value without building it (to find where the events array ends).
_SKIP = msgspec.json.Decoder(msgspec.Raw)
#: msgspec's message for text after a complete JSON value; the byte is one past its first character.
_TRAILING_AT = re.compile(r"JSON is malformed: trailing characters \(byte (\d+)\)")


def _value_end(buf: bytearray) -> int | None:
    """The offset at which the JSON value that `buf` starts with ends and other text begins; None
    when the value fills `buf` (whitespace aside). The value is skipped by msgspec without building
    anything (~1 ms per MiB, against a full decode of the last chunk twice with orjson's
    "trailing characters" position). StreamUnsupported when `buf` does not start with one JSON value
    (or msgspec words the error otherwise): the whole-document reader says what is wrong."""
    try:
        _SKIP.decode(buf)
    except msgspec.DecodeError as exc:
        m = _TRAILING_AT.fullmatch(str(exc))
        if m is None:
            raise StreamUnsupported(str(exc)) from None
        return int(m.group(1)) - 1
    except RecursionError:  # nesting deeper than msgspec follows: let orjson's whole read decide
        raise StreamUnsupported("values nested too deeply") from None
    return None


def _cut_before(buf: bytearray, end: int) -> tuple[int | None, int]:
    """The last `,` before `end` that follows a `}` and precedes a `{` (whitespace allowed), and
    the position to search before next time; (None, 0) if there is none."""
    while True:
        brace = buf.rfind(b"}", 0, end)
        if brace < 0:
            return None, 0
        i = brace + 1
        n = len(buf)
        while i < n and buf[i] in _WS:
            i += 1
        if i < n and buf[i] == 0x2C:
            j = i + 1
            while j < n and buf[j] in _WS:
                j += 1
            if j < n and buf[j] == 0x7B:  # "{"
                return i, brace
        end = brace
