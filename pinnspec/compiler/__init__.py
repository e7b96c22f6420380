"""The problem IR -> torch: derivative plan, residual kernels, point sets, losses, references.

Every stage stays inspectable (``pinnspec show --stage ast|ir|plan|kernel``).
"""

from ._codegen import Kernel, KernelInput, generate_kernel
from ._derivatives import DerivativePlan, LinearOperator
from ._verify import format_checks, verify
from ._problem import CompiledProblem
from ._values import AdaptiveHistory, Losses, Points, TorchPointSet, added_up, host_to_device

__all__ = ["compile_spec", "CompiledProblem", "DerivativePlan", "Kernel", "KernelInput", "LinearOperator", "Losses",
           "Points", "TorchPointSet", "generate_kernel", "AdaptiveHistory", "added_up", "host_to_device", "verify",
           "format_checks"]


def compile_spec(problem, grouping: str | None = None) -> CompiledProblem:
    """Compile a checked problem: its IR (``ir.Problem``) or a checked spec holding it (``pinnspec.load(...)``);
    ``grouping``: only the conditions that grouping trains (`CompiledProblem`).  A path to a .pinn file:
    ``pinnspec.compile``."""
    return CompiledProblem(problem, grouping=grouping)
