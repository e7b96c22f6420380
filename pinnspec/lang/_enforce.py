"""Checks and lowering of ``enforce CONDITION, ...``: conditions that hold by construction.

* A Dirichlet condition on faces of the space box (``boundary walls on x = 0, x = 1: u = g``) or on parts of a
  domain's boundary (``boundary rims on hole1, hole2: u = 0``) and an initial condition (``initial ic: u = g0``)
  become an output transform of their field,

      u = A + D * N,        N the network's output for u,

  with D = prod_k D_k a product of normalised distances (for a coordinate with both faces enforced
  D_k = 4 (c - a)(b - c) / (b - a)^2, with one face D_k = (c - a)/(b - a) or (b - c)/(b - a); the initial time is
  the face t = t0), which vanishes on every enforced face, and A the transfinite (Boolean-sum, Coons)
  interpolant of the face data (Gordon 1971; for PINNs Sukumar & Srivastava 2022, CMAME 389, 114333):

      A_0 = 0,   A_k = A_{k-1} + P_k[g] - P_k[A_{k-1}],    P_k[h] = sum_faces h|_(c_k = face) * L_face(c_k)

  (L the linear blend between two faces, 1 for a single face).  A_K equals the data on every enforced face
  where the data of faces that meet agree at their common edge (corner compatibility).  On a domain, each
  enforced part other than a face of the space box that the domain leaves whole (a face it cuts short is a part
  like any other, so that its data need not agree with another face's where they meet outside the domain) has
  a smooth function d_p that vanishes on its face and is positive inside the domain (a plane's normalised
  distance; (r^2 - |x - c|^2) / (2 r) for a ball, sign by side; where the plane crosses the domain, at a
  re-entrant corner, the product of the trimmed distances `segment_distance` to the pieces of the face on the
  boundary, each end where the line leaves the domain moved out of it, `_open_ends`; flat faces in 2-D only),
  and the groups (the box's whole faces, each part; with a trimmed part,
  each condition's parts) blend by transfinite interpolation (Sukumar & Srivastava 2022, eq. 38 with unit
  exponents): A = sum_k A_k W_k / sum_k W_k, W_k the product of the other groups' distances (each lifted by
  `CORNER_LIFT` where a part is trimmed or a cut face of the box), D the product of all (with a trimmed part and
  one condition in space: A its data, D the product of all its distances).  `check` verifies at 64 points of
  each enforced region that A equals the data and D vanishes (1e-9 relative; parts that touch fail it), and that
  each d_p is positive at 256 points inside the domain; `pinnspec verify` runs the enforced conditions through
  the constrained output.
* A periodic condition (``periodic pbc on x: u, u_x``) becomes an embedding: the network sees x only
  through cos and sin of 2 pi (x - lo) / (hi - lo) (`pinnspec.models.PeriodicEmbedding`), so every field and
  every derivative is periodic in x.  Its components may not read x itself (nor a coefficient table).

The enforced conditions stay conditions (their residuals, identically zero up to rounding, are still logged)
and leave every task of every grouping.
"""

from __future__ import annotations

import numpy as np
import sympy

from .. import geometry, ir
from ..sampling import sample_region
from . import _ast as A
from ._context import Context


#: what a distance is lifted by in the blend of groups that meet at a corner (`EnforceLowering._constraint`)
CORNER_LIFT = sympy.Float(1e-12)
#: points along a face's line beyond a piece's end that must lie outside the domain for the end to move out
EXTENSION_PROBES = 512


class EnforceLowering:
    """Lowers the ``enforce`` statements of one spec; reports into the context's diagnostics."""

    def __init__(self, ctx: Context, domain: ir.Domain | None):
        self.ctx = ctx
        self.diag = ctx.diag
        self.domain = domain

    def run(self, statements) -> tuple[tuple[ir.HardConstraint, ...], tuple[ir.PeriodicCoordinate, ...]]:
        ctx = self.ctx
        #: field -> coordinate -> side -> (data expression, condition); field -> domain part -> (data, condition)
        faces: dict[str, dict[str, dict[str, tuple[sympy.Expr, str]]]] = {}
        parts: dict[str, dict[int, tuple[sympy.Expr, str]]] = {}
        embeddings: dict[str, ir.PeriodicCoordinate] = {}
        seen: set[str] = set()
        if [[n.name for n in st.names] for st in statements] == [["none"]]:  # `enforce none`: nothing
            return (), ()
        for st in statements:
            for ident in st.names:
                name = ident.name
                if name == "none":
                    self.diag.error(ident.span, "'enforce none' enforces nothing: it stands alone")
                    continue
                if not ctx.is_condition(ident, "enforce") or name not in ctx.conditions:
                    continue
                if name in seen:
                    self.diag.error(ident.span, f"'{name}' is enforced twice")
                    continue
                seen.add(name)
                condition = ctx.conditions[name]
                region = condition.region
                if isinstance(region, ir.PeriodicPairs):
                    embedding = self._periodic(ident, condition, region)
                    if embedding is not None:
                        if region.coordinate in embeddings:
                            self.diag.error(ident.span, f"the coordinate '{region.coordinate}' is already embedded "
                                            f"periodically (by '{embeddings[region.coordinate].condition}')")
                        else:
                            embeddings[region.coordinate] = embedding
                elif isinstance(region, (ir.InitialSlice, ir.FaceRegion, ir.DomainInitialSlice, ir.DomainBoundary)):
                    self._dirichlet(ident, condition, faces, parts)
                else:
                    self.diag.error(ident.span, self._unsupported(condition))
        if self.diag.has_errors:
            return (), tuple(embeddings.values())
        constraints = []
        span = statements[0].span if statements else None
        for field in dict.fromkeys(list(faces) + list(parts)):
            constraint = self._constraint(field, faces.get(field, {}), parts.get(field, {}), span)
            if constraint is None:
                continue
            probes = self._probes(field, constraint)
            if self._reproduces(constraint, probes, span, faces.get(field, {})) and all(
                    self._periodic_transform(constraint, e, span) for e in embeddings.values()):
                constraints.append(constraint)
        return tuple(constraints), tuple(embeddings.values())

    def _probes(self, field: str, h: ir.HardConstraint) -> dict[str, tuple[sympy.Expr, np.ndarray]]:
        """condition -> (the field's data there, 64 points of its region [64, d])."""
        ctx = self.ctx
        rng = np.random.default_rng(0)
        out = {}
        for name in h.conditions:
            condition = ctx.conditions[name]
            value = next(v for f, v in map(self._field_and_data, condition.residuals) if f == field)
            points = sample_region(condition.region, ctx.coordinates, 64, "uniform", rng).x  # [64, d]
            out[name] = (value, points)
        return out

    def _periodic_transform(self, h: ir.HardConstraint, embedding: ir.PeriodicCoordinate, span) -> bool:
        """With a periodic embedding in c, the field A + D * N is periodic only where A and D are: their values
        and c-derivatives up to the periodic condition's order must agree at the two ends (64 points)."""
        ctx = self.ctx
        condition = ctx.conditions[embedding.condition]
        order = max((sum(n for _, n in d.variable_count) for r in condition.residuals
                     for d in r.atoms(sympy.Derivative)), default=0)
        coordinates = ctx.coordinates
        symbols = [c.symbol for c in coordinates]
        k = next(i for i, c in enumerate(coordinates) if c.name == embedding.coordinate)
        c = symbols[k]
        points = np.column_stack([np.random.default_rng(1).uniform(co.lo, co.hi, 64) for co in coordinates])
        lo, hi = points.copy(), points.copy()
        lo[:, k], hi[:, k] = embedding.lo, embedding.hi
        for part, expr in (("extension", h.extension), ("distance", h.distance)):
            for n in range(order + 1):
                derivative = sympy.diff(expr, c, n) if n else expr
                a, b = _values(derivative, symbols, lo), _values(derivative, symbols, hi)
                if not np.allclose(a, b, rtol=1e-9, atol=1e-9 * (1 + np.abs(a).max())):
                    what = f"{c}-derivative of order {n}" if n else "value"
                    self.diag.error(span, f"enforce: '{embedding.condition}' (periodic in {c}) and "
                                    f"{', '.join(repr(n_) for n_ in h.conditions)} cannot all be enforced: the "
                                    f"{part} of {h.field}'s transform is not periodic (its {what} differs at "
                                    f"{c} = {embedding.lo:g} and {c} = {embedding.hi:g} by {np.abs(a - b).max():.3g}); "
                                    "keep one of them as a loss")
                    return False
        return True

    # ------------------------------------------------------------------ periodic
    def _periodic(self, ident: A.Ident, condition: ir.Condition, region: ir.PeriodicPairs):
        coordinate = self.ctx.coord_symbols[region.coordinate]
        fields = set(self.ctx.field_exprs.values())
        for expr in condition.residuals:
            # what it reads besides the fields and their derivatives (those are functions of the network)
            reads = expr.xreplace({a: sympy.Dummy() for a in expr.atoms(sympy.Derivative)}).xreplace(
                {f: sympy.Dummy() for f in fields}).free_symbols
            if coordinate in reads:
                self.diag.error(ident.span, f"'{condition.name}' cannot be enforced: its component {expr} reads "
                                f"{region.coordinate} itself, which an embedding does not make periodic")
                return None
            tables = [s for s in reads if s.name.endswith("^table")]
            if tables:
                self.diag.error(ident.span, f"'{condition.name}' cannot be enforced: its component {expr} reads a "
                                "coefficient table, whose values at the two ends may differ")
                return None
        return ir.PeriodicCoordinate(region.coordinate, region.lo, region.hi, condition.name)

    # ------------------------------------------------------------------ Dirichlet and initial
    def _dirichlet(self, ident: A.Ident, condition: ir.Condition, faces, parts) -> None:
        """Records each field's data on the condition's faces (``faces``: field -> coordinate -> side ->
        (data, condition)) or, on a domain's boundary, parts (``parts``: field -> part index -> ...)."""
        ctx = self.ctx
        if condition.face_residuals is not None:
            self.diag.error(ident.span, f"'{condition.name}' cannot be enforced: it reads a normal derivative; "
                            "enforce fixes values (u = g), not fluxes")
            return
        region = condition.region
        places: list[tuple[str, str, float]] = []  # (coordinate, side, value): faces of the space box, the initial time
        indices: list[int] = []  # parts of a domain's boundary
        if isinstance(region, (ir.InitialSlice, ir.DomainInitialSlice)):
            places = [(region.time, "lo", region.value)]
        elif isinstance(region, ir.FaceRegion):
            places = [(f.coordinate, f.side, f.value) for f in region.faces]
        else:  # ir.DomainBoundary
            space = [c for c in ctx.coordinates if not c.is_time]
            box = self._space_box()
            for index in region.parts:
                part = geometry.boundary_parts(region.domain.shape)[index]
                if _is_box_face(part, box) and _whole_face(region.domain.shape, part):
                    axis, side = divmod(part.face, 2)  # a face of the space box, uncut: exact, with its corners
                    coordinate = space[axis]
                    places.append((coordinate.name, ("lo", "hi")[side], (coordinate.lo, coordinate.hi)[side]))
                else:
                    indices.append(index)
        data = []
        for expr in condition.residuals:
            split = self._field_and_data(expr)
            if split is None:
                self.diag.error(ident.span, f"'{condition.name}' cannot be enforced: its component {expr} = 0 is "
                                "not of the form FIELD = DATA (a field's value, with data that reads no field)")
                return
            data.append(split)
        fields = [f for f, _ in data]
        if len(set(fields)) < len(fields):
            self.diag.error(ident.span, f"'{condition.name}' cannot be enforced: it sets a field twice")
            return
        for field, value in data:
            for coordinate, side, at in places:
                by_side = faces.setdefault(field, {}).setdefault(coordinate, {})
                if side in by_side:
                    self.diag.error(ident.span, f"'{condition.name}' cannot be enforced: {field} at {coordinate} = "
                                    f"{at:g} is already enforced by '{by_side[side][1]}'")
                    return
                by_side[side] = (value.subs(ctx.coord_symbols[coordinate], at), condition.name)
            for index in indices:
                by_part = parts.setdefault(field, {})
                if index in by_part:
                    self.diag.error(ident.span, f"'{condition.name}' cannot be enforced: {field} on that part of "
                                    f"the boundary is already enforced by '{by_part[index][1]}'")
                    return
                by_part[index] = (value, condition.name)

    def _field_and_data(self, expr: sympy.Expr) -> tuple[str, sympy.Expr] | None:
        """(field, data) when ``expr`` is ``field - data`` (or ``data - field``) with data free of fields."""
        ctx = self.ctx
        if expr.atoms(sympy.Derivative):
            return None
        applied = [f for f, e in ctx.field_exprs.items() if expr.has(e)]
        if len(applied) != 1:
            return None
        field = applied[0]
        u = ctx.field_exprs[field]
        for sign in (1, -1):
            data = sympy.expand(u - sign * expr)
            if not data.has(u) and not any(data.has(e) for e in ctx.field_exprs.values()):
                return field, data
        return None

    def _constraint(self, field: str, by_coordinate, by_part, span) -> ir.HardConstraint | None:
        """The transform of ``field``: the space box's enforced faces by the Boolean sum (coordinates in
        spec order), blended with each enforced part of a domain's boundary (its data, its distance
        function) by transfinite interpolation, then the initial time by one more Boolean-sum step.  Where a
        part needs a trimmed distance, the parts of one condition form one group (their data is one
        expression; their distance the product of theirs), and where one condition enforces the field in
        space, A is its data and D the product of all the distances: both keep the transform's expression
        small, and the latter has no 0/0 where two groups meet."""
        ctx = self.ctx
        space = [c for c in ctx.coordinates if not c.is_time and c.name in by_coordinate]
        distances = {}  # part index -> (distance, trimmed)
        for index, (_, name) in by_part.items():
            distances[index] = self._part_distance(index, name, span)
            if distances[index] is None:
                return None
        extension, distance = _boolean_sum(space, by_coordinate)
        groups = [(extension, distance)] if space else []
        if any(trimmed for _, trimmed in distances.values()):  # one group per condition: its parts share data
            by_condition: dict[str, list[int]] = {}
            for index, (_, name) in by_part.items():
                by_condition.setdefault(name, []).append(index)
            in_space = {name for c in space for _, name in by_coordinate[c.name].values()} | set(by_condition)
            parts = [(by_part[indices[0]][0], sympy.Mul(*(distances[i][0] for i in indices)))
                     for indices in by_condition.values()]
            if len(in_space) == 1:  # one condition: its data, and the product of all its distances
                groups = [(parts[0][0], distance * parts[0][1])]
            else:
                groups += parts
        else:
            groups += [(value, distances[index][0]) for index, (value, _) in by_part.items()]
        if len(groups) == 1:
            extension, distance = groups[0]
        elif groups:  # A = sum_k A_k W_k / sum_k W_k, W_k the product of the other groups' distances
            # where a trimmed part or a cut face of the box meets another group at a corner of the domain every
            # W_k vanishes there: each distance in W_k is lifted by `CORNER_LIFT`, so that A is finite (the data's
            # mean) at the corner and moves by about CORNER_LIFT / d elsewhere
            every_part, box = (geometry.boundary_parts(self.domain.shape), self._space_box()) if by_part else ([], None)
            cut_face = any(_is_box_face(every_part[index], box) for index in by_part)
            lift = CORNER_LIFT if cut_face or any(trimmed for _, trimmed in distances.values()) else 0
            others = [sympy.Mul(*(d + lift for j, (_, d) in enumerate(groups) if j != k)) for k in range(len(groups))]
            extension = sum((a * w for (a, _), w in zip(groups, others)), sympy.Integer(0)) / sum(others)
            distance = sympy.Mul(*(d for _, d in groups))
        else:
            extension, distance = sympy.Integer(0), sympy.Integer(1)
        time = [c for c in ctx.coordinates if c.is_time and c.name in by_coordinate]
        extension, distance = _boolean_sum(time, by_coordinate, extension, distance)
        names = {name for sides in by_coordinate.values() for _, name in sides.values()}
        names |= {name for _, name in by_part.values()}
        order = [c.name for c in ctx.conditions.values()]
        return ir.HardConstraint(field, extension, distance, tuple(sorted(names, key=order.index)))

    def _space_box(self) -> geometry.Box:
        space = [c for c in self.ctx.coordinates if not c.is_time]
        return geometry.Box(tuple(c.lo for c in space), tuple(c.hi for c in space))

    def _part_distance(self, index: int, condition: str, span) -> tuple[sympy.Expr, bool] | None:
        """(d, trimmed): a smooth function d that vanishes on the part's face and is positive inside the
        domain: the normalised distance to a plane (a box face, a half-space, a polygon edge) or
        (r^2 - |x - c|^2) / (2 r) for a ball, its sign chosen and checked at 256 points inside the domain;
        where that changes sign there (a plane through a re-entrant corner), the product of the trimmed
        distances (`segment_distance`) to the pieces of the face that lie on the boundary (flat faces in 2-D,
        `geometry.boundary_segments`), ``trimmed`` True."""
        ctx = self.ctx
        domain = self.domain
        part = geometry.boundary_parts(domain.shape)[index]
        space = [c for c in ctx.coordinates if not c.is_time]
        x = [c.symbol for c in space]
        shape = part.primitive
        if isinstance(shape, geometry.Ball):
            r = sympy.Float(shape.radius)
            d = (r ** 2 - sum((xi - sympy.Float(ci)) ** 2 for xi, ci in zip(x, shape.center))) / (2 * r)
        elif isinstance(shape, geometry.Box):
            axis, side = divmod(part.face, 2)
            width = sympy.Float(shape.hi[axis] - shape.lo[axis])
            d = (x[axis] - sympy.Float(shape.lo[axis]) if side == 0 else sympy.Float(shape.hi[axis]) - x[axis]) / width
        elif isinstance(shape, geometry.HalfSpace):
            d = sympy.Float(shape.offset) - sum(sympy.Float(n) * xi for n, xi in zip(shape.normal, x))
        elif isinstance(shape, geometry.Polygon):
            (ax, ay), (bx, by) = shape.vertices[part.face], shape.vertices[(part.face + 1) % len(shape.vertices)]
            length = float(np.hypot(bx - ax, by - ay))
            d = ((sympy.Float(bx - ax) * (x[1] - ay) - sympy.Float(by - ay) * (x[0] - ax)) / length)
        else:
            self.diag.error(span, f"enforce '{condition}': no distance function for {part.label}")
            return None
        inside = geometry.sample_interior(domain.shape, 256, np.random.default_rng(2))  # [256, d_space]
        values = _values(d, x, inside)
        if np.all(values < 0):
            d, values = -d, -values
        if np.all(values > 0):
            return d, False
        pieces = geometry.boundary_segments(domain.shape, part)
        if pieces:  # the plane crosses the domain: the face's pieces on the boundary, trimmed where the line enters it
            d = sympy.Mul(*(segment_distance(x, *_open_ends(domain.shape, start, end)) for start, end in pieces))
            if np.all(_values(d, x, inside) > 0):
                return d, True
        self.diag.error(span, f"enforce '{condition}': the distance function of {part.label} changes sign inside "
                        "the domain (the face's plane or sphere crosses it), so the transform would pin the field "
                        "inside too, and no trimmed distance exists for it (those are built for flat faces in 2-D: "
                        "a box's sides, a polygon's edges, a half-plane's line); keep the condition as a loss")
        return None

    def _reproduces(self, h: ir.HardConstraint, probes, span, by_coordinate) -> bool:
        """Whether the extension equals the data and the distance vanishes at the probes of each enforced
        condition (64 points of its region, float64, to 1e-9 relative): faces whose data disagree where they
        meet (``by_coordinate``: the field's enforced faces, `_corner_mismatch` names where), or enforced parts
        that touch, make it miss."""
        ctx = self.ctx
        symbols = [c.symbol for c in ctx.coordinates]
        for name, (data, points) in probes.items():
            extension = _values(h.extension, symbols, points)
            distance = _values(h.distance, symbols, points)
            expected = _values(data, symbols, points)
            gap = np.abs(extension - expected) + np.abs(distance) * (1 + np.abs(expected).max())
            if not np.all(gap <= 1e-9 * (1 + np.abs(expected).max())):
                worst = int(np.nanargmax(np.where(np.isfinite(gap), gap, np.inf)))
                where = ", ".join(f"{c.name} = {v:.6g}" for c, v in zip(ctx.coordinates, points[worst]))
                others = [n for n in h.conditions if n != name]
                corner = self._corner_mismatch(by_coordinate)
                why = ("(their data disagree where the faces meet, or the parts touch)" if corner is None else
                       f"(their data disagree where the faces meet: {corner})")
                self.diag.error(span, f"enforce: {h.field} cannot satisfy '{name}' and "
                                f"{', '.join(repr(o) for o in others) or 'itself'} at once: at {where} the "
                                f"transform gives {extension[worst]:.6g} where '{name}' asks {expected[worst]:.6g} "
                                f"{why}; keep one of them as a loss")
                return False
        return True

    def _corner_mismatch(self, by_coordinate) -> str | None:
        """Where two enforced faces of the box (the initial time among them; ``by_coordinate``: coordinate -> side
        -> (data there, condition)) meet with data that disagree, in words (at the worst of 16 points of their
        common edge), or None where they agree.  Those are faces the domain does not cut short (`_whole_face`), so
        their common edge lies on the domain's boundary."""
        ctx = self.ctx
        symbols = [c.symbol for c in ctx.coordinates]
        axis = {c.name: i for i, c in enumerate(ctx.coordinates)}
        faces = [(axis[coordinate], side, data, condition) for coordinate, sides in by_coordinate.items()
                 for side, (data, condition) in sides.items()]
        rng = np.random.default_rng(4)
        for k, (first, first_side, first_data, first_name) in enumerate(faces):
            for second, second_side, second_data, second_name in faces[k + 1:]:
                if second == first:
                    continue
                edge = np.column_stack([rng.uniform(c.lo, c.hi, 16) for c in ctx.coordinates])  # [16, d]
                for a, side in ((first, first_side), (second, second_side)):
                    c = ctx.coordinates[a]
                    edge[:, a] = c.lo if side == "lo" else c.hi
                values, others = _values(first_data, symbols, edge), _values(second_data, symbols, edge)  # [16]
                gap = np.abs(values - others)
                if gap.max() <= 1e-9 * (1 + max(np.abs(values).max(), np.abs(others).max())):
                    continue
                w = int(gap.argmax())
                where = ", ".join(f"{c.name} = {v:.6g}" for c, v in zip(ctx.coordinates, edge[w]))
                names = [ctx.coordinates[first].name, ctx.coordinates[second].name]
                return (f"{names[0]} = {edge[w, first]:g} ('{first_name}') and {names[1]} = {edge[w, second]:g} "
                        f"('{second_name}') meet at {where} where their data are {values[w]:.6g} and {others[w]:.6g}")
        return None

    @staticmethod
    def _unsupported(condition: ir.Condition) -> str:
        article = "an" if condition.kind[0] in "aeiou" else "a"
        return (f"'{condition.name}' cannot be enforced: enforce takes Dirichlet boundary conditions, initial "
                f"conditions and periodic conditions; it is {article} {condition.kind} condition")

def segment_distance(x, start, end) -> sympy.Expr:
    """The trimmed distance to the segment from ``start`` to ``end`` (``[2]`` each) in the plane of the symbols
    ``x`` (Sukumar & Srivastava 2022, CMAME 389, 114333, section 5.1.2):

        phi = sqrt(f^2 + ((sqrt(t^2 + f^4) - t) / 2)^2),

    f = ((b - a) x (x - a)) / L the signed distance to the segment's line, t = ((L/2)^2 - |x - c|^2) / L the trim
    function (c the midpoint, L the length), positive on the segment, negative on the line beyond its ends.  phi
    is 0 on the segment and positive everywhere else (on the line beyond an end, at s past it, s + s^2/L); it
    equals |f| (1 + f^6 / (32 t^2)) + ... near the segment's inside, so its normal derivative there is 1.  It is smooth
    (SymPy differentiates it to any order) wherever phi > 0 and t^2 + f^4 > 0: everywhere but the segment
    itself (where only one side's derivatives exist) and its two ends.  Near an end, at distance r, it is a
    cone: phi ~ r beyond the end, ~ r |sin| of the angle to the segment beside it; its gradient stays bounded
    but has no limit there, its second derivatives grow like 1/r, and at the end point itself the derivative
    expressions are 0/0 (NaN, or after rounding an arbitrary number).  The segment and its ends lie on the
    domain's boundary, never inside it."""
    (ax, ay), (bx, by) = (float(v) for v in start), (float(v) for v in end)
    length = float(np.hypot(bx - ax, by - ay))
    f = (sympy.Float(bx - ax) * (x[1] - ay) - sympy.Float(by - ay) * (x[0] - ax)) / length
    t = (sympy.Float(length ** 2 / 4) - (x[0] - (ax + bx) / 2) ** 2 - (x[1] - (ay + by) / 2) ** 2) / length
    return sympy.sqrt(f ** 2 + ((sympy.sqrt(t ** 2 + f ** 4) - t) / 2) ** 2)


def _open_ends(shape: geometry.Shape, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The segment from ``start`` to ``end`` (``[2]`` each, a piece of a face on the boundary) with each end that
    the face's line leaves the shape at moved out along the line by the diagonal of the shape's bounding box, where
    the line stays outside the shape that far (`EXTENSION_PROBES` points): the trimmed distance's cone, which has
    second derivatives like 1/r (`segment_distance`), then lies outside the domain.  An end where the line runs on
    into the domain (a re-entrant corner) stays: the distance must be trimmed there."""
    lo, hi = shape.bounds()
    reach = float(np.linalg.norm(hi - lo))
    ends = [np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)]
    along = (ends[1] - ends[0]) / np.linalg.norm(ends[1] - ends[0])  # [2]
    moved = []
    for point, outward in ((ends[0], -along), (ends[1], along)):
        steps = np.linspace(1e-6, 1.0, EXTENSION_PROBES) * reach  # [P]
        beyond = point + steps[:, None] * outward  # [P, 2]
        moved.append(point + reach * outward if np.all(shape.sdf(beyond) > 0) else point)
    return moved[0], moved[1]


def _is_box_face(part: geometry.BoundaryPart, box: geometry.Box) -> bool:
    """Whether ``part`` is a face of the space ``box`` (not of a shape subtracted from it)."""
    return isinstance(part.primitive, geometry.Box) and part.primitive == box and not part.flipped


def _whole_face(shape: geometry.Shape, part: geometry.BoundaryPart) -> bool:
    """Whether the part's whole face lies on the shape's boundary (`geometry.part_measures`: the face's measure,
    not a fraction of it): a face of the box that no other operand cuts short."""
    whole = part.face_object().measure(shape.bounds())
    return bool(np.isclose(geometry.part_measures(shape)[part.index], whole, rtol=1e-12, atol=0))


def _values(expr: sympy.Expr, symbols, points: np.ndarray) -> np.ndarray:
    """``expr`` of the coordinates at ``points`` [n, d] -> [n] float64."""
    function = sympy.lambdify(symbols, expr, modules="numpy")
    return np.broadcast_to(np.asarray(function(*points.T), dtype=np.float64), (len(points),))


def _boolean_sum(coordinates, by_coordinate, extension: sympy.Expr = sympy.Integer(0),
                 distance: sympy.Expr = sympy.Integer(1)) -> tuple[sympy.Expr, sympy.Expr]:
    """One Boolean-sum step per coordinate of ``coordinates`` with enforced faces (``by_coordinate``:
    coordinate -> side -> (data, condition)), from ``extension`` and ``distance``:
    A <- A + P_c[g] - P_c[A], D <- D * D_c."""
    for coordinate in coordinates:
        sides = by_coordinate[coordinate.name]
        c = coordinate.symbol
        a, b = sympy.Float(coordinate.lo), sympy.Float(coordinate.hi)
        blend = {"lo": (b - c) / (b - a), "hi": (c - a) / (b - a)} if len(sides) == 2 else {s: 1 for s in sides}
        at = {"lo": a, "hi": b}
        projected = sum((extension.subs(c, at[side]) * blend[side] for side in sides), sympy.Integer(0))
        data = sum((value * blend[side] for side, (value, _) in sides.items()), sympy.Integer(0))
        extension = extension + data - projected
        if len(sides) == 2:
            distance = distance * 4 * (c - a) * (b - c) / (b - a) ** 2
        else:
            distance = distance * ((c - a) if "lo" in sides else (b - c)) / (b - a)
    return extension, distance
