# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
import os
import subprocess
import sys
import unittest

from espo_worker import __main__ as worker_main


class Writes:
    """A standard error that records each write."""

    def __init__(self):
        self.writes = []

    def write(self, s):
        self.writes.append(s)

    def flush(self):
        pass


class AnnounceTest(unittest.TestCase):
    def test_a_line_and_its_newline_go_out_in_one_write(self):
        out = Writes()
        worker_main.announce("espo torch worker: serving on 127.0.0.1:50051 (rank 0 of 2, cpu)", out)
        self.assertEqual(out.writes, ["espo torch worker: serving on 127.0.0.1:50051 (rank 0 of 2, cpu)\n"])

    def test_lines_of_processes_announcing_at_once_stay_whole(self):
        # Unbuffered, as in the image: print() would write each text and newline apart.
        code = ("import sys; from espo_worker import __main__ as m\n"
                "for i in range(300): m.announce('serving on 127.0.0.1:%d (rank %s)' % (50000 + i, sys.argv[1]))\n")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        r, w = os.pipe()
        procs = [subprocess.Popen([sys.executable, "-c", code, str(k)], stderr=w, env=env) for k in range(4)]
        os.close(w)
        with os.fdopen(r) as f:
            lines = f.read().splitlines()
        for p in procs:
            self.assertEqual(p.wait(), 0)
        self.assertEqual(len(lines), 1200)
        for line in lines:
            self.assertEqual(line.count("serving on"), 1, line)


if __name__ == "__main__":
    unittest.main()
