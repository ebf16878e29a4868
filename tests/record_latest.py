#!/usr/bin/python3
"""Records a memcached's replies to tests/integration/latest_cases.py's request sequences into a
JSON-lines file (one record per case: name, args, reply lines, TTLs), the test data that
tests/integration/test_compare_latest.py replays against herdless.

    /usr/bin/python3 tests/record_latest.py /opt/memcached-1.6.45/bin/memcached \
        tests/integration/data/memcached-1.6.45.jsonl

The server is started (as the tests start memcached: loopback, a free port, -U 0) once per
argument list the cases use. The first line of the file records the server's `version`.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: record_latest.py <memcached binary> <output.jsonl>")
    binary, out_path = sys.argv[1:]
    os.environ["MEMCACHED_BIN"] = os.path.abspath(binary)
    sys.path.insert(0, os.path.join(HERE, "integration"))
    import harness
    import latest_cases

    servers = {}
    records = []
    try:
        for case in latest_cases.all_cases():
            if case.args not in servers:
                servers[case.args] = harness.start_memcached(case.args)
            server = servers[case.args]
            records.append(latest_cases.to_record(case, latest_cases.run(case, server.port)))
        with harness.Conn(next(iter(servers.values())).port) as conn:
            version = conn.call(b"version\r\n").decode().strip()
    finally:
        for server in servers.values():
            server.stop()
    with open(out_path, "w") as f:
        f.write(json.dumps({"recorded_from": version}) + "\n")
        for record in records:
            f.write(json.dumps(record) + "\n")
    print("%d cases recorded from %s into %s" % (len(records), version, out_path))


if __name__ == "__main__":
    main()
