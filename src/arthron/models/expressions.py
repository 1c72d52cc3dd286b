"""OpenSim's (Lepton) expressions, as used by ExpressionBasedCoordinateForce and
ExpressionBasedPointToPointForce, as vectorized numpy callables."""
from __future__ import annotations

import numpy as np

__all__ = ["lepton_expression"]

_LEPTON_FUNCTIONS = {
    "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sec": lambda x: 1.0 / np.cos(x), "csc": lambda x: 1.0 / np.sin(x),
    "cot": lambda x: 1.0 / np.tan(x), "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "abs": np.abs, "floor": np.floor,
    "ceil": np.ceil, "square": np.square, "cube": lambda x: x ** 3, "recip": lambda x: 1.0 / x,
    "step": lambda x: np.where(np.asarray(x) >= 0, 1.0, 0.0),
    "min": np.minimum, "max": np.maximum, "atan2": np.arctan2,
    "select": lambda c, a, b: np.where(np.asarray(c) != 0, a, b),
}


def lepton_expression(text: str, variables):
    """A vectorized callable of an OpenSim (Lepton) expression such as ``-10*q - 0.5*qdot^3``.

    Parameters
    ----------
    text : the expression: numbers, the named ``variables``, ``+ - * / ^`` (power), parentheses
        and Lepton's functions (sqrt, exp, log, sin ... atan2, step, min, max, abs, square, cube,
        recip, select)
    variables : names of the arguments, in call order (e.g. ``("q", "qdot")``)

    Returns
    -------
    callable(*arrays) -> array, evaluated with numpy broadcasting.

    Raises
    ------
    ValueError naming the part of the expression that is not in that grammar.
    """
    import ast
    src = (text or "").strip().replace("^", "**")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        raise ValueError(f"expression {text!r} is not valid") from None
    ops = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide,
           ast.Pow: np.power}
    names = tuple(variables)

    def build(n):
        if isinstance(n, ast.Expression):
            return build(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            v = float(n.value)
            return lambda env: v
        if isinstance(n, ast.Name) and n.id in names:
            return lambda env, k=n.id: env[k]
        if isinstance(n, ast.BinOp) and type(n.op) in ops:
            f, a, b = ops[type(n.op)], build(n.left), build(n.right)
            return lambda env: f(a(env), b(env))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            a = build(n.operand)
            return (lambda env: -a(env)) if isinstance(n.op, ast.USub) else a
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _LEPTON_FUNCTIONS
                and not n.keywords):
            f, args = _LEPTON_FUNCTIONS[n.func.id], [build(x) for x in n.args]
            return lambda env: f(*(a(env) for a in args))
        raise ValueError(f"expression {text!r}: '{ast.unparse(n)}' is not in OpenSim's expression "
                         f"grammar (variables {', '.join(names)})")

    ev = build(tree)

    def call(*arrays):
        with np.errstate(all="ignore"):
            return ev(dict(zip(names, (np.asarray(x, float) for x in arrays)))) + 0.0 * arrays[0]
    return call
