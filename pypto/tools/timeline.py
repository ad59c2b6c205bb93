"""``pypto-timeline``: a traced run's offline HTML timeline (the page and its model are
``pypto.report.timeline``).

    python -m pypto.tools.timeline <output_dir | run.json | trace.json> -o timeline.html
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pypto import __version__
from pypto.report.timeline import TimelineError, load_model, write_page
from pypto.tools._cli import guarded, write_report


@guarded
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="pypto-timeline",
        description="Write a self-contained HTML timeline (task swimlane, pipe lanes, flag arrows, "
        "hot spots by source line) of a traced run. Open it in any browser; no network needed.",
    )
    p.add_argument(
        "path",
        type=Path,
        help="a traced run's output_dir, its report/run.json, a launch's visualize_data.bin or trace.json, "
        "or a cleaned trace.clean.json",
    )
    p.add_argument("-o", "--output", type=Path, default=Path("timeline.html"), help="HTML file to write")
    p.add_argument("--version", action="version", version=f"pypto {__version__}")
    args = p.parse_args(argv)
    errors = (TimelineError, OSError, ValueError)
    return write_report(lambda: write_page(load_model(args.path), args.output), errors)


if __name__ == "__main__":
    sys.exit(main())
