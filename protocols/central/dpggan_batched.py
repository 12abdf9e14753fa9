"""The batched pieces of DPGGAN / DPGVAE's lanes (:mod:`.dpggan_lanes`): one Adam per lane
over stacked parameters, the stacking, and the generator and the discriminator g′ evaluated
for every lane at once (Yang et al., "Secure Deep Graph Generation with Link Differential
Privacy", IJCAI 2021, §3: the same layers as :mod:`.dpggan_model`, with a leading lane dim).

torch is imported inside functions (the registry lists these modules without importing torch).
"""

from __future__ import annotations

from typing import Any

BETA1, BETA2, ADAM_EPS = 0.9, 0.999, 1e-8


class _MaskedAdam:
    """Adam (torch's single-tensor formula, defaults β = (0.9, 0.999), eps = 1e-8) over
    stacked per-lane parameters, stepping only the lanes given: each lane is one independent
    optimiser with its own step count, as one ``torch.optim.Adam`` per graph would be."""

    def __init__(self, params: dict[str, Any], lr: float) -> None:
        import torch

        self.params, self.lr = params, lr
        lanes = next(iter(params.values())).shape[0]
        self.m = {k: torch.zeros_like(v) for k, v in params.items()}
        self.v = {k: torch.zeros_like(v) for k, v in params.items()}
        self.t = torch.zeros(lanes, dtype=torch.float64)

    def step(self, grads: dict[str, Any], lanes: Any | None = None) -> None:
        """One step of ``lanes`` (all when None) with ``grads`` (leading dim = those lanes)."""
        import torch

        with torch.no_grad():
            if lanes is None:
                self.t += 1
                t = self.t
            else:
                self.t[lanes] += 1
                t = self.t[lanes]
            bc1 = 1 - BETA1**t
            bc2_sqrt = (1 - BETA2**t).sqrt()
            step_size = self.lr / bc1
            for k, param in self.params.items():
                g = grads[k]
                shape = (-1, *([1] * (param.dim() - 1)))
                if lanes is None:
                    m, v, w = self.m[k], self.v[k], param.data
                else:
                    m = self.m[k].index_select(0, lanes)
                    v = self.v[k].index_select(0, lanes)
                    w = param.data.index_select(0, lanes)
                m.lerp_(g, 1 - BETA1)
                v.mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
                denom = v.sqrt().div_(bc2_sqrt.reshape(shape)).add_(ADAM_EPS)
                w.sub_(m.div(denom).mul_(step_size.reshape(shape)))
                if lanes is not None:
                    self.m[k].index_copy_(0, lanes, m)
                    self.v[k].index_copy_(0, lanes, v)
                    param.data.index_copy_(0, lanes, w)


def _stack(dicts: list[dict[str, Any]], rows: int | None = None) -> dict[str, Any]:
    """Per-lane parameter dicts stacked along a new lane dimension; tensors whose first
    dimension is a graph's node count (``rows`` given) are zero-padded to ``rows``."""
    import torch

    out = {}
    for k in dicts[0]:
        parts = []
        for d in dicts:
            v = d[k].to(torch.float64)
            if rows is not None and k == "w0" and v.shape[0] < rows:
                v = torch.cat([v, v.new_zeros(rows - v.shape[0], *v.shape[1:])])
            parts.append(v)
        out[k] = torch.stack(parts).requires_grad_(True)
    return out


def _batched_generator(z: Any, theta: dict[str, Any]) -> Any:
    """f(z) per lane and row: ``theta`` tensors with leading (lane, row) dims (per-node
    copies) or a leading lane dim only (shared within the lane)."""
    import torch

    if theta["w1"].dim() == 4:
        h = torch.relu(torch.einsum("lbij,lbj->lbi", theta["w1"], z) + theta["b1"])
        return torch.einsum("lbij,lbj->lbi", theta["w2"], h) + theta["b2"]
    h = torch.relu(torch.einsum("lij,lbj->lbi", theta["w1"], z) + theta["b1"][:, None])
    return torch.einsum("lij,lbj->lbi", theta["w2"], h) + theta["b2"][:, None]


def _disc_features(norm: Any, w0_rows: Any, w1: Any) -> Any:
    """g′ per lane: Σ_rows Â ReLU(Â X W′0) W′1 (padded rows are zero rows of X W′0)."""
    import torch

    return (norm @ torch.relu(norm @ w0_rows) @ w1).sum(-2)


def _disc_logit(r: Any, f: dict[str, Any]) -> Any:
    import torch

    h = torch.relu(torch.einsum("lij,lj->li", f["v1"], r) + f["c1"])
    return (torch.einsum("lij,lj->li", f["v2"], h) + f["c2"]).reshape(-1)
