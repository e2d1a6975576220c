"""The SCP is not monotone in the noise (seed 000): lowering eps_j can lower it.

Seed 000: "the SCP does not necessarily increase when we reduce noise
parameters", for the SCP and for its approximation.  The reason is that the
SCP is multilinear in the eps_j:

    SCP(eps) = (1 - eps_j) P(keep | j not flipped) + eps_j P(keep | j flipped),

so ``d SCP / d eps_j = P(keep | j flipped) - P(keep | j not flipped)`` does
not depend on eps_j, and it is positive when flipping j moves the log-odds
away from the threshold (``D_j`` has the sign of ``S``): that flip then
rescues flip sets that would change the class, and lowering eps_j removes the
rescue.  Here: a hand case with a closed form, a real case on house votes,
and the collinearity (constant slope) the planner can rely on.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from edgecode.datasets import load_house_votes
from edgecode.naive_bayes import BinaryNaiveBayes
from edgecode.scp import scp_approx, scp_exact

from naive import scp_bruteforce

# ---------------------------------------------------------------- hand case
# S = 1, D = (-2, +2).  Flip sets: {} -> 1 keeps, {1} -> -1 changes,
# {2} -> 3 keeps, {1, 2} -> 1 keeps.  So only {1} changes the class:
#     SCP = 1 - eps_1 (1 - eps_2),
# which *falls* when eps_2 falls (for eps_1 > 0): the second feature's flip
# undoes the first's.

HAND_MARGIN = np.array([1.0])
HAND_DELTAS = np.array([[-2.0, 2.0]])
GRID = [0.0, 0.01, 0.1, 0.25, 0.3, 0.49]


def hand_scp(e1, e2):
    return 1.0 - e1 * (1.0 - e2)


@pytest.mark.parametrize("e1", GRID)
@pytest.mark.parametrize("e2", GRID)
def test_hand_case_closed_form(e1, e2):
    eps = [e1, e2]
    want = hand_scp(e1, e2)
    assert_allclose(scp_exact(HAND_MARGIN, HAND_DELTAS, eps), [want], rtol=1e-14, atol=1e-16)
    assert_allclose(scp_bruteforce(HAND_MARGIN, HAND_DELTAS, eps), [want],
                    rtol=1e-14, atol=1e-16)
    # change probability at full relative precision: eps_1 (1 - eps_2)
    assert_allclose(scp_exact(HAND_MARGIN, HAND_DELTAS, eps, return_change=True),
                    [e1 * (1.0 - e2)], rtol=1e-14, atol=1e-300)
    # the paper's approximation (k = 50, Improvement 1) gets this case right too
    assert_allclose(scp_approx(HAND_MARGIN, HAND_DELTAS, eps, k=50, shift=True), [want],
                    rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize("e1", [0.01, 0.1, 0.3])
def test_hand_case_scp_falls_when_eps2_falls(e1):
    high, low = 0.3, 0.1
    scp_high = scp_exact(HAND_MARGIN, HAND_DELTAS, [e1, high])[0]
    scp_low = scp_exact(HAND_MARGIN, HAND_DELTAS, [e1, low])[0]
    # less noise on feature 2, lower SCP: by exactly e1 * (high - low)
    assert scp_low < scp_high
    assert_allclose(scp_high - scp_low, e1 * (high - low), rtol=1e-12)
    # and the other way for feature 1 (its flip is the harmful one)
    assert scp_exact(HAND_MARGIN, HAND_DELTAS, [low, e1])[0] > \
        scp_exact(HAND_MARGIN, HAND_DELTAS, [high, e1])[0]


# ---------------------------------------------------------------- house votes

EPS = 0.2          # Table II's noise level


@pytest.fixture(scope="module")
def house():
    d = load_house_votes()
    nb = BinaryNaiveBayes().fit(d.X, d.y)
    return nb.decision_function(d.X), nb.flip_deltas(d.X), d


def scp_drops(margin, deltas, eps=EPS, low=0.0, scp=scp_exact):
    """drops[i, j] = SCP_i(eps) - SCP_i(eps with eps_j lowered to ``low``).

    Positive = lowering the noise on feature j lowers point i's SCP.
    """
    n = deltas.shape[1]
    base = np.full(n, eps)
    s0 = scp(margin, deltas, base)
    drops = np.empty(deltas.shape)
    for j in range(n):
        e = base.copy()
        e[j] = low
        drops[:, j] = s0 - scp(margin, deltas, e)
    return drops


def largest_drop(drops):
    """(point, feature) of the largest drop; the first in row-major order on ties."""
    i, j = np.unravel_index(int(np.argmax(drops)), drops.shape)
    return int(i), int(j)


def test_house_votes_scp_drops_when_eps_lowered(house):
    margin, deltas, d = house
    drops = scp_drops(margin, deltas)
    i, j = largest_drop(drops)
    before = scp_exact(margin[i:i + 1], deltas[i:i + 1], np.full(16, EPS))[0]
    eps = np.full(16, EPS)
    eps[j] = 0.0
    after = scp_exact(margin[i:i + 1], deltas[i:i + 1], eps)[0]
    # far above numerical noise (scp_exact is accurate to a few ulps)
    assert before - after > 1e-3
    # the brute-force enumeration of all 2**16 flip sets agrees
    assert_allclose(scp_bruteforce(margin[i:i + 1], deltas[i:i + 1], np.full(16, EPS)),
                    [before], rtol=1e-12)
    assert_allclose(scp_bruteforce(margin[i:i + 1], deltas[i:i + 1], eps), [after], rtol=1e-12)
    # flipping j pushes the log-odds further from the threshold (D_j has the sign of S)
    assert deltas[i, j] * margin[i] > 0
    # the worked example, as literal numbers: point 2 (a democrat the model
    # calls republican, S = 1.084), feature 3 (physician-fee-freeze, voted
    # 'n', D_3 = +6.137); SCP 0.4184 at eps = 0.2 everywhere, 0.3122 once
    # physician-fee-freeze is made noiseless.  The runner-up drop is 0.1055,
    # so the argmax is not decided by rounding.
    assert (i, j) == (2, 3)
    assert d.feature_names[j] == "physician-fee-freeze"
    assert_allclose([margin[i], deltas[i, j]], [1.0841, 6.1374], atol=5e-4)
    assert_allclose([before, after], [0.41839, 0.31220], atol=5e-5)
    # what a planner would do: one repetition unit (3 copies, majority) takes
    # eps_3 from 0.2 to 3 eps^2 (1 - eps) + eps^3 = 0.104, and the SCP falls
    # by the same slope: 0.4184 -> 0.3674
    eps[j] = 3 * EPS ** 2 * (1 - EPS) + EPS ** 3
    one_unit = scp_exact(margin[i:i + 1], deltas[i:i + 1], eps)[0]
    assert_allclose(before - one_unit, (before - after) * (EPS - eps[j]) / EPS, rtol=1e-10)
    assert_allclose(one_unit, 0.36742, atol=5e-5)


def test_house_votes_slope_sign_follows_flip_direction(house):
    """Exact SCP: lowering eps_j lowers the SCP only where D_j has the sign of S,
    and raises it only where D_j has the opposite sign (the rescue argument)."""
    margin, deltas, _ = house
    drops = scp_drops(margin, deltas)
    same_sign = deltas * margin[:, None] > 0
    opposite = deltas * margin[:, None] < 0
    assert np.all(drops[opposite] <= 1e-13)
    assert np.all(drops[same_sign] >= -1e-13)
    assert (drops > 1e-6).any(axis=1).sum() > 400    # most of the 435 points have such a j


def test_house_votes_mean_scp_drops_too(house):
    """Averaged over all 435 points, making 'immigration' noiseless still lowers
    the mean SCP at eps = 0.2 (by ~1.3e-4): a planner adding a repetition unit
    to it would make things worse, so every step must compare, never assume a gain."""
    margin, deltas, d = house
    mean_drops = scp_drops(margin, deltas).mean(axis=0)
    worse = np.flatnonzero(mean_drops > 1e-7)
    assert "immigration" in [d.feature_names[j] for j in worse]
    j = d.feature_names.index("immigration")
    assert_allclose(mean_drops[j], 1.3257e-4, rtol=1e-3)


# ---------------------------------------------------------------- multilinearity

@pytest.mark.parametrize("method", ["exact", "approx"])
def test_scp_collinear_in_each_eps(house, method):
    """SCP(eps_j = a), SCP(eps_j = b), SCP(eps_j = c) lie on one line, per point and
    feature, with the other eps fixed (uneven ones): d SCP / d eps_j is constant in
    eps_j.  Holds for the approximation too (its G is linear in each eps_j; the tail
    it drops is below 2**-100)."""
    margin, deltas, _ = house
    scp = scp_exact if method == "exact" else (
        lambda m, d, e: scp_approx(m, d, e, k=50, shift=True))
    n = deltas.shape[1]
    base = np.random.default_rng(0).uniform(0.01, 0.4, n)
    a, b, c = 0.0, 0.17, 0.45
    for j in range(n):
        vals = []
        for v in (a, b, c):
            e = base.copy()
            e[j] = v
            vals.append(scp(margin, deltas, e))
        sa, sb, sc = vals
        assert_allclose(sb, sa + (b - a) / (c - a) * (sc - sa), rtol=0, atol=1e-13,
                        err_msg=f"feature {j}")
