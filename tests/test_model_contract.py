"""A sixth model plugs into every generic feature through its ModelSpec alone.

The toy below is a two-component mixture of product-Bernoulli vectors with its own exact
Gibbs step (assignments, then the conjugate Beta draws of the weight and the component
probabilities). Declared and registered in this one file, it goes through ``pmctx fit``,
``pmctx demo``, ``pmctx batch`` (and the population view), ``pmctx sbc``, ``pmctx compare``,
``pmctx.summary``, the convergence report and K-fold, with no edit anywhere else (issue 25).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from pymc.step_methods.compound import BlockedStep
from scipy.special import logsumexp

from pmctx import cli
from pmctx.convergence import convergence_report, report_after_fit
from pmctx.io import write_standard_outputs
from pmctx.registry import ModelSpec, get_spec, model_names, register, unregister
from pmctx.summarize import summary

NAME = "toy-mixture"


def _log_component(y, p):
    """log p(y_i | component k) for every i, k: (n, 2)."""
    return y @ np.log(p).T + (1 - y) @ np.log1p(-p).T


class MixtureGibbs(BlockedStep):
    """Exact Gibbs sweep: z | w, p, y; then w | z and p | z, y (conjugate Beta)."""

    name = "mixture_gibbs"
    stats_dtypes_shapes = {"n_small": (np.int64, [])}

    def __init__(self, vars, y, model=None):
        model = pm.modelcontext(model)
        self.vars = [model.rvs_to_values[v] for v in vars]
        self.y = y
        self.rng = np.random.default_rng()

    def step(self, point):
        y, rng = self.y, self.rng
        w, p = float(point["w"]), point["p"]
        logits = _log_component(y, p) + np.log([w, 1.0 - w])
        prob_first = np.exp(logits[:, 0] - logsumexp(logits, axis=1))
        z = (rng.random(len(y)) >= prob_first).astype(np.int64)
        counts = np.bincount(z, minlength=2)
        ones = np.stack([y[z == k].sum(axis=0) for k in (0, 1)])
        new = dict(point)
        new["z"] = z
        new["w"] = np.asarray(rng.beta(1 + counts[0], 1 + counts[1]))
        new["p"] = rng.beta(1 + ones, 1 + counts[:, None] - ones)
        return new, [{"n_small": int(counts.min())}]


def build_model(y) -> pm.Model:
    n, d = y.shape
    with pm.Model(coords={"obs": range(n), "feature": range(d), "component": [0, 1]}) as model:
        w = pm.Beta("w", 1.0, 1.0, default_transform=None)
        p = pm.Beta("p", 1.0, 1.0, dims=("component", "feature"), default_transform=None)
        z = pm.Bernoulli("z", 1.0 - w, dims="obs")
        pm.Bernoulli("y", p[z], observed=y, dims=("obs", "feature"))
    return model


def fit(data, *, draws=1000, tune=200, chains=4, cores=None, random_seed=None,
        progressbar=False, idata_kwargs=None, check_convergence=True):  # fmt: skip
    y = np.asarray(data["y"], dtype=np.int64)
    if y.ndim != 2 or not np.isin(y, (0, 1)).all():
        raise ValueError(f"y must be a binary (n, d) array, got shape {y.shape}.")
    with build_model(y) as model:
        step = MixtureGibbs([model["z"], model["w"], model["p"]], y)
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, cores=1 if cores is None else cores,
            step=[step], random_seed=random_seed, progressbar=bool(progressbar),
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": True, **(idata_kwargs or {})},
        )  # fmt: skip
    report_after_fit(idata, SPEC, check=check_convergence)
    return idata


def invariants(idata) -> xr.Dataset:
    """The rate of each feature, sum_k w_k p_kd, and its mean: free of the labels."""
    post = idata.posterior
    weights = xr.concat([post["w"], 1.0 - post["w"]], dim="component")
    rate = (weights.assign_coords(component=[0, 1]) * post["p"]).sum("component")
    return xr.Dataset({"rate": rate, "mean_rate": rate.mean("feature")})


def simulate(rng, *, n=40, d=4):
    rng = np.random.default_rng(rng)
    w, p = rng.beta(1, 1), rng.beta(1, 1, size=(2, d))
    z = (rng.random(n) >= w).astype(int)
    y = (rng.random((n, d)) < p[z]).astype(np.int64)
    return {"y": y}, {"mean_rate": float((np.array([w, 1 - w]) @ p).mean())}


def sbc_quantities(idata) -> dict:
    return {"mean_rate": invariants(idata)["mean_rate"].values.reshape(-1)}


def load(path, options=None):
    with np.load(path) as arrays:
        return {"y": arrays["y"], "options": {}}


def write_outputs(idata, out_dir, *, data=None):
    return write_standard_outputs(idata, out_dir, NAME)


def demo(out_dir, *, quick=False, random_seed=0, cores=None):
    data, _ = simulate(random_seed, n=30 if quick else 60)
    return write_outputs(fit(data, draws=300, random_seed=random_seed, cores=cores), out_dir)


def _log_predictive(idata, test):
    post = idata.posterior
    p = post["p"].values.reshape(-1, *post["p"].shape[2:])  # (sample, component, feature)
    w = post["w"].values.reshape(-1)
    logs = np.stack([_log_component(test["y"], p_s) for p_s in p])  # (sample, n_test, 2)
    logs += np.log(np.stack([w, 1.0 - w], axis=-1))[:, None, :]
    return logsumexp(logs, axis=-1)


def kfold(**options):
    return (lambda train: fit(train, draws=200, chains=2, random_seed=1, **options)), (
        _log_predictive
    )


SPEC = ModelSpec(
    name=NAME,
    summary="two-component mixture of product-Bernoulli vectors (test model)",
    load=load,
    fit=fit,
    invariants=invariants,
    write_outputs=write_outputs,
    demo=demo,
    module=__name__,
    simulate=simulate,
    sbc_quantities=sbc_quantities,
    kfold=kfold,
    advice="Run longer",
    demo_seconds=(5, 3),
)


@pytest.fixture(scope="module")
def toy():
    register(SPEC)
    yield SPEC
    unregister(NAME)


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy")
    data, _ = simulate(3, n=40)
    np.savez(folder / "y.npz", y=data["y"])
    return folder, data


def test_gibbs_conditional_of_z_matches_enumeration_of_the_joint():
    y = np.array([[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 0]])
    w, p = 0.3, np.random.default_rng(0).uniform(0.1, 0.9, size=(2, 4))
    joint = {}  # unnormalised p(z, y | w, p) over all 2^3 assignments
    for code in range(8):
        z = np.array([(code >> i) & 1 for i in range(3)])
        prior = np.where(z == 0, w, 1 - w).prod()
        lik = np.prod(np.where(y == 1, p[z], 1 - p[z]))
        joint[code] = prior * lik
    total = sum(joint.values())
    exact = sum(v for c, v in joint.items() if c & 1 == 0) / total  # P(z_0 = 0 | ...)
    logits = _log_component(y, p) + np.log([w, 1 - w])
    assert np.exp(logits[0, 0] - logsumexp(logits[0])) == pytest.approx(exact, rel=1e-12)


def test_the_toy_is_registered_once_and_reached_by_name(toy):
    assert NAME in model_names() and get_spec(NAME) is toy


def test_cli_fit_demo_and_compare(toy, toy_data, tmp_path, capsys):
    folder, _ = toy_data
    fits = []
    for seed in ("1", "2"):
        args = ["--draws", "400", "--chains", "2", "--random-seed", seed]
        out = tmp_path / f"seed{seed}"
        assert (
            cli.main(["fit", NAME, "--data", str(folder / "y.npz"), *args, "--out", str(out)]) == 0
        )
        fits.append(out / NAME / f"{NAME}_posterior.nc")
        assert fits[-1].exists() and (out / NAME / f"{NAME}_diagnostics.csv").exists()
    assert cli.main(["demo", NAME, "--quick", "--out", str(tmp_path / "demo")]) == 0
    assert (tmp_path / "demo" / NAME / f"{NAME}_posterior.nc").exists()
    assert f"[{NAME}: {NAME}_diagnostics.csv] convergence" in capsys.readouterr().out
    assert cli.main(["compare", *map(str, fits), "--names", "first", "second"]) == 0
    out = capsys.readouterr().out
    assert "first" in out and "second" in out


def test_summary_and_convergence_read_the_specs_invariants(toy, toy_data):
    _, data = toy_data
    idata = fit(data, draws=300, chains=2, random_seed=2)
    assert idata.posterior.attrs["pmctx_model"] == NAME
    assert set(convergence_report(idata).index) == {"rate", "mean_rate"}
    assert {name.split("[")[0] for name in summary(idata).index} == {"rate", "mean_rate"}


def test_batch_and_population_view(toy, tmp_path, capsys):
    units = tmp_path / "units"
    units.mkdir()
    for i in range(3):
        np.savez(units / f"u{i}.npz", y=simulate(10 + i, n=25)[0]["y"])
    out = tmp_path / "fits"
    code = cli.main(["batch", NAME, "--data", str(units), "--out", str(out), "--workers", "0",
                     "--set", "draws=300", "--set", "chains=2"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    from pmctx.batch.population import population_summary

    view = population_summary(NAME, out)
    assert list(view["units"].index) == ["u0", "u1", "u2"]
    assert "mean_rate_mean" in view["units"].columns
    assert (out / "population.csv").exists()


def test_sbc_runs_through_the_spec(toy, tmp_path, capsys):
    code = cli.main(["sbc", NAME, "--reps", "8", "--n-ranks", "19", "--workers", "0",
                     "--out", str(tmp_path), "--set", "draws=200", "--set", "chains=1",
                     "--set", "check_convergence=false"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert "mean_rate" in capsys.readouterr().out


def test_kfold_through_the_spec(toy, toy_data):
    from pmctx.kfold import kfold, kfold_functions

    _, data = toy_data
    result = kfold(*kfold_functions(NAME, check_convergence=False), data, k=4)
    assert int(result.n_data_points) == 40 and np.isfinite(result.elpd)


def test_fail_on_warning_exits_nonzero_on_an_unconverged_fit(toy, toy_data, tmp_path, capsys):
    folder, _ = toy_data
    args = ["fit", NAME, "--data", str(folder / "y.npz"), "--draws", "20", "--tune", "0",
            "--chains", "2", "--random-seed", "1", "--out", str(tmp_path)]  # fmt: skip
    assert cli.main(args) == 0  # warns, writes, exits 0 by default
    assert "NOT CONVERGED" in capsys.readouterr().out
    assert cli.main([*args, "--fail-on-warning"]) == 1
    assert "--fail-on-warning" in capsys.readouterr().err
    assert (tmp_path / NAME / f"{NAME}_posterior.nc").exists()  # the files are still written
