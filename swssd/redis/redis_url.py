"""Redis URLs (redis://, rediss://, unix://) parsed by swssd itself, so that a password with reserved
characters works and no error ever echoes a part of the URL that may hold a secret.

urllib (and redis-py, which uses it) ends the credentials at the first `/`, `?` or `#`: a password
such as `a/b#c` then becomes a port or a path, and the error quotes it ("Port could not be cast to
integer value as 'a'"). Here the credentials end at the LAST `@` of the URL, so `/ # ? @ %` may stand
in a password as they are (an `@` after the credentials, in a query value, must be written `%40`).
Percent escapes (`%2F`, `%40`, `%25`, ...) are decoded, as the URL standard wants.

Query options are checked against the ones swssd passes on; an unknown one is a RedisUrlError naming
the option (never its value), not a TypeError when the first connection is made.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

from redis.asyncio.connection import (
    URL_QUERY_ARGUMENT_PARSERS,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)

from ..errors import RedisUrlError

SCHEMES = ("redis", "rediss", "unix")

#: Query options that only a TLS (rediss://) connection takes.
TLS_OPTIONS = frozenset({
    "ssl_cert_reqs", "ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile", "ssl_check_hostname",
    "ssl_min_version", "ssl_ciphers",
})
#: Query options a URL may carry. `protocol` is left out (RESP3 replies are not what swssd parses),
#: and so is ssl_password: a secret in the URL would stay in the config's URL.
OPTIONS = frozenset({
    "db", "username", "password", "client_name", "socket_timeout", "socket_connect_timeout",
    "socket_keepalive", "socket_read_size", "health_check_interval", "retry_on_timeout", "max_connections",
}) | TLS_OPTIONS
_CERT_REQS = ("none", "optional", "required")
_OPTION_NAME = re.compile(r"[A-Za-z0-9_]{1,40}")
_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]*")


@dataclass(frozen=True)
class RedisUrl:
    """A parsed Redis URL. `password` is the decoded secret; str() and repr() leave it out."""

    scheme: str
    host: str = ""
    port: int | None = None
    #: the unix socket's path (unix://), else ""
    path: str = ""
    db: int | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    #: the query options, decoded and typed as redis-py takes them
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def tls(self) -> bool:
        return self.scheme == "rediss"

    @property
    def cert_verification_off(self) -> bool:
        """Whether the URL turns certificate verification off (ssl_cert_reqs=none)."""
        return self.tls and self.options.get("ssl_cert_reqs") == "none"

    def without_credentials(self) -> str:
        """The URL with username and password left out (they go to the client on their own)."""
        if self.scheme == "unix":
            url = f"unix://{quote(self.path)}"
        else:
            host = self.host if ":" not in self.host else f"[{self.host}]"
            url = f"{self.scheme}://{host}" + (f":{self.port}" if self.port is not None else "")
            if self.db is not None:
                url += f"/{self.db}"
        query = [(k, v) for k, v in self._raw_options if k not in ("username", "password")]
        if self.scheme == "unix" and self.db is not None and "db" not in self.options:
            query.insert(0, ("db", str(self.db)))
        if query:
            url += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='/')}" for k, v in query)
        return url

    def __str__(self) -> str:
        return self.without_credentials()

    @property
    def _raw_options(self) -> list[tuple[str, str]]:
        return [(k, _option_text(v)) for k, v in self.options.items()]

    def connection_kwargs(self) -> dict[str, Any]:
        """What redis-py's ConnectionPool takes for this URL (credentials included)."""
        kwargs: dict[str, Any] = {k: v for k, v in self.options.items() if k not in ("username", "password")}
        if self.scheme == "unix":
            kwargs.update(connection_class=UnixDomainSocketConnection, path=self.path)
        else:
            kwargs.update(
                connection_class=SSLConnection if self.tls else Connection,
                host=self.host or "localhost", port=self.port or 6379,
            )
        if self.db is not None:
            kwargs["db"] = self.db
        if self.username is not None:
            kwargs["username"] = self.username
        if self.password is not None:
            kwargs["password"] = self.password
        return kwargs


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse(url: str, *, tls: bool = False) -> RedisUrl:
    """Parse a Redis URL; RedisUrlError (naming no secret) when it cannot be used. `tls` makes a
    redis:// URL a rediss:// one ([redis] tls = true); a unix socket stays as it is."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in SCHEMES:
        raise RedisUrlError("not a Redis URL: it must start with redis://, rediss:// or unix://")
    if tls and scheme == "redis":
        scheme = "rediss"
    username = password = None
    at = rest.rfind("@")
    if at >= 0:
        userinfo, rest = rest[:at], rest[at + 1:]
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    rest = rest.partition("#")[0]
    location, _, query = rest.partition("?")
    options = _options(query, scheme)
    if "password" in options:
        if password is not None:
            raise RedisUrlError("the URL gives a password twice (before @ and as ?password=)")
        password = options.pop("password")
    if "username" in options:
        username = options.pop("username")
    db = options.pop("db", None)
    if scheme == "unix":
        if not location.startswith("/"):
            raise RedisUrlError("a unix:// URL takes no host: write unix:///path/to/redis.sock")
        return RedisUrl(scheme, path=unquote(location), db=db, username=username, password=password,
                        options=options)
    authority, slash, path = location.partition("/")
    host, port = _host_port(authority)
    if slash and path.strip("/"):
        if db is not None:
            raise RedisUrlError("the URL gives the database twice (as /N and as ?db=)")
        if not path.strip("/").isdigit():
            raise RedisUrlError("the URL's path must be a database number (/N)")
        db = int(path.strip("/"))
    return RedisUrl(scheme, host, port, "", db, username, password, options)


def _host_port(authority: str) -> tuple[str, int | None]:
    match = _HOST.match(authority)
    host = match.group(0) if match else ""
    tail = authority[len(host):]
    if tail and not tail.startswith(":"):
        raise RedisUrlError(
            "the URL's host is not valid (a password with reserved characters must be followed by @host)"
        )
    port: int | None = None
    if tail[1:]:
        if not tail[1:].isdigit() or not 0 < int(tail[1:]) < 65536:
            raise RedisUrlError("the URL's port is not a number from 1 to 65535")
        port = int(tail[1:])
    return unquote(host.strip("[]")), port


def _options(query: str, scheme: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise RedisUrlError("the URL's query is not name=value pairs joined by &") from None
    for name, value in pairs:
        if name not in OPTIONS:
            shown = repr(name) if _OPTION_NAME.fullmatch(name) else "with an invalid name"
            known = ", ".join(sorted(OPTIONS))
            raise RedisUrlError(f"unknown URL option {shown}; known options: {known}")
        if name in TLS_OPTIONS and scheme != "rediss":
            raise RedisUrlError(f"URL option {name!r} needs a rediss:// URL (or [redis] tls = true)")
        options[name] = _typed(name, value)
    return options


def _typed(name: str, value: str) -> Any:
    if name == "ssl_cert_reqs":
        if value.lower() not in _CERT_REQS:
            raise RedisUrlError(f"URL option 'ssl_cert_reqs' must be one of {', '.join(_CERT_REQS)}")
        return value.lower()
    parser = URL_QUERY_ARGUMENT_PARSERS.get(name)
    if parser is None:
        return value
    try:
        typed = parser(value)
    except (TypeError, ValueError):
        typed = None
    if typed is None or (isinstance(typed, float) and not 0 <= typed < math.inf):
        raise RedisUrlError(f"URL option {name!r} has a value that is not valid")
    return typed
