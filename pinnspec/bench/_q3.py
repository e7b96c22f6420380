"""``pinnspec bench q3``: the paper's Q3 (does GUA help through its direction, not its step size?).

The same-state, norm-matched comparison of section "Q3: Direction Alignment Mechanism" and Appendix
"Same-State Norm-Matched Comparison" (app:same_state_counterfactual_details).  During a ConFIG + Adam +
GUA training run, at every ``--every``-th epoch the parameters theta_t, the optimizer state, the batch
(the epoch's points) and the learning rate eta_t are held fixed, and three updates are compared:

    u_t   the optimizer proposal                     (optimizer.propose)
    p_t   the GUA update                              (alignment.align)
    q_t = (||p_t|| / ||u_t||) u_t                     the direction of u_t at the norm of p_t

through the worst relative one-step loss change

    W_rel(d) = max_i (L_i(theta_t - eta_t d) - L_i(theta_t)) / (|L_i(theta_t)| + eps).

The win rates are Pr[W_rel(p) < W_rel(u)] and Pr[W_rel(p) < W_rel(q)], first within each run, then mean
± std over seeds (the paper: "training states are first aggregated within each run before statistics
are computed across seeds").  Both are reported over the steps where GUA changed the proposal (p != u)
and over all evaluated steps: on a step where GUA does not project, p = q = u and the comparison is a
tie, never a win.  The paper's table (tab:q3_equation_win_rates, :mod:`pinnspec.bench._paper`) counts
projected steps: its rates (~95 %) exceed the fraction of steps at which GUA projects at all (R_u of
ConFIG + GUA, 14-55 %, tab:pinn_conflict_rates), which bounds any all-step rate.

The probe (:func:`probe_step`) recomputes the first part of :meth:`pinnspec.engine.Trainer.step` (losses,
G, one step of the update chain) without committing anything, evaluates the three trial losses, and restores
the parameters and the surgery/Hessian random stream exactly; the trainer's ``step`` then advances as it
would have without the probe.  Each (problem, grouping, seed) run writes ``OUT/runs/PROBLEM-GROUPING/
seed=S/q3.json`` (every sample); running the same command again skips the runs that have one.  Writes
``OUT/q3.md``, ``OUT/q3.csv``, ``OUT/q3.png`` and ``OUT/q3_steps.csv`` (one row per evaluated step).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
from dataclasses import asdict, dataclass, field

from . import _paper
from ._cli import EXIT_OK, BenchError, positive, run_main
from ._paper_runs import base_name, fixed_settings, gua_statement, parser, selection
from ._report import cell, markdown_table, panel_figure, write_outputs

#: epsilon of the denominator |L_i(theta)| + eps of W_rel (the paper names eps but gives no value; this one
#: matters only for a loss within ~1e-12 of zero)
W_EPS = 1e-12
DEFAULT_EVERY = 5
RESULT_FILE = "q3.json"
COLUMNS = ["problem", "grouping", "method", "optimizer", "runs", "completed", "steps", "projected_steps",
           "win_pu_projected_mean", "win_pu_projected_std", "win_pq_projected_mean", "win_pq_projected_std",
           "win_pu_all_mean", "win_pu_all_std", "win_pq_all_mean", "win_pq_all_std",
           "median_w_u", "median_w_p", "median_w_q", "rel_l2_final_mean", "paper_win_pu", "paper_win_pq"]
STEP_COLUMNS = ["problem", "grouping", "method", "optimizer", "seed", "epoch", "lr", "projected", "w_u", "w_p", "w_q",
                "norm_u", "norm_p", "cos_pu"]


# ====================================================================== the probe
@dataclass(frozen=True)
class ProbeSample:
    """One same-state comparison at ``epoch`` (W_rel of the three updates, at learning rate ``lr``)."""

    epoch: int
    lr: float
    projected: bool  # GUA changed the proposal: ||p - u|| > 0 (the trainer's own "projected" test)
    w_u: float
    w_p: float
    w_q: float
    norm_u: float
    norm_p: float
    cos_pu: float


def worst_relative_change(trial, base, eps: float = W_EPS) -> float:
    """W_rel = max_i (L_i(trial) - L_i(base)) / (|L_i(base)| + eps), in float64.

    ``trial``, ``base``: the m task losses [m] at theta - eta d and at theta."""
    import torch

    trial64 = torch.as_tensor(trial).detach().to(torch.float64)  # [m]
    base64 = torch.as_tensor(base).detach().to(torch.float64)  # [m]
    return float(((trial64 - base64) / (base64.abs() + eps)).max())


def norm_matched(u, p):
    """q = (||p|| / ||u||) u: the direction of the proposal u at the norm of the GUA update p.  [p]

    The ratio is taken in float64; u must not be zero."""
    import torch

    scale = p.detach().to(torch.float64).norm() / u.detach().to(torch.float64).norm()
    return u * scale.to(u.dtype)


def _task_losses(trainer, points, *, eager: bool):
    """The m task losses [m] (float64, detached) at the trainer's current parameters.

    Not under ``torch.no_grad``: the residuals need input derivatives, which the nested-autograd engine
    takes with ``torch.autograd.grad`` (under no_grad every u_x, u_xx would come out zero)."""
    import torch

    with torch.enable_grad():
        losses = trainer.execution.losses(points, eager=eager)
        return torch.stack([loss.detach() for loss in losses.task_list]).to(torch.float64)  # [m]


def _set_trial_parameters(trainer, saved, lr: float, direction) -> None:
    """theta <- theta_t - lr * direction, with the very operation of ``Trainer._apply`` (so d = p gives the
    parameters the step itself will produce, bit for bit)."""
    import torch

    with torch.no_grad():
        for t, t0, piece in zip(trainer.theta, saved, direction.split(trainer.numels)):
            t.copy_(t0)
            t.add_(piece.view_as(t), alpha=-lr)


def probe_step(trainer, epoch: int, *, eps: float = W_EPS) -> ProbeSample | None:
    """The same-state comparison of u, p, q at ``epoch``, leaving ``trainer`` as it found it.

    Replicates the first part of :meth:`Trainer.step` (points, losses, G [m, p], the optimizer's Hessian
    estimate when due, ``UpdateChain.update``), commits nothing, evaluates
    L_i(theta - eta d) for d in {u, p, q}, and restores the parameters (copied back) and the surgery /
    Hutchinson random stream.  Returns None on a step that has no comparison: eta_t = 0 (the warmup's
    first epoch), u = 0, or a non-finite loss, gradient or update (the step itself then reports the
    divergence)."""
    import torch

    from ..engine import loss_gradients
    from ..optim import hutchinson_diagonal

    if trainer.distributed:
        raise BenchError("bench q3 probes a single-process trainer, not a data-parallel one")
    lr = float(trainer.schedule(epoch, trainer.epochs, trainer.chain.optimizer.lr))
    if lr <= 0:
        return None
    random_stream = trainer.chain_generator.get_state()
    saved = [t.detach().clone() for t in trainer.theta]
    try:
        points = trainer.points.at(epoch)
        hessian_due = trainer.chain.hessian_due(trainer.chain_state)
        losses = trainer.execution.losses(points, eager=hessian_due)
        G = loss_gradients(losses.task_list, trainer.theta, retain_graph=hessian_due)  # [m, p]
        hessian = None
        if hessian_due:
            hessian = hutchinson_diagonal(sum(losses.task_list), trainer.theta, generator=trainer.chain_generator)
        base = torch.stack([loss.detach() for loss in losses.task_list]).to(torch.float64)  # [m]  L_i(theta_t)
        del losses
        theta = torch.cat([t.detach().reshape(-1) for t in trainer.theta])  # [p], as the step flattens it
        step = trainer.chain.update(G, theta, trainer.chain_state, hessian=hessian, generator=trainer.chain_generator)
        u, p = step.u, step.p  # [p], [p]
        if not (torch.isfinite(base).all() and torch.isfinite(G).all() and torch.isfinite(p).all()):
            return None
        u64, p64 = u.detach().to(torch.float64), p.detach().to(torch.float64)
        norm_u, norm_p = float(u64.norm()), float(p64.norm())
        if norm_u == 0.0:
            return None
        q = norm_matched(u, p)  # [p]
        worst = {}
        for name, direction in (("u", u), ("p", p), ("q", q)):
            _set_trial_parameters(trainer, saved, lr, direction.detach())
            worst[name] = worst_relative_change(_task_losses(trainer, points, eager=hessian_due), base, eps)
        return ProbeSample(epoch=epoch, lr=lr, projected=bool((p - u).norm() > 0), w_u=worst["u"], w_p=worst["p"],
                           w_q=worst["q"], norm_u=norm_u, norm_p=norm_p,
                           cos_pu=float(u64 @ p64 / (u64.norm() * p64.norm() + 1e-30)))
    finally:
        with torch.no_grad():
            for t, t0 in zip(trainer.theta, saved):
                t.copy_(t0)
        trainer.chain_generator.set_state(random_stream)


@dataclass
class ProbedRun:
    """A training run with its probes."""

    samples: list[ProbeSample] = field(default_factory=list)
    status: str = "running"  # the Result's: "completed" | "diverged" | "interrupted"
    epochs_done: int = 0
    rel_l2_final: float | None = None
    message: str = ""


def train_with_probes(trainer, *, every: int = DEFAULT_EVERY, eps: float = W_EPS) -> ProbedRun:
    """Train ``trainer`` (`Trainer.run`) from its current epoch to the end, probing every ``every``-th epoch
    (epoch % every == 0; the warmup's eta = 0 epoch has no comparison) before the step that follows it."""
    run = ProbedRun()

    def probe(epoch: int) -> None:
        if epoch % every == 0:
            sample = probe_step(trainer, epoch, eps=eps)
            if sample is not None:
                run.samples.append(sample)

    result = trainer.run(before_epoch=probe)
    run.status, run.message, run.epochs_done = result.status, result.message, result.epochs_done
    if run.status == "completed":
        run.rel_l2_final = result.rel_l2_final
    return run


# ====================================================================== win rates
def win_rates(samples: list[ProbeSample], *, projected_only: bool) -> dict:
    """Pr[W_rel(p) < W_rel(u)] and Pr[W_rel(p) < W_rel(q)] over the samples (a tie is no win); None when
    there are no samples."""
    chosen = [s for s in samples if s.projected or not projected_only]
    if not chosen:
        return {"n": 0, "p_lt_u": None, "p_lt_q": None}
    return {"n": len(chosen), "p_lt_u": sum(s.w_p < s.w_u for s in chosen) / len(chosen),
            "p_lt_q": sum(s.w_p < s.w_q for s in chosen) / len(chosen)}


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(values) if values else None


# ====================================================================== runs (in process or a local pool)
def _probe_task(task: dict) -> dict:
    """Train and probe one planned run; writes RUN_DIR/q3.json and config.pinn; returns what q3.json holds."""
    import torch

    from .._files import atomic_write_text, write_json
    from ..engine import Trainer
    from ..lang import loads

    if task.get("threads") and torch.get_num_threads() != task["threads"]:
        torch.set_num_threads(task["threads"])
    spec = loads(task["source"], filename=task["filename"], base_dir=task["base_dir"])
    trainer = Trainer(spec)
    run = train_with_probes(trainer, every=task["every"], eps=task["eps"])
    record = {"source": task["source"], "every": task["every"], "eps": task["eps"], "status": run.status,
              "epochs_done": run.epochs_done, "rel_l2_final": run.rel_l2_final, "message": run.message,
              "samples": [asdict(s) for s in run.samples]}
    os.makedirs(task["run_dir"], exist_ok=True)
    atomic_write_text(os.path.join(task["run_dir"], "config.pinn"), task["source"])
    write_json(os.path.join(task["run_dir"], RESULT_FILE), record)
    return record


def _finished(task: dict) -> dict | None:
    """The run's q3.json when it was made with the same spec, --every and eps; None when there is none;
    a BenchError when it was made with other settings."""
    from .._files import read_json

    path = os.path.join(task["run_dir"], RESULT_FILE)
    try:
        record = read_json(path)
    except (OSError, ValueError):
        return None
    if (record.get("source"), record.get("every"), record.get("eps")) != (task["source"], task["every"], task["eps"]):
        raise BenchError(f"{path}: this run was made with other settings (spec, --every) than asked for now; give "
                         f"another --out, or delete the folder to run it again")
    return record


def _pool_init(threads: int) -> None:
    from ..sweep import set_threads, watch_parent

    set_threads(threads)
    watch_parent()  # a probe whose driver was killed ends rather than run on unseen


def run_tasks(tasks: list[dict], jobs: int, threads: int, log) -> list[dict]:
    """Every task's record, in task order: finished ones read back, the rest run (in this process when
    ``jobs`` is 1, else on a local pool of ``jobs`` spawned processes with ``threads`` torch threads each)."""
    records: list[dict | None] = [_finished(t) for t in tasks]
    todo = [i for i, r in enumerate(records) if r is None]
    log(f"bench q3: {len(tasks)} runs: {len(tasks) - len(todo)} finished (skipped), {len(todo)} to run")
    for task in tasks:
        task["threads"] = threads
    if jobs <= 1 or len(todo) <= 1:
        import torch

        before = torch.get_num_threads()
        try:
            for k, i in enumerate(todo):
                records[i] = _probe_task(tasks[i])
                log(f"[{k + 1}/{len(todo)}] {tasks[i]['label']}: {_describe(records[i])}")
        finally:
            torch.set_num_threads(before)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_pool_init, initargs=(threads,)) as pool:
            futures = {pool.submit(_probe_task, tasks[i]): i for i in todo}
            for k, future in enumerate(as_completed(futures)):
                i = futures[future]
                records[i] = future.result()
                log(f"[{k + 1}/{len(todo)}] {tasks[i]['label']}: {_describe(records[i])}")
    return records


def sample_from_json(entry: dict) -> ProbeSample:
    """A ProbeSample from q3.json (which writes a non-finite W_rel as the string "nan" or "inf")."""
    return ProbeSample(epoch=int(entry["epoch"]), lr=float(entry["lr"]), projected=bool(entry["projected"]),
                       **{k: float(entry[k]) for k in ("w_u", "w_p", "w_q", "norm_u", "norm_p", "cos_pu")})


def _describe(record: dict) -> str:
    samples = [sample_from_json(s) for s in record["samples"]]
    projected = win_rates(samples, projected_only=True)
    text = (f"{record['status']} ({record['epochs_done']} epochs), {len(samples)} steps probed, "
            f"{projected['n']} projected")
    if projected["n"]:
        text += f", p<u {100 * projected['p_lt_u']:.1f} %, p<q {100 * projected['p_lt_q']:.1f} %"
    return text + (f": {record['message']}" if record.get("message") else "")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ====================================================================== the command
def build_parser() -> argparse.ArgumentParser:
    p = parser("pinnspec bench q3",
               "Q3: same-state, norm-matched comparison of u, p and q = (||p||/||u||) u during ConFIG + Adam + GUA "
               "training; win rates of the worst relative one-step loss change next to the paper's.",
               methods=("config",), optimizers=(), out_default=os.path.join("runs", "bench-q3"))
    p.add_argument("--every", type=positive, default=DEFAULT_EVERY, metavar="K",
                   help=f"probe every K-th epoch (default {DEFAULT_EVERY}); each probe costs about one extra step "
                        f"plus three loss evaluations")
    return p


def main(argv: list[str] | None = None) -> int:
    return run_main(build_parser(), _run, argv)


def _run(args, log=_stderr) -> int:
    from ..sweep import Sweep, plan
    from ..sweep import cpu_count, default_jobs

    chosen = selection(args)
    problems, groupings, methods, optimizers = chosen.problems, chosen.groupings, chosen.methods, chosen.optimizers
    seed_list, paths = chosen.seeds, chosen.paths
    cells, tasks = [], []
    for problem in problems:
        gua = gua_statement(paths[problem])
        for grouping, method, optimizer in ((g, m, o) for g in groupings for m in methods for o in optimizers):
            name = f"{problem}-{grouping}" + (f"-{base_name(method)}" if len(methods) > 1 else "") + \
                (f"-{base_name(optimizer)}" if optimizer else "")
            fixed = fixed_settings(args, grouping=grouping, surgery=method, align=gua,
                                   **({"optimizer": optimizer} if optimizer else {}))
            runs = plan(Sweep(paths[problem], seeds=seed_list, fixed=fixed, out=os.path.join(args.out, "runs", name)))
            key = (problem, grouping, method, optimizer or "spec")
            cells.append(key)
            tasks += [{"cell": key, "seed": r.seed, "label": f"{name}/{r.name}", "run_dir": r.run_dir,
                       "source": r.source, "filename": r.filename, "base_dir": r.base_dir, "every": args.every,
                       "eps": W_EPS} for r in runs]
    cores = cpu_count()
    jobs = args.jobs or default_jobs(cores)
    threads = args.threads or max(1, cores // jobs)
    records = run_tasks(tasks, jobs, threads, log)
    rows, steps = summarize(cells, tasks, records)
    text = markdown(rows, args, seed_list)
    written = write_outputs(args.out, "q3", text, COLUMNS, rows, figure(rows, steps))
    from .._files import write_csv

    write_csv(os.path.join(args.out, "q3_steps.csv"), STEP_COLUMNS, steps)
    print(text)
    print(f"wrote {written['markdown']}, {written['csv']}, {written['plot']}, {os.path.join(args.out, 'q3_steps.csv')}")
    return EXIT_OK  # a diverged run is a result (its row shows completed < runs), as in pinnspec sweep


def summarize(cells: list[tuple], tasks: list[dict], records: list[dict]) -> tuple[list[dict], list[dict]]:
    """(rows, steps): one row per cell (per-run win rates, then mean ± std over seeds, in %), then the
    overall rows (the unweighted mean over the cells, as the paper's "Overall" row); one step row per
    probe."""
    rows, steps = [], []
    for key in cells:
        problem, grouping, method, optimizer = key
        mine = [(t, r) for t, r in zip(tasks, records) if t["cell"] == key]
        per_run = {"projected": [], "all": []}
        pooled: list[ProbeSample] = []
        for task, record in mine:
            samples = [sample_from_json(s) for s in record["samples"]]
            pooled += samples
            for which in per_run:
                per_run[which].append(win_rates(samples, projected_only=which == "projected"))
            steps += [{"problem": problem, "grouping": grouping, "method": method, "optimizer": optimizer,
                       "seed": task["seed"], **asdict(s), "projected": int(s.projected)} for s in samples]
        row = {"problem": problem, "grouping": grouping, "method": method, "optimizer": optimizer, "runs": len(mine),
               "completed": sum(r["status"] == "completed" for _, r in mine), "steps": len(pooled),
               "projected_steps": sum(s.projected for s in pooled)}
        for which, rates in per_run.items():
            for pair in ("pu", "pq"):
                mean, std = _mean_std([None if r[f"p_lt_{pair[1]}"] is None else 100 * r[f"p_lt_{pair[1]}"]
                                       for r in rates])
                row[f"win_{pair}_{which}_mean"], row[f"win_{pair}_{which}_std"] = mean, std
        projected = [s for s in pooled if s.projected]
        for d in "upq":
            row[f"median_w_{d}"] = _median([getattr(s, f"w_{d}") for s in projected])
        row["rel_l2_final_mean"] = _mean_std([r["rel_l2_final"] for _, r in mine])[0]
        paper = _paper.q3_win_rates(problem, grouping) if base_name(method) == "config" else None
        row["paper_win_pu"], row["paper_win_pq"] = paper or (None, None)
        rows.append(row)
    rows += _overall(rows)
    return rows, steps


def _overall(rows: list[dict]) -> list[dict]:
    """The unweighted mean of the cells' mean win rates: per grouping (when it has two or more problems) and over
    every cell (when there are two or more), next to the paper's Overall row and its all-settings numbers."""
    def mean_row(members, grouping, paper):
        row = {"problem": "overall", "grouping": grouping, "method": "", "optimizer": "",
               "runs": sum(r["runs"] for r in members), "completed": sum(r["completed"] for r in members),
               "steps": sum(r["steps"] for r in members), "projected_steps": sum(r["projected_steps"] for r in members)}
        for column in COLUMNS:
            if column.startswith("win_") and column.endswith("_mean"):
                row[column] = _mean_std([r[column] for r in members])[0]
        row["paper_win_pu"], row["paper_win_pq"] = paper or (None, None)
        return row

    out = []
    groupings = list(dict.fromkeys(r["grouping"] for r in rows))
    for grouping in groupings:
        members = [r for r in rows if r["grouping"] == grouping]
        if len(members) > 1:
            out.append(mean_row(members, grouping, _paper.Q3_OVERALL.get(grouping)))
    if len(rows) > 1 and len(groupings) > 1:
        out.append(mean_row(rows, "all", _paper.Q3_ALL_SETTINGS))
    return out


def _pct(mean, std=None) -> str:
    if mean is None:
        return "-"
    return f"{mean:.1f}" if std is None else f"{mean:.1f} ± {std:.1f}"


def _w(value) -> str:
    return "-" if value is None else f"{value:.2e}"


def markdown(rows: list[dict], args, seed_list: list[int]) -> str:
    lines = ["# pinnspec bench q3: same-state, norm-matched comparison of u, p, q", "",
             f"{args.epochs} epochs per run, probed every {args.every} epochs, seeds "
             f"{','.join(map(str, seed_list))}, device {args.device}.  W_rel(d) = max_i (L_i(θ - η d) - L_i(θ)) / "
             f"(|L_i(θ)| + {W_EPS:g}) at fixed θ, optimizer state, points and η; q = (‖p‖/‖u‖) u.  "
             f"Win rates "
             f"in %: per run, then mean ± std over seeds.  \"projected\": the steps where GUA changed the "
             f"proposal (p ≠ u), the set the paper's table counts; \"all\": every probed step (p = q = u on an "
             f"unprojected step, a tie).  Median W_rel over the projected steps.  The paper's numbers "
             f"(tab:q3_equation_win_rates; overall: its Overall row, and 95.1 / 93.4 over all 10 settings in "
             f"the text) come from full-length training over five seeds.", ""]
    cells = []
    for r in rows:
        setting = r["grouping"]
        if r["problem"] != "overall" and (r["method"] != "config" or r["optimizer"] != "spec"):
            setting += f" ({r['method']}, optimizer {r['optimizer']})"
        medians = " / ".join(_w(r.get(f"median_w_{d}")) for d in "upq") if r["problem"] != "overall" else "-"
        cells.append([r["problem"], setting, f"{r['completed']}/{r['runs']}", f"{r['steps']} ({r['projected_steps']})",
                      *(_pct(r[f"win_{pair}_{which}_mean"], r.get(f"win_{pair}_{which}_std"))
                        for which in ("projected", "all") for pair in ("pu", "pq")),
                      medians, cell(r["paper_win_pu"], 2), cell(r["paper_win_pq"], 2)])
    lines += markdown_table(["problem", "grouping", "runs", "steps (projected)", "p<u projected", "p<q projected",
                             "p<u all", "p<q all", "median W_rel u / p / q", "paper p<u", "paper p<q"], cells, left=2)
    return "\n".join(lines) + "\n"


def figure(rows: list[dict], steps: list[dict]):
    """One panel per setting: the measured win rates (bars: projected steps solid, all steps light) and the
    paper's (dots); a last panel (key None) with W_rel(u), W_rel(p), W_rel(q) over every projected step (the
    paper's Figure fig:q3_mechanism shows these distributions)."""
    cells = [r for r in rows if r["problem"] != "overall"] or [{"problem": "(none)", "grouping": "", "method": "",
                                                                 "optimizer": ""}]

    def draw(ax, r):
        if r is None:
            _draw_w_rel(ax, steps)
            return
        xs = [0, 1]
        for which, shift, alpha in (("projected", -0.2, 0.9), ("all", 0.2, 0.4)):
            values = [r.get(f"win_pu_{which}_mean"), r.get(f"win_pq_{which}_mean")]
            ax.bar([x + shift for x in xs], [v or 0.0 for v in values], width=0.4, color="tab:red", alpha=alpha,
                   label=f"measured, {which} steps")
        paper = [(x - 0.2, v) for x, v in zip(xs, (r.get("paper_win_pu"), r.get("paper_win_pq"))) if v is not None]
        if paper:
            ax.plot(*zip(*paper), "o", color="black", markersize=5, label="paper")
        ax.axhline(50, color="gray", linewidth=0.6, linestyle=":")
        ax.set_xticks(xs, ["p < u", "p < q"])
        ax.set_ylim(0, 130)
        ax.set_yticks([0, 20, 40, 60, 80, 100])
        ax.set_ylabel("win rate (%)")
        ax.set_title(_paper.setting_label(r["problem"], r["grouping"]), fontsize=9)
        ax.legend(fontsize=6, loc="upper center", ncol=3)

    return panel_figure(cells + [None], draw)


def _draw_w_rel(ax, steps: list[dict]) -> None:
    projected = [s for s in steps if s["projected"]]
    data = [[s[f"w_{d}"] for s in projected if math.isfinite(s[f"w_{d}"])] for d in "upq"]
    if all(data):
        ax.boxplot(data, showfliers=False)
        ax.set_yscale("symlog", linthresh=1e-6)
    ax.set_xticks([1, 2, 3], ["u (proposal)", "p (GUA)", "q (norm-matched)"])
    ax.axhline(0, color="gray", linewidth=0.6)
    ax.set_ylabel("W_rel, projected steps")
    ax.set_title(f"worst relative one-step loss change ({len(projected)} steps)", fontsize=9)
