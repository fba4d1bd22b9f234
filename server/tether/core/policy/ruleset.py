"""Rules as data: a program and an argument prefix, a decision, a justification, and examples.

Why data and not code: people read, write and review rules; an administrator pins some; the person
who answers "Always allow" gets one written for them. Like Codex's `prefix_rule` and Claude Code's
`Bash(npm run *)`, a rule matches one simple command (a segment of a compound command) by its
leading words; a position may list alternatives (`["npm", "run", ["build", "test"]]`).

Examples are part of a rule: `match` must match and `not_match` must not, checked when the rules
load, so a rule that does not do what its author meant is an error naming its file and line.

What a rule cannot do: an `allow` rule lets a program and its arguments through that the built-in
schemas do not know, but the path and redirect checks still run, so no rule lets a command reach
outside the workspace, a protected path or a secret. Among the rules that match a segment the
strictest wins: deny over ask over allow, whatever layer each came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from tether.core.policy.asks import git_plain, git_without_globals
from tether.core.policy.parse import parse
from tether.core.policy.types import Deny
from tether.core.policy.walk import walk

RuleDecision = Literal["allow", "ask", "deny"]
Layer = Literal["builtin", "user", "managed", "project"]
PatternWord = str | tuple[str, ...]

DECISIONS: tuple[RuleDecision, ...] = get_args(RuleDecision)
STRICTNESS: dict[RuleDecision, int] = {"allow": 0, "ask": 1, "deny": 2}
RULE_KEYS = ("pattern", "decision", "justification", "match", "not_match")


class RuleError(ValueError):
    """A malformed rule, or one whose examples fail; the message names the rule's source."""


@dataclass(frozen=True)
class RuleSource:
    """Where a rule comes from: its layer, and its file and line when it was read from one."""

    layer: Layer
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.file is None:
            return "built-in" if self.layer == "builtin" else self.layer
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Rule:
    pattern: tuple[PatternWord, ...]
    decision: RuleDecision
    justification: str = ""
    match: tuple[str, ...] = ()
    not_match: tuple[str, ...] = ()
    source: RuleSource = RuleSource("builtin")

    @property
    def id(self) -> str:
        """`rule.user`, `rule.managed`…: the decision's rule id names the layer."""
        return f"rule.{self.source.layer}"

    @property
    def pattern_text(self) -> str:
        """`npm run {build|test}`: how people read the pattern."""
        return " ".join(w if isinstance(w, str) else "{" + "|".join(w) + "}" for w in self.pattern)

    def applies_to(self, argv: Sequence[str], forms: GitForms | None = None) -> bool:
        """Whether the rule decides this simple command, as the policy matches it: git's global
        options are dropped first — all of them for a deny or ask rule (`git -c k=v push` is still
        `git push`), only `-C DIR` and `--no-pager` for an allow rule (`git commit` must not allow
        `git -c core.fsmonitor=… commit`). `forms`: `git_forms(argv)`, when the caller matches
        many rules against one command."""
        if self.matches(argv):
            return True
        if not argv or argv[0] != "git":
            return False
        for_allow, for_others = forms or git_forms(argv)
        return self.matches(for_allow if self.decision == "allow" else for_others)

    def matches(self, argv: Sequence[str]) -> bool:
        """The pattern as a prefix of `argv`, word for word."""
        if len(argv) < len(self.pattern):
            return False
        for want, word in zip(self.pattern, argv, strict=False):
            if word != want if isinstance(want, str) else word not in want:
                return False
        return True

    def reason(self) -> str:
        why = self.justification or f"a {self.decision} rule"
        return f"`{self.pattern_text}` — {why} ({self.source})"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pattern": [w if isinstance(w, str) else list(w) for w in self.pattern],
            "decision": self.decision,
            "justification": self.justification,
            "match": list(self.match),
            "not_match": list(self.not_match),
            "source": str(self.source),
            "layer": self.source.layer,
        }

    def to_table(self) -> dict[str, Any]:
        """The rule as a `[[rules]]` TOML table (what "Always allow" writes)."""
        table: dict[str, Any] = {
            "pattern": [w if isinstance(w, str) else list(w) for w in self.pattern],
            "decision": self.decision,
        }
        if self.justification:
            table["justification"] = self.justification
        if self.match:
            table["match"] = list(self.match)
        if self.not_match:
            table["not_match"] = list(self.not_match)
        return table


GitForms = tuple[Sequence[str], Sequence[str]]
"""A git command as allow rules see it (`git_plain`) and as deny and ask rules do."""


def git_forms(argv: Sequence[str]) -> GitForms:
    return git_plain(argv), git_without_globals(argv)


def strictest(rules: Sequence[Rule], argv: Sequence[str]) -> Rule | None:
    """The strictest rule that applies to this simple command: deny over ask over allow."""
    found: Rule | None = None
    forms = git_forms(argv) if argv and argv[0] == "git" else None  # once, not per rule
    for rule in rules:
        if rule.applies_to(argv, forms) and (
            found is None or STRICTNESS[rule.decision] > STRICTNESS[found.decision]
        ):
            found = rule
    return found


def rule_from_table(table: Any, source: RuleSource) -> Rule:
    """Validate one `[[rules]]` table; RuleError (naming `source`) for anything malformed."""
    where = f"{source}: rule"
    if not isinstance(table, Mapping):
        raise RuleError(f"{where} must be a table, not {type(table).__name__}")
    unknown = sorted(set(table) - set(RULE_KEYS))
    if unknown:
        raise RuleError(f"{where} has unknown key(s) {', '.join(unknown)}; known: {', '.join(RULE_KEYS)}")
    decision = table.get("decision")
    if decision not in DECISIONS:
        raise RuleError(f"{where}: `decision` must be one of {', '.join(DECISIONS)}, not {decision!r}")
    justification = table.get("justification", "")
    if not isinstance(justification, str):
        raise RuleError(f"{where}: `justification` must be text")
    return Rule(
        pattern=_pattern(table.get("pattern"), where),
        decision=decision,
        justification=justification.strip(),
        match=_examples(table.get("match", []), where, "match"),
        not_match=_examples(table.get("not_match", []), where, "not_match"),
        source=source,
    )


def _pattern(raw: Any, where: str) -> tuple[PatternWord, ...]:
    if not isinstance(raw, list) or not raw:
        raise RuleError(f'{where}: `pattern` must be a non-empty list of words, e.g. ["git", "commit"]')
    out: list[PatternWord] = []
    for position, item in enumerate(raw):
        if isinstance(item, str) and item.strip() == item and item:
            out.append(item)
        elif isinstance(item, list) and item and all(isinstance(w, str) and w for w in item):
            if position == 0:
                raise RuleError(f"{where}: the program (first word of `pattern`) must be one word")
            out.append(tuple(item))
        else:
            raise RuleError(
                f"{where}: `pattern` word {position + 1} must be a word or a list of words, not {item!r}"
            )
    return tuple(out)


def _examples(raw: Any, where: str, key: str) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) and x.strip() for x in raw):
        raise RuleError(f"{where}: `{key}` must be a list of command lines")
    return tuple(raw)


Splitter = Callable[[str], Sequence[Sequence[str]]]
"""A command line → the argv of each simple command in it (the policy's parser)."""


def example_failures(rule: Rule, split: Splitter) -> list[str]:
    """What is wrong with `rule`'s examples (empty: they all hold)."""
    failures: list[str] = []
    for example in rule.match:
        if not any(rule.applies_to(argv) for argv in _split(split, example)):
            failures.append(f"`match` example `{example}` does not match `{rule.pattern_text}`")
    for example in rule.not_match:
        if any(rule.applies_to(argv) for argv in _split(split, example)):
            failures.append(f"`not_match` example `{example}` matches `{rule.pattern_text}`")
    return failures


def _split(split: Splitter, example: str) -> Sequence[Sequence[str]]:
    try:
        return split(example)
    except (ValueError, Deny):
        return [example.split()]


def command_argvs(command: str) -> list[tuple[str, ...]]:
    """Each simple command's words as written (quotes removed): how a rule sees an example."""
    source = command.encode("utf-8")
    return [(raw.name, *(w.value for w in raw.args)) for raw in walk(parse(source), source).commands]


def rule_for_segment(argv: Sequence[str], justification: str) -> Rule:
    """The narrowest sensible rule for an approved segment: its program and subcommand.

    `git commit -m wip` → `git commit` (later commits with other messages pass, `git push` does
    not). A first argument that is an option or a path is no subcommand: `./build.sh --fast` →
    `./build.sh`. The approved command is the rule's `match` example.
    """
    plain = git_plain(argv)
    return Rule(
        pattern=tuple(subcommand_prefix(plain)),
        decision="allow",
        justification=justification,
        match=(" ".join(plain),),
        source=RuleSource("user"),
    )


def subcommand_prefix(argv: Sequence[str]) -> tuple[str, ...]:
    """The program and, when it has one, its subcommand: what one approval stands for.

    For git, after `-C DIR` and `--no-pager` (`git -C sub commit` → `git commit`): an approval of
    one commit must not become a rule for every git command."""
    words = tuple(git_plain(argv))
    if len(words) >= 3 and words[1] == "-m":  # `python3 -m pip install x` → `python3 -m pip install`
        module = words[:3]
        return module + words[3:4] if len(words) >= 4 and not words[3].startswith("-") else module
    if len(words) >= 2 and words[1] and not words[1].startswith("-") and "/" not in words[1]:
        return words[:2]
    return words[:1]
