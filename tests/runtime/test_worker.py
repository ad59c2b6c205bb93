"""ChipWorker and DeviceTensor: simulated device memory that really holds the bytes, resident
weights that move from the host once, and typed errors for every misuse (nothing changed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import ArgumentError, DeviceTensorError, PyptoError, WorkerClosedError
from pypto.runtime import ChipWorker, DeviceTensor, RunConfig, StackedDeviceTensor

ROWS, COLS = 64, 128
CFG = RunConfig(platform="a2a3sim")


@pl.jit
def add_weight(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [ROWS, COLS])
        tw = pl.load(w, [0, 0], [ROWS, COLS])
        pl.store(pl.add(tx, tw), [0, 0], out)
    return out


@pl.jit
def scale_in_place(t: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        x = pl.load(t, [0, 0], [ROWS, COLS])
        pl.store(pl.muls(x, 2.0), [0, 0], t)
    return t


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))


def _data(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(ROWS, COLS, generator=g), torch.randn(ROWS, COLS, generator=g)


def _compiled():
    x, w = _data()
    return add_weight.compile(x, w, torch.zeros(ROWS, COLS), config=CFG)


def test_resident_weight_moves_from_host_once_over_100_launches():
    compiled, nbytes = _compiled(), ROWS * COLS * 4
    x, w = _data()
    by_array = []
    with ChipWorker(config=CFG) as host_path:
        for k in range(100):
            out = torch.zeros(ROWS, COLS)
            host_path.run(compiled, x + k, w, out)
            by_array.append(out)
        moved_each_time = host_path.traffic.host_to_device_bytes
    with ChipWorker(config=CFG) as worker:
        resident = worker.alloc_tensor((ROWS, COLS), torch.float32, init=w)
        assert worker.traffic.host_to_device_bytes == nbytes  # the upload
        for k in range(100):
            out = torch.zeros(ROWS, COLS)
            worker.run(compiled, x + k, resident, out)
            assert torch.equal(out, by_array[k])  # the same numbers as passing the array
            assert compiled.last_report.memory["host_to_device_bytes"] == 2 * nbytes  # x and out, not w
        traffic = worker.traffic
    # x and out move every launch in both; w moved 100 times by array, once when resident.
    assert moved_each_time - traffic.host_to_device_bytes == 99 * nbytes
    assert traffic.host_to_device_bytes == nbytes + 100 * 2 * nbytes  # w once; x and out each launch
    assert traffic.device_to_host_bytes == 100 * nbytes  # out only: w never comes back
    print(f"resident weight: {traffic}; passing the array: {moved_each_time} bytes host->device")


def test_device_memory_is_separate_from_the_host_array():
    compiled = scale_in_place.compile(torch.zeros(ROWS, COLS), config=CFG)
    host = torch.arange(ROWS * COLS, dtype=torch.float32).reshape(ROWS, COLS)
    original = host.clone()
    with ChipWorker(config=CFG) as w:
        t = w.alloc_tensor(host.shape, host.dtype, init=host)
        host.zero_()  # the device copy does not follow the host array
        w.run(compiled, t)
        w.run(compiled, t)
        assert torch.equal(host, torch.zeros_like(host))  # the kernel wrote device memory only
        back = torch.empty(ROWS, COLS)
        w.copy_from(back.data_ptr(), t.data_ptr, t.nbytes)
        assert torch.equal(back, original * 4) and w.traffic.device_to_host_bytes == t.nbytes


def test_register_handle_and_implicit_with_block():
    compiled = _compiled()
    x, w = _data(1)
    with ChipWorker(config=CFG) as worker:
        resident = worker.alloc_tensor((ROWS, COLS), torch.float32, init=w)
        handle = worker.register(compiled)
        out = torch.zeros(ROWS, COLS)
        handle(x, resident, out)
        torch.testing.assert_close(out, x + w)
        out2 = torch.zeros(ROWS, COLS)
        compiled(x, resident, out2)  # inside `with`: the active worker's tensor
        assert torch.equal(out, out2)
    with pytest.raises(WorkerClosedError, match="unregistered or its ChipWorker closed"):
        handle(x, resident, out)


def test_register_loads_a_program_once_and_the_worker_counts_its_loads():
    compiled, other = _compiled(), scale_in_place.compile(torch.zeros(ROWS, COLS), config=CFG)
    x, w = _data(2)
    worker = ChipWorker(config=CFG)
    compiled.__dict__.pop("_native_cache", None)  # as a program fresh from its compile
    assert worker.aicpu_dlopen_count == 0
    handle = worker.register(compiled)
    runner = compiled.__dict__["_native_cache"]  # its kernels are loaded before the first call
    assert worker.aicpu_dlopen_count == 1
    for _ in range(5):
        handle(x, w, torch.zeros(ROWS, COLS))
    assert worker.aicpu_dlopen_count == 1 and compiled.__dict__["_native_cache"] is runner
    worker.run(other, torch.ones(ROWS, COLS))  # a first run loads too
    worker.register(other)
    assert worker.aicpu_dlopen_count == 2
    worker.close()
    assert worker.aicpu_dlopen_count == 0


def test_numpy_and_bfloat16_resident_tensors():
    compiled = scale_in_place.compile(np.zeros((ROWS, COLS), np.float32), config=CFG)
    host = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)
    with ChipWorker(config=CFG) as w:
        t = w.alloc_tensor((ROWS, COLS), np.float32, init=host)
        w.run(compiled, t)
        back = np.empty_like(host)
        w.copy_from(back.ctypes.data, t.data_ptr, t.nbytes)
        np.testing.assert_array_equal(back, host * 2)
        b = w.alloc_tensor((4, 8), torch.bfloat16, init=torch.ones(4, 8, dtype=torch.bfloat16))
        assert b.nbytes == 64 and "bfloat16" in repr(b)


def test_stacked_tensor_shards_are_resident_tensors():
    compiled = scale_in_place.compile(torch.zeros(ROWS, COLS), config=CFG)
    host = torch.randn(3, ROWS, COLS)
    with ChipWorker(config=CFG) as w:
        stacked = w.alloc_stacked_tensor(host)
        assert isinstance(stacked, StackedDeviceTensor) and stacked.shape == (3, ROWS, COLS)
        w.run(compiled, stacked[1])
        back = torch.empty(ROWS, COLS)
        w.copy_from(back.data_ptr(), stacked[1, ...].data_ptr, stacked[1].nbytes)
        assert torch.equal(back, host[1] * 2)
        with pytest.raises(ValueError, match="whole shards only"):
            stacked[0, 0:2]
        w.free_stacked_tensor(stacked)


def _bad_use(fn, error: type[Exception], match: str, out: torch.Tensor) -> None:
    before = out.clone()
    with pytest.raises(error, match=match):
        fn()
    assert torch.equal(out, before)  # a refused launch leaves the caller's arrays as they were


def test_misuse_is_a_typed_error_naming_the_argument_and_changes_nothing():
    compiled = _compiled()
    x, w = _data(2)
    out = torch.full((ROWS, COLS), 7.0)
    a, b = ChipWorker(config=CFG), ChipWorker(config=CFG)
    theirs = b.alloc_tensor((ROWS, COLS), torch.float32, init=w)
    _bad_use(
        lambda: a.run(compiled, x, theirs, out), DeviceTensorError, "argument 'w'.*another ChipWorker", out
    )
    freed = a.alloc_tensor((ROWS, COLS), torch.float32, init=w)
    a.free_tensor(freed)
    a.free_tensor(freed)  # a second free does nothing, as upstream
    _bad_use(lambda: a.run(compiled, x, freed, out), DeviceTensorError, "argument 'w'.*was freed", out)
    _bad_use(lambda: compiled(x, theirs, out), DeviceTensorError, "runs only through its ChipWorker", out)
    by_hand = DeviceTensor(12345, (ROWS, COLS), torch.float32)
    _bad_use(lambda: a.run(compiled, x, by_hand, out), DeviceTensorError, "made by hand", out)
    wrong = a.alloc_tensor((ROWS, COLS), torch.float16)
    _bad_use(lambda: a.run(compiled, x, wrong, out), ArgumentError, "argument `w`", out)
    b.close()
    _bad_use(lambda: a.run(compiled, x, theirs, out), WorkerClosedError, "argument 'w'.*is closed", out)
    a.close()
    _bad_use(
        lambda: a.run(compiled, x, w, out), WorkerClosedError, r"ChipWorker.run\(\) on a closed worker", out
    )
    with pytest.raises(WorkerClosedError):
        a.alloc_tensor((2, 2), torch.float32)
    assert issubclass(DeviceTensorError, (PyptoError, ValueError)) and issubclass(
        WorkerClosedError, RuntimeError
    )


def test_memory_primitives_check_their_arguments():
    with ChipWorker(config=CFG) as w:
        with pytest.raises(ValueError, match="init must have shape=\\(2, 2\\) dtype=float32"):
            w.alloc_tensor((2, 2), torch.float32, init=torch.zeros(2, 3))
        assert not w._buffers  # nothing allocated by the refused call
        ptr = w.malloc(64)
        with pytest.raises(ValueError, match="nbytes must be in \\[1, 64\\]"):
            w.copy_to(ptr, torch.zeros(32).data_ptr(), 128)
        with pytest.raises(ValueError, match="not the address of a live allocation"):
            w.copy_from(torch.zeros(4).data_ptr(), ptr + 8, 4)
        with pytest.raises(ValueError, match="worker_id=0"):
            w.malloc(8, worker_id=1)
        with pytest.raises(TypeError, match="non-empty sequence of ints"):
            w.alloc_tensor((2.0, 2), torch.float32)
    with pytest.raises(ValueError, match="level=2"):
        ChipWorker(config=CFG, level=3)


def test_platform_mismatch_is_refused_before_anything_runs():
    compiled = _compiled()
    with (
        ChipWorker(config=RunConfig(platform="a5sim")) as w,
        pytest.raises(ValueError, match="does not match"),
    ):
        w.register(compiled)


def test_ir_compile_of_a_lowered_program_runs_with_a_resident_tensor():
    x, w = _data(3)
    compiled = ir.compile(add_weight.lower(x, w, torch.zeros(ROWS, COLS)), platform="a2a3sim")
    with ChipWorker(config=CFG) as worker:
        resident = worker.alloc_tensor((ROWS, COLS), torch.float32, init=w)
        out = torch.zeros(ROWS, COLS)
        worker.run(compiled, x, resident, out)
        torch.testing.assert_close(out, x + w)
