"""Producers and consumers of the embedded broker, as separate processes, for
tests/test_broker.py (no Django: kombu and config.broker only).

    python -m tests.broker_stress produce FOLDER NAME COUNT
    python -m tests.broker_stress consume FOLDER OUTPUT STOP_FILE

A producer publishes COUNT messages {"producer": NAME, "n": i}. A consumer
writes "NAME i" for each message it receives to OUTPUT, flushed, then
acknowledges it (so a consumer killed between the two makes a redelivery,
never a loss), and exits 0 once STOP_FILE exists and the queue stays empty.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kombu import Connection, Consumer, Exchange, Producer, Queue

import config.broker  # noqa: F401 - registers pagewatch-files://

QUEUE = Queue("stress", Exchange("stress"), routing_key="stress")
PREFETCH = 10


def connection(folder: str | Path) -> Connection:
    return Connection(
        "pagewatch-files://localhost//",
        transport_options={"folder": str(folder), "polling_interval": 0.01},
    )


def produce(folder: str, name: str, count: int) -> None:
    with connection(folder) as conn:
        producer = Producer(conn.channel())
        for n in range(count):
            producer.publish(
                {"producer": name, "n": n},
                exchange=QUEUE.exchange,
                routing_key=QUEUE.routing_key,
                declare=[QUEUE],
                serializer="json",
            )


def consume(folder: str, output: str, stop_file: str) -> None:
    with connection(folder) as conn, open(output, "a", buffering=1) as out:

        def on_message(body: dict, message) -> None:  # noqa: ANN001
            out.write(f"{body['producer']} {body['n']}\n")
            out.flush()
            message.ack()

        with Consumer(conn, [QUEUE], callbacks=[on_message], accept=["json"]) as c:
            c.qos(prefetch_count=PREFETCH)
            while True:
                try:
                    conn.drain_events(timeout=1)
                except TimeoutError:
                    if Path(stop_file).exists():
                        return


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "produce":
        produce(args[0], args[1], int(args[2]))
    else:
        consume(*args)
