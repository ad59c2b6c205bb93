"""Hardware facts as the native simulator defines them (``csrc/simulator/hardware.hpp``):
pipe names, the flag spellings traces use, memory spaces, dtype codes. Read once from the
bindings, never restated in Python."""

from __future__ import annotations

from pypto import _native

_FACTS = _native.hardware_facts()

PIPES: tuple[str, ...] = tuple(_FACTS["pipes"])  # dataflow order, as the report names them
FLAG_PIPE_NAMES: tuple[str, ...] = tuple(_FACTS["flag_pipes"])  # AscendC's spellings (PIPE_M, ...)
MEM_SPACES: tuple[str, ...] = tuple(_FACTS["mem_spaces"])
# The on-chip spaces an AIC core has (L1, L0A/L0B/L0C, bias: beside its cube); an AIV has the rest (UB).
AIC_SPACES: tuple[str, ...] = tuple(_FACTS["aic_spaces"])
# numpy dtype name -> ABI code, and the element size of each code.
DTYPE_CODES: dict[str, int] = {numpy: code for code, _, numpy, _ in _FACTS["dtypes"]}
DTYPE_SIZES: dict[int, int] = {code: size for code, _, _, size in _FACTS["dtypes"]}
MAX_EVENT_IDS: int = _FACTS["max_event_ids"]  # what the flag encoding holds per pipe pair
MAX_L2_WAYS: int = _FACTS["max_l2_ways"]  # the per-set fill count is 8 bits
# Per ISA op family, the dtype names its run-time check accepts ({"binary": {"add": [...]}, ...}):
# asked of the ISA's own checks, so the compiler refuses before a run exactly what the run would.
ISA_DTYPES: dict = _FACTS["isa_dtypes"]
