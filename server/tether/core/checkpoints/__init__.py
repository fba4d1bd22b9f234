"""Checkpoints: snapshots of the whole working tree in a private git store, and rollback.

`snapshots` is the public `Checkpoints` store (create, list, rollback, maintenance); `store` finds and
prepares the private git directory, `restore` writes files back, `regenerated` names the ignored
build outputs left out. Import the public names from here.

The public names are loaded on first use (PEP 562): the policy, the secret mask and `tether check`
only need `regenerated`, and importing the store with it (GitPython and all) was a tenth of a cold start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.core.checkpoints.snapshots import MAINTENANCE_EVERY, Checkpoint, Checkpoints, RollbackPlan

__all__ = ["MAINTENANCE_EVERY", "Checkpoint", "Checkpoints", "RollbackPlan"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tether.core.checkpoints import snapshots

        return getattr(snapshots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
