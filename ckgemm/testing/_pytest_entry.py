"""The ``pytest11`` entry point ``ckgemm``: it loads ``ckgemm.testing.pytest_plugin`` under that module's own name
(pytest reads a plugin module's ``pytest_plugins`` as it reads a conftest's), so that ``-p
ckgemm.testing.pytest_plugin`` or ``pytest_plugins = ["ckgemm.testing.pytest_plugin"]`` in a conftest (how the
plugin is loaded where ckgemm is only on ``PYTHONPATH``) finds it loaded, rather than registering the same module
a second time under another name, which pytest refuses. ``-p no:ckgemm`` keeps the entry point from loading it;
``-p no:ckgemm.testing.pytest_plugin`` keeps the module out however it is named."""
pytest_plugins = ["ckgemm.testing.pytest_plugin"]
