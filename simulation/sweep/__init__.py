"""``ldpgraph sweep``: experiment files, their grids of runs, and where the runs execute.

- :mod:`.experiment` reads and checks an experiment file (grid, selection, final seeds);
- :mod:`.run` drives the phases: :mod:`.plan` expands the file into units of runs sharing one
  collection and picks the best point per cell, :mod:`.execute` runs the units in a process
  pool and records each run in the results store, :mod:`.estimate` times a dry run and
  :mod:`.report` formats the result;
- :mod:`.on_ray` runs the same units as tasks on an existing Ray cluster.
"""

from .experiment import load_experiment, parse_experiment
from .run import format_dry_run, run_sweep

__all__ = ["format_dry_run", "load_experiment", "parse_experiment", "run_sweep"]
