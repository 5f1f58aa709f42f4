"""Keeping functions apart: protection-key domains and private heaps (cpython-mpk),
run-time hardening, the seccomp filter and the PKRU scanner, and the library
state made shared or per function so that private heaps hold.
"""
