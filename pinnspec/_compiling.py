"""torch.compile helpers shared by the compiled losses and the compiled update chain."""

from __future__ import annotations

import itertools
import types

_copies = itertools.count()


def own_code(fn):
    """A copy of ``fn`` with a code object of its own (same body, a numbered name).

    torch.compile keeps its cache, and its limit of 8 recompiles, per code object: one copy per
    compiled unit keeps many point sets, problems or trainers in one process (a sweep worker) from
    sharing one cache and running eagerly once it is full."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{next(_copies)}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)
