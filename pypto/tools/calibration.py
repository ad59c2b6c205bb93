"""Per-instruction cycles beside their reference figures (docs/calibration.md).

Each case issues one instruction, described exactly as the ISA op describes it, into a fresh
core model of the chosen platform table (the same cost model and core model a kernel's
instructions go through; ``warm`` cases issue it twice back to back and time the second).
The reference is the figure the constant was taken from or is checked against:

- ``device``: a device measurement (device sweeps; upstream PyPTO's on-device L0CostModel);
  the calibration target is +-10%.
- ``pto-isa``: pto-isa's cost-model formula, recomputed here from its published constants; the
  ``pto-isa`` profile reproduces these to +-5%.
- ``other-sim``: pto-isa's figure shown beside a device-profile case for comparison only
  (where it disagrees with a device figure, the device figure wins; docs/calibration.md).
- ``none``: no public figure (the constant is an assumption; docs/calibration.md says why).

``benchmarks/calibrate.py`` prints the tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pypto import _native_testing, platforms
from pypto.hardware import PIPES

DEVICE_TOLERANCE = 0.10
PTO_ISA_TOLERANCE = 0.05
KB = 1024
_GIB = float(1 << 30)
_HZ = 1.85e9  # pto-isa's a2a3 clock (kMainFrequencyHz)

# pto-isa's a2a3 arch table (kA2A3ArchConfig), GiB/s per route.
PTO_ISA_GIB_S = {
    "gm_to_ub": 100.9,
    "gm_to_l1": 135.0,
    "ub_to_gm": 188.46,
    "l0c_to_gm": 70.0,
    "l0c_to_l1": 128.0,
    "l1_to_l0a": 441.0,
    "l1_to_l0b": 220.5,
}
# pto-isa's CCE vector stream model at f35e7f60 (a2a3/cce_costmodel/cce_costmodel_vector_
# compute.hpp): (head + tail at stream start, slope per repeat), the intrinsic each of our
# classes reproduces.
PTO_ISA_VECTOR = {
    "add": ("vadd", 10 + 14, 2),
    "copy": ("vcopy", 11 + 13, 1),
    "binary": ("vmul", 10 + 15, 2),
    "unary": ("vadds", 13 + 18, 1),
    "exp": ("vexp", 13 + 18, 2),
    "div": ("vdiv", 11 + 19, 4),
    "cvt": ("vconv", 14 + 13, 1),
    "cmp": ("vcmpv_ge", 14 + 22, 2),
    "sel": ("vsel", 13 + 14, 2),
    "bitwise": ("vand", 8 + 12, 2),
}
# The device sweeps' single-instruction vector figures: (base, cycles per repeat).
DEVICE_VECTOR = {
    "add": (24, 2.1),  # add is one of the swept binary fp32 ops
    "binary": (24, 2.1),
    "copy": (23, 1.0),  # copies and fills are unary ops
    "unary": (23, 1.0),
    "exp": (31, 2.0),
    "div": (31, 4.0),
}
# Upstream PyPTO L0CostModel (a2a3, on-device sweeps).
DEVICE_L0 = {
    "l1_to_l0a": 129.7,
    "l1_to_l0b": 85.4,
    "mad_head": 21,
    "drain_fixed": 164.0,
    "drain_row": 4.45,
    "drain_bw": 118.0,
    "drain_penalty": 2.6,
}
DEVICE_GM = {"gm_to_ub": 59.0, "gm_to_l1": 78.0, "ub_to_gm": 109.0}  # device sweeps, B/cycle


@dataclass(frozen=True)
class Row:
    """One case: our cycles, the reference figure and where it comes from."""

    cls: str  # instruction class
    case: str
    ours: int
    ref: float | None
    kind: str  # "device", "pto-isa" or "none"
    source: str

    @property
    def error(self) -> float | None:
        return None if not self.ref else self.ours / self.ref - 1.0

    @property
    def tolerance(self) -> float | None:
        return {"device": DEVICE_TOLERANCE, "pto-isa": PTO_ISA_TOLERANCE}.get(self.kind)

    @property
    def within(self) -> bool | None:
        tol, err = self.tolerance, self.error
        return None if tol is None or err is None else abs(err) <= tol

    @property
    def key(self) -> str:
        return f"{self.cls} {self.case}"


def measure(profile: str, pipe: str, spec: dict, warm: bool = False, platform: str = "a2a3sim") -> int:
    """Cycles of one instruction (the second of two back to back when ``warm``)."""
    model = _native_testing.CoreModel(platforms.get(platform, profile).to_native())
    for _ in range(2 if warm else 1):
        model.instr(PIPES.index(pipe), spec)
    model.finish()
    last = model.records[-1]
    return int(last["end"] - last["start"])


def flag_cycles(profile: str, which: str = "set_flag") -> tuple[int, int]:
    """(the run's cycles, the pipe's busy cycles) of one set_flag, wait_flag (on a flag already
    set) or pipe_barrier: its issue slot and its pipe time."""
    model = _native_testing.CoreModel(platforms.get("a2a3sim", profile).to_native())
    v, mte3 = PIPES.index("VECTOR"), PIPES.index("MTE3")
    if which == "wait_flag":
        model.set_flag(mte3, v, 0)
        model.wait_flag(mte3, v, 0)
    elif which == "pipe_barrier":
        model.barrier(v)
    else:
        model.set_flag(v, mte3, 0)
    model.finish()
    before = len(model.records) - 1  # the set issued ahead of a wait is not what is measured
    return int(model.cycles) - before, int(model.pipe_busy[v])


def _gm(link: str, rows: int, row_bytes: int) -> dict:
    cls = "gm_write" if link == "ub_to_gm" else "gm_read"
    return {"class": cls, "link": link, "rows": rows, "row_bytes": row_bytes}


def _gm_pipe(link: str) -> str:
    return "MTE3" if link == "ub_to_gm" else "MTE2"


def _mad(m: int, k: int, n: int, esize: int) -> dict:
    return {"class": "matmul", "m": m, "k": k, "n": n, "in_esize": esize}


def _fractals(m: int, k: int, n: int, esize: int) -> int:
    return math.ceil(m / 16) * math.ceil(k / (32 // esize)) * math.ceil(n / 16)


def _drain(rows: int, cols: int, out_esize: int, to_gm: bool) -> dict:
    acc_row = cols * 4  # fp32 L0C
    spec = {"rows": rows, "acc_row_bytes": acc_row, "bytes": rows * cols * out_esize}
    if to_gm:
        return {**spec, "class": "fixpipe_gm", "link": "l0c_to_gm", "row_bytes": cols * out_esize}
    return {**spec, "class": "fixpipe", "link": "l0c_to_l1"}


def _odd(n: int) -> int:
    while n > 0 and n % 2 == 0:
        n //= 2
    return max(n, 1)


def device_drain(rows: int, cols: int) -> float:
    """Upstream PyPTO's device-fitted FIXPIPE drain of an fp32 L0C tile (any output dtype)."""
    d = DEVICE_L0
    per_row = max(d["drain_row"], cols * 4 / d["drain_bw"]) + d["drain_penalty"] * (
        _odd(math.ceil(cols / 8)) - 1
    )
    return d["drain_fixed"] + rows * per_row


GM_SIZES = (1 * KB, 4 * KB, 16 * KB, 64 * KB, 256 * KB)
ROW_BYTES = (32, 128, 512, 4 * KB)


def _gm_rows(profile: str, ref: Callable[[str, int, int], tuple[float | None, str, str]]) -> list[Row]:
    out = []
    for link in ("gm_to_ub", "gm_to_l1", "ub_to_gm"):
        for size in GM_SIZES:
            for rb in ROW_BYTES:
                if rb > size:
                    continue
                ours = measure(profile, _gm_pipe(link), _gm(link, size // rb, rb))
                r, kind, src = ref(link, size, rb)
                out.append(Row(f"GM {link}", f"{size // KB}KB rows {rb}B", ours, r, kind, src))
    return out


def device_rows() -> list[Row]:
    """Every class under the device profile, against device figures where one exists."""
    p = "device"

    def gm_ref(link: str, size: int, rb: int) -> tuple[float | None, str, str]:
        if rb >= 512:  # the sweeps moved rows of at least one 512 B burst
            return size / DEVICE_GM[link], "device", f"device sweeps: {DEVICE_GM[link]:g} B/cycle"
        gib = PTO_ISA_GIB_S[link]
        return size / (gib * _GIB / _HZ), "other-sim", f"pto-isa {gib} GiB/s (no short-row figure)"

    rows = _gm_rows(p, gm_ref)
    for link, pipe in (("l1_to_l0a", "MTE1"), ("l1_to_l0b", "MTE1")):
        for size in (2 * KB, 8 * KB, 32 * KB):
            ours = measure(p, pipe, {"class": "local_move", "link": link, "bytes": size})
            bw = DEVICE_L0[link]
            rows.append(
                Row(f"TMOV {link}", f"{size // KB}KB", ours, size / bw, "device", f"L0CostModel {bw} B/cycle")
            )
    for m, k, n, e in (
        (16, 256, 64, 2),
        (64, 128, 128, 2),
        (128, 128, 128, 2),
        (64, 64, 64, 4),
        (128, 64, 128, 4),
    ):
        ref = DEVICE_L0["mad_head"] + (2 if e == 4 else 1) * _fractals(m, k, n, e)
        dt = "fp32" if e == 4 else "fp16"
        rows.append(
            Row(
                "TMATMUL",
                f"{m}x{k}x{n} {dt}",
                measure(p, "CUBE", _mad(m, k, n, e)),
                ref,
                "device",
                "L0CostModel",
            )
        )
    for r_, c_, oe, gm in ((128, 128, 4, True), (128, 128, 2, True), (64, 80, 4, True), (16, 256, 2, True)):
        case = f"Acc->{'GM' if gm else 'Mat'} {r_}x{c_} fp32->{'fp32' if oe == 4 else 'bf16'}"
        ours = measure(p, "FIXPIPE", _drain(r_, c_, oe, gm))
        rows.append(Row("FIXPIPE", case, ours, device_drain(r_, c_), "device", "L0CostModel drain"))
    rows.append(
        Row(
            "FIXPIPE",
            "Acc->Mat 128x128 fp32->bf16",
            measure(p, "FIXPIPE", _drain(128, 128, 2, False)),
            device_drain(128, 128),
            "device",
            "L0CostModel drain",
        )
    )
    for vec, (base, slope) in DEVICE_VECTOR.items():
        for size in (1 * KB, 16 * KB, 64 * KB):
            reps = math.ceil(size / 256)
            spec = {"class": "vector", "vec": vec, "bytes": size}
            ours = measure(p, "VECTOR", spec)
            rows.append(
                Row(f"vector {vec}", f"cold {size // KB}KB", ours, base + slope * reps, "device", "sweeps")
            )
            name, _, pslope = PTO_ISA_VECTOR[vec]
            warm = measure(p, "VECTOR", spec, warm=True)
            rows.append(
                Row(
                    f"vector {vec}", f"warm {size // KB}KB", warm, pslope * reps, "other-sim", f"{name} slope"
                )
            )
    for vec in ("cvt", "cmp", "sel", "bitwise", "reduce", "trig", "gather", "sort"):
        spec = {"class": "vector", "vec": vec, "bytes": 16 * KB}
        for warm in (False, True):
            case = f"{'warm' if warm else 'cold'} 16KB"
            rows.append(
                Row(f"vector {vec}", case, measure(p, "VECTOR", spec, warm), None, "none", "assumption")
            )
    copy = {"class": "vector", "vec": "copy", "bytes": 16 * KB}  # a UB -> UB TMOV is a vector copy
    base, slope = DEVICE_VECTOR["unary"]
    rows.append(
        Row("TMOV ub_to_ub", "16KB", measure(p, "VECTOR", copy), base + slope * 64, "device", "sweeps: unary")
    )
    for which in ("set_flag", "wait_flag", "pipe_barrier"):
        total, busy = flag_cycles(p, which)
        rows.append(Row("flags", f"{which}: issue + pipe", total, 1.0, "device", "sweeps: ~1 cycle"))
        rows.append(Row("flags", f"{which}: pipe busy", busy, None, "none", "no pipe time"))
    for where in ("gm_to_ub", "ub_to_ub"):
        spec = {"class": "scalar_access", "link": where}
        rows.append(
            Row("scalar read", where[:2].upper(), measure(p, "SCALAR", spec), None, "none", "assumption")
        )
    return rows


def pto_isa_rows() -> list[Row]:
    """Every class pto-isa's cost model covers, under the pto-isa profile, against its formula."""
    p = "pto-isa"

    def gm_ref(link: str, size: int, rb: int) -> tuple[float | None, str, str]:
        # pto-isa's EstimateBandwidthCycles truncates a copy's cycles to a whole number.
        gib = PTO_ISA_GIB_S[link]
        return math.floor(size / (gib * _GIB / _HZ)), "pto-isa", f"bytes / {gib} GiB/s, truncated"

    rows = [r for r in _gm_rows(p, gm_ref) if not r.case.startswith("1KB")]
    for link, pipe in (("l1_to_l0a", "MTE1"), ("l1_to_l0b", "MTE1")):
        gib = PTO_ISA_GIB_S[link]
        for size in (8 * KB, 32 * KB):
            ours = measure(p, pipe, {"class": "local_move", "link": link, "bytes": size})
            rows.append(
                Row(f"TMOV {link}", f"{size // KB}KB", ours, size / (gib * _GIB / _HZ), "pto-isa", f"{gib}")
            )
    for m, k, n, e in ((64, 128, 128, 2), (128, 128, 128, 2), (128, 64, 128, 4)):
        ref = 6 + (2 if e == 4 else 1) * _fractals(m, k, n, e)
        rows.append(
            Row("TMATMUL", f"{m}x{k}x{n}", measure(p, "CUBE", _mad(m, k, n, e)), ref, "pto-isa", "6 + cpr*fr")
        )
    for oe, gm in ((4, True), (2, True), (2, False)):
        link = "l0c_to_gm" if gm else "l0c_to_l1"
        # pto-isa prices an L0C -> GM copy at 2 bytes per element whatever the output dtype.
        priced = 2 if gm else oe
        bound = 128 * 128 * priced / (PTO_ISA_GIB_S[link] * _GIB / _HZ)
        case = f"Acc->{'GM' if gm else 'Mat'} 128x128 out {oe}B"
        ours = measure(p, "FIXPIPE", _drain(128, 128, oe, gm))
        how = "elems x 2B" if gm else "bytes"
        rows.append(Row("FIXPIPE", case, ours, bound, "pto-isa", f"{how} / {PTO_ISA_GIB_S[link]} GiB/s"))
    for vec, (name, lat, slope) in PTO_ISA_VECTOR.items():
        for size in (4 * KB, 64 * KB):
            reps = size // 256
            spec = {"class": "vector", "vec": vec, "bytes": size}
            cold, warm = measure(p, "VECTOR", spec), measure(p, "VECTOR", spec, warm=True)
            rows.append(
                Row(f"vector {vec}", f"cold {size // KB}KB", cold, lat + slope * reps, "pto-isa", name)
            )
            rows.append(Row(f"vector {vec}", f"warm {size // KB}KB", warm, slope * reps, "pto-isa", name))
    for which in ("set_flag", "wait_flag", "pipe_barrier"):
        _, busy = flag_cycles(p, which)
        rows.append(Row("flags", f"{which} pipe cost", busy, None, "none", "Perf-Sim: zero-length entry"))
    return rows


def format_table(rows: list[Row]) -> str:
    head = f"{'class':<16}{'case':<30}{'ours':>8}{'reference':>11}  {'kind':<8}{'error':>8}  ok  source"
    lines = [head, "-" * len(head)]
    for r in rows:
        ref = "-" if r.ref is None else f"{r.ref:.1f}"
        err = "-" if r.error is None else f"{r.error:+.1%}"
        ok = {True: "yes", False: "NO", None: "-"}[r.within]
        lines.append(f"{r.cls:<16}{r.case:<30}{r.ours:>8}{ref:>11}  {r.kind:<8}{err:>8}  {ok:<3} {r.source}")
    return "\n".join(lines)


def outside(rows: list[Row]) -> list[Row]:
    """The rows with a reference figure that miss their tolerance."""
    return [r for r in rows if r.within is False]
