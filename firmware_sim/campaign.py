"""Old path of the campaign engine: :mod:`firmware_sim.engine` (kept because users
and docs name it: ``firmware_sim.campaign.run_campaign``, ``CampaignResult``)."""

from .engine import BATCH_BITS, REPORT_VERSION, CampaignPoint, CampaignResult, run_campaign, \
    simulate, wilson_interval

__all__ = ["run_campaign", "simulate", "CampaignResult", "CampaignPoint", "wilson_interval",
           "REPORT_VERSION", "BATCH_BITS"]
