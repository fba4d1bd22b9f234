"""Internals of `tether.core.checkpoints`: the private store (`store`) and restoring files (`restore`).

Import the public names from `tether.core.checkpoints`.
"""
