"""The tools the gate offers, in the order the model sees them.

Every tool is imported directly: a tool module that cannot import is a bug that must stop Tether
loudly, not a tool that silently disappears from the model's list.
"""

from __future__ import annotations

from tether.core.tools.base import Tool
from tether.core.tools.bash import BashCommandTool
from tether.core.tools.edit import EditFileTool
from tether.core.tools.files import ListFilesTool, ReadFileTool
from tether.core.tools.git_tool import GitOperationTool
from tether.core.tools.grep import GrepTool
from tether.core.tools.write import WriteFileTool


def default_tools() -> list[Tool]:
    """read_file, list_files, grep, write_file, edit_file, git_operation and bash_command."""
    return [
        ReadFileTool(),
        ListFilesTool(),
        GrepTool(),
        WriteFileTool(),
        EditFileTool(),
        GitOperationTool(),
        BashCommandTool(),
    ]
