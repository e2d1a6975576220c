"""Error-correcting output codes: coding-matrix designs and their quality.

A coding matrix has one row (codeword) per class and one column per learner:
shape (n_classes, n_columns), dtype int8 (int16 when N > 128).  Used entries
are in {0, ..., N-1} (binary codes: {0, 1}); -1 means "class not used by this
learner" (ternary codes).  Hamming distances count unequal used symbols plus
1/2 wherever either entry is -1.

* :func:`make_code` builds any design by name; the constructors are public
  (:func:`one_vs_all`, :func:`one_vs_one`, :func:`exhaustive`,
  :func:`dense_random`, :func:`sparse_random`, :func:`hadamard`,
  :func:`nary`, :func:`nary_random`, :func:`bch`, :func:`annealed`).
* :func:`row_distance`, :func:`column_distance`, :func:`total_distance`,
  :func:`pairwise_distances`, :func:`distance_stats` and
  :func:`check_properties` measure them (P1-P4 of seed 001).
* :func:`decoding_probabilities` and :func:`codeword_decoding_probabilities`
  give the exact probability that Hamming decoding survives noisy learner
  outputs (q-ary symmetric channel), for any clean output word.
* :func:`save_code` and :func:`load_code` keep a matrix in a ``.npy``,
  ``.csv`` or ``.json`` file; :class:`ECOCClassifier` trains on one
  (``code=load_code(path)``).

References
----------
Seed 001, "Optimal N-ary ECOC matrices for ensemble classification" (N-ary
Sylvester construction, P1-P4, best-of-1000 random baseline).  Seed 003,
simulated annealing of the coding matrix with an electrostatic energy.
"""

from .annealing import SCHEDULES, annealed, code_energy
from .classifier import ECOCClassifier
from .codes import (DESIGNS, bch, dense_random, exhaustive, hadamard, make_code, nary,
                    nary_random, one_vs_all, one_vs_one, sparse_random)
from .decoding_exact import codeword_decoding_probabilities, decoding_probabilities
from .files import load_code, save_code
from .quality import (METRICS, CodeProperties, check_properties, column_distance,
                      distance_stats, pairwise_distances, row_distance, total_distance)
from .sylvester import ORIENTATIONS

__all__ = ["make_code", "DESIGNS", "one_vs_all", "one_vs_one", "exhaustive", "dense_random",
           "sparse_random", "hadamard", "nary", "nary_random", "bch", "annealed",
           "code_energy", "row_distance", "column_distance", "total_distance",
           "pairwise_distances", "distance_stats", "check_properties", "CodeProperties",
           "ECOCClassifier", "decoding_probabilities", "codeword_decoding_probabilities",
           "save_code", "load_code", "ORIENTATIONS", "METRICS", "SCHEDULES"]

