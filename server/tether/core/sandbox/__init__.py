"""Run commands confined: read-only system, writable workspace, no network, no secrets, bounded.

    runner = select_runner(config.sandbox)          # raises SandboxUnavailable: fail closed
    result = runner.run(RunRequest(argv=("pytest", "-q"), script=None, cwd=ws, workspace=ws,
                                   timeout=30, max_output_bytes=500_000, protected=(ws / ".git",)))

Backends: bubblewrap (preferred), firejail, landlock, none (only when the user configured it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the type checker; at run time `__getattr__` below imports each on first use
    from tether.core.sandbox.base import NO_ISOLATION_WARNING as NO_ISOLATION_WARNING
    from tether.core.sandbox.base import BackendStatus as BackendStatus
    from tether.core.sandbox.base import Runner as Runner
    from tether.core.sandbox.base import RunRequest as RunRequest
    from tether.core.sandbox.base import RunResult as RunResult
    from tether.core.sandbox.env import hardened_git_env as hardened_git_env
    from tether.core.sandbox.env import sandbox_env as sandbox_env
    from tether.core.sandbox.fake import FakeRunner as FakeRunner
    from tether.core.sandbox.probe import ALL_BACKENDS as ALL_BACKENDS
    from tether.core.sandbox.probe import STRENGTH_ORDER as STRENGTH_ORDER
    from tether.core.sandbox.probe import auto_choice as auto_choice
    from tether.core.sandbox.probe import make_runner as make_runner
    from tether.core.sandbox.probe import probe_backend as probe_backend
    from tether.core.sandbox.probe import probe_backends as probe_backends
    from tether.core.sandbox.probe import select_runner as select_runner

_HOME = {
    "NO_ISOLATION_WARNING": "base",
    "BackendStatus": "base",
    "Runner": "base",
    "RunRequest": "base",
    "RunResult": "base",
    "hardened_git_env": "env",
    "sandbox_env": "env",
    "FakeRunner": "fake",
    "ALL_BACKENDS": "probe",
    "STRENGTH_ORDER": "probe",
    "auto_choice": "probe",
    "make_runner": "probe",
    "probe_backend": "probe",
    "probe_backends": "probe",
    "select_runner": "probe",
}
"""Where each public name lives (the imports above are the same names, for the type checker)."""


def __getattr__(name: str) -> Any:
    """Each name imported from its module on first use (PEP 562).

    Why: importing a submodule runs this file first, and `tether check` (one process per
    hook call of another agent) needs only the PATH helpers of `env`, not the backends, their
    probes and `subprocess`: eager imports here cost every such call about 8 ms.
    """
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
