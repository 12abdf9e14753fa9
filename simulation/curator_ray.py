"""The curator's row blocks as Ray tasks: ``ldpgraph run --curator-on ray``.

HoGS's curator spends its time in maps of one picklable function over independent row blocks
(the posterior of the reported pairs, the feature-similarity join, the feature reconstruction's
averaging passes), all through :func:`ldpgraph.protocols.ldp.blocks.map_blocks`. This module
installs a :class:`RayBlocks` executor for them: the function is put into Ray's object store
once per map (``ray.put``: its arrays travel once per machine, not once per block), each block
runs as a Ray task on any machine of the cluster, and the results come back in the blocks'
order, so the release has the same edges and features as one process. At most
:data:`IN_FLIGHT_PER_CPU` tasks per cluster CPU are in flight, which bounds the results held in
memory at once.

Ray starts lazily, on the curator's first block map: the collection before it runs as without
Ray (the local backend's forked collectors stay on). The cluster is ``--ray-address`` /
``RAY_ADDRESS`` (what ``--backend flower`` joins; an address nobody answers at fails in seconds
with one line, :mod:`.raycluster`), or a private one-machine Ray this run starts on loopback
and stops at the end. A Ray that is already up in this process (Flower's simulation engine,
whose ClientApp actors hold its CPUs while the ServerApp runs) is used as it is, with tasks
that reserve no CPU so that they cannot wait behind idle actors; the in-flight bound still
holds. We never stop a cluster we joined or a Ray we did not start.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ldpgraph.protocols import progress
from ldpgraph.protocols.ldp import blocks

if TYPE_CHECKING:
    from .config import RunConfig

T = TypeVar("T")
R = TypeVar("R")

#: Blocks in flight per CPU of the cluster: enough to keep every CPU busy while one result
#: travels back, few enough that the results waiting to be consumed stay small.
IN_FLIGHT_PER_CPU = 2

_REMOTE: list[Any] = []


def _run_block(fn: Callable[[T], R], item: T) -> tuple[str, float, R]:
    """One block, on a Ray worker: (the node it ran on, its seconds, its result)."""
    import ray

    t0 = time.perf_counter()
    out = fn(item)
    return ray.get_runtime_context().get_node_id(), time.perf_counter() - t0, out


def _remote() -> Any:
    if not _REMOTE:
        import ray

        _REMOTE.append(ray.remote(max_retries=0)(_run_block))
    return _REMOTE[0]


class RayBlocks:
    """A :class:`~ldpgraph.protocols.ldp.blocks.BlockExecutor` on Ray tasks; ``connect`` makes
    sure Ray is up (called once, on the first map). Counts the blocks that ran on each node."""

    def __init__(
        self,
        connect: Callable[[], None] | None = None,
        in_flight: int | None = None,
        say: Callable[[str], None] = progress.stage,
    ) -> None:
        self._connect = connect
        self.in_flight = in_flight
        self.say = say
        self.cpus_per_task = 1.0
        #: Further Ray task options; empty: each block is placed on a node of its own by
        #: :func:`node_rounds` (a benchmark may pin every block to one node instead).
        self.options: dict[str, Any] = {}
        self.per_node: Counter[str] = Counter()
        #: Per block function (its qualified name): [blocks, task seconds].
        self.per_fn: dict[str, list[float]] = {}
        self.seconds = 0.0
        self.wall = 0.0
        self.maps = 0
        self._map_seconds = 0.0
        #: The cluster at the last map: (nodes alive, CPUs).
        self.cluster = (0, 0)

    def _ready(self) -> Any:
        if self._connect is not None:  # before any `import ray` (see raycluster)
            connect, self._connect = self._connect, None
            connect()
        import ray

        if not ray.is_initialized():
            raise RuntimeError("the Ray curator needs Ray started (ray.init) before its blocks")
        return ray

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        """``fn`` over ``items`` as Ray tasks, results in order (``fn`` shipped once)."""
        if len(items) == 0:
            return
        ray = self._ready()
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        alive = [node for node in ray.nodes() if node.get("Alive")]
        self.cluster = (len(alive), cpus)
        limit = self.in_flight or IN_FLIGHT_PER_CPU * cpus
        task = _remote().options(num_cpus=self.cpus_per_task, **self.options)
        placed = self._placements(alive) if not self.options else None
        shipped = ray.put(fn)
        here: Counter[str] = Counter()
        pending: deque = deque()
        t0 = time.perf_counter()
        self._map_seconds = 0.0
        try:
            for i, item in enumerate(items):
                on = task if placed is None else placed[i % len(placed)]
                pending.append(on.remote(shipped, item))
                if len(pending) >= limit:
                    yield self._take(ray, pending.popleft(), here)
            while pending:
                yield self._take(ray, pending.popleft(), here)
        finally:
            for ref in pending:  # the consumer stopped early: drop what is left
                ray.cancel(ref)
        self.maps += 1
        self.wall += time.perf_counter() - t0
        name = getattr(fn, "__qualname__", type(fn).__name__)
        mine = self.per_fn.setdefault(name, [0, 0.0])
        mine[0] += len(items)
        mine[1] += self._map_seconds
        where = ", ".join(f"{node[:8]} {k}" for node, k in sorted(here.items()))
        self.say(
            f"curator on Ray: {len(items)} blocks of {name} on {len(here)} of "
            f"{self.cluster[0]} node(s) ({where}) "
            f"in {time.perf_counter() - t0:.1f} s"
        )

    def _placements(self, alive: list[dict]) -> list[Any]:
        """The task bound to each slot of :func:`node_rounds` over the nodes alive now (soft:
        a node that dies or cannot fit a task hands it to the rest of the cluster)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        cpus = {node["NodeID"]: float(node.get("Resources", {}).get("CPU", 0)) for node in alive}
        return [
            _remote().options(
                num_cpus=self.cpus_per_task,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True),
            )
            for node in node_rounds(cpus)
        ]

    def _take(self, ray: Any, ref: Any, here: Counter[str]) -> Any:
        node, seconds, out = ray.get(ref)
        here[node] += 1
        self.per_node[node] += 1
        self.seconds += seconds
        self._map_seconds += seconds
        return out

    def summary(self) -> dict[str, Any]:
        """What ran where: blocks per node (Ray node ids), the seconds the tasks computed, the
        wall seconds of the block maps, how many maps."""
        return {
            "blocks_per_node": dict(self.per_node),
            "task_seconds": round(self.seconds, 3),
            "wall_seconds": round(self.wall, 3),
            "per_function": {k: [int(b), round(t, 3)] for k, (b, t) in self.per_fn.items()},
            "maps": self.maps,
            "cluster_nodes": self.cluster[0],
            "cluster_cpus": self.cluster[1],
        }


def node_rounds(cpus: dict[str, float]) -> list[str]:
    """One round of block placements over the nodes: each node with CPUs as many slots as it
    has CPUs, interleaved, in node-id order. Blocks go round it in order, so every node
    gets its share of every map. Ray's own ``SPREAD`` is only a preference: on a loaded machine
    it once left a two-node cluster's second node without a single block of 33."""
    slots = {node: int(k) for node, k in sorted(cpus.items()) if k >= 1}
    slots = slots or {node: 1 for node in sorted(cpus)}  # no CPUs anywhere: one slot each
    rounds: list[str] = []
    for level in range(max(slots.values(), default=0)):
        rounds.extend(node for node, k in slots.items() if k > level)
    return rounds


def cluster_address(config: RunConfig) -> str:
    """``--ray-address``, else ``RAY_ADDRESS`` (as ``--backend flower`` and Ray's tools)."""
    return config.ray_address or os.environ.get("RAY_ADDRESS", "").strip()


@contextmanager
def curator_blocks(config: RunConfig, say: Callable[[str], None] | None = None) -> Iterator[Any]:
    """Inside the block, the curator's row blocks run where ``config.curator_on`` says: on
    threads (nothing installed; yields None) or as Ray tasks (yields the :class:`RayBlocks`).
    Ray is started or joined on the first block map and left as it was found at the end."""
    if getattr(config, "curator_on", "threads") != "ray":
        yield None
        return
    tell = say or progress.stage
    state: dict[str, Any] = {}
    if cluster_address(config) not in ("", "auto"):
        from .raycluster import check_reachable

        check_reachable(cluster_address(config))  # before the collection: fail in seconds

    def connect() -> None:
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            # Someone else's Ray (Flower's engine): its actors may hold every CPU.
            executor.cpus_per_task = 0.0
            tell("curator on Ray: the Ray already running in this process")
            return
        from . import raycluster

        quiet = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": False}
        address = cluster_address(config)
        if address:
            raycluster.connect(address, **quiet)
            state["joined"] = True
            tell(f"curator on Ray: joined the cluster at {address}")
            return
        temp = Path(tempfile.mkdtemp(prefix="ldpg-cur-", dir="/tmp"))  # short socket paths
        state["temp"] = temp
        old = os.environ.get("RAY_TMPDIR")
        os.environ["RAY_TMPDIR"] = str(temp)  # Ray's documented temp-dir variable
        try:
            raycluster.start_local(num_cpus=blocks.usable_cores(), **quiet)
        finally:
            if old is None:
                os.environ.pop("RAY_TMPDIR", None)
            else:
                os.environ["RAY_TMPDIR"] = old
        state["started"] = True
        tell(f"curator on Ray: started a local Ray ({blocks.usable_cores()} CPUs)")

    executor = RayBlocks(connect, say=tell)
    try:
        with blocks.using(executor):
            yield executor
    finally:
        if state.get("joined") or state.get("started"):
            import ray

            ray.shutdown()  # a joined cluster: disconnects only; ours: stops it
        if "temp" in state:
            from .processes import kill_under

            kill_under(str(state["temp"]))
            shutil.rmtree(state["temp"], ignore_errors=True)
