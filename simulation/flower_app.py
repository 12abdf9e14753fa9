"""The ServerApp that ``flwr run .`` starts (``[tool.flwr.app.components]`` in pyproject.toml).

A thin composition root: it reads the run configuration (the same keys and defaults as
``ldpgraph run``) from ``[tool.flwr.app.config]`` and ``--run-config`` and hands it, with the
Grid, to the run's pipeline (:mod:`ldpgraph.simulation.pipeline`: dataset, the protocol's rounds
over the federation's SuperNodes by the server's round loop, training, the record of
:mod:`ldpgraph.server.record`). Then it logs the summary and writes the result record as JSON
to ``result-path`` (default: ``$FLWR_HOME/ldpgraph-results/<run id>.json``) and as one marked
line of its log, which ``ldpgraph run --backend deploy`` reads from the stream.
With ``curator`` set (a deployment) it reads only the curator file, never the dataset.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from .config import RunConfig
from .flwr_table import APP_ONLY, RESULT_PATH

log = logging.getLogger("ldpgraph.simulation")

#: Run-config keys of the Flower app that are not part of RunConfig (declared in flwr_table).
APP_ONLY_KEYS = tuple(APP_ONLY)
#: Marks the pipeline's stage lines in the run's log (``ldpgraph run`` shows them as progress).
STAGE_MARK = "ldpgraph stage:"

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    from ldpgraph.server.record import result_line, summary, to_json

    from .pipeline import run

    values = {k: v for k, v in context.run_config.items() if k not in APP_ONLY_KEYS}
    config = RunConfig.from_mapping(values)
    result = run(config, stage=lambda msg: log.warning("%s %s", STAGE_MARK, msg), grid=grid)
    result["flwr_run_id"] = int(context.run_id)
    out = str(context.run_config.get(RESULT_PATH, "") or "")
    if not out:
        home = Path(os.environ.get("FLWR_HOME", Path.home() / ".flwr"))
        out = str(home / "ldpgraph-results" / f"{context.run_id}.json")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(to_json(result, indent=2))
    print(summary(result), flush=True)
    print(f"result written to {out}", flush=True)
    # One marked line: `ldpgraph run --backend deploy` reads the record from the log stream.
    print(result_line(result), flush=True)
