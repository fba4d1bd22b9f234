"""The tools the gate offers, in the order the model sees them.

`bash_command` lives with the sandbox (`tether.core.tools.bash`); it is imported lazily so the file,
search and git tools keep working while that module is absent or broken, and `bash_missing()` lets
`tether doctor` say so instead of the tool silently vanishing.
"""

from __future__ import annotations

import importlib

from tether.core.tools.base import Tool
from tether.core.tools.edit import EditFileTool
from tether.core.tools.files import ListFilesTool, ReadFileTool
from tether.core.tools.git_tool import GitOperationTool
from tether.core.tools.grep import GrepTool
from tether.core.tools.write import WriteFileTool

_BASH_MODULE = "tether.core.tools.bash"


def _bash_tool() -> Tool | None:
    try:
        module = importlib.import_module(_BASH_MODULE)
    except ImportError:
        return None
    for name in ("BashCommandTool", "BashTool"):
        cls = getattr(module, name, None)
        if cls is not None:
            tool: Tool = cls()
            return tool
    return None


def bash_missing() -> str | None:
    """Why bash_command is not offered, or None when it is."""
    try:
        importlib.import_module(_BASH_MODULE)
    except ImportError as exc:
        return f"bash_command is unavailable: {exc}"
    if _bash_tool() is None:
        return f"bash_command is unavailable: {_BASH_MODULE} defines no BashCommandTool"
    return None


def default_tools() -> list[Tool]:
    """read_file, list_files, grep, write_file, edit_file, git_operation and bash_command."""
    tools: list[Tool] = [
        ReadFileTool(),
        ListFilesTool(),
        GrepTool(),
        WriteFileTool(),
        EditFileTool(),
        GitOperationTool(),
    ]
    bash = _bash_tool()
    if bash is not None:
        tools.append(bash)
    return tools
