"""geometry.png (``pinnspec show --stage geometry``): the domain with the sampled points.

Drawn from the point plan's sets for one ``(seed, epoch)``:

* the space box (dashed) and, for a spec with a ``domain``, the domain's boundary (the zero
  contour of its signed distance; 2-D only);
* the interior points of the equations (small grey dots);
* every other set (boundaries, initial slices, periodic pairs, data) in its own colour, the
  legend naming its conditions;
* outward normals as short arrows on at most ``MAX_ARROWS`` points per boundary set: the
  geometry's normals on a domain's boundary, the face normal on a face of the space box.

Only space is drawn: a spec with time shows the space coordinates of its points (the time
column dropped; the title says so).  1-D: one row per set along the line.  3-D and more: the
projection onto the first two space coordinates (said in the title).
"""

from __future__ import annotations

import os
import textwrap

import numpy as np

from .. import ir
from ._style import new_figure, save

MAX_ARROWS = 60  # per boundary set
MAX_DOTS = 6000  # per set; more are subsampled (the legend gives the full count)
CONTOUR_GRID = 400
LABEL_WIDTH = 42  # characters of a legend line
INTERIOR_COLOR = "0.6"
COLORS = ("tab:red", "tab:blue", "tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:pink",
          "tab:olive", "tab:cyan")


def _ir_and_plan(spec_or_problem):
    """(ir.Problem, PointPlan) from a loaded spec, a compiled problem or a spec path."""
    from ..sampling import PointPlan

    if isinstance(spec_or_problem, (str, os.PathLike)):
        from ..lang import load

        spec_or_problem = load(os.fspath(spec_or_problem))
    plan = getattr(spec_or_problem, "point_plan", None)
    problem = getattr(spec_or_problem, "ir", None)
    if not isinstance(problem, ir.Problem):
        raise ValueError(f"geometry_figure takes a loaded spec, a compiled problem or a .pinn path, "
                         f"not {type(spec_or_problem).__name__}")
    return problem, plan if plan is not None else PointPlan(problem)


def _label(problem: ir.Problem, planned, n: int) -> str:
    region = planned.region
    kinds = {problem.condition(c).kind for c in planned.conditions}
    names = ", ".join(planned.conditions)
    if isinstance(region, (ir.Interior, ir.DomainInterior)):
        what = "interior"
    elif isinstance(region, ir.DomainBoundary):
        what = f"on {', '.join(region.on)}"
    elif isinstance(region, ir.FaceRegion):
        faces = [str(f) for f in region.faces]
        what = f"on {', '.join(faces)}" if len(faces) <= 4 else f"on {len(faces)} faces of the box"
    elif isinstance(region, (ir.InitialSlice, ir.DomainInitialSlice)):
        what = f"at {region.time} = {region.value:g}"
    elif isinstance(region, ir.PeriodicPairs):
        what = f"periodic in {region.coordinate}"
    else:
        what = "data" if "data" in kinds else str(region)
    return textwrap.fill(f"{names} ({what}, {n} points)", LABEL_WIDTH, subsequent_indent="  ")


def _face_normals(problem: ir.Problem, planned, points, space_names: list[str]) -> np.ndarray | None:
    """Outward normals on the faces of the space box, from ``face_slices``; None for other sets."""
    if not isinstance(planned.region, ir.FaceRegion) or points.face_slices is None:
        return None
    normals = np.full((len(points), len(space_names)), np.nan)
    for face, rows in zip(planned.region.faces, points.face_slices):
        if face.coordinate in space_names:
            normal = np.zeros(len(space_names))
            normal[space_names.index(face.coordinate)] = face.normal_sign
            normals[rows] = normal
    return normals


def _subsample(n: int, limit: int, seed: int) -> np.ndarray:
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng([seed, n, limit]).choice(n, limit, replace=False))


def geometry_figure(spec_or_problem, seed: int = 0, epoch: int = 0):
    """The figure of the domain and the sampled points of ``(seed, epoch)`` (see the module doc)."""
    problem, plan = _ir_and_plan(spec_or_problem)
    names = [c.name for c in problem.coordinates]
    space = list(problem.space)
    space_names = [c.name for c in space]
    columns = [names.index(n) for n in space_names]
    d = len(space)
    sets = plan.sample(int(seed), int(epoch))

    fig = new_figure(8.0, 3.8) if d == 1 else new_figure(8.0, 6.8)
    ax = fig.add_subplot()
    lo = np.array([c.lo for c in space])
    hi = np.array([c.hi for c in space])
    arrow = 0.07 * float(np.max(hi[:2] - lo[:2]))

    notes = []
    if problem.time is not None:
        notes.append(f"space only: the time column {problem.time.name} dropped")
    if d >= 3:
        notes.append(f"projection of the {d}-D space onto ({space_names[0]}, {space_names[1]})")

    color_index = 0
    rows_1d: list[str] = []
    for planned, points in zip(plan.sets, sets):
        x = np.asarray(points.x)[:, columns]
        n = len(x)
        if n == 0:
            continue
        label = _label(problem, planned, n)
        interior = isinstance(planned.region, (ir.Interior, ir.DomainInterior))
        if interior:
            color, size, zorder = INTERIOR_COLOR, 3, 1
        else:
            color, size, zorder = COLORS[color_index % len(COLORS)], 9, 3
            color_index += 1
        keep = _subsample(n, MAX_DOTS, seed)
        if d == 1:
            row = len(rows_1d)
            rows_1d.append(label)
            xs, ys = x[keep, 0], np.full(len(keep), float(row))
            if points.partner is not None:
                xs = np.concatenate([xs, np.asarray(points.partner)[keep][:, columns[0]]])
                ys = np.concatenate([ys, ys])
            ax.scatter(xs, ys, s=size, color=color, lw=0, zorder=zorder)
        else:
            xs, ys = x[keep, 0], x[keep, 1]
            if points.partner is not None:
                partner = np.asarray(points.partner)[keep][:, columns]
                xs, ys = np.concatenate([xs, partner[:, 0]]), np.concatenate([ys, partner[:, 1]])
            ax.scatter(xs, ys, s=size, color=color, lw=0, zorder=zorder, label=label)

        normals = points.normals if points.normals is not None else _face_normals(
            problem, planned, points, space_names)
        if normals is None:
            continue
        normals = np.asarray(normals, float)
        finite = np.all(np.isfinite(normals), axis=1)
        if d >= 2:  # in a projection, only the normals with a visible in-plane part
            finite &= np.hypot(normals[:, 0], normals[:, 1]) > 0.2
        ok = np.flatnonzero(finite)
        pick = ok[_subsample(len(ok), MAX_ARROWS, seed + 1)]
        if not len(pick):
            continue
        if d == 1:
            u, v = normals[pick, 0] * arrow, np.zeros(len(pick))
            base_y = np.full(len(pick), float(len(rows_1d) - 1))
        else:
            extent = float(np.max(np.ptp(x[:, :2], axis=0)))  # a small hole gets short arrows
            length = min(arrow, 0.2 * extent) if extent > 0 else arrow
            u, v = normals[pick, 0] * length, normals[pick, 1] * length
            base_y = x[pick, 1]
        ax.quiver(x[pick, 0], base_y, u, v, angles="xy", scale_units="xy", scale=1, color=color,
                  width=0.003, headwidth=4, headlength=5, zorder=4)

    _draw_box_and_domain(ax, problem, lo, hi, d)
    if d == 1:
        ax.set_yticks(range(len(rows_1d)), rows_1d, fontsize=8)
        ax.set_ylim(-0.7, len(rows_1d) - 0.3)
        ax.invert_yaxis()
        ax.set_xlabel(space_names[0])
        pad = 0.1 * (hi[0] - lo[0])
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
    else:
        ax.set_xlabel(space_names[0])
        ax.set_ylabel(space_names[1])
        ax.set_aspect("equal")
        pad = 0.12 * (hi[:2] - lo[:2])
        ax.set_xlim(lo[0] - pad[0], hi[0] + pad[0])
        ax.set_ylim(lo[1] - pad[1], hi[1] + pad[1])
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, markerscale=2)

    where = f"domain {problem.domain.name} = {problem.domain.expression}" if problem.domain else "the space box"
    lines = [f"{problem.name} — {where} — sampled points (seed {seed}, epoch {epoch}), outward normals"]
    if notes:
        lines.append("; ".join(notes))
    fig.suptitle("\n".join(lines), fontsize=10)
    return fig


def _draw_box_and_domain(ax, problem: ir.Problem, lo: np.ndarray, hi: np.ndarray, d: int) -> None:
    if d == 1:
        for value in (lo[0], hi[0]):
            ax.axvline(value, color="0.3", ls="--", lw=1, zorder=0)
        return
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((lo[0], lo[1]), hi[0] - lo[0], hi[1] - lo[1], fill=False, ls="--", lw=1,
                           edgecolor="0.3", zorder=0, label="space box"))
    if problem.domain is None or d != 2:
        return
    pad = 0.02 * (hi - lo)
    gx = np.linspace(lo[0] - pad[0], hi[0] + pad[0], CONTOUR_GRID)
    gy = np.linspace(lo[1] - pad[1], hi[1] + pad[1], CONTOUR_GRID)
    X, Y = np.meshgrid(gx, gy)
    sdf = np.asarray(problem.domain.shape.sdf(np.stack([X.ravel(), Y.ravel()], axis=1)), float).reshape(X.shape)
    ax.contour(X, Y, sdf, levels=[0.0], colors="black", linewidths=1.2, zorder=2)
    ax.plot([], [], color="black", lw=1.2, label=f"boundary of {problem.domain.name}")


def plot_geometry(spec, out_path: str, *, seed: int = 0) -> str:
    """Write the geometry figure of ``spec`` (a .pinn path, a loaded spec or a compiled problem)
    to ``out_path`` as PNG; returns its absolute path."""
    out_path = os.fspath(out_path)
    if os.path.isdir(out_path):
        raise ValueError(f"{out_path} is a directory: give the path of the PNG file to write")
    fig = geometry_figure(spec, seed=seed)
    try:
        return save(fig, out_path)
    except OSError as err:
        raise ValueError(f"cannot write {out_path} ({err.strerror or err})") from None
