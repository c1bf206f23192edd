"""swssd.redis.wire.pack_command: the same RESP bytes as hiredis for any command, by either packer."""

from __future__ import annotations

import subprocess
import sys

import hiredis
from hypothesis import given, settings
from hypothesis import strategies as st

from swssd.redis.wire import JOIN_FROM_ARGS, _pack_joined, pack_command


def hiredis_packed(args: tuple[object, ...]) -> bytes:
    """What Redis must receive: hiredis's packing, str encoded as UTF-8 with surrogate escapes."""
    return hiredis.pack_command(  # type: ignore[no-any-return]
        tuple(a.encode("utf-8", "surrogateescape") if isinstance(a, str) else a for a in args)  # type: ignore[arg-type]
    )


def batched_set(keys: int) -> tuple[str, ...]:
    """A 4-field batched set's EVALSHA, as ProducerStateTable.set_many sends it."""
    args = ["G"]
    for i in range(keys):
        args += ["4", "alias", f"etp{i}", "speed", "100000", "mtu", "9100", "admin_status", "up"]
    key_args = ["PORT_TABLE_CHANNEL@0", "PORT_TABLE_KEY_SET", "_PORT_TABLE:", *(f"Ethernet{i}" for i in range(keys))]
    return ("EVALSHA", "a" * 40, str(len(key_args)), *key_args, *args)


def test_a_batched_set_is_packed_by_the_join_as_hiredis_packs_it() -> None:
    command = batched_set(128)
    joined = _pack_joined(command)
    assert joined is not None  # the fast path is taken for what it is for
    assert joined == pack_command(command) == hiredis_packed(command)


def test_what_the_join_cannot_pack_goes_to_hiredis() -> None:
    base = batched_set(16)
    assert len(base) >= JOIN_FROM_ARGS
    for odd in (7, b"bytes", "x" * 1024, "ünïcode", "caf\udce9", "", "x" * 1023):
        command = (*base, odd)
        assert pack_command(command) == hiredis_packed(command), odd
    for not_joined in (7, b"bytes", "x" * 1024, "ünïcode", "caf\udce9"):
        assert _pack_joined((*base, not_joined)) is None, not_joined


argument = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=1100),
    st.binary(max_size=20),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.just("caf\udce9"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(argument, min_size=1, max_size=2 * JOIN_FROM_ARGS))
def test_any_command_is_packed_as_hiredis_packs_it(args: list[object]) -> None:
    command = tuple(args)
    assert pack_command(command) == hiredis_packed(command)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(max_codepoint=127), max_size=30),
                min_size=JOIN_FROM_ARGS, max_size=3 * JOIN_FROM_ARGS))
def test_long_ascii_commands_take_the_join(args: list[str]) -> None:
    command = tuple(args)
    assert _pack_joined(command) == hiredis_packed(command)


#: packs a number whose text takes a while (about 0.4 s), then another, while SIGALRM's handler
#: raises: the handler's exception must come out (a short command: hiredis packs it, not the join)
SIGNALLED_PACK = """
import signal, sys
from swssd.redis.wire import pack_command

class Interrupted(Exception):
    pass

def handler(signum, frame):
    raise Interrupted

sys.set_int_max_str_digits(0)
signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.05)
try:
    pack_command(("SET", "big", 10**100_000, 7))
    print("packed")
except Interrupted:
    print("interrupted")
"""


def test_a_signal_handler_raising_while_a_number_is_packed_raises_not_crashes() -> None:
    """hiredis-py packs a number by PyObject_Repr and does not check for the NULL a raising signal
    handler makes it return: a segmentation fault, before swssd wrote numbers itself."""
    done = subprocess.run([sys.executable, "-c", SIGNALLED_PACK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.split() == ["interrupted"]
