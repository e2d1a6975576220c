"""The one engine over the device contract: campaigns, simulations, executors.

* :mod:`.campaign`: :func:`run_campaign` (a fault parameter swept over a
  grid) and :func:`simulate` (a BSC at one site), for every kind;
* :mod:`.streams`: the clean side of a run from the contract alone (the
  device, its clean labels, the stream at a site);
* :mod:`.batches`: seeded batches of (point, trial) rows, threads over them,
  progress ticks;
* :mod:`.runner`: the plain batch runner and the choice of a kind's fast
  path (:meth:`~firmware_sim.contract.BaseDevice.bit_fault_runner`);
* :mod:`.image`: faults on the stored image, one faulty image per trial;
* :mod:`.executors`: where the batches run (:class:`ThreadExecutor`,
  :class:`DaskExecutor`: one interface);
* :mod:`.report`: :class:`CampaignResult` (JSON), :class:`SimulationResult`,
  :func:`wilson_interval`.

The engine sees only the contract (:mod:`firmware_sim.contract`) and the
fault protocol (:mod:`firmware_sim.faults`): it never names a kind.
"""

from .batches import BATCH_BITS
from .campaign import run_campaign, simulate
from .executors import DaskExecutor, Executor, ThreadExecutor, executor_for
from .report import REPORT_VERSION, CampaignPoint, CampaignResult, SimulationResult, \
    wilson_interval

__all__ = ["run_campaign", "simulate", "CampaignResult", "CampaignPoint", "SimulationResult",
           "wilson_interval", "REPORT_VERSION", "BATCH_BITS", "Executor", "ThreadExecutor",
           "DaskExecutor", "executor_for"]
