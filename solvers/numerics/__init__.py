"""Shared numerical pieces: Gaussian/Hermite quadrature, kernels, free convolution."""
