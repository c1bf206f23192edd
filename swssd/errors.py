"""Exceptions raised by swssd, each carrying a message an operator can act on."""

from __future__ import annotations


class SwssdError(Exception):
    """Base class of every error swssd raises on purpose."""


class ConfigError(SwssdError, ValueError):
    """A configuration file is unreadable or invalid; names the file and the field."""

    def __init__(self, path: str | None, field: str | None, problem: str) -> None:
        self.path = path
        self.field = field
        self.problem = problem
        where = path or "<config>"
        if field:
            where = f"{where}: field '{field}'"
        super().__init__(f"{where}: {problem}")


class UnknownDatabaseError(SwssdError, LookupError):
    """A database name is not listed in database_config.json."""

    def __init__(self, name: str, known: list[str], path: str | None) -> None:
        self.name = name
        listed = ", ".join(sorted(known)) or "none"
        src = f" in {path}" if path else ""
        super().__init__(f"unknown database '{name}'{src}; known databases: {listed}")

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0])


class UnknownNamespaceError(SwssdError, LookupError):
    """A namespace (with its container, when given) not listed in database_global.json."""

    def __init__(self, namespace: str, container_name: str, known: list[str], path: str | None) -> None:
        self.namespace = namespace
        self.container_name = container_name
        asked = f"'{namespace}'" + (f" with container '{container_name}'" if container_name else "")
        listed = ", ".join(known) or "none"
        src = f" in {path}" if path else ""
        super().__init__(f"unknown namespace {asked}{src}; known namespaces: {listed}")

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0])


class InvalidSeparatorError(SwssdError, ValueError):
    """A table separator other than ':' or '|' (the only two the C++ library accepts)."""

    def __init__(self, separator: str) -> None:
        super().__init__(
            f"invalid table name separator {separator!r}: SONiC accepts only ':' or '|'"
        )


class InvalidTableNameError(SwssdError, ValueError):
    """A table name the daemon or a tool refuses (glob character, separator, whitespace, control)."""


class RedisUnreachableError(SwssdError, ConnectionError):
    """Redis could not be reached at the configured address."""

    def __init__(self, address: str, cause: BaseException) -> None:
        self.address = address
        reason = str(cause).rstrip(". ") or type(cause).__name__
        super().__init__(f"cannot reach Redis at {address}: {reason}; is redis-server running there?")


class RedisAuthError(RedisUnreachableError):
    """Redis answered but refused the user or the password (AUTH); retried like an unreachable Redis,
    since an operator may be fixing the ACL."""

    def __init__(self, address: str, cause: BaseException) -> None:
        self.address = address
        reason = str(cause).rstrip(". ") or type(cause).__name__
        ConnectionError.__init__(
            self, f"Redis at {address} refused the credentials: {reason}; check [redis] username and the "
            "password (password_file, password, the URL's, the systemd credential redis-password, "
            "$SWSSD_REDIS_PASSWORD)"
        )


class RedisUrlError(SwssdError, ValueError):
    """A Redis URL that cannot be used; the message never quotes the URL's credentials or netloc."""


class TempViewError(SwssdError, RuntimeError):
    """apply_temp_view() without a preceding create_temp_view()."""


class KeyspaceEventsOffError(SwssdError):
    """Redis does not publish the keyspace events a subscriber table follows (after a restart
    brought `notify-keyspace-events` back to its default, say): the table would be deaf."""
