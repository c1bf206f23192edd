"""The package's public names: every one in `__all__` is there, imported on first use."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import swssd


def test_every_public_name_is_the_object_its_module_defines() -> None:
    assert set(swssd.__all__) == set(swssd._EXPORTS)
    for name, module in swssd._EXPORTS.items():
        assert getattr(swssd, name) is getattr(importlib.import_module(module, "swssd"), name), name
    assert set(swssd.__all__) <= set(dir(swssd))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchTable'"):
        swssd.NoSuchTable  # noqa: B018
    with pytest.raises(ImportError):
        from swssd import NoSuchTable  # type: ignore[attr-defined]  # noqa: F401


def test_importing_the_package_or_the_replay_imports_no_redis_client() -> None:
    """The replay's start counts (issue 12): it needs neither redis-py nor pydantic."""
    probe = "import sys, swssd, swssd.replay.cli; print(sorted(m for m in ('redis', 'pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    used = "import sys; from swssd import ProducerStateTable; print('redis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", used], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
