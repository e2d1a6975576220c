"""Numba kernels of the fault models (``firmware_sim.faults``).

Plain functions on arrays and scalars, no validation. Random numbers come
from a splitmix64 stream seeded by an integer the wrapper draws from its
numpy Generator, so a seed gives the same faults on every machine and the
kernels never touch numba's global RNG.
"""

import math

import numpy as np
from numba import njit

@njit(cache=True, inline="always")
def _splitmix_raw(state):
    """Advance a splitmix64 state (uint64 array of length 1); return 64 random bits."""
    z = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _splitmix_next(state):
    """A uniform double in [0, 1) (53 random bits) from the splitmix64 stream."""
    return float(_splitmix_raw(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


#: Bins of the geometric inversion table (the top TABLE_BITS bits of a uniform).
TABLE_BITS = 12


@njit(cache=True)
def _geometric_table(inv_log1mp, table):
    """Inversion table of ``floor(log(1 - u) / log(1 - p))``: ``table[b]`` is its
    value for every u in bin b (``[b, b + 1) / K``) when it is constant there,
    else -1 (the draw then computes the log). Exact: the same value as the
    formula for every 53-bit u."""
    k = table.shape[0]
    last = 1.0 / 9007199254740992.0
    for b in range(k):
        lo = b / k
        hi = (b + 1) / k - last
        g_lo = math.floor(math.log(1.0 - lo) * inv_log1mp)
        g_hi = math.floor(math.log(1.0 - hi) * inv_log1mp)
        table[b] = g_lo if g_lo == g_hi else -1


@njit(cache=True, inline="always")
def _geometric(state, inv_log1mp, table):
    """Failures before the first success of Bernoulli(p): floor(log(1-U) / log(1-p)),
    by table lookup for most U (see :func:`_geometric_table`), else by the log.

    ``inv_log1mp = 1 / log(1 - p)`` for 0 < p < 1.
    """
    z = _splitmix_raw(state)
    g = table[np.int64(z >> np.uint64(64 - TABLE_BITS))]
    if g >= 0:
        return g
    u = float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return np.int64(math.floor(math.log(1.0 - u) * inv_log1mp))


#: Above this flip probability a segment draws one uniform per bit instead of
#: geometric gaps (a log per flip costs more than a comparison per bit).
DENSE_EPS = 0.25


@njit(cache=True, inline="always")
def _flip_segment(flat, out, count, start, stop, eps, inv_eps, table, state):
    """Errors in positions [start, stop), each with probability eps: geometric
    skipping (``table``: :func:`_geometric_table` of eps) up to ``DENSE_EPS``,
    one uniform per bit above. With ``out`` empty the errors flip ``flat`` in
    place; else their positions go to ``out`` (counted past its capacity so
    the caller can retry bigger). Returns the running error count."""
    if eps <= 0.0:
        return count
    cap = out.shape[0]
    xor = cap == 0
    if eps >= 1.0 or eps > DENSE_EPS:
        for k in range(start, stop):
            if eps >= 1.0 or _splitmix_next(state) < eps:
                if xor:
                    flat[k] ^= 1
                elif count < cap:
                    out[count] = k
                count += 1
        return count
    pos = start - 1
    last = stop - 1
    if xor:
        while True:
            pos += _geometric(state, inv_eps, table) + 1
            if pos > last:
                return count
            flat[pos] ^= 1
            count += 1
    while True:
        pos += _geometric(state, inv_eps, table) + 1
        if pos > last:
            return count
        if count < cap:
            out[count] = pos
        count += 1


@njit(cache=True)
def _bernoulli_errors(flat, n, eps, seed, out):
    """Each of ``n`` bits in error with probability eps: flips ``flat`` in place
    (``out`` empty) or writes the sorted error positions to ``out``. Returns the
    number of errors (see :func:`_gilbert_elliott` for ``out`` too small)."""
    state = np.empty(1, np.uint64)
    state[0] = np.uint64(seed)
    table = np.full(1 << TABLE_BITS, -1, np.int64)
    inv = 1.0 / math.log1p(-eps) if 0.0 < eps < 1.0 else 0.0
    if 0.0 < eps <= DENSE_EPS:
        _geometric_table(inv, table)
    return _flip_segment(flat, out, 0, 0, n, eps, inv, table, state)


@njit(cache=True)
def _gilbert_elliott(flat, n, length, p, r, eps_good, eps_bad, continuous, seed, states, out):
    """Gilbert-Elliott burst channel on ``n`` bits in rows of ``length``.

    A two-state Markov chain (good G, bad B) runs along each row; per bit it
    moves G -> B with probability ``p`` and B -> G with probability ``r``; a
    bit is flipped with probability ``eps_good`` in G and ``eps_bad`` in B.
    Each row starts in B with the stationary probability ``p / (p + r)``
    unless ``continuous`` (then the chain runs on across rows, starting
    stationary). Sojourns are drawn whole (geometric lengths) and sparse flips
    are skipped to, so the cost grows with the number of state changes and
    flips, not with the number of bits.

    Output: with ``out`` empty, flips ``flat`` (size ``n``) in place; else
    writes the sorted error positions to ``out`` (``flat`` unused). Returns
    the number of errors (more than ``out.shape[0]`` means ``out`` was too
    small: retry with the same seed and a bigger one, the draws are the same).
    If ``states`` has size ``n`` it receives every bit's state (1 = bad).
    """
    state = np.empty(1, np.uint64)
    state[0] = np.uint64(seed)
    record = states.shape[0] == n
    inv_p = 1.0 / math.log1p(-p) if 0.0 < p < 1.0 else 0.0
    inv_r = 1.0 / math.log1p(-r) if 0.0 < r < 1.0 else 0.0
    inv_eg = 1.0 / math.log1p(-eps_good) if 0.0 < eps_good < 1.0 else 0.0
    inv_eb = 1.0 / math.log1p(-eps_bad) if 0.0 < eps_bad < 1.0 else 0.0
    pi_bad = p / (p + r) if p + r > 0.0 else 0.0
    k = 1 << TABLE_BITS
    t_p, t_r = np.full(k, -1, np.int64), np.full(k, -1, np.int64)
    t_eg, t_eb = np.full(k, -1, np.int64), np.full(k, -1, np.int64)
    if 0.0 < p < 1.0:
        _geometric_table(inv_p, t_p)
    if 0.0 < r < 1.0:
        _geometric_table(inv_r, t_r)
    if 0.0 < eps_good <= DENSE_EPS:
        _geometric_table(inv_eg, t_eg)
    if 0.0 < eps_bad <= DENSE_EPS:
        _geometric_table(inv_eb, t_eb)
    rows = n // length if length > 0 else 0
    bad = False
    count = 0
    for row in range(rows):
        row_start = row * length
        row_stop = row_start + length
        if row == 0 or not continuous:
            bad = _splitmix_next(state) < pi_bad
        pos = row_start
        while pos < row_stop:
            # sojourn in the current state: Geometric on {1, 2, ...} bits
            # leave probability of the current state, and its flip probability
            if bad:
                q, inv_q, t_q = r, inv_r, t_r
                e, inv_e, t_e = eps_bad, inv_eb, t_eb
            else:
                q, inv_q, t_q = p, inv_p, t_p
                e, inv_e, t_e = eps_good, inv_eg, t_eg
            if q <= 0.0:
                stop = row_stop
                ends = False
            elif q >= 1.0:
                stop = pos + 1
                ends = True
            else:
                stop = pos + _geometric(state, inv_q, t_q) + 1
                ends = stop <= row_stop
                if not ends:
                    stop = row_stop
            if e > 0.0:
                count = _flip_segment(flat, out, count, pos, stop, e, inv_e, t_e, state)
            if record:
                for k in range(pos, stop):
                    states[k] = 1 if bad else 0
            if ends:  # the sojourn ended inside the row: switch state
                bad = not bad
            # else the row ended mid-sojourn; by memorylessness a continuous
            # chain goes on in the same state with a fresh geometric length
            pos = stop
    return count


@njit(cache=True)
def _nb_sparse_outcomes(positions, row0, nrows, n_trials, width, delta, owner, clean_counts,
                        clean_dec, reps, weights, clean_acc, clean_label, y, same, correct,
                        dcount, touched):
    """Protected naive Bayes outcomes of a batch of noisy rows from their error positions.

    Row ``i`` of the batch is trial ``(row0 + i) % n_trials`` of point
    ``(row0 + i) // n_trials``; ``positions`` (sorted, flat in the batch:
    ``i * width + wire position``) are the bits that arrive flipped;
    ``delta[p, c]`` is +1 if point p sends 0 on wire position c (a flip adds
    a vote for 1) and -1 if it sends 1. Only the features hit by an error are
    re-decoded: vote count = clean count + the deltas; a feature whose
    majority changes moves the accumulator by its weight. This equals
    majority-decoding and accumulating the whole noisy row (the device loop,
    ``_decode_accumulate``) at a cost O(rows + errors). Adds to ``same[p]``
    (label equals the clean label) and, when ``y`` has one entry per point,
    to ``correct[p]``. Scratch: ``dcount`` (n,) zeros (left zeroed),
    ``touched`` (width,).
    """
    k = 0
    npos = positions.shape[0]
    has_y = y.shape[0] == same.shape[0]
    g = row0
    p = g // n_trials
    left = n_trials - g % n_trials          # rows left for point p
    for i in range(nrows):
        if left == 0:
            p += 1
            left = n_trials
        left -= 1
        row_base = i * width
        row_end = row_base + width
        nt = 0
        while k < npos and positions[k] < row_end:
            col = positions[k] - row_base
            j = owner[col]
            dcount[j] += delta[p, col]
            touched[nt] = j
            nt += 1
            k += 1
        acc = clean_acc[p]
        for q in range(nt):
            j = touched[q]
            d = dcount[j]
            if d != 0:
                dcount[j] = 0
                dec = 1 if clean_counts[p, j] + d > reps[j] else 0
                acc += (dec - clean_dec[p, j]) * weights[j]
        label = 1 if acc > 0 else 0
        same[p] += 1 if label == clean_label[p] else 0
        if has_y:
            correct[p] += 1 if label == y[p] else 0


@njit(cache=True)
def _ecoc_sparse_outcomes(positions, row0, nrows, n_trials, width, clean_words, code, used,
                          unused, clean_label, y, same, correct, word):
    """Binary-ECOC outcomes of a batch of noisy rows from their error positions.

    Row ``i`` of the batch is trial ``(row0 + i) % n_trials`` of point
    ``(row0 + i) // n_trials``; ``positions`` (sorted, flat in the batch) are
    the learner outputs that arrive flipped. A row without errors decodes to
    the clean label; a row with errors XORs them into the point's packed
    clean outputs ``clean_words[p]`` (column j = bit j % 64 of word j // 64)
    and decodes Hamming-nearest exactly as the device does
    (``2 popcount((w ^ c) & used) + unused``, first minimum). Cost
    O(rows + errors x classes). Adds to ``same[p]`` and, when ``y`` has one
    entry per point, ``correct[p]``. Scratch: ``word`` (n_words,) uint64.
    """
    k = 0
    npos = positions.shape[0]
    has_y = y.shape[0] == same.shape[0]
    n_words = clean_words.shape[1]
    c = code.shape[0]
    one = np.uint64(1)
    g = row0
    p = g // n_trials
    left = n_trials - g % n_trials
    for i in range(nrows):
        if left == 0:
            p += 1
            left = n_trials
        left -= 1
        row_end = (i + 1) * width
        if k >= npos or positions[k] >= row_end:
            label = clean_label[p]
        else:
            row_base = i * width
            for w in range(n_words):
                word[w] = clean_words[p, w]
            while k < npos and positions[k] < row_end:
                col = positions[k] - row_base
                word[col >> 6] ^= one << np.uint64(col & 63)
                k += 1
            label = 0
            bestd = -1
            for r in range(c):
                d = 0
                for w in range(n_words):
                    x = (word[w] ^ code[r, w]) & used[r, w]
                    while x:            # Kernighan popcount: few set bits here
                        x &= x - one
                        d += 1
                d = 2 * d + unused[r]
                if bestd < 0 or d < bestd:
                    bestd = d
                    label = r
        if label == clean_label[p]:
            same[p] += 1
        if has_y and label == y[p]:
            correct[p] += 1
