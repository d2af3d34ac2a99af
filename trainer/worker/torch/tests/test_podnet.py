# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
import os
import tempfile
import unittest

from espo_worker import podnet


class PodnetTest(unittest.TestCase):
    def setUp(self):
        d = tempfile.mkdtemp()
        self.hosts = os.path.join(d, "hosts")
        with open(self.hosts, "w") as f:
            f.write("# pods\n127.1.0.2 job-trainer-0.job.ns.svc job-trainer-0  # rank 0\n127.1.0.3 job-trainer-1.job.ns.svc\n")
        self.env = {podnet.ENV_HOSTS_FILE: self.hosts, podnet.ENV_POD_IP: "127.1.0.3"}

    def test_wildcard_and_loopback_listen_on_the_pod_address(self):
        for addr in (":50051", "0.0.0.0:50051", "[::]:50051", "127.0.0.1:50051", "localhost:50051"):
            self.assertEqual(podnet.listen_addr(addr, self.env), "127.1.0.3:50051", addr)
        self.assertEqual(podnet.listen_addr("127.9.0.1:7", self.env), "127.9.0.1:7")

    def test_pod_names_resolve_through_the_hosts_file(self):
        self.assertEqual(podnet.resolve("job-trainer-0.job.ns.svc", self.env), "127.1.0.2")
        self.assertEqual(podnet.resolve("job-trainer-0", self.env), "127.1.0.2")
        self.assertEqual(podnet.resolve("localhost", self.env), "127.1.0.3")
        self.assertEqual(podnet.resolve("elsewhere", self.env), "elsewhere")
        self.assertEqual(podnet.resolve("job-trainer-1.job.ns.svc", {podnet.ENV_HOSTS_FILE: self.hosts + "-gone"}),
                         "job-trainer-1.job.ns.svc")

    def test_outside_the_local_mode_nothing_changes(self):
        self.assertEqual(podnet.listen_addr(":50051", {}), ":50051")
        self.assertEqual(podnet.resolve("job-trainer-0.job.ns.svc", {}), "job-trainer-0.job.ns.svc")


if __name__ == "__main__":
    unittest.main()
