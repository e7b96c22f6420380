"""bench pinnacle: the case specs (PINNacle's protocol, verify), the method names, the metrics against loops,
and one tiny end-to-end run that restarts."""

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import pinnspec
from pinnspec import bench
from pinnspec.bench import _pinnacle
from pinnspec.compiler._verify import verify
from pinnspec.lang import load

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "benchmarks" / "pinnacle" / "cases"
#: cases with a closed-form solution (the others are scored against PINNacle's COMSOL files)
EXACT = ("heat2dms", "wave1dc", "pnd", "pinv", "hinv")
#: cases whose region is a `domain` (shapes cut from the box)
DOMAIN = ("poisson2dc", "poisson2dcg", "ns2dcg")


@pytest.mark.parametrize("method, surgery, align", [
    ("adam", "none", "none"), ("config", "config", "none"), ("config+gua", "config", "gua"),
    ("pcgrad", "pcgrad", "none"), ("adam+gua", "none", "gua"), ("cagrad(c = 0.4)+gua", "cagrad(c = 0.4)", "gua"),
])
def test_method_names(method, surgery, align):
    assert _pinnacle.method_settings(method) == {"surgery": surgery, "align": align}


@pytest.mark.parametrize("method, expected", [
    ("adam+enforce", {"surgery": "none", "align": "none"}),
    ("config+gua+enforce", {"surgery": "config", "align": "gua"}),
    ("config+enforce+gua", {"surgery": "config", "align": "gua"}),
])
def test_enforce_methods(method, expected):
    assert _pinnacle.method_settings(method) == {**expected, "enforce": _pinnacle.EVERY_ENFORCEABLE}


@pytest.mark.parametrize("case, names", [("poisson2dc", ["outer", "rimne", "rimnw", "rimse", "rimsw"]),
                                         ("burgers1d", ["ic", "walls"]),
                                         ("heat2dms", ["ic", "sides"])])
def test_the_enforceable_conditions_of_a_case(case, names):
    assert _pinnacle.enforceable(str(CASES / f"{case}.pinn")) == names


# PINNacle's DeepXDE evaluates each PDE on every training point (interior, boundary and initial: its
# data/pde.py), so its PDE loss is a mean over these many points; Wave1d-C's top edge (512 more in PINNacle)
# has no points in a spec, whose time coordinate takes no conditions at its final time.
@pytest.mark.parametrize("case, per_pde", [
    ("burgers1d", [12288]), ("poisson2dc", [10240]), ("ns2dc", [10240] * 3), ("heat2dms", [49152]),
    ("wave1dc", [9728]), ("pnd", [40960]), ("pinv", [10240]), ("pinvpinnacle", [10240]), ("hinv", [49152]),
    ("poisson2dcg", [10240]), ("ns2dcg", [10240] * 3),
])
def test_each_pde_loss_pools_the_points_pinnacle_evaluates_it_on(case, per_pde):
    spec = pinnspec.load(str(CASES / f"{case}.pinn"))
    counts = dict(spec.ir.sampling.points)
    pools = [term for task in spec.ir.grouping("default").tasks for _, term in task.terms
             if hasattr(term, "conditions")]
    pdes = [pool for pool in pools if spec.ir.condition(pool.conditions[0]).kind == "equation"]
    assert [sum(counts[c] for c in pool.conditions) for pool in pdes] == per_pde
    # the pooled conditions on the boundary and at t = 0 share the points of the conditions there (HInv has
    # no initial condition: its PDE at t = 0 has points of its own)
    sets = [s.conditions for s in pinnspec.compile(spec).point_plan.sets]
    for pool in pdes:
        for condition in pool.conditions[1:]:
            alone = (case, condition) == ("hinv", "heatic")
            assert any(condition in members and len(members) > 1 - alone for members in sets), condition


def test_method_without_surgery_is_an_error():
    with pytest.raises(_pinnacle.BenchError, match="names no surgery method"):
        _pinnacle.method_settings("+gua")


@pytest.mark.parametrize("method, message", [
    ("adam+guaa", "'adam+guaa': unknown suffix '+guaa'; did you mean '+gua'?"),
    ("config+enforced+gua", "'config+enforced+gua': unknown suffix '+enforced'; did you mean '+enforce'?"),
    ("config+lbfgs", "'config+lbfgs': unknown suffix '+lbfgs' (a method is a surgery method, then +gua"),
    ("recipee", "unknown method 'recipee'; did you mean 'recipe'? (a method is best, recipe, adam or a surgery"),
    ("bset+gua", "unknown method 'bset+gua'; did you mean 'best'?"),
])
def test_an_unknown_method_suffix_is_named(method, message):
    with pytest.raises(_pinnacle.BenchError, match=re.escape(message)):
        _pinnacle.method_settings(method)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error --device cuda gives where torch sees no "
                                                        "CUDA device; this machine has one")
def test_device_cuda_without_cuda_is_one_error_and_failed_runs_are_not_called_finished(tmp_path, capsys,
                                                                                        monkeypatch):
    argv = ["--cases", "pnd", "--methods", "adam", "--epochs", "2", "--device", "cuda", "--out", str(tmp_path)]
    assert bench.main("pinnacle", argv) == 1
    assert "--device cuda: torch sees no CUDA device on this machine (use --device cpu or auto)" in \
        capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    monkeypatch.setattr(_pinnacle, "_cuda_available", lambda: True)  # the worker's torch still sees none
    assert bench.main("pinnacle", argv + ["--jobs", "1", "--threads", "1"]) == 1
    printed = capsys.readouterr()
    assert "FAILED: ValueError: device cuda was asked for, but torch sees no CUDA device" in printed.err
    assert "This call trained no runs: 1 run(s) failed (the errors are printed above the table)." in printed.out


def test_together_needs_a_compiled_step(tmp_path, capsys):
    argv = ["--cases", "pnd", "--epochs", "2", "--together", "--out", str(tmp_path)]
    assert bench.main("pinnacle", argv) == 1
    assert "--together trains a case's methods as one compiled graph: give --compile on" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_extra_settings():
    fixed = {"epochs": "5", "device": "cpu", "validate": "test every 5"}
    assert _pinnacle.extra_settings(["model=fourier_mlp(features = 8)", "weights = gradnorm"], fixed) == {
        "model": "fourier_mlp(features = 8)", "weights": "gradnorm"}
    for bad, phrase in (("model", "expected KEY=VALUE"), ("epochs=3", "the bench sets it"),
                        ("surgery=pcgrad", "the bench sets it")):
        with pytest.raises(_pinnacle.BenchError, match=phrase):
            _pinnacle.extra_settings([bad], fixed)


def test_case_names():
    assert _pinnacle.case_names("all") == ["burgers1d", "poisson2dc", "ns2dc", "heat2dms", "wave1dc", "pnd", "pinv",
                                           "hinv"]
    assert _pinnacle.case_names("pnd,pinvpinnacle") == ["pnd", "pinvpinnacle"]
    with pytest.raises(_pinnacle.BenchError, match="did you mean 'burgers1d'"):
        _pinnacle.case_names("burgers1")


def test_held_out_cases_are_named_only_and_have_no_best_configuration():
    """The cases held out of tuning: not in `--cases all`, no best/CASE.set."""
    assert _pinnacle.case_names(",".join(_pinnacle.HELD_OUT)) == list(_pinnacle.HELD_OUT)
    for name in _pinnacle.HELD_OUT:
        assert name not in _pinnacle.case_names("all")
        assert not (ROOT / "benchmarks" / "pinnacle" / "best" / f"{name}.set").exists()


def test_the_held_out_references_hold_the_specs_boundary_values():
    """PINNacle's COMSOL files for the held-out cases take the Dirichlet values their specs state on the nodes
    that lie on those boundaries (which ties each file to its case: the right file, columns in the right order)."""
    from pinnspec.sampling._comsol import read_comsol

    ref = ROOT / "benchmarks" / "pinnacle" / "ref"
    pb = read_comsol(ref / "poisson_boltzmann2d.dat")
    x, y, u = (np.asarray(pb.columns[n]) for n in ("x", "y", "u"))
    square = np.isclose(np.abs(x), 1) | np.isclose(np.abs(y), 1)
    assert pb.rows == 3236 and square.sum() > 100
    np.testing.assert_allclose(u[square], 0.2, atol=1e-12)
    for cx, cy, r in ((0.5, 0.5, 0.2), (0.4, -0.4, 0.4), (-0.2, -0.7, 0.1), (-0.6, 0.5, 0.3)):
        distance = np.hypot(x - cx, y - cy)  # [n]
        rim = np.abs(distance - r) < 1e-6
        assert rim.sum() > 20 and not (distance < r - 1e-6).any()
        np.testing.assert_allclose(u[rim], 1, atol=1e-12)
    ns = read_comsol(ref / "ns_0_obstacle.dat")
    x, y, u, v = (np.asarray(ns.columns[n]) for n in ("x", "y", "u", "v"))
    assert ns.rows == 12910 and not ((x < 2 - 1e-9) & (y > 1 + 1e-9)).any()  # nothing in the cut block
    inlet = x == 0
    assert inlet.sum() > 20 and y[inlet].max() <= 1
    np.testing.assert_allclose(u[inlet], 4 * y[inlet] * (1 - y[inlet]), atol=1e-12)
    walls = (y == 0) | ((y == 2) & (x >= 2)) | ((y == 1) & (x <= 2)) | ((x == 2) & (y >= 1))
    assert walls.sum() > 500
    np.testing.assert_allclose(np.abs(np.r_[u[walls], v[walls], v[inlet]]), 0, atol=1e-12)


def test_published_numbers_are_consistent():
    for case in _pinnacle.CASES.values():
        if case.name in _pinnacle.HELD_OUT:  # not confirmed from the paper: unset, printed as '-'
            assert case.vanilla is case.best is case.best_method is None, case.name
            continue
        assert 0 < case.best <= case.vanilla, case.name


def test_metrics_against_loops():
    rng = np.random.default_rng(0)
    reference, prediction = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))  # [n, k]
    sq = sum((p - r) ** 2 for pr, rr in zip(prediction, reference) for p, r in zip(pr, rr))
    ref_sq = sum(r ** 2 for rr in reference for r in rr)
    ab = sum(abs(p - r) for pr, rr in zip(prediction, reference) for p, r in zip(pr, rr))
    ref_ab = sum(abs(r) for rr in reference for r in rr)
    found = _pinnacle.metrics(prediction, reference)
    assert found["l2re"] == pytest.approx(math.sqrt(sq / ref_sq), rel=1e-12)
    assert found["l1re"] == pytest.approx(ab / ref_ab, rel=1e-12)
    assert found["mse"] == pytest.approx(sq / reference.size, rel=1e-12)


@pytest.mark.parametrize("name", list(_pinnacle.CASES))
def test_every_case_without_a_domain_trains_all_seeds_on_the_same_points(name):
    """What lets `--together` put a case's seeds in one group: Hammersley points drawn once do not depend on the
    seed; a case with a `domain` is sampled with the seed's generator."""
    from pinnspec.sampling import PointPlan

    assert PointPlan(load(CASES / f"{name}.pinn").ir).seeds_share_points([0, 1, 2]) is (name not in DOMAIN)


@pytest.mark.parametrize("name", list(_pinnacle.CASES))
def test_case_specs_follow_pinnacles_protocol(name):
    spec = load(CASES / f"{name}.pinn")
    problem, training = spec.ir, spec.ir.training
    assert problem.name == name
    assert str(training.model) == "mlp(width = 100, depth = 5, activation = tanh, init = xavier)"
    assert str(training.optimizer).startswith("adam(lr = 0.001, beta1 = 0.9, beta2 = 0.999")
    assert str(training.schedule) == "constant()"
    assert str(training.surgery) == "none()" and str(training.align) == "none()"
    assert training.setting("epochs") == 20000
    assert problem.sampling.sampler.name == "hammersley" and problem.sampling.resample_every is None


@pytest.mark.parametrize("name", EXACT)
def test_exact_cases_verify(name):
    checks = verify(pinnspec.compile(CASES / f"{name}.pinn"))  # noisy observations: noise = 0.1 stated
    assert all(c.passed and c.judged for c in checks), [(c.name, c.relative, c.note) for c in checks]


def test_verify_flags_pinnacles_source_term_for_pinv():
    checks = {c.name: c for c in verify(pinnspec.compile(CASES / "pinvpinnacle.pinn"))}
    assert not checks["poisson"].passed and checks["coefficient"].passed


def test_end_to_end_and_restart(tmp_path, capsys):
    # burgers1d with fewer points, so that two epochs take a second
    text = (CASES / "burgers1d.pinn").read_text(encoding="utf-8")
    text = text.replace("points burgers 8192, walls 2048, ic 2048", "points burgers 128, walls 32, ic 32")
    text = text.replace('"../ref/burgers1d.dat"', json.dumps(str(ROOT / "benchmarks" / "pinnacle" / "ref" /
                                                                 "burgers1d.dat")))
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "burgers1d.pinn").write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    argv = ["--cases", "burgers1d", "--methods", "adam,config+gua", "--epochs", "2", "--jobs", "1", "--threads", "1",
            "--cases-dir", str(cases), "--out", str(out), "--set", "model=mlp(width = 16, depth = 2)"]
    assert bench.main("pinnacle", argv) == 0
    printed = capsys.readouterr().out
    assert "trained 2 run(s), 4 epochs" in printed
    with open(out / "pinnacle.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["method"] for r in rows] == ["adam", "config+gua"]
    for row in rows:
        result = json.loads((out / "runs" / "burgers1d" / row["method"] / "seed=0" / "result.json").read_text())
        assert row["completed"] == "1" and result["best_epoch"] == 2
        assert result["model"] == "mlp(width = 16, depth = 2, activation = tanh, init = xavier)"  # --set
        assert float(row["l2re_mean"]) == pytest.approx(result["rel_l2"], rel=1e-5)  # numpy vs the trainer's torch
        assert float(row["pinnacle_vanilla"]) == _pinnacle.CASES["burgers1d"].vanilla
        assert row["execution"] == result["execution"] == "eager"  # compile = off: how the steps ran
    assert "How the steps ran: eager (2 row(s))." in (out / "pinnacle.md").read_text()
    assert (out / "plots" / "burgers1d.png").stat().st_size > 0
    assert bench.main("pinnacle", argv) == 0  # everything finished: nothing is trained again
    assert "trained no runs" in capsys.readouterr().out
    (out / "runs" / "burgers1d" / "adam" / "seed=0" / "result.json").unlink()  # as if killed before the end
    (out / "pinnacle.csv").unlink()
    assert bench.main("pinnacle", argv + ["--table-only"]) == 0  # scores what is there, trains nothing
    with open(out / "pinnacle.csv", encoding="utf-8") as fh:
        assert [r["completed"] for r in csv.DictReader(fh)] == ["0", "1"]
    assert not (out / "runs" / "burgers1d" / "adam" / "seed=0" / "result.json").exists()
    # a run stopped by a time limit: scored at the epoch it reached, marked so, when no seed completed
    path = out / "runs" / "burgers1d" / "config+gua" / "seed=0" / "result.json"
    result = json.loads(path.read_text())
    path.write_text(json.dumps({**result, "status": "interrupted", "epochs_done": 1, "execution": "one graph"}))
    assert bench.main("pinnacle", argv + ["--table-only"]) == 0
    assert "How the steps ran: one graph (1 row(s))." in (out / "pinnacle.md").read_text()
    with open(out / "pinnacle.csv", encoding="utf-8") as fh:
        stopped = list(csv.DictReader(fh))[1]
    assert (stopped["completed"], stopped["stopped_at"]) == ("0", "1")
    assert float(stopped["l2re_mean"]) == pytest.approx(result["rel_l2"], rel=1e-5)
    assert "| Burgers1d-C | config+gua | 0/1, at 1 |" in (out / "pinnacle.md").read_text()
    # killed: result.json and predictions.npz as its last checkpoint wrote them ("running"), scored there too
    path.write_text(json.dumps({**result, "status": "running", "epochs_done": 1}))
    assert bench.main("pinnacle", argv + ["--table-only"]) == 0
    assert "| Burgers1d-C | config+gua | 0/1, at 1 |" in (out / "pinnacle.md").read_text()


def test_best_settings_are_read_as_plain_key_value_lines(tmp_path):
    (tmp_path / "cases").mkdir()
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "pnd.set").write_text("# comment\nmodel = mlp(width = 8)   # trailing\n\n"
                                               "stage = adam epochs = 3; ssbroyden epochs = 2, dtype = float64\n")
    assert _pinnacle.best_settings(str(tmp_path / "cases"), "pnd") == {
        "model": "mlp(width = 8)", "stage": "adam epochs = 3; ssbroyden epochs = 2, dtype = float64"}
    with pytest.raises(_pinnacle.BenchError, match="no configuration for wave1dc"):
        _pinnacle.best_settings(str(tmp_path / "cases"), "wave1dc")
    for text, phrase in (("model = a\nmodel = b\n", "pnd.set:2: 'model' is given twice"),
                         ("seed = 3\n", "pnd.set:1: the seed is --seeds'"), ("model\n", "expected KEY = VALUE")):
        (tmp_path / "best" / "pnd.set").write_text(text)
        with pytest.raises(_pinnacle.BenchError, match=phrase):
            _pinnacle.best_settings(str(tmp_path / "cases"), "pnd")


@pytest.mark.parametrize("case", sorted(p.stem for p in (ROOT / "benchmarks" / "pinnacle" / "best").glob("*.set")))
def test_the_shipped_best_configurations_check(case):
    """Each shipped best configuration applies to its case's spec (the stages replace its optimizer and epochs)."""
    settings = _pinnacle.best_settings(str(CASES), case)
    assert _pinnacle._total_epochs(str(CASES / f"{case}.pinn"), settings) > 0


def _small_burgers_case(folder) -> None:
    """FOLDER/burgers1d.pinn: the case with a 64th of its points, its reference path absolute."""
    text = (CASES / "burgers1d.pinn").read_text(encoding="utf-8")
    text = text.replace("points burgers 8192, walls 2048, ic 2048", "points burgers 128, walls 32, ic 32")
    text = text.replace('"../ref/burgers1d.dat"', json.dumps(str(ROOT / "benchmarks" / "pinnacle" / "ref" /
                                                                 "burgers1d.dat")))
    folder.mkdir()
    (folder / "burgers1d.pinn").write_text(text, encoding="utf-8")


def test_best_runs_a_cases_own_stages_and_scores_the_last_epoch(tmp_path, capsys):
    _small_burgers_case(tmp_path / "cases")
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "burgers1d.set").write_text(
        "model = mlp(width = 8, depth = 2)\nenforce = ic, walls\n"
        "stage = adam(lr = 1e-2) epochs = 3; ssbroyden epochs = 2, dtype = float64\n")
    out = tmp_path / "out"
    argv = ["--cases", "burgers1d", "--methods", "best", "--epochs", "50", "--jobs", "1", "--threads", "1",
            "--cases-dir", str(tmp_path / "cases"), "--out", str(out)]
    assert bench.main("pinnacle", argv) == 0
    printed = capsys.readouterr().out
    assert "trained 1 run(s), 5 epochs" in printed  # the stages' 3 + 2, not --epochs
    assert "- Burgers1d-C: `model = mlp(width = 8, depth = 2)`; `enforce = ic, walls`" in printed
    run_dir = out / "runs" / "burgers1d" / "best" / "seed=0"
    result = json.loads((run_dir / "result.json").read_text())
    assert result["best_epoch"] == result["epochs"] == 5 and result["dtype"] == "float32 then float64"
    # a run whose kept model is an earlier stage's best is scored from its last checkpoint: the final model
    (run_dir / "result.json").write_text(json.dumps({**result, "best_epoch": 3}))
    scored = _pinnacle.run_metrics(str(run_dir))
    assert scored["l2re"] == pytest.approx(result["rel_l2_final"], rel=1e-9)


def test_the_burgers1d_reference_is_1_3_percent_from_the_cole_hopf_solution():
    """PINNacle's COMSOL reference for Burgers1d-C against the Cole-Hopf solution (pinnspec.references, checked to
    1e-15): L2RE 1.33e-2 over its 1,111 rows, 2.2e-2 at t = 0.4 where the front steepens.  No model can score
    much below that against this file; PINNacle's best published L2RE (1.33e-2, LBFGS) is that floor."""
    from pinnspec.references import cole_hopf_solution
    from pinnspec.sampling._comsol import read_comsol

    columns = read_comsol(ROOT / "benchmarks" / "pinnacle" / "ref" / "burgers1d.dat").columns
    x, t, u = columns["x"], columns["t"], columns["u"]
    error = cole_hopf_solution(x, t) - u
    assert np.linalg.norm(error) / np.linalg.norm(u) == pytest.approx(1.3263e-2, rel=1e-3)
    at = t == 0.4
    assert np.linalg.norm(error[at]) / np.linalg.norm(u[at]) == pytest.approx(2.240e-2, rel=1e-3)
    assert np.abs(error[t == 0.0]).max() < 5e-6  # the initial condition is right


def test_recipe_trains_a_case_with_no_file_of_its_own_within_its_time(tmp_path, capsys):
    _small_burgers_case(tmp_path / "cases")
    out = tmp_path / "out"
    argv = ["--cases", "burgers1d", "--methods", "recipe", "--time", "4 s", "--jobs", "1", "--threads", "1",
            "--cases-dir", str(tmp_path / "cases"), "--out", str(out)]
    assert bench.main("pinnacle", argv) == 0
    assert "(recipe: strong(time = 4 s), epochs as the time allows)" in capsys.readouterr().out
    run_dir = out / "runs" / "burgers1d" / "recipe" / "seed=0"
    result = json.loads((run_dir / "result.json").read_text())
    config = (run_dir / "config.pinn").read_text()
    assert result["status"] == "completed" and "the time budget (4 s) was spent" in result["message"]
    assert "enforce ic, walls" in config and "train time = 4 s" in config and "stage ssbroyden" in config
    assert result["train_time_s"] < 4 + 2  # the budget, and the epoch in progress when it was spent


def test_the_observations_drawn_with_seed_0_are_the_repositorys_files():
    data = ROOT / "benchmarks" / "pinnacle" / "data"
    points = np.loadtxt(ROOT / "benchmarks" / "pinnacle" / "ref" / "heatinv_points.dat")  # [2500, 3]
    drawn = _pinnacle.observations(0, points)
    for name, (header, rows) in drawn.items():
        assert _pinnacle.observations_text(header, rows) == (data / name).read_text(encoding="utf-8")
    # another seed: the same points, the exact u plus other noise of the same size
    for name, (header, rows) in _pinnacle.observations(1, points).items():
        other = drawn[name][1]
        np.testing.assert_array_equal(rows[:, :-1], other[:, :-1])
        noise, noise0 = rows[:, -1] - _exact_observed(name, rows), other[:, -1] - _exact_observed(name, other)
        assert abs(noise.std() - 0.1) < 0.005 and abs(noise0.std() - 0.1) < 0.005  # 2,500 draws: sd 0.1 +- 1.4e-3
        assert abs(np.corrcoef(noise, noise0)[0, 1]) < 0.1  # independent draws


def _exact_observed(name: str, rows: np.ndarray) -> np.ndarray:
    """u* at an observation file's points (PInv: x, y; HInv: x, y, t)."""
    x, y = rows[:, 0], rows[:, 1]
    decay = np.exp(-rows[:, 2]) if name == "hinv_obs.csv" else 1.0
    return decay * np.sin(np.pi * x) * np.sin(np.pi * y)


def test_noise_per_seed_gives_each_run_observations_drawn_with_its_seed(tmp_path, capsys):
    cases, ref = tmp_path / "bench" / "cases", tmp_path / "bench" / "ref"
    cases.mkdir(parents=True)
    ref.mkdir()
    text = (CASES / "pinv.pinn").read_text(encoding="utf-8")
    text = text.replace("points poisson 8192, coefficient 2048, poissonedge 2048",
                        "points poisson 64, coefficient 16, poissonedge 16")
    (cases / "pinv.pinn").write_text(text, encoding="utf-8")
    (ref / "heatinv_points.dat").write_bytes((ROOT / "benchmarks" / "pinnacle" / "ref" / "heatinv_points.dat")
                                             .read_bytes())
    out = tmp_path / "out"
    argv = ["--cases", "pinv", "--methods", "adam", "--epochs", "2", "--seeds", "0,1", "--jobs", "1",
            "--threads", "1", "--cases-dir", str(cases), "--out", str(out), "--noise", "per-seed",
            "--set", "model=mlp(width = 8, depth = 2)"]
    assert bench.main("pinnacle", argv) == 0
    assert "drawn with each run's seed (--noise per-seed)" in capsys.readouterr().out
    with open(out / "pinnacle.csv", encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["runs"], row["completed"]) == ("2", "2")
    repository = (ROOT / "benchmarks" / "pinnacle" / "data" / "pinv_obs.csv").read_text(encoding="utf-8")
    seen = []
    for seed in (0, 1):
        run_dir = out / "runs" / "pinv" / "adam" / f"noise={seed}" / f"seed={seed}"
        assert json.loads((run_dir / "result.json").read_text())["status"] == "completed"
        observed = out / "observations" / f"seed={seed}" / "data" / "pinv_obs.csv"
        spec = out / "observations" / f"seed={seed}" / "cases" / "pinv.pinn"  # reads ../data/pinv_obs.csv
        assert spec.read_text(encoding="utf-8") == text
        assert json.loads((run_dir.parent / "sweep.json").read_text())["spec"] == str(spec)  # the run trained it
        seen.append(observed.read_text(encoding="utf-8"))
    assert seen[0] == repository and seen[1] != repository  # seed 0 draws the repository's observations
    assert bench.main("pinnacle", argv) == 0  # everything finished: nothing is trained again
    assert "trained no runs" in capsys.readouterr().out


def test_noise_per_seed_needs_heat_points_beside_the_cases(tmp_path, capsys):
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "pinv.pinn").write_text((CASES / "pinv.pinn").read_text(encoding="utf-8"))
    argv = ["--cases", "pinv", "--methods", "adam", "--epochs", "1", "--cases-dir", str(tmp_path / "cases"),
            "--out", str(tmp_path / "out"), "--noise", "per-seed"]
    assert bench.main("pinnacle", argv) == 1
    err = capsys.readouterr().err
    assert "--noise per-seed: HInv's observation points" in err and "heatinv_points.dat" in err
    assert "Traceback" not in err
