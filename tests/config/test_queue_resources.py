"""``max_resources`` and ``min_resources``: a queue's caps and guarantees on custom resources
(``{gpu: 4}``) beside ``max_cores``, changed by plans like other settings; bad values give one
line naming the queue's key and the problem."""

import pytest

from sessionsched.config import ConfigError, load_server_config


def write(tmp_path, text):
    p = tmp_path / "sessionsched.yaml"
    p.write_text(text)
    return p


QUEUES = ("defaults: {queue: cpu}\n"
          "queues: [{name: root, queues: [{name: gpu, max_cores: 16, max_resources: {gpu: 4},"
          " min_resources: {gpu: 2}}, {name: cpu}]}]\n")


def test_caps_and_guarantees_reach_the_queue_tree(tmp_path):
    root = load_server_config(write(tmp_path, QUEUES)).queue_tree()
    gpu, cpu = root.leaves()
    assert (gpu.max_resources, gpu.min_resources, gpu.max_cores) == (
        (("gpu", 4),), (("gpu", 2),), 16)
    assert (cpu.max_resources, cpu.min_resources) == ((), ())


def test_a_plan_replaces_the_map_and_null_clears_it(tmp_path):
    text = QUEUES + ("plans: [{cron: '0 20 * * *', queues: {gpu: {max_resources: {gpu: 1}}}},"
                     " {cron: '0 8 * * *', queues: {gpu: {min_resources: null}}}]\n")
    cfg = load_server_config(write(tmp_path, text))
    night = cfg.queue_tree(cfg.plans[0]).leaves()[0]
    day = cfg.queue_tree(cfg.plans[1]).leaves()[0]
    assert (night.max_resources, night.min_resources) == ((("gpu", 1),), (("gpu", 2),))
    assert (day.max_resources, day.min_resources) == ((("gpu", 4),), ())


BAD = {
    "negative": ("{gpu: -1}", "gpu: -1 is negative"),
    "not a number": ("{gpu: many}", "gpu: 'many' is not a whole number"),
    "a fraction": ("{gpu: 1.5}", "gpu: 1.5 is not a whole number"),
    "not a map": ("[gpu, 4]", "is not a map of resource name to amount, like {gpu: 4}"),
    "cores in the map": ("{cores: 4}", "cores: cores go in max_cores/min_share"),
}


@pytest.mark.parametrize("value, message", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize("key", ["max_resources", "min_resources"])
def test_bad_amounts_give_one_line(tmp_path, key, value, message):
    text = f"queues: [{{name: root, queues: [{{name: gpu, {key}: {value}}}]}}]\n"
    with pytest.raises(ConfigError) as err:
        load_server_config(write(tmp_path, text))
    assert "\n" not in str(err.value) and message in str(err.value), str(err.value)
    assert key in str(err.value)


def test_a_bad_amount_in_a_plan_gives_one_line(tmp_path):
    text = QUEUES + "plans: [{cron: '0 20 * * *', queues: {gpu: {max_resources: {gpu: -2}}}}]\n"
    with pytest.raises(ConfigError) as err:
        load_server_config(write(tmp_path, text))
    assert "\n" not in str(err.value) and "gpu: -2 is negative" in str(err.value)
