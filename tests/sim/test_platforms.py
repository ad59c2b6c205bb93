"""Platform tables as Python sees them: read-only, complete, overridable for what-if runs."""

import pytest

from pypto import platforms


def test_names_and_device_aliases():
    assert platforms.names() == ["a2a3sim", "a5sim", "a2a3", "a5"]
    assert platforms.get("a2a3").fields == platforms.get("a2a3sim").fields
    assert platforms.get("a5").device == "a5"


def test_unknown_platform_lists_valid_names():
    with pytest.raises(ValueError, match="valid platforms: a2a3sim, a5sim, a2a3, a5"):
        platforms.get("a3")


def test_a2a3_numbers_from_the_spec():
    p = platforms.get("a2a3sim")
    kib = 1024
    assert (p.ub_bytes, p.l1_bytes, p.l0a_bytes, p.l0b_bytes, p.l0c_bytes, p.bias_bytes) == (
        184 * kib,
        512 * kib,
        64 * kib,
        64 * kib,
        128 * kib,
        1 * kib,
    )
    assert (p.aic_cores, p.aiv_cores, p.clock_hz) == (24, 48, 1.85e9)
    assert (p.bw_gm_to_ub, p.bw_gm_to_l1, p.bw_ub_to_gm, p.bw_l1_to_l0a, p.bw_l1_to_l0b, p.bw_l0c_to_gm) == (
        59,
        78,
        109,
        129.7,
        85.4,
        118,
    )
    assert p.recommended_transfer_bytes == 512 and p.alignment_bytes == 32


def test_a5_differences():
    p = platforms.get("a5sim")
    assert (p.ub_bytes, p.l0c_bytes, p.bias_bytes, p.aic_cores, p.aiv_cores) == (
        240 * 1024,
        256 * 1024,
        4 * 1024,
        36,
        72,
    )
    assert p.gm_burst_bytes == 128 and p.recommended_transfer_bytes == 128 and p.cube_cpr_fp32 == 8


def test_tables_are_read_only():
    p = platforms.get("a2a3sim")
    with pytest.raises(AttributeError):
        p.ub_bytes = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.fields["ub_bytes"] = 1  # type: ignore[index]


def test_with_overrides_returns_a_new_table():
    base = platforms.get("a2a3sim")
    big = base.with_overrides(ub_bytes=256 * 1024)
    assert big.ub_bytes == 256 * 1024 and base.ub_bytes == 184 * 1024
    assert big.overrides == {"ub_bytes": 256 * 1024}
    with pytest.raises(ValueError, match="unknown platform field 'ub_size'"):
        base.with_overrides(ub_size=1)
    with pytest.raises(ValueError, match="must be a positive number"):
        base.with_overrides(bw_gm_to_ub=0)


def test_numpy_scalars_are_numbers_and_are_kept_as_python_numbers():
    import numpy as np

    from pypto.runtime import RunConfig

    big = platforms.get("a2a3sim").with_overrides(ub_bytes=np.int64(256 * 1024), bw_gm_to_ub=np.float32(64))
    assert big.ub_bytes == 256 * 1024 and type(big.ub_bytes) is int
    assert type(big.overrides["bw_gm_to_ub"]) is float
    config = RunConfig(platform_overrides={"aiv_cores": np.int64(4)})
    assert config.platform_overrides == {"aiv_cores": 4}
    assert type(config.platform_overrides["aiv_cores"]) is int
    with pytest.raises(ValueError, match="is an integer field"):
        platforms.get("a2a3sim").with_overrides(ub_bytes=np.float64(1.5))
