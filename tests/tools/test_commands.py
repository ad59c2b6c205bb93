"""The commands: console scripts beside the ``python -m`` forms, each answering --help and
--version, and the examples answering --help."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import pypto

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "pypto-clean-sim-trace": "pypto.tools.clean_sim_trace",
    "pypto-memory-map": "pypto.tools.memory_map",
    "pypto-report": "pypto.tools.report",
    "pypto-timeline": "pypto.tools.timeline",
}
ENV = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0"}


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # not from the checkout: `python -m` would import its pypto/ (no _native) in a clean clone
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=ENV, cwd=cwd)


def _installed_scripts() -> dict[str, str]:
    eps = metadata.distribution("pypto").entry_points
    return {ep.name: ep.value for ep in eps if ep.group == "console_scripts"}


def test_the_package_declares_the_console_scripts():
    scripts = _installed_scripts()
    if not scripts:
        pytest.skip("this pypto install predates its console scripts: reinstall it (pip install -e .)")
    assert scripts == {name: f"{module}:main" for name, module in COMMANDS.items()}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_answers_help_and_version(name: str, tmp_path: Path):
    module_form = [sys.executable, "-m", COMMANDS[name]]
    forms = [module_form]
    script = Path(sys.executable).parent / name
    if name in _installed_scripts():
        assert script.is_file(), f"{script} was not installed"
        forms.append([str(script)])
    for form in forms:
        version = _run([*form, "--version"], tmp_path)
        assert (version.returncode, version.stdout.strip()) == (0, f"pypto {pypto.__version__}"), (
            version.stderr
        )
        usage = _run([*form, "--help"], tmp_path)
        assert usage.returncode == 0 and usage.stdout.startswith(f"usage: {name} ")


EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_answers_help_without_running(example: str, tmp_path: Path):
    cache = tmp_path / "cache"
    env = {**ENV, "PYPTO_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / example), "--help"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("usage: "), done.stderr
    assert "show this help message" in done.stdout
    assert not cache.exists()  # nothing compiled, built or run


def test_every_example_is_listed():
    assert len(EXAMPLES) >= 11 and {"gemm.py", "flash_attention.py", "qwen3_decode_layer.py"} <= set(EXAMPLES)
