"""``cluster.worker_groups`` (the memory backend; the simulator's cluster alike): workers not
all alike, some with custom resources, beside the equal-workers form (``workers``, ``cores``,
``memory``), which keeps working; one way or the other, not both."""

import pytest

from sessionsched.config import ConfigError, group_sizes, load_server_config
from sessionsched.model import Resources

GPU2 = (("gpu", 2),)

GOOD = {
    "two groups, one with gpus": (
        "cluster: {backend: memory, worker_groups: [{count: 2, cores: 4, memory: 8g,"
        " resources: {gpu: 2}}, {cores: 8, memory: 16g}]}",
        (Resources(4, 8192, GPU2), Resources(4, 8192, GPU2), Resources(8, 16384))),
    "a zero amount is none": (
        "cluster: {backend: memory, worker_groups: [{cores: 2, memory: 2g,"
        " resources: {gpu: 0}}]}", (Resources(2, 2048),)),
}


def write(tmp_path, text):
    p = tmp_path / "sessionsched.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, sizes", GOOD.values(), ids=GOOD.keys())
def test_worker_groups_give_each_workers_size(tmp_path, text, sizes):
    c = load_server_config(write(tmp_path, text)).cluster
    assert group_sizes(c.worker_groups) == sizes


def test_the_equal_workers_form_is_unchanged(tmp_path):
    c = load_server_config(write(tmp_path, "cluster: {backend: memory, workers: 2, cores: 4}"))
    assert (c.cluster.workers, c.cluster.cores, c.cluster.worker_groups) == (2, 4, None)


BAD = {
    "both forms": ("cluster: {backend: memory, workers: 2, worker_groups: [{cores: 1,"
                   " memory: 1g}]}", "workers and worker_groups: give the workers one way"),
    "another backend": ("cluster: {worker_groups: [{cores: 1, memory: 1g}]}",
                        "worker_groups is a setting of the memory backend only"),
    "a negative amount": ("cluster: {backend: memory, worker_groups: [{cores: 1, memory: 1g,"
                          " resources: {gpu: -1}}]}", "greater than or equal to 0"),
    "no groups": ("cluster: {backend: memory, worker_groups: []}", "at least 1 item"),
    "no cores": ("cluster: {backend: memory, worker_groups: [{memory: 1g}]}", "cores"),
}


@pytest.mark.parametrize("text, message", BAD.values(), ids=BAD.keys())
def test_bad_worker_groups_give_one_line(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        load_server_config(write(tmp_path, text))
    assert "\n" not in str(err.value) and message in str(err.value), str(err.value)
