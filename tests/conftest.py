"""Fixtures and hooks shared by the whole suite."""

import os

# The suite checks pinnspec's compiled graphs against its eager ones, not inductor's SIMD code: on the CPU,
# C++ kernels without vector intrinsics generate and compile faster (measured with every test on inductor: the
# cold suite 6.3-6.9 min instead of 7.6 on 2 cores).  Set before torch reads it; TORCHINDUCTOR_VEC_ISA_OK=1 runs
# the suite on vectorised kernels.
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "0")
# Most compiled-equals-eager checks compile on torch's ``eager`` backend: dynamo captures the graph pinnspec
# builds (fullgraph: a graph break is an error; a value baked in that should be an input shows at the next step)
# and runs it with eager kernels, without AOTAutograd's tracing and inductor's code generation and C++ compiles
# (the cold suite on 2 cores: 8.8 min all on inductor, 6.0 on aot_eager, 5.2 on eager).  Tests marked
# ``inductor`` (one per kind of graph, and tests/gpu) compile on inductor, through AOTAutograd;
# PINNSPEC_COMPILE_BACKEND=inductor (or aot_eager) runs every test on it.
os.environ.setdefault("PINNSPEC_COMPILE_BACKEND", "eager")
# inductor's C++ kernels built at -O0, in the test's own process (the PirateNet compile test: 27 s cold instead of 37)
os.environ.setdefault("TORCHINDUCTOR_DEBUG_COMPILE", "1")
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import tempfile  # noqa: E402

import pytest  # noqa: E402
from torch._inductor.runtime.cache_dir_utils import default_cache_dir  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

# pinnspec's records (`compile = auto`) in a folder of the session, not the user's cache; torch's compile cache
# where torch keeps it by default (`pinnspec train` moves it to the user's cache folder), warm across sessions
os.environ.setdefault("PINNSPEC_CACHE_DIR", tempfile.mkdtemp(prefix="pinnspec-cache-"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())

pytest_plugins = ["pytester"]  # tests/test_conftest.py runs the hooks below on small test files

#: the reason ``pytest.importorskip`` gives when the module it asks for does not import
MISSING_MODULE = "could not import "


def in_ci() -> bool:
    """Whether the suite runs under CI (the ``CI`` environment variable set to true, as CI services do)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _fail_missing_oracle(report) -> None:
    """Under CI a test oracle (pytorch-optimizer, torchjd, mpmath, ...) that ``pytest.importorskip``
    cannot import fails the test (or the module that imports it at collection) instead of skipping it:
    a broken dev install must not pass green.  Elsewhere the skip stands."""
    if not (report.skipped and in_ci() and isinstance(report.longrepr, tuple)):
        return
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    if reason.startswith(MISSING_MODULE):
        report.outcome = "failed"
        report.longrepr = (f"CI is set, and a test oracle is missing: {reason}\n"
                           "(install the dev dependencies: pip install -c constraints.txt -e '.[dev]')")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    _fail_missing_oracle(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    _fail_missing_oracle(report)
    return report


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
def schrodinger_four(tmp_path):
    """specs/schrodinger.pinn with grouping ``four`` added: its two equations (real, imag) share one interior
    point set and are tasks of their own (a point set that feeds two tasks); the path of that file."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "specs", "schrodinger.pinn"), encoding="utf-8") as fh:
        text = fh.read()
    path = tmp_path / "schrodinger.pinn"
    path.write_text(text.replace("grouping three = [N, B, I]", "loss R = real\nloss J = imag\n"
                                 "grouping four = [R, J, B, I]\ngrouping three = [N, B, I]"), encoding="utf-8")
    return path


@pytest.fixture
def no_host_sync():
    """``with no_host_sync(): ...`` fails on any tensor -> host conversion inside the block."""
    return lambda: HostConversions(fail=True)


@pytest.fixture
def host_conversions():
    """``with host_conversions() as seen: ...``; then ``seen.count`` conversions happened."""
    return HostConversions


@pytest.fixture(autouse=True)
def _inductor_where_marked(request, monkeypatch):
    """A test marked ``inductor`` (and every test under tests/gpu) compiles its graphs on inductor."""
    if request.node.get_closest_marker("inductor") is not None or "tests/gpu/" in request.node.nodeid:
        monkeypatch.setenv("PINNSPEC_COMPILE_BACKEND", "inductor")


@pytest.fixture
def checkout_build():
    """Held while a test builds pinnspec from the checkout (``pip wheel`` or ``pip install`` with
    ``--no-build-isolation``): such a build writes the checkout's build/ and pinnspec.egg-info, so two at once
    (two xdist workers) would collide; the lock file lets one build at a time."""
    from filelock import FileLock  # a dependency of torch

    with FileLock(os.path.join(tempfile.gettempdir(), "pinnspec-checkout-build.lock")):
        yield
