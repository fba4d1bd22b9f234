"""`tether explain`: every layer of one decision, so a person can see why and change it.

Why a function of its own: the verdict alone ("denied") is the most common complaint about agent
permission systems — which rule fired, from which file, and what would happen if it ran? This
assembles the answer from the same session the gate uses: the policy's verdict per segment with
the rule's source and config layer, the hooks that would run, the sandbox it would run in (what is
writable, read-only, hidden), and whether a checkpoint is taken. The CLI prints it, the LSP returns
it (`tether.explain`), the editors draw it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.core.checkpoints.regenerated import REGENERATED_DIRS
from tether.core.policy import decide, decide_argv
from tether.core.policy.ruleset import Rule, command_argvs, strictest
from tether.core.policy.types import MODES, Decision, Deny, Mode
from tether.core.secret_files import find_secret_paths

if TYPE_CHECKING:
    from tether.core.gate import Gate

LADDER: tuple[Mode, ...] = MODES


def explain(gate: Gate, command: str, mode: str | None = None) -> dict[str, Any]:
    """The explanation as one JSON object (docs/policy.md, "tether explain").

    Without `mode`, the command is judged as the bash tool judges it: the lowest mode that allows
    (or asks) is the one that counts, and `mode` in the answer names it.
    """
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    settings = gate.config.policy
    by_mode: dict[str, Decision] = {m: decide(command, m, gate.workspace, settings) for m in LADDER}
    chosen: str = mode or next((m for m in LADDER if by_mode[m].verdict != "deny"), "command")
    decision = by_mode[chosen]
    runs = decision.verdict != "deny"
    return {
        "command": command,
        "mode": chosen,
        "verdict": decision.verdict,
        "rule": decision.rule,
        "reason": decision.reason,
        "suggestion": decision.suggestion,
        "permissionNeeded": chosen if runs else None,
        "granted": runs and _granted(gate, chosen),
        "segments": _segments(gate, command, chosen, decision),
        "ask": [a.to_json() for a in decision.asks],
        "modes": {m: by_mode[m].verdict for m in LADDER},
        "sandbox": sandbox_view(gate, chosen) if runs else None,
        "hooks": _hooks(gate),
        "secrets": {
            "patterns": list(settings.secrets.patterns),
            "allowed": sorted(settings.secrets.allowed),
        },
        "checkpoint": runs and chosen != "read" and gate.config.checkpoints.enabled,
    }


def _granted(gate: Gate, mode: str) -> bool:
    perms = gate.permissions
    return bool(perms & {"read", "command"}) if mode == "read" else mode in perms


def _segments(gate: Gate, command: str, mode: str, decision: Decision) -> list[dict[str, Any]]:
    """Each simple command with its own verdict, rule and where the rule comes from."""
    settings = gate.config.policy
    try:
        argvs = [tuple(a) for a in command_argvs(command)]
    except (Deny, ValueError):
        argvs = []
    asked = {a.argv: a for a in decision.asks}
    out: list[dict[str, Any]] = []
    for argv in argvs or [tuple(s.argv) for s in decision.segments]:
        if not argv:
            continue
        if argv in asked:
            verdict, rule, reason = "ask", asked[argv].rule, asked[argv].reason
        elif len(argvs) > 1:  # the others' own verdicts: which segment denies, which are fine
            alone = decide_argv(list(argv), mode, gate.workspace, settings)  # type: ignore[arg-type]
            verdict, rule, reason = alone.verdict, alone.rule, alone.reason
        else:
            verdict, rule, reason = decision.verdict, decision.rule, decision.reason
        data_rule = strictest(settings.rules, argv)
        out.append(
            {
                "argv": list(argv),
                "verdict": verdict,
                "rule": rule,
                "reason": reason,
                **_source(data_rule if rule.startswith(("rule.", "allowed.user_rule")) else None),
            }
        )
    return out


def _source(rule: Rule | None) -> dict[str, Any]:
    if rule is None:
        return {"source": "built-in", "layer": "builtin"}
    return {"source": str(rule.source), "layer": rule.source.layer, "pattern": rule.pattern_text}


def sandbox_view(gate: Gate, mode: str) -> dict[str, Any]:
    """What a command in `mode` could touch: for `tether explain` and `tether doctor`."""
    from tether.core.policy import protected_write_paths

    workspace = gate.workspace
    try:
        hidden = [_rel(p, workspace) for p in find_secret_paths(workspace, gate.config.policy.secrets)]
    except OSError as exc:
        hidden = [f"(could not list: {exc})"]
    return {
        "backend": gate.sandbox_name(),
        "network": network_summary(gate, mode),
        "writable": [] if mode == "read" else [str(workspace)],
        "readOnly": (
            [str(workspace)]
            if mode == "read"
            else [_rel(p, workspace) for p in protected_write_paths(workspace, gate.config.policy)]
        ),
        "hidden": hidden,
        "notCheckpointed": sorted(
            f"{name}/" for name in REGENERATED_DIRS.union(gate.config.checkpoints.regenerated)
        ),
    }


def network_summary(gate: Gate, mode: str) -> str:
    """`none`, or the proxy and its allowlist (docs/network.md)."""
    network = gate.config.network
    if not network.enabled or mode == "read":
        return "none"
    backend = gate.sandbox_name()
    if backend != "bubblewrap":
        return f"none (the allowlist needs bubblewrap; this sandbox is {backend})"
    local = ", local addresses allowed" if network.allow_local_addresses else ""
    return f"proxy: {', '.join(network.allowed())}{local}"


def _hooks(gate: Gate) -> list[dict[str, Any]]:
    hooks = gate.config.hooks
    out: list[dict[str, Any]] = []
    for event, entries in (("pre_tool_use", hooks.pre_tool_use), ("post_tool_use", hooks.post_tool_use)):
        for hook in entries:
            if not hook.tools or "bash_command" in hook.tools:
                out.append({"event": event, "command": list(hook.command), "timeout": hook.timeout})
    return out


def _rel(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)
