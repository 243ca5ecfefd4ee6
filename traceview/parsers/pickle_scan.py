"""What a pickle would make pickle's unpickler do, read from its opcodes before it runs, building
nothing (`parsers/snapshot.py` checks every memory snapshot with it before loading it).

pickle's unpickler (the C one) trusts what a pickle declares, so a small file can take gigabytes or
hours, in C code that no signal interrupts:
- a memo slot index (LONG_BINPUT, PUT) grows the memo to twice that index, 8 bytes a slot, before
  anything is stored: 9 bytes naming slot 2**27 take 2 GiB;
- a length (BINBYTES8, BINUNICODE8, BYTEARRAY8, ...) may be allocated before its bytes are read;
- a container opcode builds 56 to 216 bytes from one byte of input (EMPTY_DICT: a 64-byte dict);
- dict keys whose hashes are equal make each insertion compare with all the others: 40,000 integer
  keys that are multiples of 2**61 - 1 (all hash to 0) take 40 s in one SETITEMS, a 760 kB file.

`check(data, memory)` steps over the opcodes (their arguments skipped by length, never decoded into
objects) and raises `Refused` (one line: what, at which byte) when:
- an opcode is unknown, or a declared length (a string's, a FRAME's) runs past the end of the data;
- a memo slot index (LONG_BINPUT, PUT) is at least max(len(data) / 2, 256): every stored value takes
  two bytes at least (its own opcode and the put's) and pickle numbers them from 0, so no pickle
  that pickle wrote names such a slot (BINPUT's one-byte index costs 4 KiB at most);
- it builds a set or frozenset (EMPTY_SET, ADDITEMS, FROZENSET): a snapshot holds none (older
  protocols pickle them as builtins.set, which the reader refuses too);
- more than FLOOD_KEYS dict keys are tuples, floats or integers of magnitude >= 2**61 - 1, the keys
  whose hashes a pickle can make equal (str and bytes hashes are salted per process, smaller
  integers hash to themselves); a snapshot's keys are all text. The stack is followed to tell keys
  from values (a Python step per opcode, ~3 s per 10 M opcodes) only when the file holds more than
  FLOOD_KEYS such values (PyTorch writes one tuple per segment);
- `memory` (bytes, or None: unknown) is given and the containers the pickle builds take more
  (a dict 64 bytes, a list 56, a tuple 40 + 8 per item, a bytearray 57 + its length; a lower
  bound, each kept as built): counted only when the file could exceed it, len(data) x
  MOST_BYTES_PER_BYTE > memory, because counting stops at every container opcode.

Runs of fixed-length opcodes and short strings are stepped over by one regular expression in C,
CHUNK bytes at a time (so that a signal is taken between chunks); the other opcodes in Python. A
39 MB snapshot of 10 M opcodes takes 0.5 to 0.75 s (its unpickling 1.5 to 1.8 s; `traceview info`
of it 4.3 to 4.6 s of CPU before the check, 4.5 to 5.0 s with it and the snapshot walk's checks,
on a shared 2-core machine); the 1 kB snapshot of tests/data/snapshot, 47 µs.
"""

from __future__ import annotations

import re
import struct

#: Most dict keys that are tuples, floats or integers of magnitude >= 2**61 - 1 (their hashes can be
#: made equal; inserting n such keys compares about n**2 / 2 times: 0.5 s for 5,000, 40 s for 40,000).
FLOOD_KEYS = 4096
#: Integers at least this large (in magnitude) can share a hash: Python hashes integers modulo it.
HASH_MODULUS = (1 << 61) - 1
#: Bytes the regular expression steps over per call (about 10 ms), so that a signal is taken.
CHUNK = 1 << 20
#: The most bytes of objects one input byte can build: EMPTY_SET (a 216-byte set), refused anyway; a
#: dict (64 bytes) with its 8-byte slot in a list is the most of what is allowed.
MOST_BYTES_PER_BYTE = 216

#: Opcode -> the bytes of its argument (>= 0); or how its argument is delimited: COUNTED_1/4/8 (a
#: little-endian length of 1, 4 or 8 bytes, then that many bytes), LINE (up to a newline), LINES
#: (two newlines). Opcodes not listed do not exist.
COUNTED_1, COUNTED_4, COUNTED_8, LINE, LINES = -1, -4, -8, -9, -18
ARG: dict[int, int] = {
    **dict.fromkeys(b"(.012NabdelostRu})]Q\x81\x85\x86\x87\x88\x89\x8f\x90\x91\x92\x93\x94\x97\x98", 0),
    **dict.fromkeys(b"Khq\x80\x82", 1),
    **dict.fromkeys(b"M\x83", 2),
    **dict.fromkeys(b"Jjr\x84", 4),
    **dict.fromkeys(b"G\x95", 8),
    **dict.fromkeys(b"\x8aUC\x8c", COUNTED_1),
    **dict.fromkeys(b"\x8bTBX", COUNTED_4),
    **dict.fromkeys(b"\x8d\x8e\x96", COUNTED_8),
    **dict.fromkeys(b"ILSVFgpP", LINE),
    **dict.fromkeys(b"ci", LINES),
}
NAMES = {
    ord("r"): "LONG_BINPUT",
    ord("p"): "PUT",
    0x95: "FRAME",
    0x8A: "LONG1",
    0x8B: "LONG4",
    ord("T"): "BINSTRING",
    ord("B"): "BINBYTES",
    ord("X"): "BINUNICODE",
    0x8D: "BINUNICODE8",
    0x8E: "BINBYTES8",
    0x96: "BYTEARRAY8",
    ord("U"): "SHORT_BINSTRING",
    ord("C"): "SHORT_BINBYTES",
    0x8C: "SHORT_BINUNICODE",
    0x8F: "EMPTY_SET",
    0x90: "ADDITEMS",
    0x91: "FROZENSET",
}
STOP, LONG_BINPUT, PUT, FRAME, LONG1, LONG4, BINFLOAT, FLOAT = b".rp\x95\x8a\x8bGF"
INT, LONG, BYTEARRAY8, BINSTRING = b"IL\x96T"
SETS = frozenset(b"\x8f\x90\x91")
#: Tuple-building opcodes -> the bytes of the tuple they build (TUPLE: at least the empty one, shared).
TUPLES = {ord("t"): 0, 0x85: 48, 0x86: 56, 0x87: 64}
#: Container-building opcodes (besides tuples) -> the bytes of the empty container.
CONTAINERS = {ord("}"): 64, ord("d"): 64, ord("]"): 56, ord("l"): 56}


def _run(exclude: bytes) -> re.Pattern[bytes]:
    """A regular expression matching a run of the opcodes the Python loop need not see: fixed-size
    ones (less `exclude` and those checked or counted) and short strings, LONG1 under 8 bytes."""
    skip = set(exclude) | set(TUPLES) | SETS | {STOP, LONG_BINPUT, FRAME, BINFLOAT}
    alts = []
    for size in (0, 1, 2, 4, 8):
        ops = bytes(op for op, arg in ARG.items() if arg == size and op not in skip)
        if ops:
            alts.append(b"[" + re.escape(ops) + b"]" + (b".{%d}" % size if size else b""))

    def counted(ops: bytes, most: int) -> bytes:
        lengths = b"|".join(re.escape(bytes([k])) + (b".{%d}" % k if k else b"") for k in range(most + 1))
        return b"[" + re.escape(ops) + b"](?:" + lengths + b")"

    alts += [counted(b"UC\x8c", 255), counted(b"\x8a", 7)]
    return re.compile(b"(?s)(?:" + b"|".join(alts) + b")*+")


_RUN = _run(b"")
_COUNTING_RUN = _run(bytes(CONTAINERS))


class Refused(Exception):
    """The pickle is refused before it is loaded: `problem` says what, where and why (one line)."""

    def __init__(self, problem: str, fix: str | None = None):
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


def _size(n: float) -> str:
    return f"{n / (1 << 30):,.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):,.1f} MiB"


def _name(op: int) -> str:
    return NAMES.get(op, f"opcode {bytes([op])!r}")


def _memo_slot(op: int, at: int, slot: int, n: int) -> None:
    if slot >= max(n // 2, 256):
        raise Refused(
            f"a pickle bomb, refused before loading: {_name(op)} at byte {at:,} names memo slot {slot:,}, but a "
            f"{n:,}-byte pickle stores at most {n // 2:,} values (pickle would allocate {_size(16 * slot)} for that slot)"
        )


def _truncated(op: int, at: int, declared: int, remain: int) -> str:
    return f"not a readable pickle (pickle data was truncated: {_name(op)} at byte {at:,} declares {declared:,} bytes but {remain:,} remain)"


def _big(digits: bytes) -> bool:
    """Whether a decimal integer (INT / LONG text) has magnitude >= HASH_MODULUS (or is not one)."""
    digits = digits.rstrip(b"L").lstrip(b"+-")
    return len(digits) > 19 or not digits.isdigit() or int(digits) >= HASH_MODULUS


def check(data: bytes, memory: int | None = None) -> None:
    """Refused (module docstring) if the pickle `data` would make the unpickler allocate far more
    than it holds, or take far longer than its size; `memory`: the bytes available, or None."""
    n = len(data)
    counting = memory is not None and n * MOST_BYTES_PER_BYTE > memory
    run = (_COUNTING_RUN if counting else _RUN).match
    built = hashable = 0  # bytes of containers built (when counting); possible colliding keys
    i = 0
    while True:
        i = run(data, i, min(n, i + CHUNK)).end()
        if i >= n:
            break
        op = data[i]
        arg = ARG.get(op)
        if arg is None:
            raise Refused(f"not a readable pickle: unknown opcode 0x{op:02x} at byte {i:,}")
        if op == STOP:
            break
        if op in SETS:
            raise Refused(
                f"not a memory snapshot: {_name(op)} at byte {i:,} builds a set, which a snapshot never holds"
            )
        if arg >= 0:
            end = i + 1 + arg
            if op == LONG_BINPUT and end <= n:
                _memo_slot(op, i, int.from_bytes(data[i + 1 : end], "little"), n)
            elif op == FRAME and end <= n:
                framed = int.from_bytes(data[i + 1 : end], "little")
                if framed > n - end:
                    raise Refused(_truncated(op, i, framed, n - end))
            elif op == BINFLOAT:
                hashable += 1
            elif op in TUPLES:
                hashable += 1
                built += TUPLES[op]
            elif op in CONTAINERS:
                built += CONTAINERS[op]
            i = end
        elif arg in (LINE, LINES):
            end = data.find(b"\n", i + 1)
            if arg == LINES and end >= 0:
                end = data.find(b"\n", end + 1)
            if end < 0:
                break  # the unpickler says it is truncated
            if op == PUT:
                digits = data[i + 1 : end].strip()
                if digits.isdigit() and len(digits) <= 19:  # else the unpickler fails to read it as an index
                    _memo_slot(op, i, int(digits), n)
            elif op in (INT, LONG):
                hashable += _big(data[i + 1 : min(end, i + 30)]) if end - i > 19 else 0
            elif op == FLOAT:
                hashable += 1
            i = end + 1
        else:
            width = -arg
            if i + 1 + width > n:
                break
            length = int.from_bytes(data[i + 1 : i + 1 + width], "little", signed=op in (LONG4, BINSTRING))
            start = i + 1 + width
            if length < 0:
                raise Refused(f"not a readable pickle: {_name(op)} at byte {i:,} declares a negative length")
            if length > n - start:
                raise Refused(_truncated(op, i, length, n - start))
            if op in (LONG1, LONG4):
                hashable += (
                    length > 8
                    or abs(int.from_bytes(data[start : start + length], "little", signed=True)) >= HASH_MODULUS
                )
            elif op == BYTEARRAY8:
                built += 57 + length
            i = start + length
    if counting and memory is not None and built > memory:
        raise Refused(
            f"the dicts, lists and tuples it builds take {_size(built)} at least once loaded, more than the "
            f"{_size(memory)} of memory available: a pickle bomb, or a snapshot too large for this machine",
            "check the file; if it is genuine: a machine with more memory, or TRACEVIEW_MEMORY_LIMIT higher",
        )
    if hashable > FLOOD_KEYS:
        _follow_keys(data)


#: What the key follower does per opcode (`_follow_keys`): push a value whose hash is salted or its
#: own (PUSH: text, bytes, small integers, None, booleans, new lists and dicts), push one whose hash
#: a pickle may choose (PUSH_HASHY: floats; PUSH_NUMBER: LONG1 / LONG4 / INT / LONG, by value), the
#: stack ops, memo stores and fetches; NOTHING (PROTO, FRAME); absent: builds an object (refused).
(PUSH, PUSH_HASHY, PUSH_NUMBER, MARK, POP, POP_MARK, DUP, APPEND, APPENDS, SETITEM, SETITEMS, DICT, LIST) = range(13)
(TUPLE, TUPLE_N, PUT_1, PUT_4, PUT_TEXT, MEMOIZE, GET_1, GET_4, GET_TEXT, NOTHING, STOPS, OTHER) = range(13, 25)
EFFECT = [OTHER] * 256
for _ops, _effect in (
    (b"NKMJ)]}\x88\x89\x8cXVUTSCB\x8d\x8e\x96", PUSH),
    (b"GF", PUSH_HASHY),
    (b"\x8a\x8bIL", PUSH_NUMBER),
    (b"(", MARK),
    (b"0", POP),
    (b"1", POP_MARK),
    (b"2", DUP),
    (b"a", APPEND),
    (b"e", APPENDS),
    (b"s", SETITEM),
    (b"u", SETITEMS),
    (b"d", DICT),
    (b"l", LIST),
    (b"t", TUPLE),
    (b"\x85\x86\x87", TUPLE_N),
    (b"q", PUT_1),
    (b"r", PUT_4),
    (b"p", PUT_TEXT),
    (b"\x94", MEMOIZE),
    (b"h", GET_1),
    (b"j", GET_4),
    (b"g", GET_TEXT),
    (b"\x80\x95", NOTHING),
    (b".", STOPS),
):
    for _op in _ops:
        EFFECT[_op] = _effect


def _mixed(at: int) -> Refused:
    """MEMOIZE fills the slot numbered by the count of slots filled, which PUTs to any number would
    make the follower track slot by slot; no pickler writes both."""
    return Refused(f"not a readable pickle: it fills memo slots both by number and in order (byte {at:,})")


def _follow_keys(data: bytes) -> None:
    """Refused when more than FLOOD_KEYS dict keys are tuples, floats or integers of magnitude >=
    HASH_MODULUS: the unpickler's stack is followed up to the first STOP, each item only as whether
    its hash may be chosen (1) or not (0), and the memo as the set of slots holding such an item. An
    opcode that builds an object (REDUCE, BUILD, a GLOBAL, ...) is refused here, where the unpickler
    would refuse it too. `data` passed `check` (its lengths are within it)."""
    stack: list[int] = []
    marks: list[int] = []
    hashy_slots: set[int] = set()
    slots = keys = i = 0
    by_number = by_order = False
    frm = int.from_bytes
    u32 = struct.Struct("<I").unpack_from
    effects = EFFECT
    at = 0
    try:
        while True:
            at = i
            op = data[i]
            effect = effects[op]
            if effect == GET_4:
                stack.append(u32(data, i + 1)[0] in hashy_slots)
                i += 5
            elif effect == PUSH:
                stack.append(0)
                arg = ARG[op]
                if arg >= 0:
                    i += 1 + arg
                elif arg == COUNTED_1:
                    i += 2 + data[i + 1]
                elif arg == LINE:
                    i = data.index(b"\n", i + 1) + 1
                else:
                    i += 1 - arg + frm(data[i + 1 : i + 1 - arg], "little", signed=op == BINSTRING)
            elif effect == GET_1:
                stack.append(data[i + 1] in hashy_slots)
                i += 2
            elif effect == MEMOIZE:
                if stack[-1]:
                    hashy_slots.add(slots)
                slots += 1
                by_order = True
                if by_number:
                    raise _mixed(at)
                i += 1
            elif effect == MARK:
                marks.append(len(stack))
                i += 1
            elif effect in (SETITEMS, DICT):
                top = marks.pop()
                keys += sum(stack[top::2])
                del stack[top:]
                if effect == DICT:
                    stack.append(0)
                i += 1
            elif effect in (APPENDS, LIST):
                del stack[marks.pop() :]
                if effect == LIST:
                    stack.append(0)
                i += 1
            elif effect == PUSH_NUMBER:
                if op in (LONG1, LONG4):
                    start = i + (2 if op == LONG1 else 5)
                    end = start + frm(data[i + 1 : start], "little", signed=op == LONG4)
                    stack.append(end - start > 8 or abs(frm(data[start:end], "little", signed=True)) >= HASH_MODULUS)
                else:
                    end = data.index(b"\n", i + 1)
                    stack.append(end - i > 19 and _big(data[i + 1 : end]))
                i = end + (op not in (LONG1, LONG4))
            elif effect == SETITEM:
                stack.pop()
                keys += stack.pop()
                i += 1
            elif effect == APPEND:
                stack.pop()
                i += 1
            elif effect == PUSH_HASHY:
                stack.append(1)
                i = i + 9 if op == BINFLOAT else data.index(b"\n", i + 1) + 1
            elif effect in (PUT_1, PUT_4, PUT_TEXT):
                if effect == PUT_TEXT:
                    end = data.index(b"\n", i + 1)
                    slot, i = int(data[i + 1 : end]), end + 1
                else:
                    slot = frm(data[i + 1 : i + (2 if effect == PUT_1 else 5)], "little")
                    i += 2 if effect == PUT_1 else 5
                if stack[-1]:
                    hashy_slots.add(slot)
                else:
                    hashy_slots.discard(slot)
                by_number = True
                if by_order:
                    raise _mixed(at)
            elif effect == GET_TEXT:
                end = data.index(b"\n", i + 1)
                stack.append(int(data[i + 1 : end]) in hashy_slots)
                i = end + 1
            elif effect == TUPLE:
                top = marks.pop()
                stack[top:] = [len(stack) > top]
                i += 1
            elif effect == TUPLE_N:
                stack[len(stack) - (op - 0x84) :] = [1]
                i += 1
            elif effect == POP:
                if marks and marks[-1] == len(stack):
                    marks.pop()
                else:
                    stack.pop()
                i += 1
            elif effect == POP_MARK:
                del stack[marks.pop() :]
                i += 1
            elif effect == DUP:
                stack.append(stack[-1])
                i += 1
            elif effect == NOTHING:
                i += 9 if op == FRAME else 2
            elif effect == STOPS:
                return
            else:
                raise Refused(
                    f"not a plain-data pickle, refused without running it: {_name(op)} at byte {at:,} builds an object"
                )
            if keys > FLOOD_KEYS:
                raise Refused(
                    f"a pickle bomb, refused before loading: more than {FLOOD_KEYS:,} of its dict keys are tuples, "
                    "floats or integers of 2**61 or more, whose hashes a pickle can make equal so that loading takes "
                    f"hours (the last at byte {at:,}; a snapshot's keys are all text)"
                )
    except (IndexError, ValueError):
        if at >= len(data):
            return  # no STOP: the unpickler says it is truncated
        raise Refused(f"not a readable pickle: {_name(data[at])} at byte {at:,} does not fit its stack") from None
