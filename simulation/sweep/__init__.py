"""``ldpgraph sweep``: experiment files, their grids of runs, and where the runs execute.

- :mod:`.experiment` reads and checks an experiment file (grid, selection, final seeds);
- :mod:`.run` expands it into units, runs them in a process pool, records each in the results
  store and selects the best point per cell;
- :mod:`.on_ray` runs the same units as tasks on an existing Ray cluster.
"""

from .experiment import load_experiment, parse_experiment
from .run import format_dry_run, run_sweep

__all__ = ["format_dry_run", "load_experiment", "parse_experiment", "run_sweep"]
