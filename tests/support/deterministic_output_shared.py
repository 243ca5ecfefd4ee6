"""What the split modules of test_deterministic_output.py share (helpers and fixtures)."""

from __future__ import annotations

import hashlib

from tests.conftest import SAMPLES, run_cli


def _outputs(profile, tmp_path, tag: str, *load: str) -> dict[str, str]:
    """Digest of each format's output for one run (`load`: cache and job options)."""
    out = {}
    for name, args in {
        "summary": ("summary", "--format", "json"),
        "summary_text": ("summary",),
        "info": ("info", "--format", "json"),
    }.items():
        res = run_cli(*args, str(profile), "-q", *load)
        assert res.returncode == 0, res.stderr
        out[name] = hashlib.sha256(res.stdout.encode()).hexdigest()
    for fmt in ("html", "csv"):
        target = tmp_path / f"{tag}.{fmt}"
        res = run_cli("report", str(profile), "-q", "--format", fmt, "-o", str(target), *load)
        assert res.returncode == 0, res.stderr
        if target.is_dir():
            parts = [f.name.encode() + f.read_bytes() for f in sorted(target.iterdir())]
        else:
            parts = [target.read_bytes()]
        out[fmt] = hashlib.sha256(b"".join(parts)).hexdigest()
    diff = run_cli("diff", str(SAMPLES / "dp4_nccl"), str(profile), "--format", "json", "-q", *load)
    out["diff"] = hashlib.sha256(diff.stdout.encode()).hexdigest()
    return out
