"""The shared DP-SGD piece (protocols/central/dpsgd.py): torch.func per-example gradients equal a
plain per-example loop and are clipped to C; the released noisy sum has variance (σC)²; the
noise multiplier the accountant calibration returns is reproduced by independent closed forms
(RDP of one Gaussian step; the analytic Gaussian mechanism); bad targets are one-line errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS
from scipy import optimize, stats
from scipy.stats import norm

from ldpgraph.protocols.central import dpsgd
from ldpgraph.protocols.central.dpar import target_clipped_sum, target_loss
from ldpgraph.protocols.params import ProtocolParameterError


def _batch(b=7, k=3, d=5, h=4, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    params = {"w1": torch.randn(d, h, generator=g), "w2": torch.randn(h, c, generator=g)}
    x = torch.randn(b, k, d, generator=g) * 3
    w = torch.rand(b, k, generator=g)
    w[0, 1:] = 0.0  # a padded row
    y = torch.randint(0, c, (b,), generator=g)
    keep_in = (torch.rand(b, k, d, generator=g) > 0.1).float() / 0.9
    keep_h = (torch.rand(b, k, h, generator=g) > 0.1).float() / 0.9
    return params, (x, w, y, keep_in, keep_h)


def test_per_example_grads_equal_a_plain_loop_and_clip_to_c():
    params, batch = _batch()
    grads = dpsgd.per_example_grads(target_loss, params, batch)
    clip = 0.5
    clipped, norms = dpsgd.clip_per_example(grads, clip)
    for i in range(batch[0].shape[0]):
        leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
        loss = target_loss(leaves, *(t[i] for t in batch))
        loss.backward()
        flat = torch.cat([leaves[k].grad.flatten() for k in sorted(leaves)])
        for k in leaves:
            torch.testing.assert_close(grads[k][i], leaves[k].grad, rtol=1e-5, atol=1e-6)
        assert norms[i].item() == pytest.approx(flat.norm().item(), rel=1e-5)
        scale = min(1.0, clip / flat.norm().item())
        for k in leaves:
            torch.testing.assert_close(clipped[k][i], leaves[k].grad * scale, rtol=1e-5, atol=1e-7)
        total = math.sqrt(sum(clipped[k][i].pow(2).sum().item() for k in clipped))
        assert total <= clip * (1 + 1e-6)
    assert (norms > clip).any()  # the test exercises clipping
    unclipped, _ = dpsgd.clip_per_example(grads, math.inf)
    torch.testing.assert_close(unclipped["w1"], grads["w1"])


def test_noisy_sum_has_the_stated_variance():
    """Zero gradients: the released sum is pure noise, mean 0 and variance (σC)² within 99.9 %
    bands over 200k coordinates; the sum of nonzero gradients shifts the mean exactly."""
    sigma, clip = 1.7, 0.3
    g = torch.Generator().manual_seed(3)
    zeros = {
        "a": torch.zeros(4, 100_000, dtype=torch.float64),
        "b": torch.zeros(4, 10, 10_000, dtype=torch.float64),
    }
    out = dpsgd.noisy_sum(zeros, sigma * clip, g)
    noise = torch.cat([v.flatten() for v in out.values()]).numpy()
    k, std = noise.size, sigma * clip
    assert abs(noise.mean()) < 3.3 * std / math.sqrt(k)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], k - 1) / (k - 1)
    assert lo * std**2 <= noise.var(ddof=1) <= hi * std**2
    ones = {"a": torch.ones(5, 3, dtype=torch.float64)}
    assert torch.equal(
        dpsgd.noisy_sum(ones, 0.0, g)["a"], torch.full((3,), 5.0, dtype=torch.float64)
    )


def test_flat_noise_has_the_stated_variance_and_is_one_draw_split_in_order():
    """add_noise_flat: the noise of every coordinate N(0, std²) (99.9 % bands over 150k
    coordinates, float32 tensors too), and exactly one randn(total) of the generator split over
    the tensors in dict order (what the lanes of DPGGAN draw into their buffers)."""
    std = 0.7
    summed = {"a": torch.zeros(300, 250, dtype=torch.float64), "b": torch.zeros(75_000)}
    out = dpsgd.add_noise_flat(summed, std, torch.Generator().manual_seed(5))
    assert out["b"].dtype == torch.float32 and out["a"].shape == (300, 250)
    noise = torch.cat([v.double().flatten() for v in out.values()]).numpy()
    k = noise.size
    assert abs(noise.mean()) < 3.3 * std / math.sqrt(k)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], k - 1) / (k - 1)
    assert lo * std**2 <= noise.var(ddof=1) <= hi * std**2
    base = {"w": torch.ones(3, 2, dtype=torch.float64), "b": torch.ones(4, dtype=torch.float64)}
    got = dpsgd.add_noise_flat(base, 2.0, torch.Generator().manual_seed(9))
    draw = torch.randn(10, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    torch.testing.assert_close(got["w"], 1 + 2.0 * draw[:6].reshape(3, 2), rtol=0, atol=0)
    torch.testing.assert_close(got["b"], 1 + 2.0 * draw[6:], rtol=0, atol=0)
    assert dpsgd.add_noise_flat(base, 0.0, None)["w"] is base["w"]


def test_poisson_sample_rate():
    g = torch.Generator().manual_seed(0)
    counts = [dpsgd.poisson_sample(1000, 0.2, g, "cpu").numel() for _ in range(200)]
    assert abs(np.mean(counts) - 200) < 3.3 * math.sqrt(1000 * 0.2 * 0.8 / 200)


def _rdp_closed_form(z: float, steps: int, delta: float) -> float:
    """ε of ``steps`` Gaussian steps (no subsampling): RDP α·T/(2z²), converted with the
    improved bound ε = r + log((α−1)/α) − (log δ + log α)/(α − 1), minimised over the orders."""
    best = math.inf
    for a in DEFAULT_RDP_ORDERS:
        r = a * steps / (2 * z * z)
        best = min(best, r + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1))
    return best


@pytest.mark.parametrize("target,delta,steps", [(1.0, 1e-5, 1), (4.0, 1e-3, 10)])
def test_rdp_calibration_matches_the_closed_form(target, delta, steps):
    z = dpsgd.calibrate_noise_multiplier(target, delta, 1.0, steps, "rdp")
    assert _rdp_closed_form(z, steps, delta) == pytest.approx(target, abs=1e-4)
    assert _rdp_closed_form(z, steps, delta) <= target + 1e-9
    assert _rdp_closed_form(z * (1 - 1e-3), steps, delta) > target  # the smallest such z


def test_pld_calibration_matches_the_analytic_gaussian():
    """One unsubsampled step by PLD ≈ the exact (Balle–Wang) Gaussian mechanism, written here
    from its δ(ε) formula; PLD rounds pessimistically, so its z is at most 1 % larger."""
    eps, delta = 1.0, 1e-5

    def gap(z: float) -> float:
        return norm.cdf(1 / (2 * z) - eps * z) - math.exp(eps) * norm.cdf(-1 / (2 * z) - eps * z)

    exact = optimize.brentq(lambda z: gap(z) - delta, 0.1, 100)
    z = dpsgd.calibrate_noise_multiplier(eps, delta, 1.0, 1, "pld")
    assert exact <= z <= exact * 1.01


def test_subsampled_accounting_is_smaller_than_unsubsampled():
    full = dpsgd.sgd_epsilon(1.0, 1.0, 50, 1e-5)
    sub = dpsgd.sgd_epsilon(1.0, 0.1, 50, 1e-5)
    assert sub < full


def test_bad_targets_are_one_line_errors():
    with pytest.raises(ProtocolParameterError, match="unreachable"):
        dpsgd.calibrate_noise_multiplier(1e-4, 1e-5, 1.0, 10_000)
    with pytest.raises(ProtocolParameterError, match=r"δ in \(0, 1\)"):
        dpsgd.calibrate_noise_multiplier(1.0, 1.0, 0.5, 10)
    with pytest.raises(ProtocolParameterError, match="target ε > 0"):
        dpsgd.calibrate_noise_multiplier(0.0, 1e-5, 0.5, 10)


def test_training_is_seeded_and_learns():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 1, 4, generator=g)
    y = (x[:, 0, 0] > 0).long()
    w = torch.ones(200, 1)
    params = {"w1": torch.randn(4, 8, generator=g) * 0.3, "w2": torch.randn(8, 2, generator=g)}

    def batch(i):
        ones_in = torch.ones(i.numel(), 1, 4)
        ones_h = torch.ones(i.numel(), 1, 8)
        return x[i], w[i], y[i], ones_in, ones_h

    plan = dpsgd.DpSgdPlan(q=0.2, steps=60, clip=1.0, noise_multiplier=0.5, lr=0.05)
    a = dpsgd.train(target_loss, params, 200, batch, plan, torch.Generator().manual_seed(7))
    b = dpsgd.train(target_loss, params, 200, batch, plan, torch.Generator().manual_seed(7))
    assert all(torch.equal(a[k], b[k]) for k in a)
    from ldpgraph.protocols.central.dpar import mlp_logits

    acc = (mlp_logits(a, x[:, 0]).argmax(1) == y).float().mean().item()
    assert acc > 0.8


@pytest.mark.parametrize("clip", [0.5, 1e6, math.inf])
def test_dpar_closed_form_clipped_sum_equals_the_generic_one(clip):
    """DPAR's closed-form Σ_i ḡ_i (Gram-matrix norms, one matmul for W1) equals the vmap
    reference, norms included, with padded neighbours, dropout and clipping."""
    params, batch = _batch(b=9, k=3, d=6, h=5, c=4, seed=3)
    want, want_norms = dpsgd.generic_clipped_sum(target_loss, params, batch, clip)
    got, norms = target_clipped_sum(params, batch, clip)
    torch.testing.assert_close(norms, want_norms, rtol=1e-5, atol=1e-6)
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-5, atol=1e-5)
    if clip == 0.5:
        assert (norms > clip).any()
