"""Checkpoints: snapshots of the whole working tree in a private git store, and rollback.

`snapshots` is the public `Checkpoints` store (create, list, rollback, maintenance); `store` finds and
prepares the private git directory, `restore` writes files back, `regenerated` names the ignored
build outputs left out. Import the public names from here.
"""

from tether.core.checkpoints.snapshots import (
    MAINTENANCE_EVERY,
    Checkpoint,
    Checkpoints,
    RollbackPlan,
)

__all__ = ["MAINTENANCE_EVERY", "Checkpoint", "Checkpoints", "RollbackPlan"]
