"""Cluster kernels: the cross-core pipe ops, and one translation unit for a Group function
(its AIC kernel and its AIV kernel, chosen at run time by the core the entry runs on).

A split tile is whole on the AIC and halved on each AIV: the AIC pushes (or pops) the two
halves, one per AIV, as ``split_half`` views of its tile; an AIV pushes or pops its own half.
"""

from __future__ import annotations

from pypto.codegen.cpp_expr import cpp_name
from pypto.codegen.emitters import EMITTERS, _name, _need
from pypto.ir.expr import Call
from pypto.ir.op_rules_cluster import split_of
from pypto.ir.stmt import Function


def _id(c: Call) -> int:
    return int(c.const_arg("id").value)


def _both_halves(call: str, tile: str | None, c: Call) -> list[str]:
    """``call`` once per AIV: the whole tile to AIV 0 without a split, else a half to each."""
    split, pid = split_of(c.arg("split")), _id(c)
    if split == 0:
        return [f"{call}({tile + ', ' if tile else ''}0, {pid});"]
    if tile is None:
        return [f"{call}({v}, {pid});" for v in (0, 1)]
    return [f"{call}(split_half({tile}, {split}, {v}), {v}, {pid});" for v in (0, 1)]


EMITTERS.update(
    {
        "tile.tpush_to_aiv": lambda c, dst: _both_halves("TPUSH_TO_AIV", _name(c.arg("tile")), c),
        "tile.tpop_from_aiv": lambda c, dst: _both_halves("TPOP_FROM_AIV", _need(dst), c),
        "tile.tfree_to_aiv": lambda c, dst: _both_halves("TFREE_TO_AIV", None, c),
        "tile.tpush_to_aic": lambda c, dst: [f"TPUSH_TO_AIC({_name(c.arg('tile'))}, {_id(c)});"],
        "tile.tpop_from_aic": lambda c, dst: [f"TPOP_FROM_AIC({_need(dst)}, {_id(c)});"],
        "tile.tfree_to_aic": lambda c, dst: [f"TFREE_TO_AIC({_id(c)});"],
        "tile.get_subblock_idx": lambda c, dst: [f"const int64_t {_need(dst)} = get_subblockid();"],
    }
)


def generate_cluster_kernel(group: Function, aic_source: str, aiv_source: str, aivs: int) -> str:
    """One translation unit: both kernels as static functions, and an entry that runs the AIC
    kernel on the AIC and the AIV kernel on the first ``aivs`` AIVs (the others idle)."""
    entry = 'extern "C" void kernel_entry(__gm__ int64_t* args)'
    parts = []
    for side, src in (("aic", aic_source), ("aiv", aiv_source)):
        assert entry in src
        parts.append(src.replace(entry, f"static void {cpp_name(group.name)}_{side}(__gm__ int64_t* args)"))
    name = cpp_name(group.name)
    tail = [
        f"// The cluster task {group.name}: one AIC and {aivs} AIV(s) run it together.",
        f"{entry} {{",
        "  if (is_aic()) {",
        f"    {name}_aic(args);",
        f"  }} else if (get_subblockid() < {aivs}) {{",
        f"    {name}_aiv(args);",
        "  }",
        "}",
        "",
    ]
    return "\n".join(parts) + "\n" + "\n".join(tail)
