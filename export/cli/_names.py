"""Names the argument parser offers as choices, without importing the
libraries that define them (scikit-learn, numba, onnxruntime): ``edgecode
--help`` and argument errors answer at once.

Each tuple is generated from its registry (``python -m export.cli._names``
prints them) and ``tests/test_cli_usability.py`` checks every one against
it. :data:`FAULTS` is a :class:`RegistryChoices`: it lists the built-in
fault models without importing ``firmware_sim``, and accepts a fault model
registered at run time (``firmware_sim.faults.register_fault``) by asking
the registry for any name it does not list.
"""

import sys

__all__ = ["RegistryChoices", "FAULTS", "DESIGNS", "TARGETS", "BINARY_DATASETS"]


class RegistryChoices:
    """Choices of an argparse option backed by a registry (a dict at ``module.attr``).

    ``names`` are shown (help, errors) while the registry's module is not
    imported; once it is, its sorted keys are shown. A value not in ``names``
    is accepted if the registry (imported then) holds it.
    """

    def __init__(self, module, attr, names):
        self.module, self.attr, self.names = module, attr, tuple(names)

    def registry(self, load=False):
        mod = sys.modules.get(self.module)
        if mod is None and load:
            import importlib
            mod = importlib.import_module(self.module)
        return None if mod is None else getattr(mod, self.attr)

    def __iter__(self):
        reg = self.registry()
        return iter(self.names if reg is None else sorted(reg))

    def __contains__(self, value):
        return value in self.names or value in self.registry(load=True)

    def __len__(self):
        return len(tuple(iter(self)))

    def __repr__(self):
        return f"RegistryChoices({self.module}.{self.attr}: {', '.join(self)})"


#: ``sorted(firmware_sim.faults.FAULTS)`` (the built-in fault models, and any registered)
FAULTS = RegistryChoices("firmware_sim.faults", "FAULTS", ("bsc", "burst", "seu", "stuck"))
#: ``edgecode.ecoc.DESIGNS``
DESIGNS = ("one_vs_all", "one_vs_one", "exhaustive", "dense_random", "sparse_random",
           "hadamard", "nary", "nary_random", "bch", "annealed")
#: ``sorted(export.firmware.TARGETS)``
TARGETS = ("atmega2560", "atmega328p", "cortex-m0plus", "cortex-m3", "cortex-m4", "host",
           "rv32imac")
#: ``edgecode.datasets.NAMES`` (bundled binary datasets of ``plan``)
BINARY_DATASETS = ("house_votes", "nltcs", "dna")


def _generated():
    """The tuples as their registries give them (imports the libraries)."""
    from edgecode import datasets
    from edgecode.ecoc import DESIGNS as designs
    from export.firmware import TARGETS as targets
    from firmware_sim.faults import FAULTS as faults
    return {"FAULTS": tuple(sorted(faults)), "DESIGNS": tuple(designs),
            "TARGETS": tuple(sorted(targets)), "BINARY_DATASETS": tuple(datasets.NAMES)}


if __name__ == "__main__":
    for name, values in _generated().items():
        print(f"{name} = {values!r}")
