"""Properties and edge cases of every surgery method, through one shared helper."""

import subprocess
import sys
import textwrap

import pytest
import torch
from surgery_cases import random_G

from pinnspec.registry import SURGERY, UnknownNameError
from pinnspec.surgery import aggregate, make

METHODS = ["none", "pcgrad", "cagrad", "imtlg", "amtl", "upgrad", "config", "mconfig"]


def run(name, G, seed=0):
    method = make(name)
    a, _ = method(G, method.init(*G.shape, dtype=G.dtype), generator=torch.Generator().manual_seed(seed))
    return a


def check_surgery_properties(name, G, *, rtol=1e-6):
    """The shared property check: a has G's shape and dtype and is finite;
    non-conflicting where the method promises it; scale-equivariant and
    permutation-invariant where the method is."""
    method = make(name)
    a = run(name, G)
    assert a.shape == (G.shape[1],) and a.dtype == G.dtype and torch.isfinite(a).all()
    scale = max(a.norm().item(), 1e-300)
    independent = torch.linalg.matrix_rank(G.double()).item() == G.shape[0]
    if method.conflict_free and (independent or name == "upgrad"):
        assert torch.all(G.double() @ a.double() >= -1e-9 * G.double().norm(dim=1) * scale), name
    if name == "pcgrad" and G.shape[0] == 2:  # two tasks: PCGrad's sum is conflict-free
        assert torch.all(G @ a >= -1e-9 * G.norm(dim=1) * scale)
    if method.scale_equivariant:
        for s in (1e-2, 1e2):
            torch.testing.assert_close(run(name, s * G), s * a, rtol=0, atol=rtol * s * scale)
    if method.permutation_invariant:
        order = torch.randperm(G.shape[0], generator=torch.Generator().manual_seed(1))
        torch.testing.assert_close(run(name, G[order]), a, rtol=0, atol=rtol * scale)
    return a




@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("m", [2, 3, 5, 8])
def test_properties_random(name, m):
    for correlated in (False, True):
        check_surgery_properties(name, random_G(m, 30, correlated=correlated, seed=m + 10 * correlated),
                                 rtol=1e-3 if name == "cagrad" else 1e-6)


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_edge_cases(name, dtype):
    g = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=dtype)
    h = torch.tensor([0.5, 1.0, -1.0, 0.0], dtype=dtype)
    tol = dict(rtol=1e-4 if name == "cagrad" else 1e-5, atol=1e-5)
    stateless_expected = {
        # m = 1: every method returns (a multiple of) the single gradient (amtl: B = 1, its mean is g)
        "m1": {"none": g, "pcgrad": g, "cagrad": 1.5 / 1.25 * g, "imtlg": g, "amtl": g, "upgrad": g,
               "config": g},
        # opposite pair: nothing is conflict-free but 0
        "opposite": {k: torch.zeros_like(g) for k in METHODS},
        # duplicate rows (amtl: B = [[1, 1], [1, 1]] / 2, the mean of the aligned gradients is g; reduce = sum: 2g)
        "duplicate": {"none": 2 * g, "pcgrad": 2 * g, "cagrad": 2 * 1.5 / 1.25 * g, "imtlg": g, "amtl": g,
                      "upgrad": g, "config": 2 * g},
    }
    cases = {"m1": g[None], "opposite": torch.stack([g, -g]), "duplicate": torch.stack([g, g])}
    for case, G in cases.items():
        a = run(name, G)
        assert a.dtype == dtype and torch.isfinite(a).all(), (name, case)
        if name in stateless_expected[case]:
            torch.testing.assert_close(a, stateless_expected[case][name], **tol, msg=f"{name} {case}")
    # all-zero G -> a = 0
    assert torch.equal(run(name, torch.zeros(3, 4, dtype=dtype)), torch.zeros(4, dtype=dtype))
    # a zero row among nonzero ones: finite, and the method sees the others
    a = run(name, torch.stack([g, torch.zeros_like(g), h]))
    assert torch.isfinite(a).all()
    # m > p
    G = random_G(6, 3, correlated=False, seed=0, dtype=dtype)
    a = run(name, G)
    assert a.shape == (3,) and torch.isfinite(a).all()
    if name == "upgrad":  # exact dual-cone projections stay in the cone even when m > p
        norms = G.double().norm(dim=1)  # here the cone is {0}: a vanishes up to rounding
        assert torch.all(G.double() @ a.double() >= -1e-5 * norms * norms.max())
    # no rows at all
    assert torch.equal(run(name, torch.zeros(0, 4, dtype=dtype)), torch.zeros(4, dtype=dtype))


def test_amtl_reduce_sum_is_m_times_the_mean():
    g = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)
    # the official code's sum: m = 1 is still g, duplicate rows give 2g (the mean gives g)
    torch.testing.assert_close(aggregate("amtl", g[None], reduce="sum"), g)
    torch.testing.assert_close(aggregate("amtl", torch.stack([g, g]), reduce="sum"), 2 * g)
    for m in (2, 3, 5, 8):
        G = random_G(m, 30, correlated=True, seed=m, dtype=torch.float64)
        torch.testing.assert_close(aggregate("amtl", G, reduce="sum"), m * aggregate("amtl", G))


def test_amtl_reduce_from_a_spec():
    from pinnspec.lang import loads

    head = "problem p\nspace x in [-1, 1]\ntime t in [0, 1]\nfield u\nequation pde: u_t - 0.01*u_xx = 0\n"
    surgery = loads(head + "surgery amtl(scale = rmse, reduce = sum)\n").ir.training.surgery
    assert surgery.name == "amtl" and surgery.options == {"scale": "rmse", "reduce": "sum"}
    assert make(surgery.name, **surgery.options).reduce == "sum"
    assert loads(head + "surgery amtl\n").ir.training.surgery.options == {"scale": "rmse", "reduce": "mean"}


def test_config_two_losses_zero_gradient_is_not_nan():
    g = torch.tensor([3.0, 4.0])
    for G in (torch.stack([torch.zeros(2), g]), torch.stack([g, torch.zeros(2)])):
        a = aggregate("config", G)
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, g)


def test_config_conflict_free_and_equal_angles():
    G = random_G(4, 20, correlated=False, seed=5)
    a = aggregate("config", G)
    cos = (G @ a) / (G.norm(dim=1) * a.norm())
    torch.testing.assert_close(cos, cos.mean().expand(4))  # equal angles with every gradient
    assert (cos > 0).all()


def test_registry_and_keyword_arguments():
    assert set(METHODS) <= set(SURGERY.names())
    assert SURGERY.entry("cagrad").parameters() == {"c": 0.5}
    assert SURGERY.entry("amtl").parameters() == {"scale": "rmse", "reduce": "mean"}
    assert SURGERY.entry("mconfig").parameters() == {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    assert SURGERY.entry("none").parameters() == {}
    with pytest.raises(UnknownNameError, match="did you mean 'upgrad'"):
        aggregate("upgrd", torch.ones(2, 3))
    with pytest.raises(ValueError, match="scale"):
        make("amtl", scale="max")
    with pytest.raises(ValueError, match="reduce must be one of 'mean', 'sum'"):
        make("amtl", reduce="total")
    with pytest.raises(ValueError, match=r"\[m, p\]"):
        aggregate("none", torch.ones(3))


def test_mconfig_state_round_trip():
    method = make("mconfig")
    state = method.init(3, 10, dtype=torch.float64)
    sequence = [random_G(3, 10, correlated=False, seed=s) for s in range(8)]
    for G in sequence[:4]:
        _, state = method(G, state)
    restored = method.load_state_dict(method.state_dict(state))
    for G in sequence[4:]:
        a, state = method(G, state)
        b, restored = method(G, restored)
        assert torch.equal(a, b)
    assert make("config").state_dict(None) == {} and make("config").load_state_dict({}) is None


def test_stateless_methods_leave_state_alone():
    G = random_G(3, 10, correlated=True, seed=0)
    for name in METHODS[:-1]:
        a, state = make(name)(G, None, generator=torch.Generator().manual_seed(0))
        assert state is None


def test_surgery_imports_neither_lark_nor_sympy(tmp_path):
    """pinnspec.surgery (and the packages it needs) must load without lark/sympy:
    run it with those two made unimportable, the top-level package stubbed."""
    import pinnspec

    code = textwrap.dedent(f"""
        import sys, types, importlib.abc

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("lark", "sympy"):
                    raise ImportError("blocked: " + name)
                return None

        sys.meta_path.insert(0, Block())
        package = types.ModuleType("pinnspec")
        package.__path__ = [{pinnspec.__path__[0]!r}]
        sys.modules["pinnspec"] = package
        import torch
        import pinnspec.surgery, pinnspec.optim, pinnspec.align
        G = torch.randn(3, 5)
        for name in ("none", "pcgrad", "cagrad", "imtlg", "amtl", "upgrad", "config", "mconfig"):
            pinnspec.surgery.aggregate(name, G, generator=torch.Generator().manual_seed(0))
        assert not any(m.split(".")[0] in ("lark", "sympy") for m in sys.modules)
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


#: aten ops that wait for the device (cuSOLVER's info checks, data-dependent shapes, host reads): a CUDA
#: graph cannot record them
_SYNCHRONISING = ("linalg_pinv", "linalg_eigh", "_linalg_eigh", "_linalg_svd", "linalg_svd", "linalg_solve",
                  "linalg_lstsq", "linalg_inv", "nonzero", "_local_scalar_dense", "masked_select")


#: the methods that trace into one compiled graph (the others make host decisions or draw from a generator)
COMPILING = ["none", "config", "mconfig"]


def test_the_compiling_methods_are_the_listed_ones():
    assert [name for name in METHODS if make(name).compiles] == COMPILING


@pytest.mark.parametrize("name", COMPILING)
@pytest.mark.parametrize("m", [2, 3, 5])
def test_a_compiling_direction_has_no_synchronising_op(name, m):
    """A method that `compiles` is also recorded in a CUDA graph (`UpdateChain.capturable`): its direction,
    traced to aten ops, calls none that waits for the device (ConFIG's m x m system for m >= 3 included)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    method = make(name)
    G = random_G(m, 40, correlated=False, seed=m)
    state = method.init(*G.shape, dtype=G.dtype)
    graph = make_fx(lambda G: method(G, state)[0])(G)
    ops = {str(node.target).split(".")[1] for node in graph.graph.nodes if node.op == "call_function"
           and str(node.target).startswith("aten.")}
    assert not ops.intersection(_SYNCHRONISING), (name, m, sorted(ops.intersection(_SYNCHRONISING)))
    if name == "config" and m >= 3:
        assert "linalg_lu_factor_ex" in ops  # the traced graph is the one documented


def test_config_ridge_solve_matches_the_pseudo_inverse():
    """ConFIG for m >= 3: U^T (U U^T + d I)^{-1} 1 against torch.linalg.pinv(U) 1 (an SVD of the m x p
    matrix): equal to d / lambda_min on independent rows, with a zero row and with a repeated row; to about
    1e-16 / d where U x = 1 has no solution (four rows spanning two dimensions)."""
    from pinnspec.surgery._methods import CONFIG_RIDGE, config_direction, unit_rows

    def by_svd(G):
        best = torch.linalg.pinv(unit_rows(G)) @ torch.ones(G.shape[0], dtype=G.dtype)
        unit = best / best.norm() if best.norm() > 0 else best
        return (G @ unit).sum() * unit

    gen = torch.Generator().manual_seed(3)
    G = torch.randn(4, 300, generator=gen, dtype=torch.float64)
    cases = {"independent": G, "a zero row": torch.cat([G[:3], torch.zeros(1, 300, dtype=torch.float64)]),
             "a repeated row": torch.cat([G[:3], 2.5 * G[:1]]),
             "rank two": torch.stack([G[0], G[1], G[0] + G[1], G[0] - 0.5 * G[1]])}
    for what, rows in cases.items():
        units = unit_rows(rows)
        eig = torch.linalg.eigvalsh(units @ units.T)
        lam_min = eig[eig > 1e-10].min().item()
        expected = by_svd(rows)
        error = (config_direction(rows) - expected).norm() / expected.norm()
        bound = 1e-15 / CONFIG_RIDGE if what == "rank two" else 10 * CONFIG_RIDGE / lam_min + 1e-13
        assert error <= bound, (what, error.item(), lam_min)
    assert torch.equal(config_direction(torch.zeros(3, 5)), torch.zeros(5))  # every row zero: no direction
