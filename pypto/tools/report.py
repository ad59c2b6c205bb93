"""``pypto-report diff A.json B.json [--json]`` (also ``python -m pypto.tools.report``)

Compares two saved run reports (``RunReport.save``, or a traced run's ``report/run.json``): the
makespan, each pipe's busy cycles and each kernel's time, absolute and in %, and names the pipe
and the kernel that changed most (docs/report.md). A file that is not a run report ends with
``error:`` and status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pypto import __version__
from pypto.report.run_report import RunReport
from pypto.report.views import ReportError
from pypto.tools._cli import error_line, guarded


def _load(path: str):
    try:
        return RunReport.load(path)
    except FileNotFoundError:
        raise ReportError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ReportError(f"{path}: {error_line(e)}") from None


def _diff(args: argparse.Namespace) -> int:
    try:
        a, b = _load(args.a), _load(args.b)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    d = a.diff(b)
    if args.json:
        print(json.dumps(d.to_dict(), indent=1))
    else:
        print(f"A: {Path(args.a)}\nB: {Path(args.b)}\n{d}")
    return 0


@guarded
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pypto-report", description="Reads saved pypto run reports.")
    p.add_argument("--version", action="version", version=f"pypto {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("diff", help="compare two run reports (A: the baseline, B: the candidate)")
    d.add_argument("a", metavar="A.json", help="the baseline report")
    d.add_argument("b", metavar="B.json", help="the report compared with it")
    d.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = p.parse_args(argv)
    return _diff(args)


if __name__ == "__main__":
    raise SystemExit(main())
