"""Programs that back AIV functions with hand-written C++ (imported by the e2e tests)."""

import pypto.language as pl


@pl.function(type=pl.FunctionType.AIV, external_source="kernels/my_kernel.cpp")
def my_kernel(x: pl.Tensor[[128, 128], pl.FP16], out: pl.Out[pl.Tensor[[128, 128], pl.FP16]]): ...


@pl.function(
    type=pl.FunctionType.AIV,
    external_source="kernels/two_file/entry/entry.cpp",
    include_dirs=["kernels/include"],
)
def two_file(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]): ...


@pl.jit
def call_my_kernel(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    my_kernel(x, out)
    return out


@pl.jit
def call_two_file(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    two_file(x, out)
    return out


@pl.jit
def generated_then_external(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    tmp = pl.create_tensor([128, 128], pl.FP16)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="negate"):
        t = pl.load(x, [0, 0], [128, 128])
        pl.store(pl.neg(t), [0, 0], tmp)
    my_kernel(tmp, out)
    return out


@pl.jit
def dsl_version(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            t = pl.load(x, [i * 64, 0], [64, 128])
            pl.store(pl.adds(pl.muls(t, 2.0), 1.0), [i * 64, 0], out)
    return out
