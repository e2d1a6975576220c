"""Device profiles: built-ins, file overrides, fit refusals, cost estimates."""

import json
import sys

import numpy as np
import pytest

from firmware_sim import ProtectedNBDevice, load_protected_nb, read_container, write_container
from firmware_sim.profiles import (
    BUILTIN_PROFILES,
    HOROWITZ_2014_PJ,
    OPERATION_CLASSES,
    DeviceProfile,
    DoesNotFitError,
    ProfileError,
    annotate,
    check_fits,
    estimate,
    get_profile,
    load_for_profile,
    load_profile,
)


def _device(n=4, r=1):
    return ProtectedNBDevice.from_arrays(list(range(1, n + 1)), -3, [r] * n, 2)


def test_builtin_profiles_are_complete_and_cite_their_energy():
    assert set(BUILTIN_PROFILES) >= {"cortex-m0", "cortex-m4"}
    for p in BUILTIN_PROFILES.values():
        assert set(p.cycles) == set(OPERATION_CLASSES) == set(p.energy_pj)
        assert "Horowitz" in p.source
        assert p.energy_pj["add"] == HOROWITZ_2014_PJ["int32_add"] == 0.1
        assert p.energy_pj["mul"] == HOROWITZ_2014_PJ["int32_mul"] == 3.1
    m0, m4 = get_profile("cortex-m0"), get_profile("cortex-m4")
    assert (m0.cycles["mul"], m4.cycles["mul"]) == (32.0, 1.0)
    assert m0.flash_bytes < m4.flash_bytes and m0.ram_bytes < m4.ram_bytes
    assert load_profile("cortex-m4") is m4


def test_json_overrides_merge_tables(tmp_path):
    path = tmp_path / "board.json"
    path.write_text(json.dumps({"base": "cortex-m4", "ram_bytes": 2048,
                                "energy_pj": {"load_flash": 25.0},
                                "overhead_pj_per_cycle": 100}))
    p = load_profile(path)
    m4 = get_profile("cortex-m4")
    assert p.name == "board" and p.ram_bytes == 2048 and p.flash_bytes == m4.flash_bytes
    assert p.energy_pj["load_flash"] == 25.0 and p.energy_pj["add"] == m4.energy_pj["add"]
    assert p.overhead_pj_per_cycle == 100.0
    assert load_profile(tmp_path / "board.json") == p
    # a profile written by to_dict reads back identical
    path2 = tmp_path / "full.json"
    path2.write_text(json.dumps(p.to_dict()))
    assert load_profile(path2) == p


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib needs Python >= 3.11")
def test_toml_profile(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text('base = "cortex-m0"\nname = "tiny"\nflash_bytes = 1024\n'
                    '[cycles]\nload_flash = 5\n')
    p = load_profile(path)
    assert (p.name, p.flash_bytes, p.cycles["load_flash"], p.cycles["add"]) == \
        ("tiny", 1024, 5.0, 1.0)


@pytest.mark.parametrize("content, match", [
    ({"flash_kb": 3}, r"unknown profile field\(s\) \['flash_kb'\]"),
    ({"cycles": {"teleport": 1}}, r"cycles has unknown operation class\(es\) \['teleport'\]"),
    ({"ram_bytes": -5}, "ram_bytes must be > 0; got -5"),
    ({"energy_pj": {"add": "cheap"}}, r"energy_pj\['add'\] must be a finite number"),
    ({"word_bits": 12}, "word_bits must be 8, 16, 32 or 64; got 12"),
    ({"base": "z80"}, "base 'z80' is not a built-in profile"),
    ([1, 2], "a profile must be a table"),
])
def test_bad_profile_files(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ProfileError, match=match):
        load_profile(path)


def test_unknown_profile_and_bad_json(tmp_path):
    with pytest.raises(ProfileError, match="unknown profile 'cortex-m99'"):
        get_profile("cortex-m99")
    path = tmp_path / "broken.json"
    path.write_text("{nope")
    with pytest.raises(ProfileError, match="cannot read profile"):
        load_profile(path)


def test_check_fits_names_the_overage():
    m0 = get_profile("cortex-m0").with_overrides(runtime_flash_bytes=0, runtime_ram_bytes=0)
    res = {"kind": "protected_nb", "flash_bytes": m0.flash_bytes + 100, "ram_bytes": 10}
    with pytest.raises(DoesNotFitError, match=r"protected_nb artifact does not fit profile "
                       r"'cortex-m0': flash needs 32868 bytes but the profile has 32768 "
                       r"\(over by 100 bytes, 0.3%\)$"):
        check_fits(m0, res)
    res = {"flash_bytes": 10, "ram_bytes": 4096 + 4096}
    with pytest.raises(DoesNotFitError, match=r"^artifact does not fit profile 'cortex-m0': RAM needs 8192 bytes .*over by 4096 bytes, "
                       r"100.0%"):
        check_fits(m0, res)
    m4 = get_profile("cortex-m4")
    rt_flash, rt_ram = m4.runtime_bytes()          # no kind: the largest kind's runtime
    table = m4.runtime_table()
    assert (rt_flash, rt_ram) == (max(table["flash"].values()), max(table["ram"].values()))
    assert check_fits("cortex-m4", res) == {
        "flash_free_bytes": 256 * 1024 - 10 - rt_flash,
        "ram_free_bytes": 64 * 1024 - 8192 - rt_ram}


def test_check_fits_counts_the_measured_c_runtime():
    """The built-in profiles carry the C runtime's measured flash and stack per
    model kind (issue 12; a firmware compiles in its model's kind only): an
    image that fits alone may not fit with the runtime."""
    m0 = get_profile("cortex-m0")
    nb_flash, nb_ram = m0.runtime_bytes("protected_nb")
    ecoc_flash, ecoc_ram = m0.runtime_bytes("ecoc")
    assert 2000 < nb_flash < ecoc_flash and 256 < nb_ram <= ecoc_ram
    res = {"kind": "ecoc", "flash_bytes": 26761, "ram_bytes": 100}   # the wide ECOC image
    with pytest.raises(DoesNotFitError, match=rf"flash \(model 26761 \+ runtime {ecoc_flash}\) "
                                              rf"needs {26761 + ecoc_flash} bytes"):
        check_fits(m0, res)
    # the same bytes as an NB image fit: its runtime is smaller
    left = check_fits(m0, dict(res, kind="protected_nb"))
    assert left["flash_free_bytes"] == 32768 - 26761 - nb_flash
    bare = m0.with_overrides(runtime_flash_bytes=0, runtime_ram_bytes=0)
    assert check_fits(bare, res)["flash_free_bytes"] == 32768 - 26761
    with pytest.raises(ProfileError, match="no 'ram_bytes'"):
        check_fits("cortex-m0", {"flash_bytes": 1})


def test_runtime_bytes_per_kind_from_a_profile_file(tmp_path):
    path = tmp_path / "board.json"
    path.write_text(json.dumps({"base": "cortex-m4", "name": "board",
                                "runtime_flash_bytes": {"ecoc": 7000, "ssbc": 9000},
                                "runtime_ram_bytes": 300}))
    p = load_profile(path)
    assert p.runtime_bytes("ecoc") == (7000, 300)
    assert p.runtime_bytes("protected_nb") == (9000, 300)     # not listed: the largest
    assert json.loads(json.dumps(p.to_dict()))["runtime_flash_bytes"] == {"ecoc": 7000,
                                                                       "ssbc": 9000}
    for bad, match in (({}, "non-empty mapping"), ({"ecoc": -1}, r"runtime_flash_bytes\['ecoc'\]"),
                       ({"ecoc": 1.5}, "must be an integer")):
        with pytest.raises(ProfileError, match=match):
            p.with_overrides(runtime_flash_bytes=bad)


def test_check_fits_refuses_integer_widths_the_core_lacks():
    c = read_container(write_container(None, "ecoc", {"big": np.zeros(3, np.int64)}))
    # the built-in Cortex-M profiles take 64-bit arrays (two-word operations
    # the C runtime builds and runs there); a 32-bit-only profile refuses them
    check_fits("cortex-m0", {"flash_bytes": c.nbytes, "ram_bytes": 1}, c)
    narrow = get_profile("cortex-m0").with_overrides(name="m0-32", int_widths=(8, 16, 32))
    with pytest.raises(DoesNotFitError, match=r"array 'big' is int64 but the profile's integer "
                       r"widths are \[8, 16, 32\]"):
        check_fits(narrow, {"flash_bytes": c.nbytes, "ram_bytes": 1}, c)


def test_load_for_profile_refuses_a_device_that_does_not_fit():
    raw = _device(n=40, r=3).container.tobytes()
    dev = load_for_profile(load_protected_nb, raw, "cortex-m0")
    assert dev.n_features == 40
    tiny = get_profile("cortex-m0").with_overrides(name="tiny", ram_bytes=32, flash_bytes=256,
                                                   runtime_flash_bytes=0, runtime_ram_bytes=0)
    need_flash = dev.resources()["flash_bytes"]
    need_ram = dev.resources()["ram_bytes"]
    with pytest.raises(DoesNotFitError) as err:
        load_for_profile(load_protected_nb, raw, tiny)
    msg = str(err.value)
    assert f"flash needs {need_flash} bytes but the profile has 256 (over by " \
           f"{need_flash - 256} bytes" in msg
    assert f"RAM needs {need_ram} bytes but the profile has 32 (over by {need_ram - 32} " \
           "bytes" in msg


def test_estimate_counts_by_hand():
    dev = _device(n=4, r=1)                      # 12 channel bits
    res = dev.resources()
    e = estimate("cortex-m0", res)
    ops = res["ops_per_inference"]
    adds = ops["vote_additions"] + ops["accumulate_additions"]   # 12 + 4
    cmps = ops["vote_comparisons"] + ops["sign_comparisons"]     # 4 + 1
    logic = ops["packed_bit_extractions"]                        # 12
    flash_words = -(-res["parameter_bytes"] // 4)
    ram_words = -(-res["ram_breakdown"]["received_bits_packed"] // 4)
    by = e["by_class"]
    assert (by["add"]["count"], by["compare"]["count"], by["logic"]["count"]) == \
        (adds, cmps, logic)
    assert by["load_flash"]["count"] == flash_words and by["load_ram"]["count"] == ram_words
    assert e["cycles"] == adds + cmps + logic + 3 * flash_words + 2 * ram_words
    assert e["energy_pj"] == pytest.approx(0.1 * (adds + cmps + logic) + 50 * flash_words
                                           + 5 * ram_words)
    assert e["time_s"] == pytest.approx(e["cycles"] / 48e6)
    assert e["unpriced"] == []
    over = get_profile("cortex-m0").with_overrides(overhead_pj_per_cycle=10.0)
    assert estimate(over, res)["energy_pj"] == pytest.approx(e["energy_pj"] + 10 * e["cycles"])


def test_estimate_prices_other_runtimes_by_key_suffix():
    res = {"ops_per_inference": {"learner_multiplications": 10, "hamming_xors": 4,
                                 "hamming_popcounts": 4, "mystery_steps": 7, "total": 25}}
    m0, m4 = estimate("cortex-m0", res), estimate("cortex-m4", res)
    assert m0["by_class"]["mul"]["cycles"] == 320 and m4["by_class"]["mul"]["cycles"] == 10
    assert m0["by_class"]["popcount"]["count"] == 4
    assert m0["unpriced"] == ["mystery_steps"]


def test_annotate_reports_cost_next_to_operation_counts():
    dev = _device()
    r = annotate(dev.resources(), "cortex-m4")
    assert r["ops_per_inference"] == dev.resources()["ops_per_inference"]
    assert r["estimate"]["profile"] == "cortex-m4" and r["estimate"]["cycles"] > 0
    assert r["fits"]["ok"]
    tiny = get_profile("cortex-m4").with_overrides(flash_bytes=8)
    assert not annotate(dev.resources(), tiny)["fits"]["ok"]


def test_profile_dataclass_validation():
    m0 = get_profile("cortex-m0")
    with pytest.raises(ProfileError, match="missing"):
        DeviceProfile(**{**m0.to_dict(), "cycles": {"add": 1}})
    with pytest.raises(ProfileError, match="int_widths"):
        m0.with_overrides(int_widths=[7])


def test_load_protected_nb_refuses_artifact_too_big_for_profile():
    import dataclasses
    from firmware_sim.artifact import write_container
    from firmware_sim.naive_bayes import load_protected_nb, make_protected_nb_arrays
    from firmware_sim.profiles import DoesNotFitError, get_profile

    raw = write_container(None, "protected_nb", make_protected_nb_arrays([4, -2, 3], -2,
                                                                        [1, 0, 2], 3))
    assert load_protected_nb(raw, profile="cortex-m0").n_features == 3
    tiny = dataclasses.replace(get_profile("cortex-m0"), flash_bytes=64)
    with pytest.raises(DoesNotFitError, match="flash"):
        load_protected_nb(raw, profile=tiny)


def test_every_device_kind_has_its_operations_priced():
    """ECOC and SSBC operation counts are priced (issue 12: they used to be left
    unpriced, so SSBC's estimate was 10x below the instructions under QEMU)."""
    from sklearn.datasets import load_digits
    from sklearn.tree import DecisionTreeClassifier

    from edgecode.ecoc.classifier import ECOCClassifier
    from edgecode.hashing import SSBC
    from export.ecoc import export_ecoc
    from export.ssbc import export_ssbc
    from firmware_sim.profiles import operation_weights

    X, y = load_digits(return_X_y=True)
    tree = export_ecoc(ECOCClassifier(DecisionTreeClassifier(max_depth=3, random_state=0),
                                      code="one_vs_all").fit(X[:200] / 16, y[:200]),
                       X[:200] / 16).device
    ssbc = export_ssbc(SSBC(8, 16, 12, random_state=0).fit(X[:100]), X_table=X[:100],
                       y_table=y[:100], knn_k=3).device
    for dev in (tree, ssbc):
        e = estimate("cortex-m4", dev.resources())
        assert e["unpriced"] == [] and e["cycles"] > 0
    assert operation_weights("multiply_accumulates") == {"mul": 1, "add": 1}
    assert operation_weights("vote_additions") == {"add": 1}
    assert operation_weights("mystery_steps") is None
