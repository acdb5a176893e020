"""The built-in tools of `serve`, built once at start-up over the schema corpus."""

from __future__ import annotations

from collections.abc import Mapping

from ...core.settings import Settings
from ...execution.policy import Policy
from ...registry.corpus import Corpus, load_corpus
from ...registry.schemas import SchemaRegistry
from . import Tool
from .populate_backend import populate_backend_tool
from .schema_tools import corpus_tools
from .validation_tools import validation_tools

__all__ = ["builtin_tools"]


def builtin_tools(
    environ: Mapping[str, str], registry: SchemaRegistry, corpus: Corpus | None = None, policy: Policy | None = None
) -> list[Tool]:
    corpus = corpus or load_corpus(environ, registry)
    settings = Settings.from_env(environ)
    return [
        *corpus_tools(corpus),
        *validation_tools(corpus, settings.max_batch),
        populate_backend_tool(corpus, environ, policy),
    ]
