"""Derivatives sigma^(m)(z), m = 0..M, of the elementwise activations, as tensors.

Each family is a polynomial recursion built once per order (exact integer
coefficients), then evaluated by Horner's rule (in z^2 where the polynomial
has a parity):

* tanh:  sigma^(m) = p_m(t), t = tanh z,  p_0 = t,  p_{m+1} = p_m'(t) (1 - t^2)
* sin:   sin, cos, -sin, -cos, ...
* silu:  z s(z) with s = sigmoid:  s^(n) = r_n(s), r_0 = s, r_{n+1} = r_n'(s) s (1 - s);
         silu^(m) = z r_m(s) + m r_{m-1}(s)
* gelu (exact, erf):  z Phi(z):  gelu^(m) = A_m(z) Phi(z) + B_m(z) phi(z),
         A_0 = z, B_0 = 0, A_{m+1} = A_m', B_{m+1} = A_m + B_m' - z B_m

Order 0 is always the model's own function (bit-identical to ``model(x)``).
The engine reads them as (scale, q) pairs, sigma^(m) = scale * q with an
integer scale kept out of the tensors (tanh: sigma'' = -2 * (t s)); the
derivative programs fold the scales into their term coefficients.
"""

from __future__ import annotations

import contextlib
import math
from typing import Callable

import torch
from torch.nn import functional as F

from ._program import _memo

Poly = tuple[int, ...]  # coefficients c_0, c_1, ... of c_0 + c_1 x + ...


def _trim(c) -> Poly:
    c = list(c)
    while c and c[-1] == 0:
        c.pop()
    return tuple(c)


def _deriv(c: Poly) -> Poly:
    return _trim(i * c[i] for i in range(1, len(c)))


def _mul(a: Poly, b: Poly) -> Poly:
    if not a or not b:
        return ()
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return _trim(out)


def _add(a: Poly, b: Poly) -> Poly:
    n = max(len(a), len(b))
    return _trim((a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n))


@_memo
def tanh_polys(order: int) -> tuple[Poly, ...]:
    polys = [(0, 1)]
    for _ in range(order):
        polys.append(_mul(_deriv(polys[-1]), (1, 0, -1)))
    return tuple(polys)


@_memo
def sigmoid_polys(order: int) -> tuple[Poly, ...]:
    polys = [(0, 1)]
    for _ in range(order):
        polys.append(_mul(_deriv(polys[-1]), (0, 1, -1)))
    return tuple(polys)


@_memo
def gelu_polys(order: int) -> tuple[tuple[Poly, Poly], ...]:
    out = [((0, 1), ())]
    for _ in range(order):
        a, b = out[-1]
        out.append((_deriv(a), _add(_add(a, _deriv(b)), _mul((0, -1), b))))
    return tuple(out)


# ---------------------------------------------------------------- evaluation
# Values are tensors or Python numbers (constants); ``_tensor`` makes the final ones tensors.

def _horner(x: torch.Tensor, c: Poly):
    if not c:
        return 0
    if len(c) == 1:
        return c[0]
    r = x * c[-1] + c[-2] if c[-2] else x * c[-1]
    for ci in reversed(c[:-2]):
        r = r * x + ci if ci else r * x
    return r


def _poly(x: torch.Tensor, x2: torch.Tensor, c: Poly):
    """c(x), by Horner in x^2 when c is even or odd."""
    c = _trim(c)
    if not c:
        return 0
    if all(v == 0 for v in c[1::2]):
        return _horner(x2, c[0::2])
    if all(v == 0 for v in c[0::2]):
        inner = _horner(x2, c[1::2])
        return x * inner
    return _horner(x, c)


def _times(a, b):
    if isinstance(a, (int, float)):
        if a == 0:
            return 0
        return b if a == 1 else b * a
    if isinstance(b, (int, float)):
        return _times(b, a)
    return a * b


def _plus(a, b):
    if isinstance(a, (int, float)) and a == 0:
        return b
    if isinstance(b, (int, float)) and b == 0:
        return a
    return a + b


def _tensor(v, like: torch.Tensor) -> torch.Tensor:
    return v if isinstance(v, torch.Tensor) else torch.full_like(like, float(v))


def _content(c: Poly) -> int:
    """The integer factor of c (sign of its lowest non-zero coefficient, gcd of all)."""
    c = _trim(c)
    if not c:
        return 1
    g = 0
    for v in c:
        g = math.gcd(g, abs(v))
    return g if next(v for v in c if v) > 0 else -g


def _scaled(c: Poly):
    k = _content(c)
    return k, tuple(v // k for v in _trim(c))


def _one_minus_square(x: torch.Tensor) -> torch.Tensor:
    return torch.addcmul(x.new_ones(()), x, x, value=-1)


# Each family returns [(scale_m, q_m)] with sigma^(m)(z) = scale_m * q_m: integer scales
# stay out of the tensors (the derivative programs fold them into their coefficients).

def _tanh_by_expm1(z: torch.Tensor) -> torch.Tensor:
    """tanh z = e / (e + 2), e = expm1(2 z): the same values (to rounding; no cancellation near 0), and
    inductor's vectorised expm1 on the CPU is ~3x faster than its tanh (0.26 vs 0.90 ms on [10k, 50],
    one thread).  |z| is clamped at 40 (tanh = +-1 in float64 beyond; expm1(80) fits in float32)."""
    e = torch.expm1(2.0 * z.clamp(-40.0, 40.0))
    return e / (e + 2.0)


class _CompiledTanh(torch.autograd.Function):
    """tanh by ``_tanh_by_expm1`` whose backward is grad * (1 - t^2) from the saved output: autograd through
    the expm1 form would recompute expm1 and the clamp's mask in the backward graph."""

    @staticmethod
    def forward(z):
        return _tanh_by_expm1(z)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved_tensors
        return grad * _one_minus_square(t)


#: True while a graph of several models at once is traced (`plain_tanh`)
_PLAIN_TANH = False


@contextlib.contextmanager
def plain_tanh():
    """Trace tanh as ``torch.tanh``, not the fast form: torch.compile cannot vmap an ``autograd.Function`` (the
    losses of several runs in one graph, `pinnspec.engine.RunGroup`).  Read while tracing, so a graph traced
    inside is guarded on it and compiled code outside keeps the fast form."""
    global _PLAIN_TANH
    before, _PLAIN_TANH = _PLAIN_TANH, True
    try:
        yield
    finally:
        _PLAIN_TANH = before


@_memo
def _tanh_factors(order: int) -> tuple[tuple[int, Poly], ...]:
    """(k, r) for m = 2..order: sigma^(m) = k r(t) s with s = 1 - t^2 (`_tanh`)."""
    return tuple(_scaled(_deriv(p)) for p in tanh_polys(order - 1)[1:])


def _tanh(z: torch.Tensor, order: int) -> list:
    fast = torch.compiler.is_compiling() and not _PLAIN_TANH  # compiled graphs: the fast form
    t = _CompiledTanh.apply(z) if fast else torch.tanh(z)
    out = [(1, t)]
    if order:
        s = _one_minus_square(t)  # sigma^(m) = s * p_{m-1}'(t) for m >= 1
        out.append((1, s))
        t2 = t * t if order >= 4 else None
        for k, r in _tanh_factors(order):
            if r == (1,):
                out.append((k, s))
            elif r == (0, 1):
                out.append((k, t * s))
            else:
                out.append((k, _poly(t, t * t if t2 is None else t2, r) * s))
    return out


def _sin(z: torch.Tensor, order: int) -> list:
    s = torch.sin(z)
    if not order:
        return [(1, s)]
    c = torch.cos(z)
    return [((1, s), (1, c), (-1, s), (-1, c))[m % 4] for m in range(order + 1)]


def _silu(z: torch.Tensor, order: int) -> list:
    out = [(1, F.silu(z))]
    if order:
        s = torch.sigmoid(z)
        s2 = s * s
        r = [_poly(s, s2, p) for p in sigmoid_polys(order)]
        out += [(1, _tensor(_plus(_times(z, r[m]), _times(m, r[m - 1])), z)) for m in range(1, order + 1)]
    return out


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu(z: torch.Tensor, order: int) -> list:
    out = [(1, F.gelu(z))]
    if order:
        cdf = torch.special.ndtr(z)
        z2 = z * z
        pdf = torch.exp(z2 * -0.5) * _INV_SQRT_2PI
        for a, b in gelu_polys(order)[1:]:
            if not a:  # m >= 2: B_m(z) phi(z)
                k, b = _scaled(b)
                out.append((k, _tensor(_times(_poly(z, z2, b), pdf), z)))
            else:
                out.append((1, _tensor(_plus(_times(_poly(z, z2, a), cdf), _times(_poly(z, z2, b), pdf)), z)))
    return out


#: activation name (as in ``pinnspec.models._mlp.ACTIVATIONS``) -> (z, M) -> [(scale, q)] for sigma^(0..M)
DERIVATIVES: dict[str, Callable[[torch.Tensor, int], list[torch.Tensor]]] = {
    "tanh": _tanh,
    "sin": _sin,
    "silu": _silu,
    "gelu": _gelu,
}


def scaled_derivatives(name: str, z: torch.Tensor, order: int) -> list[tuple[int, torch.Tensor]]:
    """[(scale_m, q_m)] for m = 0..order with sigma^(m)(z) = scale_m * q_m (integer scales)."""
    try:
        fn = DERIVATIVES[name]
    except KeyError:
        raise ValueError(f"no derivatives known for activation '{name}' (known: {', '.join(DERIVATIVES)})") from None
    return fn(z, int(order))


def activation_derivatives(name: str, z: torch.Tensor, order: int) -> list[torch.Tensor]:
    """[sigma(z), sigma'(z), ..., sigma^(order)(z)] for a known activation ``name``."""
    return [q if k == 1 else q * k for k, q in scaled_derivatives(name, z, order)]
