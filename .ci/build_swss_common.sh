#!/usr/bin/env bash
# Build sonic-swss-common (libswsscommon + its SWIG Python 3 binding) from the vendored source
# archive, outside the clone, for the interop tests (tests/*_interop.py) and bench/bench_cpp.py.
#
# Usage: .ci/build_swss_common.sh [ARCHIVE]
#   ARCHIVE   a sonic-swss-common-*.tar.gz; default: the newest
#             ../shared/vendor/sonic-swss-common-*.tar.gz beside the repository root.
#             When there is none, says so in one line and exits 0 (the interop tests then skip,
#             saying why); an ARCHIVE given that does not exist is an error.
#
# The build goes to
#   ${SWSSD_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/swssd/swss-common}/<first 16 hex of sha256>/
# keyed by the archive's sha256, so a second run with the same archive only prints where it is.
# It is made in a temporary directory beside that one and renamed into place only when it
# succeeded (an interrupted build is redone, never half-used). The cache dir then holds
#   tree/      the built source tree (SWSS_COMMON_DIR: common/*.h, common/.libs/libswsscommon.so)
#   python/    the importable `swsscommon` package (swsscommon.py, _swsscommon.so, __init__.py)
#   build.log  configure's and make's output
#   env.sh     exports SWSS_COMMON_DIR, LD_LIBRARY_PATH, PYTHONPATH and PYTHON (the interpreter
#              the binding was built for: it loads into any CPython of the same minor version)
# Only the library and the binding are built (not sonic-db-cli, nor the gtest unit tests).
# The library loads its Lua scripts from /usr/share/swss/; they are copied there when that
# directory is writable and they are missing or differ.
#
# Build dependencies are apt-get installed when some are missing (needs root and apt-get).
# The interpreter is $PYTHON3, else `python3` on PATH (the one `python3 -m venv .venv` uses).
#
# Progress goes to stderr; the last line of stdout is the env file's path (nothing else goes to
# stdout), so that a caller can do: env_file=$(.ci/build_swss_common.sh | tail -n 1).
set -euo pipefail

say() { printf '%s\n' "build_swss_common: $*" >&2; }

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

archive=${1:-}
if [ -z "$archive" ]; then
    # The newest archive by modification time.
    archive=$(ls -1t "$repo_root"/../shared/vendor/sonic-swss-common-*.tar.gz 2>/dev/null | head -n 1 || true)
    if [ -z "$archive" ]; then
        say "no sonic-swss-common archive in $(cd "$repo_root/.." && pwd)/shared/vendor/; not building it (the interop tests will skip)"
        exit 0
    fi
fi
if [ ! -f "$archive" ]; then
    say "no such archive: $archive"
    exit 1
fi
archive=$(cd "$(dirname "$archive")" && pwd)/$(basename "$archive")

sha=$(sha256sum "$archive" | cut -c1-16)
cache_root=${SWSSD_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/swssd/swss-common}
dest=$cache_root/$sha

# The library's Lua scripts, where redisapi.h's loadLuaScript() reads them.
install_lua() {
    local lua_dir=/usr/share/swss f
    for f in "$dest"/tree/common/*.lua; do
        cmp -s "$f" "$lua_dir/$(basename "$f")" && continue
        if mkdir -p "$lua_dir" 2>/dev/null && cp "$f" "$lua_dir/" 2>/dev/null; then
            say "installed $(basename "$f") in $lua_dir"
        else
            say "note: cannot write $lua_dir/$(basename "$f") (the C++ table classes load their Lua scripts from there)"
        fi
    done
}

if [ -f "$dest/.complete" ] && [ -f "$dest/env.sh" ]; then
    say "sonic-swss-common from $(basename "$archive") is already built in $dest"
    install_lua
    echo "$dest/env.sh"
    exit 0
fi

start=$(date +%s)
elapsed() { local s=$(( $(date +%s) - start )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# --- build dependencies -------------------------------------------------------------------------
deps=(build-essential autoconf autoconf-archive automake libtool pkg-config libhiredis-dev
      libnl-3-dev libnl-genl-3-dev libnl-route-3-dev libnl-nf-3-dev libboost-dev
      libboost-serialization-dev libzmq3-dev uuid-dev nlohmann-json3-dev swig python3-dev
      redis-server)
missing=()
for p in "${deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        say "missing build dependencies and no apt-get: ${missing[*]}"
        exit 1
    fi
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
    say "installing build dependencies: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# --- the interpreter the binding is for ---------------------------------------------------------
python=$("${PYTHON3:-python3}" -c 'import os, sys; print(os.path.realpath(sys.executable))')
py_version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
py_include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
# The binding links the interpreter's BLDLIBRARY (-lpython3.X): find the interpreter's own
# libpython first (a pyenv build), not only the system's.
py_libdir=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")')
say "building for $python (Python $py_version)"

# --- build in a temporary directory -------------------------------------------------------------
mkdir -p "$cache_root"
work=$(mktemp -d "$cache_root/.build-$sha.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
log=$work/build.log
fail() {
    say "FAILED: $1 after $(elapsed); the last lines of $cache_root/build-$sha.failed.log:"
    cp "$log" "$cache_root/build-$sha.failed.log"
    tail -n 40 "$log" >&2
    exit 1
}

say "extracting $(basename "$archive") into $work"
mkdir "$work/src"
tar -xzf "$archive" -C "$work/src" || fail "extracting the archive"
top=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -n "$top" ] && [ -f "$top/configure.ac" ] || fail "the archive has no top directory with configure.ac"
mv "$top" "$work/tree"
rmdir "$work/src"
tree=$work/tree

cd "$tree"
say "autogen.sh ($(elapsed))"
./autogen.sh >>"$log" 2>&1 || fail "autogen.sh"
say "configure ($(elapsed))"
# PYTHON3 picks the interpreter for the binding (its BLDLIBRARY is linked); its headers are added
# after the /usr/include/python$VERSION that pyext/py3/Makefile.am names.
./configure --disable-yangmodules --disable-python2 --disable-static \
    PYTHON3="$python" CPPFLAGS="-I$py_include ${CPPFLAGS:-}" \
    LDFLAGS="${py_libdir:+-L$py_libdir }${LDFLAGS:-}" >>"$log" 2>&1 || fail "configure"
# Only the library and the Python binding: `make` (all) would also build sonic-db-cli and the
# gtest unit tests (tests/tests is in bin_PROGRAMS). cfg_schema.h is a BUILT_SOURCE, which a
# named target does not make by itself.
say "make common/cfg_schema.h ($(elapsed))"
make common/cfg_schema.h >>"$log" 2>&1 || fail "make common/cfg_schema.h"
say "make -j2 libswsscommon and the Python binding (this takes a while; log: $log) ($(elapsed))"
make -j2 common/libswsscommon.la pyext/py3/_swsscommon.la >>"$log" 2>&1 || fail "make"

# --- an importable swsscommon package ----------------------------------------------------------
pkg=$work/python/swsscommon
mkdir -p "$pkg"
cp pyext/py3/__init__.py pyext/py3/swsscommon.py "$pkg/"
so=$(readlink -f pyext/py3/.libs/_swsscommon.so)
[ -f "$so" ] || fail "no pyext/py3/.libs/_swsscommon.so"
cp "$so" "$pkg/_swsscommon.so"

cat >"$work/env.sh" <<EOF
# sonic-swss-common built by .ci/build_swss_common.sh from $(basename "$archive") (sha256 $sha...)
export SWSS_COMMON_DIR="$dest/tree"
export LD_LIBRARY_PATH="$dest/tree/common/.libs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PYTHONPATH="$dest/python\${PYTHONPATH:+:\$PYTHONPATH}"
export PYTHON="$python"
EOF

# Check the binding from where it will live, then move the build into place.
probe_env() {
    env SWSS_COMMON_DIR="$1/tree" LD_LIBRARY_PATH="$1/tree/common/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        PYTHONPATH="$1/python${PYTHONPATH:+:$PYTHONPATH}" "$python" -c \
        'from swsscommon import swsscommon; print(swsscommon.__file__)'
}
probe_env "$work" >>"$log" 2>&1 || fail "importing the built binding (from swsscommon import swsscommon)"

cd /
rm -rf "$dest"
mv "$work" "$dest"
trap - EXIT
touch "$dest/.complete"
say "built in $(elapsed): $dest"
install_lua

echo "$dest/env.sh"
