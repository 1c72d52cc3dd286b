"""Bounds of a human subject's body mass and height, shared by every place that takes them
(the anthropometric tools' options, study files of ``arthron batch``).

The bounds lie beyond any human's (the heaviest and tallest recorded: 635 kg and 2.72 m): a
value outside is a typing slip (grams, millimetres) and is refused, never scaled into a model.
"""

__all__ = ["SUBJECT_MASS_KG", "SUBJECT_HEIGHT_M"]

#: (lowest, highest) body mass, kg
SUBJECT_MASS_KG = (1.0, 700.0)
#: (lowest, highest) body height, m
SUBJECT_HEIGHT_M = (0.3, 3.0)
