"""The compiled search on several threads: the same order, counts and counterexamples as one.

A level is taken in rounds of a few stretches a thread, each stretch in three jobs (handed to
the threads as soon as the jobs before them allow: flow.py):
1. Expand (`expand_claim`, the GIL released): each successor is fingerprinted (from its
   parent's), its step properties checked, and it is inserted into the visited set every
   thread inserts into at once (visited.claim). A new state keeps the least discovery key it
   was found under (its parent's number and its place among its successors: the order the
   one-thread loop meets it), whichever thread came first. A successor that took a slot or a
   key is a candidate: its row kept, its state properties checked. A state that needs a
   controller event the table lacks is deferred, and expanded again once its stretch's events
   are filled (the algebra, in Python, while the threads expand other stretches).
2. Settle (`settle`, one job a stretch): a candidate whose key no smaller one replaced is its
   state's discovery: new. Each stretch counts its new states, transitions, terminal states
   and actions, and says whether it holds something that must be taken in order: a violation
   of a property not yet violated, or a deadlock; or the round reaches max states.
3. Number (`number`, one job a stretch): the new states are numbered in frontier order, each
   stretch from where the stretches before it end, and written to the store and the next
   level. From a stretch that holds something to take in order (at most one a property) the
   round is merged serially instead (`merge`, then `copy_rows`), exactly as
   verifier/engines/kernel/search.py's loop meets it.
A round whose buffers or share of the visited set run out is undone (`unclaim` empties the
slots it took: the table as before it) and taken again, smaller or with more room. The rounds
also expand `check --visited disk`'s levels into a level's table (external.py)."""
from __future__ import annotations

import numpy as np
from numba import njit

from specs.kernel.properties import state_violations, step_verdict, steps_then_canonical
from specs.kernel.events import MISS
from specs.kernel.successors import BOUNDED, UNBOUNDED, successors
from verifier.engines.kernel.search import (C_TERMINAL, C_TRANSITIONS, C_VISITED, DEADLOCK_SLOT, DONE,
                                            MAX_STATES, STEP_SLOT, STOP, STOP_NO_CUT, _found_mask, _record, keep)
from verifier.core.rowhash import child_hash
from verifier.engines.kernel.visited import claim, owner, prefetch, unclaim
from verifier.engines.kernel.stretch import widen
from verifier.engines.kernel.flow import Flow

FULL = 6          # a stretch's buffers ran out: the round is undone and taken again with fewer states
CROWDED = 7       # a stretch's share of a visited table ran out: undone, and taken again with more room
DEFERRED = -1     # counts[i]: state lo+i waits for a controller event the table lacks
ROOM = 2          # a round has room for this many times its last round's new states: it rarely runs out


@njit(cache=True, nogil=True, _nrt=False)
def expand_claim(frontier, frontier_fp, lo, hi, retry, used, ncand, lay, cv, plan, tables, out, labels, key, work,
                 params, visited, quota, claimed, slots, first_key, stride, base, lost, rows, labs, fp, cand,
                 step_bad, state_bad, counts, first, stuck, misses, fps, step_check, state_check, deadlocks, symmetric):
    """Expand frontier[lo:hi] (with `retry`, only its DEFERRED states) after the `used`
    successors and `ncand` candidates already in the stretch: (what ended it, the state it
    stopped at, successors, candidates, states deferred). State lo+i's successors are
    labs[first[i]:first[i] + counts[i]]; cand[k]: successor k's row in `rows`, or -1 (not a
    candidate); stuck[i]: whether the state is stuck. claimed[o]: the slots taken in visited[o]
    (at most quota[o]), each in `slots` (slot * owners + o); the last element, their number."""
    facts = tables[3]
    owners = len(visited)
    deferred = 0
    for p in range(lo, hi):
        if retry and counts[p - lo] != DEFERRED:
            continue
        row = frontier[p]
        fa, fb = frontier_fp[p, 0], frontier_fp[p, 1]
        n = successors(row, lay, cv, plan, tables, BOUNDED, -1, out, labels, key, work, params)
        if n != MISS:
            if used + n > len(labs) or ncand + n > len(rows):
                return FULL, p, used, ncand, deferred
            for o in range(owners):
                if claimed[o] + n > quota[o]:
                    return CROWDED, p, used, ncand, deferred
            if symmetric is not None:               # each step judged before it is renamed
                n = steps_then_canonical(row, out, labels, n, lay, cv, tables, key, work, step_check, step_bad, used)
        stuck[p - lo] = False
        if n == 0 and deadlocks:
            m = successors(row, lay, cv, plan, tables, UNBOUNDED, -1, out, labels, key, work, params)
            n = MISS if m == MISS else 0
            stuck[p - lo] = m == 0
        if n == MISS:
            counts[p - lo] = DEFERRED
            for j in range(len(key)):
                misses[deferred, j] = key[j]
            deferred += 1
            continue
        for k in range(n):
            a, b = child_hash(row, fa, fb, out[k])
            fps[k, 0], fps[k, 1] = a, b
            prefetch(visited[owner(a, owners)], b)
        first[p - lo] = used
        found = np.uint64((base + p + 1) * stride)
        for k in range(n):
            t = out[k]
            s = used + k
            for j in range(5):
                labs[s, j] = labels[k, j]
            if symmetric is None:
                step_bad[s] = step_verdict(row, labels[k, 0], t, lay, facts, step_check) if step_check else 0
            a, b = fps[k, 0], fps[k, 1]
            o = owner(a, owners)
            got, slot = claim(visited[o], a, b, found + np.uint64(k), first_key, lost)
            cand[s] = -1
            if got == 0:
                continue
            if got == 1:
                slots[claimed[owners]] = slot * owners + o
                claimed[o] += 1
                claimed[owners] += 1
            cand[s] = ncand
            for j in range(len(t)):
                rows[ncand, j] = t[j]
            fp[ncand, 0], fp[ncand, 1] = a, b
            state_bad[s] = state_violations(t, lay, facts, state_check) if state_check else 0
            ncand += 1
        counts[p - lo] = n
        used += n
    return DONE, hi, used, ncand, deferred


@njit(cache=True, nogil=True, _nrt=False)
def settle(states, at, stride, lost, labs, cand, is_new, step_bad, state_bad, counts, first, stuck, enabled, sums,
           open_state, open_step, deadlocks):
    """is_new[k] := whether successor k is its state's discovery (a candidate whose key no
    smaller one replaced; the stretch's first state is the round's `at`-th, so successor j of
    state i has lost[(at + i) * stride + j], which is cleared for the next round). sums :=
    (new states, transitions, terminal states); enabled counts the actions. Whether the stretch
    holds something that must be taken in order (a violation of an open property, a deadlock)."""
    winners, transitions, terminal = 0, 0, 0
    ordered = False
    for i in range(states):
        n, f = counts[i], first[i]
        for j in range(n):
            k = f + j
            enabled[labs[k, 0]] += 1
            if step_bad[k] & open_step:
                ordered = True
            new = False
            if cand[k] >= 0:
                x = (at + i) * stride + j
                new = lost[x] == 0
                if not new:             # (written only then: its pages stay the shared zero page)
                    lost[x] = 0
            is_new[k] = new
            if new:
                winners += 1
                if state_bad[k] & open_state:
                    ordered = True
        transitions += n
        if n == 0:
            terminal += 1
            if deadlocks and stuck[i]:
                ordered = True
    sums[0], sums[1], sums[2] = winners, transitions, terminal
    return ordered


@njit(cache=True, nogil=True, inline="always", _nrt=False)
def put(rows, fp, c, nxt, nxt_fp, w):
    """Candidate c's row and fingerprint to row w of the next level."""
    for j in range(rows.shape[1]):
        nxt[w, j] = rows[c, j]
    nxt_fp[w, 0], nxt_fp[w, 1] = fp[c, 0], fp[c, 1]


@njit(cache=True, nogil=True, _nrt=False)
def number(states, me, rows, fp, labs, cand, is_new, counts, first, n_store, n_next, parents, labels_of, nxt,
           nxt_fp, taken, ks):
    """The stretch's new states, in order, as states n_store... (parents, labels, `ks` if not empty:
    places among their parents' successors) and rows n_next... of the next level; `me`: its first."""
    w = 0
    for i in range(states):
        for k in range(first[i], first[i] + counts[i]):
            if not is_new[k]:
                continue
            parents[n_store + w] = me + i
            for j in range(5):
                labels_of[n_store + w, j] = labs[k, j]
            taken[labs[k, 0]] += 1
            if len(ks):
                ks[n_store + w] = k - first[i]
            put(rows, fp, cand[k], nxt, nxt_fp, n_next + w)
            w += 1


@njit(cache=True, _nrt=False)
def merge(lo, hi, base, labs, is_new, where, step_bad, state_bad, counts, first, stuck, n_next, parents,
          labels_of, n_store, ctr, enabled, taken, found_index, found_group, found_label, opts, none, ks):
    """Take the expanded states lo..hi-1 (state numbers base+lo...) in order, as search.expand
    does, the settled verdicts in is_new; where[k] := the next-level row of successor k, or -1:
    (what ended it, the state after the last one taken, n_next, n_store)."""
    keep_going, max_states = opts[0], opts[2]
    for p in range(lo, hi):
        me = base + p
        n = counts[p - lo]
        at = first[p - lo]
        for k in range(at, at + n):
            action = labs[k, 0]
            ctr[C_TRANSITIONS] += 1
            enabled[action] += 1
            bad = step_bad[k] & ~_found_mask(found_index, STEP_SLOT, 5)
            if bad:
                _record(found_index, found_group, found_label, ctr, bad, STEP_SLOT, me, labs[k])
                if not keep_going:
                    return STOP, p + 1, n_next, n_store
            if not is_new[k]:
                continue
            keep(labs[k], me, parents, labels_of, n_store, ctr, taken)
            if len(ks):
                ks[n_store] = k - at
            where[k] = n_next
            n_next += 1
            n_store += 1
            bad = state_bad[k] & ~_found_mask(found_index, 0, 10)
            if bad:
                _record(found_index, found_group, found_label, ctr, bad, 0, n_store - 1, none)
                if not keep_going:
                    return STOP, p + 1, n_next, n_store
            if max_states >= 0 and n_store >= max_states:
                return MAX_STATES, p + 1, n_next, n_store
        if n == 0:
            ctr[C_TERMINAL] += 1
            if opts[1] and stuck[p - lo] and found_index[DEADLOCK_SLOT] < 0:
                ctr[C_TERMINAL] -= 1
                _record(found_index, found_group, found_label, ctr, 1, DEADLOCK_SLOT, me, none)
                if not keep_going:
                    return STOP_NO_CUT, p + 1, n_next, n_store
    return DONE, hi, n_next, n_store


@njit(cache=True, nogil=True, _nrt=False)
def copy_rows(rows, fp, cand, where, upto, nxt, nxt_fp):
    """Each new row of a stretch that `merge` numbered, and its fingerprint, to the next level."""
    for k in range(upto):
        if where[k] >= 0:
            put(rows, fp, cand[k], nxt, nxt_fp, where[k])


class Rounds:
    """The threads' rounds of a Search (verifier/engines/kernel/__init__.py): its methods that
    run the jobs above."""

    def _round(self, frontier, pos: int, base: int, n_next: int, opts) -> tuple:
        """One round of the threads from frontier[pos] (its jobs: flow.py): (status, the state
        after the last one taken, n_next)."""
        pieces = len(self.stretches)
        per = max(1, min(len(self.stretches[0].counts), -(-(len(frontier) - pos) // pieces)))
        nxt, nxt_fp = self.nxt, self.nxt_fp
        while True:
            spans = [(lo, min(lo + per, len(frontier))) for lo in range(pos, min(pos + per * pieces, len(frontier)),
                                                                        per)]
            self._room(self._claims, n_next)
            tables = self.visited.tables
            quota = np.array([(len(t) // 2 - c) // len(spans) for t, c in zip(tables, self.visited.counts)],
                             dtype=np.int64)
            shared = (tuple(tables), quota, np.uint64((base + pos + 1) * self.stride), self.stride, base, self.lost)
            stretches = self.stretches[:len(spans)]
            open_state = self.state_check & ~_found_mask(self.found_index, 0, 10)
            open_step = self.step_check & ~_found_mask(self.found_index, STEP_SLOT, 5)
            deadlocks = bool(opts[1]) and self.found_index[DEADLOCK_SLOT] < 0

            def settled(t: int) -> bool:
                st = stretches[t]
                st.enabled[:] = 0
                return settle(spans[t][1] - spans[t][0], spans[t][0] - pos, self.stride, self.lost, st.labs, st.cand,
                              st.is_new, st.step_bad, st.state_bad, st.counts, st.first, st.stuck, st.enabled,
                              st.sums, open_state, open_step, deadlocks)

            first_state, first_row = self.numbered, n_next      # the round's first new state and next-level row

            def numbered(t: int, before: int) -> None:
                """Stretch t's new states, after the `before` new states of the stretches before it."""
                st = stretches[t]
                st.taken[:] = 0
                number(spans[t][1] - spans[t][0], base + spans[t][0], st.rows, st.fp, st.labs, st.cand, st.is_new,
                       st.counts, st.first, first_state + before, first_row + before, self.parents, self.labels,
                       nxt, nxt_fp, st.taken, self.ks)

            # numbered as they settle where the store and the next level hold them (not with max states)
            flow = Flow(self, frontier, spans, shared, settled, numbered,
                        (lambda more: False) if opts[2] >= 0 else (lambda more: self._fits(n_next, more)))
            ended = flow.run()
            why = {w for w, _, _, _ in ended}
            if why == {DONE}:
                break
            for st in stretches:                # undo: the table as it was, no key marked lost
                taken = st.slots[:int(st.claimed[-1])]
                for o in range(len(tables)):
                    mine = taken[taken % len(tables) == o] // len(tables)
                    unclaim(tables[o], mine, len(mine))
            self.lost[:len(spans) * per * self.stride] = 0
            if FULL in why:
                if per == 1:         # one state's successors fill a stretch: wider stretches
                    widen(self, n_next)
                per = max(1, per // 2)
            if CROWDED in why:
                self._claims *= 2
        for o in range(len(tables)):
            self.visited.counts[o] += sum(int(st.claimed[o]) for st in stretches)
        self._claims = max(self.k.max_successors, ROOM * sum(int(st.claimed[-1]) for st in stretches))
        new, early = flow.new, flow.numbered
        status, at = DONE, spans[-1][1]
        self._count(stretches[:early])
        n_next, self.numbered = n_next + sum(new[:early]), self.numbered + sum(new[:early])
        self._grow(n_next, sum(new[early:]))        # (nothing to grow where stretches were numbered early)
        nxt, nxt_fp = self.nxt, self.nxt_fp
        max_states = int(opts[2])
        if flow.ordered or (max_states >= 0 and self.numbered + sum(new[early:]) >= max_states):
            return self._merge(stretches[early:], spans[early:], ended[early:], base, n_next, opts)
        if early < len(stretches):
            before = np.cumsum([0] + new[:-1])
            list(self.pool.map(lambda t: numbered(t, int(before[t])), range(early, len(stretches))))
            self._count(stretches[early:])
            self.numbered += sum(new[early:])
            n_next += sum(new[early:])
        return status, at, n_next

    def _count(self, stretches) -> None:
        """The counters of stretches numbered (not merged)."""
        for st in stretches:
            self.enabled += st.enabled
            self.taken_by += st.taken
            self.ctr[C_TRANSITIONS] += st.sums[1]
            self.ctr[C_TERMINAL] += st.sums[2]
            self.ctr[C_VISITED] += st.sums[0]

    def _fits(self, n_next: int, more: int) -> bool:
        """Whether the store and the next level hold `more` new states without growing."""
        return all(rows <= len(b.array) for b, rows, _ in self._growth(n_next, more))

    def _merge(self, stretches, spans, ended, base: int, n_next: int, opts) -> tuple:
        """A round that holds something to take in order: the one-thread loop's merge."""
        status, pos = DONE, spans[0][0]
        for t, st in enumerate(stretches):
            st.where[:ended[t][2]] = -1
        for t, st in enumerate(stretches):
            status, pos, n_next, self.numbered = merge(
                spans[t][0], spans[t][1], base, st.labs, st.is_new, st.where, st.step_bad, st.state_bad, st.counts,
                st.first, st.stuck, n_next, self.parents, self.labels, self.numbered, self.ctr, self.enabled,
                self.taken_by, self.found_index, self.found_group, self.found_label, opts, self.none, self.ks)
            if status != DONE:
                stretches = stretches[:t + 1]
                break
        nxt, nxt_fp = self.nxt, self.nxt_fp
        list(self.pool.map(lambda t: copy_rows(stretches[t].rows, stretches[t].fp, stretches[t].cand,
                                                 stretches[t].where, ended[t][2], nxt, nxt_fp),
                           range(len(stretches))))
        return status, pos, n_next
