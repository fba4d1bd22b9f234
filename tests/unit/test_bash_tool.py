"""bash_command: input forms, transformations, the real policy's verdicts, dry-run text, result
shapes and the parallel limit. The runner here is FakeRunner (it shapes results only); the real
sandboxes run the tool in tests/integration/test_sandbox_bash_tool.py."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from tether.core.config import EffectiveConfig, SandboxSettings, Transform
from tether.core.proposals import ProposalStore
from tether.core.sandbox import FakeRunner, RunRequest, RunResult
from tether.core.tools.base import ToolContext
from tether.core.tools.bash import TRANSFORM_PRESETS, BashCommandTool, apply_transforms
from tether.errors import PolicyDenied, ToolInputError

TOOL = BashCommandTool()


def _result(**over: object) -> RunResult:
    base = RunResult(
        stdout="out\n",
        stderr="",
        exit_code=0,
        duration_ms=12,
        timed_out=False,
        stdout_truncated=False,
        stderr_truncated=False,
        binary_output=False,
        backend="fake",
    )
    return replace(base, **over)  # type: ignore[arg-type]


def _ctx(ws: Path, runner: FakeRunner, config: EffectiveConfig | None = None) -> ToolContext:
    return ToolContext(
        workspace=ws,
        config=config or EffectiveConfig(),
        proposals=ProposalStore(ws),
        runner_factory=lambda: runner,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "a.txt").write_text("a\n")
    return tmp_path.resolve()


def test_read_mode_command_needs_read_and_does_not_mutate(ws: Path) -> None:
    call = TOOL.prepare(_ctx(ws, FakeRunner()), {"command": "ls -la", "reason": "look"})
    assert call.permission == "read"
    assert call.mutating is False
    assert call.summary == "bash_command(ls -la)"
    assert call.decision is not None
    assert call.decision["allowed"] is True


def test_command_mode_needs_command_and_mutates(ws: Path) -> None:
    call = TOOL.prepare(_ctx(ws, FakeRunner()), {"command": "pytest -q", "reason": "tests"})
    assert call.permission == "command"
    assert call.mutating is True


def test_denied_command_raises_with_the_decision(ws: Path) -> None:
    with pytest.raises(PolicyDenied) as info:
        TOOL.prepare(_ctx(ws, FakeRunner()), {"command": "curl http://example.com", "reason": "x"})
    assert "curl" in str(info.value)
    assert info.value.decision.allowed is False


def test_simple_command_runs_as_the_policys_argv(ws: Path) -> None:
    runner = FakeRunner()
    TOOL.prepare(_ctx(ws, runner), {"command": "grep -n 'a b' a.txt"}).execute()
    request = runner.requests[0]
    assert request.argv == ("grep", "-n", "a b", "a.txt")
    assert request.script is None
    assert ws / ".git" in request.protected


def test_pipeline_runs_as_a_script(ws: Path) -> None:
    runner = FakeRunner()
    TOOL.prepare(_ctx(ws, runner), {"command": "ls | head -1"}).execute()
    assert runner.requests[0].argv is None
    assert runner.requests[0].script == "ls | head -1"


def test_argv_form_never_uses_a_shell(ws: Path) -> None:
    runner = FakeRunner()
    call = TOOL.prepare(_ctx(ws, runner), {"command": "cat", "args": ["a.txt; rm -rf /"]})
    call.execute()
    assert runner.requests[0].argv == ("cat", "a.txt; rm -rf /")
    assert runner.requests[0].script is None


def test_directory_is_resolved_inside_the_workspace(ws: Path) -> None:
    runner = FakeRunner()
    TOOL.prepare(_ctx(ws, runner), {"command": "ls", "directory": "src"}).execute()
    assert runner.requests[0].cwd == ws / "src"
    with pytest.raises(PolicyDenied):
        TOOL.prepare(_ctx(ws, runner), {"command": "ls", "directory": "../"})
    with pytest.raises(ToolInputError, match="not a directory"):
        TOOL.prepare(_ctx(ws, runner), {"command": "ls", "directory": "a.txt"})


@pytest.mark.parametrize(
    "args",
    [
        {"command": "echo '{}' > settings.json", "directory": ".vscode"},
        {"command": "echo x >> tasks.json", "directory": ".vscode"},
        {"command": "cat a.txt > ../.envrc", "directory": "src"},
        {"command": "cat ../../../etc/passwd", "directory": "src/deep"},
    ],
)
def test_paths_are_judged_from_the_directory_the_command_runs_in(ws: Path, args: dict[str, object]) -> None:
    """Judged from the workspace root these paths look harmless; from `directory` they are not."""
    (ws / ".vscode").mkdir()
    (ws / "src" / "deep").mkdir()
    with pytest.raises(PolicyDenied):
        TOOL.prepare(_ctx(ws, FakeRunner()), args)


def test_relative_paths_from_a_subdirectory_may_reach_the_rest_of_the_workspace(ws: Path) -> None:
    call = TOOL.prepare(_ctx(ws, FakeRunner()), {"command": "cat ../a.txt", "directory": "src"})
    assert call.permission == "read"


@pytest.mark.parametrize(
    "args",
    [{}, {"command": ""}, {"command": 3}, {"command": "ls", "extra": 1}, {"command": "cat", "args": "a"}],
)
def test_bad_input_is_a_clear_error(ws: Path, args: dict[str, object]) -> None:
    with pytest.raises(ToolInputError):
        TOOL.prepare(_ctx(ws, FakeRunner()), args)


def test_dry_run_text_and_details(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-x")
    runner = FakeRunner()
    config = replace(EffectiveConfig(), sandbox=SandboxSettings(command_timeout=12, max_output_bytes=2048))
    outcome = TOOL.prepare(
        _ctx(ws, runner, config), {"command": "pytest -q", "reason": "run tests"}
    ).dry_run()
    expected = "Dry-run: would execute command: pytest -q\nReason: run tests\n"
    expected += "Use --tool=command or --tool=all to execute"
    assert outcome.text == expected
    assert outcome.result["argv"] == ["pytest", "-q"]
    assert outcome.result["cwd"] == str(ws)
    assert outcome.result["backend"] == "fake"
    assert outcome.result["limits"] == {"timeout_seconds": 12, "max_output_bytes": 2048}
    assert "PATH" in outcome.result["env"]
    assert "ANTHROPIC_API_KEY" not in outcome.result["env"]
    assert "GITHUB_TOKEN" not in outcome.result["env"]
    assert runner.requests == []  # nothing ran


def test_success_shape(ws: Path) -> None:
    outcome = TOOL.prepare(_ctx(ws, FakeRunner(lambda r: _result())), {"command": "ls"}).execute()
    assert outcome.ok
    assert outcome.result == {"stdout": "out\n", "stderr": "", "exit_code": 0, "duration_ms": 12}
    assert outcome.sandbox == "fake"


def test_failure_shape(ws: Path) -> None:
    runner = FakeRunner(lambda r: _result(exit_code=2, stderr="boom\n"))
    outcome = TOOL.prepare(_ctx(ws, runner), {"command": "ls nothing"}).execute()
    assert not outcome.ok
    assert outcome.result["error"] == "command failed: exit code 2"
    assert outcome.result["exit_code"] == 2
    assert "boom" in outcome.text


def test_timeout_shape(ws: Path) -> None:
    runner = FakeRunner(lambda r: _result(timed_out=True, exit_code=-1, stdout="partial\n"))
    outcome = TOOL.prepare(_ctx(ws, runner), {"command": "ls"}).execute()
    assert not outcome.ok
    assert outcome.result["error"] == "command timeout after 30s"
    assert outcome.result["exit_code"] == -1
    assert outcome.result["stdout"] == "partial\n"


def test_truncated_output_carries_the_suggestion(ws: Path) -> None:
    runner = FakeRunner(lambda r: _result(stdout_truncated=True))
    outcome = TOOL.prepare(_ctx(ws, runner), {"command": "ls"}).execute()
    assert outcome.result["stdout_truncated"] is True
    assert outcome.result["suggestion"] == "Use output filtering or pagination"


def test_no_isolation_warning_is_carried(ws: Path) -> None:
    warning = "Warning: sandbox unavailable, running without isolation"
    runner = FakeRunner(lambda r: _result(backend="none", warning=warning))
    outcome = TOOL.prepare(_ctx(ws, runner), {"command": "ls"}).execute()
    assert outcome.result["warning"] == warning
    assert outcome.sandbox == warning
    assert outcome.text.startswith(warning)


def test_transforms_are_applied_before_validation_and_shown(ws: Path) -> None:
    runner = FakeRunner()
    config = replace(EffectiveConfig(), transforms=TRANSFORM_PRESETS)
    call = TOOL.prepare(_ctx(ws, runner, config), {"command": "pytest tests"})
    outcome = call.execute()
    assert runner.requests[0].argv == ("pytest", "tests", "--tb=short", "--maxfail=5")
    assert outcome.result["original_command"] == "pytest tests"
    assert outcome.result["command"] == "pytest tests --tb=short --maxfail=5"
    assert call.summary == "bash_command(pytest tests --tb=short --maxfail=5)"


def test_transform_rules() -> None:
    rules = (Transform(match="pytest", append="--tb=short --maxfail=5"),)
    assert apply_transforms("pytest -x", None, rules)[0] == "pytest -x --tb=short --maxfail=5"
    assert apply_transforms("pytest --tb=short --maxfail=5", None, rules)[2] == []  # idempotent
    assert apply_transforms("pytest | head", None, rules)[0] == "pytest | head"  # never a pipeline
    assert apply_transforms("pytester", None, rules)[0] == "pytester"  # whole words only
    assert apply_transforms("pytest", ["-q"], rules)[1] == ["-q", "--tb=short", "--maxfail=5"]
    assert apply_transforms("ls", None, ())[2] == []


def test_transforms_are_off_by_default() -> None:
    assert EffectiveConfig().transforms == ()


def test_max_parallel_is_enforced(ws: Path) -> None:
    running = 0
    peak = 0
    lock = threading.Lock()
    release = threading.Event()
    entered = threading.Semaphore(0)

    def slow(request: RunRequest) -> RunResult:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        entered.release()
        release.wait()
        with lock:
            running -= 1
        return _result()

    config = replace(EffectiveConfig(), sandbox=SandboxSettings(max_parallel=2))
    runner = FakeRunner(slow)
    calls = [TOOL.prepare(_ctx(ws, runner, config), {"command": "ls"}) for _ in range(4)]
    threads = [threading.Thread(target=c.execute) for c in calls]
    for t in threads:
        t.start()
    entered.acquire()
    entered.acquire()
    assert len(runner.requests) == 2  # the other two wait for a slot
    release.set()
    for t in threads:
        t.join()
    assert len(runner.requests) == 4
    assert peak == 2


def test_cancel_while_waiting_for_a_slot(ws: Path) -> None:
    config = replace(EffectiveConfig(), sandbox=SandboxSettings(max_parallel=1))
    release = threading.Event()
    started = threading.Event()

    def block(request: RunRequest) -> RunResult:
        started.set()
        release.wait()
        return _result()

    runner = FakeRunner(block)
    first = threading.Thread(target=TOOL.prepare(_ctx(ws, runner, config), {"command": "ls"}).execute)
    first.start()
    started.wait()
    ctx = _ctx(ws, runner, config)
    ctx.cancel.set()
    outcome = TOOL.prepare(ctx, {"command": "ls"}).execute()
    release.set()
    first.join()
    assert not outcome.ok
    assert "cancelled" in outcome.text
    assert len(runner.requests) == 1


def test_read_mode_runs_with_a_read_only_workspace(ws: Path) -> None:
    runner = FakeRunner()
    TOOL.prepare(_ctx(ws, runner), {"command": "ls"}).execute()
    TOOL.prepare(_ctx(ws, runner), {"command": "pytest -q"}).execute()
    assert [r.read_only_workspace for r in runner.requests] == [True, False]


def test_a_path_entry_through_a_workspace_symlink_refuses_writing_commands(
    ws: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.venv -> elsewhere` on PATH: a command could swap the link for a directory of its own."""
    elsewhere = tmp_path_factory.mktemp("virtualenvs") / "app"
    (elsewhere / "bin").mkdir(parents=True)
    (ws / ".venv").symlink_to(elsewhere)
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}:/usr/bin:/bin")
    with pytest.raises(ToolInputError, match=r"goes through \.venv, a symlink inside the workspace"):
        TOOL.prepare(_ctx(ws, FakeRunner()), {"command": "python3 -m pytest -q"})
    assert TOOL.prepare(_ctx(ws, FakeRunner()), {"command": "ls"}).permission == "read"
    monkeypatch.setenv("PATH", f"{elsewhere / 'bin'}:/usr/bin:/bin")  # the target itself is fine
    assert TOOL.prepare(_ctx(ws, FakeRunner()), {"command": "python3 -m pytest -q"}).permission == "command"


def test_a_command_with_a_writable_git_runs_alone() -> None:
    """It waits for the running ones, and ones arriving meanwhile wait for it (no starvation)."""
    from tether.core.tools.bash import _AloneOrTogether

    exclusion = _AloneOrTogether()
    never = threading.Event()
    order: list[str] = []
    assert exclusion.acquire(False, never)  # a command running

    def alone() -> None:
        assert exclusion.acquire(True, never)
        order.append("alone")
        exclusion.release(True)

    def together() -> None:
        assert exclusion.acquire(False, never)
        order.append("together")
        exclusion.release(False)

    first = threading.Thread(target=alone)
    first.start()
    while not exclusion._waiting_alone:  # the alone one is waiting for the running command
        threading.Event().wait(0.01)
    second = threading.Thread(target=together)
    second.start()
    second.join(timeout=0.5)
    assert second.is_alive()  # arriving while one waits to run alone: it waits too
    assert order == []
    exclusion.release(False)  # the running command ends
    first.join(timeout=5)
    second.join(timeout=5)
    assert order == ["alone", "together"]
    cancelled = threading.Event()
    cancelled.set()
    assert exclusion.acquire(False, never)
    assert not exclusion.acquire(True, cancelled)  # cancelled while waiting: gives up, holds nothing
    exclusion.release(False)
    assert exclusion.acquire(True, never)
