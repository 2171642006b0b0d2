"""A level's end in `check --visited disk` (external.py): its candidates filtered against the
visited runs, and the new states numbered in the order found, their run, links and rows to the
disk (a part of a level, or all of it)."""
from __future__ import annotations

import numpy as np

from verifier.core.runs import by_fp
from verifier.engines.kernel.gather import gather as _gather
from verifier.engines.kernel.levelfiles import FpFile, StoreLost
from verifier.engines.kernel.narrow import ChunkFile

AT_ONCE = 8               # candidates' chunks read and selected at once at a level's end, on the threads
STATE_SLOTS = 10          # search.py's found slots 0-9: the state properties


class Candidates:
    """External's methods that end a level or a part of one."""

    def _filter(self) -> tuple:
        """(keep, order): which candidates no earlier level holds, and their fingerprint order."""
        fp = self.cand_fp.array[:self.m]
        order = by_fp(fp, each=self.each)
        keep = np.ones(self.m, dtype=np.bool_)
        self.files.drop_seen(fp, order, keep)
        return keep, order

    def _filtered(self, base: int, last: bool = True) -> int:
        self._flush()
        self._clear_table()
        keep, order = self._filter()
        return self._admit(keep, order, base, last)

    def _select(self, keep) -> None:
        """The candidates' chunks, each one's kept rows to the next level's rows, in order;
        with threads, AT_ONCE chunks read and selected at a time on them (a level's end was
        otherwise one thread's: about 900 chunks at the billion config's level 13)."""
        starts = np.cumsum([0] + [entry[0] for entry in self.cands.index])
        step = AT_ONCE if self.each is not None else 1

        def pick(i: int):
            part = keep[starts[i]:starts[i + 1]]
            return self.cands.chunk(i).select(part) if part.any() else None
        try:
            for lo in range(0, len(starts) - 1, step):
                for chunk in list((self.each or map)(pick, range(lo, min(lo + step, len(starts) - 1)))):
                    if chunk is not None:
                        self._write(self.next_front, chunk)
        except OSError as exc:
            raise self._rows_lost(exc) from None

    @staticmethod
    def _rows_lost(exc: OSError) -> StoreLost:
        """A level's rows file that cannot be read back (one line; the search stops with exit 3)."""
        return StoreLost(f"a level's rows cannot be read ({exc}): the search cannot go on")

    def _admit(self, keep, order, base: int, last: bool = True) -> int:
        """Number the candidates `keep` marks as the next level's states, in the order found:
        their run and links to the disk, their chunks the next level; `last`: the level is
        done (the next level's states, all parts)."""
        s = int(np.count_nonzero(keep))
        level = len(self.starts)
        if self.part == 0:
            self.next_front, self.level_first = ChunkFile(self.files.file(level, "rows")), self.n_store
            self.next_fp = FpFile(self.files)
        for slot in range(STATE_SLOTS):
            at = int(self.found_index[slot])
            if at >= 0 and self._found_before[slot] < 0:
                if not keep[at]:
                    raise AssertionError("a state property's first violation is of a state seen before")
                self.found_index[slot] = self.n_store + int(np.count_nonzero(keep[:at]))
        fp = self.cand_fp.array[:self.m]
        run, front_fp = np.empty((s, 2), dtype=np.uint64), np.empty((s, 2), dtype=np.uint64)
        parent_of, k_of = np.empty(s, dtype="<u4"), np.empty(s, dtype="<u2")
        _gather(keep, order, fp, self.parents, self.ks, self.labels, base, run, parent_of, k_of, front_fp, self.taken,
                self.each)
        self.files.write_level(level, run, parent_of, k_of, self.part)
        self._select(keep)
        self.next_fp.append(front_fp)
        self.files.sample()
        self.level_cands = (self.level_cands if self.part else 0) + self.m
        self.n_store += s
        self._found_before = self.found_index.copy()
        if not last:
            self.part += 1
            return s
        self.front.close(unlink=False)
        self.files.retire(self.front.path)
        self.cands.close()
        self.prev_fp = self.front_fp.read(0, self.entries // 2)      # no more than a seed needs
        self.per_state = self.level_cands / max(1, len(self.front_fp))
        self.front_fp.close()
        self.front, self.cands, self.front_fp, self.next_front, self.next_fp = self.next_front, None, self.next_fp, None, None
        self.starts.append(self.level_first)
        self.part = 0
        return self.n_store - self.level_first
