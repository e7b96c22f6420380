"""pinnspec._collector: the objects tracked when a training loop starts are frozen for its epochs and handed back
after; nested holds, a process's own freeze and PINNSPEC_GC_FREEZE=off; a cycle made inside is still collected."""

import gc
import weakref
from pathlib import Path

import pytest

import pinnspec
from pinnspec import _collector
from pinnspec.engine import Trainer
from pinnspec.lang import apply_overrides

TINY = Path(__file__).parent / "engine" / "data" / "tiny.pinn"


@pytest.fixture(autouse=True)
def _unfrozen():
    gc.unfreeze()
    yield
    while _collector._depth:
        _collector.release()
    gc.unfreeze()


def test_a_hold_freezes_what_is_tracked_and_the_outermost_release_hands_it_back():
    assert gc.get_freeze_count() == 0
    _collector.hold()
    frozen = gc.get_freeze_count()  # frozen objects freed by their references leave the count: compare with margins
    assert frozen > 1000  # the interpreter's, torch's, pinnspec's objects
    made = [[k] for k in range(10_000)]  # tracked, made after the hold
    _collector.hold()  # nested: nothing more is frozen
    assert gc.get_freeze_count() < frozen + len(made) // 2
    _collector.release()
    assert gc.get_freeze_count() > frozen // 2  # the inner release hands nothing back
    _collector.release()
    assert gc.get_freeze_count() == 0
    _collector.release()  # one too many: nothing
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_keeps_its_freeze():
    gc.freeze()
    own = gc.get_freeze_count()
    made = [[k] for k in range(10_000)]  # tracked, made after the process's freeze
    _collector.hold()
    assert gc.get_freeze_count() < own + len(made) // 2  # the hold froze nothing more
    _collector.release()
    assert gc.get_freeze_count() > own // 2  # and its release unfroze nothing


def test_holds_from_threads_balance():
    import sys
    import threading

    def hold_and_release():
        for _ in range(2000):
            _collector.hold()
            _collector.release()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=hold_and_release) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert _collector._depth == 0 and gc.get_freeze_count() == 0


def test_the_variable_turns_it_off(monkeypatch):
    monkeypatch.setenv("PINNSPEC_GC_FREEZE", "off")
    _collector.hold()
    assert gc.get_freeze_count() == 0
    _collector.release()


class _Node:
    pass


def test_a_run_freezes_for_its_epochs_and_a_cycle_made_in_them_is_collected():
    spec = apply_overrides(pinnspec.load(str(TINY)), {"epochs": 3, "device": "cpu"})
    trainer = Trainer(spec)
    seen = []

    def before_epoch(epoch):
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a cycle, unreachable once this returns
        probe = weakref.ref(a)
        del a, b
        gc.collect()
        seen.append((gc.get_freeze_count(), probe() is None))

    trainer.run(before_epoch=before_epoch)
    assert all(count > 1000 and collected for count, collected in seen) and len(seen) == 3
    assert gc.get_freeze_count() == 0


def test_a_run_that_fails_inside_its_epochs_hands_the_objects_back():
    spec = apply_overrides(pinnspec.load(str(TINY)), {"epochs": 3, "device": "cpu"})
    trainer = Trainer(spec)

    def before_epoch(epoch):
        raise RuntimeError("a user's hook failed")

    with pytest.raises(RuntimeError):
        trainer.run(before_epoch=before_epoch)
    assert gc.get_freeze_count() == 0
