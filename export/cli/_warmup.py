"""Compile the numba kernels of ``edgecode demo``'s later stages ahead of time.

On an empty numba cache most of a first demo is compilation (about 40 of
50 s on the 2-core reference machine), one kernel after the other, while the
second core idles. ``edgecode demo`` therefore starts this module in a
background process: it runs tiny versions of stages 2-5 (coding matrices,
ECOC, SSBC and Hamming search, campaigns) so that their kernels are compiled
into the shared cache while the main process plans (stage 1); when the main
process reaches a stage, it loads the kernels instead of compiling them. The
results of the tiny runs are discarded. Nothing is started when the cache
already holds the kernels (:func:`cache_is_warm`), and the process is
stopped when the demo ends.

Run by hand: ``python -m export.cli._warmup``.
"""

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["cache_is_warm", "start", "warm_up"]


def _probes():
    """One kernel of each later stage: their cache index files tell warm from cold."""
    from edgecode.ecoc._kernels.codes import _random_search, _swap_climb
    from edgecode.hashing._kernels import _hamming_topk_tiled
    from firmware_sim._kernels.faults import _gilbert_elliott_masks
    return (_random_search, _swap_climb, _hamming_topk_tiled, _gilbert_elliott_masks)


def cache_is_warm():
    """Whether the numba cache already holds the later stages' kernels (any
    doubt counts as cold)."""
    try:
        return all(Path(k._cache._cache_file._index_path).exists() for k in _probes())
    except Exception:       # numba internals moved: assume cold, warming is harmless
        return False


def warm_up():
    """Tiny runs of demo stages 2-5 (their kernels, with the demo's types)."""
    import numpy as np
    from sklearn.datasets import load_digits

    from edgecode.ecoc import check_properties, make_code
    from export.cli.ecoc import run_ecoc
    from export.cli.hashing import run_hash
    from export.demo_campaign import compare_channels, house_votes_devices

    sink = io.StringIO()
    for design, opts, N, n in (("dense_random", {"n_draws": 2}, 2, None),
                               ("hadamard", {}, 2, 16), ("nary", {}, 3, 20),
                               ("nary_random", {"n_draws": 2}, 3, 20), ("bch", {"n_draws": 1}, 2, 31),
                               ("annealed", {"n_temps": 2}, 2, 34)):
        check_properties(make_code(design, 10, n, N=N, random_state=0, **opts))
    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16.0, y[:300]
    with tempfile.TemporaryDirectory() as tmp:
        for learner, code, N in (("tree", "nary", 3), ("linear_svm", "dense_random", 2)):
            res = run_ecoc((X, y, None, "warm-up"), code=code, N=N, n_columns=15,
                           learner=learner, trials=1, eps=(0.05,), stream=sink,
                           out=Path(tmp) / "e.edgc")
            from firmware_sim.campaign import run_campaign
            from firmware_sim.faults import ParameterUpset
            dev = res["export"].device
            arrays = ["lin_weights"] if dev.learner_kind == "linear" else ["tree_threshold"]
            run_campaign(dev, res["X_test"][:20], ParameterUpset(count=1, arrays=arrays),
                         n_trials=2, random_state=0)
        rows = ["class," + ",".join(f"x{j}" for j in range(64))]
        rows += [f"{t}," + ",".join(f"{v:g}" for v in x) for x, t in zip(X * 16, y)]
        csv = Path(tmp) / "d.csv"
        csv.write_text("\n".join(rows) + "\n")
        run_hash(str(csv), bits=32, anchors=64, sketch=48, out=Path(tmp) / "h.edgc",
                 stream=sink, quiet=True)
        from firmware_sim.ssbc import load_ssbc
        dev = load_ssbc(Path(tmp) / "h.edgc")
        dev.predict_noisy(X[:20] * 16, 0.01, 0.01, random_state=0)
    d, devices = house_votes_devices()
    compare_channels(d, devices, flip_rates=(0.1,), trials=2, seed=0)
    np.zeros(1)


def start():
    """Start :func:`warm_up` in a background process unless the cache is warm;
    returns the process (or None). Its output is discarded."""
    if os.environ.get("EDGECODE_NO_WARMUP") or cache_is_warm():
        return None
    try:
        return subprocess.Popen([sys.executable, "-m", "export.cli._warmup"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL)
    except OSError:
        return None


if __name__ == "__main__":
    warm_up()
