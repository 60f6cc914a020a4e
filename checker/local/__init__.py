"""The local search on one machine: the rows search (and its worker processes), the per-state
engine, random simulation.
"""
