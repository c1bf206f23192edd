"""The binding's structured-events publisher API (events_init_publisher, event_publish,
events_deinit_publisher), as a publisher that sends nothing.

SONiC's C++ publisher sends each event over ZMQ to the eventd container, which swssd does not
provide; programs such as sonic-utilities' disk_check only publish and carry on whatever the result,
so here the calls check their arguments, log the event at debug level and return the C++ results
(0 published, -1 for a handle that is not a live publisher's). The subscriber side
(events_init_subscriber, event_receive) is not provided.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

_log = logging.getLogger("swssd.compat.events")


class EventPublisher:
    """The handle events_init_publisher returns (opaque to programs, as the binding's void *)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.live = True

    def __repr__(self) -> str:
        return f"EventPublisher({self.source!r})"


def events_init_publisher(event_source: str) -> EventPublisher:
    """A publisher for `event_source` (the YANG module name, e.g. "sonic-events-host")."""
    if not isinstance(event_source, str):
        raise TypeError(f"events_init_publisher: event_source must be str, not {type(event_source).__name__}")
    return EventPublisher(event_source)


def events_deinit_publisher(handle: EventPublisher | None) -> None:
    """End the publisher; later event_publish calls with it return -1."""
    if isinstance(handle, EventPublisher):
        handle.live = False


def event_publish(handle: EventPublisher | None, event_tag: str, params: Mapping[str, str] | None = None) -> int:
    """Publish `event_tag` with `params` (a FieldValueMap or dict): 0, or -1 for a handle that is
    not a live publisher's. Nothing leaves the process."""
    if not isinstance(handle, EventPublisher) or not handle.live:
        return -1
    _log.debug("event %s:%s %s (not sent: no events transport)", handle.source, event_tag, dict(params or {}))
    return 0
