"""The process's resident-set size and its high-water mark (torch-free; Linux exact).

``read_status`` reads VmRSS / VmHWM from /proc/self/status and ``reset_peak``
resets VmHWM to the current RSS by writing 5 to /proc/self/clear_refs
(Linux >= 4.0).  Elsewhere the process's ``ru_maxrss`` stands in for both.
Used by the trainer (a run's peak memory on the CPU) and ``bench speed``.
"""

from __future__ import annotations

import resource
import sys


def read_status() -> dict[str, int]:
    """{"VmRSS": bytes, "VmHWM": bytes}."""
    values: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = int(rest.split()[0]) * 1024  # kB
    except OSError:
        pass
    if len(values) < 2:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak *= 1 if sys.platform == "darwin" else 1024  # macOS: bytes, Linux: KiB
        values = {"VmRSS": values.get("VmRSS", peak), "VmHWM": values.get("VmHWM", peak)}
    return values


def reset_peak() -> bool:
    """Reset the RSS high-water mark to the current RSS; False when the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False
