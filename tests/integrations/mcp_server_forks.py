"""MCP server scripts forked from one process that has already imported the MCP SDK.

Each start of a server built with the SDK (``mcp_test_server.py``) spends ~0.6-0.8 s of CPU importing it
(``mcp.types`` building its pydantic models), and the proxy's tests start one per proxy session. Here one process
per test worker (``serve``) imports the SDK once; the command a test gives the proxy as its upstream is a small
stdlib-only process (``run SCRIPT``) that hands its stdin, stdout and stderr, environment and working directory
to that process, which forks a child that runs the script as ``python SCRIPT`` would, on those very pipes. Every
session still gets a fresh server process of its own (no state is shared between tests); the upstream's process
mirrors the child: a signal it gets is passed on, and it exits with the child's exit status (or signal).

Without ``MCP_SERVER_FORKS`` in the environment (or when nothing listens there), ``run`` simply execs
``python SCRIPT``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import sys

SOCKET_VARIABLE = "MCP_SERVER_FORKS"
SUPPORTED = hasattr(os, "pidfd_open")  # Linux: the server waits for its children on their pidfds
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PRELOADED = ("mcp.server.mcpserver", "mcp.server.stdio", "mcp.types", "pydantic", "anyio")


def run(script_and_args: list[str]) -> None:
    """The upstream's process: have the forking server run the script on our stdio, then exit as it did."""
    path = os.environ.get(SOCKET_VARIABLE)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if not path:
            raise ConnectionError("no forking server")
        connection.connect(path)
    except OSError:
        connection.close()
        os.execv(sys.executable, [sys.executable, *script_and_args])
    request = {"argv": script_and_args, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(connection, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    reader = connection.makefile("rb")
    child = int(reader.readline())
    for number in FORWARDED_SIGNALS:
        signal.signal(number, lambda received, _frame: os.kill(child, received))
    # The child alone holds the pipes now: the host sees their end when the server ends, as with a plain process.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    code = int(reader.readline() or b"1")
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def serve(path: str) -> None:
    """The forking server: import the SDK once, then fork a child for each upstream that connects."""
    for module in PRELOADED:
        importlib.import_module(module)
    server = ForkingServer(path)
    print("ready", flush=True)  # the caller reads this line, then the server's stdout is /dev/null again
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    server.serve()


class ForkingServer:
    """One thread, one selector: new upstreams on the listening socket, children's exits on their pidfds, and an
    upstream process that went away first (killed) on its connection, whose child then goes too."""

    def __init__(self, path: str) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.children: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, the upstream's connection)

    def serve(self) -> None:
        while True:
            for key, _events in self.selector.select():
                if key.fileobj is self.listener:
                    self.start_child(self.listener.accept()[0])
                elif isinstance(key.fileobj, socket.socket):
                    self.upstream_gone(key.fileobj, key.data)
                else:
                    self.child_exited(key.data)

    def start_child(self, connection: socket.socket) -> None:
        message, fds, _flags, _address = socket.recv_fds(connection, 1 << 20, 3)
        while not message.endswith(b"\n"):
            message += connection.recv(1 << 20)
        child = os.fork()
        if child == 0:
            run_script_in_child(json.loads(message), fds)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(child)
        self.children[pidfd] = (child, connection)
        self.selector.register(pidfd, selectors.EVENT_READ, pidfd)
        self.selector.register(connection, selectors.EVENT_READ, child)
        with contextlib.suppress(OSError):
            connection.sendall(b"%d\n" % child)

    def child_exited(self, pidfd: int) -> None:
        child, connection = self.children.pop(pidfd)
        _, status = os.waitpid(child, 0)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        with contextlib.suppress(KeyError):
            self.selector.unregister(connection)
        with connection, contextlib.suppress(OSError):
            connection.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))

    def upstream_gone(self, connection: socket.socket, child: int) -> None:
        if not connection.recv(1):
            self.selector.unregister(connection)
            os.kill(child, signal.SIGKILL)


def run_script_in_child(request: dict[str, object], fds: list[int]) -> None:
    import runpy
    import traceback

    code = 0
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)  # the server's sockets and pidfds, and the received descriptors' copies
        argv = request["argv"]
        env = request["env"]
        cwd = request["cwd"]
        assert isinstance(argv, list) and isinstance(env, dict) and isinstance(cwd, str)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        run(sys.argv[2:])
