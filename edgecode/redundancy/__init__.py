"""Repetition codes for binary features and how to spend a bit budget on them.

Feature j is sent ``2 r_j + 1`` times and majority-decoded, so a channel that
flips each bit with probability eps_j leaves it wrong with probability
``repetition_error(eps_j, r_j)``.  Given a budget of redundancy bits,
:func:`allocate_uniform` spreads it evenly and :func:`allocate_greedy` (seed
000, Algorithm 2) spends it two bits at a time where it raises the mean
same-classification probability (SCP) the most, from 15 features to
thousands: it ranks candidates by exact feature :func:`influences` (the
derivative of ``1 - SCP`` in each eps_j, which gives every candidate's gain
in one pass), evaluates them lazily, and certifies the plan it returns.

Modules: ``repetition`` (the code), ``influence`` (the influence engines),
``greedy`` (the planner), ``_kernels`` (numba).
"""

from .greedy import (PLAN_METHODS, SCP_METHODS, Allocation, PlanningCostWarning,
                     allocate_greedy, certify_plan, estimate_plan_seconds, max_useful_units,
                     mean_scp, resolve_plan_method, score_allocation)
from .influence import INFLUENCE_METHODS, Influences, influences
from .repetition import allocate_uniform, repetition_error

__all__ = ["repetition_error", "allocate_uniform", "allocate_greedy", "Allocation", "mean_scp",
           "certify_plan", "score_allocation", "resolve_plan_method", "estimate_plan_seconds",
           "max_useful_units", "influences",
           "Influences",
           "SCP_METHODS", "PLAN_METHODS", "INFLUENCE_METHODS", "PlanningCostWarning"]
