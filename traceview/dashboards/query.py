"""The dashboard's view state in the URL: the query string (`?rank=0,2&step=4&class=gemm&q=nccl`)
holds the filters, so a view can be shared by its address. Parsing drops what the profile does not
have; `make_query` is the inverse."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode

TIMELINE_PATH = "/timeline"
#: The longest name filter or search, characters: a kernel's whole name (C++ template names run to
#: hundreds of characters; a cut one would match every kernel sharing its prefix).
MAX_NAME = 2000
#: The Compare page (`traceview serve RUN --compare OTHER`).
COMPARE_PATH = "/compare"
#: The Roofline page: the operators against the device's roofline.
ROOFLINE_PATH = "/roofline"
#: The filter bar's widgets, whose values live in the query string, and the property holding each
#: value. The timeline's compare=a,b and host=1 live there too; its toolbar (in the browser) writes them.
FILTER_WIDGETS = {
    "rank-select": "value",
    "step-select": "value",
    "class-select": "value",
    "name-search": "value",
}


def _query(search: str | None) -> dict[str, list[str]]:
    return parse_qs((search or "").lstrip("?"))


#: An integer as the dashboard writes one: ASCII digits, an optional minus, at most 20 digits.
#: Python's int() and str.isdigit() also take other scripts' digits ('１２', '٣'), superscripts
#: (isdigit only: int('²') raises) and underscores ('1_000'); none of those is read as a number.
ASCII_INTEGER = re.compile(r"-?[0-9]{1,20}")


def ascii_int(text: str) -> int | None:
    """`text` as an int when it is ASCII digits with an optional leading minus (no sign, space,
    underscore or other script's digit), else None."""
    return int(text) if isinstance(text, str) and ASCII_INTEGER.fullmatch(text) else None


def _integer(text: str) -> int | None:
    return ascii_int(text.strip())


def parse_query(search: str | None, ranks: list[int], steps: list[int]) -> tuple[list[int] | None, int | None]:
    """(`rank` list or None for all, `step` or None for all) from a query string; unknown values dropped."""
    query = _query(search)
    picked: list[int] = []
    for part in ",".join(query.get("rank", [])).split(","):
        value = _integer(part)
        if value is not None and value in ranks and value not in picked:
            picked.append(value)
    step = _integer((query.get("step") or [""])[0])
    return (sorted(picked) or None), (step if step in steps else None)


def parse_compare(search: str | None, ranks: list[int]) -> list[int]:
    """The ranks (at most two, distinct, known) of the query's `compare=a,b`, in the given order."""
    picked: list[int] = []
    for part in ",".join(_query(search).get("compare", [])).split(","):
        value = _integer(part)
        if value is not None and value in ranks and value not in picked and len(picked) < 2:
            picked.append(value)
    return picked


def parse_filters(search: str | None, classes: list[str]) -> tuple[list[str] | None, str | None, bool]:
    """(`class` list of known classes or None for all, `q` name search or None, `host` lanes on)."""
    query = _query(search)
    picked = [c for c in ",".join(query.get("class", [])).split(",") if c in classes]
    text = (query.get("q") or [""])[0].strip()[:MAX_NAME]
    host = (query.get("host") or [""])[0] in ("1", "true", "yes")
    return (sorted(set(picked)) or None), (text or None), host


def is_timeline(pathname: str | None) -> bool:
    return (pathname or "/").rstrip("/").endswith(TIMELINE_PATH)


def is_compare(pathname: str | None) -> bool:
    return (pathname or "/").rstrip("/").endswith(COMPARE_PATH)


def is_roofline(pathname: str | None) -> bool:
    return (pathname or "/").rstrip("/").endswith(ROOFLINE_PATH)


def make_query(
    ranks: list[int] | None,
    step: int | None,
    compare: list[int | None] | None = None,
    classes: list[str] | None = None,
    query: str | None = None,
    host: bool = False,
) -> str:
    """The query string of a view (the inverse of `parse_query`, `parse_compare`, `parse_filters`)."""
    params = {}
    if ranks:
        params["rank"] = ",".join(str(r) for r in sorted(ranks))
    if step is not None:
        params["step"] = str(step)
    compare = [r for r in (compare or []) if r is not None]
    if compare:
        params["compare"] = ",".join(str(r) for r in compare)
    if classes:
        params["class"] = ",".join(sorted(classes))
    if query and query.strip():
        params["q"] = query.strip()
    if host:
        params["host"] = "1"
    return ("?" + urlencode(params)) if params else ""


def instances_query(search: str | None, name: str, rank: int | None = None, host: bool = False) -> str:
    """The Timeline's query string that shows the instances of a table row: its kernel or
    operator `name` as the name filter `q` (so the timeline draws those tasks, and its search
    finds them), its `rank` when the row is one rank's, host lanes for a host operator; the
    other filters of `search` kept, the class filter dropped (a cross-rank row may be of any)."""
    params = {k: v[0] for k, v in _query(search).items() if k not in ("class", "q") and v}
    params["q"] = name.strip()[:MAX_NAME]
    if rank is not None:
        params["rank"] = str(rank)
        params.pop("compare", None)
    if host:
        params["host"] = "1"
    return "?" + urlencode(params)
