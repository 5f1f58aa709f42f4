"""Process-tree accounting from /proc."""

import os
import subprocess
import sys
import time

import pytest

from faastlane_bench import procstats

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_a_child_is_part_of_the_tree_and_its_memory_counts():
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys; data = bytearray(64 << 20); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while procstats.peak_rss_kb(child.pid) < 64 << 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.pid in procstats.tree(os.getpid())
        mine = procstats.tree_stats(child.pid)
        assert mine.processes == 1
        assert mine.peak_rss_kb >= 64 << 10
        assert mine.minor_faults > 0
    finally:
        child.stdin.close()
        child.wait()
