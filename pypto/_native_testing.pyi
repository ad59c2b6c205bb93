import collections.abc
import typing

import numpy
import numpy.typing

import pypto._native

class CoreModel:
    def __init__(self, platform: pypto._native.Platform, record: bool = ...) -> None: ...
    def barrier(self, pipe: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def finish(self) -> None: ...
    def instr(self, pipe: typing.SupportsInt | typing.SupportsIndex, spec: dict, name: str = ...) -> None: ...
    def op(
        self,
        pipe: typing.SupportsInt | typing.SupportsIndex,
        cost: typing.SupportsInt | typing.SupportsIndex,
        name: str = ...,
        reads: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ] = ...,
        writes: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ] = ...,
        loc: str = ...,
    ) -> None: ...
    def set_flag(
        self,
        src: typing.SupportsInt | typing.SupportsIndex,
        dst: typing.SupportsInt | typing.SupportsIndex,
        event_id: typing.SupportsInt | typing.SupportsIndex,
    ) -> None: ...
    def vector(
        self,
        vec: str,
        bytes: typing.SupportsInt | typing.SupportsIndex,
        reads: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ] = ...,
        writes: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ] = ...,
        name: str = ...,
        general: bool = ...,
    ) -> None: ...
    def wait_flag(
        self,
        src: typing.SupportsInt | typing.SupportsIndex,
        dst: typing.SupportsInt | typing.SupportsIndex,
        event_id: typing.SupportsInt | typing.SupportsIndex,
    ) -> None: ...
    @property
    def cycles(self) -> int: ...
    @property
    def hazards(self) -> list[str]: ...
    @property
    def pipe_busy(self) -> list[int]: ...
    @property
    def records(self) -> list[dict]: ...

def context_reuse_after_release(
    platform: pypto._native.Platform, taken_meanwhile: bool
) -> tuple[bool, bool]: ...
def core_storage_rounds(
    sizes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
) -> tuple[list[int], list[int]]: ...
def data_queue_exercise(
    ops: typing.SupportsInt | typing.SupportsIndex,
    rows: typing.SupportsInt | typing.SupportsIndex,
    drain_every: typing.SupportsInt | typing.SupportsIndex,
    when_waited: bool = ...,
    gap_us: typing.SupportsInt | typing.SupportsIndex = ...,
) -> tuple[numpy.typing.NDArray[numpy.int64], numpy.typing.NDArray[numpy.uint8]]: ...
def data_queue_times() -> dict[str, int]: ...
def fp16_encode_form(
    form: str, x: typing.Annotated[numpy.typing.ArrayLike, numpy.float32]
) -> numpy.typing.NDArray[numpy.uint16]: ...
def fp16_encode_forms() -> list[str]: ...
def fractal_form(
    form: str, x: typing.Annotated[numpy.typing.ArrayLike, numpy.uint16], bf16: bool = ...
) -> tuple[
    numpy.typing.NDArray[numpy.uint16],
    numpy.typing.NDArray[numpy.float32],
    numpy.typing.NDArray[numpy.float32],
    bool,
    bool,
]: ...
def fractal_forms() -> list[str]: ...
def gm_transfers(
    platform: pypto._native.Platform,
    host: typing.Annotated[numpy.typing.ArrayLike, numpy.uint8],
    buffers: collections.abc.Sequence[
        tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]
    ],
    transfers: collections.abc.Sequence[
        tuple[
            typing.SupportsFloat | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
        ]
    ],
    port_bw: typing.SupportsFloat | typing.SupportsIndex,
) -> list[float]: ...
def l2_lookups(
    platform: pypto._native.Platform,
    host: typing.Annotated[numpy.typing.ArrayLike, numpy.uint8],
    buffers: collections.abc.Sequence[
        tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]
    ],
    windows: collections.abc.Sequence[
        tuple[
            typing.SupportsInt | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
        ]
    ],
) -> list[tuple[int, int]]: ...
def matmul_f32_form(
    form: str,
    a: typing.Annotated[numpy.typing.ArrayLike, numpy.float32],
    b: typing.Annotated[numpy.typing.ArrayLike, numpy.float32],
    c: numpy.typing.NDArray[numpy.float32],
    accumulate: bool = ...,
    exact_products: bool = ...,
    repeat: typing.SupportsInt | typing.SupportsIndex = ...,
) -> None: ...
def matmul_f32_forms() -> list[str]: ...
def put_off_writes(
    ops: collections.abc.Sequence[
        tuple[
            typing.SupportsInt | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
            typing.SupportsInt | typing.SupportsIndex,
        ]
    ],
) -> tuple[list[list[int]], int]: ...
def reduce_rows_f32_form(
    form: str,
    op: typing.SupportsInt | typing.SupportsIndex,
    x: typing.Annotated[numpy.typing.ArrayLike, numpy.float32],
) -> numpy.typing.NDArray[numpy.float32]: ...
def reduce_rows_f32_forms() -> list[str]: ...
def vector_upper_state_dirty() -> bool | None: ...
