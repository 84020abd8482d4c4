"""Bytes are written in decimal units, the convention of the TB/s and GB/s beside them: a size and
a rate agree without a hidden 2²⁰. On a real trace, a GEMM shape's bytes shown in MB over its mean
time give its TB/s as shown."""

from __future__ import annotations

import pytest

from kerneldiff.core.report import format as fmt


def test_decimal_units():
    assert fmt.size(999) == "999 B"
    assert fmt.size(1500) == "1.5 kB"
    assert fmt.size(1_000_000) == "1.0 MB"
    assert fmt.size(2**20) == "1.0 MB"          # 1,048,576 bytes: 1.05 MB, not "1.0 MB" of 2^20
    assert fmt.size(2**30) == "1.1 GB"          # binary units read 1.0 here: 7 % off beside a GB/s
    assert fmt.size(3.35e12) == "3.4 TB"
    assert fmt.size(999_960) == "1.0 MB"         # no "1000.0 kB": the unit steps up at rounding
    assert fmt.size(None) == fmt.ABSENT


@pytest.mark.real
@pytest.mark.slow
def test_shape_bytes_and_rate_share_one_convention():
    from conftest import real_trace
    from kerneldiff.core import Session

    s = Session([str(real_trace("h100_llama_eager_sdpa.json.gz")), str(real_trace("h200_llama_eager_sdpa.json.gz"))],
                use_cache=False)
    s.load_all()
    cmp = s.compare("all")
    g = next(g for g in cmp.gemm_shapes if g.a.calls and g.a.tbps and g.bytes and g.bytes >= 1e6)
    shown = fmt.size(g.bytes)
    assert shown.endswith(" MB")
    mb = float(shown.split()[0])
    assert mb == pytest.approx(g.bytes / 1e6, abs=0.05)
    # the shown MB over the mean time is the shown TB/s (decimal: 1 MB/µs = 1 TB/s)
    assert mb / g.a.mean_us == pytest.approx(g.a.tbps, rel=0.05 + 0.05 / mb)
