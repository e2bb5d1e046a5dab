"""The number of xdist workers `make pytest` runs: one more than the CPUs, a quota counting."""

from __future__ import annotations

from tests.harness.workers import quota_of, workers

V1 = "4:memory:/x\n2:cpuacct:/\n1:cpu:/slow\n0::/\n"
V1_JOINT = "3:cpu,cpuacct:/ci/job\n0::/\n"
V2 = "0::/ci.slice/job.scope\n"


def test_a_v1_quota_of_the_process_cgroup_counts() -> None:
    files = {
        "/sys/fs/cgroup/cpu/slow/cpu.cfs_quota_us": "10000\n",
        "/sys/fs/cgroup/cpu/slow/cpu.cfs_period_us": "10000\n",
    }
    assert quota_of(V1, files) == 1.0
    joint = {
        "/sys/fs/cgroup/cpu,cpuacct/ci/job/cpu.cfs_quota_us": "150000",
        "/sys/fs/cgroup/cpu,cpuacct/ci/job/cpu.cfs_period_us": "100000",
    }
    assert quota_of(V1_JOINT, joint) == 1.5
    unlimited = {
        "/sys/fs/cgroup/cpu/slow/cpu.cfs_quota_us": "-1",
        "/sys/fs/cgroup/cpu/slow/cpu.cfs_period_us": "100000",
    }
    assert quota_of(V1, unlimited) is None


def test_a_v2_cpu_max_counts_and_max_means_none() -> None:
    assert quota_of(V2, {"/sys/fs/cgroup/ci.slice/job.scope/cpu.max": "50000 100000\n"}) == 0.5
    assert quota_of(V2, {"/sys/fs/cgroup/ci.slice/job.scope/cpu.max": "max 100000\n"}) is None
    assert quota_of(V2, {}) is None


def test_one_worker_more_than_the_cpus() -> None:
    assert [workers(c) for c in (0.5, 1.0, 1.5, 2.0, 4.0)] == [2, 2, 3, 3, 5]
