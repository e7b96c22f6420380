"""Losses and groupings: ``loss NAME = w * CONDITION + ...``, ``grouping NAME = [...]``, the default grouping,
and the enforced conditions leaving every task."""

from __future__ import annotations

import math

from .. import ir
from ..registry import did_you_mean
from . import _ast as A
from ._context import Context
from ._declarations import CONDITION_STATEMENTS

DEFAULT_GROUPING = "default"


def _weight(ctx: Context, number: A.Number | None) -> float | None:
    if number is None:
        return 1.0
    value = float(number.text)
    if not math.isfinite(value) or value <= 0:
        ctx.diag.error(number.span, "a weight must be a positive number")
        return None
    return value


def _pool(ctx: Context, pool: A.Pool) -> ir.PoolLoss | None:
    names = []
    ok = True
    for m in pool.members:
        if not ctx.is_condition(m, "pool(...)"):
            ok = False
        elif m.name in names:
            ctx.diag.error(m.span, f"'{m.name}' appears twice in pool(...)")
            ok = False
        else:
            names.append(m.name)
    return ir.PoolLoss(tuple(names)) if ok else None


def loss(ctx: Context, st: A.Loss) -> None:
    terms = []
    ok = True
    for term in st.terms:
        w = _weight(ctx, term.weight)
        if isinstance(term.target, A.Pool):
            atom = _pool(ctx, term.target)
        else:
            atom = ir.ConditionLoss(term.target.name) if ctx.is_condition(term.target, "loss") else None
        if w is None or atom is None:
            ok = False
            continue
        terms.append((w, atom))
    if ok and ctx.declared_here(st.name):
        ctx.losses[st.name.name] = ir.WeightedSum(_combine(terms))


def grouping(ctx: Context, st: A.Grouping) -> None:
    tasks, labels = [], []
    ok = True
    for entry in st.entries:
        terms = []
        for term in entry.terms:
            w = _weight(ctx, term.weight)
            expanded = None
            if isinstance(term.target, A.Pool):
                pool = _pool(ctx, term.target)
                expanded = [(1.0, pool)] if pool else None
            else:
                name = term.target.name
                kind = ctx.declared.get(name, (None,))[0]
                if kind == "loss":
                    expanded = list(ctx.losses[name].terms) if name in ctx.losses else None
                elif kind == "condition":
                    expanded = [(1.0, ir.ConditionLoss(name))]
                elif kind is None:
                    known = list(ctx.condition_kinds) + [n for n, (k, _) in ctx.declared.items() if k == "loss"]
                    hint = did_you_mean(name, known)
                    more = f"; did you mean '{hint}'?" if hint else f" (losses and conditions are: {', '.join(known) or 'none'})"
                    ctx.diag.error(term.target.span, f"unknown loss or condition '{name}'{more}")
                else:
                    ctx.diag.error(term.target.span, f"'{name}' is a {kind}; a grouping lists losses, conditions and pools")
            if w is None or expanded is None:
                ok = False
                continue
            terms.extend((w * wi, atom) for wi, atom in expanded)
        tasks.append(ir.WeightedSum(_combine(terms)))
        labels.append(entry.span.text(ctx.tree.source))
    if ok and ctx.declared_here(st.name):
        ctx.groupings[st.name.name] = ir.Grouping(st.name.name, tuple(tasks), tuple(labels))


def default_grouping(ctx: Context, training: ir.Training) -> str:
    """The name of the grouping a run trains: the `train grouping` setting; else the grouping named "default";
    else one made as "default" (one task per loss; with no loss, one per condition)."""
    chosen = training.options.get("grouping")
    if chosen and chosen != DEFAULT_GROUPING:
        return chosen
    if DEFAULT_GROUPING in ctx.groupings:
        return DEFAULT_GROUPING
    # one task per loss; with no loss at all, one task per condition
    if ctx.losses:
        tasks = tuple(ctx.losses.values())
        labels = tuple(ctx.losses)
    else:
        tasks = tuple(ir.WeightedSum(((1.0, ir.ConditionLoss(n)),)) for n in ctx.conditions)
        labels = tuple(ctx.conditions)
    ctx.groupings[DEFAULT_GROUPING] = ir.Grouping(DEFAULT_GROUPING, tasks, labels)
    return DEFAULT_GROUPING


def drop_enforced(ctx: Context, by_kind) -> None:
    """The enforced conditions leave every task (a pool keeps its other members; a task left empty goes)."""
    if not ctx.enforced:
        return
    for name, g in list(ctx.groupings.items()):
        tasks, labels = [], []
        for task, label in zip(g.tasks, g.labels):
            terms = []
            for weight, atom in task.terms:
                if isinstance(atom, ir.PoolLoss):
                    kept = tuple(c for c in atom.conditions if c not in ctx.enforced)
                    if kept:
                        terms.append((weight, ir.PoolLoss(kept) if len(kept) > 1 else ir.ConditionLoss(kept[0])))
                elif atom.condition not in ctx.enforced:
                    terms.append((weight, atom))
            if terms:
                kept = ir.WeightedSum(tuple(terms))
                tasks.append(kept)
                labels.append(label if kept == task else str(kept))
        if not tasks:
            where = next((st.span for st in by_kind.get("grouping", []) if st.name.name == name),
                         by_kind["enforce"][0].span)
            ctx.diag.error(where, f"every task of the grouping '{name}' is enforced: nothing is left to train")
            continue
        ctx.groupings[name] = ir.Grouping(name, tuple(tasks), tuple(labels))


def check_balance_stop(ctx: Context, by_kind, training: ir.Training, chosen: str) -> None:
    """`train stop = balance` compares the tasks with noisy observations to the others: the grouping the run
    trains must have both."""
    grouping = ctx.groupings.get(chosen)
    if training.setting("stop") != "balance" or grouping is None:
        return
    observed = grouping.tasks_holding(name for name, c in ctx.conditions.items() if c.noise)
    if len(observed) in (0, grouping.m):
        where = next(kw for st in by_kind["train"] for kw in st.settings if kw.name.name == "stop")
        has = "no" if not observed else "only"
        ctx.diag.error(where.span, f"stop = balance compares the tasks with noisy observations to the others: the "
                       f"grouping '{chosen}' has {has} tasks with noisy observations; give the observations a task "
                       "of their own (e.g. 'grouping g = [heat, obs]' and 'train grouping = g')")


def usage_warnings(ctx: Context, by_kind) -> None:
    """A condition no loss or grouping trains, a loss no grouping uses: a warning."""
    used: set[str] = set()
    for loss in ctx.losses.values():
        used.update(loss.conditions)
    for g in ctx.groupings.values():
        for task in g.tasks:
            used.update(task.conditions)
    if by_kind.get("loss") or by_kind.get("grouping"):
        for st in ctx.tree.statements:
            if isinstance(st, CONDITION_STATEMENTS):
                if st.name.name in ctx.conditions and st.name.name not in used | ctx.enforced:
                    ctx.diag.warning(st.name.span, f"the condition '{st.name.name}' is used by no loss or grouping; "
                                     "it will not be trained")
    if by_kind.get("grouping"):
        in_groupings = set()
        for st in by_kind["grouping"]:
            for entry in st.entries:
                for term in entry.terms:
                    if isinstance(term.target, A.Ident):
                        in_groupings.add(term.target.name)
        for st in by_kind.get("loss", []):
            if st.name.name not in in_groupings:
                ctx.diag.warning(st.name.span, f"the loss '{st.name.name}' is used by no grouping")


def _combine(terms: list[tuple[float, ir.Atom]]) -> tuple[tuple[float, ir.Atom], ...]:
    """Merge repeated atoms by adding their weights, keeping first-seen order."""
    merged: dict[ir.Atom, float] = {}
    for w, atom in terms:
        merged[atom] = merged.get(atom, 0.0) + w
    return tuple((w, atom) for atom, w in merged.items())
