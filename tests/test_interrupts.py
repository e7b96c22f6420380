"""pinnspec._interrupts: a SIGINT within REPEAT_S of the first is that first one again; later, a second Ctrl-C."""

from pinnspec._interrupts import REPEAT_S, Interrupts


def test_repeats_of_the_first_interrupt_are_not_a_second_ctrl_c():
    now = [100.0]
    interrupts = Interrupts(clock=lambda: now[0])
    assert interrupts.arrive() == "first"
    now[0] += 0.2
    assert interrupts.arrive() == "repeat"
    now[0] += REPEAT_S - 0.3  # still within REPEAT_S of the first
    assert interrupts.arrive() == "repeat"
    now[0] += 0.2
    assert interrupts.arrive() == "again"
    assert interrupts.arrive() == "again"
