"""Malformed specs: each gives a located error with a helpful message.

One row per mistake: the spec text, the line and column of the first error,
and a key phrase of its message.  Every check listed in docs/reference.md
(section 14) appears.
"""

import pytest

import pinnspec
from pinnspec.lang import SpecError, loads

HEAD = """problem p
space x in [-1, 1]
time t in [0, 1]
field u
"""
PDE = "equation pde: u_t + u*u_x - 0.01*u_xx = 0\n"
PLATE = """problem p
space x in [-1, 1], y in [-1, 1]
field u
equation pde: u_xx + u_yy = 0
"""
HOLE = "shape hole = disk(center = (0, 0), radius = 0.5)\n"
DOMAIN = PLATE + HOLE + "domain plate = box - hole\n"  # six lines


def _report(value: str, head: str = DOMAIN) -> str:
    """A spec ending in the line 'report r = VALUE' (VALUE from column 12)."""
    return f"{head}report r = {value}\n"
#: coefficient table files the rows below read, written next to the spec (HEAD's coordinates: x, t)
TABLE_FILES = {
    "k.csv": "x,k\n-1,1\n0,2\n1,3\n",
    "kq.csv": "x,k,q\n-1,1,0\n0,2,0\n1,3,0\n",
    "coords.csv": "x,t\n-1,0\n1,1\n",
    "tk.csv": "T,k\n0,1\n1,2\n",
    "nan.csv": "x,k\n-1,1\n0,nan\n1,3\n",
    "obs.csv": "x,t,u\n0,0,1\n",  # observations for the data rows
}
TABLE = 'let a = table("k.csv")\n'
#: seven lines: heat with an initial condition and walls (compatible data: -sin(pi x) vanishes at x = -1, 1)
HEAT_WALLS = HEAD + PDE + "initial ic: u = -sin(pi*x)\nboundary walls on x = -1, x = 1: u = 0\n"

CASES = [
    # --- fields of some coordinates
    ("field of an unknown coordinate", HEAD.replace("field u", "field u, k(z)") + PDE, 4, 12,
     "'z' is not a coordinate (coordinates: x, t)"),
    ("field coordinate listed twice", HEAD.replace("field u", "field u, k(x, x)") + PDE, 4, 15,
     "the coordinate 'x' is listed twice"),
    ("tuple for a number argument", HEAD + PDE + "model mlp(width = (1, 2))\n", 6, 19,
     "mlp(width = ...) expects a number, got a tuple"),
    ("name in a tuple of scales", HEAD + PDE + "model fourier_mlp(fourier = (1, tanh))\n", 6, 33,
     "fourier_mlp(fourier = ...) expects a number, got 'tanh'"),
    ("fourier scales one per input", HEAD + PDE + "model fourier_mlp(fourier = (1, 2, 3))\n", 6, 29,
     "fourier gives 3 scales, but the network reads 2 inputs (x, t)"),
    ("field with an empty list", HEAD.replace("field u", "field u, k()") + PDE, 4, 12, "unexpected ')'"),
    # --- syntax
    ("missing colon", HEAD + "equation pde u_t = 0\n", 5, 14, "name and ':'"),
    ("missing equals", HEAD + "equation pde: u_t + u\n", 5, 22, "LEFT = RIGHT"),
    ("double equals", HEAD + "equation pde: u_t == 0\n", 5, 20, "single '='"),
    ("dangling operator", HEAD + "equation pde: u_t + = 0\n", 5, 21, "unexpected '='"),
    ("bad character", HEAD + "equation pde: u_t = 0 @\n", 5, 23, "unexpected character '@'"),
    ("unclosed paren", HEAD + "equation pde: u_t = sin(x\n", 5, 24, "'(' is never closed"),
    ("unclosed bracket", "problem p\nspace x in [0, 1\nfield u\n", 2, 12, "'[' is never closed"),
    ("interval without in", HEAD + PDE + "space y [0, 1]\n", 6, 9, "NAME in [A, B]"),
    ("boundary without selector", HEAD + PDE + "boundary bc: u = 0\n", 6, 12, "needs a selector"),
    ("points with equals", HEAD + PDE + "points pde = 100\n", 6, 12, "points NAME COUNT"),
    ("grouping without brackets", HEAD + PDE + "grouping g = pde\n", 6, 14, "bracketed list"),
    ("data without quotes", HEAD + PDE + "data obs from obs.csv: u\n", 6, 15, 'data NAME from "FILE"'),
    ("string in equation", HEAD + 'equation pde: u_t = "a"\n', 5, 21, "quoted string"),
    ("unterminated string", HEAD + PDE + 'data obs from "obs.csv: u\n', 6, 15, "unterminated string"),
    ("keyword as field", HEAD + PDE + "field time\n", 6, 7, "reserved word"),
    ("keyword as let", HEAD + PDE + "let in = 3\n", 6, 5, "reserved word"),
    ("misspelt field keyword", HEAD.replace("field u", "feild u"), 4, 1, "unknown statement 'feild'; did you mean 'field'"),
    ("misspelt equation keyword", HEAD + "equaton pde: u_t = 0\n", 5, 1, "did you mean 'equation'"),
    ("misspelt boundary keyword", HEAD + PDE + "boundry bc on x = 0: u = 0\n", 6, 1, "did you mean 'boundary'"),
    ("misspelt training keyword", HEAD + PDE + "optimzer adam\n", 6, 1, "did you mean 'optimizer'"),
    # --- names
    ("unknown field", HEAD + "equation pde: u_t + w*u_x = 0\n", 5, 21, "unknown field 'w' (fields are: u)"),
    ("unknown name with hint", HEAD + "let nu = 0.1\nequation pde: u_t - nuu*u_xx = 0\n", 6, 21, "did you mean 'nu'"),
    ("duplicate name", HEAD + PDE + "equation pde: u = 0\n", 6, 10, "already declared"),
    ("field and coordinate clash", HEAD + PDE + "field x\n", 6, 7, "already declared (as a coordinate"),
    ("builtin function as name", HEAD + PDE + "let sin = 2\n", 6, 5, "reserved word (built-in function)"),
    ("constant as name", HEAD + PDE + "field pi\n", 6, 7, "reserved word (built-in constant)"),
    ("underscore in a name", HEAD + PDE + "field v_1\n", 6, 7, "cannot contain '_'"),
    ("let used before definition", HEAD + "let a = b + 1\nlet b = 2\n" + PDE, 5, 9, "before its definition"),
    ("unknown function", HEAD + "equation pde: u_t = sinn(x)\n", 5, 21, "did you mean 'sin'"),
    ("another tool's laplacian", HEAD + "equation pde: u_t = -laplacian(u)\n", 5, 22,
     "unknown function 'laplacian'; write lap(u) for the Laplacian of u"),
    ("reference none", HEAD + PDE + "reference none\n", 6, 11,
     "unknown reference 'none'; a spec without a reference solution leaves the 'reference' statement out"),
    ("product without a star", HEAD + "equation pde: u_t = sin(pi x)\n", 5, 28,
     "unexpected 'x': a product needs '*' (write pi*x)"),
    ("unknown function without hint", HEAD + "equation pde: u_t = zzz(u)\n", 5, 21,
     "unknown function 'zzz' (functions are: abs, "),
    ("wrong arity", HEAD + "equation pde: u_t = sin(x, t)\n", 5, 21, "takes 1 argument"),
    # --- derivatives
    ("unknown derivative subscript", HEAD + "equation pde: u_t + u_xz = 0\n", 5, 21, "cannot read 'xz'"),
    ("derivative of unknown field", HEAD + "equation pde: u_t + w_x = 0\n", 5, 21, "unknown field 'w'"),
    ("ambiguous subscript", "problem p\nspace x in [0, 1], xx in [0, 1]\nfield u\nequation pde: u_xx = 0\n",
     4, 15, "ambiguous derivative 'u_xx'"),
    ("d by a non-coordinate", HEAD + "equation pde: d(u, z) = 0\n", 5, 20, "'z' is not a coordinate"),
    ("d without coordinate", HEAD + "equation pde: d(u) = 0\n", 5, 15, "at least one coordinate"),
    ("dn outside boundary", HEAD + "equation pde: dn(u) = 0\n", 5, 15, "only in a 'boundary'"),
    ("lap without space", "problem p\ntime t in [0, 1]\nfield u\nequation pde: lap(u) = 0\n", 4, 15, "no"),
    ("subscript derivative of a let", HEAD + "let f = x^2\nequation pde: u_t = f_x\n", 6, 21, "write d(f, ...)"),
    # --- regions
    ("face not on the box", HEAD + PDE + "boundary bc on x = 2: u = 0\n", 6, 20, "not on the box"),
    ("face on time", HEAD + PDE + "boundary bc on t = 0: u = 0\n", 6, 16, "written with 'initial'"),
    ("uniform test points in a domain with shapes", DOMAIN + "test uniform 100\n", 7, 1,
     "'test uniform' places its grid in the box"),
    ("face on the final time", HEAD + PDE + "boundary bc on t = 1: u = 0\n", 6, 16,
     "for points at another time, declare 't' in 'space'"),
    ("face unknown coordinate", HEAD + PDE + "boundary bc on y = 0: u = 0\n", 6, 16, "unknown coordinate 'y'"),
    ("reversed interval", "problem p\nspace x in [1, 0]\nfield u\nequation pde: u_x = 0\n", 2, 7, "reversed interval"),
    ("empty interval", "problem p\nspace x in [1, 1]\nfield u\nequation pde: u_x = 0\n", 2, 7, "empty interval"),
    ("empty interval beside shapes", "problem p\nspace x in [0, 1], y in [1, 1]\nshape hole = disk(center = (0.5, 0.5), "
     "radius = 0.1)\ndomain plate = box - hole\nfield u\nequation pde: u_x = 0\n", 2, 20, "empty interval"),
    ("initial without time", "problem p\nspace x in [0, 1]\nfield u\nequation pde: u_xx = 0\ninitial ic: u = 0\n",
     5, 1, "needs a time coordinate"),
    ("periodic on time", HEAD + PDE + "periodic pbc on t: u\n", 6, 17, "periodic conditions are on space"),
    ("condition without field", HEAD + "equation pde: x = 0\n", 5, 15, "involves no field"),
    # --- geometry
    ("unknown shape in domain", PLATE + HOLE + "domain dom = box - hol\n", 6, 20, "unknown shape 'hol'; did you mean 'hole'"),
    ("unknown primitive", PLATE + "shape hole = disc(center = (0, 0), radius = 0.5)\n", 5, 14, "did you mean 'disk'"),
    ("misspelt shape argument", PLATE + "shape hole = disk(centre = (0, 0), radius = 0.5)\n", 5, 19,
     "no argument 'centre'; did you mean 'center'"),
    ("missing shape argument", PLATE + "shape hole = disk(center = (0, 0))\n", 5, 14, "needs the argument radius"),
    ("positional shape argument", PLATE + "shape hole = disk((0, 0), 0.5)\n", 5, 19, "given by keyword"),
    ("center of the wrong dimension", PLATE + "shape hole = disk(center = (0, 0, 0), radius = 0.5)\n", 5, 28,
     "needs 2 numbers, one per space coordinate (x, y), got 3"),
    ("negative radius", PLATE + "shape hole = disk(center = (0, 0), radius = -0.5)\n", 5, 45, "must be > 0"),
    ("polygon in 3-D", "problem p\nspace x in [0, 1], y in [0, 1], z in [0, 1]\nfield u\nequation pde: u = 0\n"
     "shape tri = polygon(vertices = ((0, 0), (1, 0), (0, 1)))\n", 5, 13, "polygon() is 2-D"),
    ("self-intersecting polygon", PLATE + "shape bow = polygon(vertices = ((0, 0), (1, 1), (1, 0), (0, 1)))\n", 5, 32,
     "not simple: edge 0 (0, 0) -> (1, 1) and edge 2 (1, 0) -> (0, 1) cross at (0.5, 0.5)"),
    ("shape outside the box", PLATE + "shape hole = disk(center = (0.8, 0), radius = 0.5)\n", 5, 14,
     "reaches outside the space box: its x runs over [0.3, 1.3]"),
    ("empty domain", PLATE + "domain dom = box - box\n", 5, 14, "the domain 'dom' is empty"),
    ("empty intersection", PLATE + HOLE + "shape far = disk(center = (0.8, 0.8), radius = 0.1)\n"
     "domain dom = hole & far\n", 7, 14, "an intersection of shapes that do not overlap"),
    ("unbounded domain", PLATE + "shape cut = halfspace(normal = (1, 0), offset = 0)\ndomain dom = box + cut\n", 6, 14,
     "unbounded: a halfspace must be intersected"),
    ("two domains", PLATE + HOLE + "domain dom = box - hole\ndomain other = box\n", 7, 1, "at most one"),
    ("box as a shape name", PLATE + "shape box = disk(center = (0, 0), radius = 0.5)\n", 5, 7, "built-in shape"),
    ("boundary on a shape not in the domain", PLATE + HOLE + "shape rim = disk(center = (0.5, 0.5), radius = 0.2)\n"
     "domain dom = box - hole\nboundary b on rim: u = 0\n", 8, 15, "the shape 'rim' is not part of the domain 'dom'"),
    ("boundary on a shape inside a hole", PLATE + HOLE + "shape core = disk(center = (0, 0), radius = 0.2)\n"
     "domain dom = box - hole - core\nboundary b on core: u = 0\n", 8, 15, "lies nowhere on the boundary"),
    ("box face cut away", PLATE + HOLE + "domain dom = hole\nboundary b on x = -1: u = 0\n", 7, 15,
     "x = -1 of the space box is not on the boundary of the domain 'dom'"),
    ("boundary part selected twice", PLATE + HOLE + "domain dom = box - hole\nboundary b on box, x = -1: u = 0\n", 7, 20,
     "x = -1 is selected twice: part of it is already selected by box"),
    ("boundary on a field", PLATE + HOLE + "domain dom = box - hole\nboundary b on u: u = 0\n", 7, 15,
     "'u' is a field, not a shape"),
    ("boundary on a misspelt shape", PLATE + HOLE + "domain dom = box - hole\nboundary b on hol: u = 0\n", 7, 15,
     "unknown shape 'hol'; did you mean 'hole'"),
    ("boundary on a shape without domain", PLATE + HOLE + "boundary b on hole: u = 0\n", 6, 15,
     "declares no 'domain'"),
    ("boundary on a coordinate", PLATE + "domain dom = box\nboundary b on x: u = 0\n", 6, 15, "written 'x = VALUE'"),
    ("periodic on a domain", PLATE + "domain dom = box\nperiodic pb on x: u\n", 6, 1, "drop the 'domain'"),
    ("domain with an operator", PLATE + "domain dom = box * hole\n", 5, 18, "+ (union), - (difference), & (intersection)"),
    ("shape without equals", PLATE + "shape hole disk(center = (0, 0), radius = 0.5)\n", 5, 12,
     "shape NAME = PRIMITIVE(...)"),
    # --- arithmetic
    ("division by literal zero", HEAD + "equation pde: u_t = 1/0\n", 5, 23, "division by zero"),
    ("division by folded zero", HEAD + "equation pde: u_t = u/(1-1)\n", 5, 24, "division by zero"),
    ("huge number", HEAD + "equation pde: u_t = 1e999\n", 5, 21, "out of range"),
    ("huge power", HEAD + "equation pde: u_t = 9^9^9\n", 5, 21, "too large"),
    ("undefined log", HEAD + "equation pde: u_t = log(0)\n", 5, 15, "undefined"),
    # --- losses and groupings
    ("loss of unknown condition", HEAD + PDE + "loss N = pde + bc\n", 6, 16, "unknown condition 'bc'"),
    ("loss of a loss", HEAD + PDE + "loss N = pde\nloss M = N\n", 7, 10, "is a loss"),
    ("grouping of unknown", HEAD + PDE + "grouping g = [pde, foo]\n", 6, 20, "unknown loss or condition 'foo'"),
    ("pool twice the same", HEAD + PDE + "grouping g = [pool(pde, pde)]\n", 6, 25, "appears twice"),
    ("zero weight", HEAD + PDE + "loss N = 0*pde\n", 6, 10, "positive"),
    ("pool in expression", HEAD + "equation pde: u_t = pool(u)\n", 5, 21, "belongs in a 'loss'"),
    # --- sampling, reference, tests
    ("zero points", HEAD + PDE + "points pde 0\n", 6, 12, "at least 1"),
    ("fractional points", HEAD + PDE + "points pde 10.5\n", 6, 12, "whole number"),
    ("points for unknown", HEAD + PDE + "points foo 10\n", 6, 8, "unknown condition 'foo'"),
    ("unknown sampler", HEAD + PDE + "sampler lhss\n", 6, 9, "did you mean 'lhs'"),
    ("second sampler", HEAD + PDE + "sampler lhs\nsampler sobol\n", 7, 1, "at most one"),
    ("test grid count", HEAD + PDE + "test grid 10\n", 6, 1, "one count per coordinate"),
    ("exact of non-field", HEAD + PDE + "exact v = x\n", 6, 7, "not a field"),
    ("exact uses a field", HEAD + PDE + "exact u = u + x\n", 6, 11, "cannot appear in the exact solution"),
    ("exact and reference", HEAD + PDE + "exact u = x\nreference cole_hopf_burgers()\n", 7, 1, "not both"),
    ("missing data file", HEAD + PDE + 'data obs from "nofile.csv": u\n', 6, 15, "does not exist"),
    ("unknown data option", HEAD + PDE + 'data obs from "obs.csv": u, nois = 0.1\n', 6, 29, "did you mean 'noise'"),
    ("data noise not positive", HEAD + PDE + 'data obs from "obs.csv": u, noise = 0\n', 6, 37, "must be > 0"),
    ("data noise twice", HEAD + PDE + 'data obs from "obs.csv": u, noise = 0.1, noise = 0.2\n', 6, 42, "given twice"),
    ("stop = discrepancy without noisy data", HEAD + PDE + 'data obs from "obs.csv": u\ntrain stop = discrepancy\n', 7,
     7, "needs a data condition that states its noise"),
    ("stop = balance without noisy data", HEAD + PDE + 'data obs from "obs.csv": u\ntrain stop = balance\n', 7, 7,
     "stop = balance ends the run when the equations' loss falls"),
    ("stop = balance, one task", HEAD + PDE + 'data obs from "obs.csv": u, noise = 0.1\ngrouping one = [pool(pde, obs)]\n'
     "train stop = balance, grouping = one\n", 8, 7, "the grouping 'one' has only tasks with noisy observations"),
    ("stop = balance, no observed task", HEAD + PDE + 'data obs from "obs.csv": u, noise = 0.1\ngrouping one = [pde]\n'
     "train grouping = one\ntrain stop = balance\n", 9, 7, "the grouping 'one' has no tasks with noisy observations"),
    ("unknown reference", HEAD + PDE + "reference colehopf()\n", 6, 11, "unknown reference"),
    # --- coefficient tables
    ("table file missing", HEAD + 'let a = table("no.csv")\n' + PDE, 5, 15, "does not exist"),
    ("table without value column", HEAD + 'let a = table("coords.csv")\n' + PDE, 5, 15, "no value column"),
    ("table with two value columns", HEAD + 'let a = table("kq.csv")\n' + PDE, 5, 15, 'column = "k"'),
    ("table value column unknown", HEAD + 'let a = table("kq.csv", column = "kk")\n' + PDE, 5, 34,
     "no column 'kk'"),
    ("table coordinate column missing", HEAD + 'let a = table("tk.csv")\n' + PDE, 5, 15, "no column 'x'"),
    ("table method unknown", HEAD + 'let a = table("k.csv", method = linaer)\n' + PDE, 5, 33,
     "did you mean 'linear'"),
    ("table argument unknown", HEAD + 'let a = table("k.csv", methd = nearest)\n' + PDE, 5, 24,
     "did you mean 'method'"),
    ("table file not a string", HEAD + "let a = table(k)\n" + PDE, 5, 15, "quoted string"),
    ("table non-finite value", HEAD + 'let a = table("nan.csv")\n' + PDE, 5, 15,
     "nan.csv:3: column 2 ('k'): expected a finite number, found 'nan'"),
    ("table inside an expression", HEAD + 'let a = 2*table("k.csv")\n' + PDE, 5, 11, "whole value of a let"),
    ("table differentiated by d", HEAD + TABLE + "equation pde: u_t = d(a*u_x, x)\n", 6, 21,
     "differentiates the table 'a'"),
    ("table differentiated by subscript", HEAD + TABLE + "equation pde: u_t = a_x*u\n", 6, 21,
     "non-conservative form"),
    ("table differentiated by lap", HEAD + TABLE + "equation pde: u_t = lap(a*u)\n", 6, 21,
     "differentiates the table 'a'"),
    ("table differentiated by dn", HEAD + TABLE + PDE + "boundary bc on x = 1: dn(a*u) = 0\n", 7, 23,
     "differentiates the table 'a'"),
    ("table where a constant is needed", HEAD + TABLE + PDE + "boundary bc on x = a: u = 0\n", 7, 20,
     "must be a constant, but 'a' is a table"),
    ("table in the exact solution", HEAD + TABLE + PDE + "exact u = a*t\n", 7, 11, "cannot use 'a'"),
    # --- training statements
    ("unknown surgery", HEAD + PDE + "surgery pcgrd\n", 6, 9, "did you mean 'pcgrad'"),
    ("unknown optimizer", HEAD + PDE + "optimizer adma(lr = 1e-3)\n", 6, 11, "did you mean 'adam'"),
    ("unknown model", HEAD + PDE + "model mlpp()\n", 6, 7, "did you mean 'mlp'"),
    ("unknown argument", HEAD + PDE + "optimizer adam(lrr = 1e-3)\n", 6, 16, "did you mean 'lr'"),
    ("positional argument", HEAD + PDE + "optimizer adam(1e-3)\n", 6, 16, "by keyword"),
    ("wrong argument type", HEAD + PDE + "align gua(metric = 3)\n", 6, 20, "expects a name"),
    ("unknown activation", HEAD + PDE + "model mlp(activation = tahn)\n", 6, 24, "did you mean 'tanh'"),
    ("unknown amtl reduce", HEAD + PDE + "surgery amtl(reduce = total)\n", 6, 23, "must be one of mean, sum"),
    ("misspelt amtl reduce", HEAD + PDE + "surgery amtl(scale = rmse, reduce = sun)\n", 6, 37, "did you mean 'sum'"),
    ("unknown train key", HEAD + PDE + "train epoch = 10\n", 6, 7, "did you mean 'epochs'"),
    ("unknown weights", HEAD + PDE + "weights gradnrom(every = 10)\n", 6, 9, "unknown weights 'gradnrom'; did you mean 'gradnorm'"),
    ("unknown weights argument", HEAD + PDE + "weights ntk(point = 64)\n", 6, 13, "did you mean 'points'"),
    ("weights every zero", HEAD + PDE + "weights gradnorm(every = 0)\n", 6, 26, "whole number of at least 1"),
    ("weights every fraction", HEAD + PDE + "weights gradnorm(every = 2.5)\n", 6, 26, "whole number of at least 1"),
    ("weights alpha one", HEAD + PDE + "weights gradnorm(alpha = 1)\n", 6, 26, "less than 1"),
    ("weights points zero", HEAD + PDE + "weights ntk(points = 0)\n", 6, 22, "whole number of at least 1"),
    ("weights name argument", HEAD + PDE + "weights ntk(alpha = high)\n", 6, 21, "expects a number"),
    ("weights positional", HEAD + PDE + "weights gradnorm(10)\n", 6, 18, "by keyword"),
    ("weights twice", HEAD + PDE + "weights gradnorm\nweights ntk\n", 7, 1, "weights"),
    ("weights as a name", HEAD + PDE + "let weights = 3\n", 6, 5, "reserved word"),
    ("rba without fixed points", HEAD + PDE + "weights rba\n", 6, 1, "add 'resample never'"),
    ("rba eta zero", HEAD + PDE + "resample never\nweights rba(eta = 0)\n", 7, 19, "above 0"),
    ("rba gamma one", HEAD + PDE + "resample never\nweights rba(gamma = 1)\n", 7, 21, "below 1"),
    # --- enforce
    ("enforce unknown condition", HEAT_WALLS + "enforce wals\n", 8, 9, "did you mean 'walls'"),
    ("enforce an equation", HEAT_WALLS + "enforce pde\n", 8, 9, "it is an equation"),
    ("enforce a flux", HEAT_WALLS + "boundary flux on x = -1: u_x = 0\nenforce flux\n", 9, 9, "form FIELD = DATA"),
    ("enforce twice", HEAT_WALLS + "enforce ic, ic\n", 8, 13, "enforced twice"),
    ("enforce incompatible", HEAT_WALLS.replace("u = -sin(pi*x)", "u = 1") + "enforce ic, walls\n", 8, 1,
     "disagree where the faces meet"),
    ("enforce incompatible names the edge", HEAT_WALLS.replace("u = -sin(pi*x)", "u = 1") + "enforce ic, walls\n",
     8, 1, "t = 0 ('ic') and x = -1 ('walls') meet at x = -1, t = 0 where their data are 1 and 0"),
    ("enforce nothing left", HEAT_WALLS + "grouping g = [pool(ic, walls)]\nenforce ic, walls\n", 8, 1,
     "nothing is left to train"),
    ("enforce periodic reading x", HEAT_WALLS + "periodic pbc on x: x*u\nenforce pbc\n", 9, 9, "reads x itself"),
    ("enforce periodic with a non-periodic extension", HEAT_WALLS.replace("u = -sin(pi*x)", "u = x")
     + "periodic pbc on x: u\nenforce ic, pbc\n", 9, 1, "not periodic"),
    ("enforce none with others", HEAT_WALLS + "enforce none, ic\n", 8, 9, "stands alone"),
    # --- causal
    ("causal unknown condition", HEAD + PDE + "causal pdf\n", 6, 8, "did you mean 'pde'"),
    ("causal not an equation", HEAD + PDE + "initial ic: u = 0\ncausal ic\n", 7, 8, "applies to equations"),
    ("causal twice", HEAD + PDE + "causal pde\ncausal pde(eps = 2)\n", 7, 8, "twice"),
    ("causal chunks zero", HEAD + PDE + "causal pde(chunks = 0)\n", 6, 21, "whole number of at least 1"),
    ("causal eps negative", HEAD + PDE + "causal pde(eps = -1)\n", 6, 18, "at least 0"),
    ("causal unknown argument", HEAD + PDE + "causal pde(chunk = 4)\n", 6, 12, "did you mean 'chunks'"),
    ("causal none with others", HEAD + PDE + "causal none\ncausal pde\n", 6, 8, "turns causal weighting off"),
    ("causal without time", "problem p\nspace x in [0, 1]\nfield u\nequation pde: u_xx = 0\ncausal pde\n", 5, 8,
     "needs a time coordinate"),
    # --- stages
    ("unknown stage", HEAD + PDE + "stage lbgfs epochs = 5\n", 6, 7, "unknown stage 'lbgfs'; did you mean 'lbfgs'"),
    ("stage without epochs", HEAD + PDE + "stage adam dtype = float64\n", 6, 1, "needs its epochs"),
    ("unknown stage setting", HEAD + PDE + "stage adam epochs = 5, dtyp = float64\n", 6, 24, "did you mean 'dtype'"),
    ("stage setting twice", HEAD + PDE + "stage adam epochs = 5, epochs = 6\n", 6, 24, "given twice"),
    ("stage epochs zero", HEAD + PDE + "stage adam epochs = 0\n", 6, 21, "whole number of at least 1"),
    ("stage bad dtype", HEAD + PDE + "stage adam epochs = 5, dtype = float16\n", 6, 32, "one of float32, float64"),
    ("stage and optimizer", HEAD + PDE + "optimizer adam\nstage adam epochs = 5\n", 6, 1, "exclude each other"),
    ("stage and train epochs", HEAD + PDE + "stage adam epochs = 5\ntrain epochs = 5\n", 7, 7, "exclude each other"),
    ("lbfgs history zero", HEAD + PDE + "stage lbfgs(history = 0) epochs = 5\n", 6, 23, "whole number of at least 1"),
    ("lbfgs lr zero", HEAD + PDE + "stage lbfgs(lr = 0) epochs = 5\n", 6, 18, "above 0"),
    ("lbfgs line search", HEAD + PDE + "stage lbfgs(line_search = wolfe) epochs = 5\n", 6, 27, "strong_wolfe, none"),
    ("gua stages differ", HEAD + PDE + "align gua\nstage adam epochs = 5\nstage rmsprop epochs = 5\n", 7, 1,
     "same optimizer"),
    ("unknown grouping in train", HEAD + PDE + "grouping two = [pde]\ntrain grouping = tw\n", 7, 18, "did you mean 'two'"),
    ("trailing comma", "problem p\nspace x in [0, 1],\n  y in [0, 1]\nfield u\n", 2, 19, "only inside brackets"),
    ("bad device", HEAD + PDE + "train device = gpu\n", 6, 16, "one of auto, cpu, cuda"),
    # --- reports
    ("report without integral", _report("3"), 7, 12, "computes nothing"),
    ("report over an unknown shape", _report("integral(hol, u)"), 7, 21, "did you mean 'hole'"),
    ("field outside a report's integral", _report("u*integral(hole, u)"), 7, 12,
     "the field 'u' cannot appear in the report 'r' outside integral"),
    ("report without its time", _report("integral(x = 1, u)", HEAD + PDE), 6, 12, "time coordinate 't'"),
    ("report time outside the interval", _report("integral(x = 1, u, t = 2)", HEAD + PDE), 6, 35,
     "outside the time interval"),
    ("report integral without its part", _report("integral(hole)"), 7, 12, "takes PART, EXPR"),
    ("report integral with an unknown keyword", _report("integral(hole, u, z = 1)"), 7, 30,
     "no coordinate"),
    ("integral in an equation", PLATE + "equation q: integral(x = 1, u) = 0\n", 5, 13, "belongs in a 'report'"),
    ("nested integral", _report("integral(hole, integral(hole, u))"), 7, 27, "not inside another"),
    ("dn in an area integral", _report("integral(plate, dn(u))"), 7, 28, "report's integral over a"),
    ("normal in an equation", PLATE + "equation q: u*normal(x) = 0\n", 5, 15, "normal(c) is the outward unit normal"),
    ("normal of a non-coordinate", _report("integral(hole, normal(z))"), 7, 34, "one space coordinate"),
    ("integral over a shape without a domain", _report("integral(hole, u)", PLATE + HOLE), 6, 21,
     "declares no 'domain'"),
    ("report without equals", PLATE + "report r integral(x = 1, u)\n", 5, 10, "a report is written"),
    # --- structure
    ("no problem statement", "space x in [0, 1]\nfield u\nequation pde: u_xx = 0\n", 1, 1, "start with 'problem"),
    ("empty spec", "", 1, 1, "empty"),
    ("no field", "problem p\nspace x in [0, 1]\nequation pde: x = 0\n", 1, 1, "no field"),
]


def test_table_is_large_enough():
    assert len(CASES) >= 30


@pytest.mark.parametrize("text,line,column,phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_spec(text, line, column, phrase, tmp_path):
    for name, content in TABLE_FILES.items():
        (tmp_path / name).write_text(content)
    with pytest.raises(SpecError) as info:
        loads(text, filename="bad.pinn", base_dir=str(tmp_path))
    err = info.value
    assert phrase in err.message, err.render()
    assert (err.line, err.column) == (line, column), err.render()
    rendered = str(err)
    assert rendered.startswith(f"bad.pinn:{line}:{column}: error: ")
    # the source line and a caret under the reported column
    lines = rendered.splitlines()
    if text.strip():
        assert lines[1] == "  " + text.splitlines()[line - 1]
        assert lines[2].index("^") == column + 1  # two spaces of indent


def test_all_errors_are_collected():
    text = HEAD + "equation pde: u_t + w*u_x = 0\nboundary bc on x = 3: u = 0\nsurgery pcgrd\n"
    with pytest.raises(SpecError) as info:
        loads(text, filename="bad.pinn")
    messages = [d.message for d in info.value.errors]
    assert len(messages) == 3
    assert "unknown field 'w'" in messages[0]
    assert "not on the box" in messages[1]
    assert "pcgrad" in messages[2]
    assert str(info.value).count(": error: ") == 3


def test_warnings_for_unused_condition_and_loss():
    text = HEAD + PDE + "initial ic: u = 0\nloss N = pde\nloss I = ic\ngrouping g = [N]\n"
    spec = loads(text, filename="w.pinn")
    messages = [w.message for w in spec.warnings]
    assert any("condition 'ic' is used by no loss or grouping" in m for m in messages) is False
    assert any("loss 'I' is used by no grouping" in m for m in messages)
    text = HEAD + PDE + "initial ic: u = 0\nloss N = pde\n"
    spec = loads(text, filename="w.pinn")
    assert [w.message for w in spec.warnings] == [
        "the condition 'ic' is used by no loss or grouping; it will not be trained"
    ]


def test_spec_error_is_public():
    assert pinnspec.SpecError is SpecError
