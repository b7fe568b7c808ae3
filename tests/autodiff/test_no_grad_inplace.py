"""PyTorch's SGD idiom: ``with autodiff.no_grad(): w -= lr * w.grad`` writes into a leaf that
requires grad (allowed in PyTorch under ``no_grad``, which bumps the leaf's version counter), and
a recording that saved the old value then raises ``SavedValueModifiedError`` at backward, as
PyTorch's "one of the variables needed for gradient computation has been modified by an inplace
operation" does. Outside ``no_grad`` the write is refused with a message that names the fix."""

from __future__ import annotations

import numpy as np
import pytest

import autodiff
import runtime as rt
from runtime.core.inplace import InPlaceError, SavedValueModifiedError

A = np.array([1.0, 2.0, 0.5])
C = np.array([3.0, -1.0, 2.0])


def _loss(w: rt.Tensor) -> rt.Tensor:
    return (rt.asarray(A) * (w - rt.asarray(C)) ** 2).sum()


def _numpy_sgd(w: np.ndarray, lr: float, steps: int) -> np.ndarray:
    w = w.copy()
    for _ in range(steps):
        w -= lr * 2.0 * A * (w - C)  # d/dw sum(a (w - c)^2)
    return w


@pytest.mark.parametrize("policy", ["jax", "numpy", "torch"])
def test_three_sgd_steps_match_numpy(policy: str) -> None:
    w0 = np.array([0.0, 0.5, -1.0])
    lr = 0.1
    with rt.policy(policy):
        w = rt.asarray(w0.copy(), requires_grad=True)
        for _ in range(3):
            _loss(w).backward()
            assert w.grad is not None
            with autodiff.no_grad():
                w -= lr * w.grad
                w.grad.zero_()
        assert w.requires_grad  # still the same tracked leaf
        np.testing.assert_allclose(w.numpy(), _numpy_sgd(w0, lr, 3), rtol=1e-15)
        # the hand-computed first step: w1 = w0 - lr * 2a(w0 - c)
        np.testing.assert_allclose(_numpy_sgd(w0, lr, 1), [0.6, -0.1, -0.7], rtol=1e-15)


def test_all_the_inplace_writes_of_a_step_are_allowed_under_no_grad() -> None:
    w = rt.asarray([1.0, 2.0], requires_grad=True)
    with autodiff.no_grad():
        w *= 0.5
        w.add_(rt.asarray([1.0, 1.0]))
        w.zero_()
    assert w.tolist() == [0.0, 0.0] and w.requires_grad


def test_a_recording_made_before_the_write_raises_at_backward() -> None:
    w = rt.asarray([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()  # saves w for the derivative
    with autodiff.no_grad():
        w -= 0.1
    with pytest.raises(SavedValueModifiedError, match="modified in place"):
        y.backward()
    # a recording made after the write differentiates at the new value
    (w * w).sum().backward()
    assert w.grad is not None
    np.testing.assert_allclose(w.grad.numpy(), [1.8, 3.8])


def test_a_write_through_detach_is_allowed_and_detected() -> None:
    w = rt.asarray([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    d = w.detach()  # torch-style: shares w's memory, untracked
    d -= 1.0
    assert w.tolist() == [0.0, 1.0]
    with pytest.raises(SavedValueModifiedError):
        y.backward()


def test_outside_no_grad_the_error_names_the_fix() -> None:
    w = rt.asarray([1.0, 2.0], requires_grad=True)
    with rt.policy("torch"), pytest.raises(InPlaceError) as info:
        w -= 0.1
    message = str(info.value)
    for word in ("sub_", "float64[2]", "requires grad", "with autodiff.no_grad():", "policy 'torch'"):
        assert word in message, (word, message)
    assert isinstance(info.value, rt.CastwiseError)
    assert w.tolist() == [1.0, 2.0]


def test_enable_grad_inside_no_grad_refuses_again() -> None:
    w = rt.asarray([1.0, 2.0], requires_grad=True)
    with autodiff.no_grad(), autodiff.enable_grad(), pytest.raises(InPlaceError, match="no_grad"):
        w -= 0.1
