"""LDPGen's privacy report (Qin et al., CCS'17, §4: discrete Laplace on each round's degree
vector, L1 sensitivity 1 per adjacency bit; plus HoGS's 1-bit features for ``fp-ldpgen``): the
report lines of each round and the composed (ε1 + ε2 [+ ε_f]) report of :mod:`.ldpgen`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..accounting import ACCOUNTANT, unit_summary
from ..laplace import composed_epsilon, discrete_laplace_part
from ..types import PrivacyReport

if TYPE_CHECKING:
    from .ldpgen import LdpGenProtocol


def round_parts(
    proto: LdpGenProtocol, round_: int, num_features: int | None = None
) -> list[dict[str, Any]]:
    """The privacy-report lines of one round (each carries ``round``)."""
    unit = "one adjacency bit (edge LDP): moves one entry of the degree vector by 1"
    if round_ == 0:
        parts = [discrete_laplace_part("degree-vector-0", unit, proto.eps1)]
        parts[0]["entries"] = int(proto.params.k0)
        parts += proto.feature_parts(num_features)
    elif round_ == 1:
        parts = [discrete_laplace_part("degree-vector-1", unit, proto.eps2)]
    else:
        raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")
    for part in parts:
        part["round"] = round_
    return parts


def privacy_report(proto: LdpGenProtocol, num_features: int | None = None) -> PrivacyReport:
    """Discrete Laplace at ε1 and ε2 on the two degree vectors (L1 sensitivity 1 per
    adjacency bit), plus the 1-bit features at ε_f in round 0 when private."""
    eps1, eps2 = proto.eps1, proto.eps2
    parts = round_parts(proto, 0, num_features) + round_parts(proto, 1, num_features)
    rr = [] if proto.public_features else [proto.eps_features]
    notes = [
        f"ε1 = {eps1:g} (round 0) and ε2 = {eps2:g} (round 1) protect one adjacency bit: "
        "it changes one entry of each degree vector by 1 (L1 sensitivity 1), and each entry "
        "gets discrete Laplace noise at ε_r; the two rounds compose to ε1 + ε2.",
        "An edge {u, v} is counted in both endpoints' degree vectors (u's entry for v's "
        f"group and v's for u's), in both rounds: it is 2(ε1 + ε2) = "
        f"{2 * (eps1 + eps2):g}-DP for that edge (edge LDP is per row, as in the papers).",
        "Clustering, k1 and the graph generator are post-processing of the reports; tuning "
        "what nodes report (k0, phase_share, feature_share or ε) collects fresh reports per "
        "configuration, and a node spends the sum over the collections used.",
        proto.feature_note(num_features),
    ]
    headline, unit_eps = unit_summary(
        adjacency_label="ε1 + ε2",
        counts=[eps1, eps2],
        adjacency_detail="one entry of each round's degree vector",
        edge_detail="both endpoints' degree vectors count it, in both rounds",
        feature_bit=None if proto.public_features else proto.eps_features,
        num_features=num_features,
    )
    return proto.report(
        epsilon=composed_epsilon(rr, [eps1, eps2]),
        accountant=ACCOUNTANT + " with the discrete Laplace PLD of protocols.laplace",
        parts=parts,
        notes=notes,
        headline=headline,
        unit_epsilons=unit_eps,
    )
