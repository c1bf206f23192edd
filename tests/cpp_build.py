"""Building the tests' C++ drivers (tests/cpp/*.cpp) against a built sonic-swss-common tree.

The tree is $SWSS_COMMON_DIR, else the one named by the env file $SWSSD_SWSSCOMMON_ENV (a shell
file exporting SWSS_COMMON_DIR), else ../cpp/env.sh beside the repository. Tests that need the
C++ library skip, saying why, when there is no such tree, no built library or no compiler.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CPP_DIR = Path(__file__).resolve().parent / "cpp"


def swss_common_dir() -> Path | None:
    """The sonic-swss-common tree to build against, if one is configured."""
    given = os.environ.get("SWSS_COMMON_DIR")
    if given:
        return Path(given)
    env_file = os.environ.get("SWSSD_SWSSCOMMON_ENV") or str(Path(__file__).resolve().parents[2] / "cpp" / "env.sh")
    if not Path(env_file).exists():
        return None
    out = subprocess.run(
        ["bash", "-c", '. "$1" >/dev/null 2>&1; printf %s "$SWSS_COMMON_DIR"', "bash", env_file],
        capture_output=True, text=True,
    ).stdout
    return Path(out) if out else None


def build_driver(source: str, out_dir: Path, header: str = "dbconnector.h") -> Path:
    """Compile tests/cpp/<source> into out_dir, or skip the test with the reason."""
    root = swss_common_dir()
    cxx = os.environ.get("CXX", "g++")
    if root is None:
        pytest.skip(
            "compares with the C++ library and needs a built sonic-swss-common: none found. Set "
            "$SWSS_COMMON_DIR to its source tree (built: common/.libs/libswsscommon.so), or "
            "$SWSSD_SWSSCOMMON_ENV to a shell file that exports SWSS_COMMON_DIR (the build's env.sh; "
            f"looked for {Path(__file__).resolve().parents[2] / 'cpp' / 'env.sh'} too)"
        )
    libs = root / "common" / ".libs"
    if not (root / "common" / header).exists() or not (libs / "libswsscommon.so").exists():
        pytest.skip(f"compares with the C++ library, but the sonic-swss-common tree {root} (from "
                    "$SWSS_COMMON_DIR or the env file) is not built: no common/.libs/libswsscommon.so "
                    "or headers; build it first")
    if shutil.which(cxx) is None:
        pytest.skip(f"builds a C++ test driver, but the C++ compiler {cxx!r} ($CXX, else g++) is not on PATH")
    binary = out_dir / Path(source).stem
    build = subprocess.run(
        [
            cxx, "-std=c++14", "-O1", f"-I{root / 'common'}", f"-I{root}", "-I/usr/include/libnl3",
            "-o", str(binary), str(CPP_DIR / source),
            f"-L{libs}", f"-Wl,-rpath,{libs}", "-lswsscommon", "-lhiredis", "-lpthread",
        ],
        capture_output=True, text=True, timeout=300,
    )
    if build.returncode != 0:
        pytest.skip(f"{source} does not build against {root}: {build.stderr.strip()[-500:]}")
    return binary
