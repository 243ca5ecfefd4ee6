"""A transformer training job's configuration, the analytical model's input (docs/roofline.md,
"The analytical model"; `traceview.analysis.expected`).

Read from a small TOML file (`--model-config FILE`: the keys below at the top level or under
`[model]`, whose keys win), a dict, or `key=value` overrides (`--model KEY=VALUE`, applied after the file). Every
key, its unit and default:

- layers, hidden, heads, seq, micro_batch: the transformer (required). micro_batch = sequences per
  micro-batch on one data-parallel replica.
- ffn (default 4 × hidden), kv_heads (default heads: grouped-query attention when fewer),
  gated_ffn (default false: SwiGLU-style, three FFN matrices), vocab (default 0: no embedding or
  logits counted), causal (default true: causal attention does half the score FLOPs, as the
  trace's attention formula counts), recompute (default false: full activation recomputation runs
  each layer's forward twice), training (default true; false: forward passes only, as an
  inference profile runs them: no backward, gradient all-reduce or optimizer).
- micro_batches (default 1): micro-batches per step per replica (pipeline micro-batches or
  gradient accumulation).
- tp, pp, dp (default 1): tensor-, pipeline- and data-parallel sizes; devices_per_node (default 8).
- distributed_optimizer (default false): optimizer state sharded over dp (ZeRO-1).
- dtype (default "bf16"): the matmuls' and activations' dtype; grad_dtype (default "fp32"): the
  gradient all-reduce's dtype.
- device (default: the profile's device): a name matched against the device table;
  peak_tflops, memory_tbps, intra_node_gbps, inter_node_gbps: override the table's matrix peak
  for dtype (TFLOP/s), memory bandwidth (TB/s) and link bandwidths (GB/s per direction per
  device: NVLink / HCCS / Infinity Fabric inside a node, the device's share of the node's network
  between nodes).

Ranges (`RANGES`; every number the model computes from them stays finite): the counts layers,
heads, kv_heads, micro_batch, micro_batches, tp, pp, dp and devices_per_node are integers from 1 to
2**20 (1,048,576); the sizes hidden, ffn and seq from 1 to 2**31 (2,147,483,648), vocab from 0 to
2**31; the rates from 0.001 to 1e6 in their unit (the device table's range): nan, inf, a subnormal
or a negative rate is refused.

Errors are ValueError with one line naming the key (the CLI shows them as usage errors).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from traceview import rules as rule_tables
from traceview.analysis.device_peaks import RATE_RANGE

#: Bytes per element of each dtype the model takes.
DTYPE_BYTES = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4, "tf32": 4}


@dataclass(frozen=True)
class ModelConfig:
    """The job (module docstring for each field's meaning, unit and default)."""

    layers: int
    hidden: int
    heads: int
    seq: int
    micro_batch: int
    ffn: int | None = None
    kv_heads: int | None = None
    gated_ffn: bool = False
    vocab: int = 0
    causal: bool = True
    recompute: bool = False
    training: bool = True
    micro_batches: int = 1
    tp: int = 1
    pp: int = 1
    dp: int = 1
    devices_per_node: int = 8
    distributed_optimizer: bool = False
    dtype: str = "bf16"
    grad_dtype: str = "fp32"
    device: str | None = None
    peak_tflops: float | None = None
    memory_tbps: float | None = None
    intra_node_gbps: float | None = None
    inter_node_gbps: float | None = None

    @property
    def ffn_size(self) -> int:
        return self.ffn if self.ffn is not None else 4 * self.hidden

    @property
    def kv_size(self) -> int:
        """Width of K (and of V): hidden × kv_heads / heads."""
        return self.hidden * (self.kv_heads or self.heads) // self.heads

    @property
    def layers_per_stage(self) -> int:
        return self.layers // self.pp

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    def layer_params(self) -> int:
        """Weights of one layer (whole, before tensor parallelism): QKV, output projection, FFN
        matrices (biases and norm weights, under 0.1 %, are left out)."""
        h = self.hidden
        return h * (h + 2 * self.kv_size) + h * h + (3 if self.gated_ffn else 2) * h * self.ffn_size

    def params(self) -> int:
        """The model's weights: layers × layer_params + vocab × hidden (the embedding, tied with the
        logits when vocab is given)."""
        return self.layers * self.layer_params() + self.vocab * self.hidden


_COUNT = (1, 2**20)
_SIZE = (1, 2**31)
#: The range of each integer key, inclusive.
INT_RANGES = {
    **dict.fromkeys(("layers", "heads", "kv_heads", "micro_batch", "micro_batches"), _COUNT),
    **dict.fromkeys(("tp", "pp", "dp", "devices_per_node"), _COUNT),
    **dict.fromkeys(("hidden", "ffn", "seq"), _SIZE),
    "vocab": (0, 2**31),
}
#: The range of each rate, inclusive, in its unit (TFLOP/s, TB/s, GB/s): the device table's.
FLOAT_RANGES = dict.fromkeys(("peak_tflops", "memory_tbps", "intra_node_gbps", "inter_node_gbps"), RATE_RANGE)
#: Every key's range (docs/roofline.md lists them).
RANGES = {**INT_RANGES, **FLOAT_RANGES}
_UNITS = {"peak_tflops": "TFLOP/s", "memory_tbps": "TB/s", "intra_node_gbps": "GB/s", "inter_node_gbps": "GB/s"}
_BOOL_KEYS = {"gated_ffn", "causal", "recompute", "training", "distributed_optimizer"}
_STR_KEYS = {"dtype", "grad_dtype", "device"}
KEYS = tuple(f.name for f in dataclasses.fields(ModelConfig))
REQUIRED = ("layers", "hidden", "heads", "seq", "micro_batch")


def model_config(source: ModelConfig | dict | str | Path | None = None, overrides=()) -> ModelConfig:
    """The configuration from `source` (a ModelConfig, a dict, or a TOML file's path) with
    `overrides` applied: a dict or "key=value" strings (values parsed as TOML values, or taken as
    a string). ValueError, one line, for an unknown key, a bad value or a missing required key."""
    if isinstance(source, ModelConfig):
        values = dataclasses.asdict(source)
    elif isinstance(source, dict):
        values = _merged(source)
    elif source is None:
        values = {}
    else:
        values = _merged(rule_tables.read(source))
    values.update(_overrides(overrides))
    values = {k: v for k, v in values.items() if v is not None}
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise ValueError(f"model config: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    missing = [k for k in REQUIRED if k not in values]
    if missing:
        raise ValueError(f"model config: {', '.join(missing)} missing (required: {', '.join(REQUIRED)})")
    for key, value in values.items():
        _check(key, value)
    config = ModelConfig(**values)
    _check_consistent(config)
    return config


def _merged(doc: dict) -> dict:
    """The keys of a document: its top-level keys and those of its [model] table, which win (TOML
    puts top-level keys before the first table, so a file may hold both)."""
    model = doc.get("model")
    top = {k: v for k, v in doc.items() if k != "model"}
    return {**top, **model} if isinstance(model, dict) else dict(doc)


def _overrides(overrides) -> dict:
    if isinstance(overrides, dict):
        return dict(overrides)
    found = {}
    for item in overrides:
        key, sep, text = str(item).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"model config: {item!r} is not KEY=VALUE")
        try:
            found[key] = rule_tables.tomllib.loads(f"v = {text.strip()}")["v"]
        except ValueError:  # not a TOML value (or an integer of over 4,300 digits): a string
            found[key] = text.strip()
    return found


def _check(key: str, value) -> None:
    def bad(want: str) -> ValueError:
        return ValueError(f"model config: {key} must be {want}, got {rule_tables.shown(value)}")

    if key in INT_RANGES:
        low, high = INT_RANGES[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        if not low <= value <= high:
            raise bad(f"{'a positive integer' if low else 'an integer'} from {low} to {high:,}")
    elif key in _BOOL_KEYS:
        if not isinstance(value, bool):
            raise bad("true or false")
    elif key in FLOAT_RANGES:
        low, high = FLOAT_RANGES[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise bad(f"a positive number from {low:g} to {high:g} {_UNITS[key]}")
    elif key in _STR_KEYS:
        if not isinstance(value, str) or not value:
            raise bad("a string")
        if key in ("dtype", "grad_dtype") and value not in DTYPE_BYTES:
            raise bad(f"one of {', '.join(DTYPE_BYTES)}")


def _check_consistent(c: ModelConfig) -> None:
    rules = [
        (c.hidden % c.heads == 0, f"hidden ({c.hidden}) must be a multiple of heads ({c.heads})"),
        (c.kv_heads is None or c.heads % c.kv_heads == 0, f"heads ({c.heads}) must be a multiple of kv_heads"),
        (c.layers % c.pp == 0, f"layers ({c.layers}) must be a multiple of pp ({c.pp})"),
        (c.heads % c.tp == 0, f"heads ({c.heads}) must be a multiple of tp ({c.tp})"),
        (c.ffn_size % c.tp == 0, f"ffn ({c.ffn_size}) must be a multiple of tp ({c.tp})"),
    ]
    for ok, message in rules:
        if not ok:
            raise ValueError(f"model config: {message}")
