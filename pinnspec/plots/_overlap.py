"""Curves that would hide one another: finding the series of a panel that coincide, and drawing
them so that every one stays visible.

Two series coincide when one lies on the other wherever it is drawn (its finite x values are
among the other's, and there the y values differ by less than ``VISUAL_FRACTION`` of the
axis, a fraction of its decades on a log axis): a condition that is a task of its own, R_a and
R_p both 0 throughout, two runs with the same curve.  Of a group of coinciding series the first is drawn over a wide translucent band (where
the others lie on it) and the others on top of it, each with its own markers at staggered
points; the legend says which are equal ("=", to the rounding of history.csv) or only
indistinguishable at the plot's scale ("≈").
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import numpy as np

from ._style import fmt

EXACT_RTOL = 1e-6  # history.csv writes 9 significant digits: closer than this is the same number
VISUAL_FRACTION = 0.005  # of the axis height (about 2 pixels): closer curves hide one another
MEMBER_MARKERS = ("x", "^", "s", "D", "v", "+")
MARKS_PER_CURVE = 12


@dataclass
class Series:
    name: str  # a short name for notes: "task N", "R_a", "config-gua R_p"
    x: np.ndarray  # [n]
    y: np.ndarray  # [n]; x increasing (epochs)
    style: dict = field(default_factory=dict)  # matplotlib line properties
    label: str | None = None  # legend text; None: not in the legend


@dataclass
class Group:
    """Series that coincide: ``members[0]`` is drawn over a band, the others on top of it."""

    members: list[Series]
    equal: bool  # every member equals the first to rounding (else only within the plot's tolerance)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.members]

    def constant(self) -> float | None:
        """The value every member holds wherever it is drawn, when there is one."""
        values = np.concatenate([_finite(s)[1] for s in self.members])
        if self.equal and np.ptp(values) <= EXACT_RTOL * np.abs(values).max():
            return float(values[0])
        return None

    def note(self, where: str = "every epoch") -> str:
        """One line for the legend: "R_a = R_p = 0 throughout", "A = B on every epoch", "A ≈ B"."""
        value = self.constant()
        if value is not None:
            return f"{' = '.join(self.names)} = {fmt(value)} throughout"
        if not self.equal:
            return f"{' ≈ '.join(self.names)} (indistinguishable at this scale)"
        if any(not np.array_equal(_finite(s)[0], _finite(self.members[0])[0]) for s in self.members):
            where = f"{where} they share"
        return f"{' = '.join(self.names)} on {where}"


def coincide(a: Series, b: Series, rtol: float, atol: float = 0.0) -> bool:
    """Whether one series lies on the other wherever it is drawn: the finite x values of one are
    among those of the other, and there the y values agree within ``atol + rtol * max(|a|, |b|)``."""
    xa, ya = _finite(a)
    xb, yb = _finite(b)
    if not len(xa) or not len(xb):
        return False
    if len(xa) > len(xb):
        xa, ya, xb, yb = xb, yb, xa, ya
    at = np.searchsorted(xb, xa).clip(max=len(xb) - 1)  # x is increasing: epochs
    if not np.array_equal(xb[at], xa):
        return False
    yb = yb[at]
    return bool(np.all(np.abs(ya - yb) <= atol + rtol * np.maximum(np.abs(ya), np.abs(yb))))


def _within(x: np.ndarray, others: list[np.ndarray]) -> np.ndarray:
    """[n] bool: the x values from the smallest to the largest of ``others``."""
    lo = min(float(o.min()) for o in others)
    hi = max(float(o.max()) for o in others)
    return (x >= lo) & (x <= hi)


def _finite(s: Series) -> tuple[np.ndarray, np.ndarray]:
    keep = np.isfinite(s.y) & np.isfinite(s.x)
    return s.x[keep], s.y[keep]


def coinciding_groups(series: list[Series], rtol: float, atol: float = 0.0) -> list[Group]:
    """The series grouped by coincidence with each group's first member, in their order."""
    groups: list[list[Series]] = []
    for s in series:
        for members in groups:
            if coincide(members[0], s, rtol, atol):
                members.append(s)
                break
        else:
            groups.append([s])
    return [Group(members, all(coincide(members[0], s, EXACT_RTOL) for s in members[1:]))
            for members in groups]


def visual_tolerance(series: list[Series], *, log: bool, span: float | None = None) -> tuple[float, float]:
    """(rtol, atol) within which curves are closer than ``VISUAL_FRACTION`` of the axis: relative
    on a log axis, absolute on a linear one.  ``span``: the axis's extent (in decades on a log
    axis) when it is fixed; by default that of the series' values."""
    values = np.concatenate([_finite(s)[1] for s in series] + [np.zeros(0)])
    if log:
        values = values[values > 0]
        if span is None:
            span = float(np.log10(values.max() / values.min())) if len(values) else 0.0
        return max(EXACT_RTOL, 10 ** (VISUAL_FRACTION * span) - 1), 0.0
    if span is None:
        span = float(np.ptp(values)) if len(values) else 0.0
    return EXACT_RTOL, VISUAL_FRACTION * span


def draw_visibly(ax, series: list[Series], *, log: bool = False, span: float | None = None,
                 note_in_labels: bool = True, list_empty: bool = False) -> list[Group]:
    """Draw every series with a finite value on ``ax`` (a ``log`` y axis or not, of ``span`` as in
    ``visual_tolerance``); where several coincide, the first over a wide translucent band and the
    rest on top with markers.  With ``note_in_labels`` each member's
    legend label names the others: "condition walls (= task B)".  With ``list_empty`` a series with
    nothing finite keeps its place in the legend.  Returns the groups of two or more."""
    drawable = [s for s in series if np.isfinite(s.y).any()]
    groups = coinciding_groups(drawable, *visual_tolerance(drawable, log=log, span=span))
    group_of = {id(s): group for group in groups for s in group.members}
    for s in series:  # in the given order (the legend's); a group's band comes before its members
        group = group_of.get(id(s))
        if group is None:
            if list_empty and s.label is not None:
                ax.plot([], [], label=s.label, **s.style)
            continue
        members = group.members
        style, label = dict(s.style), s.label
        if len(members) > 1:
            k = next(i for i, member in enumerate(members) if member is s)
            if note_in_labels and label is not None:
                sign = "=" if group.equal else "≈"
                label = f"{label} ({sign} {', '.join(o.name for o in members if o is not s)})"
            if k == 0:  # a band under the part of the curve the others lie on
                shared = _within(s.x, [_finite(member)[0] for member in members[1:]])
                band = {**style, "lw": style.get("lw", 1.5) + 4, "alpha": 0.35, "marker": None}
                ax.plot(s.x[shared], s.y[shared], **band)
            else:
                step = max(1, len(s.x) // MARKS_PER_CURVE)
                style.update(marker=MEMBER_MARKERS[(k - 1) % len(MEMBER_MARKERS)], ms=5,
                             markevery=((k - 1) * step // (len(members) - 1), step))
        ax.plot(s.x, s.y, label=label, **style)
    return [g for g in groups if len(g.members) > 1]


def add_note(ax, text: str, width: int = 60) -> None:
    """A legend line without a curve (wrapped at ``width`` characters)."""
    ax.plot([], [], " ", label="\n".join(textwrap.wrap(text, width, break_on_hyphens=False)))
