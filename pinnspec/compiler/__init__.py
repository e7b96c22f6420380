"""Specs -> torch: derivative plan, residual kernels, point sets, losses, references.

Every stage stays inspectable (``pinnspec show --stage ast|ir|plan|kernel``).
"""

from ._codegen import Kernel, KernelInput, generate_kernel
from ._plan import DerivativePlan, LinearOperator
from ._problem import AdaptiveHistory, CompiledProblem, Losses, Points, TorchPointSet, host_to_device

__all__ = ["compile_spec", "CompiledProblem", "DerivativePlan", "Kernel", "KernelInput", "LinearOperator", "Losses",
           "Points", "TorchPointSet", "generate_kernel", "AdaptiveHistory", "host_to_device"]


def compile_spec(spec, grouping: str | None = None) -> CompiledProblem:
    """Compile a checked spec (``pinnspec.load(...)``) or a path to a .pinn file; ``grouping``: only the
    conditions that grouping trains (`CompiledProblem`)."""
    from ..lang import Spec, load

    if not isinstance(spec, Spec):
        spec = load(spec)
    return CompiledProblem(spec, grouping=grouping)
