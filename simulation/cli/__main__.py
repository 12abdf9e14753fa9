"""``python -m ldpgraph.simulation.cli``: the ``ldpgraph`` command."""

import sys

from . import main

sys.exit(main())
