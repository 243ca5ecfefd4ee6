"""Benchmark: what clients that ask for the Perfetto download and never read cost the dashboard
server (issue 30): the bytes it spools into its temporary folder, its peak resident memory, its CPU
seconds, and how long a normal client then waits for `/`.

    python bench/bench_slow_clients.py [PROFILE] [--clients 30] [--tasks 50000] [--ranks 4]

Without PROFILE it writes the synthetic Kineto profile of bench_serve.py (50,000 kernels on 4 ranks:
a 42 MB Perfetto export) to bench/out/slow_clients_<N>k/. It starts `traceview serve PROFILE` with
TMPDIR set to a fresh folder, opens the clients (each a socket with a 4 KiB receive buffer that
sends `GET /download/perfetto.json` and then reads nothing), and samples until the server's
temporary files, CPU time and memory stop growing (or --wait seconds). The temporary files are
unlinked ones (tempfile.TemporaryFile), so they are counted through the server's open file
descriptors (/proc/PID/fd), not by listing the folder. Linux only. Numbers go to docs/dashboard.md.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_serve import write_profile  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def temp_bytes(pid: int, folder: str) -> int:
    """Bytes of the files under `folder` that process `pid` holds open (deleted ones included)."""
    total = 0
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        try:
            if os.readlink(fd).startswith(folder):
                total += os.stat(fd).st_size
        except OSError:
            continue
    return total


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def get(port: int, path: str, timeout: float = 60.0) -> tuple[bytes, float]:
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := conn.recv(1 << 16):
            data += chunk
    return data, time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", nargs="?")
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--tasks", type=int, default=50_000)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--wait", type=float, default=240.0, help="seconds to sample at most")
    args = ap.parse_args()
    profile = Path(args.profile) if args.profile else ROOT / "bench" / "out" / f"slow_clients_{args.tasks // 1000}k"
    if not args.profile:
        write_profile(profile, args.tasks, args.ranks)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tv-serve-tmp-") as tmp:
        cache = Path(tmp) / "cache"
        spool = Path(tmp) / "spool"
        spool.mkdir()
        env = {**os.environ, "TMPDIR": str(spool)}
        cmd = [sys.executable, "-m", "traceview", "serve", str(profile), "--port", str(port), "-q"]
        proc = subprocess.Popen(
            [*cmd, "--cache-dir", str(cache)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            for _ in range(1200):
                try:
                    get(port, "/", timeout=5)
                    break
                except OSError:
                    time.sleep(0.25)
            cpu0 = cpu_seconds(proc.pid)
            clients = []
            for _ in range(args.clients):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect(("127.0.0.1", port))
                s.sendall(f"GET /download/perfetto.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
                clients.append(s)
            t0, last, still, peak_tmp = time.monotonic(), None, 0, 0
            while time.monotonic() - t0 < args.wait:
                time.sleep(1.0)
                now = (temp_bytes(proc.pid, str(spool)), round(cpu_seconds(proc.pid), 1))
                peak_tmp = max(peak_tmp, now[0])
                still = still + 1 if now == last else 0
                last = now
                if still >= 5:
                    break
            settled = time.monotonic() - t0
            _, page_s = get(port, "/")
            print(f"profile: {profile}")
            print(f"clients that never read: {args.clients}")
            print(f"temporary files held by the server: peak {peak_tmp / 1e6:.1f} MB")
            print(f"server CPU seconds for the {args.clients} requests: {cpu_seconds(proc.pid) - cpu0:.1f}")
            print(f"server peak RSS: {peak_rss(proc.pid) / 2**20:.0f} MiB")
            print(f"settled after {settled:.0f} s; then GET / answered in {page_s:.2f} s")
            for s in clients:
                s.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
