"""Helpers for the multi-node tests (test_twemproxy.py, test_hashclient.py): key names that
spread over a ring, which node holds which key, and a pool of reader threads that go through
stampede rounds together."""

import hashlib
import threading

from pymemcache.client.base import Client

import harness


def key_names(prefix, count):
    """Keys as applications make them (an id's digest). Short keys that differ only in trailing
    digits ("key:0".."key:299") cluster under twemproxy's fnv1a_64: measured 210/90/0 over three
    nodes (md5, murmur and hsieh spread them evenly); see docs/deployment.md."""
    return ["%s%s" % (prefix, hashlib.sha1(str(i).encode()).hexdigest()[:16]) for i in range(count)]


def owners(nodes, keys):
    """{key: [indexes of the nodes that hold it]}, asked of each node directly."""
    held = {k: [] for k in keys}
    for i, node in enumerate(nodes):
        c = Client(("127.0.0.1", node.port), connect_timeout=harness.TIMEOUT, timeout=harness.TIMEOUT)
        for start in range(0, len(keys), 100):
            for k in c.get_many(keys[start:start + 100]):
                held[k].append(i)
        c.close()
    return held


def run_rounds(count, open_reader, read_round, rounds, before_round, after_round, deadline_s):
    """`count` threads, each with its own open_reader() (closed with .close()), go through the
    rounds together: before_round(i, round) runs alone, then every thread runs
    read_round(reader, round), then after_round(round) runs alone. A failure anywhere releases
    the threads."""
    barrier = threading.Barrier(count + 1)

    def thread_body():
        reader = open_reader()
        try:
            for rnd in rounds:
                barrier.wait(timeout=deadline_s)
                read_round(reader, rnd)
                barrier.wait(timeout=deadline_s)
        except threading.BrokenBarrierError:
            pass  # the test failed elsewhere and let the readers go
        finally:
            reader.close()

    threads = [threading.Thread(target=thread_body, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    finished = False
    try:
        for i, rnd in enumerate(rounds):
            before_round(i, rnd)
            barrier.wait(timeout=deadline_s)       # the readers go
            barrier.wait(timeout=deadline_s * 2)   # every reader is done
            after_round(rnd)
        finished = True
    finally:
        if not finished:
            barrier.abort()
        for t in threads:
            t.join(timeout=deadline_s)
