"""The growing budget search (issue 28): one fault site for every kind, growth
by the kinds' hooks until the front stops improving or no longer fits, the
baselines at equal flash, the same result on worker processes and on a Dask
cluster, and the exported answer.

Small data (iris with string labels, wine with non-contiguous integer labels)
and tiny spaces keep every search to seconds.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from export.budget import SearchSpace, search
from export.registry import kind_spec

# small seeds: one design, shallow trees, few trees
SPACE = SearchSpace(kinds=("ecoc", "forest"), designs=("dense_random",), learners=("tree",),
                    tree_depths=(2,), forest_trees=(2,), forest_depths=(2,),
                    forest_leaves=("class",))
FAST = {"sim_samples": 3000, "patience": 1, "grow_width": 2}


def _iris_strings():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    return X, np.array(["setosa", "versicolor", "virginica"])[y]


def _wine_gaps():
    from sklearn.datasets import load_wine
    X, y = load_wine(return_X_y=True)
    return X, np.array([3, 7, 11])[y]


@pytest.fixture(scope="module")
def grown():
    return search(_wine_gaps(), "cortex-m0", 0.05, space=SPACE, **FAST)


def _figures(res):
    return [(e["label"], e["flash_bytes"], e["ram_bytes"], e["clean_accuracy"],
             e["accuracy_under_noise"], e["simulated_ci"], e["on_front"], e["baseline"])
            for e in res.entries]


# --------------------------------------------------------------------------
# growth
# --------------------------------------------------------------------------
def test_growth_starts_at_the_seeds_and_grows_only_front_points(grown):
    s = grown.settings
    assert s["strategy"] == "grow" and len(s["rounds"]) >= 2 and s["stop_reason"]
    searched = [e for e in grown.entries if e["round"] >= 0]
    seeds = {json.dumps(c, sort_keys=True) for k in ("ecoc", "forest")
             for c in kind_spec(k).seeds(SPACE, n_classes=3, n_features=13, binary=False)}
    first = [e for e in searched if e["round"] == 0 and e["baseline"] is None]
    assert {json.dumps(e["config"], sort_keys=True) for e in first} <= seeds
    # every later configuration is one growth step from an earlier entry of its kind
    for e in searched:
        if e["round"] == 0 or e["baseline"] is not None:
            continue
        spec = kind_spec(e["kind"])
        parents = [p for p in grown.entries if p["round"] < e["round"] and p["kind"] == e["kind"]
                   and e["config"] in spec.grow(p["config"], SPACE, n_classes=3, n_features=13,
                                                binary=False)]
        assert parents, e["label"]
    deeper = [e for e in searched if e["kind"] == "ecoc" and e["config"]["max_depth"] > 2]
    more = [e for e in searched if e["kind"] == "forest" and e["config"]["n_trees"] > 2]
    assert deeper and more


def test_growth_stops_where_the_next_step_does_not_fit():
    """A flash limit a little above the seeds: growth ends with steps pruned before
    training (their lower bound is over the limit), and nothing trained exceeds it."""
    base = search(_wine_gaps(), "cortex-m0", 0.05, space=SPACE, baselines=False, **FAST)
    limit = int(sorted(e["flash_bytes"] for e in base.entries)[len(base.entries) // 2])
    res = search(_wine_gaps(), "cortex-m0", 0.05, space=SPACE, baselines=False,
                 max_flash=limit, **FAST)
    assert all(e["flash_bytes"] <= limit for e in res.entries)
    assert any(p["stage"] == "screening" for p in res.pruned) or \
        any(p["stage"] == "measured" for p in res.pruned)


def test_longer_codes_reuse_the_learners_of_shorter_ones():
    from export.kinds.ecoc import _code, extend_code

    base = np.array([[0, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 1]])
    long = extend_code(base, 9, 2, 4)
    for L in range(3, 10):
        assert (extend_code(base, L, 2, 4) == long[:, :L]).all()
    cols = {long[:, j].tobytes() for j in range(9)}
    assert len(cols) == 9 and all(len(np.unique(long[:, j])) == 2 for j in range(9))
    cfg = {"kind": "ecoc", "design": "dense_random", "N": 2, "n_columns": 12,
           "base_columns": 6, "learner": "tree", "max_depth": 3}
    for child in kind_spec("ecoc").grow(cfg, SPACE, n_classes=5, n_features=4, binary=False):
        if child["n_columns"] > 12:
            assert (_code(child, 5, 0)[:, :12] == _code(cfg, 5, 0)).all()


def test_reused_tree_is_the_tree_a_fresh_fit_gives():
    from sklearn.tree import DecisionTreeClassifier

    from export.kinds.ecoc import learner, tree_cache_clear

    X, y = _wine_gaps()
    tree_cache_clear()
    a = learner({"learner": "tree", "max_depth": 4}, 0).fit(X, y % 2)
    b = learner({"learner": "tree", "max_depth": 4}, 0).fit(X, y % 2)      # from the cache
    ref = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y % 2)
    assert b.tree_ is a.tree_
    assert (b.predict(X) == ref.predict(X)).all()
    assert (b.tree_.threshold == ref.tree_.threshold).all()


def test_sklearn_random_code_is_output_code_classifiers():
    from sklearn.dummy import DummyClassifier
    from sklearn.multiclass import OutputCodeClassifier

    from export.kinds.ecoc import sklearn_random_code

    X, y = _iris_strings()
    for seed in (0, 5):
        ref = OutputCodeClassifier(DummyClassifier(), code_size=1.5, random_state=seed).fit(X, y)
        assert (sklearn_random_code(3, 4, seed) == ref.code_book_).all()


# --------------------------------------------------------------------------
# baselines
# --------------------------------------------------------------------------
def test_baselines_are_reported_at_no_more_flash(grown):
    rec = grown.recommended
    names = {b["name"]: b for b in grown.settings["baselines"]}
    assert set(names) == {"one-vs-all", "sklearn random code", "plain forest"}
    for b in names.values():
        assert b["label"] is not None
        e = next(e for e in grown.entries if e["label"] == b["label"])
        assert e["baseline"] is not None
        if b["note"].startswith("best at no more flash"):
            assert b["flash_bytes"] <= rec["flash_bytes"]
            assert b["accuracy_under_noise"] <= rec["accuracy_under_noise"]
            # the best of its ladder at that flash (brute force over the entries)
            same = [x for x in grown.entries if x["label"] in b["tried"]
                    and x["flash_bytes"] <= rec["flash_bytes"]]
            assert b["accuracy_under_noise"] == max(x["accuracy_under_noise"] for x in same)
        assert b["gain"] == pytest.approx(rec["accuracy_under_noise"] - b["accuracy_under_noise"])
    assert "baseline one-vs-all" in grown.table()


# --------------------------------------------------------------------------
# one fault for every kind
# --------------------------------------------------------------------------
def test_one_site_for_every_kind_and_predictions_inside_simulations():
    space = SearchSpace(kinds=("protected_nb", "ecoc"), nb_rates=(0, 1), nb_plans=("uniform",),
                        designs=("one_vs_all",), learners=("linear",))
    res = search("house_votes", "cortex-m4", 0.1, space=space, strategy="grid", baselines=False,
                 simulate="all", sim_samples=20_000)
    assert res.settings["site"] == "compute" and "compute site" in res.settings["site_label"]
    text = res.to_json()
    assert text.count('"site"') == 1           # stated once for the whole search
    nb = [e for e in res.entries if e["kind"] == "protected_nb"]
    # at the compute site the decoded feature bits flip: repetitions do not help
    assert len({round(e["predicted_accuracy"], 12) for e in nb}) == 1
    for e in res.entries:
        lo, hi = e["simulated_ci"]
        assert lo <= e["predicted_accuracy"] <= hi, e["label"]
    wire = search("house_votes", "cortex-m4", 0.1, space=space, strategy="grid",
                  baselines=False, site="wire", sim_samples=3000)
    nbw = {e["label"]: e["predicted_accuracy"] for e in wire.entries
           if e["kind"] == "protected_nb"}
    assert nbw["nb uniform 32 bits"] > nbw["nb unprotected"]
    assert wire.settings["site"] == "wire"


def test_image_site_and_refusals():
    space = SearchSpace(kinds=("ecoc",), designs=("one_vs_all",), learners=("linear",))
    res = search(_iris_strings(), "cortex-m4", 1e-6, site="image", space=space,
                 strategy="grid", baselines=False, sim_samples=2000)
    assert res.settings["fault"]["model"] == "seu" and res.settings["site"] == "image"
    with pytest.raises(ValueError, match="each kind's own site, 'default', is gone"):
        search(_iris_strings(), "cortex-m4", 0.05, site="default", space=space)
    with pytest.raises(ValueError, match="does not act at the image site"):
        search(_iris_strings(), "cortex-m4", 0.05, site="image", fault="burst", space=space)
    with pytest.raises(ValueError, match="does not act at the compute site"):
        search(_iris_strings(), "cortex-m4", 0.05, site="compute", fault="seu", space=space)


# --------------------------------------------------------------------------
# every core, many machines: the same result
# --------------------------------------------------------------------------
TINY = SearchSpace(kinds=("ecoc", "forest"), designs=("nary",), nary_N=(3,),
                   learners=("tree",), tree_depths=(2,), forest_trees=(2,), forest_depths=(2,),
                   forest_leaves=("class",))


@pytest.fixture(scope="module")
def one_process():
    return search(_iris_strings(), "cortex-m0", 0.05, space=TINY, **FAST)


def test_jobs_give_the_same_result_as_one_process(one_process):
    res = search(_iris_strings(), "cortex-m0", 0.05, space=TINY, jobs=2, **FAST)
    assert _figures(res) == _figures(one_process)
    assert res.recommended["label"] == one_process.recommended["label"]


def test_dask_local_cluster_gives_the_same_result(one_process):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        res = search(_iris_strings(), "cortex-m0", 0.05, space=TINY, scheduler=client, **FAST)
    assert _figures(res) == _figures(one_process)
    assert res.settings["scheduler"] == "client"


# --------------------------------------------------------------------------
# the answer as it is: export and plot
# --------------------------------------------------------------------------
def test_export_true_labels_report_and_plot(one_process, tmp_path):
    import onnx
    ort = pytest.importorskip("onnxruntime")
    from firmware_sim import load

    info = one_process.export(tmp_path / "best")
    dev = load(Path(info["container"]))
    assert dev.container.kind == one_process.recommended["kind"]
    sess = ort.InferenceSession(str(info["onnx"]))
    onnx.checker.check_model(onnx.load(info["onnx"]))
    X, y = _iris_strings()
    feed = {sess.get_inputs()[0].name: X[:20].astype(np.float32)}
    labels = sess.run(None, feed)[0]
    assert set(np.asarray(labels).astype(str).tolist()) <= {"setosa", "versicolor", "virginica"}
    target = one_process.settings["target"]
    assert target == "cortex-m0plus" and (Path(info["firmware"]) / "model_image.c").is_file()
    md = Path(info["report_md"]).read_text()
    for part in ("## Front", "## Baselines", "## Why this point",
                 one_process.recommended["label"], "plain forest"):
        assert part in md
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    captured = {}
    real = plt.Figure.savefig

    def keep(fig, *a, **k):
        ax = fig.axes[0]
        captured["vlines"] = [ln.get_xdata()[0] for ln in ax.get_lines()
                              if ln.get_linestyle() == "--"]
        captured["ticks"] = [t.get_text() for t in ax.get_xticklabels()]
        captured["xlim"] = ax.get_xlim()
        return real(fig, *a, **k)

    plt.Figure.savefig = keep
    try:
        one_process.plot(tmp_path / "front.png")
    finally:
        plt.Figure.savefig = real
    assert captured["vlines"] == [one_process.settings["flash_limit"]]
    xs = [e["flash_bytes"] for e in one_process.entries]
    lo, hi = captured["xlim"]
    assert lo <= min(xs) and hi >= one_process.settings["flash_limit"]
    assert sum(bool(t) for t in captured["ticks"]) >= 3
