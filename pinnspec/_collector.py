"""Python's cyclic garbage collector kept off the objects that outlive a training loop.

A built Trainer's process tracks ~270,000 long-lived Python objects (torch, SymPy, Lark,
SciPy, the compiled problem: 267,790 for DeepXDE's Burgers example), and every step makes a
few hundred short-lived ones.  The collector's young generations pass over the short-lived
ones at no cost worth measuring (13 of them in 2,000 eager Burgers steps, < 0.1 ms each); a
full collection walks every object: 0.115-0.120 s on the 2-core CPU machine, one in those
2,000 steps, a pause of ~30 steps inside the loop.  `hold` moves every object tracked when
the loop starts into the collector's permanent generation for the loop's duration
(``gc.freeze``), and the full collections that still run walk only what the loop made;
`release` hands them back afterwards (``gc.unfreeze``).  Reference counting frees objects
as always, a cycle made during the loop is collected as before, and a cycle among the frozen
objects that becomes garbage during the loop waits until it ends.  The steps themselves take as long as
before (five alternating pairs of 2,000-step runs, one thread: 4.07-4.28 ms per step held,
3.96-4.41 not); what goes is the pause.

Nested holds (a `RunGroup`'s trainers, one each; trainers in threads) hand back once, when the outermost ends; a
process that froze objects of its own keeps its freeze and no other.  PINNSPEC_GC_FREEZE=off
leaves the collector alone.
"""

from __future__ import annotations

import gc
import os
import threading

_depth = 0
_froze = False
_lock = threading.Lock()  # trainers run in threads of one process share the count


def _wanted() -> bool:
    return os.environ.get("PINNSPEC_GC_FREEZE", "on").lower() not in ("off", "0", "no")


def hold() -> None:
    """Freeze what the collector tracks now (the outermost of nested holds, unless the process froze objects of its
    own: those stay as they are); pair with `release`."""
    global _depth, _froze
    with _lock:
        if _depth == 0:
            _froze = _wanted() and gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()
        _depth += 1


def release() -> None:
    """End a `hold`; the outermost moves what it froze back to the collector's oldest generation."""
    global _depth, _froze
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0 and _froze:
            _froze = False
            gc.unfreeze()
