"""Running the dashboard: pick a free port, print where, serve until Ctrl+C."""

from __future__ import annotations

import socket
import threading
import webbrowser


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def pick_port(host: str, port: int, tries: int = 100) -> int:
    """`port` if it can be bound on `host`, else the next free one above it."""
    for candidate in range(port, min(port + tries, 65536)):
        if port_is_free(host, candidate):
            return candidate
    raise OSError(f"no free port in {port}..{port + tries - 1} on {host} (pass another --port)")


def url_for(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}/"


def serve(app, host: str, port: int, open_browser: bool = False) -> None:
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url_for(host, port),)).start()
    app.run(host=host, port=port, debug=False, use_reloader=False)
