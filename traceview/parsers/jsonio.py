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
import orjson

from traceview.errors import TraceError
from traceview.parsers import host_ram
from traceview.parsers.bad_events import WHITESPACE, bad_event, cut_before
from traceview.parsers.host_ram import LIMIT_ENV, gb_text

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


def whole_bound(path: Path) -> int | None:
    """Most bytes `path` may hold (uncompressed) to be read whole: what fits, at the memory guard's
    `PARSE_FACTOR + KEEP_FACTOR` per byte, in the memory available; None when the guard is off.
    Raises TraceError at once when the file's (declared) size is already over it."""
    limit = host_ram.available()
    if limit is None:
        return None
    bound = int(limit / (host_ram.PARSE_FACTOR + host_ram.KEEP_FACTOR))
    try:
        declared = host_ram.uncompressed_size(path)
    except OSError:
        return bound  # read_bytes reports the problem
    if declared > bound:
        raise too_large(path, bound, inflated=False, size=declared)
    return bound


def stream_bound(path: Path) -> int | None:
    """Most bytes a gzip file may inflate to while streamed: its declared size (the gzip trailer,
    `host_ram.uncompressed_size`, which the guard counted), or more when one streamed parse of more
    still fits the memory available; None when the guard is off."""
    limit = host_ram.available()
    if limit is None:
        return None
    fit = int((limit - host_ram.STREAM_FIXED) / (host_ram.STREAM_FACTOR + host_ram.KEEP_FACTOR))
    try:
        return max(host_ram.uncompressed_size(path), fit)
    except OSError:
        return fit


def too_large(path: Path, bound: int, inflated: bool, size: int | None = None) -> TraceError:
    """The one line for a file over the memory guard's bound (a gzip bomb, a giant event)."""
    if inflated:
        what = f"the gzip data inflates to more than {gb_text(bound)}"
        try:
            what += f" (its gzip trailer says {gb_text(host_ram.uncompressed_size(path))})"
        except OSError:
            pass
    else:
        what = f"{gb_text(size)} to read whole (the streaming reader could not cut it into events)"
    return TraceError(
        path,
        f"{what}, more than fits in the {gb_text(host_ram.available() or 0)} of memory available: "
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
_WS = WHITESPACE


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
            comma, end = cut_before(buf, end)
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
        comma, _ = cut_before(buf, len(buf))
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
