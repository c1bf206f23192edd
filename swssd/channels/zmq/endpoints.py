"""Checks on a ZmqServer's endpoint before and after binding, for what libzmq does silently.

libzmq binds `ipc://path` by unlinking whatever is at the path first: a second server takes the
path over from a live one (which then receives nothing), and a regular file there is deleted.
So before binding, a path that exists must be a socket nobody listens on (a stale one, left by a
server that died), else the bind is refused (EADDRINUSE, ENOTSOCK) and nothing is deleted.
After binding, an address reachable beyond this host is worth a warning, as the metrics
endpoint gives: the channel has no authentication.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import stat

import structlog

log = structlog.get_logger(__name__)


def check_ipc_path(endpoint: str) -> None:
    """Raise OSError when binding `endpoint` (ipc://) would take a path from a live server or
    delete a file that is not a socket; nothing for other transports or a free path."""
    if not endpoint.startswith("ipc://"):
        return
    path = endpoint[len("ipc://"):]
    if not path or path.startswith("@") or path == "*":  # abstract namespace, or a path libzmq picks
        return
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise OSError(errno.ENOTSOCK, f"{path} exists and is not a socket (left as it is)")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        return  # stale: no one listens; libzmq replaces it
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.ETIMEDOUT) or isinstance(exc, TimeoutError):
            raise OSError(errno.EADDRINUSE, f"{path} is held by a live server (its backlog is full)") from None
        return  # cannot tell (e.g. permission): let bind() decide
    finally:
        probe.close()
    raise OSError(errno.EADDRINUSE, f"{path} is held by a live server")


def warn_if_exposed(bound: str) -> None:
    """One warning line when a tcp endpoint as bound (LAST_ENDPOINT) is reachable beyond this host."""
    if not bound.startswith("tcp://"):
        return
    host = bound[len("tcp://"):].rsplit(":", 1)[0].strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return
    mapped = getattr(address, "ipv4_mapped", None)
    if (mapped or address).is_loopback:
        return
    wildcard = (mapped or address).is_unspecified
    log.warning(
        "zmq endpoint reachable beyond this host: anyone who can connect can send changes (the "
        "channel has no authentication); bind 127.0.0.1 or an ipc:// path, or firewall it",
        endpoint=bound, wildcard=wildcard,
    )

