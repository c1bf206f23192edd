"""A standalone Spark master looked at before the session starts, and the driver's address after.

Why: Spark's standalone client gives up on a master it cannot reach only after three 20 s
registration attempts, then fails with a Python and Java traceback. A TCP connect to the
master's port answers the common case (a wrong host or port, a master not started) at once.
And a driver bound to a loopback address cannot be reached by executors on other machines:
the job then waits for resources that never come, so that is said before it starts.
"""

from __future__ import annotations

import ipaddress
import socket

#: The scheme of a standalone master URL: spark://HOST:PORT[,HOST:PORT...]
STANDALONE = "spark://"
DEFAULT_PORT = 7077


def standalone_addresses(master: str | None) -> list[tuple[str, int]]:
    """The (host, port) pairs of a standalone master URL (several for a master with standbys);
    [] for any other master (local, yarn, k8s) or a URL Spark would refuse itself."""
    if not master or not master.startswith(STANDALONE):
        return []
    out = []
    for part in master[len(STANDALONE):].split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep:
            host, port = port, str(DEFAULT_PORT)
        host = host.strip("[]")  # [::1]:7077
        if not host or not port.isdigit():
            return []
        out.append((host, int(port)))
    return out


def unreachable(master: str | None, timeout: float) -> str | None:
    """Why no address of a standalone `master` accepts a TCP connection within `timeout` seconds
    (one line naming the master), or None when one does or the master is not standalone."""
    addresses = standalone_addresses(master)
    if not addresses:
        return None
    causes = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return None
        except TimeoutError:
            causes.append(f"{host}:{port}: no answer within {timeout:g} s")
        except OSError as exc:
            causes.append(f"{host}:{port}: {exc.strerror or exc}")
    return f"the Spark master {master} cannot be reached ({'; '.join(causes)})"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
        except OSError:
            return False


def driver_warning(master: str | None, driver_host: str | None) -> str | None:
    """A warning when the driver listens on a loopback address while the standalone master (and so
    its executors) is elsewhere: they cannot connect back to it."""
    addresses = standalone_addresses(master)
    if not addresses or not driver_host or not _is_loopback(driver_host):
        return None
    if all(_is_loopback(host) for host, _ in addresses):
        return None
    return (f"warning: the driver listens on {driver_host}, which executors of the master {master} "
            "cannot reach; set SPARK_LOCAL_IP (or --conf spark.driver.host=...) to an address they can")
