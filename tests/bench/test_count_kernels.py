"""benchmarks/pinnacle/count_kernels.py: the traffic estimate against hand counts of small graphs, and the
roofline against its definition."""

import importlib.util
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def count_kernels():
    path = ROOT / "benchmarks" / "pinnacle" / "count_kernels.py"
    spec = importlib.util.spec_from_file_location("count_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_traffic_estimate_counts_each_kernels_buffers_once(count_kernels, one_thread):
    n, width = 1000, 100
    x = torch.randn(n, width)  # [n, w]
    w = torch.randn(width, width)  # [w, w]
    gb, gb_products = count_kernels.compiled_traffic(torch.compile(lambda x: torch.tanh(x) * 2), x)
    assert (gb, gb_products) == (2 * n * width * 4 / 1e9, 0)  # read x, write the result: one fused kernel
    gb, gb_products = count_kernels.compiled_traffic(torch.compile(lambda x, w: torch.tanh(x @ w)), x, w)
    product = (n * width + width * width + n * width) * 4 / 1e9  # read x and w, write x @ w
    assert gb_products == pytest.approx(product, rel=1e-12)
    assert gb == pytest.approx(product + 2 * n * width * 4 / 1e9, rel=1e-12)  # tanh reads x @ w, writes


def test_the_roofline_takes_the_products_at_their_slower_rate_and_the_rest_at_the_bandwidth(count_kernels):
    tflops, tbs = count_kernels.GPUS["h100-pcie"]
    # products bound by arithmetic: 51 GFLOP at 51 TFLOP/s is 1 ms; 1 GB of other traffic at 2 TB/s is 0.5 ms
    assert count_kernels.roofline_seconds(51.0, 1.5, 0.5, "h100-pcie") == pytest.approx(1e-3 + 0.5e-3)
    # products bound by traffic: 4 GB at 2 TB/s is 2 ms, more than their 1 ms of arithmetic
    assert count_kernels.roofline_seconds(51.0, 4.0, 4.0, "h100-pcie") == pytest.approx(2e-3)
    assert (tflops, tbs) == (51.0, 2.0)


def test_the_host_time_is_the_median_step_after_five_warm_ups(count_kernels):
    import time

    class Steps:  # a trainer's step, one slow epoch among the timed ones
        def __init__(self):
            self.epochs = []

        def step(self, epoch):
            self.epochs.append(epoch)
            time.sleep(0.2 if epoch in (0, 7) else 0.001)

    steps = Steps()
    seconds = count_kernels.host_seconds(steps, 5)
    assert steps.epochs == list(range(10))
    assert 0.001 <= seconds < 0.1  # the warm-up and the one slow step leave the median alone
