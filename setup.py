"""The one compiled part of the package: the event log's per-frame path (``mcp_server/_rows.c``).

Everything else is in ``pyproject.toml``; building needs a C compiler and the Python headers.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mcp_server._rows", ["mcp_server/_rows.c"], extra_compile_args=["-O2"])])
