"""The eight built-in promotion policies, registered on import."""

from runtime.core.policies.jax_policy import JaxPolicy, JaxStrictPolicy
from runtime.core.policies.kael_policy import KaelPolicy
from runtime.core.policies.neuron_policy import NeuronPolicy
from runtime.core.policies.numpy_policy import NumpyPolicy
from runtime.core.policies.simple_policies import StrictPolicy, TenferroPolicy
from runtime.core.policies.torch_policy import TorchPolicy
from runtime.core.promotion import register_policy

for _policy in (
    JaxPolicy(),
    JaxStrictPolicy(),
    NumpyPolicy(),
    TorchPolicy(),
    NeuronPolicy(),
    TenferroPolicy(),
    StrictPolicy(),
    KaelPolicy(),
):
    register_policy(_policy)

__all__ = [
    "JaxPolicy",
    "JaxStrictPolicy",
    "KaelPolicy",
    "NeuronPolicy",
    "NumpyPolicy",
    "StrictPolicy",
    "TenferroPolicy",
    "TorchPolicy",
]
