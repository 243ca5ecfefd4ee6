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

Errors are ValueError with one line naming the key (the CLI shows them as usage errors).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

from traceview import rules as rule_tables

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


_INT_KEYS = {
    "layers",
    "hidden",
    "heads",
    "seq",
    "micro_batch",
    "ffn",
    "kv_heads",
    "micro_batches",
    "tp",
    "pp",
    "dp",
    "devices_per_node",
}
_ZERO_OK = {"vocab"}
_BOOL_KEYS = {"gated_ffn", "causal", "recompute", "training", "distributed_optimizer"}
_FLOAT_KEYS = {"peak_tflops", "memory_tbps", "intra_node_gbps", "inter_node_gbps"}
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
        except rule_tables.tomllib.TOMLDecodeError:
            found[key] = text.strip()
    return found


def _check(key: str, value) -> None:
    def bad(want: str) -> ValueError:
        return ValueError(f"model config: {key} must be {want}, got {value!r}")

    if key in _INT_KEYS or key in _ZERO_OK:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        if value < (0 if key in _ZERO_OK else 1):
            raise bad("at least 0" if key in _ZERO_OK else "a positive integer")
    elif key in _BOOL_KEYS:
        if not isinstance(value, bool):
            raise bad("true or false")
    elif key in _FLOAT_KEYS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise bad("a positive number")
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
