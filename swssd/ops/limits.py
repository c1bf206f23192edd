"""The process's descriptor limit: raised to what the system allows, and shared out so that
peers of a network channel cannot take the descriptors Redis, the metrics endpoint and the log
need (a daemon out of descriptors cannot even reconnect to Redis).

A soft RLIMIT_NOFILE of 1,024 (systemd's default without LimitNOFILE=) is a compatibility value
for programs that use select(2); this process uses none on sockets it accepts, so it takes
the hard limit (capped) as systemd's documentation suggests.
"""

from __future__ import annotations

import os
import resource

#: descriptors kept out of any channel's bound: Redis connections (a few per database and
#: table), the metrics endpoint and its clients, log and capture files, libzmq's own
RESERVED_DESCRIPTORS = 256
#: the soft limit is raised to the hard one, but not past this
SOFT_LIMIT_CAP = 65536


def raise_descriptor_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (at most SOFT_LIMIT_CAP); the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = SOFT_LIMIT_CAP if hard == resource.RLIM_INFINITY else min(hard, SOFT_LIMIT_CAP)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft


def descriptors_open() -> int:
    """Descriptors this process has open now."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def spare_descriptors(limit: int) -> int:
    """Descriptors a channel may take under `limit`, after those open and the reserve."""
    return max(0, limit - descriptors_open() - RESERVED_DESCRIPTORS)


#: mallopt() parameters: allocations this large or larger get pages of their own; free memory at
#: the top of a heap past this much is given back
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 16 * 1024 * 1024


def fix_malloc_thresholds() -> bool:
    """Fix glibc's mmap and trim thresholds instead of letting them follow the largest block
    freed. With the dynamic thresholds, a stream of 1 MB ZMQ messages (allocated in libzmq's
    thread, their strings in this one) left heaps whose free memory was never given back: RSS
    440 MB and rising in a flood that holds under 150 MB. Fixed at 128 KiB (every MB block its
    own pages) RSS stayed bounded but each 1 MB message cost 0.8 ms of page faults instead of
    0.13; above the message limit (32 MiB, glibc's largest) with 16 MiB kept at a heap's top, a
    message reuses memory already mapped (0.08 ms) and RSS stays bounded (measured: 145-156 MB
    in the same flood). False when the C library is not glibc."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
            libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        )
    except (OSError, AttributeError):
        return False
