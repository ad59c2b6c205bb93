"""Whole kernels against a peer simulator: pto-isa's Perf-Sim (its ``__COSTMODEL`` pipeline
simulator) runs its own perf-sim test kernels; the same kernels, ported instruction for
instruction to ``<pypto/kernel.hpp>`` (``benchmarks/kernels/peer_*.cpp``), run here under
``RunConfig(cost_profile="pto-isa")``. Prints, per kernel, Perf-Sim's total cycles and ours, and
each pipe's busy-cycle error.

Perf-Sim's figures below were measured at pto-isa revision f35e7f60 (gcc 12, googletest);
``--pto-isa DIR`` (or ``PTO_ISA_DIR``) names a checkout of that revision to build and measure
again (a few minutes on two cores; it writes only under DIR). Without one the recorded figures
are used and the script says so. Nothing here runs at install or in CI.

Perf-Sim keys a flag by its destination pipe and id only, so in its GEMM the accumulator's
FIX->M wait (id 0) is satisfied early by the MTE1->M flags of id 0: the next output tile's
matmuls overwrite the accumulator while it is still being stored. The "ids apart" column is
Perf-Sim on a copy of that kernel with the FIX->M pair on id 2 (nothing else changed) — the
schedule the kernel's flags mean, which is the one our model runs (docs/calibration.md).

Run: python benchmarks/peer_perfsim.py [--pto-isa DIR]
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pypto import platforms
from pypto.kernel_build import KernelSource, build_kernel
from pypto.runtime import run_kernel_file

KERNELS = Path(__file__).resolve().parent / "kernels"
REVISION = "f35e7f60"
TOTAL_TOLERANCE, PIPE_TOLERANCE = 0.05, 0.10
# Perf-Sim's pipe rows and ours (its AIC MTE2 and AIV MTE2 are both our MTE2).
PIPES = {"MTE2(AIC)": "MTE2", "MTE2(AIV)": "MTE2", "MTE1": "MTE1", "CUBE": "CUBE", "FIXP": "FIXPIPE"}
PIPES.update({"VEC": "VECTOR", "MTE3": "MTE3"})

Figures = dict[str, tuple[int, dict[str, int]]]  # report name -> (total, busy per pipe row)

# Perf-Sim at f35e7f60, core 0; and the totals with the GEMM's FIX->M flags on their own id.
RECORDED: Figures = {
    "runGemm_128x64x256": (3024, {"MTE2(AIC)": 627, "MTE1": 321, "CUBE": 518, "FIXP": 1614}),
    "runGemm_1536x256x1024": (
        139420,
        {"MTE2(AIC)": 120384, "MTE1": 61632, "CUBE": 99456, "FIXP": 77472},
    ),
    "runGemm_256x4096x256": (87313, {"MTE2(AIC)": 80256, "MTE1": 41088, "CUBE": 66304, "FIXP": 3228}),
}
RECORDED_IDS_APART = {
    "runGemm_128x64x256": 3024,
    "runGemm_1536x256x1024": 182465,
    "runGemm_256x4096x256": 87313,
}


@dataclass(frozen=True)
class Port:
    """One of Perf-Sim's test kernels (its gtest name and the report name it prints) and the
    GEMM shape and K-block depth its port runs."""

    test: str
    report: str
    m: int
    k: int
    n: int
    step_k: int


PORTS = [
    Port("GemmPerfSim.Small_128x64x256", "runGemm_128x64x256", 128, 64, 256, 1),
    Port("GemmPerfSim.Medium_1536x256x1024", "runGemm_1536x256x1024", 1536, 256, 1024, 4),
    Port("GemmPerfSim.LargeK_256x4096x256", "runGemm_256x4096x256", 256, 4096, 256, 4),
]


def run_port(port: Port) -> tuple[int, dict[str, int]]:
    """Our cycles for a port under the pto-isa profile (its result checked against numpy), and
    each pipe's busy cycles (its instructions; flags take no pipe time under this profile)."""
    so = build_kernel(KernelSource(name="peer_gemm", path=KERNELS / "peer_gemm.cpp"), platform="a2a3sim")
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (port.m, port.k)).astype(np.float16)
    b = rng.uniform(-1, 1, (port.k, port.n)).astype(np.float16)
    c = np.zeros((port.m, port.n), np.float32)
    plat = platforms.get("a2a3sim", cost_profile="pto-isa")
    rep = run_kernel_file(so, [a, b, c, port.step_k], outputs={2}, platform=plat, core="aic", record=True)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
    busy: dict[str, int] = {}
    for row in rep.tasks[0].trace.rows():
        busy[row["pipe_name"]] = busy.get(row["pipe_name"], 0) + row["end"] - row["start"]
    return rep.cycles, busy


def run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    """Runs one build step; a failure names the step and ends with its own last output lines."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{tail}")
    return done


def build_peer(tree: Path, build: Path) -> Path:
    """Builds the GEMM Perf-Sim test from ``tree`` (a pto-isa checkout or a copy of part of one;
    its formula headers are generated first, as pto-isa's own test runner does) into ``build``;
    returns the folder of the binary."""
    for arch in ("a2a3", "a5"):
        gen = tree / "include/pto/costmodel" / arch / "formula_costmodel/gen_formula_params_header.py"
        run([sys.executable, gen], cwd=tree)
    env = dict(os.environ, CC="gcc-12", CXX="g++-12")
    configure = ["cmake", "-S", tree / "tests/costmodel/perf_sim_st", "-B", build]
    configure += ["-DCMAKE_BUILD_TYPE=Release", "-DTEST_CASE=gemm_perf_sim"]
    run(configure, env=env)
    run(["cmake", "--build", build, "-j2"])
    return build / "bin"


def ids_apart_copy(root: Path) -> Path:
    """A copy of the parts of the checkout the GEMM test builds from, its kernel's FIX->M flag
    pair moved from id 0 to id 2 (no other flag of the kernel uses id 2)."""
    copy = root / "build_perfsim_ids_apart" / "src"
    for part in ("include", "kernels/manual/a2a3/gemm_performance", "tests/costmodel/perf_sim_st"):
        shutil.copytree(root / part, copy / part, dirs_exist_ok=True)
    kernel = copy / "kernels/manual/a2a3/gemm_performance/gemm_performance_kernel.cpp"
    text = kernel.read_text()
    pair = "SetFlag<PIPE_FIX, PIPE_M>(0);\n    WaitFlag<PIPE_FIX, PIPE_M>(0);"
    if pair not in text:
        raise RuntimeError(f"{kernel}: the FIX->M flag pair is not where revision {REVISION} has it")
    kernel.write_text(text.replace(pair, pair.replace("(0)", "(2)")))
    return copy


def parse_reports(text: str) -> Figures:
    """Perf-Sim's printed reports: name -> (total cycles, core 0's busy cycles per pipe row)."""
    out = {}
    for block in text.split("===== Perf-Sim Report: ")[1:]:
        name = block.split(" ", 1)[0].strip()
        found = re.search(r"Total cycles : (\d+)", block)
        if found is None:
            raise RuntimeError(f"Perf-Sim report {name} has no total")
        pipes = {}
        for row, value in re.findall(r"^\s*([A-Z0-9()]+) \|\s*(\d+|-)\s*\|", block, re.M):
            if row in PIPES and value != "-":
                pipes[row] = int(value)
        out[name] = (int(found.group(1)), pipes)
    return out


def run_gemm_test(bins: Path) -> Figures:
    return parse_reports(run([bins / "gemm_perf_sim"], cwd=bins).stdout)


def peer_figures(root: Path | None) -> tuple[Figures, dict[str, int], str]:
    """Perf-Sim's figures, its totals with the flag ids apart, and where they come from."""
    missing = [tool for tool in ("cmake", "gcc-12", "g++-12") if shutil.which(tool) is None]
    if root is not None and not (root / "include/pto/costmodel/perf_sim").is_dir():
        logging.warning("%s is not a pto-isa checkout with Perf-Sim; using the recorded figures", root)
        root = None
    elif root is not None and missing:
        logging.warning("building Perf-Sim needs %s; using the recorded figures", ", ".join(missing))
        root = None
    if root is None:
        where = f"Perf-Sim figures recorded at pto-isa {REVISION} (build it: --pto-isa DIR or PTO_ISA_DIR)"
        return RECORDED, RECORDED_IDS_APART, where
    figures = run_gemm_test(build_peer(root, root / "build_perfsim"))
    apart = run_gemm_test(build_peer(ids_apart_copy(root), root / "build_perfsim_ids_apart" / "build"))
    return figures, {name: total for name, (total, _) in apart.items()}, f"Perf-Sim built and run from {root}"


def error(ours: float, ref: float) -> float:
    return ours / ref - 1 if ref else 0.0


def rows(root: Path | None = None) -> list[str]:
    """The whole-kernel table: per ported kernel, Perf-Sim's cycles, ours, the error (a case
    outside +-5% total or +-10% on a pipe is marked), Perf-Sim with the flag ids apart and our
    error against that, and each pipe's busy-cycle error."""
    figures, apart, where = peer_figures(root)
    head = f"{'kernel':<34}{'Perf-Sim':>10}{'ours':>8}{'error':>8}  ok {'ids apart':>10}{'error':>8}  pipes"
    lines = [where, head]
    for port in PORTS:
        peer_total, peer_pipes = figures[port.report]
        total, busy = run_port(port)
        errs = {PIPES[p]: error(busy.get(PIPES[p], 0), v) for p, v in peer_pipes.items()}
        err = error(total, peer_total)
        ok = abs(err) <= TOTAL_TOLERANCE and all(abs(e) <= PIPE_TOLERANCE for e in errs.values())
        pipes = ", ".join(f"{p} {e:+.1%}" for p, e in errs.items())
        both = f"{apart[port.report]:>10}{error(total, apart[port.report]):>+8.1%}"
        lines.append(
            f"{port.test:<34}{peer_total:>10}{total:>8}{err:>+8.1%}  {'yes' if ok else 'NO '}{both}  {pipes}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = os.environ.get("PTO_ISA_DIR")
    parser.add_argument("--pto-isa", type=Path, default=default, help="a pto-isa checkout at f35e7f60")
    args = parser.parse_args()
    for line in rows(Path(args.pto_isa) if args.pto_isa else None):
        print(line)


if __name__ == "__main__":
    main()
