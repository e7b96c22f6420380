"""Shared benchmark pieces: no torch on import, tables, statistics, the RSS probe."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_package_loads_no_torch():
    code = "import pinnspec.bench as b, sys; assert sorted(b.BENCHMARKS) == ['gum', 'overhead', 'peers', 'pinnacle', 'q2', 'q3', 'q4', 'q5', 'q6', 'recipe', 'speed']; " \
           "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_tables_and_statistics():
    from pinnspec.bench._common import Table, allocator_text, median, quantile

    table = Table(["name", "value"], title="t")
    table.add("a", "1.0")
    table.add("longer name", "22.5")
    lines = table.text().splitlines()
    assert lines[0] == "t" and len({len(line) for line in lines[1:]}) == 1
    assert table.markdown().splitlines()[2] == "| name | value |"
    assert median([3, 1, 2]) == 2 and median([1, 2, 3, 4]) == 2.5
    assert quantile([0, 10], 0.25) == 2.5
    assert allocator_text({"allocator": "glibc mallopt", "M_MMAP_THRESHOLD": 32 << 20}) == \
        "glibc mallopt: M_MMAP_THRESHOLD=32 MiB"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux")
def test_rss_probe_reads_and_resets_the_high_water_mark():
    from pinnspec._rss import read_status, reset_peak

    status = read_status()
    assert 0 < status["VmRSS"] <= status["VmHWM"]
    if reset_peak():
        # the reset sets the mark to the RSS of that moment, which may exceed the earlier mark by
        # the pages touched in between (seen: one 4 KiB page); 1 MiB of slack keeps the check meaningful
        assert read_status()["VmHWM"] <= status["VmHWM"] + 2**20
