"""``pinnspec tune SPEC --time T``: a small search over a recipe's open choices (network size, Adam's learning
rate, the Fourier scales) on Optuna, judged on held-out residuals, never on the reference; the winner as a
``.set`` file.  Importing this package loads neither torch nor optuna."""

from ._cli import main
from ._tune import Choice, TuneError, recipe_choice, recipe_spec, tune

__all__ = ["main", "tune", "Choice", "TuneError", "recipe_choice", "recipe_spec"]
