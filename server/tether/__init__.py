"""Tether: a safety layer between AI coding agents and the developer's editor."""

__version__ = "0.1.0"
__all__ = ["__version__"]
