"""Issue 24, ``edgecode.scp``: long SCP computations run in batches of bounded
work (Ctrl-C answered between them, results bit-identical), absurd work is
refused with the largest value that fits, and subnormal inputs end."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import edgecode._config as config
import edgecode.scp as scp_mod
from edgecode.scp import scp_approx, scp_bounds, scp_exact, scp_monte_carlo

from interrupt import ROOT, SETUP_RNG, child_env, run_and_interrupt


def _all_four(margin, deltas, eps):
    return (scp_exact(margin, deltas, eps, return_change=True),
            *scp_bounds(margin, deltas, eps),
            scp_approx(margin, deltas, eps, k=9, hybrid=3, return_change=True),
            scp_approx(margin, deltas, eps, k=5, shift=False, return_change=True),
            *scp_monte_carlo(margin, np.round(deltas * 4), eps, 3000, random_state=3))


def test_batches_do_not_change_any_result(monkeypatch):
    """Tiny batches (one point, a few enumeration steps per kernel call, chunks
    of a few trials) give bit-identical results: each point's value depends on
    that point alone, the resumable approx kernel carries its state exactly, and
    the Monte Carlo draws are one stream whatever the chunking."""
    rng = np.random.default_rng(4)
    margin, deltas = rng.normal(size=40), rng.normal(size=(40, 14))
    eps = rng.uniform(0.01, 0.3, 14)
    ref = _all_four(margin, deltas, eps)
    monkeypatch.setattr(config, "BATCH_WORK", 7)
    monkeypatch.setattr(scp_mod, "BATCH_WORK", 7)
    monkeypatch.setattr(scp_mod, "SCP_MC_CHUNK_WORK", 1000)
    for a, b in zip(ref, _all_four(margin, deltas, eps)):
        assert_array_equal(a, b)


def test_approx_grows_its_coefficient_array_between_points(monkeypatch):
    rng = np.random.default_rng(1)
    margin, deltas = rng.normal(size=6), rng.normal(size=(6, 30)) * np.arange(1, 31)
    eps = rng.uniform(0.05, 0.3, 30)
    ref = scp_approx(margin, deltas, eps, k=20, return_change=True)
    monkeypatch.setattr(scp_mod, "BATCH_WORK", 50)
    assert_array_equal(scp_approx(margin, deltas, eps, k=20, return_change=True), ref)


def test_monte_carlo_reports_progress_between_chunks(monkeypatch):
    monkeypatch.setattr(scp_mod, "SCP_MC_CHUNK_WORK", 64)
    seen = []
    scp_monte_carlo([1.0, -1.0], [[-2.0, 0.5], [1.0, 1.0]], 0.1, 100, random_state=0,
                    progress=lambda *a: seen.append(a))
    assert seen[-1] == (100, 100) and len(seen) == 7          # chunks of 16 trials


def test_approx_refuses_an_astronomical_hybrid_enumeration():
    rng = np.random.default_rng(0)
    margin, deltas = rng.normal(size=3), rng.normal(size=(3, 180))
    with pytest.raises(ValueError, match=r"hybrid=64 enumerates .* 180 features .*"
                                         r"SCP_APPROX_MAX_SUBSETS.*use hybrid <= [1-9]"):
        scp_approx(margin, deltas, 0.2, hybrid=64)
    # features with eps = 0 never flip and are not enumerated
    eps = np.zeros(180)
    eps[:10] = 0.2
    assert scp_approx(margin, deltas, eps, hybrid=64).shape == (3,)


def test_bounds_resolution_is_priced(monkeypatch):
    with pytest.raises(ValueError, match=r"resolution must be <= 67108864"):
        scp_bounds([1.0], [[1.0]], 0.1, resolution=2 ** 27)
    monkeypatch.setattr(config, "MAX_ALLOCATION_BYTES", 2 ** 20)
    with pytest.raises(ValueError, match=r"resolution=65536: .* needs 2,097,152 bytes .* "
                                         r"limit of 1,048,576 bytes"):
        scp_bounds([1.0], [[1.0]], 0.1, resolution=2 ** 16)


def test_bounds_on_subnormal_flip_effects_end():
    """span / resolution underflowed to 0 and the search for the grid step never
    ended (and could not be interrupted): run in a child with a timeout."""
    code = textwrap.dedent("""
        from edgecode.scp import scp_bounds, scp_exact
        for m, d in [([1.0], [[5e-324, -1e-323]]), ([5e-324], [[5e-324] * 30]),
                     ([0.0], [[-1e-320, 2e-322, 5e-324]]), ([1e300], [[5e-324, -5e-324]])]:
            lo, up = scp_bounds(m, d, 0.2)
            ex = scp_exact(m, d, 0.2)
            assert lo[0] <= ex[0] <= up[0], (m, d, lo, ex, up)
        print("ok")
    """)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=240, env=child_env(), cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail("scp_bounds on subnormal flip effects did not end within 240 s")
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_monte_carlo_with_huge_n_trials_stops_on_ctrl_c():
    setup = SETUP_RNG + """
from edgecode.scp import scp_monte_carlo
m, d = rng.normal(size=600), rng.normal(size=(600, 600))
scp_monte_carlo(m[:2], d[:2], 0.1, 10, random_state=0)
"""
    code, err = run_and_interrupt("scp_monte_carlo(m, d, 0.1, n_trials=10**15, random_state=0)",
                                  setup)
    assert "KeyboardInterrupt" in err and code != 0


def test_scp_exact_on_many_points_stops_on_ctrl_c():
    setup = SETUP_RNG + """
from edgecode.scp import scp_exact
m, d = rng.normal(size=200000), rng.normal(size=(200000, 30))
scp_exact(m[:2], d[:2], 0.1)
"""
    code, err = run_and_interrupt("scp_exact(m, d, 0.1)", setup)
    assert "KeyboardInterrupt" in err and code != 0


def test_scp_bounds_on_many_points_stops_on_ctrl_c():
    setup = SETUP_RNG + """
from edgecode.scp import scp_bounds
m, d = rng.normal(size=100000), rng.normal(size=(100000, 400))
scp_bounds(m[:2], d[:2], 0.1)
"""
    code, err = run_and_interrupt("scp_bounds(m, d, 0.1)", setup)
    assert "KeyboardInterrupt" in err and code != 0


def test_scp_approx_stops_on_ctrl_c_within_one_point():
    # one point whose hybrid enumeration alone is ~1e10 flip sets (minutes)
    setup = SETUP_RNG + """
from edgecode.scp import scp_approx
m, d = rng.normal(size=1), rng.normal(size=(1, 40))
scp_approx(m, d[:, :10], 0.1, hybrid=2)
"""
    code, err = run_and_interrupt("scp_approx(m, d, 0.1, hybrid=13)", setup)
    assert "KeyboardInterrupt" in err and code != 0


def test_flip_effects_whose_spread_overflows_are_a_value_error():
    """Finite but huge flip effects: the kernel's OverflowError becomes the
    ValueError of bad input, naming the argument and the fix (issue 25)."""
    with pytest.raises(ValueError, match=r"deltas: scp_bounds: the flip effects' range "
                       r"overflows float64 \(rescale margin and deltas"):
        scp_bounds([1.0], [[1e308, -1e308, 1e308]], 0.3)
