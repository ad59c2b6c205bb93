"""Helpers for the tools tests: compiled seed dumps and a headless Chromium runner."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tool_kernels

CHROMIUM_MISSING = "chromium is not installed (apt-get install chromium; .ci/run installs it)"


@dataclass
class Page:
    """What a headless Chromium made of one local page."""

    dom: str
    console: list[str]  # the page's console output, one entry per message
    screenshot: Path | None


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory):
    """chromium(page.html, screenshot=path) -> Page: the DOM after the page's scripts ran,
    its console lines, and a PNG screenshot. No network: local files only."""
    exe = _chromium()
    if exe is None:
        pytest.skip(CHROMIUM_MISSING)
    profile = tmp_path_factory.mktemp("chromium-profile")
    flags = [exe, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
             "--disable-background-networking", f"--user-data-dir={profile}", "--enable-logging=stderr",
             "--v=0", "--window-size=1500,1000"]  # fmt: skip

    def run(page: Path, screenshot: Path | None = None, fragment: str = "") -> Page:
        url = page.resolve().as_uri() + fragment
        done = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
        if screenshot is not None:
            shot = subprocess.run(
                [*flags, f"--screenshot={screenshot}", url], capture_output=True, timeout=120
            )
            assert shot.returncode == 0, shot.stderr[-2000:]
        return Page(done.stdout, console, screenshot)

    return run
