"""Credentials and TLS: the password from a file, a systemd credential or the environment, never shown
(config repr, logs, errors, metrics, status, argv); URLs with reserved characters in the password;
TLS from [redis] with a private CA and client certificates; group/world-readable secrets and
unverified TLS warned about. Against a private redis-server whose default user is off and whose
only users have passwords (ACL), started here with the tests' own certificates."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
import redis

from daemon_harness import DaemonProcess, read_records, to_toml, wait_until
from swssd import DBConnector, ProducerStateTable, RedisAuthError, RedisUrlError
from swssd.errors import ConfigError
from swssd.orch.config_file import config_from_dict, load_config
from swssd.redis.credentials import CREDENTIAL_NAME, PASSWORD_ENV
from swssd.redis.embedded_redis import find_redis_server, free_port
from swssd.redis.redis_url import parse

CLI = [sys.executable, "-m", "swssd.cli"]
#: every character a URL reserves, and a marker no other text has
PASSWORD = "Pw/#?@%:" + secrets.token_hex(8)
ADMIN_PASSWORD = secrets.token_hex(12)
ORCH = {"plugin": "orch_plugins:RecordingOrch", "tables": [{"db": "APPL_DB", "table": "SEC_TABLE"}]}


def secret_forms() -> list[str]:
    """The password as it could leak: itself, percent-encoded, and its random part."""
    return [PASSWORD, quote(PASSWORD, safe=""), PASSWORD[-16:]]


def assert_no_secret(text: str, where: str) -> None:
    for form in secret_forms():
        assert form not in text, f"the password shows in {where}:\n{text[-2000:]}"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SWSSD_DB_CONFIG", PASSWORD_ENV, "CREDENTIALS_DIRECTORY")}
    env.update(extra)
    return env


def swssd(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=60,
                          env=env or clean_env())


# -- a private CA and a Redis with ACL users (and TLS) -----------------------------------------


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate, all signed by it."""
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=swssd test CA",
             "-keyout", d / "ca.key", "-out", d / "ca.pem")
    exts = {"server": "subjectAltName=IP:127.0.0.1,DNS:localhost", "client": "extendedKeyUsage=clientAuth"}
    for name, ext in exts.items():
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", d / f"{name}.key", "-out", d / f"{name}.csr")
        (d / f"{name}.ext").write_text(ext + "\n")
        _openssl("x509", "-req", "-in", d / f"{name}.csr", "-CA", d / "ca.pem", "-CAkey", d / "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", d / f"{name}.ext", "-out", d / f"{name}.pem")
    for key in d.glob("*.key"):
        key.chmod(0o600)
    return Pki(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key")


class AclRedis:
    """redis-server with the default user off: `swssd` (PASSWORD, all commands) and `admin`; TCP on
    `port`, TLS-only with client certificates when `pki` is given; admin() over the unix socket."""

    def __init__(self, directory: Path, pki: Pki | None = None) -> None:
        self.dir = directory
        self.port = free_port()
        self.tls = pki is not None
        self.unix_socket = str(directory / "redis.sock")
        digest = hashlib.sha256(PASSWORD.encode()).hexdigest()
        lines = [
            "bind 127.0.0.1", f"unixsocket {self.unix_socket}", "unixsocketperm 700", f"dir {directory}",
            'save ""', "appendonly no", "databases 16", "loglevel warning",
            "user default off",
            f"user admin on >{ADMIN_PASSWORD} ~* &* +@all",
            f"user swssd on #{digest} ~* &* +@all",
        ]
        if pki is None:
            lines.append(f"port {self.port}")
        else:
            lines += ["port 0", f"tls-port {self.port}", f"tls-cert-file {pki.server_cert}",
                      f"tls-key-file {pki.server_key}", f"tls-ca-cert-file {pki.ca}", "tls-auth-clients yes"]
        conf = directory / "redis.conf"
        conf.write_text("\n".join(lines) + "\n")
        conf.chmod(0o600)
        self.process = subprocess.Popen([find_redis_server(), str(conf)], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, start_new_session=True)
        if not wait_until(self._answers, 10):
            self.stop()
            err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
            if pki is not None and "tls" in err.lower():
                pytest.skip(f"redis-server without TLS support: {err.strip()[:200]}")
            raise AssertionError(f"redis-server did not start: {err}")

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            return True
        try:
            return bool(self.admin().ping())
        except redis.RedisError:
            return False

    def admin(self, db: int = 0) -> redis.Redis:
        return redis.Redis(unix_socket_path=self.unix_socket, username="admin", password=ADMIN_PASSWORD,
                           db=db, decode_responses=True)

    def database_config(self, path: Path) -> Path:
        """A database_config.json naming the TCP (or TLS) port only, so that port is what is used."""
        dbs = {"APPL_DB": (0, ":"), "CONFIG_DB": (4, "|"), "STATE_DB": (6, "|")}
        path.write_text(json.dumps({
            "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": self.port}},
            "DATABASES": {n: {"id": i, "separator": s, "instance": "redis"} for n, (i, s) in dbs.items()},
            "VERSION": "1.0",
        }))
        return path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        if self.process.stderr:
            self.process.stderr.close()


@pytest.fixture
def acl_redis(tmp_path: Path) -> Iterator[AclRedis]:
    (tmp_path / "redis").mkdir()
    server = AclRedis(tmp_path / "redis")
    yield server
    server.stop()


@pytest.fixture
def tls_redis(tmp_path: Path, pki: Pki) -> Iterator[AclRedis]:
    (tmp_path / "redis").mkdir()
    server = AclRedis(tmp_path / "redis", pki)
    yield server
    server.stop()


def write_secret(path: Path, text: str = PASSWORD, mode: int = 0o600) -> Path:
    path.write_text(text + "\n")
    path.chmod(mode)
    return path


def write_config(path: Path, redis_section: dict, record: Path, metrics_port: int | None = None) -> Path:
    doc = {
        "redis": redis_section,
        "logging": {"format": "json", "level": "info"},
        **({"metrics": {"enabled": True, "port": metrics_port}} if metrics_port else {}),
        "orchs": [{**ORCH, "options": {"record": str(record)}}],
    }
    path.write_text(to_toml(doc))
    path.chmod(0o600)
    return path


# -- the config: where the password comes from, and that it never shows -----------------------


def _redis(section: dict, path: str | None = None):
    return config_from_dict({"redis": section, "orchs": [ORCH]}, path).redis


def test_repr_and_str_of_the_config_never_show_the_password(tmp_path: Path) -> None:
    url = f"redis://swssd:{PASSWORD}@127.0.0.1:6379/0"
    for section in ({"url": "redis://127.0.0.1:6379", "password": PASSWORD},
                    {"password_file": str(write_secret(tmp_path / "pw"))}, {"url": url}):
        config = config_from_dict({"redis": section, "orchs": [ORCH]})
        assert config.redis.password is not None and config.redis.password.get_secret_value() == PASSWORD
        for text in (repr(config), str(config), repr(config.redis), config.model_dump_json(),
                     str(config.model_dump())):
            assert_no_secret(text, "the config's repr")
    assert config.redis.username == "swssd" and config.redis.url == "redis://127.0.0.1:6379/0"


def test_password_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """password_file / password / the URL's (one of them) > systemd credential > $SWSSD_REDIS_PASSWORD."""
    creds = tmp_path / "creds"
    creds.mkdir()
    monkeypatch.setenv(PASSWORD_ENV, "from-env")
    assert _redis({}).password.get_secret_value() == "from-env"
    assert _redis({}).password_source == f"${PASSWORD_ENV}"
    write_secret(creds / CREDENTIAL_NAME, "from-credential")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(creds))
    assert _redis({}).password.get_secret_value() == "from-credential"
    assert _redis({"password": "from-config"}).password.get_secret_value() == "from-config"
    write_secret(tmp_path / "pw", "from-file")
    cfg = tmp_path / "swssd.toml"
    got = _redis({"password_file": "pw"}, str(cfg))  # relative to the config's directory
    assert got.password.get_secret_value() == "from-file"
    assert got.password_source == f"password_file {tmp_path / 'pw'}"
    assert _redis({"url": "redis://:from-url@127.0.0.1"}).password.get_secret_value() == "from-url"
    monkeypatch.delenv("CREDENTIALS_DIRECTORY")
    monkeypatch.delenv(PASSWORD_ENV)
    assert _redis({}).password is None and _redis({}).password_source == ""


@pytest.mark.parametrize("section, field", [
    ({"password": "a", "password_file": "pw"}, "redis.password_file"),
    ({"url": "redis://:b@127.0.0.1", "password": "a"}, "redis.url"),
    ({"password_file": "missing"}, "redis.password_file"),
    ({"password_file": "empty"}, "redis.password_file"),
    ({"url": "redis://h?ssl_ca_certs=/x"}, "redis.url"),
    ({"tls": True, "ca_file": "missing.pem"}, "redis.ca_file"),
    ({"ca_file": "pw"}, "redis.ca_file"),
    ({"tls": True, "key_file": "pw"}, "redis.key_file"),
    ({"tls": True, "ca_file": "pw"}, "redis.ca_file"),
    ({"tls": True, "cert_file": "pw"}, "redis.cert_file"),
])
def test_credential_and_tls_config_errors_name_the_field(tmp_path: Path, section: dict, field: str) -> None:
    write_secret(tmp_path / "pw")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError) as exc:
        _redis(section, str(tmp_path / "swssd.toml"))
    assert exc.value.field == field
    assert_no_secret(str(exc.value), "the error")


# -- URLs --------------------------------------------------------------------------------------


def test_url_passwords_with_reserved_characters() -> None:
    for raw in ("a/b", "a#b", "a@b", "a?b", "a%zz", "a:b", PASSWORD):
        url = parse(f"redis://swssd:{raw}@127.0.0.1:6380/4")
        assert (url.password, url.username, url.host, url.port, url.db) == (raw, "swssd", "127.0.0.1", 6380, 4)
        assert parse(f"redis://swssd:{quote(raw, safe='')}@127.0.0.1:6380/4").password == raw
        assert raw not in repr(url) and "swssd" not in str(url)
    assert parse("unix://:p%2Fw@/run/redis.sock?db=3").password == "p/w"
    assert parse("unix:///run/redis.sock?password=p%40w").password == "p@w"


@pytest.mark.parametrize("url", [
    f"redis://swssd:{PASSWORD}@127.0.0.1:S{PASSWORD[-16:]}",          # the port is the secret
    f"redis://swssd:{PASSWORD}@127.0.0.1:6379/S{PASSWORD[-16:]}",     # the path too
    f"http://swssd:{PASSWORD}@127.0.0.1:6379",
    f"redis://swssd:{PASSWORD}@127.0.0.1:6379/0?bogus=1",
    f"redis://127.0.0.1:6379/0?socket_timeout=S{PASSWORD[-16:]}",
    "redis://127.0.0.1:6379/0?socket_timeout=inf",
    f"redis://127.0.0.1:6379/0?ssl_cert_reqs=S{PASSWORD[-16:]}",
    f"swssd:{PASSWORD}@127.0.0.1:6379",
], ids=lambda url: url.replace(PASSWORD, "PW").replace(PASSWORD[-16:], "PW"))  # stable: the same in every worker
def test_a_bad_url_is_one_line_with_exit_2_and_no_secret(tmp_path: Path, url: str) -> None:
    with pytest.raises(RedisUrlError) as exc:
        parse(url)
    assert_no_secret(str(exc.value), "the error")
    config = tmp_path / "swssd.toml"
    config.write_text(to_toml({"redis": {"url": url}, "orchs": [ORCH]}))
    config.chmod(0o600)
    for args in (("run", "--config", config), ("check", "--config", config),
                 ("dump", "--url", url), ("db", "--url", url, "APPL_DB", "ping")):
        out = swssd(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr
        assert_no_secret(out.stderr + out.stdout, f"swssd {args[0]}'s error")


async def test_from_url_with_a_raw_reserved_password(acl_redis: AclRedis) -> None:
    for password in (PASSWORD, quote(PASSWORD, safe="")):
        async with await DBConnector.from_url(f"redis://swssd:{password}@127.0.0.1:{acl_redis.port}/0") as db:
            assert await db.redis.acl_whoami() == "swssd"
    with pytest.raises(RedisAuthError) as exc:
        await DBConnector.from_url(f"redis://swssd:wrong{PASSWORD}@127.0.0.1:{acl_redis.port}/0")
    assert_no_secret(str(exc.value), "the error")


# -- warnings ----------------------------------------------------------------------------------


def test_warnings_for_exposed_secrets_and_unverified_tls(tmp_path: Path) -> None:
    cfg = tmp_path / "swssd.toml"
    cfg.write_text("")
    pw = write_secret(tmp_path / "pw", mode=0o640)
    cfg.chmod(0o644)
    [line] = _redis({"password_file": "pw"}, str(cfg)).warnings(str(cfg))  # no secret in the config: fine
    assert f"password_file {pw} is readable by group (mode 0640)" in line
    pw.chmod(0o600)
    assert _redis({"password_file": "pw"}, str(cfg)).warnings(str(cfg)) == []
    [line] = _redis({"password": "x"}, str(cfg)).warnings(str(cfg))
    assert f"config file {cfg} is readable by group/others (mode 0644) and holds the Redis password" in line
    cfg.chmod(0o666)
    [line] = _redis({}, str(cfg)).warnings(str(cfg))
    assert f"config file {cfg} is writable by group/others (mode 0666)" in line
    cfg.chmod(0o600)
    assert _redis({"password": "x"}, str(cfg)).warnings(str(cfg)) == []
    [line] = _redis({"tls": True, "tls_verify": False}).warnings(None)
    assert "TLS certificate verification is off ([redis] tls_verify = false)" in line
    [line] = _redis({"url": "rediss://127.0.0.1?ssl_cert_reqs=none"}).warnings(None)
    assert "ssl_cert_reqs=none" in line
    assert _redis({"url": "rediss://127.0.0.1"}).warnings(None) == []


def test_swssd_check_shows_the_warnings(tmp_path: Path) -> None:
    config = tmp_path / "swssd.toml"
    config.write_text(to_toml({"redis": {"url": "redis://127.0.0.1:6379", "password": PASSWORD}, "orchs": [ORCH]}))
    config.chmod(0o604)
    out = swssd("check", "--config", config, env=clean_env(PYTHONPATH=str(Path(__file__).parent)))
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stdout.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: config file {config} is readable by others (mode 0604) and holds the Redis "
                        "password: chmod 600 it (or 640 for a group the daemon runs in)"]
    assert_no_secret(out.stdout + out.stderr, "swssd check")


# -- the daemon and the tools, black box --------------------------------------------------------


def _deliver(daemon: DaemonProcess, config: Path, record: Path, env: dict[str, str]) -> None:
    """`swssd produce --config` writes a change, the daemon hands it to its plugin, `swssd dump`
    and `swssd db` (same --config) read it back."""
    out = swssd("produce", "--config", config, "--db", "APPL_DB", "--table", "SEC_TABLE",
                "set", "Ethernet0", "speed=100000", env=env)
    assert out.returncode == 0, out.stderr
    assert wait_until(lambda: len(read_records(record)) >= 1 or daemon.proc.poll() is not None, 30), \
        daemon.log_path.read_text()[-3000:]
    assert read_records(record) == [("SEC_TABLE", "Ethernet0", "SET", [("speed", "100000")])]
    out = swssd("dump", "--config", config, "--db", "APPL_DB", "--table", "SEC_TABLE", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"SEC_TABLE": {"Ethernet0": {"speed": "100000"}}}
    out = swssd("db", "--config", config, "APPL_DB", "acl", "whoami", env=env)
    assert (out.returncode, out.stdout.strip()) == (0, "swssd"), out.stderr
    assert_no_secret(out.stderr, "the tools' stderr")


def _check_nothing_leaks(daemon: DaemonProcess, config: Path, metrics_port: int, env: dict[str, str]) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as resp:
        assert_no_secret(resp.read().decode(), "the metrics page")
    status = swssd("status", "--config", config, env=env)
    assert status.returncode == 0, status.stdout + status.stderr
    assert_no_secret(status.stdout + status.stderr, "swssd status")
    cmdline = Path(f"/proc/{daemon.proc.pid}/cmdline").read_bytes().decode(errors="replace")
    assert "run" in cmdline
    assert_no_secret(cmdline, "the daemon's argv")
    assert daemon.stop() == 0
    log = daemon.log_path.read_text()
    assert_no_secret(log, "the daemon's log")
    return log


def _start(config: Path, tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> DaemonProcess:
    for name in (PASSWORD_ENV, "CREDENTIALS_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    daemon = DaemonProcess(config, tmp_path / "daemon.log")
    try:
        daemon.wait_ready()
    except BaseException:
        daemon.kill()
        raise
    return daemon


def test_daemon_and_tools_with_an_acl_user_and_a_password_file(
    acl_redis: AclRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, port = tmp_path / "record.jsonl", free_port()
    pw = write_secret(tmp_path / "redis-password", mode=0o644)
    config = write_config(tmp_path / "swssd.toml", {
        "database_config": str(acl_redis.database_config(tmp_path / "database_config.json")),
        "username": "swssd", "password_file": pw.name,
    }, record, port)
    daemon = _start(config, tmp_path, {}, monkeypatch)
    try:
        [source] = daemon.events("Redis password")
        assert source["source"] == f"password_file {pw}" and source["user"] == "swssd"
        warnings = [e["event"] for e in daemon.logs() if e.get("level") == "warning"]
        assert warnings == [f"[redis] password_file {pw} is readable by group/others (mode 0644): chmod 600 it"]
        _deliver(daemon, config, record, clean_env())
        assert {c["user"] for c in acl_redis.admin().client_list()} == {"swssd", "admin"}
        _check_nothing_leaks(daemon, config, port, clean_env())
    finally:
        daemon.kill()


@pytest.mark.parametrize("where", ["database_config", "url", "url-unverified"])
def test_daemon_and_tools_over_tls_with_client_certificates_and_a_systemd_credential(
    tls_redis: AclRedis, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """$CREDENTIALS_DIRECTORY/redis-password, as LoadCredential= gives it; TLS verified against the
    private CA (except where the URL turns it off, which warns once), the client certificate presented."""
    creds = tmp_path / "credentials"
    creds.mkdir(mode=0o700)
    write_secret(creds / CREDENTIAL_NAME, mode=0o400)
    record, port = tmp_path / "record.jsonl", free_port()
    tls = {"ca_file": str(pki.ca), "cert_file": str(pki.client_cert), "key_file": str(pki.client_key)}
    if where == "database_config":
        section = {"database_config": str(tls_redis.database_config(tmp_path / "database_config.json")),
                   "tls": True, **tls}
    elif where == "url":
        section = {"url": f"rediss://127.0.0.1:{tls_redis.port}", **tls}
    else:
        section = {"url": f"rediss://127.0.0.1:{tls_redis.port}?ssl_cert_reqs=none",
                   "cert_file": tls["cert_file"], "key_file": tls["key_file"]}
    config = write_config(tmp_path / "swssd.toml", {**section, "username": "swssd"}, record, port)
    env = {"CREDENTIALS_DIRECTORY": str(creds)}
    daemon = _start(config, tmp_path, env, monkeypatch)
    try:
        [source] = daemon.events("Redis password")
        assert source["source"] == f"systemd credential {CREDENTIAL_NAME}"
        _deliver(daemon, config, record, clean_env(**env))
        log = _check_nothing_leaks(daemon, config, port, clean_env(**env))
    finally:
        daemon.kill()
    warnings = [json.loads(line)["event"] for line in log.splitlines() if '"warning"' in line]
    if where == "url-unverified":
        assert len(warnings) == 1 and "TLS certificate verification is off" in warnings[0], warnings
    else:
        assert warnings == []


def test_tls_tools_by_url_options_and_the_password_from_the_environment(tls_redis: AclRedis, pki: Pki) -> None:
    """No --config: the URL's ssl_* options carry the TLS files, $SWSSD_REDIS_PASSWORD the password
    (nothing secret on the command line); a password in --url works but is warned about."""
    query = f"ssl_ca_certs={pki.ca}&ssl_certfile={pki.client_cert}&ssl_keyfile={pki.client_key}"
    url = f"rediss://swssd@127.0.0.1:{tls_redis.port}/0?{query}"
    out = swssd("db", "--url", url, "APPL_DB", "acl", "whoami", env=clean_env(**{PASSWORD_ENV: PASSWORD}))
    assert (out.returncode, out.stdout.strip(), out.stderr) == (0, "swssd", "")
    with_password = f"rediss://swssd:{quote(PASSWORD, safe='')}@127.0.0.1:{tls_redis.port}/0?{query}"
    out = swssd("db", "--url", with_password, "APPL_DB", "acl", "whoami")
    assert (out.returncode, out.stdout.strip()) == (0, "swssd"), out.stderr
    assert "the password in --url shows in the process list" in out.stderr
    assert_no_secret(out.stderr, "the warning")
    out = swssd("db", "--url", f"rediss://swssd@127.0.0.1:{tls_redis.port}/0?ssl_ca_certs={pki.ca}",
                "APPL_DB", "ping", env=clean_env(**{PASSWORD_ENV: PASSWORD}))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr  # no client certificate: refused
    assert_no_secret(out.stderr, "the error")


def test_wrong_password_is_one_line_without_the_secret(acl_redis: AclRedis, tmp_path: Path) -> None:
    db_config = acl_redis.database_config(tmp_path / "database_config.json")
    out = swssd("dump", "--db-config", db_config, env=clean_env(**{PASSWORD_ENV: "wrong" + PASSWORD}))
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert_no_secret(out.stderr, "the error")


async def test_library_connect_with_tls_options(tls_redis: AclRedis, pki: Pki, tmp_path: Path) -> None:
    """DBConnector.connect takes the same options the daemon builds from [redis]."""
    redis_cfg = load_config(write_config(tmp_path / "swssd.toml", {
        "database_config": str(tls_redis.database_config(tmp_path / "database_config.json")), "tls": True,
        "ca_file": str(pki.ca), "cert_file": str(pki.client_cert), "key_file": str(pki.client_key),
        "username": "swssd", "password": PASSWORD,
    }, tmp_path / "record")).redis
    async with await DBConnector.connect("APPL_DB", redis_cfg.database_config, **redis_cfg.client_options()) as db:
        await ProducerStateTable(db, "T").set("k", [("f", "v")])
        assert await db.redis.acl_whoami() == "swssd"
    assert tls_redis.admin().smembers("T_KEY_SET") == {"k"}


@pytest.mark.parametrize("problem", ["untrusted", "no-client-cert", "wrong-password"])
def test_the_daemon_names_what_to_fix(
    tls_redis: AclRedis, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, problem: str
) -> None:
    """A server certificate not signed by ca_file, a missing client certificate, a refused password:
    one error line naming the setting to fix (not only "waiting for Redis"), the secret in no line."""
    section = {"database_config": str(tls_redis.database_config(tmp_path / "database_config.json")),
               "tls": True, "username": "swssd", "ca_file": str(pki.ca),
               "cert_file": str(pki.client_cert), "key_file": str(pki.client_key)}
    password, expected = PASSWORD, "wrong"
    if problem == "untrusted":
        section["ca_file"], expected = str(pki.client_cert), "set [redis] ca_file"
    elif problem == "no-client-cert":
        del section["cert_file"], section["key_file"]
        expected = "set [redis] cert_file and key_file"
    else:
        password, expected = "wrong" + PASSWORD, "Redis refused the credentials"
    config = write_config(tmp_path / "swssd.toml", section, tmp_path / "record.jsonl")
    monkeypatch.setenv(PASSWORD_ENV, password)
    daemon = DaemonProcess(config, tmp_path / "daemon.log")
    try:
        def errors() -> list[str]:
            return [e["event"] for e in daemon.logs() if e.get("level") == "error"]

        assert wait_until(lambda: errors() or daemon.proc.poll() is not None, 20), daemon.log_path.read_text()
        assert len(errors()) == 1 and expected in errors()[0], daemon.log_path.read_text()[-3000:]
        assert not daemon.events("ready")
        assert daemon.stop() == 0
        assert_no_secret(daemon.log_path.read_text(), "the daemon's log")
    finally:
        daemon.kill()
