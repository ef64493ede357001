"""Pinwheel-pair jumps inside the orientation map's block-Gibbs steps (learnt in tuning).

:class:`PairJumps` gives a map step the exact jumps of :mod:`pmctx.vonmises.jumps`: while
``pm.sample`` tunes, the step keeps its chain's maps and learns (at tuning sweeps 100, 200,
400, ... and when tuning ends) the shift fields between the pinwheel layouts the chain has
visited; after every sweep it proposes each learnt jump ``n_jumps`` times. Moves learnt
before tuning ends already speed up the rest of tuning; the moves learnt when it ends are
fixed for every stored draw, so each stored draw comes from one exact kernel.

Examples
--------
>>> import numpy as np
>>> from pmctx.models.vonmises_map import build_model
>>> from pmctx.steps.vonmises import AugmentedVonMisesGibbs
>>> with build_model(np.zeros((3, 3)), kappa=2.0, kappa_obs=1.0, rank=2):
...     step = AugmentedVonMisesGibbs(n_jumps=5)
>>> step.n_jumps, step.jump_moves, step.tune
(5, [], True)
"""

from __future__ import annotations

import numpy as np

from pmctx.vonmises.jumps import (
    DEFAULT_JUMPS_PER_SWEEP,
    TuningStates,
    learn_jumps,
    propose_jumps,
)

__all__ = ["FIRST_LEARNING", "PairJumps"]

#: Tuning sweep at which a chain first learns its jumps (then at twice as many, and so on).
FIRST_LEARNING = 100


def check_n_jumps(n_jumps) -> int:
    """``n_jumps`` as an int >= 0, or a ValueError that says what to pass.

    Parameters
    ----------
    n_jumps : int
        Proposals of each learnt jump per sweep.

    Returns
    -------
    int
        ``n_jumps``.
    """
    if isinstance(n_jumps, bool) or not isinstance(n_jumps, int | np.integer) or n_jumps < 0:
        raise ValueError(
            f"n_jumps must be an integer >= 0 (proposals of each learnt pinwheel-pair jump "
            f"per sweep; 0 turns the jumps off), got {n_jumps!r}."
        )
    return int(n_jumps)


class PairJumps:
    """Mixin of a map step: learn pinwheel-pair jumps in tuning, propose them after sweeps.

    The step calls :meth:`_init_jumps` in ``__init__``, :meth:`_jump` then :meth:`_observe`
    after every sweep, and :meth:`_draw_stats` for each draw's ``jumps`` stat; ``pm.sample`` calls
    :meth:`reset_tuning` when a chain starts and :meth:`stop_tuning` when tuning ends.
    """

    def _init_jumps(self, n_jumps, shape) -> None:
        self.n_jumps = check_n_jumps(DEFAULT_JUMPS_PER_SWEEP if n_jumps is None else n_jumps)
        self._tuning_states = TuningStates(shape)
        self._accepted_jumps = 0
        self.reset_tuning()

    def reset_tuning(self) -> None:
        """Start a chain: forget the maps and moves of any earlier chain."""
        self.tune = True
        self._tuning_states.reset()
        self.jump_moves = []
        self._next_learning = FIRST_LEARNING
        self._tuning_sweeps = 0

    def stop_tuning(self) -> None:
        """Fix the jumps learnt from tuning (past its burn-in) for the stored draws."""
        if self.tune and self.n_jumps:
            self._learn()
        self._tuning_states.reset()
        self.tune = False

    def _learn(self) -> None:
        moves = learn_jumps(self._tuning_states.after_burn_in())
        if moves:  # otherwise keep the moves learnt earlier in tuning, if any
            self.jump_moves = moves

    def _observe(self, o) -> None:
        """Keep a tuning sweep's map for learning."""
        if not (self.tune and self.n_jumps):
            return
        self._tuning_states.add(o)
        self._tuning_sweeps += 1
        if self._tuning_sweeps >= self._next_learning:
            self._learn()
            self._next_learning *= 2

    def _jump(self, o, field, kappa: float):
        o, accepted = propose_jumps(
            o, field, kappa, self.rank, self.jump_moves, self.n_jumps, self.rng
        )
        self._accepted_jumps += accepted
        return o

    def _draw_stats(self) -> dict:
        """``jumps``: the jumps accepted since the last draw (a draw's stat)."""
        accepted, self._accepted_jumps = self._accepted_jumps, 0
        return {"jumps": accepted}
