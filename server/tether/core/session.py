"""One session: the effective configuration, the permission set and the gate, assembled in one place.

Why one place: when each face (CLI commands, the language server, the agent, the demo) assembled its
own configuration, they disagreed — `tether check` missed the PATH-tool protection that `tether run`
applied, and an editor setting could widen what the project config was rightly refused. Every face now
calls `open_session` and reaches tools only through the session's gate.

The layers, lowest first, and the one trust rule applied to all of them:

    built-in defaults → user config → project config (.tether/config.toml) → face overrides

A layer the repository controls (the project config; anything read from the workspace) may only
narrow: `core/config.py` ignores its widening keys with a warning. Face overrides (CLI flags, editor
`initializationOptions`) are the user's own choice made at the face, so they may set what they name —
except turning the sandbox off, which the user config must agree to. Editors that read settings a
repository can write (VS Code's workspace settings) must drop widening values before they send them;
the VS Code extension does. Last, the PATH's tools inside the workspace (an activated `.venv`) become
protected paths, so every face refuses to write them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.core.approvals import Approver
from tether.core.config import (
    MAX_COMMAND_TIMEOUT,
    SANDBOX_BACKENDS,
    EffectiveConfig,
    RuleReport,
    SandboxBackend,
    load_config,
    rule_reports,
    user_config_path,
)
from tether.core.gate import EventSink, Gate, GateResult
from tether.core.network.rules import NetworkSettings
from tether.core.permissions import Permissions, format_permissions, parse_permissions
from tether.core.policy import protected_write_paths
from tether.core.sandbox.env import path_tools_inside
from tether.errors import ConfigError, SandboxError

if TYPE_CHECKING:
    # Imported where they are used: `tether check` and the hooks open a session but never run a
    # command, and a one-shot command pays for every module it imports (bench_cold_start.py).
    from tether.core.sandbox import Runner, RunResult
    from tether.core.tools.base import DocumentSource, Tool


@dataclass(frozen=True)
class FaceOverrides:
    """What a face sets on top of the config files: CLI flags, or an editor's initializationOptions.

    `None` means "not given: the config files decide". `read_only` pins the session to no
    permissions and refuses every change (an editor's untrusted workspace).
    """

    permissions: str | None = None
    sandbox: SandboxBackend | None = None
    command_timeout: float | None = None
    model: str | None = None
    max_cost: float | None = None
    api_key: str | None = None
    read_only: bool = False
    outside_sandbox: bool = False
    """The face's agent runs commands itself, outside Tether's sandbox and network proxy (Claude
    Code's Bash under `tether hook claude-code`): the `[network]` allowlist cannot apply there, so
    the policy judges as if the network were off (curl and wget stay refused)."""


@dataclass
class Session:
    """One workspace's assembled session. Faces hold this and call `gate`, never tools directly."""

    workspace: Path
    config: EffectiveConfig
    gate: Gate
    warnings: tuple[str, ...] = ()

    @property
    def permissions(self) -> Permissions:
        return self.gate.permissions

    @property
    def read_only(self) -> bool:
        return self.gate.read_only

    def set_permissions(self, text: str | Permissions, *, source: str) -> GateResult:
        """Change the permission set (audited by the gate). Raises ConfigError for unknown words."""
        permissions = parse_permissions(text) if isinstance(text, str) else text
        return self.gate.set_permissions(permissions, source=source)

    def check_command(
        self, command: str, mode: str = "command", *, cwd: Path | None = None
    ) -> dict[str, Any]:
        """The policy's verdict for `command` in `mode`, with exactly the settings the gate uses."""
        return self.gate.check_command(command, mode, cwd=cwd)

    def explain(self, command: str, mode: str | None = None) -> dict[str, Any]:
        """Every layer of the decision on `command` (`tether explain`, LSP `tether.explain`)."""
        from tether.core.explain import explain

        return explain(self.gate, command, mode)

    def run_in_sandbox(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float | None = None,
        backend: SandboxBackend | None = None,
    ) -> tuple[RunResult, str]:
        """Run `argv` in the sandbox profile *without* the policy (`tether sandbox`, for diagnosis).

        The profile is the session's own: the same protected paths (PATH tools included) as every
        command the gate runs. Returns the result and the backend's name.
        """
        settings = self.config.sandbox
        if backend is not None:
            settings = replace(settings, backend=backend)
        limit = timeout if timeout is not None else settings.command_timeout
        if not 0 < limit <= MAX_COMMAND_TIMEOUT:
            raise ConfigError(f"--timeout must be between 1 and {MAX_COMMAND_TIMEOUT} seconds")
        from tether.core.sandbox import RunRequest, select_runner
        from tether.core.secret_files import find_secret_paths

        runner = self.gate.runner() if backend is None else select_runner(settings)
        request = RunRequest(
            argv=tuple(argv),
            script=None,
            cwd=cwd,
            workspace=self.workspace,
            timeout=limit,
            max_output_bytes=settings.max_output_bytes,
            protected=self.protected_paths(),
            env_passthrough=settings.env_passthrough,
            masked=find_secret_paths(
                self.workspace, self.config.policy.secrets, skip_dirs=self.config.checkpoints.regenerated
            ),
        )
        return runner.run(request), runner.name

    def protected_paths(self, *, strict: bool = True) -> tuple[Path, ...]:
        """Absolute paths no tool or command may write (the sandbox keeps them read-only), the
        `.git` of other repositories inside included (docs/sandbox.md). When an index cannot be
        read, `strict` refuses (to run a command); otherwise the policy's list alone (to show)."""
        from tether.core.sandbox.protected import protected_paths

        try:
            return protected_paths(self.workspace, self.config.policy)
        except SandboxError:
            if strict:
                raise
            return tuple(Path(p) for p in protected_write_paths(self.workspace, self.config.policy))

    def sandbox_report(self) -> dict[str, Any]:
        """`probe_sandboxes()` plus what this session's config chose and refuses to pass."""
        from tether.core.sandbox.env import rejected_passthrough

        return {
            **probe_sandboxes(),
            "configured": self.config.sandbox.backend,
            "rejected_env": rejected_passthrough(self.config.sandbox.env_passthrough),
        }

    def describe(self) -> dict[str, Any]:
        """The session as faces show it: permissions, sources, protections (for `tether doctor`)."""
        from tether.core.explain import sandbox_view
        from tether.core.network.rules import describe as network_description

        return {
            **self.gate.status(),
            "configSources": list(self.config.sources),
            "protected": [_relative(p, self.workspace) for p in self.protected_paths(strict=False)],
            "warnings": list(self.warnings),
            "workspaceMode": sandbox_view(self.gate, "workspace"),
            "secretPatterns": list(self.config.policy.secrets.patterns),
            "network": network_description(self.config.network),
        }


def check_rules(workspace: Path, *, user_path: Path | None = None) -> list[RuleReport]:
    """Every `[[rules]]` table of every layer checked on its own (`tether rules test`).

    Needs no session: a broken rule stops a session from opening, and this is how to find it.
    """
    return rule_reports(workspace, user_path=user_path)


def probe_sandboxes() -> dict[str, Any]:
    """Every backend probed with a real command (strongest first) and what `auto` picks here.

    Needs no session: `tether doctor` reports the machine even when a config file is broken.
    """
    from tether.core.sandbox import STRENGTH_ORDER, auto_choice, probe_backends

    statuses = probe_backends(refresh=True)
    return {
        "order": [*STRENGTH_ORDER, "none"],
        "backends": {
            name: {"available": s.available, "reason": s.reason, "version": s.version}
            for name, s in statuses.items()
        },
        "auto": auto_choice(),
    }


def assemble_config(
    workspace: Path, overrides: FaceOverrides = FaceOverrides(), *, user_path: Path | None = None
) -> tuple[EffectiveConfig, list[str]]:
    """Every layer folded into one effective configuration, with the warnings for what was ignored."""
    config = load_config(workspace, user_path=user_path)
    config, warnings = _apply_overrides(config, overrides)
    config = _protect_path_tools(workspace, config)
    return config, [*config.warnings, *warnings]


def open_session(
    workspace: Path,
    overrides: FaceOverrides = FaceOverrides(),
    *,
    user_path: Path | None = None,
    config: EffectiveConfig | None = None,
    approver: Approver | None = None,
    documents: DocumentSource | None = None,
    on_event: EventSink | None = None,
    tools: Sequence[Tool] | None = None,
    runner_factory: Callable[[], Runner] | None = None,
) -> Session:
    """Assemble the session for `workspace`. Raises ConfigError for an invalid config or override.

    `config` replaces the config *files* (tests, embedded uses); overrides and the PATH-tool
    protection are still applied to it, so no caller can skip a layer of the assembly. `approver` is
    how this face asks the person when the policy says *ask*; without one, ask means deny.
    """
    root = workspace.resolve()
    if config is None:
        effective, warnings = assemble_config(root, overrides, user_path=user_path)
    else:
        effective, warnings = _apply_overrides(config, overrides)
        effective = _protect_path_tools(root, effective)
        warnings = [*config.warnings, *warnings]
    text = overrides.permissions if overrides.permissions is not None else effective.permissions
    permissions = parse_permissions(text)
    gate = Gate(
        root,
        permissions,
        config=effective,
        read_only=overrides.read_only,
        approver=approver,
        documents=documents,
        on_event=on_event,
        tools=tools,
        runner_factory=runner_factory,
        rules_file=user_path if config is not None else (user_path or user_config_path()),
    )
    return Session(workspace=root, config=effective, gate=gate, warnings=tuple(warnings))


def _apply_overrides(config: EffectiveConfig, overrides: FaceOverrides) -> tuple[EffectiveConfig, list[str]]:
    """Fold a face's overrides in; returns the warnings for the ones ignored.

    A face's sandbox choice never turns the sandbox off on its own: `none` needs the user config to
    say `none` too, because editor settings can come from a file the repository ships.
    """
    warnings: list[str] = []
    sandbox, agent = config.sandbox, config.agent
    if overrides.sandbox is not None:
        if overrides.sandbox not in SANDBOX_BACKENDS:
            raise ConfigError(
                f"sandbox must be one of {', '.join(SANDBOX_BACKENDS)}, not {overrides.sandbox!r}"
            )
        if overrides.sandbox == "none" and sandbox.backend != "none":
            warnings.append(
                "sandbox 'none' from the editor is ignored: set `backend = \"none\"` under [sandbox] "
                "in the user config to run commands without isolation"
            )
        else:
            sandbox = replace(sandbox, backend=overrides.sandbox)
    if overrides.command_timeout is not None:
        if not 0 < overrides.command_timeout <= MAX_COMMAND_TIMEOUT:
            raise ConfigError(f"--timeout must be between 1 and {MAX_COMMAND_TIMEOUT} seconds")
        sandbox = replace(sandbox, command_timeout=overrides.command_timeout)
    if overrides.model is not None:
        agent = replace(agent, model=overrides.model)
    if overrides.max_cost is not None:
        agent = replace(agent, max_cost=overrides.max_cost)
    if overrides.api_key is not None:
        agent = replace(agent, api_key=overrides.api_key)
    permissions = config.permissions
    if overrides.permissions is not None:
        permissions = format_permissions(parse_permissions(overrides.permissions))
    network, policy = config.network, config.policy
    if overrides.outside_sandbox:
        network, policy = NetworkSettings(), replace(policy, network_enabled=False)
    changed = replace(
        config, sandbox=sandbox, agent=agent, permissions=permissions, network=network, policy=policy
    )
    return changed, warnings


def _protect_path_tools(workspace: Path, config: EffectiveConfig) -> EffectiveConfig:
    """Add the PATH's tools inside the workspace (an activated `.venv`) to the protected paths.

    Programs there run whenever the user types their names: a write by an edit tool, a redirect or
    a command would plant code the user runs later. Being in the policy's list, they are refused to
    every tool and kept read-only in the sandbox, like `.git/hooks`.
    """
    extra = tuple(p.relative_to(workspace).as_posix() for p in path_tools_inside(workspace))
    missing = tuple(p for p in extra if p not in config.policy.extra_protected)
    if not missing:
        return config
    policy = replace(config.policy, extra_protected=config.policy.extra_protected + missing)
    return replace(config, policy=policy)


def _relative(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)
