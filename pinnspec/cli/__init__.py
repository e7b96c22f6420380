"""The ``pinnspec`` command line (also ``python -m pinnspec``).

Exit codes: 0 ok, 1 a user error (a rendered diagnostic, never a traceback),
2 an internal error.  Heavy modules (torch) load only in the commands that
need them: ``check`` and ``show --stage ast|ir`` never import torch.
"""

from ._main import main

__all__ = ["main"]
