"""Files the replay writes whole (the report page, a segment's manifest, the JVM's notes): under a
temporary name created in the destination's folder with O_EXCL|O_NOFOLLOW (tempfile.mkstemp, mode
0600), then renamed into place. A reader sees the old file or the new one, never a part; and a
symbolic link planted in the folder (at a predictable `.name.partial`, say) is neither followed nor
written through: the rename replaces a link at the destination itself with the new file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_replacing(path: Path, data: str | bytes) -> None:
    """Make `path` a regular file holding `data` (text as UTF-8); OSError when it cannot."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
