"""A synchronous, blocking layer with the names, signatures and return shapes of sonic-swss-common's
Python binding (`swsscommon.swsscommon`), for SONiC programs written against it.

`swssd.compat.swsscommon` gathers the names; each concept lives in a module of its own. Nothing here
runs an event loop: every call is a blocking socket round trip, so the layer survives fork() and
signal handlers as the binding does. Key naming, separators, database_config.json parsing, typed
conversions, command packing and Lua scripts are swssd's own, shared with the asyncio library:
this layer imports the base modules, swssd.redis and swssd.channels, nothing else.
"""
