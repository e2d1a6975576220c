"""``export.protect.protect`` at the image and all sites (issue 27): the one entry
point reaches the image planner, writes atomically, and the protected device
loads and agrees with the unprotected one on clean inputs; bad combinations
are refused with a message that names them."""

import json

import numpy as np
import pytest

import firmware_sim
from edgecode.ecoc import ECOCClassifier
from export.ecoc import export_ecoc
from export.protect import protect


@pytest.fixture(scope="module")
def glass_linear():
    from export.data import load_table
    from pathlib import Path
    t = load_table(Path(__file__).parent / "data" / "glass.csv")
    X, y = t.X, t.y                        # labels 1, 2, 3, 5, 6, 7
    from sklearn.linear_model import LogisticRegression
    clf = ECOCClassifier(LogisticRegression(max_iter=500), code="dense_random", n_columns=8,
                         random_state=0).fit(X, y)
    return export_ecoc(clf, X).container, X, y


def test_image_site_writes_a_protected_image_with_the_same_clean_labels(glass_linear,
                                                                         tmp_path):
    raw, X, _ = glass_linear
    out, js = tmp_path / "p.edgc", tmp_path / "p.json"
    r = protect(raw, (X, None), site="image", fault="seu", eps=1e-3, max_overhead=0.13,
                n_trials=40, out=out, json_path=js)
    dev = firmware_sim.load(out.read_bytes())
    base = firmware_sim.load(raw)
    assert dev.container.protect is not None
    assert (np.asarray(dev.labels(dev.encode(X))) == np.asarray(base.labels(base.encode(X)))).all()
    rep = json.loads(js.read_text())
    assert rep["site"] == "image" and rep["protected_bytes"] == len(out.read_bytes())
    assert rep["overhead"] <= 0.13 + 1e-9
    lo, hi = rep["predicted_interval"]
    assert lo <= rep["predicted_label_change"] <= hi
    assert r.details["method"].startswith("simulated")


def test_all_site_wires_then_protects_the_image(glass_linear, tmp_path):
    raw, X, _ = glass_linear
    out = tmp_path / "a.edgc"
    r = protect(raw, (X, None), site="all", fault="bsc", eps=1e-3, budget_bits=64,
                max_overhead=0.1, n_trials=40, out=out)
    dev = firmware_sim.load(out.read_bytes())
    assert type(dev).__name__ == "WireProtectedDevice" and dev.container.protect is not None
    assert r.details["site"] == "all" and set(r.details) >= {"wire", "image"}
    base = firmware_sim.load(raw)
    assert (np.asarray(dev.labels(dev.encode(X))) == np.asarray(base.labels(base.encode(X)))).all()


def test_sites_refuse_the_other_sites_faults(glass_linear, tmp_path):
    raw, X, _ = glass_linear
    with pytest.raises(ValueError, match="--fault seu"):
        protect(raw, (X, None), site="image", fault="bsc", eps=1e-3)
    with pytest.raises(ValueError, match="fault 'seu' upsets the stored image"):
        protect(raw, (X, None), site="wire", fault="seu", eps=1e-3)
    with pytest.raises(ValueError, match="site 'all' plans the wire"):
        protect(raw, (X, None), site="all", fault="seu", eps=1e-3)
    assert list(tmp_path.iterdir()) == []
