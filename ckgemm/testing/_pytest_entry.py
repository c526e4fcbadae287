"""The ``pytest11`` entry point ``ckgemm``: it registers ``ckgemm.testing.pytest_plugin`` under that module's own
name, so that ``-p ckgemm.testing.pytest_plugin`` or ``pytest_plugins = ["ckgemm.testing.pytest_plugin"]`` in a
conftest (how the plugin is loaded where ckgemm is only on ``PYTHONPATH``) finds it loaded, rather than
registering the same module a second time under another name, which pytest refuses. ``-p no:ckgemm`` still
keeps the plugin out, as does ``-p no:ckgemm.testing.pytest_plugin``."""
from __future__ import annotations


def pytest_addhooks(pluginmanager):
    from . import pytest_plugin

    if not (pluginmanager.is_registered(pytest_plugin) or pluginmanager.is_blocked(pytest_plugin.__name__)):
        pluginmanager.register(pytest_plugin, pytest_plugin.__name__)
