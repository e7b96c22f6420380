"""The hand-written baseline of ``bench speed``: Burgers in plain torch, no pinnspec.

What a careful person would write by hand for specs/burgers.pinn, doing the
same work as pinnspec's epoch minus surgery and GUA:

* the same network: 2 -> width x depth tanh -> 1, Xavier-normal weights drawn
  layer by layer from ``torch.Generator().manual_seed(seed)``, zero biases
  (pinnspec's ``mlp(init = xavier)``, so the two start from the same weights);
* fresh points every epoch, drawn with plain numpy: a Latin hypercube of
  ``n_f`` interior points in [-1, 1] x [0, 1], ``n_b`` wall points split evenly
  over x = -1 and x = 1 (t a 1-D Latin hypercube), ``n_i`` initial points at
  t = 0 (x a 1-D Latin hypercube);
* the residual u_t + u u_x - (0.01/pi) u_xx from two ``torch.autograd.grad``
  calls with ``create_graph=True``; the losses mean(r^2), mean(u_b^2),
  mean((u_i + sin(pi x))^2) (grouping ``three``), or the first and one mean over
  the pooled wall + initial points (grouping ``two``);
* the m loss-specific gradients, one ``torch.autograd.grad`` per loss over the
  shared graph, and ``torch.optim.Adam`` stepping on their sum;
* the m loss values read back to Python (the logging a training loop does).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

NU = 0.01 / math.pi


class _NoClock:
    def mark(self, stage: str) -> None:
        pass


NO_CLOCK = _NoClock()


def latin_hypercube(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """[n, k] in [0, 1): one point in each of the n strata of every column."""
    strata = np.stack([rng.permutation(n) for _ in range(k)], axis=1)  # [n, k]
    return (strata + rng.random((n, k))) / n


class HandWrittenBurgers:
    def __init__(self, n_f: int = 10_000, n_b: int = 250, n_i: int = 250, *, grouping: str = "three",
                 width: int = 50, depth: int = 5, lr: float = 1e-3, seed: int = 0,
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32):
        if grouping not in ("two", "three"):
            raise ValueError(f"grouping must be 'two' or 'three', got {grouping!r}")
        self.n_f, self.n_b, self.n_i = n_f, n_b, n_i
        self.grouping = grouping
        self.device, self.dtype = torch.device(device), dtype
        sizes = [2] + [width] * depth + [1]
        layers: list[nn.Module] = []
        generator = torch.Generator().manual_seed(seed)
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            linear = nn.Linear(a, b, dtype=dtype)
            with torch.no_grad():
                nn.init.xavier_normal_(linear.weight, generator=generator)
                nn.init.zeros_(linear.bias)
            layers.append(linear)
            if i < depth:
                layers.append(nn.Tanh())
        self.net = nn.Sequential(*layers).to(self.device)
        self.params = list(self.net.parameters())
        self.optimizer = torch.optim.Adam(self.params, lr=lr, betas=(0.9, 0.999), eps=1e-8)
        self.rng = np.random.default_rng(seed)

    @property
    def num_params(self) -> int:
        return sum(p.numel() for p in self.params)

    def sample(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rng = self.rng
        interior = latin_hypercube(self.n_f, 2, rng)
        interior[:, 0] = 2 * interior[:, 0] - 1  # x in [-1, 1], t in [0, 1]
        left = self.n_b // 2 + self.n_b % 2
        walls = np.empty((self.n_b, 2))
        walls[:, 0] = np.where(np.arange(self.n_b) < left, -1.0, 1.0)
        walls[:, 1] = latin_hypercube(self.n_b, 1, rng)[:, 0]
        initial = np.zeros((self.n_i, 2))
        initial[:, 0] = 2 * latin_hypercube(self.n_i, 1, rng)[:, 0] - 1

        def tensor(a):
            return torch.as_tensor(a, dtype=self.dtype, device=self.device)

        return tensor(interior).requires_grad_(True), tensor(walls), tensor(initial)

    def losses(self, x_f: torch.Tensor, x_b: torch.Tensor, x_i: torch.Tensor, clock=NO_CLOCK) -> list[torch.Tensor]:
        """The m losses on interior (requires grad), wall and initial points."""
        u = self.net(x_f)  # [N, 1]
        clock.mark("network forward")
        du = torch.autograd.grad(u, x_f, torch.ones_like(u), create_graph=True)[0]  # [N, 2]: u_x, u_t
        u_x, u_t = du[:, 0:1], du[:, 1:2]
        u_xx = torch.autograd.grad(u_x, x_f, torch.ones_like(u_x), create_graph=True)[0][:, 0:1]
        clock.mark("input derivatives")
        residual = u_t + u * u_x - NU * u_xx
        loss_pde = residual.square().mean()
        clock.mark("residuals + losses")
        u_b = self.net(x_b)
        u_i = self.net(x_i)
        clock.mark("network forward")
        walls = u_b.square()
        initial = (u_i + torch.sin(math.pi * x_i[:, 0:1])).square()
        if self.grouping == "three":
            losses = [loss_pde, walls.mean(), initial.mean()]
        else:
            losses = [loss_pde, torch.cat([walls, initial]).mean()]
        clock.mark("residuals + losses")
        return losses

    def step(self, clock=NO_CLOCK) -> list[float]:
        """One epoch; returns the m loss values.  ``clock.mark(stage)`` after each stage (profiling)."""
        x_f, x_b, x_i = self.sample()
        clock.mark("sample points")
        losses = self.losses(x_f, x_b, x_i, clock)
        m = len(losses)
        grads = [torch.autograd.grad(loss, self.params, retain_graph=i < m - 1) for i, loss in enumerate(losses)]
        clock.mark("loss-specific gradients")
        for param, *g in zip(self.params, *grads):
            param.grad = torch.stack(g).sum(dim=0)
        self.optimizer.step()
        clock.mark("optimizer + apply")
        values = torch.stack(losses).detach().tolist()
        clock.mark("rest")
        return values
