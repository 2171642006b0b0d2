"""The liveness engine's graph built by the interpreted model, state by state (the search the
engine ran before issue 57): tests hold the kernel's exploration (verifier/engines/liveness.py:
explore) to it, graph for graph."""
from __future__ import annotations

from collections import deque
from typing import Callable, Optional

from verifier.core.fingerprint import Fingerprinter
from verifier.core.result import Progress
from verifier.engines.liveness import Pace, _Graph


def explore(model, props, fair, max_states: Optional[int], time_budget: Optional[float],
            progress: Optional[Callable[[Progress], None]] = None) -> tuple[_Graph, bool, str, int]:
    """Breadth-first search of the whole graph; (graph, complete?, stop reason, edges)."""
    fpr = Fingerprinter()
    g = _Graph(model, props, fair, fpr)
    pace = Pace(max_states, time_budget, progress)
    frontier = deque()
    for s in model.init_states():
        fp = fpr(s)
        if fp not in g.ids:
            frontier.append((g.add(fp, -1, s), s))
    edges = 0
    while frontier:
        i, s = frontier.popleft()
        succ = list(model.successors(s))
        keep = any(not g.goal(i, k) for k in range(len(props)))
        if keep:
            g.enabled[i] = (g.mask(label[0] for label, _ in succ),
                            g.mask(model.enabled_actions(s, unbounded=True)))
            g.out[i] = []
        for label, t in succ:
            edges += 1
            fp = fpr(t)
            j = g.ids.get(fp)
            if j is None:
                j = g.add(fp, i, t)
                frontier.append((j, t))
            if keep and j != i:
                g.out[i].append((j, g.action_index[label[0]]))
        why = pace.stop(len(g.keys), edges, len(frontier))
        if why:
            return g, False, why, edges
    return g, True, "", edges


