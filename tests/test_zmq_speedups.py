"""The C one-change functions (swssd/channels/zmq/_speedups.c) against their Python twins.

read_single() must return exactly what one_change.read_single() returns (None included) for any
bytes, and send_one() must write exactly the Python encoder's bytes (or raise its error), hand
them to libzmq when given a socket, and give them back when libzmq does not take them. The
package must also work without the C module (SWSSD_NO_SPEEDUPS=1, what an install without a C
compiler runs): a subprocess sends and reads through a real socket pair so.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swssd import KeyOpFieldsValues
from swssd.channels.zmq import ZmqClient, ZmqConsumerStateTable, ZmqProducerStateTable, ZmqServer, speedups
from swssd.channels.zmq.encoder import OneChangeEncoder
from swssd.channels.zmq.one_change import read_single as python_read_single
from swssd.channels.zmq.serializer import MAX_MESSAGE_SIZE, MessageTooLargeError, header, serialize
from swssd.fields import DEL_COMMAND, SET_COMMAND
from swssd.redis.connector import DBConnector
from swssd.redis.embedded_redis import EmbeddedRedis

ROOT = Path(__file__).resolve().parent.parent
KFV = KeyOpFieldsValues
HEAD = header("APPL_DB", "ROUTE_TABLE")

compiled = pytest.mark.skipif(not speedups.COMPILED, reason="swssd/channels/zmq/_speedups.c was not built here")


def c_functions() -> tuple[speedups.ReadSingle, speedups.Send]:
    assert speedups._c is not None
    read, send, _ = speedups._c
    return read, lambda socket, key, fvs: send(HEAD, OneChangeEncoder(HEAD).encode, socket, key, fvs)


def test_the_extension_is_built_where_a_compiler_is() -> None:
    """An install on a machine with a C compiler and Python's headers builds and uses it; the
    tests below would otherwise only check the Python code twice."""
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not (shutil.which("cc") or shutil.which("gcc")) or not headers.exists() or os.environ.get("SWSSD_NO_SPEEDUPS"):
        pytest.skip("no C compiler or Python headers here: the package runs its Python code")
    assert speedups.COMPILED
    assert speedups._c is not None and speedups._c[2], "the C sender found no zmq_send in pyzmq's libzmq"
    assert speedups.read_single is speedups._c[0]


# -- read_single ------------------------------------------------------------------------------

texts = st.text(max_size=12) | st.sampled_from(["", ":", "a\x00b", "é", "中文", "x\udcff", "0", "-1"])
ascii_texts = st.text(st.characters(max_codepoint=127), max_size=140)
fvs_st = st.lists(st.tuples(texts | ascii_texts, texts | ascii_texts), max_size=9)


def assert_same_read(data: bytes, head: bytes = HEAD) -> KeyOpFieldsValues | None:
    read, _ = c_functions()
    want = python_read_single(data, head)
    got = read(data, head)
    assert got == want, data
    if got is not None:
        assert type(got) is KeyOpFieldsValues
        assert got.op is (SET_COMMAND if got.fvs else DEL_COMMAND)
        assert type(got.fvs) is list and all(type(p) is tuple for p in got.fvs)
    return got


@compiled
@given(key=texts | ascii_texts, fvs=fvs_st,
       edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=3),
       cut=st.integers(min_value=0, max_value=20), extra=st.binary(max_size=9))
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_read_single_is_the_python_reader(
    key: str, fvs: list[tuple[str, str]], edits: list[tuple[int, int]], cut: int, extra: bytes
) -> None:
    """Valid one-change messages, then the same with bytes changed (often a length), cut short
    and with bytes after: the C reader returns exactly what the Python one does."""
    data = bytearray(serialize("APPL_DB", "ROUTE_TABLE", [KFV(key, "SET" if fvs else "DEL", fvs)]))
    got = assert_same_read(bytes(data))
    if data.isascii():
        assert got == KFV(key, "SET" if fvs else "DEL", fvs)
    for pos, byte in edits:
        data[pos % len(data)] = byte
    assert_same_read(bytes(data[: max(0, len(data) - cut)] + extra))


@compiled
@given(st.binary(max_size=300))
@settings(max_examples=1500, deadline=None)
def test_read_single_of_any_bytes_is_the_python_reader(data: bytes) -> None:
    assert_same_read(data)
    assert_same_read(bytes(8) + HEAD + data)  # past the header, anything


@compiled
def test_read_single_at_the_bounds() -> None:
    """Lengths at and past the end, huge lengths, field counts as the Python reader takes them
    (decimal text, no sign, no leading zero, under 1,024), messages at 64 KiB, another table."""
    for count in ["0", "1", "00", "01", "+1", "-1", " 1", "1023", "1024", "9999", "", "12345", "a"]:
        body = f"\x03\0\0\0\0\0\0\0key{chr(len(count))}\0\0\0\0\0\0\0{count}".encode()
        fields = int(count) if count.isdigit() and int(count) < 1024 else 0
        for pairs in {fields + 2, 2, 3}:
            data = pairs.to_bytes(8, "little") + HEAD + body
            data += b"".join(b"\x01" + bytes(7) + b"f" + b"\x01" + bytes(7) + b"v" for _ in range(fields))
            assert_same_read(data)
    valid = serialize("APPL_DB", "ROUTE_TABLE", [KFV("k", "SET", [("f", "v")])])
    for at in range(len(valid)):
        for byte in (0, 1, 0x7F, 0x80, 0xFF):
            assert_same_read(valid[:at] + bytes([byte]) + valid[at + 1:])
    for length in (2**63, 2**64 - 1, 2**32, 65536):
        assert_same_read(valid[: len(HEAD) + 8] + length.to_bytes(8, "little") + valid[len(HEAD) + 16:])
    for size in (65536 - len(valid) - 1, 65536 - len(valid), 65536):
        big = serialize("APPL_DB", "ROUTE_TABLE", [KFV("k", "SET", [("f", "v" * size)])])
        assert_same_read(big)
    assert_same_read(valid, header("APPL_DB", "OTHER"))
    assert_same_read(b"")


def test_read_single_refuses_other_types() -> None:
    if not speedups.COMPILED:
        pytest.skip("no C module")
    read, _ = c_functions()
    with pytest.raises(TypeError):
        read(bytearray(b"x" * 40), HEAD)  # type: ignore[arg-type]


# -- send_one ---------------------------------------------------------------------------------

values_st = st.one_of(texts, st.just("x\udcff"), st.text(min_size=120, max_size=300), ascii_texts)


@compiled
@given(key=values_st, fvs=st.lists(st.tuples(values_st, values_st), max_size=8), as_lists=st.booleans(),
       as_tuple=st.booleans())
@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_send_one_without_a_socket_is_the_python_encoder(
    key: str, fvs: list[tuple[str, str]], as_lists: bool, as_tuple: bool
) -> None:
    _, send = c_functions()
    expected = serialize("APPL_DB", "ROUTE_TABLE", [KFV(key, "SET" if fvs else "DEL", fvs)])
    pairs: list[object] = [list(p) for p in fvs] if as_lists else list(fvs)
    given_fvs = tuple(pairs) if as_tuple else pairs
    assert send(0, key, given_fvs) == expected  # type: ignore[arg-type]


@compiled
def test_send_one_hands_back_what_python_must_take() -> None:
    """Anything the C encoder does not take goes to the Python one: its bytes or its error."""
    _, send = c_functions()
    python = OneChangeEncoder(HEAD).encode
    many = [(f"f{i}", "v") for i in range(1500)]
    assert send(0, "k", many) == python("k", many) == serialize("APPL_DB", "ROUTE_TABLE", [KFV("k", "SET", many)])
    for key, fvs in [(1, [("f", "v")]), ("k", [("f", 1)]), ("k", [("f",)]), ("k", [("f", "v", "w")]), ("k", 5),
                     ("k", [b"fv"]), (None, []), ("k", (p for p in [("f", "v")]))]:
        with pytest.raises(Exception) as c_error:
            send(0, key, fvs)  # type: ignore[arg-type]
        with pytest.raises(Exception) as python_error:
            python(key, fvs)  # type: ignore[arg-type]
        assert type(c_error.value) is type(python_error.value)
        assert str(c_error.value) == str(python_error.value)
    huge = [("f", "v" * (MAX_MESSAGE_SIZE - 40))]
    with pytest.raises(MessageTooLargeError):
        send(0, "k", huge)


@compiled
def test_send_one_hands_messages_to_the_socket_in_order(tmp_path: Path) -> None:
    """Given a socket, the messages arrive as sent; with the queue full, the message comes back
    (EAGAIN) and nothing is lost or reordered once the caller sends it."""
    _, send = c_functions()
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.SNDHWM, 4)
    push.setsockopt(zmq.LINGER, 0)
    endpoint = f"ipc://{tmp_path}/zmq"
    push.connect(endpoint)  # nobody there yet: messages queue up to the high-water mark
    try:
        address = speedups.direct_address(push)
        assert address == push.underlying
        sent: list[bytes] = []
        returned: list[bytes] = []
        for i in range(40):  # no peer yet: the queue fills after a few
            fvs = [("nexthop", f"10.0.{i}.1"), ("ifname", f"Ethernet{i}")]
            got = send(address, f"key{i}", fvs)
            sent.append(serialize("APPL_DB", "ROUTE_TABLE", [KFV(f"key{i}", "SET", fvs)]))
            if got is not None:
                assert got == sent[-1]
                returned.append(got)
        assert 0 < len(returned) < 40
        pull = ctx.socket(zmq.PULL)
        pull.setsockopt(zmq.LINGER, 0)
        pull.bind(endpoint)
        taken = [m for m in sent if m not in returned]
        received = [pull.recv() for _ in taken]
        assert received == taken
        assert pull.poll(200) == 0
    finally:
        ctx.destroy(0)  # both sockets, even when an assertion failed with the PULL one open


# -- the producer and server, through both ---------------------------------------------------


async def round_trip(endpoint: str, url: str, count: int) -> list[KeyOpFieldsValues]:
    server = ZmqServer(endpoint)
    db = await DBConnector.from_url(url, db_id=0, separator=":", name="APPL_DB")
    consumer = ZmqConsumerStateTable(db, "ROUTE_TABLE", server, db_persistence=False)
    client = ZmqClient(endpoint)
    producer = ZmqProducerStateTable(db, "ROUTE_TABLE", client, db_persistence=False)
    for i in range(count):
        if i % 5 == 4:
            await producer.delete(f"k{i}")
        else:
            await producer.set(f"k{i}", [("v", f"{i}é" if i % 7 == 0 else str(i)), ("w", "x" * (i % 300))])
    got: list[KeyOpFieldsValues] = []
    for _ in range(200):
        got += await consumer.pops()
        if len(got) >= count:
            break
        await asyncio.sleep(0.02)
    assert client.sent == count
    client.close()
    await server.close()
    await db.close()
    return got


def expected(count: int) -> list[KeyOpFieldsValues]:
    return [KFV(f"k{i}", "DEL", []) if i % 5 == 4 else
            KFV(f"k{i}", "SET", [("v", f"{i}é" if i % 7 == 0 else str(i)), ("w", "x" * (i % 300))])
            for i in range(count)]


async def test_producer_to_server(tmp_path: Path) -> None:
    with EmbeddedRedis() as redis_server:
        got = await round_trip(f"ipc://{tmp_path}/zmq", f"unix://{redis_server.unix_socket}", 3000)
    assert got == expected(3000)


def test_without_the_c_module(tmp_path: Path) -> None:
    """SWSSD_NO_SPEEDUPS=1: the Python code sends and reads the same changes."""
    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(ROOT / "tests")!r})
        from swssd.channels.zmq import speedups
        assert not speedups.COMPILED
        from swssd.channels.zmq.one_change import read_single
        assert speedups.read_single is read_single
        from swssd.redis.embedded_redis import EmbeddedRedis
        from test_zmq_speedups import expected, round_trip
        with EmbeddedRedis() as server:
            got = asyncio.run(round_trip("ipc://{tmp_path}/zmq", f"unix://{{server.unix_socket}}", 3000))
        assert got == expected(3000), got[:5]
        print("ok")
    """)
    env = dict(os.environ, SWSSD_NO_SPEEDUPS="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "ok"


def test_the_c_code_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    """The reader takes bytes from any peer: built with ASan and UBSan, it reads 30,000 mutated
    and cut messages (and the sender writes their originals) with no error reported and every
    result equal to the Python reader's."""
    compiler = shutil.which("gcc")
    if compiler is None or os.environ.get("SWSSD_NO_SPEEDUPS"):
        pytest.skip("no gcc here")
    runtimes = [subprocess.run([compiler, f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
                for lib in ("libasan.so", "libubsan.so")]
    if not all(Path(r).is_absolute() and Path(r).exists() for r in runtimes):
        pytest.skip("gcc has no sanitizer runtimes here")
    package = tmp_path / "swssd"
    shutil.copytree(ROOT / "swssd", package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    module = package / "channels" / "zmq" / f"_speedups{sysconfig.get_config_var('EXT_SUFFIX')}"
    built = subprocess.run(
        [compiler, "-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-std=c99", "-shared",
         "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(package / "channels" / "zmq" / "_speedups.c"),
         "-o", str(module)],
        capture_output=True, text=True,
    )
    assert built.returncode == 0, built.stderr
    script = textwrap.dedent("""
        import random, sys
        from swssd import KeyOpFieldsValues as K
        from swssd.channels.zmq import speedups
        from swssd.channels.zmq.one_change import read_single
        from swssd.channels.zmq.serializer import header, serialize
        assert speedups.COMPILED and speedups.__file__.startswith(sys.argv[1])
        rng = random.Random(27)
        head = header("APPL_DB", "T")
        send = speedups.one_change_sender(head)
        for _ in range(30000):
            fvs = [(f"f{j}", "v" * rng.randint(0, 300)) for j in range(rng.randint(0, 6))]
            key = "k" * rng.randint(0, 200)
            message = serialize("APPL_DB", "T", [K(key, "SET" if fvs else "DEL", fvs)])
            assert send(0, key, fvs) == message
            data = bytearray(message)
            for _ in range(rng.randint(0, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            cut = bytes(data[: len(data) - rng.randint(0, 3)]) + rng.randbytes(rng.randint(0, 2))
            assert speedups.read_single(cut, head) == read_single(cut, head), cut
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), LD_PRELOAD=" ".join(runtimes),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=0", UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0 and "runtime error" not in done.stderr, done.stderr[-4000:]
    assert done.stdout.splitlines()[-1] == "ok"
