"""DP-SGD, the piece central mechanisms share: per-example gradients (``torch.func``: vmap of
grad), per-example ℓ2 clipping, Gaussian noise on the clipped sum, Poisson subsampling, and the
accounting of the Poisson-subsampled Gaussian composed over the steps by dp-accounting (RDP by
default, PLD on request), with the noise multiplier calibrated to a target ε by a search through
that accountant (never by hand).

A model is a pure function ``loss(params, *example) -> scalar`` of a dict of tensors and one
example's tensors; :func:`per_example_grads` maps it over the batch, so the unit that is
clipped is whatever one example is (DPAR: one target node with its K neighbours' features, not
one neighbour row).

torch is imported here and in the central strategies only: the client's import path stays
torch-free (tests/test_registry.py, test_client_path_imports_only_the_protocols_it_runs).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from dp_accounting import NeighboringRelation, dp_event, mechanism_calibration, pld, rdp

from ..params import ProtocolParameterError
from ..progress import steps as progress_steps

ACCOUNTANTS = ("rdp", "pld")
#: The noise multipliers the calibration searches between.
Z_MIN, Z_MAX = 1e-3, 1e4

Params = dict[str, torch.Tensor]
Loss = Callable[..., torch.Tensor]
#: ``clipped_sum(params, batch, clip) -> (Σ_i ḡ_i per parameter, per-example norms)``: a
#: model's own closed form of the clipped per-example sum (see :func:`generic_clipped_sum`).
ClippedSum = Callable[[Params, tuple[torch.Tensor, ...], float], tuple[Params, torch.Tensor]]


@functools.lru_cache(maxsize=32)
def _vmapped_grad(loss: Loss, arity: int) -> Callable[..., Params]:
    """vmap(grad(loss)) built once per (loss, number of example tensors), not every step."""
    return torch.func.vmap(torch.func.grad(loss), in_dims=(None, *([0] * arity)))


def per_example_grads(loss: Loss, params: Params, batch: tuple[torch.Tensor, ...]) -> Params:
    """∇_θ loss(θ, example_i) for every example i of ``batch`` (each tensor's first
    dimension), as a dict of tensors with a leading batch dimension."""
    fn = _vmapped_grad(loss, len(batch))
    return fn({k: v.detach() for k, v in params.items()}, *batch)


def generic_clipped_sum(
    loss: Loss, params: Params, batch: tuple[torch.Tensor, ...], clip: float
) -> tuple[Params, torch.Tensor]:
    """Σ_i ḡ_i of any ``loss`` through materialised per-example gradients (vmap of grad), and
    the norms before clipping: the reference a model's closed form must equal."""
    clipped, norms = clip_per_example(per_example_grads(loss, params, batch), clip)
    return {k: g.sum(0) for k, g in clipped.items()}, norms


def clip_per_example(grads: Params, clip: float) -> tuple[Params, torch.Tensor]:
    """Each example's whole gradient (all parameters together) scaled to ℓ2 ≤ ``clip``
    (``g / max(1, ‖g‖/C)``); returns the clipped gradients and the norms before clipping."""
    first = next(iter(grads.values()))
    squares = torch.zeros(first.shape[0], dtype=first.dtype, device=first.device)
    for g in grads.values():
        squares = squares + g.reshape(g.shape[0], -1).pow(2).sum(1)
    norms = squares.sqrt()
    factor = 1.0 / torch.clamp(norms / clip, min=1.0) if math.isfinite(clip) else None
    if factor is None:
        return dict(grads), norms
    return {k: g * factor.reshape(-1, *([1] * (g.dim() - 1))) for k, g in grads.items()}, norms


def noisy_sum(clipped: Params, std: float, generator: torch.Generator | None) -> Params:
    """Σ_i ḡ_i + N(0, std²·I) per parameter tensor (std = σ·C; Abadi et al. 2016, Alg. 1)."""
    return add_noise({k: g.sum(0) for k, g in clipped.items()}, std, generator)


def add_noise(summed: Params, std: float, generator: torch.Generator | None) -> Params:
    """``summed`` + N(0, std²·I) per parameter tensor."""
    out: Params = {}
    for k, total in summed.items():
        if std > 0:
            noise = torch.randn(
                total.shape, generator=generator, dtype=total.dtype, device=total.device
            )
            total = total + std * noise
        out[k] = total
    return out


def add_noise_flat(summed: Params, std: float, generator: torch.Generator | None) -> Params:
    """``summed`` + N(0, std²·I): the same Gaussian as :func:`add_noise`, drawn as one vector
    over all parameters (concatenated in dict order, float64 draws cast to each tensor's
    dtype), so a caller that trains many models at once can draw each model's noise in one
    call into a row of a buffer and get exactly these numbers."""
    if std <= 0:
        return dict(summed)
    first = next(iter(summed.values()))
    total = sum(v.numel() for v in summed.values())
    noise = torch.randn(total, generator=generator, dtype=torch.float64, device=first.device)
    out: Params = {}
    start = 0
    for k, v in summed.items():
        part = noise[start : start + v.numel()].reshape(v.shape).to(v.dtype)
        out[k] = v + std * part
        start += v.numel()
    return out


def poisson_sample(n: int, q: float, generator: torch.Generator, device: str) -> torch.Tensor:
    """The indices of a Poisson sample: each of ``n`` rows independently with probability q
    (what the subsampled-Gaussian accountant assumes)."""
    keep = torch.rand(n, generator=generator, device=device) < q
    return torch.nonzero(keep, as_tuple=False).flatten()


# --- accounting ---------------------------------------------------------------------------


def sgd_event(noise_multiplier: float, q: float, steps: int) -> dp_event.DpEvent:
    """``steps`` compositions of the Poisson-subsampled (rate q) Gaussian of multiplier z."""
    step = dp_event.GaussianDpEvent(noise_multiplier)
    if q < 1.0:
        step = dp_event.PoissonSampledDpEvent(q, step)
    return dp_event.SelfComposedDpEvent(step, int(steps))


def _accountant(name: str):
    relation = NeighboringRelation.ADD_OR_REMOVE_ONE
    if name == "rdp":
        return rdp.RdpAccountant(neighboring_relation=relation)
    if name == "pld":
        return pld.PLDAccountant(neighboring_relation=relation)
    raise ValueError(f"unknown accountant {name!r}; one of {ACCOUNTANTS}")


@functools.lru_cache(maxsize=4096)
def sgd_epsilon(
    noise_multiplier: float, q: float, steps: int, delta: float, accountant: str = "rdp"
) -> float:
    """ε at ``delta`` of DP-SGD (add/remove one example) by the dp-accounting accountant.
    Cached: a pure function that step searches and sweeps (one plan per configuration) ask
    again and again, at ~0.1 s an RDP call."""
    acc = _accountant(accountant)
    acc.compose(sgd_event(noise_multiplier, q, steps))
    return float(acc.get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def calibrate_noise_multiplier(
    target_epsilon: float, delta: float, q: float, steps: int, accountant: str = "rdp"
) -> float:
    """The smallest noise multiplier z (to 1e-5) whose DP-SGD costs at most
    ``target_epsilon`` at ``delta``, searched through the accountant (dp-accounting's
    ``calibrate_dp_mechanism``). An ε below what z = Z_MAX reaches is a one-line error."""
    if not 0.0 < delta < 1.0:
        raise ProtocolParameterError(f"DP-SGD needs δ in (0, 1), got {delta!r}")
    if not (math.isfinite(target_epsilon) and target_epsilon > 0):
        raise ProtocolParameterError(f"DP-SGD needs a target ε > 0, got {target_epsilon!r}")
    if accountant == "pld":
        # PLD of a tiny multiplier has a huge loss range (memory): bracket it with the RDP
        # answer, which is never smaller than the tighter PLD one.
        hi = calibrate_noise_multiplier(target_epsilon, delta, q, steps, "rdp")
        while sgd_epsilon(hi, q, steps, delta, "pld") > target_epsilon:
            hi *= 1.1
        lo = hi / 2
        while lo > Z_MIN and sgd_epsilon(lo, q, steps, delta, "pld") <= target_epsilon:
            lo /= 2
        if lo <= Z_MIN:
            return Z_MIN
        return _calibrate(target_epsilon, delta, q, steps, "pld", lo, hi)
    at_max = sgd_epsilon(Z_MAX, q, steps, delta, accountant)
    if at_max > target_epsilon:
        raise ProtocolParameterError(
            f"target ε_sgd = {target_epsilon:.4g} is unreachable: even noise multiplier "
            f"{Z_MAX:g} costs ε = {at_max:.4g} (q = {q:.4g}, {steps} steps, δ = {delta:.3g})"
        )
    if sgd_epsilon(Z_MIN, q, steps, delta, accountant) <= target_epsilon:
        return Z_MIN
    return _calibrate(target_epsilon, delta, q, steps, accountant, Z_MIN, Z_MAX)


def _calibrate(
    target: float, delta: float, q: float, steps: int, accountant: str, lo: float, hi: float
) -> float:
    return float(
        mechanism_calibration.calibrate_dp_mechanism(
            lambda: _accountant(accountant),
            lambda z: sgd_event(z, q, steps),
            target,
            delta,
            mechanism_calibration.ExplicitBracketInterval(lo, hi),
            tol=1e-5,
        )
    )


# --- training -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DpSgdPlan:
    """One DP-SGD run: Poisson rate ``q`` over the rows, ``steps``, clip ``C``, noise
    multiplier ``z`` (noise std z·C on the clipped sum; ``z = 0`` and ``clip = inf``: plain
    SGD on the batch mean), the divisor of the noisy sum (the expected batch size q·rows)."""

    q: float
    steps: int
    clip: float
    noise_multiplier: float
    lr: float
    weight_decay: float = 0.0

    @property
    def private(self) -> bool:
        return self.noise_multiplier > 0 and math.isfinite(self.clip)


def train(
    loss: Loss,
    params: Params,
    rows: int,
    make_batch: Callable[[torch.Tensor], tuple[torch.Tensor, ...]],
    plan: DpSgdPlan,
    generator: torch.Generator,
    clipped_sum: ClippedSum | None = None,
    fused_adam: bool = False,
) -> Params:
    """DP-SGD with Adam (post-processing of the noisy gradients: privacy unaffected)
    over ``rows`` examples: each step draws a Poisson sample of row indices and
    ``make_batch(indices)`` returns the examples' tensors (first dimension: the example; it may
    draw per-step randomness such as dropout masks from ``generator``). ``clipped_sum``, when
    given, is the model's closed form of Σ_i ḡ_i (it must equal :func:`generic_clipped_sum`
    of ``loss``; it skips materialising B per-example gradients). ``fused_adam``: torch's
    one-kernel Adam (the same update up to float rounding; a step over DPAR's d×h weights
    is several times faster than the per-tensor loop). Returns the trained parameters."""
    if clipped_sum is None:
        clipped_sum = functools.partial(generic_clipped_sum, loss)
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    extra = {"fused": True} if fused_adam else {}
    opt = torch.optim.Adam(leaves.values(), lr=plan.lr, weight_decay=plan.weight_decay, **extra)
    device = str(next(iter(leaves.values())).device)
    expected = plan.q * rows
    std = plan.noise_multiplier * plan.clip if plan.private else 0.0
    for _ in progress_steps(range(plan.steps), "DP-SGD step", plan.steps):
        idx = poisson_sample(rows, plan.q, generator, device)
        if idx.numel() == 0:
            if not plan.private:
                continue
            # An empty private step still releases its noise.
            zeros = {k: torch.zeros((1, *v.shape), dtype=v.dtype, device=v.device)
                     for k, v in leaves.items()}  # fmt: skip
            summed = noisy_sum(zeros, std, generator)
        else:
            detached = {k: v.detach() for k, v in leaves.items()}
            total, _ = clipped_sum(detached, make_batch(idx), plan.clip)
            summed = add_noise(total, std, generator)
        divisor = expected if plan.private else float(idx.numel())
        for k, p in leaves.items():
            p.grad = (summed[k] / divisor).to(p.dtype)
        opt.step()
    return {k: v.detach() for k, v in leaves.items()}
