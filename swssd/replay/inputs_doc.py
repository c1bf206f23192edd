"""Input rules shared by the command line (which must not import PySpark) and the reader."""

DEFAULT_HOST_PATTERN = r"([^/]+)/[^/]+$"

HOST_RULE = (
    "regular expression whose first group, found in a file's path, names the host of events "
    "that carry none (swss.rec lines, JSON records without 'host'); default: the parent "
    "directory's name, e.g. captures/sw-leaf1/swss.rec -> sw-leaf1. --host overrides both."
)
