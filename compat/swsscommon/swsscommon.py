"""sonic-swss-common's `swsscommon.swsscommon`, served by swssd's compatible layer."""

from swssd.compat.swsscommon import *  # noqa: F403
