"""A process whose output lines are kept, each with the time it arrived.

The elastic benchmarks (bench_elastic.py, elastic_scenario.py) time a job from
flockrun's and the ranks' lines as they come: a reader thread stamps each line,
``wait_for`` blocks until a line matches, and subclasses read the lines they care
about in ``on_line`` as they arrive.
"""

import re
import signal
import subprocess
import threading
import time
import os


class LineLog:
    """argv in its own session, stdout and stderr merged, every line time-stamped."""

    def __init__(self, argv, cwd, env, clock=time.time):
        self.clock = clock
        self.lines, self.end = [], None
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def on_line(self, t, line):
        """Called (holding the lock) for each line as it arrives."""

    def on_end(self, t):
        """Called (holding the lock) once the output has ended."""

    def _read(self):
        for raw in self.proc.stdout:
            with self.cond:
                t, line = self.clock(), raw.rstrip("\n")
                self.lines.append((t, line))
                self.on_line(t, line)
                self.cond.notify_all()
        with self.cond:
            self.end = self.clock()
            self.on_end(self.end)
            self.cond.notify_all()

    def wait_for(self, pattern, count=1, timeout=300):
        """The arrival time of the count-th line matching pattern (RuntimeError if none
        comes before the output ends or the timeout)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                hits = [t for t, line in self.lines if re.search(pattern, line)]
                if len(hits) >= count:
                    return hits[count - 1]
                if time.monotonic() > deadline or self.end is not None:
                    raise RuntimeError(f"no line {pattern!r}:\n" + self.text())
                self.cond.wait(0.2)

    def wait_end(self):
        """Until the reader has taken the last line."""
        with self.cond:
            while self.end is None:
                self.cond.wait(0.5)

    def text(self):
        return "\n".join(line for _, line in self.lines)

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # this process's own session only
        except ProcessLookupError:
            pass
