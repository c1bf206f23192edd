"""The pending tasks of one consumed table, merged by orchagent's `Consumer::addToSync` rules.

Per key at most a DEL followed by a SET is pending:
- a SET for a key with nothing pending is added;
- a SET for a key with a pending SET is merged into it: each new field erases the old value of that
  field and is appended (orchagent moves a rewritten field to the end), new fields are appended;
- a SET for a key with only a DEL pending is added after the DEL;
- a DEL replaces whatever is pending for the key.

Each pending task carries its retry state (attempts, when it may run again), which a merge keeps,
and the oldest in-flight batch it holds changes of (`seq`; a merge keeps the older): the daemon's
reliable pop keeps every batch from that one on in Redis until the task is done (`low_water()`).
A task taken out to run stays counted until it is done() or put back.

Other kinds of tables merge differently (`Merge`): a subscriber table's SET is the whole entry,
so a newer SET replaces a pending one instead of merging fields into it (a field removed since
must not come back); notifications are events, each kept in its own slot, in arrival order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Literal, TypeAlias

from ..fields import DEL_COMMAND, SET_COMMAND, FieldValues, KeyOpFieldsValues


class Entry:
    """A pending task and its retry state."""

    __slots__ = ("attempts", "not_before", "reason", "retry_epoch", "seq", "slot", "task")

    def __init__(self, task: KeyOpFieldsValues, seq: int | None = None) -> None:
        self.task = task
        #: the oldest in-flight batch this task holds changes of (None: nothing in flight, e.g. reconcile)
        self.seq = seq
        #: where the map keeps it: the task's key, or a slot of its own when nothing merges
        self.slot: object = task.key
        #: failures (exceptions, time-outs) so far; Retry does not count
        self.attempts = 0
        #: loop time before which the task is not run again (backoff or retry interval)
        self.not_before = 0.0
        #: for a task that raised Retry: the Orch's data epoch then; new data makes it eligible
        self.retry_epoch: int | None = None
        #: why the task is waiting, for logs
        self.reason: str | None = None

    def __repr__(self) -> str:
        return f"Entry({self.task!r}, attempts={self.attempts})"


def merge_fields(old: FieldValues, new: FieldValues) -> FieldValues:
    """orchagent's SET+SET merge: each new pair removes that field from `old` and is appended."""
    fields = {f for f, _ in new}
    if len(fields) == len(new):
        return [fv for fv in old if fv[0] not in fields] + list(new)
    out = list(old)
    for field, value in new:  # a field repeated within `new`: apply one pair at a time
        out = [fv for fv in out if fv[0] != field]
        out.append((field, value))
    return out


Merge: TypeAlias = Literal["fields", "replace", "none"]
"""How a SET meets a pending SET of its key: fields merged (orchagent), the newer one replacing the
older (full entries), or no merging at all (every task in a slot of its own, in arrival order)."""


class PendingMap:
    """Pending tasks in arrival order of their keys (slots); `len()` counts tasks (at most two per
    key). With merge="none" every task has a slot of its own, so the order is the arrival order."""

    def __init__(self, merge: Merge = "fields") -> None:
        self.merge = merge
        self._keys: dict[object, list[Entry]] = {}
        self._count = 0
        self._slots = itertools.count()
        #: entries taken out to run and not yet done() or put back, in the order taken
        self._out: dict[Entry, None] = {}

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def snapshot(self) -> list[tuple[object, list[Entry]]]:
        """The keys with their pending lists, oldest key first. A list stays the key's own while
        the key has tasks; once emptied by take() it is dropped and new data starts a new one."""
        return list(self._keys.items())

    def entries_of(self, key: object) -> list[Entry]:
        return self._keys.get(key, [])

    def head(self, key: object) -> Entry | None:
        """The task of `key` that runs next (a DEL before a SET)."""
        entries = self._keys.get(key)
        return entries[0] if entries else None

    def tasks(self) -> list[KeyOpFieldsValues]:
        """Every pending task in order, as the handler would get them."""
        return [e.task for entries in self._keys.values() for e in entries]

    # -- adding -------------------------------------------------------------------------

    def add(self, task: KeyOpFieldsValues, seq: int | None = None) -> None:
        """Merge one newly popped task (of in-flight batch `seq`)."""
        self._add_entry(Entry(task, seq))

    def add_many(self, tasks: Iterable[KeyOpFieldsValues], seq: int | None = None) -> None:
        """Merge newly popped tasks, all of in-flight batch `seq`."""
        for task in tasks:
            self._add_entry(Entry(task, seq))

    def _add_entry(self, entry: Entry) -> None:
        if self.merge == "none":
            entry.slot = next(self._slots)
            self._keys[entry.slot] = [entry]
            self._count += 1
            return
        key = entry.task.key
        entries = self._keys.get(key)
        if entries is None:
            self._keys[key] = [entry]
            self._count += 1
        elif entry.task.op == DEL_COMMAND:
            self._count += 1 - len(entries)
            entry.seq = _older(entry.seq, *(e.seq for e in entries))
            entries[:] = [entry]
        else:
            last = entries[-1]
            if last.task.op == SET_COMMAND:
                fvs = entry.task.fvs if self.merge == "replace" else merge_fields(last.task.fvs, entry.task.fvs)
                last.task = KeyOpFieldsValues(key, SET_COMMAND, fvs)
                last.seq = _older(last.seq, entry.seq)
            else:
                entries.append(entry)
                self._count += 1

    # -- running ------------------------------------------------------------------------

    def take(self, key: object) -> Entry:
        """Remove the head task of `key` to run it; data arriving meanwhile starts a new list."""
        entries = self._keys[key]
        entry = entries.pop(0)
        if not entries:
            del self._keys[key]
        self._count -= 1
        self._out[entry] = None
        return entry

    def done(self, entry: Entry) -> None:
        """A taken task is finished (handled or given up): its in-flight batches may go."""
        self._out.pop(entry, None)

    def put_back(self, entry: Entry) -> None:
        """Return a task that must run again in front of whatever arrived for its key meanwhile,
        merging those later tasks into it as if they had arrived after it (as in orchagent, where
        a failed task simply stays in m_toSync). The key moves to the end of the order.
        """
        self._out.pop(entry, None)
        key = entry.slot
        later = self._keys.pop(key, [])
        self._count -= len(later)
        self._keys[key] = [entry]
        self._count += 1
        for e in later:
            self._add_entry(e)

    # -- what the in-flight record must keep --------------------------------------------

    def live(self) -> list[Entry]:
        """Every task not done: the taken ones first (they run before what is pending for their
        key), then the pending ones in order."""
        return [*self._out, *(e for entries in self._keys.values() for e in entries)]

    def low_water(self) -> int | None:
        """The oldest in-flight batch a task not done holds changes of; None when none does."""
        return min((e.seq for e in self.live() if e.seq is not None), default=None)

    def rebase(self, seq: int | None) -> None:
        """Every task not done now belongs to in-flight batch `seq` (a snapshot replaced the
        batches), or to none (None: the record that held them was lost)."""
        for entry in self.live():
            entry.seq = seq


def _older(*seqs: int | None) -> int | None:
    """The oldest of some in-flight batch numbers (None: no batch)."""
    return min((s for s in seqs if s is not None), default=None)
