"""The multibody core: the model compiled into a tree, kinematics, dynamics, constraints and
muscle/ligament paths, as functions of the compiled tree and arrays (frames the leading axis).

Imports only :mod:`arthron.models`, :mod:`arthron.geometry` and :mod:`arthron.errors`; never
:mod:`arthron.io`, lxml or matplotlib.
"""
