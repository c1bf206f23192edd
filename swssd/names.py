"""Table names the daemon and the tools accept.

The library classes take any name, as the C++ library does. The daemon and the tools turn a name
into SCAN patterns and keyspace subscriptions (`TABLE<sep>*`), so a glob character in it would
match other tables (`PORT*` reads PORT_TABLE's entries); a separator would make the table's keys
ambiguous; whitespace and control characters are a typo or an attack, never a SONiC table.
"""

from __future__ import annotations

import unicodedata

from .errors import InvalidTableNameError

#: Characters Redis glob patterns (KEYS, SCAN MATCH, PSUBSCRIBE) give a meaning to.
GLOB_CHARACTERS = "*?[]\\"
#: The two table/key separators SONiC databases use.
SEPARATORS = ":|"


def table_name_problem(name: str) -> str | None:
    """Why `name` cannot name a table for the daemon or the tools; None when it can."""
    if not name:
        return "is empty"
    for ch in name:
        if ch in GLOB_CHARACTERS:
            return f"contains the glob character {ch!r}, which would match other tables' keys"
        if ch in SEPARATORS:
            return f"contains {ch!r}, a database separator between table and key"
        if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf"):
            return f"contains the whitespace or control character {ch!r}"
    return None


def shown(name: str, limit: int = 64) -> str:
    """`name` quoted for an error line: control characters escaped, at most `limit` characters."""
    more = len(name) - limit
    return repr(name[:limit]) + (f"...({more} more)" if more > 0 else "")


def check_table_name(name: str, where: str) -> str:
    """`name`, or InvalidTableNameError naming `where` it came from (an option, a file line)."""
    problem = table_name_problem(name)
    if problem is not None:
        raise InvalidTableNameError(f"{where}: table name {shown(name)} {problem}")
    return name
