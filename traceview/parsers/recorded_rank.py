"""The rank a source records, learned without parsing it (`recorded_rank`), so that
`traceview.load(ranks=...)` skips unselected ranks before parsing them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from traceview.errors import Warnings
from traceview.parsers.ascend.files import read_rank
from traceview.parsers.detect import ASCEND_OUTPUT_DIR, SNIFF_BYTES, Source
from traceview.parsers.jsonio import peek_bytes
from traceview.parsers.mindspore import TIMELINE_NAME

#: Start of torch.profiler's `"distributedInfo": {...}` header block (it holds the rank).
DISTRIBUTED_INFO = re.compile(rb'"distributedInfo"\s*:\s*\{')


def recorded_rank(source: Source) -> int | None:
    """The rank `source` records, learned without parsing it; None when only a parse can tell.

    The same value the source's parser puts in `meta["rank"]`, from:
    - kineto: `distributedInfo.rank` in the first 64 KiB (gunzipped) of the file, when that block
      comes before `"traceEvents"` (torch.profiler writes it in the header); a block found after the
      events start, or cut off by the 64 KiB, is not trusted;
    - ascend: `profiler_info_<rank>.json` beside ASCEND_PROFILER_OUTPUT/ (`rank_id`, else the number in
      the name; `parsers.ascend.files.read_rank`); a DB-only export without that file needs a parse;
    - mindspore: the number in the `*timeline_display_<rank>.json` name.
    Used by `traceview.load(ranks=...)` to skip unselected ranks before parsing them.
    """
    try:
        if source.format == "kineto":
            return _kineto_rank(source.path)
        if source.format == "ascend":
            return _ascend_rank(source.path)
        if source.format == "mindspore":
            m = TIMELINE_NAME.search(source.path.name)
            return int(m.group(1)) if m else None
    except (OSError, ValueError):
        return None
    return None


def _kineto_rank(path: Path) -> int | None:
    head = peek_bytes(path, SNIFF_BYTES)
    m = DISTRIBUTED_INFO.search(head)
    if m is None:
        return None
    events = head.find(b'"traceEvents"')
    if 0 <= events < m.start():  # not the header block: it could belong to an event; let the parser say
        return None
    try:
        block, _ = json.JSONDecoder().raw_decode(head[m.end() - 1 :].decode("utf-8", errors="replace"))
    except ValueError:  # cut off by the peek, or not JSON
        return None
    rank = block.get("rank") if isinstance(block, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


def _ascend_rank(path: Path) -> int | None:
    root = path.parent if path.name == ASCEND_OUTPUT_DIR and not (path / ASCEND_OUTPUT_DIR).is_dir() else path
    info = sorted(p for p in root.glob("profiler_info*.json") if p.is_file())
    return read_rank(info, Warnings(path)) if info else None
