"""Running the dashboard: what the server answers, pick a free port, print where, serve until Ctrl+C."""

from __future__ import annotations

import socket
import threading
import webbrowser

# What the dashboard's HTTP server answers: its pages, Dash's own endpoints, and the JavaScript
# bundles Dash registered (it checks the name against its list). Nothing else: no /assets or
# /static folder, no path with a `..` segment, no file of the profile or beside it (the parsed
# frames are in memory; the server opens no file after the load).
PAGES = ("/", "/timeline")
ENDPOINTS = ("/_dash-layout", "/_dash-dependencies", "/_dash-update-component", "/_favicon.ico")
BUNDLES = "/_dash-component-suites/"


def allowed_path(path: str) -> bool:
    """Whether the server answers `path` (percent-decoded, as Flask sees it)."""
    if "\\" in path or "\x00" in path or any(part in ("..", ".") for part in path.split("/")):
        return False
    bundle = path.startswith(BUNDLES) and path.count("/") >= 3 and not path.endswith("/")  # /<suites>/<package>/<file>
    return path.rstrip("/") in ("", *PAGES) or path in ENDPOINTS or bundle


def harden(app) -> None:
    """Answer 404 to every path outside `allowed_path`, and to unknown bundle names (Dash raises
    an error for those, which would be a 500 with a logged traceback)."""
    from dash.exceptions import DependencyException
    from flask import abort, request

    def guard():
        if not allowed_path(request.path):
            abort(404)

    app.server.before_request(guard)
    app.server.register_error_handler(DependencyException, lambda exc: ("Not Found", 404))


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


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to a public address


def url_for(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}/"


def serve(app, host: str, port: int, open_browser: bool = False) -> None:
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url_for(host, port),)).start()
    app.run(host=host, port=port, debug=False, use_reloader=False)
