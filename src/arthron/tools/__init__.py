"""OpenSim's setup-driven tools over arthron's solvers: read a setup file, resolve its files,
call the solvers, write the results under OpenSim's names into the setup's results directory.
"""
