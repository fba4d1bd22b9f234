"""A pure-Python file walk that skips what ripgrep skips: the fallback when `rg` is unavailable.

Why mirror ripgrep instead of using git: `grep` and `list_files` must give the same answer with or
without the binary, inside a git repository or not. So this walk follows ripgrep's defaults as
invoked by Tether (`--no-require-git --no-ignore-parent --no-ignore-global`): `.gitignore`, `.ignore`
and `.rgignore` in every directory (later files and deeper directories win), `.git/info/exclude` at
the root, hidden entries skipped unless asked, `.git` never entered, symlinks never followed or
listed, an explicitly given start path always searched.

Supported gitignore syntax: comments, blank lines, `!` negation, `\\` escapes, trailing `/` for
directories, anchoring by a leading or inner `/`, `*`, `?`, `[...]`, and `**`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool  # matched against the path relative to the ignore file's directory


def glob_to_regex(glob: str) -> str:
    """Translate one gitignore-style glob (without `!`/trailing `/`) to a regex body."""
    out: list[str] = []
    i = 0
    n = len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                before_ok = i == 0 or glob[i - 1] == "/"
                after = glob[i + 2 : i + 3]
                if before_ok and after == "/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if before_ok and i + 2 == n:
                    out.append(".*")
                    i += 2
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse_rules(text: str) -> list[Rule]:
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        # Trailing spaces are ignored unless escaped.
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith(("\\#", "\\!")):
            line = line[1:]
        dir_only = line.endswith("/")
        if dir_only:
            line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = glob_to_regex(line)
        rules.append(Rule(re.compile(f"^{body}$", re.DOTALL), negate, dir_only, anchored))
    return rules


def matches_glob(glob: str, relpath: str) -> bool:
    """ripgrep `--glob` semantics for one positive glob: basename unless it contains `/`."""
    rules = parse_rules(glob)
    if not rules:
        return False
    rule = rules[0]
    target = relpath if rule.anchored else relpath.rsplit("/", 1)[-1]
    return bool(rule.regex.match(target))


class _Layer:
    """The ignore rules of one directory, with the directory's path relative to the walk root."""

    def __init__(self, rel: str, rules: list[Rule]) -> None:
        self.rel = rel
        self.rules = rules


def _read_rules(directory: Path) -> list[Rule]:
    rules: list[Rule] = []
    for name in IGNORE_FILES:
        file = directory / name
        if file.is_file() and not file.is_symlink():
            try:
                rules.extend(parse_rules(file.read_text(encoding="utf-8", errors="replace")))
            except OSError:
                continue
    return rules


def _ignored(layers: list[_Layer], rel: str, is_dir: bool) -> bool:
    verdict = False
    for layer in layers:
        if layer.rel and not rel.startswith(layer.rel + "/"):
            continue
        sub = rel[len(layer.rel) + 1 :] if layer.rel else rel
        base = sub.rsplit("/", 1)[-1]
        for rule in layer.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(sub if rule.anchored else base):
                verdict = not rule.negate
    return verdict


@dataclass(frozen=True)
class Override:
    """ripgrep's `--glob`: it beats ignore rules and hidden-ness for files.

    A positive glob includes a matching file even if ignored or hidden and excludes every file it
    does not match; a `!glob` excludes matching files and directories. Directories are otherwise
    judged by the normal rules (so an ignored or hidden directory is still not entered).
    """

    glob: str

    def judge(self, rel: str, is_dir: bool) -> bool | None:
        negate = self.glob.startswith("!")
        body = self.glob[1:] if negate else self.glob
        hit = matches_glob(body, rel)
        if negate:
            return False if hit else None
        if is_dir:
            return None
        return hit


def walk_files(
    root: Path,
    start: Path,
    *,
    hidden: bool = False,
    max_depth: int | None = None,
    glob: str | None = None,
) -> Iterator[str]:
    """Yield files under `start` (or `start` itself) as paths relative to `root`, unignored.

    `root` is the workspace (where ignore files start being read); `start` is inside it.
    """
    override = Override(glob) if glob else None
    root_rules: list[Rule] = []
    exclude = root / ".git" / "info" / "exclude"
    if exclude.is_file():
        root_rules.extend(parse_rules(exclude.read_text(encoding="utf-8", errors="replace")))
    layers = [_Layer("", root_rules + _read_rules(root))]
    start_rel = "" if start == root else start.relative_to(root).as_posix()
    # Ignore files between the root and the start apply too.
    if start_rel:
        parts = start_rel.split("/")
        for depth in range(1, len(parts)):
            rel = "/".join(parts[:depth])
            layers.append(_Layer(rel, _read_rules(root / rel)))
    if start.is_file() and not start.is_symlink():
        if override is None or override.judge(start_rel, False) is not False:
            yield start_rel
        return
    if start_rel:
        layers.append(_Layer(start_rel, _read_rules(start)))
    yield from _walk(root, start_rel, layers, hidden=hidden, max_depth=max_depth, depth=1, override=override)


def _walk(
    root: Path,
    rel: str,
    layers: list[_Layer],
    *,
    hidden: bool,
    max_depth: int | None,
    depth: int,
    override: Override | None,
) -> Iterator[str]:
    if max_depth is not None and depth > max_depth:
        return
    directory = root / rel if rel else root
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        child = f"{rel}/{name}" if rel else name
        if entry.is_symlink():
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        if name == ".git":
            continue
        verdict = override.judge(child, is_dir) if override is not None else None
        if verdict is False:
            continue
        if verdict is None and ((not hidden and name.startswith(".")) or _ignored(layers, child, is_dir)):
            continue
        if is_dir:
            sub_layers = [*layers, _Layer(child, _read_rules(root / child))]
            yield from _walk(
                root,
                child,
                sub_layers,
                hidden=hidden,
                max_depth=max_depth,
                depth=depth + 1,
                override=override,
            )
        elif entry.is_file(follow_symlinks=False):
            yield child
