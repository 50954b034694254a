"""Devices meeting in one operation: the rules of Note [Mixing devices] and the error that
names both devices.

``dispatch.apply`` notices a mix (an input's array type is not the backend's) and asks
:func:`same_device` what to run the op on; a transform level's op gets its 0-d CPU
scalars moved first (:func:`scalars_to_device`).
"""

from __future__ import annotations

from .backend import _BACKEND_BY_TYPE, NUMPY, Device
from .tensor import Tensor, _new

__all__ = ["DeviceMismatchError", "same_device", "scalars_to_device"]

_NDARRAY = NUMPY.array_type


# Note [Mixing devices]
# ~~~~~~~~~~~~~~~~~~~~~
# The inputs of one op must be on one device. `dispatch.apply` notices a mix when an input's
# array type is not the backend's (one comparison, made anyway) and calls `same_device`,
# which either raises a DeviceMismatchError naming both devices, or, as PyTorch does, moves
# 0-d CPU inputs (0-d CPU tensors and NumPy 0-d arrays: scalars, such as those ops on Python
# numbers give inside formulas) to the device of the others, through the differentiable
# `to_device` op, so their gradient goes back to the CPU. Python scalars never count. A
# transform level computes and saves its op's inputs itself, so `apply` moves such scalars
# before handing the op to the level (`scalars_to_device`). A backend that
# `takes_host_arrays` takes NumPy inputs as they are: `dispatch._mixed` runs the op on it,
# which makes the NumPy arrays constants of its graph; their gradients come back as its
# arrays, which the engine computes at the end of the pass (Note [Deferred gradients] in
# core/accumulate.py). Such a backend with a GPU tensor is an error. The error names the
# function the user called: the op's qualified name, and a composite (ops/__init__.py)
# re-raises it under its own.
class DeviceMismatchError(RuntimeError):
    """Tensors of two devices met in one operation (Note [Mixing devices]);
    ``devices`` holds the two. A public function built of several ops re-raises it under its
    own name (ops/__init__.py), so the message names what the user called."""

    def __init__(self, name, a, b):
        super().__init__(
            f"{name}: expected all tensors to be on the same device, but found at least two "
            f"devices, {a} and {b}; move them with .to(device) (NumPy arrays count as cpu)")
        self.devices = (a, b)


def same_device(op, args):
    """``args`` with 0-d CPU inputs moved to the device of the others (Note [Mixing
    devices]); a DeviceMismatchError naming both devices when tensors of two devices meet."""
    target = None
    for a in args:
        d = a._data if type(a) is Tensor else a
        if type(d) in _BACKEND_BY_TYPE and not (type(d) is _NDARRAY and d.ndim == 0):
            dev = _BACKEND_BY_TYPE[type(d)].device_of(d)
            if target is None:
                target = dev
            elif dev != target:
                raise DeviceMismatchError(op.qualname, target, dev)
    if target is None:
        return args
    out = []
    for a in args:
        d = a._data if type(a) is Tensor else a
        if type(d) is _NDARRAY and target.type != "cpu":
            if d.ndim != 0:
                raise DeviceMismatchError(op.qualname, target, _CPU)
            a = (a if type(a) is Tensor else _new(d, False)).to_device(target)
        out.append(a)
    return out


_CPU = Device("cpu")


def scalars_to_device(op, args):
    """``args`` of a transform level's op with 0-d CPU values moved to the device of the
    others, before the level computes on them or saves them (Note [Mixing devices])."""
    nin = len(args) if op.nin < 0 else op.nin  # (a variadic op's are all inputs)
    host = [k for k, a in enumerate(args[:nin]) if _host_scalar(a)]
    if not host:
        return args
    target = next((a.device for a in args[:nin] if isinstance(a, Tensor) and
                   a.device.type != "cpu"), None)
    if target is None:
        return args
    args = list(args)
    for k in host:
        a = args[k]
        args[k] = (a if type(a) is Tensor else _new(a, False)).to_device(target)
    return tuple(args)


def _host_scalar(a):
    d = a._data if type(a) is Tensor else a
    return type(d) is _NDARRAY and d.ndim == 0
