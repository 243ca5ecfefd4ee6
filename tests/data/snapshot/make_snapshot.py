"""Writes memory_snapshot.pickle: a PyTorch CUDA memory snapshot built from the schema that
torch.cuda.memory._snapshot documents (segments with blocks; device_traces of alloc /
free_requested / free_completed / segment_alloc entries with time_us and frames), because no
public repository ships a real one small enough to keep here. Run: python make_snapshot.py

What it holds (MiB = 2**20 bytes), device 0:
- before the history: one 512 MiB segment holding a 256 MiB block (the weights; its stack names
  model.py), so the history starts at 256 MiB allocated, 512 MiB reserved;
- t=10 µs alloc 64 MiB at 0x1000 (stack: train.py:forward -> torch/nn/linear.py), t=20 µs alloc
  128 MiB at 0x2000 (train.py:loss), t=25 µs a segment_alloc of 1024 MiB, t=30 µs alloc 512 MiB
  at 0x3000 (train.py:backward): the peak, 960 MiB allocated, 1536 MiB reserved, at 30 µs;
- t=40 µs free_requested then t=41 µs free_completed of 0x3000, t=50 µs free_completed of 0x1000;
- at the snapshot: 384 MiB allocated (the weights and 0x2000), 1536 MiB reserved.
"""

import pickle
from pathlib import Path

MiB = 1 << 20


def frames(*stack):
    return [{"filename": f, "line": line, "name": name} for name, f, line in stack]


LINEAR = ("forward", "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", 125)
snapshot = {
    "segments": [
        {
            "device": 0,
            "address": 0x10000000,
            "total_size": 512 * MiB,
            "allocated_size": 384 * MiB,
            "stream": 0,
            "segment_type": "large",
            "blocks": [
                {
                    "address": 0x10000000,
                    "size": 256 * MiB,
                    "requested_size": 256 * MiB,
                    "state": "active_allocated",
                    "frames": frames(("init_weights", "/work/model.py", 12)),
                },
                {
                    "address": 0x2000,
                    "size": 128 * MiB,
                    "requested_size": 128 * MiB,
                    "state": "active_allocated",
                    "frames": frames(("loss", "/work/train.py", 40)),
                },
                {"address": 0x30000000, "size": 128 * MiB, "requested_size": 0, "state": "inactive", "frames": []},
            ],
        },
        {
            "device": 0,
            "address": 0x40000000,
            "total_size": 1024 * MiB,
            "allocated_size": 0,
            "stream": 0,
            "segment_type": "large",
            "blocks": [{"address": 0x40000000, "size": 1024 * MiB, "state": "inactive", "frames": []}],
        },
    ],
    "device_traces": [
        [
            {
                "action": "alloc",
                "addr": 0x1000,
                "size": 64 * MiB,
                "stream": 0,
                "time_us": 10,
                "frames": frames(LINEAR, ("forward", "/work/train.py", 30)),
            },
            {
                "action": "alloc",
                "addr": 0x2000,
                "size": 128 * MiB,
                "stream": 0,
                "time_us": 20,
                "frames": frames(("loss", "/work/train.py", 40)),
            },
            {
                "action": "segment_alloc",
                "addr": 0x40000000,
                "size": 1024 * MiB,
                "stream": 0,
                "time_us": 25,
                "frames": [],
            },
            {
                "action": "alloc",
                "addr": 0x3000,
                "size": 512 * MiB,
                "stream": 0,
                "time_us": 30,
                "frames": frames(("backward", "/work/train.py", 55)),
            },
            {"action": "free_requested", "addr": 0x3000, "size": 512 * MiB, "stream": 0, "time_us": 40, "frames": []},
            {"action": "free_completed", "addr": 0x3000, "size": 512 * MiB, "stream": 0, "time_us": 41, "frames": []},
            {"action": "free_completed", "addr": 0x1000, "size": 64 * MiB, "stream": 0, "time_us": 50, "frames": []},
        ]
    ],
    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""},
}

if __name__ == "__main__":
    Path(__file__).with_name("memory_snapshot.pickle").write_bytes(pickle.dumps(snapshot, protocol=4))
