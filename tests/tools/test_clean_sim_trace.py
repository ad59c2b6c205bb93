"""clean_sim_trace on a vendor-layout file built by hand: lanes, sub-lanes, flows, metrics,
the command line (outputs, copies, errors) and the container format itself."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from vendor_bin import api_instr, trace_events, vendor_bin

from pypto.report.opprof_format import SOURCE, ContainerError, iter_blocks, pack_block
from pypto.tools import clean_sim_trace as cst


def lanes_of(trace: dict) -> dict[str, list[str]]:
    """Process name → its lane labels' first word, in sort order."""
    procs = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    order = {
        e["pid"]: e["args"]["sort_index"] for e in trace["traceEvents"] if e["name"] == "process_sort_index"
    }
    lanes: dict[str, list[tuple[int, str]]] = {procs[p]: [] for p in sorted(procs, key=order.get)}
    sort = {(e["pid"], e["tid"]): e["args"]["sort_index"] for e in trace["traceEvents"]
            if e["name"] == "thread_sort_index"}  # fmt: skip
    for e in trace["traceEvents"]:
        if e["name"] == "thread_name":
            lanes[procs[e["pid"]]].append((sort[(e["pid"], e["tid"])], e["args"]["name"].split(" ")[0]))
    return {p: [name for _, name in sorted(v)] for p, v in lanes.items()}


def lane_names(trace: dict) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"].split(" ")[0] for e in trace["traceEvents"]
            if e["name"] == "thread_name"}  # fmt: skip


def slices(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


@pytest.fixture
def vendor(tmp_path: Path) -> Path:
    sim = tmp_path / "OPPROF_20260101120000_001" / "simulator"
    sim.mkdir(parents=True)
    (sim / "visualize_data.bin").write_bytes(vendor_bin())
    (sim / "trace.json").write_text(json.dumps({"traceEvents": trace_events()}))
    return sim.parent


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cst.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_vendor_file_lanes_in_dataflow_order_with_sub_lanes(vendor: Path, capsys):
    code, out, _ = run([vendor], capsys)
    sim = vendor / "simulator"
    assert code == 0
    assert f"wrote {sim / 'trace.clean.json'}" in out.splitlines()
    assert f"wrote {sim / 'instr_metrics.json'}" in out.splitlines()
    trace = json.loads((sim / "trace.clean.json").read_text())
    # Cube core first; pipeline lanes only, MTE2 before VECTOR before MTE3; the two
    # overlapping loads split into MTE2 and MTE2#1.
    assert lanes_of(trace) == {
        "core0.cubecore0": ["CUBE"],
        "core0.veccore0": ["MTE2", "MTE2#1", "VECTOR", "MTE3"],
    }
    names = {e["name"] for e in slices(trace)}
    assert names == {"MOV_SRC_TO_DST_ALIGN", "VADD", "MOV_UB_TO_OUT", "MMAD"}  # no flags, scalar or noise
    # Timestamps verbatim: every kept slice is an input slice, unchanged.
    kept = {(e["name"], e["ts"], e["dur"]) for e in slices(trace)}
    raw = {(e["name"], e["ts"], e["dur"]) for e in trace_events() if e["ph"] == "X"}
    assert kept <= raw and len(kept) == 6
    assert (sim / "visualize_data.bin").read_bytes() == vendor_bin()  # input untouched
    assert not (sim / "raw_simulator").exists()  # written next to the input: nothing copied


def test_no_two_slices_overlap_on_one_lane(vendor: Path, capsys):
    run([vendor], capsys)
    trace = json.loads((vendor / "simulator" / "trace.clean.json").read_text())
    by_lane: dict[tuple, list[tuple[float, float]]] = {}
    for e in slices(trace):
        by_lane.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_lane.values():
        spans.sort()
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))


def test_flags_become_arrows_from_producer_to_consumer(vendor: Path, capsys):
    _, out, _ = run([vendor], capsys)
    trace = json.loads((vendor / "simulator" / "trace.clean.json").read_text())
    names = lane_names(trace)
    flows = [e for e in trace["traceEvents"] if e.get("cat") == "sync"]
    starts = {e["id"]: e for e in flows if e["ph"] == "s"}
    ends = {e["id"]: e for e in flows if e["ph"] == "f"}
    assert starts.keys() == ends.keys() and len(starts) == 3
    assert all(e["bp"] == "e" for e in ends.values())

    def enclosing(ev: dict) -> dict:  # the slice a flow event binds to
        (hit,) = [s for s in slices(trace) if (s["pid"], s["tid"]) == (ev["pid"], ev["tid"])
                  and s["ts"] <= ev["ts"] <= s["ts"] + s["dur"]]  # fmt: skip
        return hit

    pairs = []
    for i, s in starts.items():
        prod, cons = enclosing(s), enclosing(ends[i])
        assert prod["ts"] + prod["dur"] <= cons["ts"] + 1e-9  # producer ends before the consumer starts
        pairs.append((prod["name"], names[(prod["pid"], prod["tid"])], cons["name"], cons["ts"]))
    assert sorted(pairs) == [
        ("MOV_SRC_TO_DST_ALIGN", "MTE2#1", "VADD", 3.05),  # FIFO: first set -> first wait
        ("MOV_SRC_TO_DST_ALIGN", "MTE2#1", "VADD", 3.6),
        ("VADD", "VECTOR", "MOV_UB_TO_OUT", 4.2),
    ]
    assert trace["otherData"]["skipped_flags"] == 1  # the set nobody waits for
    assert "1 sync flags skipped" in out


def test_keep_scalar_adds_the_scalar_lane_last(vendor: Path, capsys):
    run([vendor, "--keep-scalar"], capsys)
    trace = json.loads((vendor / "simulator" / "trace.clean.json").read_text())
    assert lanes_of(trace)["core0.veccore0"] == ["MTE2", "MTE2#1", "VECTOR", "MTE3", "SCALAR"]


def test_metrics_reshaped_per_core_or_kept_raw(vendor: Path, tmp_path: Path, capsys):
    run([vendor], capsys)
    metrics = json.loads((vendor / "simulator" / "instr_metrics.json").read_text())
    assert metrics["cores"] == ["core0.cubecore0", "core0.veccore0"]
    vadd = metrics["instructions"]["core0.veccore0"][1]
    assert vadd == {"address": "0x30", "source": "VADD", "pipe": "VECTOR", "cycles": 185,
                    "instructions_executed": 2, "vector_utilization_percentage": 12.5}  # fmt: skip
    assert metrics["instructions"]["core0.cubecore0"][1]["cycles"] == 0
    assert metrics["column_types"] == api_instr()["Instructions Dtype"]
    run([vendor, "-o", tmp_path / "raw", "--raw-metrics"], capsys)
    assert json.loads((tmp_path / "raw" / "instr_metrics.json").read_text()) == api_instr()


def test_output_elsewhere_copies_the_raw_files(vendor: Path, tmp_path: Path, capsys):
    out = tmp_path / "clean"
    code, stdout, _ = run([vendor / "simulator" / "visualize_data.bin", "-o", out], capsys)
    assert code == 0 and f"wrote {out / 'trace.clean.json'}" in stdout
    assert sorted(p.name for p in (out / "raw_simulator").iterdir()) == ["trace.json", "visualize_data.bin"]
    assert (out / "raw_simulator" / "visualize_data.bin").read_bytes() == vendor_bin()
    assert not (vendor / "simulator" / "trace.clean.json").exists()


def test_missing_api_instr_block_still_writes_the_trace(tmp_path: Path, capsys):
    path = tmp_path / "visualize_data.bin"
    path.write_bytes(vendor_bin(with_api=False))
    code, out, err = run([path], capsys)
    assert code == 0 and (tmp_path / "trace.clean.json").exists()
    assert not (tmp_path / "instr_metrics.json").exists() and "no API_INSTR block" in err


@pytest.mark.parametrize(
    "data, message",
    [
        (None, "no such file or directory"),
        (vendor_bin(with_trace=False), "has no TRACE block"),
        (vendor_bin()[:-7], "corrupt block at offset"),
        (vendor_bin()[:11] + b"\x00" + vendor_bin()[12:], "magic 0x00, expected 0x5a"),
        (struct.pack("<QBBBB", 5, 2, 1, 0, 0x5A) + b"{bad", "corrupt block at offset 0"),
        (struct.pack("<QBBBB", 4, 2, 0, 0, 0x5A) + b"{ba}", "TRACE block at offset 0 is not valid JSON"),
    ],
    ids=["missing", "no-trace", "truncated", "bad-magic", "overrun", "bad-json"],
)
def test_bad_inputs_are_errors(tmp_path: Path, capsys, data: bytes | None, message: str):
    path = tmp_path / "visualize_data.bin"
    if data is not None:
        path.write_bytes(data)
    code, out, err = run([path], capsys)
    assert code == 1 and err.startswith("error: ") and message in err, err
    assert not (tmp_path / "trace.clean.json").exists()


def test_folder_without_a_bin_is_an_error(tmp_path: Path, capsys):
    code, _, err = run([tmp_path], capsys)
    assert code == 1 and "error: no visualize_data.bin in" in err


def test_container_round_trip_and_source_path():
    data = pack_block(SOURCE, b"print(1)\n", path="/src/k.py") + pack_block(2, b'{"traceEvents":[]}')
    assert len(data) % 4 == 0
    src, trace = iter_blocks(data)
    assert (src.type, src.path, src.payload) == (SOURCE, "/src/k.py", b"print(1)\n")
    assert (trace.type, trace.payload, trace.offset) == (
        2,
        b'{"traceEvents":[]}',
        len(src.payload) + 4096 + 12 + 3,
    )
    hand = [(b.type, b.version, b.path) for b in iter_blocks(vendor_bin())]
    assert hand == [(1, 0, "/home/me/add_custom.cpp"), (9, 0, ""), (2, 0, ""), (4, 0x5A, "")]
    with pytest.raises(ContainerError, match="trailing bytes"):
        list(iter_blocks(data + b"\x01\x02"))


def test_runs_as_a_module(vendor: Path, tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "pypto.tools.clean_sim_trace", str(vendor), "-o", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,  # not the checkout (no _native there)
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"wrote {tmp_path / 'o' / 'trace.clean.json'}" in done.stdout
    missing = subprocess.run([sys.executable, "-m", "pypto.tools.clean_sim_trace", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    assert missing.returncode == 1 and "error: no such file or directory" in missing.stderr


def test_a_glob_matching_several_runs_cleans_each_into_its_own_folder(tmp_path: Path, capsys):
    """Two traced runs into one output_dir leave two OPPROF folders; the documented
    ``OPPROF_*`` glob then names both, and each is cleaned apart (none overwrites another)."""
    import numpy as np
    import seed_kernels as sk

    from pypto.runtime import RunConfig

    a = np.ones((sk.ROWS, sk.TC), np.float32)
    for _ in range(2):
        sk.single_buffer(a, np.zeros_like(a), config=RunConfig(trace=True, output_dir=tmp_path / "b"))
    folders = sorted((tmp_path / "b" / "trace" / "single_buffer_incore_0").glob("OPPROF_*"))
    assert len(folders) == 2
    code, out, err = run([*folders, "-o", tmp_path / "out"], capsys)
    assert code == 0 and err == "", err
    for folder in folders:
        clean = json.loads((tmp_path / "out" / folder.name / "trace.clean.json").read_text())
        assert len(slices(clean)) == 3 * sk.NT
        assert f"wrote {tmp_path / 'out' / folder.name / 'trace.clean.json'}" in out
    code, out, err = run([*folders], capsys)  # without -o: next to each input
    assert code == 0 and all((f / "simulator" / "trace.clean.json").is_file() for f in folders)


def test_slices_get_their_source_line_from_the_metrics_block_by_address(tmp_path: Path):
    """The raw events name an instruction by pc_addr; the API_INSTR block names each address's
    source line once. Every clean slice whose address has a line gets it as args.source_line
    (compact text or not, args empty of other members or not); one with a line of its own, an
    unknown address or no address keeps its args as they were."""
    lane = {"pid": "core0.veccore0", "tid": "VECTOR", "dur": 1}
    events = [
        {"name": "A", "ph": "X", "ts": 0, **lane, "args": {"pc_addr": "0x10", "bytes": 4}},
        {"name": "B", "ph": "X", "ts": 2, **lane, "args": {"pc_addr": "0x20"}},
        {"name": "C", "ph": "X", "ts": 4, **lane, "args": {"pc_addr": "0x10", "source_line": "mine.py:1:1"}},
        {"name": "D", "ph": "X", "ts": 6, **lane, "args": {"pc_addr": "0x99"}},
        {"name": "E", "ph": "X", "ts": 8, **lane, "args": {}},
    ]
    api = {"Cores": ["core0.veccore0"], "Instructions": [
        {"Address": "0x10", "Source": "A", "AscendC Inner Code": "k.py:7:3"},
        {"Address": "0x20", "Source": "B", "AscendC Inner Code": "k.py:9:5 \"q\""},
        {"Address": "0x99", "Source": "D", "AscendC Inner Code": ""},
    ]}  # fmt: skip
    want = ["k.py:7:3", 'k.py:9:5 "q"', "mine.py:1:1", None, None]
    for spaced in (False, True):  # compact text is spliced, any other rewritten member by member
        text = json.dumps({"traceEvents": events}, separators=(", ", ": ") if spaced else (",", ":"))
        folder = tmp_path / f"spaced{spaced}"
        folder.mkdir()
        bin_path = folder / "visualize_data.bin"
        bin_path.write_bytes(pack_block(2, text.encode()) + pack_block(4, json.dumps(api).encode()))
        cst.clean_file(bin_path)
        got = sorted(slices(json.loads((folder / "trace.clean.json").read_text())), key=lambda e: e["name"])
        assert [e["args"].get("source_line") for e in got] == want
        assert [
            {k: v for k, v in e["args"].items() if k != "source_line" or e["name"] == "C"} for e in got
        ] == [e["args"] for e in events]
        assert list(got[0]["args"]) == ["pc_addr", "bytes", "source_line"]  # added as the last member
