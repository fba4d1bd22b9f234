"""The one place that talks to tree-sitter-bash.

Parsers are not thread-safe, and the gate may decide from several threads (LSP handlers run in a
pool), so each thread gets its own parser; the language object is shared and immutable.
"""

from __future__ import annotations

import threading

import tree_sitter
import tree_sitter_bash

BASH = tree_sitter.Language(tree_sitter_bash.language())
_local = threading.local()


def parser() -> tree_sitter.Parser:
    p: tree_sitter.Parser | None = getattr(_local, "parser", None)
    if p is None:
        p = tree_sitter.Parser(BASH)
        _local.parser = p
    return p


def parse(source: bytes) -> tree_sitter.Tree:
    """Parse `source` as bash; errors show up as ERROR/MISSING nodes, never as exceptions."""
    return parser().parse(source)
