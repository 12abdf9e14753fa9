"""HoGS's curator on a torch device: the posterior of the reported pairs, the (0,0) similarity
join and the feature reconstruction, for runs whose device is a GPU.

The numpy curator (:mod:`.hogs`) stays the CPU path; :meth:`HogsProtocol.server_step` hands
the work here only when the run's device is CUDA (``--device auto`` on a machine with a GPU,
or ``cuda``/``cuda:N``). Everything runs on any torch device, so the tests hold this path to
the numpy one on the CPU. What comes out:

- **Edges.** The same pairs. For 0/1 feature rows (the 1-bit mechanism's reports, binary
  public features) every dot product is an integer count, exact in float32 whatever the
  summation order, the norms are computed as the numpy path computes them and the posterior
  is the same sequence of IEEE float64 operations: the posteriors, and so the edge set, are
  bit-identical. For real-valued rows the reported pairs' dot products are float64 sums in
  another order than numpy's, so a posterior may differ in its last bits (relative 1e-15) and
  a pair within that distance of τ could fall on the other side; the (0,0) join's survivors
  are scored on the CPU exactly as the numpy path scores them.
- **Features.** Algorithm 3's weighted averages are float64 segment sums in CSR order
  (deterministic on every device, no atomics); numpy's are a sparse product whose summation
  order is its own, so the float32 features agree to within one float32 rounding (relative
  2^-23), not bit for bit: the release fingerprint may differ while the edges do not.

Only the server imports this module (lazily, from ``server_step``): the client's import path
stays free of torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from ldpgraph.protocols.torch_env import auto_device, resolve_device

from .hogs_torch_ops import (
    device_posterior,
    host_tensor,
    is_pair,
    join_threshold,
    pair_cosine,
    popcount,
    row_spans,
)
from .posterior import posterior
from .similarity import FeatureRows
from .similarity_lsh import LSH_RING, choose_join, lsh_join

#: How much below t the device's filter admits pairs (float32 rounding); every candidate is
#: verified with the exact cosine, as in :meth:`FeatureRows.block_candidates`.
JOIN_SLACK = 1e-5
#: Entries of one block of all-pairs products (rows × n): on a GPU 1 GiB of float32 (fewer,
#: larger products; the block and its filter take about three times that), elsewhere 128 MiB.
BLOCK_ENTRIES = {"cuda": 1 << 28}
BLOCK_ENTRIES_DEFAULT = 1 << 25
#: Entries (pairs × d) of one chunk of gathered feature rows.
GATHER_ENTRIES = 1 << 25
#: The verification margin of the numpy join (``s >= t - 1e-9``), kept identical.
_VERIFY = 1e-9


def curator_device(device: str) -> torch.device | None:
    """The torch device HoGS's curator computes on for a run's ``--device``: CUDA when asked
    for, or with ``auto`` on a machine that has a GPU; None for the CPU, whose numpy path is
    faster there than torch's.

    Raises:
        ValueError: ``cuda`` asked for on a machine where torch sees no GPU.
    """
    dev = resolve_device(auto_device(device))
    return None if dev.type == "cpu" else dev


class TorchCurator:
    """HoGS's reconstruction on one torch device (see the module docstring for what agrees
    with the numpy path and how closely).

    Args:
        device: any torch device ("cuda", "cuda:1", "cpu" for tests and comparisons).
        block_entries: entries of one block of all-pairs products in the (0,0) join (default:
            :data:`BLOCK_ENTRIES` for the device's type).
        gather_entries: entries of one chunk of gathered feature rows.
    """

    def __init__(
        self,
        device: str | torch.device,
        block_entries: int | None = None,
        gather_entries: int = GATHER_ENTRIES,
    ) -> None:
        self.device = torch.device(device)
        if block_entries is None:
            block_entries = BLOCK_ENTRIES.get(self.device.type, BLOCK_ENTRIES_DEFAULT)
        self.block_entries = int(block_entries)
        self.gather_entries = int(gather_entries)

    @classmethod
    def for_run(cls, device: str) -> TorchCurator | None:
        """The curator for a run's ``--device`` (see :func:`curator_device`); None on the CPU."""
        dev = curator_device(device)
        return None if dev is None else cls(dev)

    # --- topology -------------------------------------------------------------------------

    def topology(
        self,
        reported: sp.csr_matrix,
        observed: np.ndarray,
        features: FeatureRows,
        x0: np.ndarray,
        p: float,
        threshold: float,
        mu: float = 1.0,
        join: str = "auto",
        seed: int = 0,
        ring: int = LSH_RING,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Every pair i < j with P_ij ≥ ``threshold``: ``(i, j, prob, stats)`` sorted by
        (i, j), as :func:`~ldpgraph.protocols.ldp.hogs.reconstruct_topology` returns them.

        Args:
            reported: R[i, j] = 1 iff node i reported bit j as 1.
            observed: the nodes whose adjacency report is present.
            features: the feature rows prepared on the CPU (exact cosines of candidates).
            x0: the same feature rows as an n × d array (copied to the device).
            p: the flip probability of the adjacency bits.
            threshold: the posterior threshold.
            mu: the probability a node kept each reported 1 (``hogs-arr``; 1 for HoGS).
            join: the (0,0) join, as the numpy path's (:func:`.similarity_lsh.choose_join`):
                where it is ``lsh`` the candidates are the LSH join's (on the CPU, the numpy
                path's own bands and seed), never the device's all-pairs blocks, whose work
                and memory grow as n² (10^7 rows overran a 139 GiB GPU).
            seed: the curator's seed for the LSH hashing (post-processing).
            ring: the LSH join's rows per row and band in over-full buckets.
        """
        n = reported.shape[0]
        dev = self.device
        observed = np.asarray(observed, dtype=bool)
        pi, pj, ones = self._reported_pairs(reported, n)
        obs_t = host_tensor(observed).to(dev)
        nobs = obs_t[pi].to(torch.int64) + obs_t[pj].to(torch.int64)
        zeros = nobs - ones

        norm = self._norms(x0, features.binary)
        t_join = join_threshold(threshold, observed, p, mu)
        method = "exact" if t_join is None else choose_join(features, t_join, join)
        if method == "lsh":
            assert t_join is not None
            dots = self._pair_dots(x0, features.binary, pi, pj)
            candidates = [lsh_join(features, t_join, seed, ring=ring)]
        else:
            dots, candidates = self._dots_and_candidates(x0, features, norm, pi, pj, t_join)
        s = pair_cosine(dots, norm, pi, pj)
        prob = device_posterior(s, ones, zeros, p, mu)
        keep = prob >= threshold
        kept_keys = (pi[keep] * n + pj[keep]).cpu().numpy()
        kept_prob = prob[keep].cpu().numpy()

        n_miss = n - int(observed.sum())
        if n_miss >= 2:
            missing = np.flatnonzero(~observed)
            mi, mj = FeatureRows(np.asarray(x0)[missing]).threshold_join(threshold)
            candidates.append((missing[mi], missing[mj]))
        key, kept, joined = _add_zero_pairs(
            n, pi * n + pj, (kept_keys, kept_prob), candidates, observed, features, p, threshold, mu
        )
        stats = {
            "reported_pairs": int(pi.numel()),
            "joined_pairs": int(joined),
            "kept_pairs": int(key.size),
            "curator_device": str(dev),
        }
        if method == "lsh":
            stats["join"] = "lsh"
        return key // n, key % n, kept, stats

    def _dots_and_candidates(
        self,
        x0: np.ndarray,
        features: FeatureRows,
        norm: torch.Tensor,
        pi: torch.Tensor,
        pj: torch.Tensor,
        t_join: float | None,
    ) -> tuple[torch.Tensor, list[tuple[np.ndarray, np.ndarray]]]:
        """The reported pairs' dot products, and the (0,0)/(0,1) join's candidate pairs: from
        the device's all-pairs blocks when the join runs there, else from the CPU's join."""
        on_device = t_join is not None and t_join <= 1.0
        if on_device and features.binary and not features.joins_blockwise(t_join):
            on_device = False  # identical rows or sparse rows: the CPU's sort/prefix join
        candidates: list[tuple[np.ndarray, np.ndarray]] = []
        if on_device:
            assert t_join is not None
            x = self._dense(x0, features.binary)
            dots, ci, cj = self._block_join(x, norm, pi, pj, max(float(t_join), 0.0))
            del x
            candidates.append(self._verify(features, ci, cj, max(float(t_join), 0.0)))
        else:
            dots = self._pair_dots(x0, features.binary, pi, pj)
            if t_join is not None:
                candidates.append(features.threshold_join(t_join))
        return dots, candidates

    def _reported_pairs(
        self, reported: sp.csr_matrix, n: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The pairs i < j with at least one reported 1, sorted by (i, j), and how many of the
        two bits are 1 (1 or 2)."""
        dev = self.device
        reported = reported.tocsr()
        indptr = host_tensor(np.asarray(reported.indptr, dtype=np.int64)).to(dev)
        cols = host_tensor(reported.indices).to(dev).to(torch.int64)
        rows = torch.repeat_interleave(torch.arange(n, device=dev), indptr.diff())
        off = rows != cols
        rows, cols = rows[off], cols[off]
        keys = torch.minimum(rows, cols) * n + torch.maximum(rows, cols)
        del rows, cols, off
        pairs, ones = torch.unique(keys, sorted=True, return_counts=True)
        return pairs // n, pairs % n, ones.to(torch.int64)

    def _norms(self, x0: np.ndarray, binary: bool) -> torch.Tensor:
        """The rows' norms, computed as :class:`FeatureRows` computes them (so the cosines of
        0/1 rows are the numpy path's to the bit)."""
        if binary:
            counts = np.asarray(x0, dtype=np.uint8).sum(axis=1, dtype=np.int64)
            norm = np.sqrt(counts.astype(np.float64))
        else:
            xd = np.asarray(x0, dtype=np.float64)
            norm = np.sqrt(np.einsum("ij,ij->i", xd, xd))
        return host_tensor(norm).to(self.device)

    def _dense(self, x0: np.ndarray, binary: bool) -> torch.Tensor:
        """The rows on the device for all-pairs products: 0/1 rows as float32 (their dot
        products are integer counts, exact in float32), real rows as float64."""
        if binary:
            return host_tensor(np.asarray(x0, dtype=np.uint8)).to(self.device).to(torch.float32)
        return host_tensor(np.asarray(x0, dtype=np.float64)).to(self.device)

    def _pair_dots(
        self, x0: np.ndarray, binary: bool, pi: torch.Tensor, pj: torch.Tensor
    ) -> torch.Tensor:
        """Dot products of the rows of each pair (float64), in chunks of gathered rows: for
        0/1 rows the popcount of the AND of their packed 64-bit words (exact), for real rows
        float64 products."""
        if binary:
            packed = np.packbits(np.asarray(x0, dtype=np.uint8), axis=1)
            pad = (-packed.shape[1]) % 8
            if pad:
                packed = np.pad(packed, ((0, 0), (0, pad)))
            x = host_tensor(np.ascontiguousarray(packed).view(np.int64)).to(self.device)
        else:
            x = self._dense(x0, binary)
        out = torch.empty(pi.numel(), dtype=torch.float64, device=self.device)
        step = max(1, self.gather_entries // max(x.shape[1], 1))
        for lo in range(0, pi.numel(), step):
            a, b = pi[lo : lo + step], pj[lo : lo + step]
            if binary:
                dots = popcount(x[a] & x[b])
            else:
                dots = (x[a] * x[b]).sum(dim=1)
            out[lo : lo + a.numel()] = dots.to(torch.float64)
        return out

    def _block_join(
        self, x: torch.Tensor, norm: torch.Tensor, pi: torch.Tensor, pj: torch.Tensor, t: float
    ) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
        """The products ``x[a:b] @ x[a:].T`` block by block: from them the reported pairs'
        dot products, and the pairs i < j whose cosine may reach ``t`` (a superset, loosened
        by :data:`JOIN_SLACK`; all-zero rows never qualify)."""
        n = x.shape[0]
        rows = max(1, min(n, self.block_entries // max(n, 1)))
        dots = torch.empty(pi.numel(), dtype=torch.float64, device=self.device)
        bounds = torch.searchsorted(pi, torch.arange(0, n + rows, rows, device=self.device))
        bounds = bounds.cpu().tolist()
        ok = norm > 0
        inv = torch.where(ok, 1.0 / torch.where(ok, norm, 1.0), 0.0).to(x.dtype)
        bound = torch.where(ok, (t - JOIN_SLACK) * norm, torch.inf).to(x.dtype)
        found_i: list[torch.Tensor] = []
        found_j: list[torch.Tensor] = []
        for k, a in enumerate(range(0, n, rows)):
            block = x[a : a + rows] @ x[a:].T
            lo, hi = bounds[k], bounds[k + 1]
            if hi > lo:
                dots[lo:hi] = block[pi[lo:hi] - a, pj[lo:hi] - a].to(torch.float64)
            hits = (block * inv[a : a + rows, None]) >= bound[None, a:]
            r, c = torch.triu(hits, diagonal=1).nonzero(as_tuple=True)
            found_i.append(r + a)
            found_j.append(c + a)
            del block, hits
        ci = torch.cat(found_i).cpu().numpy() if found_i else np.zeros(0, np.int64)
        cj = torch.cat(found_j).cpu().numpy() if found_j else np.zeros(0, np.int64)
        return dots, ci, cj

    @staticmethod
    def _verify(
        features: FeatureRows, ci: np.ndarray, cj: np.ndarray, t: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """The candidates whose exact cosine (the numpy path's) reaches ``t`` (less 1e-9)."""
        if ci.size == 0:
            return ci, cj
        keep = features.cosine(ci, cj) >= t - _VERIFY
        return ci[keep], cj[keep]

    # --- features -------------------------------------------------------------------------

    def features(
        self,
        x0: np.ndarray,
        i: np.ndarray,
        j: np.ndarray,
        prob: np.ndarray,
        steps: int,
        select: float,
    ) -> np.ndarray:
        """Algorithm 3, ``steps`` times: X_i ← Σ_{j∈V_i} P_ij X_j / Σ_{j∈V_i} P_ij over
        V_i = {j : P_ij ≥ ``select``}; a node with empty V_i keeps its row. float64 inside,
        float32 out, as :func:`~ldpgraph.protocols.ldp.hogs.reconstruct_features`."""
        if steps <= 0:
            return np.asarray(x0, dtype=np.float64).astype(np.float32)
        dev = self.device
        n = int(np.asarray(x0).shape[0])
        sel = np.asarray(prob) >= select
        pi = torch.from_numpy(np.asarray(i, dtype=np.int64)[sel]).to(dev)
        pj = torch.from_numpy(np.asarray(j, dtype=np.int64)[sel]).to(dev)
        pw = torch.from_numpy(np.asarray(prob, dtype=np.float64)[sel]).to(dev)
        rows = torch.cat([pi, pj])
        cols = torch.cat([pj, pi])
        vals = torch.cat([pw, pw])
        order = torch.argsort(rows * n + cols)
        cols, vals = cols[order], vals[order]
        counts = torch.bincount(rows, minlength=n)
        indptr = torch.zeros(n + 1, dtype=torch.int64, device=dev)
        torch.cumsum(counts, 0, out=indptr[1:])
        del rows, order, pi, pj, pw
        total = torch.segment_reduce(vals, "sum", offsets=indptr, initial=0.0)
        has = counts > 0
        denom = torch.where(has, total, 1.0)[:, None]
        x = host_tensor(np.asarray(x0)).to(dev).to(torch.float64)
        ends = indptr.cpu().numpy()
        spans = row_spans(ends, max(1, self.gather_entries // max(x.shape[1], 1)))
        for _ in range(steps):
            agg = torch.empty_like(x)
            for r0, r1 in spans:
                e0, e1 = int(ends[r0]), int(ends[r1])
                part = x[cols[e0:e1]] * vals[e0:e1, None]
                agg[r0:r1] = torch.segment_reduce(
                    part, "sum", offsets=indptr[r0 : r1 + 1] - e0, axis=0, initial=0.0
                )
            x = torch.where(has[:, None], agg / denom, x)
        return x.to(torch.float32).cpu().numpy()


def _add_zero_pairs(
    n: int,
    pair_keys: torch.Tensor,
    reported: tuple[np.ndarray, np.ndarray],
    candidates: list[tuple[np.ndarray, np.ndarray]],
    observed: np.ndarray,
    features: FeatureRows,
    p: float,
    threshold: float,
    mu: float,
) -> tuple[np.ndarray, np.ndarray, int]:
    """The kept pairs' keys (i·n + j, ascending) and posteriors: the reported pairs kept on the
    device, plus the joined candidates with no reported 1 that are not reported pairs, scored
    on the CPU exactly as the numpy path scores them; and how many candidates were joined."""
    keys = [reported[0]]
    probs = [reported[1]]
    joined = 0
    for ci, cj in candidates:
        joined += ci.size
        fresh = ~is_pair(pair_keys, ci * n + cj)  # pair_keys ascending, as torch.unique gave them
        ci, cj = ci[fresh], cj[fresh]
        zero_bits = observed[ci].astype(np.int64) + observed[cj]
        cp = posterior(features.cosine(ci, cj), np.zeros_like(zero_bits), zero_bits, p, mu)
        ok = cp >= threshold
        keys.append(ci[ok] * n + cj[ok])
        probs.append(cp[ok])
    key, first = np.unique(np.concatenate(keys), return_index=True)
    return key, np.concatenate(probs)[first], joined
