"""Test helpers for users' own suites.

``runtime.testing.strategies`` holds Hypothesis strategies for dtypes and
tensors; it imports ``hypothesis`` (a test extra), so import it from tests
only. This package itself imports nothing, and ``import runtime`` does not
import it.
"""
