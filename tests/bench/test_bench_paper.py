"""The paper's published numbers (pinnspec.bench._paper) against the LaTeX source.

The source is the excerpt ``tests/data/paper_tables.tex``: the paper's table environments copied verbatim,
each under a comment naming the lines of ``gradient-update-alignment.tex`` it holds, so that these tests need
only what the repository holds and never skip.  Every table is read whole and must equal its dict; every
entry's cited source line (the ``table`` and ``line`` columns of ``pinnspec/bench/paper_*.csv``) must be the row it
stands in.
"""

import re
from pathlib import Path

import pytest

from pinnspec.bench import _paper

EXCERPT = Path(__file__).resolve().parents[1] / "data" / "paper_tables.tex"
SOURCE_LINES = re.compile(r"^% ---- gradient-update-alignment\.tex, lines (\d+)-(\d+):")
GROUPING = {"2": "two", "3": "three"}


def _latex(label: str) -> str:
    return label.replace("ö", '\\"o')


PROBLEM_OF = {_latex(_paper.LABELS[p]): p for p in _paper.PROBLEMS}


def test_tables_are_complete():
    assert len(_paper.GUM) == 8 * 10  # 8 optimizers x 10 (problem, grouping) settings
    assert {k[2] for k in _paper.GUM} == set(_paper.OPTIMIZERS)
    for key in [(m, a) for m in _paper.METHODS for a in ("none", "gua")]:
        assert sum(k[2:] == key for k in _paper.Q2_L2) == 10
        assert sum(k[2:] == key for k in _paper.Q2_RATES) == 10
    assert all(v[1] == 0.0 for v in _paper.GUM.values())  # ConFIG leaves no conflict before the optimizer
    assert all(v[3] == 0.0 for k, v in _paper.Q2_RATES.items() if k[3] == "gua")  # GUA: R_p = 0 everywhere
    assert all(v[3] is None for k, v in _paper.Q2_RATES.items() if k[3] == "none")
    assert all(v[2] is None for k, v in _paper.Q2_L2.items() if k[3] == "none")


def test_improvement_matches_the_means():
    for (problem, grouping, method, align), (mean, _, imp) in _paper.Q2_L2.items():
        if align == "gua":
            base = _paper.Q2_L2[(problem, grouping, method, "none")][0]
            assert 100 * (1 - mean / base) == pytest.approx(imp, abs=1.5), (problem, grouping, method)


def test_gum_main_table_is_the_q2_config_row():
    # ConFIG + Adam with no alignment is the same experiment in Table 1 and the Q2 conflict table
    for (problem, grouping, optimizer), rates in _paper.GUM.items():
        if optimizer == "adam" and (problem, grouping, "config", "none") in _paper.Q2_RATES:
            assert _paper.Q2_RATES[(problem, grouping, "config", "none")][:3] == rates


# -- the source -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def source() -> dict[int, str]:
    """The excerpt as {line number in gradient-update-alignment.tex: text}."""
    numbered: dict[int, str] = {}
    start = end = None
    for line in EXCERPT.read_text(encoding="utf-8").splitlines():
        header = SOURCE_LINES.match(line)
        if header:
            start, end = int(header[1]), int(header[2])
            continue
        if start is not None and start <= end:
            numbered[start] = line
            start += 1
    return numbered


@pytest.fixture(scope="module")
def tex(source) -> list[str]:
    return list(source.values())


def test_the_excerpt_holds_whole_table_environments(source):
    text = EXCERPT.read_text(encoding="utf-8").splitlines()
    blocks = [SOURCE_LINES.match(line) for line in text if SOURCE_LINES.match(line)]
    assert len(blocks) == 6 and len(source) == sum(int(b[2]) - int(b[1]) + 1 for b in blocks)
    for b in blocks:  # each block is one table environment, first line to last
        assert source[int(b[1])].startswith("\\begin{table") and source[int(b[2])].startswith("\\end{table")


def _table(source: dict[int, str], label: str) -> list[tuple[int, str]]:
    """(source line, text) of the table environment holding ``\\label{label}``."""
    at = next(n for n, line in source.items() if f"\\label{{{label}}}" in line)
    begin = max(n for n, line in source.items() if n <= at and line.startswith("\\begin{table"))
    end = min(n for n, line in source.items() if n >= at and line.startswith("\\end{table"))
    return [(n, source[n]) for n in range(begin, end + 1)]


def _parse_results(source, label: str, rows: dict[str, str], cell_values, aligned: bool) -> dict:
    """{(problem, grouping, row key[, align]): (values, source line)} of a table whose column blocks are
    (problem, grouping) settings under problem and grouping header lines, and whose rows are named by
    ``rows`` (LaTeX name -> key); with ``aligned``, a ``\\textbf{+GUA}`` row is the previous row's method
    with align ``gua``, the others ``none``."""
    found: dict = {}
    problems: list[str] = []
    settings: list[tuple[str, str]] = []
    previous_was_header = False
    method = None
    for n, line in _table(source, label):
        named = [PROBLEM_OF[m] for m in re.findall(r"\\textbf\{([^{}]+)\}", line) if m in PROBLEM_OF]
        if named:
            problems = (problems if previous_was_header else []) + named
            previous_was_header = True
            continue
        previous_was_header = False
        if line.lstrip().startswith("&") and re.search(r"(?<![\w-])[23]-loss", line):
            settings, index = [], -1
            for token in re.findall(r"(?<![\w-])([23])-loss", line):
                index += token == "2"  # every problem has a 2-loss setting, listed first
                settings.append((problems[index], GROUPING[token]))
            continue
        body = re.sub(r"^\s*\\rowcolor\{[^}]*\}\s*", "", line)
        name = body.split("&")[0].strip()
        if "&" not in body or (name not in rows and name != "\\textbf{+GUA}"):
            continue
        if name in rows:
            method, align = rows[name], "none"
        else:
            align = "gua"
        cells = [c.strip() for c in body.rstrip().removesuffix("\\\\").split("&")[1:]]
        cells = [c for c in cells if c]  # the empty spacer columns
        width, rest = divmod(len(cells), len(settings))
        assert rest == 0, (label, n)
        for i, setting in enumerate(settings):
            key = setting + (method, align) if aligned else setting + (method,)
            found[key] = (cell_values(cells[i * width: (i + 1) * width]), n)
    return found


def _gum_cells(cells):
    return tuple(float(c) for c in cells)


def _rate_cells(cells):
    return tuple(None if c == "--" else float(c) for c in cells)


def _l2_cells(cells):
    mean, std = re.search(r"\\qtwoentry\{([^}]*)\}\{([^}]*)\}", cells[0]).groups()
    imp = re.search(r"\\imprsingle\{([^}]*)\}", cells[1])[1]
    return float(mean), float(std), None if imp == "--" else float(imp)


OPTIMIZER_ROWS = {_paper.LABELS[o]: o for o in _paper.OPTIMIZERS}
METHOD_ROWS = {_paper.LABELS[m]: m for m in _paper.METHODS}


@pytest.fixture(scope="module")
def tables(source) -> dict[str, dict]:
    """label -> {the _paper key: (values, source line)}, every table the module transcribes."""
    parsed = {
        "tab:optimizer_gum": _parse_results(source, "tab:optimizer_gum", OPTIMIZER_ROWS, _gum_cells, False),
        "tab:optimizer_sources_remaining":
            _parse_results(source, "tab:optimizer_sources_remaining", OPTIMIZER_ROWS, _gum_cells, False),
        "tab:full_q2_results": _parse_results(source, "tab:full_q2_results", METHOD_ROWS, _l2_cells, True),
        "tab:pinn_conflict_rates": _parse_results(source, "tab:pinn_conflict_rates", METHOD_ROWS, _rate_cells, True),
    }
    rho = {}
    for n, line in _table(source, "tab:state_alignment_rho"):
        cells = [c.strip() for c in line.rstrip().removesuffix("\\\\").split("&")]
        if cells[0] in PROBLEM_OF:
            rho[PROBLEM_OF[cells[0]]] = (tuple(float(c) for c in cells[1:]), n)
    parsed["tab:state_alignment_rho"] = rho
    q3 = {}
    for n, line in _table(source, "tab:q3_equation_win_rates"):
        cells = [c.strip() for c in line.rstrip().removesuffix("\\\\").split("&")]
        if cells[0] in PROBLEM_OF or cells[0] == "Overall":
            for grouping, pair in (("two", cells[1:3]), ("three", cells[3:5])):
                if pair != ["--", "--"]:
                    key = grouping if cells[0] == "Overall" else (PROBLEM_OF[cells[0]], grouping)
                    q3[key] = (tuple(float(c) for c in pair), n)
    parsed["tab:q3_equation_win_rates"] = q3
    return parsed


def _values(table: dict) -> dict:
    return {key: values for key, (values, _) in table.items()}


def test_gum_equals_the_two_gum_tables(tables):
    assert _paper.GUM == {**_values(tables["tab:optimizer_gum"]),
                          **_values(tables["tab:optimizer_sources_remaining"])}


def test_q2_l2_equals_the_full_q2_table(tables):
    assert _paper.Q2_L2 == _values(tables["tab:full_q2_results"])


def test_q2_rates_equal_the_conflict_rate_table(tables):
    assert _paper.Q2_RATES == _values(tables["tab:pinn_conflict_rates"])


def test_q3_and_rho_equal_their_tables(tables):
    q3 = _values(tables["tab:q3_equation_win_rates"])
    assert _paper.Q3_WIN_RATES == {k: v for k, v in q3.items() if isinstance(k, tuple)}
    assert _paper.Q3_OVERALL == {k: v for k, v in q3.items() if isinstance(k, str)}
    assert _paper.STATE_ALIGNMENT_RHO == _values(tables["tab:state_alignment_rho"])


def test_every_cited_source_line_is_the_entrys_row(tables):
    checked = 0
    for label, lines in _paper.SOURCE_LINES.items():
        for key, number in lines.items():
            assert tables[label][key][1] == number, (key, label, number)
            checked += 1
    assert checked == sum(len(t) for t in tables.values())


def test_the_data_files_load_as_they_were_transcribed():
    """A few entries, None cells, key and value shapes, as the benches printed them before the data files."""
    assert _paper.GUM[("burgers", "two", "adam")] == (30.5, 0.0, 29.4)
    assert _paper.GUM[("poisson5d", "two", "soap")] == (44.5, 0.0, 30.8)
    assert _paper.Q2_L2[("kovasznay", "two", "none", "none")] == (0.000469, 7.44e-05, None)
    assert _paper.Q2_L2[("burgers", "three", "none", "gua")] == (0.000777, 0.000335, 74.7)
    assert _paper.Q2_RATES[("poisson5d", "two", "config", "gua")] == (44.1, 0.0, 22.3, 0.0)
    assert _paper.Q3_WIN_RATES[("poisson5d", "two")] == (89.94, 85.77) and _paper.Q3_OVERALL["three"] == (94.51, 93.14)
    assert _paper.Q3_ALL_SETTINGS == (95.1, 93.4) and _paper.STATE_ALIGNMENT_RHO["kovasznay"] == (0.7, 0.2)
    for table, key_size, value_size in ((_paper.GUM, 3, 3), (_paper.Q2_L2, 4, 3), (_paper.Q2_RATES, 4, 4),
                                        (_paper.Q3_WIN_RATES, 2, 2)):
        assert all(len(k) == key_size and len(v) == value_size for k, v in table.items())
        assert all(isinstance(x, float) for v in table.values() for x in v if x is not None)
    assert (len(_paper.GUM), len(_paper.Q2_L2), len(_paper.Q2_RATES), len(_paper.Q3_WIN_RATES)) == (80, 140, 140, 10)
    assert list(_paper.GUM)[0] == ("schrodinger", "two", "sgd")  # the rows keep the tables' order
    q6 = _paper.Q6
    assert q6["task_counts"]["value"] == (2, 3, 5, 10, 20, 30, 40) and q6["lr"]["value"] == 3e-4
    assert q6["memory_overhead_pct"]["value"] == {40: 4.2} and q6["seeds"]["value"] == (0, 1, 2)


# -- spot checks, row by row as a reader finds them ------------------------------------------------------

def _row(lines, label, name, nth=0):
    """The cells of the ``nth`` row called ``name`` after ``\\label{label}``."""
    start = next(i for i, line in enumerate(lines) if f"\\label{{{label}}}" in line)
    hits = [line for line in lines[start:] if re.match(rf"\s*(\\rowcolor\{{[^}}]*\}}\s*)?{re.escape(name)}\s*&", line)]
    return [c.strip() for c in re.sub(r"\\rowcolor\{[^}]*\}", "", hits[nth]).rstrip("\\ ").split("&")]


def test_gum_spot_checks(tex):
    cells = _row(tex, "tab:optimizer_gum", "Adam")  # Schroedinger 2, 3; Burgers 2, 3; Heat-MS 2, 3
    assert _paper.GUM[("burgers", "two", "adam")] == tuple(float(c) for c in cells[7:10])
    cells = _row(tex, "tab:optimizer_gum", "SOAP")
    assert _paper.GUM[("heat_ms", "three", "soap")] == tuple(float(c) for c in cells[16:19])
    cells = _row(tex, "tab:optimizer_sources_remaining", "M-SGD")  # Kovasznay 2; Beltrami 2, 3; Poisson 2
    assert _paper.GUM[("beltrami", "three", "msgd")] == tuple(float(c) for c in cells[7:10])


def test_q2_l2_spot_checks(tex):
    def entry(cell):
        m = re.search(r"\\qtwoentry\{([^}]*)\}\{([^}]*)\}", cell)
        return float(m.group(1)), float(m.group(2))

    cells = _row(tex, "tab:full_q2_results", "CAGrad")  # first block: Schroedinger, Burgers, Kovasznay
    assert _paper.Q2_L2[("burgers", "three", "cagrad", "none")][:2] == entry(cells[7])
    cells = _row(tex, "tab:full_q2_results", "\\textbf{+GUA}", nth=13)  # ConFIG +GUA, second block
    assert _paper.Q2_L2[("heat_ms", "three", "config", "gua")][:2] == entry(cells[3])
    assert _paper.Q2_L2[("heat_ms", "three", "config", "gua")][2] == float(re.search(r"\{([\d.]+)\}", cells[4])[1])


def test_q2_rates_spot_checks(tex):
    cells = [c for c in _row(tex, "tab:pinn_conflict_rates", "IMTL-G") if c]  # Schroedinger 2, 3; Burgers 2, 3; Kov.
    assert _paper.Q2_RATES[("schrodinger", "three", "imtlg", "none")][:3] == tuple(float(c) for c in cells[5:8])
    cells = [c for c in _row(tex, "tab:pinn_conflict_rates", "\\textbf{+GUA}", nth=13) if c]  # ConFIG+GUA, 2nd block
    assert _paper.Q2_RATES[("poisson5d", "two", "config", "gua")] == tuple(float(c) for c in cells[17:21])
