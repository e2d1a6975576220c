"""Names the argument parser offers as choices, without importing the
libraries that define them (scikit-learn, numba, onnxruntime): ``edgecode
--help`` and argument errors answer at once. ``tests/test_cli_usability.py``
checks every tuple against its registry."""

#: ``edgecode.ecoc.DESIGNS``
DESIGNS = ("one_vs_all", "one_vs_one", "exhaustive", "dense_random", "sparse_random",
           "hadamard", "nary", "nary_random", "bch", "annealed")
#: ``sorted(firmware_sim.faults.FAULTS)`` (the built-in fault models)
FAULTS = ("bsc", "burst", "seu", "stuck")
#: ``sorted(export.firmware.TARGETS)``
TARGETS = ("atmega2560", "atmega328p", "cortex-m0plus", "cortex-m3", "cortex-m4", "host",
           "rv32imac")
#: ``edgecode.datasets.NAMES`` (bundled binary datasets of ``plan``)
BINARY_DATASETS = ("house_votes", "nltcs", "dna")
