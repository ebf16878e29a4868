"""herdless against memcached 1.6.45, from recorded transcripts (CI has no 1.6.45).

tests/record_latest.py ran latest_cases.py's request sequences against memcached 1.6.45 and
wrote its replies to data/memcached-1.6.45.jsonl. Here each case runs against herdless (with
`-o compat=1.6.45` for the cases where 1.6.45 and 1.6.18 differ) and its transcript must be
the recorded one, after the same masking test_compare does (CAS values as symbols, TTLs within
+-1 s, the version string; log lines' ts= and gid=). The cases marked same_in_1618 are also
compared live, side by side, against Debian's memcached 1.6.18 and herdless by default, and so
are the compat cases (herdless's default answer is 1.6.18's).
"""

import json
import os

import harness
import latest_cases

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "memcached-1.6.45.jsonl")


def recorded():
    with open(DATA) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return lines[0]["recorded_from"], {r["name"]: r for r in lines[1:]}


def body(results):
    version, records = recorded()
    harness.log("replaying %d transcripts recorded from %s" % (len(records), version))
    daemons = {}
    ran = differ = 0
    try:
        for case in latest_cases.all_cases():
            if harness.COMPARE_ONLY and harness.COMPARE_ONLY not in case.name:
                continue
            record = records.get(case.name)
            if not results.check(record is not None and record["args"] == list(case.args),
                                 "case %s: recorded (with args %s)" % (case.name, case.args),
                                 "re-run tests/record_latest.py"):
                continue
            # (TEST_AGAINST=memcached MEMCACHED_BIN=<1.6.45>: 1.6.45 against its own recording.)
            herdless = harness.target_name() == "herdless"
            args = case.args + (latest_cases.COMPAT_ARGS if case.compat and herdless else ())
            if args not in daemons:
                daemons[args] = harness.start_target(args)
            ours = latest_cases.run(case, daemons[args].port)
            detail = ours.differences(latest_cases.from_record(record))
            ran += 1
            if not results.check(detail is None, "case %s: memcached 1.6.45's replies" % case.name,
                                 detail or ""):
                differ += 1
        for daemon in daemons.values():
            results.check(daemon.alive(), "%s still running at the end" % daemon.name)
    finally:
        for daemon in daemons.values():
            daemon.stop()

    # A compat case's 1.6.18 answer is herdless's default one.
    live = [c for c in latest_cases.cases() if c.live]
    servers = harness.SideBySide()
    live_ran, live_differ = servers.compare(results, live,
                                            lambda case, d: latest_cases.run(case, d.port))
    servers.stop(results)
    harness.log("compare_latest: %d cases replayed against 1.6.45's transcripts, %d differ; "
                "%d compared live with 1.6.18, %d differ" % (ran, differ, live_ran,
                                                              len(live_differ)))


if __name__ == "__main__":
    harness.run("test_compare_latest", body)
