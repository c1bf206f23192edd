"""The producer's encoder of one-change messages: every set() and delete() sends one, so this is
the producer's hot path, byte for byte serialize_with(head, [(key, op, fvs)]) (serializer.py).

Two ways, whichever is cheaper for the data:

- As text: when every string is ASCII and under 128 bytes and there are fewer than 126 fields
  (most changes), the whole message is built as one str, each length prefix taken from a table
  of latin-1 strings that are ASCII there: one join, one check, one encode (0.5 us for 4 fields
  whose values differ per key, against 0.75 for encoding and packing each string).
- Kept: the encoded fields of the last few thousand distinct field lists (a route table repeats
  few next-hop groups); then only the key is encoded (0.28 us). When fewer than a third of the
  last JUDGE messages found their fields kept, nothing is looked up or kept for the next PAUSE
  (fields that never repeat would only pay for it).

Each producer table has its own encoder, so one table's data does not decide for another's, and
the per-message bookkeeping is on the instance, not in module globals (a module global written
on every message cost 6% of the encoding).
"""

from __future__ import annotations

from collections.abc import Sequence

from .serializer import (
    _COUNT_PAIRS,
    _TAIL_BYTES,
    _TAILS,
    MAX_MESSAGE_SIZE,
    SIZE_T,
    _pack,
    _too_large,
    _unpack_from,
    serialize_with,
)

#: the length prefix of a string of n < 128 bytes (ASCII text), and _COUNT_PAIRS, as latin-1 text
_LENGTHS = [_pack(n).decode("latin-1") for n in range(128)]
_COUNT_TEXTS = [c.decode("latin-1") for c in _COUNT_PAIRS]


class OneChangeEncoder:
    """Encodes the one-change messages of the table whose header() is `head`."""

    #: the kept encodings are judged every JUDGE messages, and rest for PAUSE when they failed
    JUDGE = 512
    PAUSE = 16384

    def __init__(self, head: bytes) -> None:
        self.head = head
        self._text = head.decode("latin-1")
        #: field/value pairs -> (pair count of a one-change message with them, their encoded tail)
        self.kept: dict[tuple[tuple[str, str], ...], tuple[bytes, bytes]] = {}
        self.tries = self.hits = 0
        #: messages left before the kept encodings are looked up again
        self.pause = 0

    def encode(self, key: str, fvs: Sequence[tuple[str, str]]) -> bytes:
        """The message of the change (key, fvs): a SET with fields, a DEL without. Raises
        MessageTooLargeError for MAX_MESSAGE_SIZE bytes or more."""
        pairs: tuple[tuple[str, str], ...] = ()
        if self.pause:
            self.pause -= 1
        elif fvs:  # a DEL has nothing to keep: it does not count for or against the kept ones
            known = None
            try:
                pairs = tuple(fvs)
                known = self.kept.get(pairs)
            except TypeError:  # pairs that are lists: not hashable, encoded each time
                pairs = ()
            self._judge(known is not None)
            if known is not None:
                return self._with_kept(key, fvs, known)
        lens = _LENGTHS
        n = len(fvs)
        try:
            parts = [lens[n + 2], self._text, lens[len(key)], key, _COUNT_TEXTS[n]]
            for field, value in fvs:
                parts += (lens[len(field)], field, lens[len(value)], value)
            text = "".join(parts)
        except IndexError:  # a string of 128 bytes or more, or 126 fields and more
            text = None
        if text is not None and text.isascii():
            data = text.encode()
        else:
            data = self._each(key, fvs)
        if pairs:
            self._keep(pairs, data)
        return data

    def _judge(self, hit: bool) -> None:
        self.tries += 1
        self.hits += hit
        if self.tries >= self.JUDGE:
            if self.hits * 3 < self.tries:
                self.pause = self.PAUSE
            self.tries = self.hits = 0

    def _with_kept(self, key: str, fvs: Sequence[tuple[str, str]], known: tuple[bytes, bytes]) -> bytes:
        try:
            k = key.encode()
        except UnicodeEncodeError:  # surrogate escapes
            return serialize_with(self.head, ((key, "", fvs),))
        data = b"".join((known[0], self.head, _pack(len(k)), k, known[1]))
        if len(data) >= MAX_MESSAGE_SIZE:
            _too_large(len(data))
        return data

    def _keep(self, pairs: tuple[tuple[str, str], ...], data: bytes) -> None:
        start = len(self.head) + 2 * SIZE_T + _unpack_from(data, len(self.head) + SIZE_T)[0]  # after the key
        if len(data) - start <= _TAIL_BYTES:
            if len(self.kept) >= _TAILS:
                self.kept.clear()
            self.kept[pairs] = (data[:SIZE_T], data[start:])

    def _each(self, key: str, fvs: Sequence[tuple[str, str]]) -> bytes:
        """The message for any strings: each encoded and packed by itself."""
        n = len(fvs)
        if n >= len(_COUNT_PAIRS):
            return serialize_with(self.head, ((key, "", fvs),))
        try:
            k = key.encode()
            parts = [_pack(n + 2), self.head, _pack(len(k)), k, _COUNT_PAIRS[n]]
            for field, value in fvs:
                f = field.encode()
                v = value.encode()
                parts += (_pack(len(f)), f, _pack(len(v)), v)
        except UnicodeEncodeError:  # surrogate escapes: bytes that were not UTF-8
            return serialize_with(self.head, ((key, "", fvs),))
        data = b"".join(parts)
        if len(data) >= MAX_MESSAGE_SIZE:
            _too_large(len(data))
        return data
