"""Reading JSON profile files (plain or gzip) with one-line errors for every way they break."""

from __future__ import annotations

import gc
import gzip
import json
import zlib
from contextlib import contextmanager
from pathlib import Path

import orjson

from traceview.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic (whatever its extension)."""
    try:
        raw = path.read_bytes()
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
            raw = gzip.decompress(raw)
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
        problem = _describe_json_error(exc, len(raw))
        if "utf-8" not in str(exc).lower() and "surrogate" not in str(exc).lower():
            raise TraceError(path, problem, "re-export the profile or copy it again") from None
    # Invalid UTF-8 or lone surrogates: decode leniently, then replace what cannot be encoded.
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"invalid JSON at byte {exc.pos:,}: {exc.msg}") from None
    if warnings is not None:
        warnings.add("file(s) with invalid UTF-8 bytes or unicode escapes: those characters replaced by U+FFFD")
    return _scrub_surrogates(doc)


def _describe_json_error(exc: orjson.JSONDecodeError, size: int) -> str:
    pos = getattr(exc, "pos", None)
    if pos is not None and pos >= size - 1:
        return f"truncated JSON: the text ends at byte {size:,} before the document is complete"
    where = f" at byte {pos:,}" if pos is not None else ""
    return f"invalid JSON{where}: {exc.msg if hasattr(exc, 'msg') else exc}"


def _scrub_surrogates(obj):
    """Replace lone surrogates (not encodable as UTF-8) in every string of a parsed document."""
    if isinstance(obj, str):
        return obj.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")
    if isinstance(obj, list):
        return [_scrub_surrogates(v) for v in obj]
    if isinstance(obj, dict):
        return {_scrub_surrogates(k): _scrub_surrogates(v) for k, v in obj.items()}
    return obj
