"""The checks CI runs (.ci/lint, the `lint` extra) and the pre-commit hooks use the same pinned
tool versions, so a commit that passes the hooks passes CI and the reverse."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lint_pins() -> dict[str, str]:
    extra = re.search(r"^lint = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(), re.M)
    assert extra, "pyproject.toml has no `lint` extra"
    return dict(re.findall(r'"([\w-]+)==([\w.]+)"', extra.group(1)))


def test_lint_extra_pins_every_tool() -> None:
    assert set(lint_pins()) == {"ruff", "mypy", "clang-format"}


def test_pre_commit_hooks_use_the_pinned_versions() -> None:
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    revs = dict(re.findall(r"repo: \S+/(?:mirrors-)?([\w-]+?)(?:-pre-commit)?\n\s+rev: v([\w.]+)", config))
    pins = lint_pins()
    assert revs == {name: pins[name] for name in revs}
    assert {"ruff", "clang-format"} <= set(revs)


def test_ci_runs_the_checks_with_warnings_as_errors() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    lint = (ROOT / ".ci" / "lint").read_text()
    assert "PYPTO_WARNINGS_AS_ERRORS=ON" in run and ".ci/lint" in run
    for check in ("ruff check", "ruff format --check", "clang-format --dry-run --Werror", "mypy pypto"):
        assert check in lint


def test_package_ships_type_information() -> None:
    assert (ROOT / "pypto" / "py.typed").is_file()
