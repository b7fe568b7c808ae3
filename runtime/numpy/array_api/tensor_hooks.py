"""The array API hooks on ``Tensor``: ``__array_namespace__`` (how array-api-compat and the
libraries that follow the standard find castwise's namespace) and ``to_device``, attached with
``runtime.core.tensor.attach_methods`` as the other layers attach theirs."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from runtime.core.tensor import Tensor, attach_methods
from runtime.numpy.array_api.common import ArrayAPIVersionError, DeviceError, check_device, standard_error

#: the versions of the standard ``__array_namespace__`` accepts: castwise implements 2024.12,
#: which holds every earlier version's functions with their meanings
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

#: the namespace module, set by ``runtime.numpy.array_api`` when it is imported (the package
#: imports this module, so this module cannot import the package without a cycle)
NAMESPACE: types.ModuleType | None = None


if TYPE_CHECKING:
    _Base = Tensor
else:
    _Base = object


class ArrayAPIMethods(_Base):
    """The methods ``attach_methods`` puts on ``Tensor`` (a holder, never instantiated)."""

    def __array_namespace__(self, /, *, api_version: str | None = None) -> types.ModuleType:
        """The array API namespace for castwise tensors, ``rt.array_api`` (standard 2024.12)."""
        if api_version is not None and api_version not in SUPPORTED_VERSIONS:
            raise standard_error(
                ArrayAPIVersionError, "__array_namespace__",
                f"api_version {api_version!r} is not one castwise implements ({', '.join(SUPPORTED_VERSIONS)})", self,
            )  # fmt: skip
        if NAMESPACE is None:  # pragma: no cover  (set when runtime.numpy.array_api is imported)
            raise standard_error(ArrayAPIVersionError, "__array_namespace__", "the namespace is not loaded", self)
        return NAMESPACE

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """``self`` on ``device``: castwise has one device, ``rt.cpu``, so the tensor itself
        (another device raises ``DeviceError``)."""
        check_device("to_device", device, self)
        if stream is not None:
            raise standard_error(DeviceError, "to_device", "castwise computes on the CPU, which has no streams", self)
        return self


attach_methods(ArrayAPIMethods)
