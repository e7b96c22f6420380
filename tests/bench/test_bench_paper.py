"""The paper's published numbers (pinnspec.bench._paper) against the LaTeX source."""

import re
from pathlib import Path

import pytest

from pinnspec.bench import _paper

TEX = Path(__file__).resolve().parents[2].parent / "shared" / "paper" / "gradient-update-alignment.tex"


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


@pytest.fixture(scope="module")
def tex():
    if not TEX.is_file():
        pytest.skip(f"the paper's source is not here ({TEX})")
    return TEX.read_text(encoding="utf-8").splitlines()


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
