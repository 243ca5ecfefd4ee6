"""pyright over traceview/ (settings: [tool.pyright] in pyproject.toml), held to a ratchet.

    python3 .ci/typecheck.py            # fail when a file has more errors than .ci/pyright-baseline.json
    python3 .ci/typecheck.py --update   # write today's counts (a count may only go down, unless
                                        # --new-versions: the libraries' stubs changed)

traceview was typed loosely before the checker ran (300 errors in 66 files when it was introduced
in issue 31, most of them from polars' stubs: `float(df.item())` of an Optional literal, dtype classes where an
instance is typed); the baseline records each file's count, a change may not add one, and each
fix lowers the baseline. A new file starts at zero.

Most counts depend on the stubs of the libraries installed, and CI installs the newest polars its
range allows: the baseline records the versions it was measured with (VERSIONED), and when they
differ from those installed a file over its count is reported, not failed, with the hint to fix
and re-record (a library's release must not turn an unrelated change red).
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "pyright-baseline.json"

#: The distributions whose stubs the counts depend on (recorded in the baseline under VERSIONS).
VERSIONED = ("pyright", "polars", "numpy", "plotly", "dash")
VERSIONS = "__versions__"


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in VERSIONED:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


def errors() -> tuple[collections.Counter, list[dict]]:
    out = subprocess.run(
        [sys.executable, "-m", "pyright", "--outputjson", "traceview"], cwd=ROOT, capture_output=True, text=True
    )
    try:
        report = json.loads(out.stdout)
    except ValueError:
        sys.exit(
            f"typecheck: pyright did not report (exit {out.returncode}):\n{out.stdout[-2000:]}{out.stderr[-2000:]}"
        )
    found = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    for d in found:
        d["file"] = Path(d["file"]).resolve().relative_to(ROOT).as_posix()
    return collections.Counter(d["file"] for d in found), found


def main() -> None:
    counts, found = errors()
    baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    recorded = baseline.pop(VERSIONS, {})
    same = recorded == versions()
    if "--update" in sys.argv:
        up = sorted(f for f, n in counts.items() if n > baseline.get(f, 0))
        if up and BASELINE.exists() and same and "--new-versions" not in sys.argv:
            sys.exit(f"typecheck: {', '.join(up)} would gain errors; fix them instead")
        BASELINE.write_text(json.dumps({VERSIONS: versions(), **dict(sorted(counts.items()))}, indent=1) + "\n")
        print(f"typecheck: baseline written: {sum(counts.values())} errors in {len(counts)} files")
        return
    over = sorted(f for f, n in counts.items() if n > baseline.get(f, 0))
    total, was = sum(counts.values()), sum(baseline.values())
    if over:
        for d in found:
            if d["file"] in over:
                line = d["range"]["start"]["line"] + 1
                print(f"{d['file']}:{line}: {d['message'].splitlines()[0]} ({d.get('rule', '')})")
        if not same:
            print(
                f"typecheck: the baseline was measured with {recorded}, this run has {versions()}: "
                f"the counts above are reported, not failed; fix them and re-record "
                f"(python3 .ci/typecheck.py --update --new-versions)"
            )
            return
        sys.exit(f"typecheck: more errors than the baseline in {', '.join(over)}")
    lower = [f for f, n in baseline.items() if counts.get(f, 0) < n]
    hint = f"; {len(lower)} file(s) improved: run --update to lower the baseline" if lower else ""
    print(f"typecheck: {total} errors (baseline {was}), none new{hint}")


if __name__ == "__main__":
    main()
