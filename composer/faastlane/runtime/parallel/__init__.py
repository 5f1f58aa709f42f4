"""Parallel branches and Map iterations beyond one thread: warm pre-forked workers,
spilling to other containers (its wire protocol, cost policy and server side),
the platforms' invokers, the object store and SigV4.
"""
