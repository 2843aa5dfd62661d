"""``dualmem ui``: serve the memory browser on 127.0.0.1 until interrupted."""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
import webbrowser
from functools import partial

from memory.cli.base import Command, UsageError, opened
from memory.output import Output
from memory.store.config import Config
from memory.store.project import project_id


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, metavar="N",
                        help="the port on 127.0.0.1 (default: a free one, printed on start)")
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")


def _listen(port: int) -> socket.socket:
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0-65535, not {port}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: a small answer leaves at once, not after the peer's
    # delayed acknowledgement (~40 ms on loopback).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(("127.0.0.1", port))  # loopback only: never another machine
        # Listening before the URL is printed: a browser that loads it at once waits in the
        # backlog until the server accepts, rather than being refused.
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    return sock


async def ui(args: argparse.Namespace, config: Config) -> Output:
    # The server's libraries are imported here, not with the command group.
    import uvicorn

    from memory.cli.home import status_report
    from memory.curation.operations import Curator
    from memory.ui.app import Browser, build_app

    sock = _listen(args.port)
    token = secrets.token_urlsafe(24)
    async with opened(config, create=False) as (backend, selection):
        curator = Curator(backend, project_id(config.home), config.files_dir)
        browser = Browser(backend, config.home, curator,
                          partial(status_report, backend, selection, config))
        server = uvicorn.Server(uvicorn.Config(build_app(browser, token), log_level="warning",
                                               lifespan="off", access_log=False))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/?token={token}"
        print(f"dualmem ui: {url}\n(Ctrl-C stops it)", flush=True)
        if args.open:
            webbrowser.open(url)
        await server.serve(sockets=[sock])
    print("dualmem ui: stopped", file=sys.stderr)
    return Output({}, "")


COMMANDS = {"ui": Command(_arguments, ui)}
