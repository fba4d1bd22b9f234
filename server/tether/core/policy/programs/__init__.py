"""The programs the policy knows: each one a schema check per mode, plus the blocked list.

Adding a program means adding an entry to one of the tables in this package; a program that is
not in any table is refused (`command.unknown`), whatever its name suggests.
"""

from __future__ import annotations

from tether.core.policy.programs.base import Program
from tether.core.policy.programs.blocked import BLOCKED, NEVER_IN_WORKSPACE
from tether.core.policy.programs.build import BUILD_PROGRAMS
from tether.core.policy.programs.files import FILE_PROGRAMS
from tether.core.policy.programs.git import GIT_PROGRAMS
from tether.core.policy.programs.search import SEARCH_PROGRAMS

PROGRAMS: dict[str, Program] = {
    p.name: p for p in (*FILE_PROGRAMS, *SEARCH_PROGRAMS, *GIT_PROGRAMS, *BUILD_PROGRAMS)
}

__all__ = ["BLOCKED", "NEVER_IN_WORKSPACE", "PROGRAMS", "Program"]
