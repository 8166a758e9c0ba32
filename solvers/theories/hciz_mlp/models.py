"""Build the numerical model of a spec at a control value (α, Δ or γ swept).

A sweep in γ needs one matrix-denoising table per γ value (when μ2 ≠ 0); α and Δ sweeps reuse one.
Models are built per problem (they carry a memo of evaluated states); what pays across requests is
the denoiser of a (γ, readout), kept by an LRU on those two immutable values.
"""

from __future__ import annotations

from functools import lru_cache

from solvers.theories.hciz_mlp.deep import DeepModel
from solvers.theories.hciz_mlp.denoising import Denoiser
from solvers.theories.hciz_mlp.priors import channel
from solvers.theories.hciz_mlp.product_channel import ProductChannel
from solvers.theories.hciz_mlp.readouts import CONTINUOUS, DEFAULT_ATOMS, atoms
from solvers.theories.hciz_mlp.shallow import ShallowModel
from solvers.theories.hciz_mlp.spec import HCIZSpec
from solvers.theories.hciz_mlp.two_layer import TwoLayerModel

#: Largest number of atoms of a continuous readout law.
MAX_ATOMS = 200


def readout_atom_count(quadrature_order: int | None) -> int:
    """Atoms (in v ≥ 0) of a continuous readout law: SolverOptions.quadrature_order, capped."""
    return DEFAULT_ATOMS if quadrature_order is None else min(int(quadrature_order), MAX_ATOMS)


@lru_cache(maxsize=64)
def _denoiser(gamma: float, readout: str) -> Denoiser:
    return Denoiser(gamma, readout)


def shallow_model(spec: HCIZSpec, n_atoms: int, gamma: float | None = None, Delta: float | None = None) -> ShallowModel:
    """Depth-1 model of ``spec`` (γ, Δ overridden when swept)."""
    g = float(spec.gammas[0] if gamma is None else gamma)
    return ShallowModel(
        act=spec.activations[0],
        channel=channel(spec.weight_prior),
        readout=atoms(spec.readout, n_atoms),
        gamma=g,
        Delta=float(spec.Delta if Delta is None else Delta),
        denoiser=_denoiser(g, spec.readout),
    )


def deep_model(spec: HCIZSpec, n_atoms: int, gamma: float | None = None, Delta: float | None = None) -> DeepModel:
    """Reduced L-layer model of ``spec`` (all γ_l = γ when a scalar γ is swept)."""
    gammas = spec.gammas if gamma is None else [float(gamma)] * spec.depth
    return DeepModel(
        act=spec.activations[0],
        channel=channel(spec.weight_prior),
        readout=atoms(spec.readout, n_atoms),
        gammas=tuple(float(g) for g in gammas),
        Delta=float(spec.Delta if Delta is None else Delta),
    )


def product_channels(readout: str, n_atoms: int, gamma1: float, gamma2: float) -> tuple[ProductChannel, ...]:
    """The rectangular channel of each readout class: rows with the same v² (they see the same SNR) form one
    (γ2·P(v²)d) × d block; a continuous law's classes have vanishing mass, hence the iid Gaussian channel.
    One channel object per atom (the tables themselves are shared): each keeps its own warm start for the
    moment-matching inversion."""
    ro = atoms(readout, n_atoms)
    if readout in CONTINUOUS:
        return tuple(ProductChannel(float(gamma1), 0.0) for _ in ro.p)
    return tuple(ProductChannel(float(gamma1), float(gamma2 * p)) for p in ro.p)


def two_layer_model(spec: HCIZSpec, n_atoms: int, gamma: float | None = None,
                    Delta: float | None = None) -> TwoLayerModel:
    """Two-hidden-layer model of ``spec``; ``n_atoms`` sets the atoms of N(0, 1) for v₂ and of a continuous P_v."""
    if gamma is not None:
        raise ValueError("the two-hidden-layer model is not swept in gamma (one rectangular table per value)")
    act1, act2 = spec.activations
    g1, g2 = (float(g) for g in spec.gammas)
    return TwoLayerModel(
        act1=act1,
        act2=act2,
        channel=channel(spec.weight_prior),
        readout=atoms(spec.readout, n_atoms),
        hidden=atoms("gaussian", n_atoms),
        gamma1=g1,
        gamma2=g2,
        Delta=float(spec.Delta if Delta is None else Delta),
        products=product_channels(spec.readout, n_atoms, g1, g2),
        prefactors=spec.prefactors,
        quench=spec.quench,
    )

