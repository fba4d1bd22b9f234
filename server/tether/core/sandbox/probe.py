"""Which backends really work on this machine, and the choice `sandbox = "auto"` makes.

"Installed" is not "works": user namespaces may be disabled, firejail may lack its setuid bit,
Landlock may be compiled out. So each backend is asked to run a real command that writes inside
a scratch workspace and fails to write outside it; only a backend that passes is used. Answers are
cached for the life of the process (a probe costs 5–50 ms per backend).
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

from tether.core.config import SandboxSettings
from tether.core.sandbox.base import BackendStatus, Runner, RunRequest
from tether.errors import SandboxError, SandboxUnavailable

STRENGTH_ORDER = ("bubblewrap", "firejail", "landlock")
ALL_BACKENDS = (*STRENGTH_ORDER, "none")

_lock = threading.Lock()
_cache: dict[str, BackendStatus] = {}
_PROBE_SCRIPT = 'echo probe > "$1/written" && ! (: > /tether-sandbox-probe) 2>/dev/null && echo ok'


def make_runner(name: str) -> Runner:
    """Construct a backend's runner (may raise SandboxUnavailable when its binary is missing)."""
    if name == "bubblewrap":
        from tether.core.sandbox.bwrap import BubblewrapRunner

        return BubblewrapRunner()
    if name == "firejail":
        from tether.core.sandbox.firejail import FirejailRunner

        return FirejailRunner()
    if name == "landlock":
        from tether.core.sandbox.landlock import LandlockRunner

        return LandlockRunner()
    if name == "none":
        from tether.core.sandbox.none import NoSandboxRunner

        return NoSandboxRunner()
    raise SandboxUnavailable(f"unknown sandbox backend {name!r}: use one of {', '.join(ALL_BACKENDS)}")


def _version(runner: Runner) -> str | None:
    value = getattr(runner, "version", None)
    if value is None:
        abi = getattr(runner, "abi", None)
        return f"ABI {abi}" if abi is not None else None
    return str(value)


def _probe(name: str) -> BackendStatus:
    if name == "none":
        return BackendStatus(name, True, "no isolation: used only when the user config sets it")
    try:
        runner = make_runner(name)
    except SandboxUnavailable as exc:
        return BackendStatus(name, False, str(exc))
    with tempfile.TemporaryDirectory(prefix="tether-probe-") as tmp:
        ws = Path(tmp).resolve()
        request = RunRequest(
            argv=("bash", "--noprofile", "--norc", "-c", _PROBE_SCRIPT, "probe", str(ws)),
            script=None,
            cwd=ws,
            workspace=ws,
            timeout=20,
            max_output_bytes=4096,
        )
        try:
            result = runner.run(request)
        except SandboxError as exc:
            return BackendStatus(name, False, str(exc), _version(runner))
        written = (ws / "written").is_file()
    if os.path.exists("/tether-sandbox-probe"):
        os.unlink("/tether-sandbox-probe")
        return BackendStatus(name, False, "the root filesystem stayed writable", _version(runner))
    if result.exit_code != 0 or result.stdout.strip() != "ok" or not written:
        detail = (result.stderr.strip() or result.stdout.strip())[:300]
        return BackendStatus(
            name, False, f"test command failed (exit {result.exit_code}): {detail}", _version(runner)
        )
    return BackendStatus(name, True, f"works ({result.duration_ms} ms probe)", _version(runner))


def probe_backend(name: str, refresh: bool = False) -> BackendStatus:
    with _lock:
        if not refresh and name in _cache:
            return _cache[name]
    status = _probe(name)
    with _lock:
        _cache[name] = status
    return status


def probe_backends(refresh: bool = False) -> dict[str, BackendStatus]:
    """Status of every backend (probes all of them; `tether doctor` shows this)."""
    return {name: probe_backend(name, refresh) for name in ALL_BACKENDS}


def auto_choice(refresh: bool = False) -> str | None:
    """The strongest backend that works here, or None."""
    for name in STRENGTH_ORDER:
        if probe_backend(name, refresh).available:
            return name
    return None


def select_runner(settings: SandboxSettings) -> Runner:
    """The runner for `settings.backend`; fails closed (SandboxUnavailable) rather than run unconfined."""
    backend = settings.backend
    if backend == "none":
        return make_runner("none")
    if backend != "auto":
        status = probe_backend(backend)
        if not status.available:
            raise SandboxUnavailable(
                f"sandbox backend {backend!r} cannot run here: {status.reason}. "
                "Nothing was run. See `tether doctor` for what works on this machine."
            )
        return make_runner(backend)
    choice = auto_choice()
    if choice is None:
        reasons = "; ".join(f"{n}: {probe_backend(n).reason}" for n in STRENGTH_ORDER)
        raise SandboxUnavailable(
            f"no sandbox backend works here ({reasons}). Nothing was run. To run commands without "
            'isolation anyway, set `[sandbox] backend = "none"` in your user config.'
        )
    return make_runner(choice)
