"""The offline Messages API: a scripted server the real `anthropic` SDK talks to over HTTP."""

from tether.agent.fakeapi.script import Script, Step, load_script, parse_script
from tether.agent.fakeapi.server import FakeAnthropicServer, ReceivedRequest, serve

__all__ = ["FakeAnthropicServer", "ReceivedRequest", "Script", "Step", "load_script", "parse_script", "serve"]
