"""The call patterns of SONiC's tools that the layer gained for them, against a real redis-server:
bgpcfgd's bgpmon (RedisCommand pushed into a RedisPipeline), sonic-utilities' portstat
(CounterTable with PortCounter, gearbox ports included), disk_check (the events publisher),
config's IFACE_NAME_MAX_LEN and the CFG_* names, and RedisTransactioner. Each scenario runs on the
layer with fixed expectations, and on the binding too when it is importable: the same results and
the same Redis state."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_fixtures import DATABASES, database_config, write_json
from swssd.compat import gen_cfg_schema
from swssd.compat import swsscommon as ours_module
from swssd.compat.dbconfig import SonicDBConfig
from swssd.redis.embedded_redis import EmbeddedRedis
from test_configdb_interop import swss_env

_ = swss_env


@pytest.fixture
def sonic_db_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> Iterator[Path]:
    """The compat fixtures' databases and GB_COUNTERS_DB, where CounterTable reads a gearbox's counters."""
    path = write_json(tmp_path / "database_config.json",
                      database_config(clean_redis, {**DATABASES, "GB_COUNTERS_DB": (10, ":")}))
    SonicDBConfig.reset()
    SonicDBConfig.initialize(str(path))
    yield path
    SonicDBConfig.reset()

#: the scenarios, run here on the layer and in a subprocess on the binding; SWIG's opaque reply
#: pointers (what the binding's push() returns) are reported as "opaque"
DRIVER = """
def value(x):
    if isinstance(x, (int, str, type(None))):
        return x
    if isinstance(x, (list, tuple)):
        return [value(i) for i in x]
    return "opaque"


def attempt(out, call):
    try:
        out.append(("ok", value(call())))
    except Exception as exc:
        out.append(("error", type(exc).__name__))


def bgpmon(sc, out):
    db = sc.DBConnector("STATE_DB", 0)
    pipe = sc.RedisPipeline(db)
    for key, fvs in (("NEIGH_STATE_TABLE|10.0.0.1", {"state": "Established"}),
                     ("NEIGH_STATE_TABLE|10.0.0.2", {"state": "Idle", "extra": "x y"}),
                     ("NEIGH_STATE_TABLE|10.0.0.3", None)):
        command = sc.RedisCommand()
        if fvs is None:
            command.formatDEL(key)
        else:
            command.formatHSET(key, fvs)
        out.append(("printable", command.toPrintableString()))
        pipe.push(command)
    pipe.flush()
    queued = sc.RedisCommand()
    queued.formatHSET("NEIGH_STATE_TABLE|10.0.0.4", "state", "Active")
    out.append(("queued", pipe.push(queued, 3), pipe.size()))
    wrong = sc.RedisCommand()
    wrong.formatDEL("NEIGH_STATE_TABLE|10.0.0.1")
    pipe.push(wrong, 5)            # DEL answers an integer, not a status
    attempt(out, pipe.flush)
    out.append(("size", pipe.size()))
    attempt(out, lambda: sc.RedisCommand().formatDEL([]))
    attempt(out, lambda: sc.RedisCommand().formatHSET("k", {}))
    escaped = sc.RedisCommand()
    escaped.format(["SET", "a\\\\b\\x01", "\\u00e9\\t"])
    out.append(("escaped", escaped.toPrintableString()))


def transaction(sc, out):
    db = sc.DBConnector("STATE_DB", 0)
    tran = sc.RedisTransactioner(db)
    tran.multi()
    command = sc.RedisCommand()
    command.formatHSET("TRAN|1", "f", "v")
    tran.enqueue(command, 3)
    tran.enqueue("GET TRAN_NONE", 4)
    out.append(("exec", tran._exec()))
    out.append(("replies", tran.dequeueReply() is not None, tran.dequeueReply() is not None, tran.dequeueReply()))
    tran.multi()
    tran.enqueue("HGET TRAN|1 f", 4)   # a string comes back, not nil
    attempt(out, tran._exec)


def portstat(sc, out):
    counters = sc.DBConnector("COUNTERS_DB", 0)
    gearbox = sc.DBConnector("GB_COUNTERS_DB", 0)
    counters.hset("COUNTERS_PORT_NAME_MAP", "Ethernet0", "oid:0x1")
    counters.hset("COUNTERS_PORT_NAME_MAP", "Ethernet4", "oid:0x2")
    for field, value in (("SAI_PORT_STAT_IF_IN_OCTETS", "123456789012345678"), ("SAI_PORT_STAT_IF_IN_ERRORS", "7"),
                         ("SAI_PORT_STAT_IF_OUT_DISCARDS", "2"), ("SAI_PORT_STAT_ETHER_STATS_JABBERS", "1")):
        counters.hset("COUNTERS:oid:0x1", field, value)
        counters.hset("COUNTERS:oid:0x2", field, value)
    # Ethernet4 has a gearbox: its system and line sides' counters are added in UNION mode
    gearbox.hset("COUNTERS_PORT_NAME_MAP", "Ethernet4_system", "oid:0x21")
    gearbox.hset("COUNTERS_PORT_NAME_MAP", "Ethernet4_line", "oid:0x22")
    for oid, base in (("oid:0x21", 10), ("oid:0x22", 100)):
        for field in ("SAI_PORT_STAT_IF_OUT_ERRORS", "SAI_PORT_STAT_IF_IN_ERRORS", "SAI_PORT_STAT_IF_IN_DISCARDS",
                      "SAI_PORT_STAT_IF_OUT_DISCARDS", "SAI_PORT_STAT_ETHER_STATS_JABBERS"):
            gearbox.hset("COUNTERS:" + oid, field, str(base + len(field)))
    for name, mode in (("UNION", sc.PortCounter.Mode_UNION), ("ASIC", sc.PortCounter.Mode_ASIC),
                       ("SYSTEMSIDE", sc.PortCounter.Mode_SYSTEMSIDE), ("LINESIDE", sc.PortCounter.Mode_LINESIDE)):
        table = sc.CounterTable(counters)
        counter = sc.PortCounter(mode)
        for port in ("Ethernet0", "Ethernet4", "Ethernet8"):
            out.append((name, port, table.get(counter, port), table.hget(counter, port, "SAI_PORT_STAT_IF_IN_ERRORS"),
                        table.hget(counter, port, "SAI_PORT_STAT_IF_IN_OCTETS"), table.hget(counter, port, "NONE"),
                        counter.getKey(table, port)))
    table = sc.CounterTable(counters)
    cache = sc.PortCounter.keyCacheInstance()
    cache.enable(table)
    out.append(("cached", cache.enabled(), cache.empty(), cache["Ethernet4_line"], cache.get("nope"),
                table.get(sc.PortCounter(), "Ethernet4"), table.get(sc.PortCounter(), "Ethernet8")))
    attempt(out, lambda: cache.at("nope"))
    cache.disable()
    counters.hset("COUNTERS_MACSEC_NAME_MAP", "sa0", "oid:0x9")
    gearbox.hset("COUNTERS_MACSEC_NAME_MAP", "sa1", "oid:0x10")
    counters.hset("COUNTERS:oid:0x9", "SAI_MACSEC_SA_STAT_OCTETS_ENCRYPTED", "5")
    gearbox.hset("COUNTERS:oid:0x10", "SAI_MACSEC_SA_STAT_OCTETS_ENCRYPTED", "6")
    macsec = sc.MacsecCounter()
    out.append(("macsec", [(macsec.getKey(table, n), table.get(macsec, n)) for n in ("sa0", "sa1", "sa2")]))


def events(sc, out):
    handle = sc.events_init_publisher("sonic-events-host")
    params = sc.FieldValueMap()
    params["fail_type"] = "read_only"
    out.append(("published", sc.event_publish(handle, "event-disk", params), sc.event_publish(handle, "event-disk")))
    sc.events_deinit_publisher(handle)
    out.append(("no handle", sc.event_publish(None, "event-disk")))


def names(sc, out):
    out.append(("names", sc.IFACE_NAME_MAX_LEN, sc.isInterfaceNameValid("Ethernet0"),
                sc.isInterfaceNameValid("x" * 16)))


def featured(sc, out):
    # featured's loop: subscribers by priority, found again by getFd(), one pop() per select
    cfg = sc.DBConnector("CONFIG_DB", 0)
    appl = sc.DBConnector("APPL_DB", 0)
    feature_state = sc.Table(sc.DBConnector("STATE_DB", 0), "FEATURE")
    for db in (cfg, appl):
        db.flushdb()
    sc.ConfigDBConnector().connect(wait_for_init=False)  # as featured does; it turns keyspace events on
    for name in ("snmp", "lldp"):
        cfg.hset("FEATURE|" + name, "state", "enabled")
    select = sc.Select()
    subscribers = {}
    for db, table, pri in ((cfg, "FEATURE", 10), (appl, "PORT_TABLE", 9)):
        subscriber = sc.SubscriberStateTable(db, table, sc.TableConsumable.DEFAULT_POP_BATCH_SIZE, pri)
        select.addSelectable(subscriber)
        subscribers[subscriber.getFd()] = (subscriber, table)

    def take(timeout):
        ready, selectable = select.select(timeout)
        if ready != select.OBJECT:
            out.append(("timeout", ready))
            return False
        subscriber, table = subscribers[selectable.getFd()]
        key, op, fvs = subscriber.pop()
        out.append((table, key, op, fvs))
        if table == "FEATURE":
            feature_state.set(key, [("state", dict(fvs).get("state", ""))])
        return True

    while take(200):
        pass
    for db, key, field, value in ((cfg, "FEATURE|lldp", "state", "disabled"), (appl, "PORT_TABLE:PortInitDone",
                                  "lanes", "0"), (cfg, "FEATURE|bgp", "state", "enabled")):
        db.hset(key, field, value)
        take(5000)
    take(200)
    out.append(("batch", sc.TableConsumable.DEFAULT_POP_BATCH_SIZE,
                sc.SubscriberStateTable.DEFAULT_POP_BATCH_SIZE))


def arguments(sc, out):
    # config reload's client.set(INIT_INDICATOR, 1); what SWIG's std::string typemap refuses
    db = sc.DBConnector("STATE_DB", 0)
    config = sc.ConfigDBConnector()
    config.connect(wait_for_init=False)
    client = config.get_redis_client(config.CONFIG_DB)
    out.append(("init", client.set(config.INIT_INDICATOR, 1), client.get(config.INIT_INDICATOR)))
    for value in (True, False, 7, "x"):
        out.append(("set", value, db.set("ARG", value), db.get("ARG")))
    table = sc.Table(db, "ARG_T")
    for call in (lambda: db.set("ARG", 1.5), lambda: db.set("ARG", None), lambda: db.set(None, "x"),
                 lambda: db.set(3, "x"), lambda: db.hset("ARG_H", "f", 1), lambda: db.hset("ARG_H", None, "v"),
                 lambda: db.hget("ARG_H", b"f"), lambda: db.exists(1), lambda: db.publish("ch", 2),
                 lambda: db.get(None), lambda: db.hexists("k", 1.5), lambda: table.hset("k", "f", True),
                 lambda: table.hget("k", None)):
        try:
            call()
            out.append(("ok",))
        except Exception as exc:
            out.append(("error", type(exc).__name__, str(exc).splitlines()[0]))
    db.delete("ARG")


SCENARIOS = {"arguments": arguments, "featured": featured, "bgpmon": bgpmon, "transaction": transaction,
             "portstat": portstat, "events": events, "names": names}


def drive(sc, config, name):
    sc.SonicDBConfig.initialize(config)
    for db_name in ("STATE_DB", "COUNTERS_DB", "GB_COUNTERS_DB"):
        sc.DBConnector(db_name, 0).flushdb()
    out = []
    SCENARIOS[name](sc, out)
    return out
"""
BINDING = DRIVER + """
import ast, sys
from swsscommon import swsscommon as sc
request = ast.literal_eval(sys.stdin.read())
print(repr(drive(sc, request["config"], request["name"])))
"""


def ours(config: Path, name: str) -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(DRIVER, namespace)
    ours_module.SonicDBConfig.reset()
    return list(namespace["drive"](ours_module, str(config), name))


def theirs(env: dict[str, str], config: Path, name: str) -> list[Any]:
    done = subprocess.run([env.get("PYTHON", sys.executable), "-c", BINDING], input=repr({"config": str(config),
                          "name": name}), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


def state() -> dict[str, Any]:
    """Every key of the three databases the scenarios write, with its hash."""
    out = {}
    for name in ("STATE_DB", "COUNTERS_DB", "GB_COUNTERS_DB"):
        db = ours_module.DBConnector(name, 0)
        out.update({f"{name}/{key}": dict(db.hgetall(key)) for key in db.keys("*")})
    return out


def normal(results: list[Any]) -> list[Any]:
    """The binding's push() returns an opaque reply pointer, the layer the reply's value."""
    return [tuple("opaque" if isinstance(x, int) and r[0] == "pushed" else x for x in r) for r in results]


@pytest.mark.parametrize("name", ["arguments", "featured", "bgpmon", "transaction", "portstat", "events", "names"])
def test_same_results_and_state_as_the_binding(swss_env: dict[str, str], sonic_db_config: Path, name: str) -> None:
    theirs_out = theirs(swss_env, sonic_db_config, name)
    theirs_state = state()
    ours_out = ours(sonic_db_config, name)  # leaves SonicDBConfig initialized with the same file
    assert ours_out == theirs_out
    assert state() == theirs_state


def test_bgpmon_pipeline(sonic_db_config: Path) -> None:
    out = ours(sonic_db_config, "bgpmon")
    assert out[0] == ("printable", "*4\\r\\n$4\\r\\nHSET\\r\\n$26\\r\\nNEIGH_STATE_TABLE|10.0.0.1\\r\\n$5\\r\\nstate"
                                   "\\r\\n$11\\r\\nEstablished\\r\\n")
    assert "$5\\r\\nextra\\r\\n$3\\r\\nx y" in out[1][1]  # a map's fields in byte order, a value with a space whole
    assert out[3:] == [("queued", None, 1), ("error", "RuntimeError"), ("size", 0), ("error", "ValueError"),
                       ("error", "ValueError"), ("escaped", "*3\\r\\n$3\\r\\nSET\\r\\n$4\\r\\na\\\\b\\x01\\r\\n"
                                                            "$3\\r\\n\\xC3\\xA9\\t\\r\\n")]
    assert state() == {"STATE_DB/NEIGH_STATE_TABLE|10.0.0.2": {"extra": "x y", "state": "Idle"},
                       "STATE_DB/NEIGH_STATE_TABLE|10.0.0.4": {"state": "Active"}}


def test_transaction(sonic_db_config: Path) -> None:
    assert ours(sonic_db_config, "transaction") == [("exec", True), ("replies", True, True, None),
                                                    ("error", "RuntimeError")]


def test_portstat_counters_with_a_gearbox(sonic_db_config: Path) -> None:
    rows = {(r[0], r[1]): r[2:] for r in ours(sonic_db_config, "portstat") if len(r) == 7}
    union = rows[("UNION", "Ethernet4")]
    fields = dict(union[0][1])
    # 7 + the system side's OUT_ERRORS (10 + 27) + the line side's IN_ERRORS (100 + 26)
    assert fields["SAI_PORT_STAT_IF_IN_ERRORS"] == "170" and union[1] == [True, "170"]
    assert fields["SAI_PORT_STAT_IF_IN_OCTETS"] == "1.2345678901235e+17"  # as Lua's tostring prints it
    assert rows[("UNION", "Ethernet0")][1] == [True, "7"]
    assert rows[("UNION", "Ethernet0")][2] == [True, "123456789012345678"]
    assert rows[("UNION", "Ethernet8")] == ([False, ()], [False, ""], [False, ""], [False, ""], (-1, ""))
    assert rows[("LINESIDE", "Ethernet4")][1] == [True, "126"]
    assert rows[("LINESIDE", "Ethernet4")][4] == (10, "oid:0x22")
    assert rows[("SYSTEMSIDE", "Ethernet0")][0] == [False, ()]


def test_events_publisher_sends_nothing_and_says_so(sonic_db_config: Path) -> None:
    assert ours(sonic_db_config, "events") == [("published", 0, 0), ("no handle", -1)]


def test_cfg_schema_reads_the_tables_of_a_yang_module() -> None:
    text = """
    module sonic-x { // container NOT_A_TABLE {
        description "container QUOTED { }";
        container sonic-x {
            container X_TABLE { list X_LIST { key "name"; leaf name { type string; } container inner { } } }
            /* container COMMENTED { } */
            container "Y-TABLE" { }
        }
    }"""
    assert gen_cfg_schema.tables(text) == ["X_TABLE", "Y-TABLE"]
    assert ours_module.CFG_DEVICE_METADATA_TABLE_NAME == "DEVICE_METADATA"
    assert ours_module.CFG_FLEX_COUNTER_TABLE_NAME == "FLEX_COUNTER_TABLE"
    assert ours_module.CFG_PORT_CABLE_LEN_TABLE_NAME == "CABLE_LENGTH"  # schema.h's own name stays


def test_arguments_the_binding_refuses_are_refused(sonic_db_config: Path) -> None:
    out = ours(sonic_db_config, "arguments")
    assert out[:5] == [("init", True, "1"), ("set", True, True, "1"), ("set", False, True, "0"), ("set", 7, True, "7"),
                       ("set", "x", True, "x")]
    overloaded = "Wrong number or type of arguments for overloaded function 'DBConnector_set'."
    assert out[5:9] == [("error", "TypeError", overloaded),
                        ("error", "ValueError", "invalid null reference in method 'DBConnector_set', argument 3 of "
                                                "type 'std::string const &'"),
                        ("error", "ValueError", "invalid null reference in method 'DBConnector_set', argument 2 of "
                                                "type 'std::string const &'"),
                        ("error", "TypeError", overloaded)]
    assert out[9] == ("error", "TypeError", "in method 'DBConnector_hset', argument 4 of type 'std::string const &'")
    refused = ["ValueError", "TypeError", "TypeError", "TypeError", "ValueError", "TypeError", "TypeError",
               "ValueError"]
    assert [r[:2] for r in out[10:]] == [("error", kind) for kind in refused]
    assert state() == {}  # nothing refused reached Redis


def test_featured_finds_its_subscribers_again_by_fd(sonic_db_config: Path) -> None:
    out = ours(sonic_db_config, "featured")
    assert sorted(out[:2]) == [("FEATURE", "lldp", "SET", (("state", "enabled"),)),  # in Redis's KEYS order
                               ("FEATURE", "snmp", "SET", (("state", "enabled"),))]
    assert out[2:] == [("timeout", 2), ("FEATURE", "lldp", "SET", (("state", "disabled"),)),
                       ("PORT_TABLE", "PortInitDone", "SET", (("lanes", "0"),)),
                       ("FEATURE", "bgp", "SET", (("state", "enabled"),)), ("timeout", 2), ("batch", 128, 128)]
    assert state() == {"STATE_DB/FEATURE|snmp": {"state": "enabled"}, "STATE_DB/FEATURE|lldp": {"state": "disabled"},
                       "STATE_DB/FEATURE|bgp": {"state": "enabled"}}


def test_cfg_schema_reads_the_models_rendered_from_templates(tmp_path: Path) -> None:
    """An image's yang-models holds sonic-acl and sonic-policer rendered from yang-templates with
    yang_model_type="py" (caclmgrd subscribes to CFG_ACL_TABLE_TABLE_NAME and CFG_ACL_RULE_TABLE_NAME)."""
    (tmp_path / "yang-models").mkdir()
    (tmp_path / "yang-templates").mkdir()
    (tmp_path / "yang-models" / "sonic-x.yang").write_text("module sonic-x { container sonic-x { container X { } } }")
    (tmp_path / "yang-templates" / "sonic-acl.yang.j2").write_text(
        '{% if yang_model_type == "cvl" %}\nmodule sonic-acl-cvl {\n{% else %}\nmodule sonic-acl {\n{% endif %}\n'
        '  container sonic-acl { container ACL_RULE { } container ACL_TABLE { } }\n'
        '  {% if yang_model_type == "cvl" %} container CVL_ONLY { } {% endif %}\n}\n')
    assert gen_cfg_schema.table_names(tmp_path / "yang-models") == ["ACL_RULE", "ACL_TABLE", "X"]
    (tmp_path / "yang-templates" / "sonic-y.yang.j2").write_text("module y { {{ other }} }")
    with pytest.raises(ValueError, match=r"sonic-y\.yang\.j2: a Jinja construct"):
        gen_cfg_schema.table_names(tmp_path / "yang-models")
    output = tmp_path / "o.py"
    assert gen_cfg_schema.main([str(tmp_path / "yang-models"), "--commit", "0", "--output", str(output)]) == 2
    assert ours_module.CFG_ACL_TABLE_TABLE_NAME == "ACL_TABLE" and ours_module.CFG_ACL_RULE_TABLE_NAME == "ACL_RULE"
    assert ours_module.CFG_POLICER_TABLE_NAME == "POLICER"


def test_cfg_schema_regenerates_from_sonic_yang_models(tmp_path: Path) -> None:
    import os

    from swssd.compat import cfg_schema

    models = os.environ.get("SONIC_YANG_MODELS")
    if not models:
        pytest.skip("regenerates cfg_schema.py from SONiC's YANG models: set $SONIC_YANG_MODELS to the "
                    "yang-models directory of a sonic-buildimage checkout (src/sonic-yang-models/yang-models)")
    out = tmp_path / "cfg_schema.py"
    assert gen_cfg_schema.main([models, "--commit", cfg_schema.CFG_SCHEMA_COMMIT, "--output", str(out)]) == 0
    assert out.read_text() == Path(cfg_schema.__file__).read_text()
