"""Linear prediction (kriging) of held-out orientations under a ring spectrum.

The spacing search of :mod:`pmctx.vonmises.spectral_cv` first ranks candidate spacings and
ring widths with this cheap, deterministic score, then fits the band-pass posterior only
around the winner: short posterior chains, which ranked them before, score small spacings
and wide rings too low (that module's docstring has the measurements).

The observed unit vectors ``y_i = exp(i z_i)`` are treated as a complex Gaussian vector
with covariance ``lam K + (1 - lam) I``, ``K`` the ring spectrum's correlation
(``ifft2(S) / mean(S)`` on the padded torus) and ``lam`` the share of signal. Each held-out
pixel ``j`` is predicted by ``yhat_j = lam K[j, train] (lam K[train, train] + (1 - lam)
I)^{-1} y_train`` (conjugate gradients; every product with ``K`` is one FFT pair) and scored
by ``cos(z_j - arg yhat_j)``, the mean over folds, at the best ``lam`` of
:data:`SIGNAL_SHARES`. The phase of a complex Gaussian field is not itself Gaussian, so this
is a ranking of spectra, not a density; the posterior fits that follow give the held-out
densities that stacking weighs.

Examples
--------
>>> import numpy as np
>>> from pmctx.vonmises.spectral_kriging import linear_prediction_score
>>> rng = np.random.default_rng(0)
>>> x = np.indices((24, 24))[1]
>>> z = rng.vonmises(2 * np.pi * x / 6.0, 4.0)
>>> observed = rng.random(z.shape) > 0.3
>>> fold_of = rng.permutation(int(observed.sum())) % 3
>>> scores = [linear_prediction_score(z, observed, fold_of, s, 0.25)[0] for s in (3.0, 6.0, 12.0)]
>>> int(np.argmax(scores))
1
"""

from __future__ import annotations

import numpy as np
import scipy.fft
from scipy.sparse.linalg import LinearOperator, cg

from pmctx.validation import check_positive
from pmctx.vonmises.spectral import FLOOR, ring_spectrum, torus_for

__all__ = ["SIGNAL_SHARES", "kriging_predict", "linear_prediction_score"]

#: Signal shares ``lam`` of the unit vectors' covariance; a spectrum is scored at its best.
SIGNAL_SHARES = (0.1, 0.3, 0.6, 0.9)
#: Relative residual at which conjugate gradients stop.
CG_RTOL = 1e-6


def kriging_predict(y, train, test, spectrum, signal_share: float) -> np.ndarray:
    """Best linear prediction of complex values at ``test`` pixels from ``train`` pixels.

    Parameters
    ----------
    y : numpy.ndarray of complex (M, N)
        Values (any at pixels outside ``train``).
    train, test : numpy.ndarray of bool (M, N)
        Pixels predicted from, and pixels predicted.
    spectrum : numpy.ndarray (P, Q)
        Spectral density on a torus at least ``(M, N)`` (:func:`~pmctx.vonmises.spectral.
        ring_spectrum`); the prior correlation is ``ifft2(spectrum) / mean(spectrum)``.
    signal_share : float
        ``lam`` in ``(0, 1)``: ``y`` has covariance ``lam K + (1 - lam) I``.

    Returns
    -------
    numpy.ndarray of complex (test.sum(),)
        ``lam K[test, train] (lam K[train, train] + (1 - lam) I)^{-1} y[train]``.
    """
    lam = float(signal_share)
    if not 0.0 < lam < 1.0:
        raise ValueError(f"signal_share must lie in (0, 1), got {signal_share!r}.")
    spectrum = np.asarray(spectrum, dtype=np.float64)
    m, n = np.shape(train)
    torus = spectrum.shape
    if torus[0] < m or torus[1] < n:
        raise ValueError(
            f"spectrum's torus {torus} must be at least the map's shape {(m, n)}; build it "
            "with ring_spectrum(torus_for(shape, [spacing]), spacing)."
        )
    kernel = spectrum / spectrum.mean()
    window = np.zeros(torus, dtype=bool)
    window[:m, :n] = train
    target = np.zeros(torus, dtype=bool)
    target[:m, :n] = test

    def correlate(values, where):
        full = np.zeros(torus, dtype=np.complex128)
        full[window] = values
        return scipy.fft.ifft2(kernel * scipy.fft.fft2(full))[where]

    size = int(window.sum())
    system = LinearOperator(
        (size, size),
        matvec=lambda v: lam * correlate(np.ravel(v), window) + (1.0 - lam) * np.ravel(v),
        dtype=np.complex128,
    )
    # The system's eigenvalues lie in [1 - lam, lam max(S) / mean(S) + 1 - lam] (interlacing):
    # up to 142 iterations (mean 7-68) on 64 x 64 band-pass maps; an unconverged solve
    # (1000 iterations) still ranks spectra.
    weights, _ = cg(system, np.asarray(y)[train].astype(np.complex128), rtol=CG_RTOL, maxiter=1000)
    return lam * correlate(weights, target)


def linear_prediction_score(
    z, observed, fold_of, spacing: float, width: float, *, floor: float = FLOOR
) -> tuple[float, float]:
    """Mean held-out ``cos(z - arg yhat)`` of a ring spectrum, at its best signal share.

    Parameters
    ----------
    z : numpy.ndarray (M, N)
        Observed doubled angles (any value where not observed).
    observed : numpy.ndarray of bool (M, N)
        Where ``z`` is observed.
    fold_of : numpy.ndarray of int (observed.sum(),)
        Fold of each observed pixel, in flat (row-major) order.
    spacing, width : float
        The ring's column spacing (pixels) and relative width
        (:func:`~pmctx.vonmises.spectral.ring_spectrum`).
    floor : float, default FLOOR
        White floor of the spectrum.

    Returns
    -------
    score : float
        Mean over observed pixels of ``cos(z - arg yhat)``, each predicted without its fold.
    signal_share : float
        The share of :data:`SIGNAL_SHARES` behind it.
    """
    z = np.asarray(z, dtype=np.float64)
    observed = np.asarray(observed, dtype=bool)
    spacing = check_positive(spacing, "spacing")
    spectrum = ring_spectrum(torus_for(z.shape, [spacing]), spacing, width, floor)
    y = np.exp(1j * np.where(observed, z, 0.0))
    obs_index = np.flatnonzero(observed)
    fold_of = np.asarray(fold_of)
    if fold_of.shape != obs_index.shape:
        raise ValueError(
            f"fold_of must hold one fold per observed pixel, shape {obs_index.shape}; got shape "
            f"{fold_of.shape}. Pass e.g. rng.permutation(observed.sum()) % n_folds."
        )
    best = (-np.inf, SIGNAL_SHARES[0])
    for lam in SIGNAL_SHARES:
        cosine = np.empty(obs_index.size)
        for fold in np.unique(fold_of):
            test = np.zeros(z.shape, dtype=bool)
            test.flat[obs_index[fold_of == fold]] = True
            prediction = kriging_predict(y, observed & ~test, test, spectrum, lam)
            cosine[fold_of == fold] = np.cos(z[test] - np.angle(prediction))
        best = max(best, (float(cosine.mean()), lam))
    return best
