"""The bridge: export fitted models to artifacts, run them on the device, and the
``edgecode`` command line. Importing it registers the built-in kinds' bridge
specs (:mod:`export.kinds`, :mod:`export.registry`)."""

from . import kinds  # noqa: F401  (registers the built-in kinds' bridge specs)
