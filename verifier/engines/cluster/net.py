"""The harness's hold on the machine outside its processes: the iptables chain that cuts links
(one per harness, named after its pid) and the temporary directory of its cluster, and the
removal of both when a harness killed with SIGKILL left them (its pid no longer runs)."""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHAIN_PREFIX = "KV-"
DIR_PREFIX = "kraft-verify-cluster-"


class ClusterError(Exception):
    """The cluster could not be set up or a tool failed; str() is one line."""


class Held:
    """A context manager whose `setup()` is undone by `close()` when it fails half-way, and
    always on leaving the block: what it started is gone on every exit path."""

    def __enter__(self):
        try:
            self.setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def iptables(*args: str, check: bool = True) -> bool:
    try:
        p = subprocess.run(["iptables", "-w", "5", *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise ClusterError("a real cluster needs iptables to cut links (.ci/run installs it: apt-get install "
                           "iptables)") from None
    if check and p.returncode != 0:
        raise ClusterError(f"iptables {' '.join(args)}: {p.stderr.strip()[:200]}")
    return p.returncode == 0


def remove_chain(chain: str) -> None:
    while iptables("-D", "OUTPUT", "-o", "lo", "-j", chain, check=False):
        pass
    iptables("-F", chain, check=False)
    iptables("-X", chain, check=False)


def remove_stale_chains() -> list[str]:
    """Chains of harnesses that are gone (killed with SIGKILL): their pid no longer runs."""
    out = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True).stdout
    gone = []
    for chain in sorted(set(re.findall(rf"^-N ({CHAIN_PREFIX}(\d+))$", out, re.M))):
        name, pid = chain
        if not Path(f"/proc/{pid}").exists():
            remove_chain(name)
            gone.append(name)
    return gone


def remove_stale_dirs() -> list[str]:
    """Directories of harnesses that are gone (killed with SIGKILL): their pid no longer runs."""
    gone = []
    for d in Path(tempfile.gettempdir()).glob(f"{DIR_PREFIX}*"):
        pid = d.name[len(DIR_PREFIX):].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(d, ignore_errors=True)
            gone.append(str(d))
    return gone


def our_chains() -> list[str]:
    out = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True).stdout
    return re.findall(rf"^-N ({CHAIN_PREFIX}\d+)$", out, re.M)


