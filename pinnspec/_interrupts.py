"""Ctrl-C, once: the repeats of one interrupt are not a second Ctrl-C.

A first SIGINT asks a run (or a sweep) to finish its epoch, checkpoint and stop; a second one stops at once.
One interrupt often arrives twice: ``timeout -s INT`` signals the command and then its whole process group,
and a batch scheduler signals every process of a job, which a sweep's driver then signals again.  A SIGINT
within ``REPEAT_S`` seconds of the first counts as that first one.  No torch here."""

from __future__ import annotations

import signal
import time
from typing import Callable

#: a SIGINT this soon after the first is the first one delivered again (seconds)
REPEAT_S = 1.0


class Interrupts:
    """The SIGINTs a process got: :meth:`arrive` says whether this one is the first, a repeat of the first,
    or a second Ctrl-C."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.first: float | None = None

    def arrive(self) -> str:
        """"first", "repeat" (within REPEAT_S of the first) or "again" (a second Ctrl-C)."""
        now = self.clock()
        if self.first is None:
            self.first = now
            return "first"
        return "repeat" if now - self.first < REPEAT_S else "again"


def install_sigint(stop: Callable[[], object]):
    """Ctrl-C: ``stop()`` (a run, or every run of a group, finishes the epoch, checkpoints and stops); a second
    Ctrl-C stops at once (the same one delivered twice is one).  Returns the handler it replaced, for
    `restore_sigint` (None where none could be installed: not the main thread)."""
    interrupts = Interrupts()
    try:
        def handler(signum, frame):
            if interrupts.arrive() == "again":
                raise KeyboardInterrupt
            stop()

        return signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        return None


def restore_sigint(previous) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)
