"""The size limits and the progress reporter shared by every long command."""

import io

import pytest

from edgecode._config import MAX_ALLOCATION_BYTES
from edgecode._validation import check_allocation as host_check
from export.progress import Progress, format_seconds
from firmware_sim import _limits
from firmware_sim.errors import DeviceError, SizeLimitError


def test_device_and_host_limits_are_one_number():
    assert _limits.MAX_ALLOCATION_BYTES == MAX_ALLOCATION_BYTES


@pytest.mark.parametrize("check, exc", [(host_check, ValueError), (_limits.check_allocation,
                                                                   SizeLimitError)])
def test_check_allocation_names_param_need_and_limit(check, exc):
    check("n=1", MAX_ALLOCATION_BYTES, what="x")         # at the limit: accepted
    with pytest.raises(exc, match=r"n_trials=7: the frames needs 2,147,483,649 bytes .*limit of "
                                  r"2,147,483,648 bytes.*; give fewer"):
        check("n_trials=7", MAX_ALLOCATION_BYTES + 1, what="the frames", hint="give fewer")
    assert issubclass(SizeLimitError, DeviceError)


def test_progress_plain_mode_prints_first_and_last_line_only_within_every():
    out = io.StringIO()
    p = Progress("stage", stream=out, tty=False, every=3600)
    for done in range(1, 101):
        p(done, 100)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("stage: 1/100 (1%)") and \
        lines[1].startswith("stage: 100/100 (100%)")


def test_progress_tty_redraws_one_line_and_closes_it_on_exit():
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        with Progress("sim", stream=out, tty=True) as p:
            p(5, 10, "trials")
            raise KeyboardInterrupt
    text = out.getvalue()
    assert text.startswith("\rsim [############............] 5/10 trials") and text.endswith("\n")
    quiet = io.StringIO()
    Progress("sim", stream=quiet, enabled=False)(1, 2)
    assert quiet.getvalue() == ""


def test_format_seconds_never_fails():
    assert format_seconds(float("nan")) == "?" and format_seconds(float("inf")) == "?"
    assert format_seconds(59.94) == "59.9 s"
