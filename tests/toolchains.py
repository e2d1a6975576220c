"""The toolchain check the firmware tests share: a missing compiler or
emulator skips the test with the reason, and fails it in CI
(``EDGECODE_CI`` set: ``.ci/run`` installs every toolchain)."""

import os

import pytest

from export.firmware import toolchain_missing

CI = bool(os.environ.get("EDGECODE_CI"))


def need_toolchain(target, run=False):
    """Skip (fail in CI) unless ``target``'s toolchain is present, and with
    ``run`` also what runs its firmware (QEMU, simavr)."""
    why = toolchain_missing(target, run=run)
    if why:
        if CI:
            pytest.fail(f"CI must have the {target} toolchain: {why}")
        pytest.skip(f"{target} toolchain: {why}")
