"""Running the dashboard: what the server answers, pick a free port, print where, serve until Ctrl+C.

What the server answers (`harden`): its pages, Dash's endpoints and Dash's registered bundles, and
only to requests whose `Host:` names the address it was bound to (loopback names by default), so a
web page elsewhere cannot reach it through DNS rebinding; its data (DATA_PATHS: Dash's JSON
endpoints, the timeline's JSON routes, the Perfetto download) only to its own pages, so a page of
another site open in the same browser can neither read it nor make the server compute it
(`foreign_request`); every answer carries a Content-Security-Policy that the pages run under
(scripts only from the server itself, no frames, no forms, nothing fetched elsewhere),
`X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`, and
no `Server:` banner; request bodies are capped at MAX_BODY.
It is served by waitress, a production WSGI server, not Flask's development server, with its
connection limits set on purpose (`waitress_settings`: many idle or slow connections neither lock
the dashboard nor fill memory or the temporary folder).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import webbrowser
from collections import Counter
from urllib.parse import urlsplit

from traceview.dashboards.query import COMPARE_PATH, ROOFLINE_PATH, TIMELINE_PATH, ascii_int
from traceview.safe_text import one_line

# What the dashboard's HTTP server answers: its pages, Dash's own endpoints, and the JavaScript
# bundles Dash registered (it checks the name against its list), the canvas timeline's scripts
# (the named files of dashboards/assets, shipped in the package) and its JSON routes
# (`timeline.api`). Nothing else: no other /assets or /static file, no path with a `..` segment,
# no file of the profile or beside it (the parsed frames are in memory; the server opens no file
# after the load).
PAGES = ("/", TIMELINE_PATH, ROOFLINE_PATH, COMPARE_PATH)
ENDPOINTS = ("/_dash-layout", "/_dash-dependencies", "/_dash-update-component", "/_favicon.ico")
BUNDLES = "/_dash-component-suites/"
ASSETS = tuple(f"/assets/tv_timeline_{part}.js" for part in ("1_data", "2_draw", "3_ui", "4_overlays"))
TIMELINE_API = tuple(f"/api/timeline/{route}" for route in ("meta", "window", "task", "search", "range", "overlays"))
DOWNLOADS = ("/download/perfetto.json",)  # the profile for Perfetto (app.register_download)
#: What answers the profile's data rather than a page or a script: only the dashboard's own pages
#: (and a typed address, or a tool such as curl) get it (`foreign_request`).
DATA_PATHS = frozenset(("/_dash-layout", "/_dash-dependencies", "/_dash-update-component", *TIMELINE_API, *DOWNLOADS))
#: The `Sec-Fetch-Site` values a data path answers: a fetch by the server's own page, and an
#: address the user typed or bookmarked. `same-site` (another port of this host) and
#: `cross-site` (any other site) are refused, as is a value a browser may add later.
OWN_SITES = frozenset({"same-origin", "none"})


#: Request bodies above this are refused (413): Dash's callback requests are a few KB.
MAX_BODY = 2 * 1024 * 1024
#: The request line and headers above this are refused (431): waitress' own default. The pages
#: send a few KB at most (a timeline request with a 2,000-character name filter), but a browser
#: sends every cookie of `localhost`, whatever port set it, so other local apps' cookies count.
MAX_HEADERS = 256 * 1024
#: An answer waiting for a slow reader stays in memory up to this, then goes to a temporary file.
OUT_IN_MEMORY = 1 << 20
#: A request body stays in memory up to this (waitress' default), then goes to a temporary file.
IN_IN_MEMORY = 512 << 10
#: Open connections at most (waitress' connection_limit; fewer when the open-file limit is lower,
#: `connection_limit`): idle and slow ones (a browser's keep-alive sockets, a client that sends its
#: request a byte at a time) stay far from locking the dashboard. Each may hold a socket and up
#: to two buffer files.
CONNECTIONS = 1000
FILES_PER_CONNECTION = 3
#: Open files kept for everything but the connections (the listening socket, the wake-up pipe, logs).
OTHER_FILES = 64
#: Seconds a connection may stay idle (nothing received, nothing sent, no request being
#: computed) before waitress closes it: a browser opens a new one in a millisecond on this machine.
IDLE_TIMEOUT = 10
#: Host names a loopback server answers to (the name part of `Host:`, lower case).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})
CONFIG_HOSTS = "TRACEVIEW_ALLOWED_HOSTS"
#: Plotly's WebGL traces (the timeline) compile their shaders with `new Function`: 'unsafe-eval'.
#: Plotly and Dash set inline styles: 'unsafe-inline' for styles only. Dash's inline scripts are
#: allowed by their hashes (`app.csp_hashes()`).
CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-eval' {hashes}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'; object-src 'none'"
)
log = logging.getLogger("traceview.serve")


def allowed_hosts(host: str) -> frozenset[str] | None:
    """The `Host:` names a server bound to `host` answers (None: any, for a wildcard address)."""
    name = host.strip().strip("[]").lower()
    if name in WILDCARD_HOSTS:
        return None
    if is_loopback(name):
        return LOOPBACK_NAMES | {name}
    return frozenset({name})


def host_name(header: str) -> str:
    """The name part of a `Host:` header value (`[::1]:8050` -> `::1`, `localhost:80` -> `localhost`)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_port(header: str) -> int | None:
    """The port of a `Host:` header value (`[::1]:8050` -> 8050, `localhost` -> None)."""
    header = header.strip()
    if header.startswith("["):
        rest = header[header.find("]") + 1 :] if "]" in header else ""
    else:
        rest = header[header.find(":") :] if header.count(":") == 1 else ""
    return ascii_int(rest[1:]) if rest.startswith(":") else None


def same_origin(origin: str, host: str) -> bool:
    """Whether the `Origin:` header value names this server: http(s), the `Host:` header's name
    and port (a missing port is the scheme's default). `null` (a sandboxed frame, a file: page)
    and anything that is not a bare origin is not."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query or parts.username:
        return False
    default = 443 if parts.scheme == "https" else 80
    return parts.hostname == host_name(host) and (port or default) == (host_port(host) or default)


def foreign_request(headers, host: str) -> str | None:
    """Why a request for a data path comes from another site, or None: its `Sec-Fetch-Site` is not
    one of OWN_SITES, or its `Origin` is not this server's (`same_origin`). A request with neither
    header (curl, scripts, old browsers) is not foreign: the `Host:` check already stops a page
    that reaches the server through DNS rebinding."""
    site = headers.get("Sec-Fetch-Site")
    if site is not None and site.strip().lower() not in OWN_SITES:
        return f"Sec-Fetch-Site: {site[:40]}"
    origin = headers.get("Origin")
    if origin is not None and not same_origin(origin, host):
        return f"Origin: {origin[:100]}"
    return None


class Refusals:
    """Log lines for refused requests: the first of each kind, then one at 10, 100, 1000, ... of
    that kind (with the count), so a page that keeps asking cannot flood the terminal. Header
    values are shown with control characters escaped (`safe_text.one_line`)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def refused(self, kind: str, detail: str) -> None:
        with self._lock:
            self._counts[kind] += 1
            n = self._counts[kind]
        if str(n).rstrip("0") == "1":
            log.warning("refused %s (%s)%s", kind, one_line(detail), f"; {n:,} such requests so far" if n > 1 else "")


def allowed_path(path: str) -> bool:
    """Whether the server answers `path` (percent-decoded, as Flask sees it)."""
    if "\\" in path or "\x00" in path or any(part in ("..", ".") for part in path.split("/")):
        return False
    bundle = path.startswith(BUNDLES) and path.count("/") >= 3 and not path.endswith("/")  # /<suites>/<package>/<file>
    return (
        path.rstrip("/") in ("", *PAGES)
        or path in ENDPOINTS
        or path in ASSETS
        or path in TIMELINE_API
        or path in DOWNLOADS
        or bundle
    )


def harden(app) -> None:
    """Install what the server answers (module docstring): 403 to a foreign `Host:`, 404 to every
    path outside `allowed_path` and to unknown bundle names (Dash raises an error for those, which
    would be a 500 with a logged traceback), 403 with a one-line body to a request for a data path
    from another site (`foreign_request`), 413 to bodies over MAX_BODY, the security headers on
    every answer. Call after every callback is registered (the CSP holds their hashes). The
    allowed hosts are the loopback names until `serve` sets those of the bound address."""
    from dash.exceptions import DependencyException
    from flask import Response, abort, request

    app.server.config[CONFIG_HOSTS] = LOOPBACK_NAMES
    app.server.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    csp = CSP.format(hashes=" ".join(app.csp_hashes()))  # each already quoted: 'sha256-...'
    refusals = Refusals()

    def guard():
        hosts = app.server.config[CONFIG_HOSTS]
        if hosts is not None and host_name(request.host) not in hosts:
            refusals.refused("a request for another host", f"Host: {request.host[:100]}: not this server's address")
            abort(403)
        if not allowed_path(request.path):
            abort(404)
        if request.path in DATA_PATHS and (why := foreign_request(request.headers, request.host)):
            refusals.refused("a request from another site", f"{request.path}, {why}")
            text = "refused: the dashboard's data is only for its own pages (open the dashboard's address)\n"
            return Response(text, status=403, mimetype="text/plain")
        return None

    def headers(response):
        response.headers["Content-Security-Policy"] = csp
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    app.server.before_request(guard)
    app.server.after_request(headers)
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


def connection_limit(wanted: int = CONNECTIONS) -> int:
    """How many connections the server may hold open: `wanted`, or fewer when the process may not
    open FILES_PER_CONNECTION files for each. The soft open-file limit is raised towards the hard
    one first (it is often 1024 while the hard limit is far higher)."""
    try:
        import resource
    except ImportError:  # not on POSIX: waitress' own default
        return 100
    need = wanted * FILES_PER_CONNECTION + OTHER_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, (soft - OTHER_FILES) // FILES_PER_CONNECTION))


def waitress_settings() -> dict:
    """waitress' limits, each set on purpose (docs/dashboard.md, "Connections and slow clients"):

    - threads 8: requests computed at once; the analyses are CPU-bound (polars runs its own
      threads), so more buy nothing, and 8 keep a slow one (the timeline's first build) from
      queueing the quick ones.
    - connection_limit (`connection_limit`, up to CONNECTIONS) with asyncore_use_poll: poll(),
      unlike select(), watches sockets numbered beyond 1023.
    - channel_timeout IDLE_TIMEOUT s, checked every second (cleanup_interval): a connection with
      nothing received or sent for that long and no request in progress is closed, whether it never
      sent a request (a silent slowloris), stopped reading an answer, or is a browser's idle keep-alive.
    - outbuf_overflow OUT_IN_MEMORY (1 MiB): an answer waiting for a slow reader stays in memory
      up to this, then goes to a temporary file, so a thousand slow readers hold at most a GB of
      memory (most answers are far smaller; a whole-trace timeline window at 8,192 px with host
      lanes is 2.6 MB for 50,000 kernels; the Perfetto download is not buffered at all: it is
      sent from the one copy in memory, app.register_download);
      outbuf_high_watermark 16 MiB: a streamed answer pauses while that much waits to be sent.
    - inbuf_overflow IN_IN_MEMORY (512 KiB): a request body stays in memory up to this (a Dash
      callback's is a few KB), then goes to a temporary file; max_request_body_size MAX_BODY
      (larger ones get 413 unread); max_request_header_size MAX_HEADERS.
    """
    return {
        "threads": 8,
        "connection_limit": connection_limit(),
        "asyncore_use_poll": True,
        "channel_timeout": IDLE_TIMEOUT,
        "cleanup_interval": 1,
        "outbuf_overflow": OUT_IN_MEMORY,
        "outbuf_high_watermark": 16 << 20,
        "inbuf_overflow": IN_IN_MEMORY,
        "max_request_body_size": MAX_BODY,
        "max_request_header_size": MAX_HEADERS,
    }


def serve(app, host: str, port: int, open_browser: bool = False) -> None:
    """Serve `app` (hardened by `harden`) with waitress on `host`:`port` until Ctrl+C, with
    `waitress_settings`."""
    import waitress

    app.server.config[CONFIG_HOSTS] = allowed_hosts(host)
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("traceview: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url_for(host, port),)).start()
    waitress.serve(
        app.server,
        host=host,
        port=port,
        ident="",
        clear_untrusted_proxy_headers=True,
        _quiet=True,
        **waitress_settings(),
    )
