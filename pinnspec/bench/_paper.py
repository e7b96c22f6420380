"""The paper's published numbers (gradient-update-alignment.tex), read from the data files
``pinnspec/bench/paper_*``: no torch.

Each table is a CSV file, ``paper_NAME.csv``, one row per entry, its last two columns the table's label and
the line of ``gradient-update-alignment.tex`` the row stands in (:data:`SOURCE_LINES`);
``paper_findings.json`` holds the numbers the paper states in its text.  Keys use pinnspec's names:
problems ``schrodinger, burgers, heat_ms, kovasznay, beltrami, poisson5d``; groupings ``two`` (2-loss),
``three`` (3-loss); optimizers ``sgd, msgd, rmsprop, adam, adamw, sophiag, adahessian, soap``; surgery
methods ``none`` (the paper's "Adam" row: no surgery), ``pcgrad, cagrad, imtlg, amtl, upgrad, config``;
align ``none`` (base) or ``gua`` (+GUA).  Conflict rates are in percent, as printed; an empty cell is None
(not reported).
"""

from __future__ import annotations

import csv
import json
from importlib import resources

PAPER = "gradient-update-alignment.tex"
#: the folder of the data files: this package's
DATA = resources.files(__package__)
#: table label -> {key: the source line of its row}, for every entry of the CSV tables
SOURCE_LINES: dict[str, dict] = {}


def read_table(name: str, keys: int) -> dict:
    """``paper_NAME.csv`` as {key: values}: the first ``keys`` columns are the key (a tuple, or the bare
    value when ``keys`` is 1), the columns up to ``table`` and ``line`` the values (floats; an empty cell
    is None).  Each row's source line goes into :data:`SOURCE_LINES`."""
    table: dict = {}
    with (DATA / f"paper_{name}.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh.read().splitlines()[1:]):
            *cells, label, line = row
            key = tuple(cells[:keys]) if keys > 1 else cells[0]
            table[key] = tuple(None if c == "" else float(c) for c in cells[keys:])
            SOURCE_LINES.setdefault(label, {})[key] = int(line)
    return table


def read_findings() -> dict:
    """``paper_findings.json``: the numbers the paper states in its text, each {"value": ..., "source": ...}."""
    return json.loads((DATA / "paper_findings.json").read_text(encoding="utf-8"))


#: GUM (Q1): ConFIG x optimizer, no alignment.  (problem, grouping, optimizer) -> (R_g, R_a, R_u) in %.
#: Table tab:optimizer_gum (main text; Schroedinger, Burgers, Heat-MS) and
#: Table tab:optimizer_sources_remaining (Appendix E.3, app:additional_optimizer_gum; Kovasznay,
#: Beltrami, Poisson-5D).
GUM: dict[tuple[str, str, str], tuple[float, float, float]] = read_table("gum", 3)

#: Q2 relative L2 error: (problem, grouping, method, align) -> (mean, sample std over five seeds, Imp. %).
#: Imp. = 100 (1 - E_GUA / E_base) is given on the +GUA rows, None on the base rows.
#: Table tab:full_q2_results (= tab:main_results), Appendix E.4.
Q2_L2: dict[tuple[str, str, str, str], tuple[float, float, float | None]] = read_table("q2_l2", 4)

#: Q2 conflict rates (%): (problem, grouping, method, align) -> (R_g, R_a, R_u, R_p), averaged over five
#: seeds; R_p is None on the base rows (no projection).  Table tab:pinn_conflict_rates, Appendix E.4.
Q2_RATES: dict[tuple[str, str, str, str], tuple[float, float, float, float | None]] = read_table("q2_rates", 4)

#: Q3 (same-state, norm-matched comparison, ConFIG + Adam + GUA): (problem, grouping) ->
#: (Pr[W_rel(p) < W_rel(u)], Pr[W_rel(p) < W_rel(q)]) in %, q = (||p|| / ||u||) u.  "All reported samples
#: satisfy p_t != 0"; training states are aggregated within each run, then across five seeds.
#: Table tab:q3_equation_win_rates, Appendix "Same-State Norm-Matched Comparison"
#: (app:same_state_counterfactual_details).
Q3_WIN_RATES: dict[tuple[str, str], tuple[float, float]] = read_table("q3_win_rates", 2)
#: The table's "Overall" row per grouping (the mean of the settings above): grouping -> (p < u, p < q) in %.
Q3_OVERALL: dict[str, tuple[float, float]] = read_table("q3_overall", 1)

FINDINGS = read_findings()
#: Across all 10 PINN settings (the unweighted mean of Q3_WIN_RATES): (p < u, p < q) in %.
#: Section "Q3: Direction Alignment Mechanism" (answer to Q3), lines 622-623.
Q3_ALL_SETTINGS: tuple[float, float] = tuple(FINDINGS["q3_all_settings"]["value"])

#: Q4 (state-alignment ablation, ConFIG + Adam): none, (rho_m, rho_v) = (0, 0), soft, (1, 0), (1, 1).  The
#: paper gives it as a figure only (fig:state_alignment, section "Q4: State Alignment Mechanism", lines
#: 640-670): no per-variant numbers are published.  Its "none" and "soft" variants are the ConFIG rows of
#: tab:full_q2_results (Q2_L2 above: ConFIG + Adam without / with GUA at the rho below).
#: The soft coefficients per PDE: problem -> (rho_m, rho_v), chosen on validation and shared across groupings
#: and surgery methods.  Table tab:state_alignment_rho, Appendix "Optimizer-State Alignment"
#: (app:optimizer_state_alignment).
STATE_ALIGNMENT_RHO: dict[str, tuple[float, float]] = read_table("state_alignment_rho", 1)

#: Q6 (task-cardinality scaling on CelebA): the settings and findings the paper's text and Table
#: tab:celeba_training_settings state (its per-m F1, time and memory are in a figure only,
#: fig:celeba_task_scaling), each {"value": ..., "source": "paper line(s) ..."}; lists are tuples, the
#: memory overhead is {m: %}.
Q6: dict[str, dict] = {
    key: {**entry, "value": tuple(entry["value"]) if isinstance(entry["value"], list) else
          {int(m): pct for m, pct in entry["value"].items()} if isinstance(entry["value"], dict) else entry["value"]}
    for key, entry in FINDINGS["q6"].items()}

PROBLEMS = ("schrodinger", "burgers", "heat_ms", "kovasznay", "beltrami", "poisson5d")
GROUPINGS = ("two", "three")
OPTIMIZERS = ("sgd", "msgd", "rmsprop", "adam", "adamw", "sophiag", "adahessian", "soap")
METHODS = ("none", "pcgrad", "cagrad", "imtlg", "amtl", "upgrad", "config")
#: how the paper names them
LABELS = {"sgd": "SGD", "msgd": "M-SGD", "rmsprop": "RMSProp", "adam": "Adam", "adamw": "AdamW", "sophiag": "SophiaG",
          "adahessian": "AdaHessian", "soap": "SOAP", "none": "Adam", "pcgrad": "PCGrad", "cagrad": "CAGrad",
          "imtlg": "IMTL-G", "amtl": "A-MTL", "upgrad": "UPGrad", "config": "ConFIG",
          "schrodinger": "Schrödinger", "burgers": "Burgers", "heat_ms": "Heat-MS", "kovasznay": "Kovasznay",
          "beltrami": "Beltrami", "poisson5d": "Poisson-5D", "two": "2-loss", "three": "3-loss"}


def setting_label(problem: str, grouping: str) -> str:
    """``Burgers, 3-loss``: a (problem, grouping) setting as the paper names it."""
    return f"{LABELS.get(problem, problem)}, {LABELS.get(grouping, grouping)}"


#: The optimizer statement gum runs for a bare name: the paper's default learning rate for every optimizer
#: ("100-epoch warmup, then cosine decay from 1e-3 to 1e-4", Table tab:global_training_settings, line 1706;
#: the spec's warmup_cosine schedule supplies the warmup and the 1e-4 floor) with each optimizer's own
#: remaining defaults (betas, eps, Hessian interval: the registry's, which are the official ones).  The
#: registry defaults of SophiaG (1e-4), AdaHessian (0.15) and SOAP (3e-3) are their authors' learning rates,
#: not the paper's.
PAPER_LR = 1e-3


def paper_optimizer(name: str) -> str:
    """``adam`` -> ``adam(lr = 0.001)``; a call with arguments is kept as given."""
    return name if "(" in name else f"{name}(lr = {PAPER_LR!r})"


def gum(problem: str, grouping: str, optimizer: str) -> tuple[float, float, float] | None:
    """The paper's (R_g, R_a, R_u) in % for ConFIG + ``optimizer``, or None when not reported."""
    return GUM.get((problem, grouping, optimizer))


def q2_l2(problem: str, grouping: str, method: str, align: str) -> tuple[float, float, float | None] | None:
    """The paper's (mean, std, Imp. %) relative L2 error, or None when not reported."""
    return Q2_L2.get((problem, grouping, method, align))


def q2_rates(problem: str, grouping: str, method: str, align: str):
    """The paper's (R_g, R_a, R_u, R_p) in %, or None when not reported."""
    return Q2_RATES.get((problem, grouping, method, align))


def q3_win_rates(problem: str, grouping: str) -> tuple[float, float] | None:
    """The paper's (p < u, p < q) win rates in % for one setting, or None when not reported."""
    return Q3_WIN_RATES.get((problem, grouping))
