"""Sizes users give in the environment (`8G`, `512M`, `off`), read one way everywhere."""

from __future__ import annotations

import re

from traceview.errors import TraceError

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
#: Words that switch a limit off.
OFF = ("off", "none", "0")


def parse_size(text: str, name: str) -> int | None:
    """Bytes of a size given as `text` (a number in ASCII digits with an optional K/M/G/T suffix,
    binary units, an optional `B`/`iB`), or None for `off`/`none`/`0`; TraceError naming the
    variable `name` if it is not a size (full-width digits `１２G` are not, which a `\\d` pattern takes)."""
    value = text.strip().lower()
    if value in OFF:
        return None
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)i?b?", value, flags=re.ASCII)
    if not m:
        raise TraceError(None, f"${name}={text!r} is not a size", "give bytes, e.g. 8G, or off")
    return int(float(m.group(1)) * _UNITS[m.group(2)])
