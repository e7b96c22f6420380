"""pinnspec.engine.MultiTaskOptimizer against hand-written references (float64)."""

import pytest
import torch

from pinnspec.align import GUA, NoAlignment
from pinnspec.engine import MultiTaskOptimizer, UpdateChain, loss_gradients, multitask_gradients
from pinnspec.optim import Adam, SophiaG
from pinnspec.surgery import ConFIG, Sum

M = 3  # tasks


def _problem(seed=0, n=24, d=4, width=8):
    """A tanh trunk (two layers) and M linear heads as leaf tensors; inputs x [n, d], targets y [n, M]."""
    g = torch.Generator().manual_seed(seed)

    def leaf(*shape):
        return (0.5 * torch.randn(*shape, generator=g, dtype=torch.float64)).requires_grad_(True)

    shared = [leaf(width, d), leaf(width), leaf(width, width), leaf(width)]
    heads = [leaf(M, width), leaf(M)]
    x = torch.randn(n, d, generator=g, dtype=torch.float64)  # [n, d]
    y = torch.randn(n, M, generator=g, dtype=torch.float64)  # [n, M]
    return shared, heads, x, y


def _losses(shared, heads, x, y):
    """M squared errors, one per head: a list of scalars."""
    h = torch.tanh(torch.nn.functional.linear(x, shared[0], shared[1]))  # [n, width]
    h = torch.tanh(torch.nn.functional.linear(h, shared[2], shared[3]))
    out = torch.nn.functional.linear(h, heads[0], heads[1])  # [n, M]
    return list(((out - y) ** 2).mean(dim=0).unbind())


def _copies(tensors):
    return [t.detach().clone().requires_grad_(True) for t in tensors]


@pytest.mark.parametrize("with_heads", [True, False])
def test_no_surgery_no_alignment_is_torch_adam_on_the_summed_loss(with_heads):
    shared, heads, x, y = _problem()
    ref_shared, ref_heads = _copies(shared), _copies(heads)
    chain = UpdateChain(Sum(), Adam(lr=1e-2), NoAlignment())
    if with_heads:
        ours = MultiTaskOptimizer(chain, shared, heads, tasks=M)
    else:  # every tensor shared: the heads go through the chain too
        ours = MultiTaskOptimizer(chain, shared + heads, tasks=M)
    adam = torch.optim.Adam(ref_shared + ref_heads, lr=1e-2)
    for k in range(5):
        xb, yb = x[4 * k: 4 * k + 12], y[4 * k: 4 * k + 12]
        step = ours.step(lambda: _losses(shared, heads, xb, yb))
        assert torch.equal(step.p, step.u)  # no alignment: p = u
        adam.zero_grad()
        sum(_losses(ref_shared, ref_heads, xb, yb)).backward()
        adam.step()
        for a, b in zip(shared + heads, ref_shared + ref_heads):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_gua_step_is_the_chain_on_the_shared_part_and_adam_on_the_heads():
    """One step by hand: loss_gradients, chain.update on the shared block, Adam's proposal on the summed head
    rows, theta -= lr * update."""
    shared, heads, x, y = _problem(seed=1)
    ref_shared, ref_heads = _copies(shared), _copies(heads)
    chain = UpdateChain(ConFIG(), Adam(lr=1e-2), GUA())
    ours = MultiTaskOptimizer(chain, shared, heads, tasks=M)
    flat = lambda ts: torch.cat([t.detach().reshape(-1) for t in ts])  # noqa: E731
    state = chain.init(flat(ref_shared), [t.shape for t in ref_shared], M)
    heads_state = chain.optimizer.init(flat(ref_heads), [t.shape for t in ref_heads])
    p_s = sum(t.numel() for t in ref_shared)
    for _ in range(3):
        step = ours.step(lambda: _losses(shared, heads, x, y))
        G_all = loss_gradients(_losses(ref_shared, ref_heads, x, y), ref_shared + ref_heads)  # [M, p_s + p_h]
        expected = chain.update(G_all[:, :p_s], flat(ref_shared), state)
        u_heads, heads_state = chain.optimizer.propose(G_all[:, p_s:].sum(dim=0), heads_state,
                                                       params=flat(ref_heads))
        state = expected.state
        with torch.no_grad():
            for tensors, update in ((ref_shared, expected.p), (ref_heads, u_heads)):
                for t, piece in zip(tensors, update.split([t.numel() for t in tensors])):
                    t -= 1e-2 * piece.view_as(t)
        torch.testing.assert_close(step.G, G_all[:, :p_s], rtol=0, atol=1e-12)
        torch.testing.assert_close(step.p, expected.p, rtol=0, atol=1e-12)
        for a, b in zip(shared + heads, ref_shared + ref_heads):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    assert ours.aligned and step.losses.shape == (M,)


def test_multitask_gradients_split_rows_and_sum_heads():
    shared, heads, x, y = _problem(seed=2)
    G, g_heads = multitask_gradients(_losses(shared, heads, x, y), shared, heads)  # [M, p_s], [p_h]
    assert G.shape == (M, sum(t.numel() for t in shared)) and g_heads.shape == (sum(t.numel() for t in heads),)
    total = sum(_losses(shared, heads, x, y))
    grads = torch.autograd.grad(total, shared + heads)
    torch.testing.assert_close(G.sum(dim=0), torch.cat([g.reshape(-1) for g in grads[:4]]), rtol=0, atol=1e-12)
    torch.testing.assert_close(g_heads, torch.cat([g.reshape(-1) for g in grads[4:]]), rtol=0, atol=1e-12)


def test_refuses_what_it_cannot_run():
    shared, heads, x, y = _problem()
    with pytest.raises(ValueError, match="shared tensor"):
        MultiTaskOptimizer(UpdateChain(Sum(), Adam(), NoAlignment()), [], heads, tasks=M)
    with pytest.raises(ValueError, match="first-order"):
        MultiTaskOptimizer(UpdateChain(Sum(), SophiaG(), NoAlignment()), shared, heads, tasks=M)
    ours = MultiTaskOptimizer(UpdateChain(Sum(), Adam(), NoAlignment()), shared, heads, tasks=M + 1)
    with pytest.raises(ValueError, match="3 losses"):
        ours.step(lambda: _losses(shared, heads, x, y))


def test_fit_is_torch_adam_over_shuffled_minibatches_and_stops_when_asked():
    """`fit`: each epoch a permutation from the shuffle generator cut into batches (the last one short), one
    step each; oracle: torch.optim.Adam on the summed loss over the same batches, drawn by hand."""
    shared, heads, x, y = _problem(n=22)
    ref_shared, ref_heads = _copies(shared), _copies(heads)
    ours = MultiTaskOptimizer(UpdateChain(Sum(), Adam(lr=1e-2), NoAlignment()), shared, heads, tasks=M)
    seen, epochs_seen = [], []
    done = ours.fit(lambda xb, yb: _losses(shared, heads, xb, yb), x, y, epochs=3, batch_size=8,
                    shuffle=torch.Generator().manual_seed(5), after_step=lambda e, k, step: seen.append((e, k)),
                    after_epoch=epochs_seen.append)
    assert done == 3 and seen == [(e, k) for e in range(3) for k in range(3)] and epochs_seen == [0, 1, 2]
    adam, shuffle = torch.optim.Adam(ref_shared + ref_heads, lr=1e-2), torch.Generator().manual_seed(5)
    for _ in range(3):
        order = torch.randperm(22, generator=shuffle)
        for k in range(3):
            rows = order[8 * k: 8 * k + 8]
            adam.zero_grad()
            sum(_losses(ref_shared, ref_heads, x[rows], y[rows])).backward()
            adam.step()
    for a, b in zip(shared + heads, ref_shared + ref_heads):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    stopped = ours.fit(lambda xb, yb: _losses(shared, heads, xb, yb), x, y, epochs=3, batch_size=8,
                       shuffle=torch.Generator().manual_seed(5), after_step=lambda e, k, step: not (e == 1 and k == 0))
    assert stopped == 1
