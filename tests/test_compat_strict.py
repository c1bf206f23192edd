"""The layer is as strict as sonic-swss-common's binding in what a program can observe: what
Select.select() returns (a new base-class Selectable proxy: `pop` needs a cast, it is not the object
added), what the CastSelectableTo... functions return, hgetall's FieldValueMap (a std::map proxy,
not a dict), and the field/value pairs the binding refuses (ints and floats among them), with its
exception types and messages. PROBE runs the same calls through both (the binding in a subprocess,
skipped with the reason when it cannot be imported) and the outcomes must match; the tests below it
hold the layer to the same without the binding, and SWSSD_COMPAT_PERMISSIVE=1 to today's lenient forms."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat import swsscommon
from test_configdb_interop import swss_env

_ = (sonic_db_config, swss_env)

#: probe(sc, config) -> [(label, outcome)]; the same source runs on the layer and on the binding
PROBE = r'''
import copy, json, pickle, re

def probe(sc, config):
    sc.SonicDBConfig.initialize(config)
    db = sc.DBConnector("APPL_DB", 0)
    db.flushdb()
    v2 = sc.SonicV2Connector(use_unix_socket_path=False)
    v2.connect("APPL_DB")  # sets notify-keyspace-events, which the SubscriberStateTable needs
    out = []

    def t(label, f):
        try:
            r = f()
            plain = isinstance(r, (str, int, float, bool, type(None), list, tuple, dict))
            text = repr(r) if plain else type(r).__name__
            out.append((label, "ok", re.sub(r"0x[0-9a-f]+", "0x?", text)))
        except Exception as e:
            out.append((label, "error", type(e).__name__, re.sub(r"0x[0-9a-f]+", "0x?", str(e))))

    sel = sc.Select()
    cst = sc.ConsumerStateTable(db, "STRICT_CST")
    sst = sc.SubscriberStateTable(db, "STRICT_SST")
    nc = sc.NotificationConsumer(db, "STRICT_NC")
    for s in (cst, sst, nc):
        sel.addSelectable(s)
    sc.ProducerStateTable(db, "STRICT_CST").set("k", sc.FieldValuePairs([("a", "b")]))
    state, c = sel.select(2000)
    t("state", lambda: state)
    t("type", lambda: [k.__name__ for k in type(c).__mro__])
    t("is", lambda: (c is cst, c == cst, c != cst, hash(c) == hash(cst), c in [cst], {cst: 1}.get(c)))
    t("fd", lambda: c.getFd() == cst.getFd())
    t("dir", lambda: [a for a in dir(c) if not a.startswith("_")])
    t("hasattr pop", lambda: (hasattr(c, "pop"), hasattr(c, "pops"), hasattr(c, "getDbConnector")))
    t("pop", lambda: c.pop())
    t("repr", lambda: repr(c))
    t("state after", lambda: (c.getPri(), c.hasData(), c.hasCachedData(), c.thisown))
    t("isinstance", lambda: (isinstance(c, sc.Selectable), isinstance(c, sc.RedisSelect),
                             isinstance(cst, sc.Selectable)))
    r = sc.CastSelectableToRedisSelectObj(c)
    t("cast rs", lambda: (type(r).__name__, r is cst, r == cst, r.getFd() == cst.getFd(), hasattr(r, "pop")))
    t("cast rs repr", lambda: repr(r))
    t("cast sst of cst", lambda: sc.CastSelectableToSubscriberTableObj(c))
    t("cast cst itself", lambda: (type(sc.CastSelectableToRedisSelectObj(cst)).__name__,
                                  sc.CastSelectableToRedisSelectObj(cst) is cst))
    t("cast None", lambda: sc.CastSelectableToRedisSelectObj(None))
    t("cast int", lambda: sc.CastSelectableToRedisSelectObj(5))
    t("cast sst int", lambda: sc.CastSelectableToSubscriberTableObj("x"))
    t("cst pop", lambda: cst.pop())
    t("timeout", lambda: sel.select(10))
    t("new proxy each time", lambda: (sel.select(0), c is sel.select(0)[1]))
    sc.Table(db, "STRICT_SST").set("x", [("f", "v")])
    state, c = sel.select(2000)
    s = sc.CastSelectableToSubscriberTableObj(c)
    t("sst", lambda: (state, type(c).__name__, c.getFd() == sst.getFd()))
    t("sst cast", lambda: (type(s).__name__, s is sst, s == sst, s.getFd() == sst.getFd()))
    t("sst cast pop", lambda: s.pop())
    t("sst as rs", lambda: type(sc.CastSelectableToRedisSelectObj(c)).__name__)
    sc.NotificationProducer(db, "STRICT_NC").send("op", "data", sc.FieldValuePairs([("a", "b")]))
    state, c = sel.select(2000)
    t("nc", lambda: (state, type(c).__name__, c.getFd() == nc.getFd(), sc.CastSelectableToRedisSelectObj(c),
                     sc.CastSelectableToSubscriberTableObj(c)))
    t("nc pop", lambda: nc.pop())
    t("abstract", lambda: sc.Selectable())
    sel.removeSelectable(cst)
    t("removed", lambda: sel.select(0))

    db.hset("h", "b", "2"); db.hset("h", "a", "1"); db.hset("h", "c", "3")
    m = db.hgetall("h")
    t("map type", lambda: [k.__name__ for k in type(m).__mro__])
    t("map isinstance", lambda: isinstance(m, dict))
    t("map repr", lambda: (repr(m), str(m), "%s" % m))
    t("map lists", lambda: (m.keys(), m.values(), m.items(), list(m), sorted(m), dict(m), m.asdict()))
    t("map iterators", lambda: (list(m.iterkeys()), list(m.itervalues()), list(m.iteritems()),
                                list(m.key_iterator()), list(m.value_iterator())))
    t("map len", lambda: (len(m), bool(m), m.size(), m.empty()))
    t("map in", lambda: ("a" in m, "z" in m, m.has_key("a"), m.has_key("z"), m.count("b"), m.count("zz")))
    t("map in int", lambda: 1 in m)
    t("map in None", lambda: None in m)
    t("map in bytes", lambda: b"a" in m)
    t("map has_key int", lambda: m.has_key(1))
    t("map index", lambda: m["a"])
    t("map missing", lambda: m["z"])
    t("map index int", lambda: m[1])
    t("map index None", lambda: m[None])
    t("map get", lambda: (m.get("a"), m.get("z"), m.get("z", "d"), m.get("z", 5)))
    t("map get int", lambda: m.get(1))
    t("map get None", lambda: m.get(None))
    t("map eq", lambda: (m == {"a": "1", "b": "2", "c": "3"}, m == db.hgetall("h"), m != {"a": "1"}, m == m,
                         m == [("a", "1")], m.items() == [("a", "1"), ("b", "2"), ("c", "3")]))
    t("map lt", lambda: m < m)
    t("map or", lambda: m | {"a": "1"})
    t("map json", lambda: json.dumps(m))
    t("map copy", lambda: (type(copy.copy(m)).__name__, copy.copy(m).items()))
    t("map deepcopy", lambda: copy.deepcopy(m))
    t("map pickle", lambda: pickle.dumps(m))
    t("map hash", lambda: hash(m) == hash(m))
    t("map kwargs", lambda: ((lambda **kw: kw)(**m), {**m}))
    t("map reversed", lambda: list(reversed(m)))
    t("map pop", lambda: m.pop("a"))
    t("map setdefault", lambda: m.setdefault("q", "r"))
    t("map popitem", lambda: m.popitem())
    t("map setitem", lambda: (m.__setitem__("0", "z"), m.__setitem__("b", "two"), m.items()))
    t("map setitem int", lambda: m.__setitem__("e", 5))
    t("map setitem int key", lambda: m.__setitem__(5, "5"))
    t("map setitem bytes", lambda: m.__setitem__("x", b"y"))
    t("map del", lambda: (m.__delitem__("0"), m.keys()))
    t("map del missing", lambda: m.__delitem__("zz"))
    t("map update", lambda: (m.update({"x": "y"}), m.update(w="v"), m.items()))
    t("map update int", lambda: (m.update({"n": 1}), m.items()))
    t("map erase", lambda: (m.erase("x"), m.erase("x"), m.keys()))
    t("map clear", lambda: (m.clear(), len(m), m.items()))
    t("map missing hash", lambda: (type(db.hgetall("nope")).__name__, len(db.hgetall("nope")),
                                   db.hgetall("nope") == {}))
    t("map new", lambda: (sc.FieldValueMap().items(), sc.FieldValueMap({"b": "1", "a": "2"}).items(),
                          sc.FieldValueMap(db.hgetall("h")).items()))
    t("map new list", lambda: sc.FieldValueMap([("a", "1")]))
    t("map new int", lambda: sc.FieldValueMap({"a": 1}))
    t("map thisown", lambda: db.hgetall("h").thisown)

    T = sc.Table(db, "ST"); P = sc.ProducerStateTable(db, "SP"); PT = sc.ProducerTable(db, "SQ")
    for name, obj in (("Table", T), ("PST", P), ("PT", PT)):
        for v in ([("a", 1)], [("a", 1.5)], [(1, "a")], [("a", None)], [("a", True)], [("a",)], [("a", "b", "c")],
                  [["a", "b"]], ("a", "b"), {"a": "b"}, None, 5, (x for x in [("a", "b")])):
            t(f"{name}.set {v!r}"[:40], lambda: obj.set("k", v))
        t(f"{name}.set int key", lambda: obj.set(1, [("a", "b")]))
        t(f"{name}.set None key", lambda: obj.set(None, [("a", "b")]))
        t(f"{name}.set ab", lambda: obj.set("k", ["ab"]))
        if obj is not PT:
            t(f"{name}.set int op", lambda: obj.set("k", [("a", "b")], 1))
            t(f"{name}.set int prefix", lambda: obj.set("k", [("a", "b")], "", 1))
        t(f"{name}.set ok", lambda: obj.set("ok", (("a", "b"),)))
    for v in ([("a", 1)], [("a", 1.5)], [["a", "b"]], [("a", "b")], (("a", "b"),), [], None, [("a", None)],
              [("a", b"b")], [("a", "b", "c")], 2, (x for x in [("a", "b")]), ["ab"], ["abc"], {"a": "b"},
              [["a", "b"], ("c", "d")]):
        t(f"FieldValuePairs {v!r}"[:40], lambda: list(sc.FieldValuePairs(v)))
    t("FieldValuePairs()", lambda: list(sc.FieldValuePairs()))
    t("FieldValuePairs.append int", lambda: sc.FieldValuePairs().append(("a", 1)))
    t("FieldValuePairs.append list", lambda: (lambda v: (v.append(["a", "b"]), list(v)))(sc.FieldValuePairs()))
    NP = sc.NotificationProducer(db, "SN")
    t("NP.send list", lambda: NP.send("op", "d", [("a", "1")]))
    t("NP.send None", lambda: NP.send("op", "d", None))
    t("NP.send pairs", lambda: NP.send("op", "d", sc.FieldValuePairs([("a", "1")])))
    for v in ({"k": [("a", 1)]}, {"k": [("a", "1")]}, {"k": {"a": "1"}}):
        t(f"hmset {v!r}", lambda: db.hmset(v))
    t("v2.hmset int", lambda: v2.hmset("APPL_DB", "v2h", {"a": 1}))
    t("v2.hmset float", lambda: v2.hmset("APPL_DB", "v2h", {"a": 1.5}))
    t("v2.hmset ok", lambda: (v2.hmset("APPL_DB", "v2h", {"a": "1"}), v2.get_all("APPL_DB", "v2h")))
    t("PT bytes", lambda: PT.set("b", [("a", b"b\xc3\xa9\""), (b"f", "v")]))
    t("Table bytes", lambda: T.set("b", [("a", b"b\xc3\xa9"), (b"f", "v")]))
    t("keys", lambda: sorted(db.keys("*")))
    t("table", lambda: (T.get("ok"), T.get("k")))
    return out
'''
BINDING = PROBE + '''
import sys
from swsscommon import swsscommon as sc
print(repr(probe(sc, sys.argv[1])))
'''


def ours(config: Path) -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(PROBE, namespace)
    swsscommon.SonicDBConfig.reset()  # the probe initializes it with `config`
    return list(namespace["probe"](swsscommon, str(config)))


def theirs(env: dict[str, str], config: Path) -> list[Any]:
    done = subprocess.run([env.get("PYTHON", sys.executable), "-c", BINDING, str(config)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


def written() -> list[Any]:
    """What the probe's writes left in APPL_DB: every key, the queue and the hashes as stored."""
    conn = swsscommon.DBConnector("APPL_DB", 0).connection
    return [sorted(conn.command("KEYS", "*")), conn.command("LRANGE", "SQ_KEY_VALUE_OP_QUEUE", 0, -1),
            conn.command("HGETALL", "ST:b"), conn.command("HGETALL", "ST:ok")]


def test_the_layer_observes_as_the_binding(swss_env: dict[str, str], sonic_db_config: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every probe's outcome (value, or exception type and message) is the binding's."""
    monkeypatch.delenv("SWSSD_COMPAT_PERMISSIVE", raising=False)
    mine = ours(sonic_db_config)
    mine_written = written()
    binding = theirs(swss_env, sonic_db_config)
    binding_written = written()
    assert [r[0] for r in mine] == [r[0] for r in binding]
    differ = [(m, b) for m, b in zip(mine, binding) if m != b]
    assert differ == [], "\n".join(f"ours {m!r}\nbind {b!r}" for m, b in differ)
    # the binding's ProducerTable.set, refusing pairs, still enqueues the key with no pairs; the layer
    # refuses them and loses nothing (a difference on purpose, in the README)
    empty = ["SSET", "[]", "k"]
    queue = binding_written[1]
    entries = [queue[i:i + 3] for i in range(0, len(queue), 3)]
    binding_written[1] = [item for entry in entries if entry != empty for item in entry]
    assert len(queue) > len(binding_written[1])
    assert mine_written == binding_written


def test_select_hands_out_a_base_proxy_that_needs_the_cast(sonic_db_config: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWSSD_COMPAT_PERMISSIVE", raising=False)
    db = swsscommon.DBConnector("APPL_DB", 0)
    sel, cst = swsscommon.Select(), swsscommon.ConsumerStateTable(db, "P1")
    sst = swsscommon.SubscriberStateTable(db, "P2")
    sel.addSelectables([cst, sst])
    swsscommon.ProducerStateTable(db, "P1").set("k", swsscommon.FieldValuePairs([("a", "b")]))
    state, c = sel.select(2000)
    assert state == swsscommon.Select.OBJECT and type(c) is swsscommon.Selectable
    assert c is not cst and c != cst and c.getFd() == cst.getFd()
    with pytest.raises(AttributeError, match="'Selectable' object has no attribute 'pop'"):
        c.pop()  # type: ignore[attr-defined]
    assert type(swsscommon.CastSelectableToRedisSelectObj(c)) is swsscommon.RedisSelect
    assert swsscommon.CastSelectableToSubscriberTableObj(c) is None
    assert cst.pop() == ["k", "SET", (("a", "b"),)]
    swsscommon.Table(db, "P2").set("x", [("f", "v")])
    state, c = sel.select(2000)
    table = swsscommon.CastSelectableToSubscriberTableObj(c)
    assert type(table) is swsscommon.SubscriberStateTable and table is not sst
    assert table.pop() == ["x", "SET", (("f", "v"),)]


def test_hgetall_is_a_map_proxy_not_a_dict(sonic_db_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWSSD_COMPAT_PERMISSIVE", raising=False)
    db = swsscommon.DBConnector("APPL_DB", 0)
    db.hset("h", "b", "2")
    db.hset("h", "a", "1")
    m = db.hgetall("h")
    assert not isinstance(m, dict) and type(m) is swsscommon.FieldValueMap
    assert m.keys() == ["a", "b"] and list(m) == ["a", "b"] and dict(m) == {"a": "1", "b": "2"}
    assert m != {"a": "1", "b": "2"} and m.get("z") is None and "a" in m  # type: ignore[comparison-overlap]
    with pytest.raises(IndexError, match="key not found"):
        m["z"]
    with pytest.raises(TypeError, match="FieldValueMap___setitem__"):
        m["c"] = 3
    with pytest.raises(AttributeError):
        m.pop("a")  # type: ignore[attr-defined]
    assert re.fullmatch(r"<swsscommon\.swsscommon\.FieldValueMap; proxy of <Swig Object of type "
                        r"'std::map< std::string,std::string > \*' at 0x[0-9a-f]+> >", repr(m))


@pytest.mark.parametrize("value", [1, 1.5, True, None])
def test_pairs_with_a_number_are_refused_and_nothing_is_written(sonic_db_config: Path, value: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWSSD_COMPAT_PERMISSIVE", raising=False)
    db = swsscommon.DBConnector("APPL_DB", 0)
    for writer, name in ((swsscommon.Table(db, "T"), "Table_set"),
                         (swsscommon.ProducerStateTable(db, "P"), "ProducerStateTable_set"),
                         (swsscommon.ProducerTable(db, "Q"), "ProducerTable_set")):
        with pytest.raises(SystemError, match=f"<built-in function {name}> returned NULL without setting an exc"):
            writer.set("k", [("a", "b"), ("c", value)])
    with pytest.raises(TypeError, match="Wrong number or type of arguments for overloaded function "
                                        "'new_FieldValuePairs'"):
        swsscommon.FieldValuePairs([("a", value)])
    assert db.keys("*") == ()


def test_permissive_restores_the_lenient_forms(sonic_db_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWSSD_COMPAT_PERMISSIVE", "1")
    db = swsscommon.DBConnector("APPL_DB", 0)
    sel, cst = swsscommon.Select(), swsscommon.ConsumerStateTable(db, "L")
    sel.addSelectable(cst)
    swsscommon.ProducerStateTable(db, "L").set("k", [("n", 1)])  # type: ignore[list-item]
    assert sel.select(2000) == [swsscommon.Select.OBJECT, cst]
    assert swsscommon.CastSelectableToRedisSelectObj(cst) is cst
    assert cst.pop() == ["k", "SET", (("n", "1"),)]
    swsscommon.Table(db, "T").set("k", swsscommon.FieldValuePairs([("n", 2)]))
    m = db.hgetall("T:k")
    assert isinstance(m, dict) and m == {"n": "2"}
