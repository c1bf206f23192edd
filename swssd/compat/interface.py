"""isInterfaceNameValid: the C++ rule for a Linux interface name (non-empty, shorter than IFNAMSIZ)."""

from __future__ import annotations

#: the kernel's IFNAMSIZ (the name and its NUL)
IFNAMSIZ = 16
IFACE_NAME_MAX_LEN = IFNAMSIZ - 1


def isInterfaceNameValid(ifaceName: str) -> bool:
    """Whether `ifaceName` fits a Linux interface name (length counted in bytes, as in C++)."""
    return 0 < len(ifaceName.encode("utf-8", "surrogateescape")) < IFNAMSIZ
