"""Shared fixtures: a private kernel cache per test session and builders for fixture kernels."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KERNELS = FIXTURES / "kernels"
sys.path.insert(0, str(FIXTURES))  # shared kernel modules (seed_kernels) import by name


@pytest.fixture(scope="session", autouse=True)
def _private_kernel_cache(tmp_path_factory: pytest.TempPathFactory):
    """Keeps test builds out of the user's ~/.cache/pypto (and starts them cold)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("PYPTO_CACHE_DIR", str(tmp_path_factory.mktemp("pypto-cache")))
    yield
    mp.undo()


@pytest.fixture(scope="session")
def fixture_kernel():
    """fixture_kernel("exp_double_buffer") -> path of the built .so of tests/fixtures/kernels/<name>.cpp."""
    from pypto.kernel_build import KernelSource, build_kernel

    built: dict[str, Path] = {}

    def get(name: str, platform: str = "a2a3sim") -> Path:
        if (name, platform) not in built:
            src = KernelSource(name=name, path=KERNELS / f"{name}.cpp")
            built[(name, platform)] = build_kernel(src, platform=platform)
        return built[(name, platform)]

    return get


@pytest.fixture(scope="session")
def run_python(tmp_path_factory: pytest.TempPathFactory):
    """run_python(code, cwd=None, timeout=300, **env) -> CompletedProcess of ``code`` run as a
    script in a fresh interpreter: for cases whose failure could kill or hang the test process
    (a segfault, a bad_alloc, a signal). A file, not ``-c``: kernels need their source."""
    import os
    import subprocess
    import textwrap

    scripts = tmp_path_factory.mktemp("scripts")

    def run(code: str, cwd: Path | str | None = None, timeout: float = 300, **env: str):
        script = scripts / f"script_{len(list(scripts.iterdir()))}.py"
        script.write_text(textwrap.dedent(code))
        full = {**os.environ, "SKBUILD_EDITABLE_VERBOSE": "0", "PYTHONPATH": str(FIXTURES), **env}
        return subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=full,
            timeout=timeout,
        )

    return run


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the kernels that went through the compile driver's stages (parse, passes,
    codegen, build) during the test: a hit in either cache adds nothing."""
    from pypto.runtime import jit

    seen: list[str] = []
    real = jit._compile

    def counting(jf, *args, **kwargs):
        seen.append(jf.name)
        return real(jf, *args, **kwargs)

    monkeypatch.setattr(jit, "_compile", counting)
    return seen
