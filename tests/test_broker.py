"""The embedded broker (config/broker.py): a message is never taken half
written, taken by one consumer only, and delivered again when the consumer
that held it died; many producers and consumers at once lose none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from kombu import Producer

from config import broker
from tests.broker_stress import PREFETCH, QUEUE, connection

ROOT = Path(__file__).resolve().parents[1]


def publish(folder: Path, *bodies: dict) -> None:
    with connection(folder) as conn:
        producer = Producer(conn.channel())
        for body in bodies:
            producer.publish(
                body,
                exchange=QUEUE.exchange,
                routing_key=QUEUE.routing_key,
                declare=[QUEUE],
                serializer="json",
            )


def take(channel, timeout: float = 5.0):  # noqa: ANN001, ANN201 - kombu's
    """The next message of the queue (polling, as a worker does)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (message := channel.basic_get(QUEUE.name)) is not None:
            return message
        time.sleep(0.01)
    return None


def files(folder: Path, sub: str) -> list[Path]:
    return [p for p in (folder / sub).rglob("*") if p.is_file()]


def test_messages_come_out_in_the_order_they_went_in(tmp_path):
    publish(tmp_path, *({"n": n} for n in range(20)))

    with connection(tmp_path) as conn:
        channel = conn.channel()
        taken = [take(channel) for _ in range(20)]

    assert [m.decode()["n"] for m in taken] == list(range(20))


def test_an_acknowledged_message_leaves_no_file_behind(tmp_path):
    publish(tmp_path, {"n": 1})

    with connection(tmp_path) as conn:
        channel = conn.channel()
        message = take(channel)
        assert files(tmp_path, "in") == [] and len(files(tmp_path, "claimed")) == 1
        message.ack()

    assert files(tmp_path, "in") == files(tmp_path, "claimed") == []


def test_a_message_rejected_with_requeue_is_delivered_again_once(tmp_path):
    publish(tmp_path, {"n": 1})

    with connection(tmp_path) as conn:
        channel = conn.channel()
        take(channel).reject(requeue=True)
        again = take(channel)
        again.ack()
        assert again.decode() == {"n": 1}
        assert take(channel, timeout=0.3) is None
    assert files(tmp_path, "claimed") == []


def test_a_message_is_never_taken_half_written(tmp_path):
    """kombu's own filesystem transport creates the file before writing it: a
    consumer polling meanwhile read an empty message and raised
    JSONDecodeError (the worker's "Unrecoverable error"). Big messages make
    the window wide."""
    count, body = 200, "x" * 200_000
    received: list[dict] = []
    errors: list[BaseException] = []

    def consumer() -> None:
        with connection(tmp_path) as conn:
            channel = conn.channel()
            while len(received) < count and not errors:
                try:
                    message = channel.basic_get(QUEUE.name)
                except Exception as exc:  # the failure this test is about
                    errors.append(exc)
                    return
                if message is not None:
                    received.append(message.decode())
                    message.ack()

    publish(tmp_path, {"n": -1})  # declares the queue before the consumer polls
    thread = threading.Thread(target=consumer)
    thread.start()
    publish(tmp_path, *({"n": n, "body": body} for n in range(count - 1)))
    thread.join(timeout=60)

    assert errors == []
    assert [m["n"] for m in received] == list(range(-1, count - 1))


def test_a_file_that_is_not_a_message_is_set_aside_not_fatal(tmp_path):
    publish(tmp_path, {"n": 1})
    garbage = tmp_path / "in" / f"{'0' * 20}_junk.{QUEUE.name}.msg"
    garbage.write_text("{not json")

    with connection(tmp_path) as conn:
        message = take(conn.channel())

    assert message.decode() == {"n": 1}
    assert [p.name for p in files(tmp_path, "rejected")] == [garbage.name]


def test_a_write_abandoned_an_hour_ago_is_cleaned_up_and_a_fresh_one_kept(tmp_path):
    publish(tmp_path, {"n": 1})  # creates the folders
    abandoned, fresh = (
        tmp_path / "tmp" / "abandoned.msg",
        tmp_path / "tmp" / "fresh.msg",
    )
    abandoned.write_text('{"half')
    fresh.write_text('{"being written')
    os.utime(abandoned, (time.time() - 3700, time.time() - 3700))

    broker.recover_orphans(tmp_path)

    assert not abandoned.exists() and fresh.exists()


HOLDER = """
import sys, time
from tests.broker_stress import QUEUE, connection
with connection(sys.argv[1]) as conn:
    channel = conn.channel()
    while (message := channel.basic_get(QUEUE.name)) is None:
        time.sleep(0.01)
    print(message.decode()["n"], flush=True)
    time.sleep(60)  # holds it, unacknowledged, until killed
"""


def test_a_message_held_by_a_consumer_that_died_is_delivered_again(tmp_path):
    publish(tmp_path, {"n": 7})
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "7"
        with connection(tmp_path) as conn:
            channel = conn.channel()
            assert take(channel, timeout=0.5) is None  # held, not lost, not shared
            holder.kill()
            holder.wait(timeout=10)
            again = take(channel, timeout=10)  # put back within RECOVER_EVERY
            again.ack()
    finally:
        holder.kill()
        holder.wait(timeout=10)

    assert again.decode() == {"n": 7}
    assert files(tmp_path, "in") == files(tmp_path, "claimed") == []


# --- Many at once -------------------------------------------------------------------

PRODUCERS, MESSAGES = 3, 10_000


def _start(*args: str, stdout=None) -> subprocess.Popen:  # noqa: ANN001
    return subprocess.Popen(
        [sys.executable, "-m", "tests.broker_stress", *args], cwd=ROOT, stdout=stdout
    )


def _received(outputs: list[Path]) -> Counter:
    lines = (line for out in outputs for line in out.read_text().splitlines())
    return Counter(lines)


@pytest.mark.slow
def test_three_producers_of_ten_thousand_messages_lose_none_and_double_none(
    tmp_path,
):
    """Three producers and three consumers at once, one consumer killed with
    SIGKILL midway and replaced: every message arrives, none twice except
    what the killed consumer had taken and not yet acknowledged, and no
    process fails."""
    folder, stop = tmp_path / "broker", tmp_path / "stop"
    publish(folder, {"producer": "warm-up", "n": 0})  # declares the queue
    outputs = [tmp_path / f"consumer-{i}.txt" for i in range(4)]
    for out in outputs:
        out.touch()
    consumers = [
        _start("consume", str(folder), str(out), str(stop)) for out in outputs[:3]
    ]
    producers = [
        _start("produce", str(folder), f"p{i}", str(MESSAGES)) for i in range(PRODUCERS)
    ]
    try:
        victim = consumers[0]
        while len(outputs[0].read_text().splitlines()) < 2_000:
            assert victim.poll() is None
            time.sleep(0.05)
        os.kill(victim.pid, signal.SIGKILL)
        consumers.append(_start("consume", str(folder), str(outputs[3]), str(stop)))

        assert [p.wait(timeout=300) for p in producers] == [0] * PRODUCERS
        expected = {"warm-up 0"} | {
            f"p{i} {n}" for i in range(PRODUCERS) for n in range(MESSAGES)
        }
        deadline = time.monotonic() + 300
        while set(_received(outputs)) != expected and time.monotonic() < deadline:
            time.sleep(0.2)
        stop.touch()
        exits = [c.wait(timeout=60) for c in consumers[1:]]
    finally:
        for process in producers + consumers:
            process.kill()
            process.wait(timeout=10)

    received = _received(outputs)
    assert set(received) == expected  # none lost
    doubled = {line: n for line, n in received.items() if n > 1}
    assert sum(doubled.values()) - len(doubled) <= PREFETCH  # only redeliveries
    assert exits == [0, 0, 0]  # no consumer failed
    assert files(folder, "in") == files(folder, "claimed") == []
    assert not (folder / "rejected").exists()
