"""Split-K vs one core, in simulated cycles (deterministic; printed, not asserted).

Run: python benchmarks/bench_split_k.py
Targets: SPLIT=4 at K=512 <= 0.45x one core; SPLIT=8 at K=4096 <= 0.25x.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "split_k.py"

for k, split, target in ((512, 4, 0.45), (4096, 8, 0.25)):
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), str(k), str(split)], capture_output=True, text=True, check=True
    ).stdout
    ratio = float(out.strip().splitlines()[-1].split("=")[-1])
    print(f"K={k:<5} SPLIT={split}: split-K / one core = {ratio:.2f}   target <= {target}")
