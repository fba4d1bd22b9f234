"""Network for sandboxed commands: a domain allowlist enforced by a proxy outside the sandbox."""

from tether.core.network.rules import PRESETS, NetworkSettings, Verdict, address_verdict, host_verdict

__all__ = ["PRESETS", "NetworkSettings", "Verdict", "address_verdict", "host_verdict"]
