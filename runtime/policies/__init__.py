"""The eight built-in promotion policies, registered on import."""

from runtime.policies.jax_policy import JaxPolicy, JaxStrictPolicy
from runtime.policies.kael_policy import KaelPolicy
from runtime.policies.neuron_policy import NeuronPolicy
from runtime.policies.numpy_policy import NumpyPolicy
from runtime.policies.simple_policies import StrictPolicy, TenferroPolicy
from runtime.policies.torch_policy import TorchPolicy
from runtime.promotion import register_policy

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
