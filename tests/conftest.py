"""Fixtures shared by the whole suite."""

import pytest
from torch.overrides import TorchFunctionMode


class HostConversions(TorchFunctionMode):
    """Counts every tensor -> host conversion (bool(t), float(t), t.item(), t.tolist(), t.cpu(), ...)
    inside the block, or with ``fail=True`` fails on the first: code that converts nothing decides
    nothing on the host, so on a GPU it queues without a synchronisation."""

    BANNED = {"__bool__", "__float__", "__int__", "__index__", "item", "tolist", "numpy", "cpu"}

    def __init__(self, fail: bool = False):
        super().__init__()
        self.fail = fail
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in self.BANNED:
            if self.fail:
                raise AssertionError(f"a host synchronisation: Tensor.{func.__name__}")
            self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.fixture
def no_host_sync():
    """``with no_host_sync(): ...`` fails on any tensor -> host conversion inside the block."""
    return lambda: HostConversions(fail=True)


@pytest.fixture
def host_conversions():
    """``with host_conversions() as seen: ...``; then ``seen.count`` conversions happened."""
    return HostConversions
