"""OpenSim 4.5+'s multi-argument ``MultivariatePolynomialFunction`` (the length functions of a
``FunctionBasedPath``), evaluated and differentiated over (..., dimension) arrays; the
one-argument functions are in :mod:`arthron.models.functions`."""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedFeature
from .functions import Function, _as_x, _check_order

__all__ = ["MultivariatePolynomialFunction"]


class MultivariatePolynomialFunction(Function):
    """OpenSim 4.5+ ``MultivariatePolynomialFunction``: ``Σ_k c_k Π_j x_j^e_kj`` over every
    exponent tuple ``e_k`` of ``dimension`` non-negative integers with sum ≤ ``order``.

    Coefficient order (OpenSim's): the exponent tuples in lexicographic order, the first
    argument's exponent varying slowest and the last argument's fastest, so that for two
    arguments ``(x, y)`` and order 2 the terms are ``1, y, y², x, xy, x²``. There are
    ``C(dimension + order, order)`` coefficients.

    Parameters
    ----------
    coefficients : (n_terms,) array
    dimension : int       number of arguments (≥ 1)
    order : int           largest sum of exponents of a term (≥ 0)

    Raises
    ------
    ValueError when the number of coefficients is not ``C(dimension + order, order)`` (OpenSim
    refuses such a function when the model is built).

    Evaluation: :meth:`values` and :meth:`gradient` take ``x`` of shape (..., dimension) (e.g.
    frames × arguments); OpenSim's ``calcValue`` / ``calcDerivative`` (first derivatives only,
    as in OpenSim: its ``getMaxDerivativeOrder`` is 1). With ``dimension == 1`` the one-argument
    :class:`Function` interface (``value``, ``derivative`` up to order 2) works too.
    """

    xml_tag = "MultivariatePolynomialFunction"

    def __init__(self, coefficients, dimension: int, order: int, name: str | None = None):
        super().__init__(name)
        self.coefficients = np.asarray(coefficients, float).ravel()
        self.dimension = int(dimension)
        self.order = int(order)
        if self.dimension < 1 or self.order < 0:
            raise ValueError(f"MultivariatePolynomialFunction: dimension {dimension} and order "
                             f"{order} must be >= 1 and >= 0")
        self.exponents = self._exponents(self.dimension, self.order)        # (n_terms, d)
        if self.coefficients.size != len(self.exponents):
            raise ValueError(f"MultivariatePolynomialFunction of dimension {self.dimension} and "
                             f"order {self.order} needs {len(self.exponents)} coefficients, "
                             f"found {self.coefficients.size}")

    @staticmethod
    def _exponents(d: int, order: int) -> np.ndarray:
        out = [()]
        for j in range(d):       # build tuples with the first argument's exponent outermost
            out = [t + (e,) for t in out for e in range(order - sum(t) + 1)]
        return np.array(out, int).reshape(-1, d)

    def _x(self, x) -> np.ndarray:
        x = _as_x(x)
        if x.ndim == 0 or x.shape[-1] != self.dimension:
            raise ValueError(f"MultivariatePolynomialFunction of dimension {self.dimension}: "
                             f"arguments of shape {x.shape} (last axis must be {self.dimension})")
        return x

    def _powers(self, x, emax):
        """x_j^p for p = 0..emax: (..., d, emax+1) (integer powers by products)."""
        P = [np.ones_like(x)]
        for _ in range(emax):
            P.append(P[-1] * x)
        return np.stack(P, -1)

    def values(self, x) -> np.ndarray:
        """Value (...) at ``x`` (..., dimension)."""
        x = self._x(x)
        P = self._powers(x, self.order)                                      # (..., d, o+1)
        j = np.arange(self.dimension)
        terms = np.prod(P[..., j, self.exponents], axis=-1)                  # (..., n_terms)
        return terms @ self.coefficients

    def gradient(self, x) -> np.ndarray:
        """First partial derivatives (..., dimension) at ``x`` (..., dimension)."""
        x = self._x(x)
        P = self._powers(x, self.order)
        j = np.arange(self.dimension)
        out = np.empty(x.shape)
        for i in range(self.dimension):
            e = self.exponents.copy()
            ci = self.coefficients * e[:, i]
            e[:, i] = np.maximum(e[:, i] - 1, 0)
            out[..., i] = np.prod(P[..., j, e], axis=-1) @ ci
        return out

    # one-argument interface (dimension 1)
    def _one(self):
        if self.dimension != 1:
            raise UnsupportedFeature(f"MultivariatePolynomialFunction of dimension "
                                     f"{self.dimension} used as a function of one argument")

    def value(self, x):
        self._one()
        return self.values(_as_x(x)[..., None])

    def derivative(self, x, order=1):
        self._one()
        order = _check_order(order, "MultivariatePolynomialFunction")
        c = np.polynomial.polynomial.polyder(self.coefficients, order)
        return np.polynomial.polynomial.polyval(_as_x(x), c)

    @property
    def is_constant(self):
        return bool(np.all(self.coefficients[1:] == 0))
