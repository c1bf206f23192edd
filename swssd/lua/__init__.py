"""The Lua scripts of sonic-swss-common, byte for byte, and how they are run.

The files beside this module are the wire protocol: their SHA1 is what a C++ peer's
EVALSHA names, so they are read as bytes and never reformatted. The `*_tracked` and `*_reliable`
files are swssd's own variants (the daemon's pops), the `*_fast` files swssd's opt-in variants
with the C++ scripts' effect on Redis in fewer commands (`fast_scripts=True`), `instance_lease`
and `inflight_clear` are the daemon's own; every other file is the C++ library's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources import files


@dataclass(frozen=True, slots=True)
class Script:
    """A Lua script with the SHA1 that EVALSHA uses to name it."""

    name: str
    source: bytes
    sha: str

    @classmethod
    def from_package(cls, name: str) -> Script:
        source = files(__name__).joinpath(f"{name}.lua").read_bytes()
        return cls(name, source, hashlib.sha1(source).hexdigest())


PST_SET = Script.from_package("producer_state_table_set")
PST_DEL = Script.from_package("producer_state_table_del")
PST_BATCHED_SET = Script.from_package("producer_state_table_batched_set")
PST_SET_FAST = Script.from_package("producer_state_table_set_fast")
PST_BATCHED_SET_FAST = Script.from_package("producer_state_table_batched_set_fast")
PST_SETS_FAST = Script.from_package("producer_state_table_sets_fast")
PST_BATCHED_DEL = Script.from_package("producer_state_table_batched_del")
PST_CLEAR = Script.from_package("producer_state_table_clear")
PST_APPLY_VIEW = Script.from_package("producer_state_table_apply_view")
CST_POPS = Script.from_package("consumer_state_table_pops")
CST_POPS_TRACKED = Script.from_package("consumer_state_table_pops_tracked")
CST_POPS_RELIABLE = Script.from_package("consumer_state_table_pops_reliable")
CST_POPS_FAST = Script.from_package("consumer_state_table_pops_fast")
PT_ENQUEUE = Script.from_package("producer_table_enqueue")
CT_POPS = Script.from_package("consumer_table_pops")
CT_POPS_RELIABLE = Script.from_package("consumer_table_pops_reliable")
CT_POPS_FAST = Script.from_package("consumer_table_pops_fast")
TABLE_DUMP = Script.from_package("table_dump")
INSTANCE_LEASE = Script.from_package("instance_lease")
INFLIGHT_CLEAR = Script.from_package("inflight_clear")

ALL_SCRIPTS = (
    PST_SET,
    PST_DEL,
    PST_BATCHED_SET,
    PST_SET_FAST,
    PST_BATCHED_SET_FAST,
    PST_SETS_FAST,
    PST_BATCHED_DEL,
    PST_CLEAR,
    PST_APPLY_VIEW,
    CST_POPS,
    CST_POPS_TRACKED,
    CST_POPS_RELIABLE,
    CST_POPS_FAST,
    PT_ENQUEUE,
    CT_POPS,
    CT_POPS_RELIABLE,
    CT_POPS_FAST,
    TABLE_DUMP,
    INSTANCE_LEASE,
    INFLIGHT_CLEAR,
)
