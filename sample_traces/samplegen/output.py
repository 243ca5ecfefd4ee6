"""Output helpers: Kineto-style microsecond text, deterministic gzip and JSON writers."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path


# Output helpers
class US(int):
    """A time in integer nanoseconds, written as microseconds with exactly 3 decimals (Kineto style)."""


def us3(ns: int) -> str:
    sign = "-" if ns < 0 else ""
    ns = abs(int(ns))
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def jv(v) -> str:
    """JSON text for one value; US values become exact 3-decimal microsecond numbers."""
    if isinstance(v, US):
        return us3(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {jv(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(jv(x) for x in v) + "]"
    return json.dumps(v)


def write_bytes(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(data)
    return buf.getvalue()


def write_json(path: Path, obj, indent=2):
    write_bytes(path, (json.dumps(obj, indent=indent) + "\n").encode())
