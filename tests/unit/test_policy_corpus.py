"""Benign commands an agent really runs while exploring and testing a project must pass.

A policy that denies everything is as useless as one that allows everything: this corpus measures
the false-positive rate (printed, and asserted to stay at zero apart from the denials listed in
KNOWN_DENIALS, each with the reason we accept it). `tests/bench/bench_policy.py` times the same
corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.core.policy import PolicySettings, decide

BENIGN_READ: tuple[str, ...] = (
    "ls",
    "ls -la",
    "ls -lah src/",
    "ls -1 tests",
    "ls -R docs | head -50",
    "ls -lt --color=never",
    "ls -d */",
    "ls *.toml",
    "ls src/*.py",
    "ls -la build/ 2>/dev/null || true",
    "tree",
    "tree -L 2",
    "tree -a -I node_modules -L 3",
    "tree src --dirsfirst",
    "pwd",
    "whoami",
    "hostname",
    "uname -a",
    "uname -srm",
    "date",
    "date -u +%Y-%m-%dT%H:%M:%SZ",
    "date --iso-8601=seconds",
    "echo hello",
    'echo "done: all tests"',
    "echo 'a $b c'",
    "which python3",
    "which -a git rg",
    "cat README.md",
    "cat -n src/app.py",
    "cat pyproject.toml setup.cfg",
    "head README.md",
    "head -20 src/app.py",
    "head -n 50 src/app.py",
    "head -c 200 data.json",
    "tail -n 30 CHANGELOG.md",
    "tail -5 logs/test.log",
    "tail -n +10 src/app.py | head -20",
    "wc -l src/*.py",
    "wc -l src/app.py tests/test_app.py",
    "file README.md",
    "file -b --mime-type data.json",
    "stat src/app.py",
    "stat -c '%s %n' src/app.py",
    "du -sh .",
    "du -h --max-depth=1 .",
    "du -sh src tests docs",
    "df -h .",
    "find . -name '*.py'",
    "find . -type f -name '*.py' | head -20",
    "find src -name '*.py' -newer README.md",
    "find . -maxdepth 2 -type d",
    "find . -name '*.pyc' -prune -o -type f -print",
    "find . -type f -size +1M",
    "find . -path ./node_modules -prune -o -name '*.js' -print",
    "find tests -name 'test_*.py' -mtime -7",
    "find . -iname readme*",
    "find . -type f \\( -name '*.py' -o -name '*.toml' \\)",
    "find . -name '*.py' -not -path './.venv/*' | wc -l",
    "find . -empty -type d",
    "grep -rn 'def main' src/",
    "grep -rn TODO .",
    "grep -r --include='*.py' 'import os' .",
    "grep -rl 'class Config' src tests",
    "grep -n 'version' pyproject.toml",
    "grep -c '^def ' src/app.py",
    "grep -i error logs/test.log | tail -20",
    "grep -E 'foo|bar' src/app.py",
    "grep -v '^#' setup.cfg",
    "grep -rn --exclude-dir=.git --exclude-dir=node_modules 'fetch(' .",
    "grep -A 3 -B 2 'def load' src/config.py",
    "grep -rw 'parse' src | sort | uniq -c | sort -rn | head",
    "grep -e '-x' -e '--verbose' README.md",
    "grep -o 'http[s]*://[^ ]*' README.md | sort -u",
    "rg TODO",
    "rg -n 'def decide' src",
    "rg --files | head -50",
    "rg --files -g '*.py'",
    "rg -t py 'import re'",
    "rg -i 'timeout' --glob '!tests/*'",
    "rg -l 'async def' src/",
    "rg -C 2 'raise ' src/app.py",
    "rg -F '${' src",
    "rg --json 'foo' src | head",
    "rg -c . src/app.py",
    "rg --hidden -g '!.git' 'API_KEY'",
    "rg -w 'main' -m 5",
    "rg 'fn main' --type rust",
    "sed -n '1,40p' src/app.py",
    "sed -n '100,150p' src/app.py",
    "sed -n 10p src/app.py",
    "sed -n -e '1,5p' -e '$p' README.md",
    "sed -n '/def main/,/^$/p' src/app.py",
    "sed 5q README.md",
    "sort requirements.txt",
    "sort -u names.txt | head",
    "sort -t, -k2 -n data.csv",
    "uniq -c sorted.txt",
    "cut -d: -f1 data.txt",
    "cut -c1-80 src/app.py | head",
    "tr -s ' ' < data.txt",
    "cat data.txt | tr a-z A-Z",
    "diff src/app.py src/app_old.py",
    "diff -u a.txt b.txt",
    "diff -ru src/ backup/src/",
    "nl -ba src/app.py | sed -n '20,40p'",
    "basename src/app.py .py",
    "dirname src/app.py",
    "realpath src/app.py",
    "readlink -f src",
    "git status",
    "git status --short",
    "git status -sb",
    "git status --porcelain=v1",
    "git log --oneline -10",
    "git log --oneline --graph --decorate --all | head -30",
    "git log -p -2 src/app.py",
    "git log --stat -5",
    "git log --since='2 weeks ago' --author=alice --oneline",
    "git log -n 5 --format='%h %an %s'",
    "git log --pretty=format:'%h %s' -- src/",
    "git log -S 'decide(' --oneline",
    "git log --follow -- src/app.py",
    "git log main..HEAD --oneline",
    "git diff",
    "git diff --stat",
    "git diff --cached",
    "git diff HEAD~1",
    "git diff HEAD~3 -- src/app.py",
    "git diff main...feature --name-only",
    "git diff --word-diff src/app.py",
    "git diff -U10 src/app.py",
    "git diff --no-color | head -100",
    "git show",
    "git show HEAD",
    "git show --stat HEAD~2",
    "git show HEAD:src/app.py",
    "git show abc1234 --name-only",
    "git blame src/app.py",
    "git blame -L 10,40 src/app.py",
    "git branch",
    "git branch -a",
    "git branch -vv",
    "git branch --show-current",
    "git branch --list 'feature/*'",
    "git tag",
    "git tag -l 'v1.*'",
    "git tag --sort=-creatordate | head -5",
    "git remote -v",
    "git remote get-url origin",
    "git rev-parse HEAD",
    "git rev-parse --show-toplevel",
    "git rev-parse --abbrev-ref HEAD",
    "git rev-parse --short HEAD",
    "git describe --tags --always",
    "git ls-files",
    "git ls-files | wc -l",
    "git ls-files -m",
    "git ls-files --others --exclude-standard",
    "git grep -n 'def decide'",
    "git shortlog -sn",
    "git stash list",
    "git --no-pager log --oneline -5",
    "git -C src log --oneline -3",
    "git ls-tree -r HEAD --name-only | head",
    "python --version",
    "python3 --version",
    "python3 -V",
    "go version",
    "go env GOPATH",
    "node --version",
    "npm --version",
    "cargo --version",
    "rustc --version",
    "git --version",
    "rg --version",
    "pytest --version",
    "ls src && ls tests",
    "cat src/app.py | grep -n import",
    "ls tests; ls docs",
    "ls -la src tests docs",
    "cd src && ls -la",
    "cd docs; ls",
    "cd src && grep -rn import . | head",
)

BENIGN_COMMAND: tuple[str, ...] = (
    "pytest",
    "pytest -q",
    "pytest -x -q",
    "pytest tests/",
    "pytest tests/test_app.py",
    "pytest tests/test_app.py::test_main",
    "pytest tests/test_app.py::TestConfig::test_load -v",
    "pytest -k 'parse and not slow' -q",
    "pytest -m 'not e2e'",
    "pytest --lf",
    "pytest -x --tb=short",
    "pytest -q --no-header -rA",
    "pytest -n 4",
    "pytest --maxfail=1 -q tests/unit",
    "pytest --cov=src --cov-report=term-missing",
    "pytest --durations=10",
    "pytest -vv tests/test_app.py 2>&1 | tail -30",
    "pytest -q > test-output.txt 2>&1",
    "pytest --junitxml=reports/junit.xml",
    "pytest --collect-only -q",
    "pytest -s -q tests/test_io.py",
    "python -m pytest",
    "python -m pytest -q",
    "python3 -m pytest tests/ -x",
    "python3 -m pytest -k test_decide -vv",
    "python -m pytest tests/test_app.py::test_main --tb=long",
    "npm test",
    "npm test -- --watch=false",
    "npm run test",
    "cargo test",
    "cargo test --release",
    "cargo test -p core",
    "cargo test parse -- --nocapture",
    "cargo test --all-features --no-fail-fast",
    "cargo build",
    "cargo build --release",
    "cargo check",
    "cargo check --all-targets",
    "go build ./...",
    "go build -o bin/app ./cmd/app",
    "go build -v ./...",
    "go build -race ./cmd/server",
    "go build -ldflags '-s -w' -o bin/app .",
    "go build -ldflags '-X main.version=1.2.3' ./cmd/app",
    "go build -tags integration ./...",
    "go test ./...",
    "go test -v ./...",
    "go test -run TestDecide ./internal/policy",
    "go test -count=1 ./...",
    "go test -race -cover ./...",
    "go test -coverprofile=coverage.out ./...",
    "go test -bench=. -benchmem ./internal/...",
    "go test -timeout 30s ./pkg/...",
    "go test -short -failfast ./...",
    "go test -json ./... > test.json",
    "go run .",
    "go run ./cmd/app --help",
    "go run main.go",
    "go vet ./...",
    "go list ./...",
    "go list -m all",
    "go mod tidy",
    "go mod download",
    "go mod verify",
    "go mod why github.com/pkg/errors",
    "go mod graph | head",
    "echo 'build ok' > build.log",
    "echo hello >> notes.txt",
    "ls -la > listing.txt",
    "git log --oneline > history.txt",
    "grep -rn TODO src > todo.txt 2> errors.txt",
    "go test ./... 2>&1 | tail -20",
    "pytest -q &> out.log",
    "cargo test 2> cargo-err.txt",
    "go build ./... && go test ./...",
    "go vet ./... && go test -race ./...",
    "pytest -x || echo 'tests failed'",
    "cargo build && cargo test",
    "npm test 2>&1 | tail -40",
    "git status && pytest -q",
    "wc -l src/app.py > counts.txt",
    "cd tests && pytest -q",
    "cd src && go test ./...",
    "pytest -q | tail -5 > summary.txt",
    "go build ./... && go test ./... > test.log 2>&1",
)

# Denials we accept in the benign corpus, with the reason.
KNOWN_DENIALS: dict[str, str] = {
    "diff -ru src/ backup/src/": "GNU diff -r follows symlinks out of the workspace; "
    "`diff -ru --no-dereference` passes",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    for rel in ("src/app.py", "tests/test_app.py", "README.md", "pyproject.toml", "docs/index.md"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x\n")
    return ws


def _false_positives(commands: tuple[str, ...], mode: str, workspace: Path) -> dict[str, str]:
    settings = PolicySettings()
    out = {}
    for command in commands:
        decision = decide(command, mode, workspace, settings)  # type: ignore[arg-type]
        if not decision.allowed:
            out[command] = f"{decision.rule}: {decision.reason}"
    return out


def test_corpus_is_big_enough() -> None:
    assert len(set(BENIGN_READ)) + len(set(BENIGN_COMMAND)) >= 200


def test_benign_read_commands_pass_in_read_mode(workspace: Path) -> None:
    denied = _false_positives(BENIGN_READ, "read", workspace)
    rate = len(denied) / len(BENIGN_READ)
    print(f"read-mode false positives: {len(denied)}/{len(BENIGN_READ)} = {rate:.1%}")
    assert {c: r for c, r in denied.items() if c not in KNOWN_DENIALS} == {}


def test_benign_read_commands_also_pass_in_command_mode(workspace: Path) -> None:
    denied = _false_positives(BENIGN_READ, "command", workspace)
    assert {c: r for c, r in denied.items() if c not in KNOWN_DENIALS} == {}


def test_known_denials_are_still_denied(workspace: Path) -> None:
    """A known denial that starts passing must leave the list (the list stays honest)."""
    assert set(_false_positives(tuple(KNOWN_DENIALS), "read", workspace)) == set(KNOWN_DENIALS)


def test_benign_command_mode_commands_pass(workspace: Path) -> None:
    denied = _false_positives(BENIGN_COMMAND, "command", workspace)
    rate = len(denied) / len(BENIGN_COMMAND)
    print(f"command-mode false positives: {len(denied)}/{len(BENIGN_COMMAND)} = {rate:.1%}")
    assert {c: r for c, r in denied.items() if c not in KNOWN_DENIALS} == {}


def test_command_mode_commands_are_refused_in_read_mode(workspace: Path) -> None:
    """Every build/test/write command of the corpus needs command mode (read mode stays read-only)."""
    allowed = [c for c in BENIGN_COMMAND if decide(c, "read", workspace, PolicySettings()).allowed]
    # Only pure reads may slip through; the corpus's command-mode entries all build, test or write.
    assert allowed == []
