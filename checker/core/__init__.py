"""The search core: the level driver, the parts a search is made of, the rules of a level, the keys
of the breadth-first order, traces, results.
"""
