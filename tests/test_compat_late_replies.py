"""No reply ever goes to the wrong call in the blocking layer (issue 34 item 3), by a seeded random
campaign against a real redis-server: thousands of calls cut short by `CLIENT PAUSE` from another
client (the callers' time-outs are shorter than the pauses) and by SIGALRM whose handler raises
(signal.setitimer), across get, hgetall, blpop, a RedisPipeline read, PubSub.get_message,
Select.select with a ConsumerStateTable's pops, and ConfigDBConnector / SonicV2Connector reads.
Every key holds a value naming it, so a reply handed to the wrong call is seen; a call either
returns its own key's value or raises RuntimeError (the connection unusable), never another's.

A failing run prints its seed; SWSSD_LATE_REPLY_SEED=<seed> replays the same schedule.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat.configdb import ConfigDBConnector
from swssd.compat.consumer_state_table import ConsumerStateTable
from swssd.compat.consumer_table import ConsumerTable
from swssd.compat.dbconnector import DBConnector
from swssd.compat.dbinterface import DBInterface
from swssd.compat.producer_state_table import ProducerStateTable
from swssd.compat.pubsub import PubSub
from swssd.compat.redis_pipeline import RedisPipeline
from swssd.compat.selector import Select
from swssd.compat.sonicv2connector import SonicV2Connector
from swssd.compat.table import Table
from swssd.redis.embedded_redis import EmbeddedRedis

_ = sonic_db_config

#: calls per campaign
CALLS = 5000
#: keys of each kind
KEYS = 16


class Interrupted(Exception):
    """What the SIGALRM handler raises in the middle of a call."""


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted


def _settle() -> None:
    """Nothing: a Python call, where CPython runs the handler of a signal that came before the
    timer was disarmed. Without it the handler could run only after `Campaign.call` returned, and
    the Interrupted came out of the test's own next line (a CI run, seed 3175562827)."""


@pytest.fixture
def prompt_unpause(clean_redis: EmbeddedRedis) -> Iterator[None]:
    """The server's hz at 500 for the test: a CLIENT PAUSE ends within 2 ms of its time, not at the
    next 100 ms tick (which would make the campaign minutes long)."""
    admin = DBConnector(0, "127.0.0.1", clean_redis.port, 0)
    _, hz = admin.connection.command("CONFIG", "GET", "hz")
    admin.config_set("hz", "500")
    try:
        yield
    finally:
        admin.config_set("hz", hz)
        admin.close()


@pytest.fixture
def alarm() -> Iterator[None]:
    """SIGALRM raising Interrupted for the test, the timer off and the old handler back after."""
    before = signal.signal(signal.SIGALRM, _raise)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def s_value(i: int) -> str:
    return f"s|{i}"


def h_value(i: int) -> dict[str, str]:
    return {"f": f"h|{i}", "g": f"g|{i}"}


def port_entry(i: int) -> dict[str, str]:
    return {"alias": f"eth{i}", "index": str(i)}


def pause_all(server: EmbeddedRedis, ms: int) -> None:
    """CLIENT PAUSE of every client, from a client of its own."""
    DBConnector(0, "127.0.0.1", server.port, 0).connection.command("CLIENT", "PAUSE", ms, "ALL")


def test_after_a_time_out_later_calls_raise_not_shift(clean_redis: EmbeddedRedis) -> None:
    """The issue's repro: a get() timed out under CLIENT PAUSE; once the pause is over, every later
    call on that connector raises (no get b -> 'value-of-a'), and a new connector works."""
    db = DBConnector(0, "127.0.0.1", clean_redis.port, 200)
    db.set("a", "value-of-a")
    db.set("b", "value-of-b")
    pause_all(clean_redis, 600)
    with pytest.raises(RuntimeError, match="timed out"):
        db.get("a")
    time.sleep(0.6)
    for call in (lambda: db.get("b"), lambda: db.get("a"), lambda: db.hgetall("a"), lambda: db.blpop("l", 1)):
        with pytest.raises(RuntimeError, match="unusable: GET ended before its reply"):
            call()
    assert db.newConnector(200).get("b") == "value-of-b"


def test_a_signal_inside_blpop_spoils_its_connector_only(clean_redis: EmbeddedRedis, alarm: None) -> None:
    """A signal handler raising inside blpop: the BLPOP's late None never reaches the next get;
    the connection is closed at once, so Redis drops the BLPOP and pops nothing for it."""
    db = DBConnector(0, "127.0.0.1", clean_redis.port, 0)
    other = DBConnector(0, "127.0.0.1", clean_redis.port, 0)
    db.set("a", "value-of-a")
    signal.setitimer(signal.ITIMER_REAL, 0.1)
    with pytest.raises(Interrupted):
        db.blpop("empty", 1)
    with pytest.raises(RuntimeError, match="unusable: BLPOP ended before its reply"):
        db.get("a")
    time.sleep(0.05)
    other.rpush("empty", "item")
    assert other.blpop("empty", 1) == "item"  # the abandoned BLPOP took nothing
    assert other.get("a") == "value-of-a"


def test_a_signal_while_get_message_waits_keeps_the_subscription(clean_redis: EmbeddedRedis, alarm: None) -> None:
    """Nothing is read while get_message waits: a signal there leaves the subscription working."""
    db = DBConnector(0, "127.0.0.1", clean_redis.port, 0)
    pubsub = db.pubsub()
    pubsub.psubscribe("chan|*")
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    with pytest.raises(Interrupted):
        pubsub.get_message(5)
    db.publish("chan|1", "m|1")
    assert pubsub.get_message(5) == {"type": "pmessage", "pattern": "chan|*", "channel": "chan|1", "data": "m|1"}


def test_a_pipeline_cut_short_raises_on_its_next_flush(sonic_db_config: Path, clean_redis: EmbeddedRedis,
                                                      alarm: None) -> None:
    """A RedisPipeline whose flush was interrupted under a pause: its next flush or read raises,
    never reading the earlier batch's replies as its own."""
    db = DBConnector(0, "127.0.0.1", clean_redis.port, 0)
    db.set("a", "value-of-a")
    table = Table(RedisPipeline(db), "T", True)
    table.set("k", [("f", "v")])  # waits in the pipeline until flush()
    pause_all(clean_redis, 300)
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    with pytest.raises(Interrupted):
        table.flush()
    time.sleep(0.3)
    with pytest.raises(RuntimeError, match="unusable"):
        table.get("k")
    fresh = Table(db, "T")  # a new pipeline: a connection of its own
    fresh.set("k2", [("f", "v2")])
    assert fresh.get("k2") == [True, (("f", "v2"),)]


def test_a_blocking_read_whose_keyspace_channel_failed_subscribes_again(
    sonic_db_config: Path, clean_redis: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DBInterface's blocking read waits on a keyspace channel; when that channel fails (killed by
    the server here; a signal cutting a read short leaves it unusable the same way) the read
    raises, as in C++, and the next one subscribes anew rather than failing for ever."""
    monkeypatch.setattr(DBInterface, "CONNECT_RETRY_WAIT_TIME", 0)
    monkeypatch.setattr(DBInterface, "DATA_RETRIEVAL_WAIT_TIME", 0)
    reader = SonicV2Connector()
    reader.connect("STATE_DB")
    writer = DBConnector("STATE_DB", 0, True)

    def pubsub_clients() -> set[str]:
        listing = writer.connection.command("CLIENT", "LIST", "TYPE", "pubsub")
        return {field[3:] for line in listing.splitlines() for field in line.split() if field.startswith("id=")}

    others = pubsub_clients()

    def kill_then_write() -> None:
        deadline = time.monotonic() + 10
        while not (new := pubsub_clients() - others) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the blocking read has subscribed
        for client in new:
            writer.connection.command("CLIENT", "KILL", "ID", client)
        time.sleep(0.3)
        writer.hset("PORT_TABLE|Ethernet0", "oper_status", "up")

    later = threading.Thread(target=kill_then_write)
    later.start()
    try:
        with pytest.raises(RuntimeError, match="closed by the server"):
            reader.get("STATE_DB", "PORT_TABLE|Ethernet0", "oper_status", blocking=True)
        assert reader.get("STATE_DB", "PORT_TABLE|Ethernet0", "oper_status", blocking=True) == "up"
    finally:
        later.join()


@pytest.mark.parametrize("consumer", [ConsumerStateTable, ConsumerTable])
def test_a_consumer_that_cannot_subscribe_leaves_no_transaction_open(
    sonic_db_config: Path, clean_redis: EmbeddedRedis, consumer: type[ConsumerStateTable | ConsumerTable]
) -> None:
    """A consumer subscribes inside MULTI on the connector's connection; when the subscription
    cannot be made (maxclients reached here) the transaction is discarded: the connector's next
    get is not answered "QUEUED"."""
    db = DBConnector(0, "127.0.0.1", clean_redis.port, 0)
    admin = DBConnector(0, "127.0.0.1", clean_redis.port, 0)
    db.set("a", "value-of-a")
    _, maxclients = admin.connection.command("CONFIG", "GET", "maxclients")
    clients = len(admin.connection.command("CLIENT", "LIST").splitlines())
    admin.config_set("maxclients", str(clients))
    try:
        with pytest.raises(RuntimeError, match="max number of clients"):
            consumer(db, "T")
    finally:
        admin.config_set("maxclients", maxclients)
    assert db.get("a") == "value-of-a"


@dataclass
class Campaign:
    """The clients under test, rebuilt when a call leaves one unusable, and the tallies."""

    server: EmbeddedRedis
    rng: random.Random
    admin: DBConnector
    feeder: DBConnector
    producer: ProducerStateTable
    pause_end: float = 0.0
    objects: dict[str, Any] = field(default_factory=dict)
    checked: int = 0
    signalled: int = 0
    timed_out: int = 0
    refused: int = 0
    rebuilt: int = 0
    anomalies: list[str] = field(default_factory=list)

    # -- the clients ------------------------------------------------------------------------

    def timeout_ms(self) -> int:
        """The callers' time-outs: shorter than most pauses, so a paused call times out."""
        return self.rng.choice([1, 2, 5])

    def make(self, name: str) -> Any:
        """The client `name`, made now (after any pause, so its own SELECT is not the victim)."""
        time.sleep(max(0.0, self.pause_end - time.monotonic()))
        port = self.server.port
        if name == "db":
            return DBConnector(0, "127.0.0.1", port, self.timeout_ms())
        if name == "table":
            return Table(DBConnector(0, "127.0.0.1", port, self.timeout_ms()), "HT")
        if name == "pubsub":
            pubsub = PubSub(lambda: DBConnector(0, "127.0.0.1", port, 0).connection)
            pubsub.psubscribe("chan|*")
            return pubsub
        if name == "consumer":
            consumer = ConsumerStateTable(DBConnector(0, "127.0.0.1", port, self.timeout_ms()), "CT")
            select = Select()
            select.addSelectable(consumer)
            return consumer, select
        if name == "config":
            config = ConfigDBConnector()
            config.connect(wait_for_init=False)
            return config
        raise AssertionError(name)

    def get(self, name: str) -> Any:
        if name not in self.objects:
            self.objects[name] = self.make(name)
        return self.objects[name]

    # -- faults -----------------------------------------------------------------------------

    def maybe_pause(self) -> None:
        """Now and then a CLIENT PAUSE of every client for 2 to 15 ms, from the admin client."""
        now = time.monotonic()
        if now >= self.pause_end + 0.001 and self.rng.random() < 0.5:
            ms = self.rng.randint(2, 15)
            self.admin.connection.command("CLIENT", "PAUSE", ms, "ALL")
            self.pause_end = time.monotonic() + ms / 1000

    def call(self, name: str, op: Callable[[Any], Any]) -> tuple[bool, Any]:
        """Run `op` on client `name`, with a SIGALRM armed at a random moment half the time:
        (True, result), or (False, None) when it was interrupted or raised RuntimeError. Any other
        exception is an anomaly (a reply of the wrong shape taken for this call's)."""
        delay = self.rng.choice([0.0] * 6 + [0.00005, 0.0001, 0.0002, 0.0003, 0.0005, 0.001, 0.002])
        try:
            obj = self.get(name)
            try:
                if delay:
                    signal.setitimer(signal.ITIMER_REAL, delay)
                result = op(obj)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                _settle()
            return True, result
        except Interrupted:
            self.signalled += 1
        except RuntimeError as exc:  # the time-out itself, or a later call on the spoiled connection
            if "unusable" in str(exc):
                self.refused += 1
            else:
                self.timed_out += 1
            if self.rng.random() < 0.7:  # keep some spoiled clients: their later calls must refuse too
                self.objects.pop(name, None)
                self.rebuilt += 1
        except IndexError:  # DBInterface lost its connection and its reconnection was interrupted
            self.objects.pop(name, None)
        except Exception as exc:
            self.anomalies.append(f"{name}: {type(exc).__name__}: {exc}")
        return False, None

    def expect(self, what: str, got: Any, wanted: Any) -> None:
        self.checked += 1
        if got != wanted:
            self.anomalies.append(f"{what}: got {got!r}, wanted {wanted!r}")

    # -- the calls --------------------------------------------------------------------------

    def step(self) -> None:
        """One call of a random kind: what it reads written first, then perhaps a pause, then the
        call, its reply checked when it returned one."""
        rng = self.rng
        i = rng.randrange(KEYS)
        kind = rng.choice(["get", "get", "hgetall", "hgetall", "blpop", "table", "pubsub", "select",
                           "config_entry", "config_table", "v2_get_all"])
        if kind == "blpop":
            self.feeder.rpush(f"l{i}", f"l|{i}|{rng.randrange(10**6)}")
        elif kind == "pubsub":
            self.feeder.publish(f"chan|{i}", f"m|{i}")
        elif kind == "select":
            self.producer.set(f"r{i}", [("f", f"r|{i}")])
        self.maybe_pause()
        if kind == "get":
            ok, got = self.call("db", lambda db: db.get(f"k{i}"))
            if ok:
                self.expect(f"get k{i}", got, s_value(i))
        elif kind == "hgetall":
            ok, got = self.call("db", lambda db: dict(db.hgetall(f"h{i}")))
            if ok:
                self.expect(f"hgetall h{i}", got, h_value(i))
        elif kind == "blpop":
            ok, got = self.call("db", lambda db: db.blpop(f"l{i}", 1))
            if ok and got is not None:  # None: an earlier, interrupted BLPOP took the item
                self.expect(f"blpop l{i}", got.rsplit("|", 1)[0], f"l|{i}")
        elif kind == "table":
            ok, got = self.call("table", lambda table: table.get(f"{i}"))
            if ok:
                self.expect(f"Table.get HT:{i}", got, [True, tuple(sorted(h_value(i).items()))])
        elif kind == "pubsub":
            ok, got = self.call("pubsub", lambda pubsub: pubsub.get_message(0.005))
            if ok and got:
                self.expect(f"message on {got['channel']}", got["data"], "m|" + got["channel"].split("|")[1])
        elif kind == "select":
            ok, got = self.call("consumer", self.select_and_pop)
            if ok:
                for key, op, fvs in got:
                    self.expect(f"popped {key}", (op, fvs), ("SET", (("f", f"r|{key[1:]}"),)))
        elif kind == "config_entry":
            ok, got = self.call("config", lambda config: config.get_entry("PORT", f"Ethernet{i}"))
            if ok:
                self.expect(f"get_entry PORT|Ethernet{i}", got, port_entry(i))
        elif kind == "config_table":
            ok, got = self.call("config", lambda config: config.get_table("PORT"))
            if ok:
                self.expect("get_table PORT", got, {f"Ethernet{j}": port_entry(j) for j in range(KEYS)})
        else:
            ok, got = self.call("config", lambda config: config.get_all("CONFIG_DB", f"PORT|Ethernet{i}"))
            if ok:
                self.expect(f"get_all PORT|Ethernet{i}", got, port_entry(i))

    @staticmethod
    def select_and_pop(objects: tuple[ConsumerStateTable, Select]) -> list[tuple[str, str, Any]]:
        consumer, select = objects
        state, _ = select.select(5)
        if state == Select.ERROR:
            raise RuntimeError("select: ERROR (its subscription connection is unusable)")
        if state != Select.OBJECT:
            return []
        keys, ops, fvss = consumer.pops()
        return list(zip(keys, ops, fvss))


def test_no_reply_reaches_the_wrong_call(sonic_db_config: Path, clean_redis: EmbeddedRedis, prompt_unpause: None,
                                         alarm: None, monkeypatch: pytest.MonkeyPatch) -> None:
    seed = int(os.environ.get("SWSSD_LATE_REPLY_SEED") or random.randrange(2**32))
    print(f"seed {seed}")
    monkeypatch.setattr(DBInterface, "CONNECT_RETRY_WAIT_TIME", 0)
    feeder = DBConnector(0, "127.0.0.1", clean_redis.port, 0)
    with monkeypatch.context() as feeding:  # DBConnector.hmset is the layer's lenient form only (strict,
        feeding.setenv("SWSSD_COMPAT_PERMISSIVE", "1")  # as the binding, it refuses every argument)
        for i in range(KEYS):
            feeder.set(f"k{i}", s_value(i))
            feeder.hmset({f"h{i}": list(h_value(i).items()), f"HT:{i}": list(h_value(i).items())})
        config = DBConnector(4, "127.0.0.1", clean_redis.port, 0)
        config.hmset({f"PORT|Ethernet{i}": list(port_entry(i).items()) for i in range(KEYS)})
    campaign = Campaign(
        server=clean_redis,
        rng=random.Random(seed),
        admin=DBConnector(0, "127.0.0.1", clean_redis.port, 0),
        feeder=feeder,
        producer=ProducerStateTable(feeder, "CT"),
    )
    started = time.monotonic()
    for _ in range(CALLS):
        campaign.step()
    elapsed = time.monotonic() - started
    summary = (f"seed {seed} (replay: SWSSD_LATE_REPLY_SEED={seed}): {CALLS} calls in {elapsed:.1f} s, "
               f"{campaign.checked} replies checked; calls cut short by a signal {campaign.signalled}, "
               f"by a time-out {campaign.timed_out}; refused after {campaign.refused}; "
               f"{campaign.rebuilt} clients rebuilt")
    print(summary)
    assert not campaign.anomalies, f"{summary}\n{len(campaign.anomalies)} anomalies, first: {campaign.anomalies[:10]}"
    assert campaign.signalled >= 400 and campaign.timed_out >= 100, summary  # the faults happened
    assert campaign.refused >= 400 and campaign.checked >= 1500, summary  # and calls went on after them
