"""The bridge side of each model kind: one module per kind, each registering its
:class:`export.registry.KindSpec` (data rows for the command line, budget
configurations, screening bounds, fitting, closed-form analytics, plot
marker, an example fit for the kind-matrix tests).

Importing this package registers the built-in kinds; ``import export`` does
it, so the shared modules (:mod:`export.budget`, :mod:`export.analytics`,
the command line) find every kind in :mod:`export.registry`. A new kind is
one module here plus one import line below (``docs/architecture.md``).

The modules import only the standard library, numpy and ``export`` helpers
at load time (the libraries a kind trains or runs with are imported when a
hook runs), so ``edgecode --help`` stays fast.
"""

from . import naive_bayes, ecoc, ssbc  # noqa: F401  (each registers its spec)
from . import forest  # noqa: F401  (tree forests)

__all__ = ["naive_bayes", "ecoc", "ssbc"]
