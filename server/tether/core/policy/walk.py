"""From a tree-sitter tree to a list of simple commands, with an allowlist of node types.

Why an allowlist: bash has dozens of constructs that run code or change meaning (substitutions,
expansions, functions, here-documents, coprocesses, …) and the grammar grows. We accept only the
shapes listed here — a program of `;`/newline-separated statements, `&&`/`||` lists, `|`
pipelines, simple commands with plain arguments, and file redirects — and every other node type
is refused with a rule id. Two more checks keep tree-sitter honest: the bytes between the nodes we
accept must be blanks (nothing silently skipped), and adjacent arguments must be separated by
blanks (else bash would glue them into one word).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import tree_sitter

from tether.core.policy.lex import Word, unquote
from tether.core.policy.types import Deny

_STATEMENTS = frozenset({"command", "pipeline", "list", "redirected_statement"})
_ARGUMENTS = frozenset({"word", "string", "raw_string", "concatenation", "number"})
_ARG_PARTS = frozenset({"word", "string", "string_content", "raw_string", "number", '"'})
_BLANKS = b" \t\n"
_INLINE_BLANKS = b" \t"
_COMMAND_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]*\Z")
_PROGRAM_PATH = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9._+/-]*\Z")  # a plain path: no glob, `$`, `~`
# Text bash reads as a redirect's file descriptor when it touches the operator: `0>x`, `{fd}>x`.
_FD_LIKE = re.compile(rb"(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})\Z")
MAX_DEPTH = 200

_NODE_RULES: dict[str, tuple[str, str]] = {
    "command_substitution": ("syntax.command_substitution", "command substitution `$(…)`/backticks"),
    "process_substitution": ("syntax.process_substitution", "process substitution `<(…)`/`>(…)`"),
    "simple_expansion": ("syntax.expansion", "parameter expansion `$X`"),
    "expansion": ("syntax.expansion", "parameter expansion `${…}`"),
    "arithmetic_expansion": ("syntax.arithmetic", "arithmetic expansion `$((…))`"),
    "ansi_c_string": ("syntax.ansi_c_quoting", "ANSI-C quoting `$'…'`"),
    "translated_string": ("syntax.expansion", 'locale translation `$"…"`'),
    "subshell": ("syntax.subshell", "a subshell `( … )`"),
    "compound_statement": ("syntax.group", "a command group `{ …; }`"),
    "function_definition": ("syntax.function", "a function definition"),
    "if_statement": ("syntax.control_flow", "`if`"),
    "for_statement": ("syntax.control_flow", "`for`"),
    "c_style_for_statement": ("syntax.control_flow", "`for ((…))`"),
    "while_statement": ("syntax.control_flow", "`while`/`until`"),
    "case_statement": ("syntax.control_flow", "`case`"),
    "test_command": ("syntax.control_flow", "a test `[[ … ]]`"),
    "negated_command": ("syntax.control_flow", "negation `!`"),
    "heredoc_redirect": ("syntax.heredoc", "a here-document `<<`"),
    "heredoc_body": ("syntax.heredoc", "a here-document"),
    "herestring_redirect": ("syntax.herestring", "a here-string `<<<`"),
    "variable_assignment": ("syntax.assignment", "a variable assignment"),
    "variable_assignments": ("syntax.assignment", "variable assignments"),
    "declaration_command": ("syntax.assignment", "`export`/`declare`/`local`"),
    "unset_command": ("syntax.assignment", "`unset`"),
    "comment": ("syntax.comment", "a comment"),
    "brace_expression": ("syntax.brace_expansion", "brace expansion"),
    "ERROR": ("syntax.parse_error", "a syntax error"),
    "$": ("syntax.expansion", "an unquoted `$`"),
}


@dataclass(frozen=True)
class RawRedirect:
    """A redirect as written: fd (or ''), operator token, and the target word (None for `>&-`)."""

    fd: str
    op: str
    target: Word | None
    target_raw: str


@dataclass(frozen=True)
class RawCommand:
    name: str
    args: tuple[Word, ...]
    redirects: tuple[RawRedirect, ...]


@dataclass
class Walked:
    commands: list[RawCommand]
    compound: bool = False  # a pipeline or list: only bash can run it


def _text(node: tree_sitter.Node) -> str:
    raw = node.text
    return raw.decode("utf-8") if raw is not None else ""


def _refuse(node: tree_sitter.Node) -> Deny:
    rule, what = _NODE_RULES.get(node.type, ("syntax.unsupported", f"`{node.type}`"))
    if node.type == "command_substitution" and _text(node).startswith("`"):
        what = "backtick command substitution"
    if node.is_missing:
        rule, what = "syntax.parse_error", f"a missing {node.type!r}"
    return Deny(rule, f"{what} is not allowed")


def _check_gaps(
    node: tree_sitter.Node, children: list[tree_sitter.Node], source: bytes, blanks: bytes = _BLANKS
) -> None:
    """Between (and around) a node's children only blanks may appear: nothing was skipped.

    Inside one simple command or redirect (`blanks=_INLINE_BLANKS`) a newline is not a blank to
    bash — it ends the command — so one there means tree-sitter and bash disagree.
    """
    pos = node.start_byte
    for child in children:
        if source[pos : child.start_byte].strip(blanks):
            raise Deny("syntax.parse_error", "the parser skipped part of the command")
        pos = child.end_byte
    if source[pos : node.end_byte].strip(blanks):
        raise Deny("syntax.parse_error", "the parser skipped part of the command")


def walk(tree: tree_sitter.Tree, source: bytes) -> Walked:
    root = tree.root_node
    if root.has_error:
        raise Deny("syntax.parse_error", "the command does not parse as bash", "check quotes and brackets")
    if root.type != "program":
        raise _refuse(root)
    result = Walked(commands=[])
    children = root.children
    _check_gaps(root, children, source)
    statements = 0
    for child in children:
        if child.type in (";", "\n"):
            continue
        if child.type == "&":
            raise Deny("syntax.background", "running commands in the background (`&`) is not allowed")
        _statement(child, source, result, 0)
        statements += 1
    if statements == 0:
        raise Deny("input.empty", "the command is empty")
    if statements > 1:
        result.compound = True
    return result


def _statement(node: tree_sitter.Node, source: bytes, result: Walked, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise Deny("input.too_complex", f"the command nests more than {MAX_DEPTH} lists or pipelines")
    kind = node.type
    if kind not in _STATEMENTS:
        raise _refuse(node)
    children = node.children
    inline = kind in ("command", "redirected_statement")
    _check_gaps(node, children, source, _INLINE_BLANKS if inline else _BLANKS)
    if kind == "command":
        result.commands.append(_command(children, source, ()))
    elif kind == "redirected_statement":
        _redirected(children, source, result, depth)
    elif kind == "pipeline":
        result.compound = True
        for child in children:
            if child.type == "|":
                continue
            if child.type == "|&":
                raise Deny("syntax.pipe_stderr", "`|&` is not allowed", "write `2>&1 |` instead")
            if child.type not in ("command", "redirected_statement"):
                raise _refuse(child)
            _statement(child, source, result, depth + 1)
    else:  # list
        result.compound = True
        for child in children:
            if child.type in ("&&", "||"):
                continue
            if not child.is_named:
                raise Deny("syntax.unsupported", f"the operator {child.type!r} is not allowed")
            _statement(child, source, result, depth + 1)


def _redirected(children: list[tree_sitter.Node], source: bytes, result: Walked, depth: int) -> None:
    body: tree_sitter.Node | None = None
    redirects: list[RawRedirect] = []
    heredocs = 0
    for child in children:
        if child.type == "file_redirect":
            redirects.append(_redirect(child, source))
        elif child.type == "heredoc_redirect" and body is not None and not heredocs:
            # like a file redirect after a list, it belongs to the last command (`a && cat <<'E'`)
            redirects.extend(_heredoc(child, source))
            heredocs += 1
            result.compound = True  # stdin from a here-document: only bash can run it
        elif body is None and child.type in ("command", "list", "pipeline"):
            body = child
        else:
            raise _refuse(child)
    if body is None:
        raise Deny("syntax.unsupported", "a redirect without a command is not allowed")
    if body.type == "command":
        body_children = body.children
        _check_gaps(body, body_children, source, _INLINE_BLANKS)
        result.commands.append(_command(body_children, source, tuple(redirects)))
        return
    # tree-sitter hangs `a && b > f` / `a | b > f` on the whole list or pipeline; bash binds the
    # redirect to the last simple command, `b`. Walk the body, then give `b` the redirects.
    _statement(body, source, result, depth + 1)
    last = result.commands[-1]
    result.commands[-1] = RawCommand(last.name, last.args, last.redirects + tuple(redirects))


_HEREDOC_WORD = re.compile(
    r"""([A-Za-z_][A-Za-z0-9_]*)|'([A-Za-z_][A-Za-z0-9_]*)'|"([A-Za-z_][A-Za-z0-9_]*)"\Z"""
)


def _heredoc(node: tree_sitter.Node, source: bytes) -> list[RawRedirect]:
    """`cmd <<'EOF' > out` + body: the body is the command's stdin, data like a pipe's.

    Why this much checking: bash, not tree-sitter, decides where a here-document ends, and a line
    that tree-sitter took for body but bash does not would run as a command. So the end is found
    again here, the way bash finds it, and must agree with the parse. With an unquoted delimiter
    bash expands `$`, backticks and `\\` in the body: such a body is refused (quote the delimiter).
    """
    kids = node.children
    refuse = Deny(
        "syntax.heredoc",
        "this here-document shape is not allowed",
        "write `cmd <<'EOF' [> file]`, the body, then `EOF` alone on its line",
    )
    if len(kids) < 4 or kids[0].type not in ("<<", "<<-") or kids[1].type != "heredoc_start":
        raise refuse
    strip_tabs = kids[0].type == "<<-"
    found = _HEREDOC_WORD.fullmatch(_text(kids[1]))
    if found is None:
        raise refuse
    delimiter = next(g for g in found.groups() if g)
    quoted = found.group(1) is None
    *middle, body, end = kids[2:]
    if (
        body.type != "heredoc_body"
        or end.type != "heredoc_end"
        or any(k.type != "file_redirect" for k in middle)
    ):
        raise refuse
    redirects = [_redirect(k, source) for k in middle]
    head = [kids[0], kids[1], *middle]
    for before, after in itertools.pairwise(head):
        if source[before.end_byte : after.start_byte].strip(_INLINE_BLANKS):
            raise refuse
    line_end = source.find(b"\n", head[-1].end_byte)
    if line_end < 0 or source[head[-1].end_byte : line_end].strip(_INLINE_BLANKS):
        raise refuse
    # Where bash ends it: the first line that is exactly the delimiter (leading tabs dropped for <<-).
    pos, want = line_end + 1, delimiter.encode()
    while True:
        nl = source.find(b"\n", pos)
        line = source[pos : nl if nl >= 0 else len(source)]
        if (line.lstrip(b"\t") if strip_tabs else line) == want:
            break
        if nl < 0:
            raise Deny("syntax.heredoc", f"the here-document has no line `{delimiter}` ending it")
        pos = nl + 1
    ends_at = pos + len(line)
    if end.end_byte != ends_at or end.start_byte != ends_at - len(want) or _text(end) != delimiter:
        raise Deny("syntax.parse_error", "the parser and bash disagree on where the here-document ends")
    text = source[line_end + 1 : pos]
    if not quoted and any(c in text for c in (b"$", b"`", b"\\")):
        raise Deny(
            "syntax.heredoc",
            "an unquoted here-document expands `$`, backticks and `\\` in its body",
            f"quote the delimiter: <<'{delimiter}'",
        )
    return redirects


def _command(
    children: list[tree_sitter.Node], source: bytes, trailing: tuple[RawRedirect, ...]
) -> RawCommand:
    name: str | None = None
    args: list[Word] = []
    redirects: list[RawRedirect] = []
    prev_end = -1
    for child in children:
        kind = child.type
        if kind == "command_name":
            name = _command_name(child)
        elif kind in _ARGUMENTS:
            if name is None:  # pragma: no cover - the grammar puts the name first
                raise Deny("syntax.unsupported", "an argument before the command name")
            if child.start_byte == prev_end:
                raise Deny("syntax.parse_error", "two words run together; bash would join them")
            args.append(_argument(child))
        elif kind == "file_redirect":
            redirects.append(_redirect(child, source))
        else:
            raise _refuse(child)
        prev_end = child.end_byte
    if name is None:
        raise Deny("syntax.unsupported", "a command without a name")
    return RawCommand(name=name, args=tuple(args), redirects=tuple(redirects) + trailing)


def _command_name(node: tree_sitter.Node) -> str:
    if len(node.children) != 1 or node.children[0].type != "word":
        inner = node.children[0] if node.children else node
        if inner.type in _NODE_RULES:
            raise _refuse(inner)
        raise Deny(
            "syntax.quoted_command_name",
            "quotes or escapes in a command name are not allowed",
            "write the program name plainly",
        )
    name = _text(node)
    if _COMMAND_NAME.match(name):
        return name
    if any(c in name for c in "\\'\""):
        raise Deny(
            "syntax.quoted_command_name",
            "quotes or escapes in a command name are not allowed",
            "write the program name plainly",
        )
    if not name.isascii():
        raise Deny("command.non_ascii", f"the command name {name!r} contains non-ASCII characters")
    if "/" in name:
        if _PROGRAM_PATH.match(name):
            return name  # `./scripts/build.sh`: the decision checks where it is (decide.py)
        raise Deny(
            "command.path",
            f"running a program by path ({name!r}) is not allowed",
            "call the program by its name, e.g. `pytest` or `python -m pytest`",
        )
    # Globs, `$`, `~`, `=`, … in a command name: run through the lexer for the precise rule.
    unquote(name)
    raise Deny("command.name_chars", f"the command name {name!r} contains characters that are not allowed")


def _check_arg_tree(node: tree_sitter.Node) -> None:
    children = node.children
    for index, child in enumerate(children):
        if _literal_dollar(node, children, index):
            continue
        if child.is_missing or child.type not in _ARG_PARTS:
            raise _refuse(child)
        _check_arg_tree(child)


def _literal_dollar(node: tree_sitter.Node, children: list[tree_sitter.Node], index: int) -> bool:
    """`"foo$"`: a `$` right before the closing quote is a literal `$` to bash (a regex's end)."""
    return (
        node.type == "string"
        and children[index].type == "$"
        and index + 1 == len(children) - 1
        and children[index + 1].type == '"'
        and children[index].end_byte == children[index + 1].start_byte
    )


def _argument(node: tree_sitter.Node) -> Word:
    if node.type != "word":  # a word is a leaf token; the lexer re-reads its text anyway
        _check_arg_tree(node)
    return unquote(_text(node))


def _redirect(node: tree_sitter.Node, source: bytes) -> RawRedirect:
    children = node.children
    _check_gaps(node, children, source, _INLINE_BLANKS)
    if node.start_byte > 0 and _FD_LIKE.search(source[max(0, node.start_byte - 64) : node.start_byte]):
        preceding = source[: node.start_byte]
        token = preceding[
            len(preceding.rstrip(b"0123456789{}_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")) :
        ]
        if _FD_LIKE.match(token) and (not children or children[0].type != "file_descriptor"):
            raise Deny(
                "syntax.ambiguous_redirect",
                f"`{token.decode()}` right before a redirect is read by bash as a file descriptor",
                "put a space between the argument and the redirect",
            )
    fd = ""
    op = ""
    targets: list[tree_sitter.Node] = []
    for child in children:
        if child.type == "file_descriptor":
            fd = _text(child)
        elif not child.is_named:
            if op:
                raise Deny("redirect.operator", "an unusual redirect is not allowed")
            op = child.type
        elif child.type in _ARGUMENTS:
            targets.append(child)
        else:
            raise _refuse(child)
    if len(targets) > 1:
        raise Deny(
            "syntax.redirect_position",
            "words after a redirect target are not allowed",
            "put redirects at the end of the command",
        )
    if not targets:
        return RawRedirect(fd=fd, op=op, target=None, target_raw="")
    return RawRedirect(fd=fd, op=op, target=_argument(targets[0]), target_raw=_text(targets[0]))
