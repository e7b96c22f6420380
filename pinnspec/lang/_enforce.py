"""Checks and lowering of ``enforce CONDITION, ...``: conditions that hold by construction.

* A Dirichlet condition on faces of the space box (``boundary walls on x = 0, x = 1: u = g``) and an initial
  condition (``initial ic: u = g0``) become an output transform of their field,

      u = A + D * N,        N the network's output for u,

  with D = prod_k D_k a product of normalised distances (for a coordinate with both faces enforced
  D_k = 4 (c - a)(b - c) / (b - a)^2, with one face D_k = (c - a)/(b - a) or (b - c)/(b - a); the initial time is
  the face t = t0), which vanishes on every enforced face, and A the transfinite (Boolean-sum, Coons)
  interpolant of the face data (Gordon 1971; for PINNs Sukumar & Srivastava 2022, CMAME 389, 114333):

      A_0 = 0,   A_k = A_{k-1} + P_k[g] - P_k[A_{k-1}],    P_k[h] = sum_faces h|_(c_k = face) * L_face(c_k)

  (L the linear blend between two faces, 1 for a single face).  A_K equals the data on every enforced face
  where the data of faces that meet agree at their common edge (corner compatibility); `pinnspec verify` and
  the trainer check that it reproduces the data to 1e-10.
* A periodic condition (``periodic pbc on x: u, u_x``) becomes an embedding: the network sees x only
  through cos and sin of 2 pi (x - lo) / (hi - lo) (`pinnspec.models.PeriodicEmbedding`), so every field and
  every derivative is periodic in x.  Its components may not read x itself (nor a coefficient table).

The enforced conditions stay conditions (their residuals, identically zero up to rounding, are still logged)
and leave every task of every grouping.
"""

from __future__ import annotations

import numpy as np
import sympy

from .. import ir
from . import _ast as A


class EnforceLowering:
    """Lowers the ``enforce`` statements of one spec; reports into the lowering's diagnostics."""

    def __init__(self, lowering):
        self.lowering = lowering
        self.diag = lowering.diag

    def run(self, statements) -> tuple[tuple[ir.HardConstraint, ...], tuple[ir.PeriodicEmbedding, ...]]:
        low = self.lowering
        #: field -> coordinate -> side -> (data expression, condition)
        faces: dict[str, dict[str, dict[str, tuple[sympy.Expr, str]]]] = {}
        embeddings: dict[str, ir.PeriodicEmbedding] = {}
        seen: set[str] = set()
        if [[n.name for n in st.names] for st in statements] == [["none"]]:  # `enforce none`: nothing
            return (), ()
        for st in statements:
            for ident in st.names:
                name = ident.name
                if name == "none":
                    self.diag.error(ident.span, "'enforce none' enforces nothing: it stands alone")
                    continue
                if not low._is_condition(ident, "enforce") or name not in low.conditions:
                    continue
                if name in seen:
                    self.diag.error(ident.span, f"'{name}' is enforced twice")
                    continue
                seen.add(name)
                condition = low.conditions[name]
                region = condition.region
                if isinstance(region, ir.PeriodicPairs):
                    embedding = self._periodic(ident, condition, region)
                    if embedding is not None:
                        if region.coordinate in embeddings:
                            self.diag.error(ident.span, f"the coordinate '{region.coordinate}' is already embedded "
                                            f"periodically (by '{embeddings[region.coordinate].condition}')")
                        else:
                            embeddings[region.coordinate] = embedding
                elif isinstance(region, (ir.InitialSlice, ir.FaceRegion)):
                    self._dirichlet(ident, condition, faces)
                else:
                    self.diag.error(ident.span, self._unsupported(condition))
        constraints = []
        for field, by_coordinate in faces.items():
            constraint = self._constraint(field, by_coordinate)
            if self._reproduces(constraint, by_coordinate, statements[0].span) and all(
                    self._periodic_transform(constraint, e, statements[0].span) for e in embeddings.values()):
                constraints.append(constraint)
        return tuple(constraints), tuple(embeddings.values())

    def _periodic_transform(self, h: ir.HardConstraint, embedding: ir.PeriodicEmbedding, span) -> bool:
        """With a periodic embedding in c, the field A + D * N is periodic only where A and D are: their values
        and c-derivatives up to the periodic condition's order must agree at the two ends (64 points)."""
        low = self.lowering
        condition = low.conditions[embedding.condition]
        order = max((sum(n for _, n in d.variable_count) for r in condition.residuals
                     for d in r.atoms(sympy.Derivative)), default=0)
        coordinates = low.coordinates
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
        coordinate = self.lowering.coord_symbols[region.coordinate]
        fields = set(self.lowering.field_exprs.values())
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
        return ir.PeriodicEmbedding(region.coordinate, region.lo, region.hi, condition.name)

    # ------------------------------------------------------------------ Dirichlet and initial
    def _dirichlet(self, ident: A.Ident, condition: ir.Condition, faces) -> None:
        low = self.lowering
        if condition.face_residuals is not None:
            self.diag.error(ident.span, f"'{condition.name}' cannot be enforced: it reads a normal derivative; "
                            "enforce fixes values (u = g), not fluxes")
            return
        region = condition.region
        if isinstance(region, ir.InitialSlice):
            places = [(region.time, "lo", region.value)]
        else:
            places = [(f.coordinate, f.side, f.value) for f in region.faces]
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
                by_side[side] = (value.subs(low.coord_symbols[coordinate], at), condition.name)

    def _field_and_data(self, expr: sympy.Expr) -> tuple[str, sympy.Expr] | None:
        """(field, data) when ``expr`` is ``field - data`` (or ``data - field``) with data free of fields."""
        low = self.lowering
        if expr.atoms(sympy.Derivative):
            return None
        applied = [f for f, e in low.field_exprs.items() if expr.has(e)]
        if len(applied) != 1:
            return None
        field = applied[0]
        u = low.field_exprs[field]
        for sign in (1, -1):
            data = sympy.expand(u - sign * expr)
            if not data.has(u) and not any(data.has(e) for e in low.field_exprs.values()):
                return field, data
        return None

    def _constraint(self, field: str, by_coordinate) -> ir.HardConstraint:
        """The transform of ``field`` from its enforced faces, coordinates in spec order."""
        low = self.lowering
        extension: sympy.Expr = sympy.Integer(0)
        distance: sympy.Expr = sympy.Integer(1)
        conditions: list[str] = []
        for coordinate in low.coordinates:
            sides = by_coordinate.get(coordinate.name)
            if not sides:
                continue
            c = coordinate.symbol
            a, b = sympy.Float(coordinate.lo), sympy.Float(coordinate.hi)
            blend = {"lo": (b - c) / (b - a), "hi": (c - a) / (b - a)} if len(sides) == 2 else {s: 1 for s in sides}
            at = {"lo": a, "hi": b}

            def project(h, sides=sides, c=c, blend=blend, at=at):
                return sum((h.subs(c, at[side]) * blend[side] for side in sides), sympy.Integer(0))

            data = sum((value * blend[side] for side, (value, _) in sides.items()), sympy.Integer(0))
            extension = extension + data - project(extension)
            if len(sides) == 2:
                distance = distance * 4 * (c - a) * (b - c) / (b - a) ** 2
            else:
                distance = distance * ((c - a) if "lo" in sides else (b - c)) / (b - a)
            conditions.extend(name for _, name in sides.values() if name not in conditions)
        order = [c.name for c in low.conditions.values()]
        return ir.HardConstraint(field, extension, distance, tuple(sorted(conditions, key=order.index)))

    def _reproduces(self, h: ir.HardConstraint, by_coordinate, span) -> bool:
        """Whether the extension equals the data on every enforced face (checked at 64 points of each face,
        float64, to 1e-9 relative): faces whose data disagree where they meet make it miss."""
        low = self.lowering
        coordinates = low.coordinates
        symbols = [c.symbol for c in coordinates]
        rng = np.random.default_rng(0)
        for coordinate, sides in by_coordinate.items():
            k = next(i for i, c in enumerate(coordinates) if c.name == coordinate)
            for side, (data, name) in sides.items():
                at = coordinates[k].lo if side == "lo" else coordinates[k].hi
                points = np.column_stack([rng.uniform(c.lo, c.hi, 64) for c in coordinates])  # [64, d]
                points[:, k] = at
                extension = _values(h.extension, symbols, points)
                expected = _values(data, symbols, points)
                gap = np.abs(extension - expected)
                if not np.all(gap <= 1e-9 * (1 + np.abs(expected).max())):
                    worst = int(np.argmax(gap))
                    where = ", ".join(f"{c.name} = {v:.6g}" for c, v in zip(coordinates, points[worst]))
                    others = [n for n in h.conditions if n != name]
                    self.diag.error(span, f"enforce: {h.field} cannot satisfy '{name}' and "
                                    f"{', '.join(repr(o) for o in others) or 'itself'} at once: at {where} the "
                                    f"transform gives {extension[worst]:.6g} where '{name}' asks {expected[worst]:.6g} "
                                    "(their data disagree where the faces meet); keep one of them as a loss")
                    return False
        return True

    @staticmethod
    def _unsupported(condition: ir.Condition) -> str:
        if condition.kind in ("equation", "data"):
            return (f"'{condition.name}' cannot be enforced: enforce takes Dirichlet boundary conditions on faces "
                    f"of the box, initial conditions and periodic conditions; it is {condition.kind} condition"
                    .replace("it is equation", "it is an equation").replace("it is data", "it is a data"))
        return (f"'{condition.name}' cannot be enforced: on a domain's boundary the distance function is not exact, "
                "and enforce builds exact ones only (faces of the space box, the initial time, periodic pairs); "
                "keep it as a loss")


def _values(expr: sympy.Expr, symbols, points: np.ndarray) -> np.ndarray:
    """``expr`` of the coordinates at ``points`` [n, d] -> [n] float64."""
    function = sympy.lambdify(symbols, expr, modules="numpy")
    return np.broadcast_to(np.asarray(function(*points.T), dtype=np.float64), (len(points),))
