"""Image protection on the device (issue 27, "Cost on the device"): code size and
decode time of the C runtime's ``ec_protect.c`` beside the unprotected runtime.

Per target and model, side by side in one process, the firmware
``edgecode firmware`` writes (``kinds="model"``, the target's default ``-O``)
for:

* ``none``: the image as exported (read in place from flash);
* ``secded``: SEC-DED (39,32) on every word of every array;
* ``bch span``: one BCH code (m = 10, t = 3) over a span of every array;

each clean and with upsets (``faulty``: SEC-DED one corrected word in each of
the first two arrays; BCH t = 3 upsets in each of the first two blocks, all
corrected: the Berlekamp-Massey and Chien path). A protected image lives in
RAM (copied from flash into ``.data`` at start-up) and ``ec_model_open_rw``
scrubs it in place at open; inference then costs what the unprotected
runtime costs (plus nothing when no unit is erased).

Columns: ``flash_B`` / ``ram_B`` of the size probe (the smallest firmware
that opens the image and runs one inference), ``image_B`` (the container),
``code_B`` = flash - image (the runtime's code and tables: the decoder's size
is ``code_B`` minus the ``none`` row's), ``open`` (the open: header, CRC,
table, the scrub, the kind's rules) and the median ``infer`` over the frames,
in ``unit``: AVR cycles under simavr (exact, 16 MHz), Cortex-M4 cycles priced
from a QEMU instruction trace with the TRM timings
(``export/cortex_cycles.py``: approximate, zero wait states), and the
executed instructions of that trace.

Models: protected naive Bayes on house votes (16 features, every feature sent
3 times: a 0.7 KB image that fits the ATmega328P's 2 KB of RAM) and a random
forest (10 trees, depth 5) on glass (``tests/data/glass.csv``: 6 classes, a
~6 KB image; on the ATmega2560's 8 KB).

Usage: ``python benchmarks/bench_protect_device.py [--targets cortex-m4,atmega328p,atmega2560]``
"""

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np

import firmware_sim
from firmware_sim._bch import bch_layout
from firmware_sim.protection import protect_container

ROOT = Path(__file__).resolve().parents[1]
BCH = (10, 3)


def models():
    from sklearn.ensemble import RandomForestClassifier

    from edgecode.datasets import load_house_votes
    from edgecode.naive_bayes import BinaryNaiveBayes
    from export.forest import export_forest
    from export.naive_bayes import export_protected_nb

    d = np.genfromtxt(ROOT / "tests" / "data" / "glass.csv", delimiter=",", skip_header=1)
    X, y = d[:, :-1], d[:, -1].astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        forest = RandomForestClassifier(10, max_depth=5, random_state=0).fit(X, y)
    hv = load_house_votes()
    nb = BinaryNaiveBayes().fit(hv.X, hv.y)
    return {"nb": ("naive Bayes (house votes)",
                   export_protected_nb(nb, np.ones(hv.X.shape[1], int)).device, hv.X),
            "forest": ("forest (glass)", export_forest(forest, X).device, X)}


def _flip(raw, bits):
    """``raw`` with bits (global bit index over the arrays' data in table order)
    flipped, CRC re-stamped (the boot check passes; upsets come after)."""
    import zlib
    buf = bytearray(raw)
    n = int.from_bytes(raw[12:16], "little")
    spans = {}
    for i in range(n):
        e = raw[32 + 64 * i:96 + 64 * i]
        spans[e[:32].rstrip(b"\0").decode()] = (int.from_bytes(e[52:56], "little"),
                                                int.from_bytes(e[56:60], "little"))
    for name, b in bits:
        off, _ = spans[name]
        buf[off + b // 8] ^= 1 << (b % 8)
    crc = zlib.crc32(bytes(buf[24:]), zlib.crc32(bytes(buf[:20])))
    buf[20:24] = crc.to_bytes(4, "little")
    return bytes(buf)


def images(dev):
    """(scheme, state, raw image) rows of one model."""
    c = dev.container
    names = [n for n, a in c.arrays.items() if a.nbytes]
    out = [("none", "clean", c.tobytes())]
    sec = protect_container(c, {n: ("secded", 4) for n in names})
    out += [("secded", "clean", sec),
            ("secded", "faulty", _flip(sec, [(names[0], 3), (names[1], 9)]))]
    span = protect_container(c, {list(c.arrays)[0]: ("bch", BCH + (len(c.arrays),))})
    r, k, nb = bch_layout(*BCH, 8 * sum(a.nbytes for a in c.arrays.values()))
    rng = np.random.default_rng(0)
    bits = []
    for block in range(min(2, nb)):
        for p in rng.choice(min(k, 8 * sum(a.nbytes for a in c.arrays.values()) - block * k),
                            BCH[1], replace=False):
            g = int(block * k + p)
            for name, a in c.arrays.items():
                if g < 8 * a.nbytes:
                    bits.append((name, g))
                    break
                g -= 8 * a.nbytes
    out += [("bch span", "clean", span), ("bch span", "faulty", _flip(span, bits))]
    return out


def measure(target, raw, X, tmp):
    """(flash, ram, open, infer median, unit[, instructions]) of one image."""
    from export.firmware import build_firmware, run_firmware_measured, write_firmware
    dev = firmware_sim.load(raw)
    frames = dev.encode(X[:20]).astype(np.int64)
    write_firmware(raw, tmp, target, atomic=False)
    b = build_firmware(tmp, target, probe=True)
    if target.startswith("cortex"):
        from export.cortex_cycles import trace_cycles
        o, inf = trace_cycles(dev, frames, target, Path(tmp) / "trace")
        return b.flash_bytes, b.ram_bytes, int(o), int(np.median(inf)), "cycles (TRM)"
    r = run_firmware_measured(tmp, frames, target)
    return (b.flash_bytes, b.ram_bytes, int(r.open_count), int(np.median(r.infer_counts)),
            r.unit)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="cortex-m4,atmega328p,atmega2560")
    args = ap.parse_args(argv)
    ms = models()
    plan = {"cortex-m4": ["nb", "forest"], "atmega328p": ["nb"], "atmega2560": ["forest"]}
    print("target;model;scheme;image;image_B;flash_B;ram_B;code_B;open;infer;unit")
    for target in args.targets.split(","):
        for key in plan.get(target, ["nb"]):
            label, dev, X = ms[key]
            for scheme, state, raw in images(dev):
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        flash, ram, o, inf, unit = measure(target, raw, X, tmp)
                    except RuntimeError as exc:
                        print(f"{target};{label};{scheme};{state};{len(raw)};error: "
                              f"{str(exc).splitlines()[0][:120]}")
                        continue
                print(f"{target};{label};{scheme};{state};{len(raw)};{flash};{ram};"
                      f"{flash - len(raw)};{o};{inf};{unit}", flush=True)


if __name__ == "__main__":
    main()
