"""The seeds of bench/fuzz_parsers.py and how it damages them: byte mutators, JSON and CSV mutators, Ascend
folder cases, and the other formats (rocprofv3 JSON and CSV, Nsight and msprof SQLite, memory snapshots)."""

from __future__ import annotations

import copy
import gzip
import json
import random
import shutil
from pathlib import Path

from fuzz_adversarial import adversarial_case

from traceview.parsers.kineto_events import ARG_KEYS_READ, EVENT_KEYS_READ

ROOT = Path(__file__).resolve().parents[1]
ASCEND_SEED = ROOT / "sample_traces/ascend_2rank/rank0_ascend_pt"
#: The share of cases that are the second adversarial round's (bench/fuzz_adversarial.py).
ADVERSARIAL_SHARE = 0.25
#: Seeds of the other formats: (file name the case is written as, source file; .gz is unpacked).
FORMAT_SEEDS = (
    ("omp_results.json", ROOT / "tests/data/rocprof/built/omp_results.json"),
    ("omp_kernel_trace.csv", ROOT / "tests/data/rocprof/omp_output/omp_kernel_trace.csv"),
    ("saxpy.sqlite", ROOT / "tests/data/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz"),
    ("msprof_0.db", ROOT / "tests/data/msprof/msprof_0.db"),
    ("memory_snapshot.pickle", ROOT / "tests/data/snapshot/memory_snapshot.pickle"),
)

# ---------------------------------------------------------------------------------------------
# Seeds.


def kineto_seeds() -> list[tuple[str, bytes]]:
    seeds = []
    for p in sorted(ROOT.glob("sample_traces/*/*.json.gz")):
        seeds.append((p.relative_to(ROOT).as_posix(), gzip.decompress(p.read_bytes())))
    for p in sorted((ROOT / "tests/data").glob("*.json")):
        seeds.append((p.relative_to(ROOT).as_posix(), p.read_bytes()))
    return seeds


# ---------------------------------------------------------------------------------------------
# Byte-level mutations.


def bit_flips(rnd: random.Random, data: bytes, other: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rnd.randint(1, 16)):
        if b:
            i = rnd.randrange(len(b))
            b[i] ^= 1 << rnd.randrange(8)
    return bytes(b)


def byte_insert(rnd, data, other):
    b = bytearray(data)
    for _ in range(rnd.randint(1, 8)):
        i = rnd.randint(0, len(b))
        chunk = rnd.choice(
            [
                bytes([rnd.randrange(256)]),
                b"{",
                b"}",
                b"[",
                b"]",
                b",",
                b'"',
                b":",
                b"\\",
                b"\x00",
                b"\xff\xfe",
                b"\xed\xa0\x80",
                b"-",
                b"e999",
                b"0" * rnd.randint(1, 40),
            ]
        )
        b[i:i] = chunk
    return bytes(b)


def byte_delete(rnd, data, other):
    b = bytearray(data)
    for _ in range(rnd.randint(1, 8)):
        if b:
            i = rnd.randrange(len(b))
            del b[i : i + rnd.randint(1, 16)]
    return bytes(b)


def truncate(rnd, data, other):
    return data[: rnd.randint(0, len(data))]


def splice(rnd, data, other):
    return data[: rnd.randint(0, len(data))] + other[rnd.randint(0, len(other)) :]


def replace_token(rnd, data, other):
    """Swap a number or a quoted word for an odd token (NaN, Infinity, huge, negative, text)."""
    tokens = [
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e309",
        b"-1e309",
        b"9" * 30,
        b"-1",
        b"null",
        b"true",
        b'"x"',
        b"[]",
        b"{}",
        b"1.7e12",
        b"18446744073709551616",
        b"-0.0",
        b"0x1F",
    ]
    b = bytearray(data)
    for _ in range(rnd.randint(1, 6)):
        if not b:
            break
        i = rnd.randrange(len(b))
        j = i
        while j < len(b) and j - i < 24 and chr(b[j]) in "0123456789.-+eE":
            j += 1
        b[i : max(j, i + 1)] = rnd.choice(tokens)
    return bytes(b)


BYTE_MUTATORS = [bit_flips, byte_insert, byte_delete, truncate, splice, replace_token]

# ---------------------------------------------------------------------------------------------
# JSON-level mutations (on the parsed document of a Kineto seed).

FIELDS = [*EVENT_KEYS_READ, "id"]
ARG_KEYS = [*ARG_KEYS_READ, "Process Group Ranks"]


def odd_value(rnd: random.Random, depth: int = 0):
    choices = [
        None,
        True,
        False,
        "",
        "x" * rnd.randint(1, 2000),
        "12.5",
        "1e400",
        "NaN",
        "\u0000",
        "\ud800",
        0,
        -1,
        2**63,
        -(2**63) - 1,
        2**64 + 7,
        10**30,
        1e308,
        -1e308,
        1.7e15,
        9.2e12,
        0.5,
        -0.0,
        float("nan"),
        float("inf"),
        float("-inf"),
        [],
        {},
        [1, 2],
        {"a": 1},
    ]
    v = rnd.choice(choices)
    if depth < 2 and rnd.random() < 0.1:
        v = [odd_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return v


def json_mutate(rnd: random.Random, doc, bare: bool = False) -> bytes:
    """A mutated copy of `doc` as JSON bytes (`bare`: write its traceEvents value alone)."""
    doc = copy.deepcopy(doc)
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    deep_token = None
    for _ in range(rnd.randint(1, 8)):
        what = rnd.choice(
            [
                "field",
                "field",
                "field",
                "arg",
                "drop",
                "drop_event",
                "dup_event",
                "header",
                "deep",
                "events_type",
                "swap_ph",
            ]
        )
        if what == "header" and isinstance(doc, dict):
            key = rnd.choice(
                ["distributedInfo", "deviceProperties", "schemaVersion", "traceEvents", "baseTimeNanoseconds"]
            )
            if rnd.random() < 0.3:
                doc.pop(key, None)
            else:
                doc[key] = (
                    odd_value(rnd)
                    if key != "distributedInfo"
                    else rnd.choice([odd_value(rnd), {"rank": odd_value(rnd), "world_size": odd_value(rnd)}])
                )
            events = doc.get("traceEvents")
            continue
        if what == "events_type" and isinstance(doc, dict):
            doc["traceEvents"] = rnd.choice([odd_value(rnd), [odd_value(rnd) for _ in range(5)], {"0": events}])
            events = doc["traceEvents"]
            continue
        if not isinstance(events, list) or not events:
            continue
        i = rnd.randrange(len(events))
        e = events[i]
        if what == "drop_event":
            del events[i]
        elif what == "dup_event":
            events.insert(rnd.randrange(len(events) + 1), copy.deepcopy(e))
        elif not isinstance(e, dict):
            events[i] = odd_value(rnd)
        elif what == "drop":
            e.pop(rnd.choice(FIELDS), None)
        elif what == "arg":
            if isinstance(e.get("args"), dict):
                e["args"][rnd.choice(ARG_KEYS)] = odd_value(rnd)
            else:
                e["args"] = {rnd.choice(ARG_KEYS): odd_value(rnd)}
        elif what == "deep":
            deep_token = "__DEEP__"
            e[rnd.choice(FIELDS)] = deep_token
        elif what == "swap_ph":
            e["ph"] = rnd.choice(["X", "M", "B", "E", "i", "s", "f", "C", "b", "e", "", "XX", None])
        else:
            e[rnd.choice(FIELDS)] = odd_value(rnd)
    if bare and isinstance(doc, dict) and "traceEvents" in doc:
        doc = doc["traceEvents"]
    out = json.dumps(doc, allow_nan=True, ensure_ascii=rnd.random() < 0.5).encode("utf-8", "surrogatepass")
    if deep_token:
        depth = rnd.choice([50, 1000, 100_000])
        out = out.replace(b'"__DEEP__"', b"[" * depth + b"1" + b"]" * depth)
    return out


# ---------------------------------------------------------------------------------------------
# Ascend mutations (a copy of one rank folder).


def csv_mutate(rnd: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(rnd.randint(1, 6)):
        if not lines:
            break
        what = rnd.choice(["cell", "cell", "cell", "drop_col", "drop_row", "dup_row", "cut_row", "header"])
        i = rnd.randrange(len(lines))
        if what == "drop_row" and i:
            del lines[i]
        elif what == "dup_row":
            lines.insert(rnd.randrange(1, len(lines) + 1), lines[i])
        elif what == "cut_row":
            lines[i] = lines[i][: rnd.randint(0, len(lines[i]))]
        else:
            cells = lines[i].rstrip("\r\n").split(",")
            j = rnd.randrange(len(cells))
            if what == "drop_col":
                lines = [
                    ",".join(c for k, c in enumerate(line.rstrip("\r\n").split(",")) if k != j) + "\n" for line in lines
                ]
            elif what == "header":
                cells = lines[0].rstrip("\r\n").split(",")
                cells[rnd.randrange(len(cells))] = rnd.choice(["", "Step Id", "Name", "x", "Start Time(us)"])
                lines[0] = ",".join(cells) + "\n"
            else:
                cells[j] = rnd.choice(
                    [
                        "",
                        "N/A",
                        "nan",
                        "inf",
                        "-inf",
                        "-1",
                        "1e400",
                        "x",
                        '"',
                        '"a,b"',
                        "18446744073709551616",
                        "1767225988120028.2350000001",
                        "\t",
                        " 12 ",
                        "-1767225988120028.235",
                        "0",
                        "\x00",
                        str(rnd.random() * 1e18),
                    ]
                )
                lines[i] = ",".join(cells) + "\n"
    return "".join(lines)


def ascend_case(rnd: random.Random, dest: Path) -> str:
    folder = dest / "rank0_ascend_pt"
    shutil.copytree(ASCEND_SEED, folder)
    out = folder / "ASCEND_PROFILER_OUTPUT"
    target = rnd.choice(["kernel_details.csv", "kernel_details.csv", "trace_view.json", "both", "delete"])
    desc = []
    if target in ("kernel_details.csv", "both"):
        p = out / "kernel_details.csv"
        data = p.read_bytes()
        if rnd.random() < 0.6:
            p.write_text(csv_mutate(rnd, data.decode("utf-8", "replace")), encoding="utf-8")
            desc.append("csv")
        else:
            m = rnd.choice(BYTE_MUTATORS)
            p.write_bytes(m(rnd, data, data))
            desc.append(f"csv-{m.__name__}")
    if target in ("trace_view.json", "both"):
        p = out / "trace_view.json"
        data = p.read_bytes()
        if rnd.random() < 0.5:
            try:
                p.write_bytes(json_mutate_list(rnd, json.loads(data)))
                desc.append("trace_view-json")
            except ValueError:
                pass
        else:
            m = rnd.choice(BYTE_MUTATORS)
            p.write_bytes(m(rnd, data, data))
            desc.append(f"trace_view-{m.__name__}")
    if target == "delete":
        victim = rnd.choice(["kernel_details.csv", "trace_view.json", "step_trace_time.csv"])
        (out / victim).unlink()
        desc.append(f"delete-{victim}")
        if rnd.random() < 0.5:
            p = out / "kernel_details.csv"
            if p.exists():
                p.write_text(csv_mutate(rnd, p.read_text(encoding="utf-8")), encoding="utf-8")
                desc.append("csv")
    return "ascend:" + "+".join(desc)


def json_mutate_list(rnd, doc) -> bytes:
    """trace_view.json is a bare list of events (or a document): mutate it like a Kineto one."""
    if isinstance(doc, list):
        return json_mutate(rnd, {"traceEvents": doc}, bare=True)
    return json_mutate(rnd, doc)


# ---------------------------------------------------------------------------------------------
# The loop.


def tree_mutate(rnd: random.Random, doc) -> bytes:
    """A copy of any JSON document with 1-8 values anywhere in its tree (a leaf, a record, a list)
    replaced by `odd_value`s or dropped, as JSON bytes (NaN/Infinity tokens allowed)."""
    doc = copy.deepcopy(doc)
    for _ in range(rnd.randint(1, 8)):
        node, parent, key = doc, None, None
        while isinstance(node, (dict, list)) and node and rnd.random() < 0.85:
            parent, key = node, rnd.choice(list(node)) if isinstance(node, dict) else rnd.randrange(len(node))
            node = parent[key]
        if parent is None:
            continue
        if isinstance(parent, dict) and rnd.random() < 0.2:
            del parent[key]
        else:
            parent[key] = odd_value(rnd)
    return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")


def format_case(rnd: random.Random, dest: Path) -> tuple[Path, str]:
    """One of the other formats (FORMAT_SEEDS) damaged by a byte mutator, for the CSV kernel trace
    by the CSV mutator, for the rocprofv3 JSON by the tree mutator half the time; the rocprofv3
    CSV keeps its agent_info sibling."""
    name, source = rnd.choice(FORMAT_SEEDS)
    data = source.read_bytes()
    if source.name.endswith(".gz"):
        data = gzip.decompress(data)
    if name.endswith(".json") and rnd.random() < 0.5:
        (dest / name).write_bytes(tree_mutate(rnd, json.loads(data)))
        return dest / name, f"{name}:tree"
    if name.endswith(".csv"):
        shutil.copy(source.with_name("omp_agent_info.csv"), dest / "omp_agent_info.csv")
        if rnd.random() < 0.6:
            (dest / name).write_text(csv_mutate(rnd, data.decode("utf-8", "replace")), encoding="utf-8")
            return dest / name, f"{name}:csv"
    m = rnd.choice(BYTE_MUTATORS)
    (dest / name).write_bytes(m(rnd, data, data))
    return dest / name, f"{name}:{m.__name__}"


def make_case(rnd: random.Random, seeds, parsed, dest: Path) -> tuple[Path, str]:
    if rnd.random() < ADVERSARIAL_SHARE:
        return adversarial_case(rnd, dest)
    if rnd.random() < 0.15:
        return dest / "rank0_ascend_pt", ascend_case(rnd, dest)
    if rnd.random() < 0.2:
        return format_case(rnd, dest)
    name, data = rnd.choice(seeds)
    other = rnd.choice(seeds)[1]
    if rnd.random() < 0.5:
        if name not in parsed:
            parsed[name] = json.loads(data)
        data = json_mutate(rnd, parsed[name])
        desc = f"{name}:json"
    else:
        m = rnd.choice(BYTE_MUTATORS)
        data = m(rnd, data, other)
        desc = f"{name}:{m.__name__}"
    how = rnd.random()
    if how < 0.25:
        data = gzip.compress(data, compresslevel=1)
        if rnd.random() < 0.3:
            data = data[: rnd.randint(0, len(data))]
            desc += "+gz-truncated"
        elif rnd.random() < 0.3:
            data = bit_flips(rnd, data, b"")
            desc += "+gz-flipped"
        else:
            desc += "+gz"
        path = dest / "rank0.pt.trace.json.gz"
    else:
        path = dest / "rank0.pt.trace.json"
    path.write_bytes(data)
    return path, desc
