"""The trace cleaner's JSON reader (csrc/tools/json_scan.cpp) against yyjson, a maintained C
reader, on clean_sim_trace's payloads — the measurement behind keeping the hand-written one
(docs/dev/architecture.md, "Trace cleaner's JSON reader").

Run: python benchmarks/bench_json_reader.py [--events N] [--yyjson DIR]   (never asserts on time)
yyjson's yyjson.c/.h come from DIR, or else from the sdist of the `yyjson` PyPI package (pip
download). json_reader_compare.cpp is compiled with them and the cleaner's sources (-O3) and
prints, per payload, ms, MB/s and events/s of: validating and walking every event's members
with each reader, and the whole rebuild. Python's json and orjson, which also build the
objects, are printed as reference points.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent / "csrc"
sys.path.insert(0, str(HERE))

import bench_trace  # noqa: E402

from pypto.kernel_build import KernelSource, build_kernel  # noqa: E402
from pypto.report.opprof_format import TRACE, iter_blocks  # noqa: E402
from pypto.report.trace import write_traces  # noqa: E402
from pypto.runtime import run_kernel_file  # noqa: E402


def yyjson_sources(tmp: Path, given: str | None) -> Path:
    if given:
        return Path(given)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "yyjson==4.0.6",
         "-d", str(tmp)], check=True,
    )  # fmt: skip
    (sdist,) = tmp.glob("yyjson-*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp, filter="data")
    (header,) = tmp.glob("yyjson-*/yyjson/yyjson.h")
    return header.parent


def build(tmp: Path, yy: Path) -> Path:
    cxx = os.environ.get("CXX", "c++")
    sources = [HERE / "json_reader_compare.cpp"]
    sources += sorted(p for p in (CSRC / "tools").glob("*.cpp") if p.name != "trace_write.cpp")
    obj = tmp / "yyjson.o"
    subprocess.run(
        [os.environ.get("CC", "cc"), "-O3", "-c", str(yy / "yyjson.c"), "-o", str(obj)], check=True
    )
    exe = tmp / "compare"
    cmd = [cxx, "-O3", "-std=c++17", f"-I{CSRC}", f"-I{yy}", *map(str, sources), str(obj), "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def payloads(tmp: Path, n: int) -> list[tuple[str, Path]]:
    vendor = tmp / "vendor.json"
    vendor.write_bytes(
        next(b.payload for b in iter_blocks(bench_trace.synthetic_trace(n)) if b.type == TRACE)
    )
    so = build_kernel(KernelSource(name="tiny", path=HERE / "kernels" / "tiny_loop.cpp"), platform="a2a3sim")
    (ours,) = write_traces(
        run_kernel_file(so, [n], record=True, name="tiny_loop", isolate=False), tmp / "ours"
    )
    pypto = tmp / "pypto.json"
    pypto.write_bytes(bench_trace._trace_payload(Path(ours)))
    return [("vendor-style synthetic", vendor), ("pypto tiny_loop trace", pypto)]


def python_reference(path: Path) -> None:
    data = path.read_bytes()
    loaders = [("json.loads", json.loads)]
    try:
        import orjson

        loaders.append(("orjson.loads", orjson.loads))
    except ImportError:
        pass
    for label, load in loaders:
        t0 = time.perf_counter()
        load(data)
        secs = time.perf_counter() - t0
        print(f"{label + ' (builds objects)':<34} {secs * 1e3:8.1f} ms {len(data) / 1e6 / secs:8.0f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--yyjson", help="a folder with yyjson.c and yyjson.h")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pypto-bench-json-"))
    exe = build(tmp, yyjson_sources(tmp, args.yyjson))
    for label, path in payloads(tmp, args.events):
        print(f"== {label}")
        subprocess.run([str(exe), str(path)], check=False)
        python_reference(path)


if __name__ == "__main__":
    main()
