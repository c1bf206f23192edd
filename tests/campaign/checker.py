"""What the campaign checks, channel by channel, against what was written (the model):

- state and queue tables (at-least-once): the handlers' folded view equals the producers' truth
  (nothing lost, no stale field or key after a DEL, nothing mismatched); the Redis table of the
  state table equals it too.
- subscriber table: the last daemon process's view (each SET the whole entry; a start delivers
  every existing entry, no DEL for what was deleted while no daemon ran) equals what Redis holds.
- every kind: no handled value that was never written for that key and field; within one daemon
  process, no field's value older than one already handled (nothing reordered).
- notification and zmq (at-most-once): no value handled twice, and the probes sent after the
  faults arrived (the channel is not deaf); no zmq change for the daemon's own table dropped as
  unrouted (the runner reads that from the daemon's log, as it reads set-aside lines: nothing
  may be set aside).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from daemon_harness import Record

Entry = dict[str, str]
View = dict[str, Entry]


@dataclass
class Model:
    """What the producers wrote, per table: the truth now and every value ever written."""

    truth: dict[str, View] = field(default_factory=dict)
    written: dict[str, dict[tuple[str, str], set[str]]] = field(default_factory=dict)
    changes: int = 0

    def write(self, table: str, key: str, fvs: Iterable[tuple[str, str]], replace: bool = False) -> None:
        entry = self.truth.setdefault(table, {})
        if replace:
            entry[key] = {}
        target = entry.setdefault(key, {})
        seen = self.written.setdefault(table, {})
        for f, v in fvs:
            target[f] = v
            seen.setdefault((key, f), set()).add(v)
        self.changes += 1

    def delete(self, table: str, key: str) -> None:
        self.truth.setdefault(table, {}).pop(key, None)
        self.changes += 1

    def was_written(self, table: str, key: str, f: str, v: str) -> bool:
        return v in self.written.get(table, {}).get((key, f), ())


def fold(records: Iterable[Record], replace: bool) -> View:
    """The consumer-side table the handled tasks describe: SET merges fields (a subscriber's
    replaces the entry), DEL removes."""
    view: View = {}
    for _, key, op, fvs in records:
        if op == "DEL":
            view.pop(key, None)
        elif replace:
            view[key] = dict(fvs)
        else:
            view.setdefault(key, {}).update(fvs)
    return view


def seq(value: str) -> int:
    return int(value[1:]) if value[:1] == "v" and value[1:].isdigit() else -1


def compare(kind: str, table: str, view: View, expected: View) -> list[str]:
    lost = sorted(k for k in expected if k not in view)
    extra = sorted(k for k in view if k not in expected)
    wrong = sorted(k for k in expected if k in view and view[k] != expected[k])
    out = []
    if lost:
        out.append(f"{kind} {table}: {len(lost)} keys lost, e.g. {lost[0]} = {expected[lost[0]]}")
    if extra:
        out.append(f"{kind} {table}: {len(extra)} keys stale after DEL, e.g. {extra[0]} = {view[extra[0]]}")
    if wrong:
        k = wrong[0]
        out.append(f"{kind} {table}: {len(wrong)} entries mismatched, e.g. {k}: handled {view[k]} != {expected[k]}")
    return out


def check_values(kind: str, table: str, processes: list[list[Record]], model: Model,
                 at_most_once: bool) -> list[str]:
    """No value never written; per process, per key and field, no older value after a newer one;
    at most once: no value handled twice."""
    out: list[str] = []
    unknown, backwards = [], []
    counts: Counter[tuple[str, str, str]] = Counter()
    for records in processes:
        last: dict[tuple[str, str], int] = {}
        for _, key, _op, fvs in records:
            for f, v in fvs:
                if not model.was_written(table, key, f, v):
                    unknown.append(f"{key} {f}={v}")
                counts[(key, f, v)] += 1
                s = seq(v)
                if s < last.get((key, f), -1):
                    backwards.append(f"{key} {f}: v{s} after v{last[(key, f)]}")
                last[(key, f)] = max(s, last.get((key, f), -1))
    if unknown:
        out.append(f"{kind} {table}: {len(unknown)} values never written, e.g. {unknown[0]}")
    if backwards:
        out.append(f"{kind} {table}: {len(backwards)} values older than one handled before, e.g. {backwards[0]}")
    if at_most_once:
        twice = [k for k, n in counts.items() if n > 1]
        if twice:
            out.append(f"{kind} {table}: {len(twice)} values handled more than once, e.g. {twice[0]}")
    return out
