from collections.abc import Callable, Sequence

from ...fields import KeyOpFieldsValues

def init(change_type: type[KeyOpFieldsValues], set_op: str, del_op: str) -> None: ...
def init_send(address: int) -> None: ...
def read_single(data: bytes, head: bytes) -> KeyOpFieldsValues | None: ...
def send_one(
    head: bytes,
    fallback: Callable[[str, Sequence[tuple[str, str]]], bytes],
    socket: int,
    key: str,
    fvs: Sequence[tuple[str, str]],
) -> bytes | None: ...
