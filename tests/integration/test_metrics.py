#!/usr/bin/env python3
"""-o metrics: herdless's Prometheus endpoint, read by Debian's Prometheus.

- a known workload (lease-get misses, lease-sets, hits, stale serves after `md I`), then
  Prometheus on loopback scraping herdless every second: its HTTP API returns the exact lease,
  hit and stale counts, and `up` 1;
- `promtool check metrics` passes on the endpoint's text; each family has HELP and TYPE;
- scrapes while four clients run sets and gets: every scrape parses, counters never go back,
  every request gets its right reply, and the last scrape agrees with `stats`;
- the endpoint with -s (no TCP listener) and with -Z, `stats settings` shows the address, other paths are
  404, a bad address or a taken port stops the start.

Every wait is bounded (Prometheus' first scrape of the final counts: at most 30 s).
"""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import harness
from harness import Conn

KEYS = 7
HITS_PER_KEY = 3
STALE_READS = 4
PROM_WAIT_S = 60 if harness.SANITIZED else 30


def fetch(port, path="/metrics"):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=harness.TIMEOUT) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def samples(text):
    """{series: float} of an exposition text, and its families' (HELP, TYPE) counts."""
    out, help_lines, type_lines = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ")[2]
            help_lines[name] = help_lines.get(name, 0) + 1
        elif line.startswith("# TYPE "):
            name = line.split(" ")[2]
            type_lines[name] = type_lines.get(name, 0) + 1
        elif line:
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out, help_lines, type_lines


def workload(port):
    """Leases on KEYS keys, HITS_PER_KEY hits each, then STALE_READS stale serves of one."""
    with Conn(port) as a, Conn(port) as b:
        for i in range(KEYS):
            key = b"lk%d" % i
            reply = a.call(b"lease-get " + key + b"\r\n", b"END\r\n")
            token = reply.split(b" ")[2]
            assert b.call(b"lease-get " + key + b"\r\n", b"END\r\n").startswith(b"LVALUE " + key + b" 1 ")
            assert a.call(b"lease-set %s %s 0 0 2\r\nv%d\r\n" % (key, token, i)) == b"STORED\r\n"
            for _ in range(HITS_PER_KEY):
                assert a.call(b"get " + key + b"\r\n", b"END\r\n") == b"VALUE %s 0 2\r\nv%d\r\nEND\r\n" % (key, i)
        assert a.call(b"md lk0 I\r\n") == b"HD\r\n"
        for _ in range(STALE_READS):
            assert b"lk0" in b.call(b"lease-get lk0\r\n", b"END\r\n")


def start_prometheus(workdir, target_port):
    web_port = harness.free_port()
    config = os.path.join(workdir, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: herdless\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % target_port)
    argv = ["/usr/bin/prometheus", "--config.file=" + config,
            "--storage.tsdb.path=" + os.path.join(workdir, "data"),
            "--web.listen-address=127.0.0.1:%d" % web_port, "--log.level=warn"]
    return harness.Process("prometheus", argv, web_port).start()


def query(web_port, expr):
    """The instant vector of `expr` as {label text: value}."""
    url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (web_port, urllib.parse.quote(expr))
    try:
        with urllib.request.urlopen(url, timeout=harness.TIMEOUT) as r:
            body = json.load(r)
    except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
        return None
    if body.get("status") != "success":
        return None
    return [float(s["value"][1]) for s in body["data"]["result"]]


def check_prometheus(results, d, metrics_port):
    with Conn(d.port) as c:
        want = harness.stat_values(c, "lease_grants", "lease_fulfilled", "get_hits", "stale_hits")
    results.equal(want["lease_grants"], KEYS + 1, "stats: lease grants (one per key, one after md I)")
    results.equal(want["lease_fulfilled"], KEYS, "stats: leases fulfilled")
    results.equal(want["get_hits"], KEYS * HITS_PER_KEY + STALE_READS, "stats: get hits (stale serves too)")
    results.equal(want["stale_hits"], STALE_READS, "stats: stale serves (the lease holder's too)")
    expected = {
        "herdless_lease_grants_total": want["lease_grants"],
        "herdless_lease_fulfilled_total": want["lease_fulfilled"],
        "herdless_stale_hits_total": want["stale_hits"],
        'memcached_commands_total{command="get",status="hit"}': want["get_hits"],
        'up{job="herdless"}': 1,
    }
    workdir = tempfile.mkdtemp(prefix="herdless-prometheus-")
    try:
        prom = start_prometheus(workdir, metrics_port)
        for expr, value in expected.items():
            got = harness.wait_for(lambda: (query(prom.port, expr) or [None])[0] == value and value,
                                   seconds=PROM_WAIT_S)
            results.check(bool(got), "Prometheus' API: %s = %s" % (expr, value),
                          "last answer: %r" % query(prom.port, expr))
        prom.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def check_with_promtool(results, text, what):
    proc = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=text.encode(),
                          capture_output=True, timeout=30)
    results.check(proc.returncode == 0, what, (proc.stdout + proc.stderr).decode()[-2000:])


def check_format(results, metrics_port):
    status, content_type, text = fetch(metrics_port)
    results.equal(status, 200, "GET /metrics: 200")
    results.check(content_type.startswith("text/plain; version=0.0.4"), "exposition content type",
                  content_type)
    check_with_promtool(results, text, "promtool check metrics passes")
    values, helps, types = samples(text)
    families = {s.split("{")[0] for s in values}
    results.check(all(helps.get(f) == 1 and types.get(f) == 1 for f in families),
                  "every family has one HELP and one TYPE line",
                  repr(sorted(f for f in families if helps.get(f) != 1 or types.get(f) != 1)))
    for name in ("memcached_current_items", "memcached_limit_bytes", "memcached_items_evicted_total",
                 "memcached_current_bytes", 'memcached_slab_current_items{slab="1"}',
                 "herdless_curr_leases", "herdless_xfetch_grants_total",
                 "herdless_refresh_grants_total", "herdless_waits_parked_total",
                 "herdless_waits_woken_total", "herdless_hot_keys", "herdless_tracked_keys"):
        results.check(name in values, "series %s present" % name)
    results.equal(values.get("memcached_current_items"), float(KEYS), "memcached_current_items")
    status = None
    try:
        fetch(metrics_port, "/other")
    except urllib.error.HTTPError as e:
        status = e.code
    results.equal(status, 404, "another path: 404")


def client_load(port, n, index, errors):
    with Conn(port) as c:
        for i in range(n):
            key = b"load%d_%d" % (index, i % 50)
            if c.call(b"set %s 0 0 4\r\nabcd\r\n" % key) != b"STORED\r\n":
                errors.append("set %s" % key)
            if c.call(b"get " + key + b"\r\n", b"END\r\n") != b"VALUE %s 0 4\r\nabcd\r\nEND\r\n" % key:
                errors.append("get %s" % key)


def check_scrapes_under_load(results, d, metrics_port):
    errors, threads = [], []
    for i in range(4):
        threads.append(threading.Thread(target=client_load, args=(d.port, 2000, i, errors)))
        threads[-1].start()
    previous, scrapes, backwards = 0.0, 0, []
    while any(t.is_alive() for t in threads) or scrapes == 0:
        values, _, _ = samples(fetch(metrics_port)[2])
        now = values["herdless_cmd_get_total"]
        if now < previous:
            backwards.append((previous, now))
        previous = now
        scrapes += 1
    for t in threads:
        t.join()
    results.check(not errors, "every request under scraping got its reply", repr(errors[:5]))
    results.check(scrapes > 1 and not backwards, "%d scrapes during the load, cmd_get never went back"
                  % scrapes, repr(backwards[:5]))
    values, _, _ = samples(fetch(metrics_port)[2])
    with Conn(d.port) as c:
        s = harness.stats(c)
    results.equal(values["herdless_cmd_get_total"], float(s["cmd_get"]), "cmd_get: the metric is stats'")
    results.equal(values["memcached_current_items"], float(s["curr_items"]), "curr_items: the metric is stats'")


def check_setup(results):
    path = tempfile.mktemp(prefix="herdless-metrics-", suffix=".sock")
    port = harness.free_port()
    d = harness.start_herdless(["-s", path, "-o", "metrics=%d" % port], unix_socket=path)
    with Conn(path) as c:
        results.equal(harness.stats(c, "settings").get("metrics"), "127.0.0.1:%d" % port,
                      "stats settings: metrics")
        c.call(b"set viaunix 0 0 1\r\nx\r\n")
    values, _, _ = samples(fetch(port)[2])
    results.equal(values.get("memcached_current_items"), 1.0, "-s: the endpoint serves")
    harness.check_refuses_to_start(results, ["-o", "metrics=[::1]9150"], b"for -o metrics",
                                   "a malformed metrics address")
    harness.check_refuses_to_start(results, ["-o", "metrics=%d" % port], b"metrics: failed to listen",
                                   "a metrics port in use")
    d.stop()
    from certs import Certs   # -Z: the endpoint beside TLS listeners
    tls_port = harness.free_port()
    d = harness.start_herdless(Certs().server_args() + ["-o", "metrics=%d" % tls_port])
    values, _, _ = samples(fetch(tls_port)[2])
    results.equal(values.get("memcached_up"), 1.0, "-Z: the endpoint serves")
    d.stop()
    with harness.start_herdless() as d, Conn(d.port) as c:
        results.equal(harness.stats(c, "settings").get("metrics"), "NULL", "off by default")
    check_snapshot_series(results)


def check_snapshot_series(results):
    """With -e the snapshot's series are there, in a format promtool accepts, and the load's
    left-out records are stats' snapshot_load_skipped_* by reason."""
    state = harness.scratch_dir("herdless-metrics-e-")
    os.chmod(state, 0o777)   # -u nobody writes the file
    args = ["-e", os.path.join(state, "snapshot")]
    with harness.start_herdless(args) as d, Conn(d.port) as c:
        c.call(b"set soon 0 2 1\r\nx\r\n")
        stored_at = time.monotonic()
        c.call(b"set later 0 0 1\r\ny\r\n")
    # `soon` is written (its 2 s are not over at the stop) and expires while herdless is down.
    time.sleep(max(0.0, stored_at + 3.2 - time.monotonic()))
    port = harness.free_port()
    with harness.start_herdless(args + ["-o", "metrics=%d" % port]) as d, Conn(d.port) as c:
        s = harness.stat_values(c, "snapshot_loaded_items", "snapshot_load_skipped_expired")
        _, _, text = fetch(port)
    check_with_promtool(results, text, "-e: promtool check metrics passes")
    values, _, _ = samples(text)
    results.equal((s["snapshot_loaded_items"], s["snapshot_load_skipped_expired"]), (1, 1),
                  "-e: one item loaded, one left out as expired")
    results.equal((values.get("herdless_snapshot_loaded_items"),
                   values.get('herdless_snapshot_load_skipped_items{reason="expired"}'),
                   values.get('herdless_snapshot_load_skipped_items{reason="flushed"}')),
                  (1.0, 1.0, 0.0), "-e: the load's figures as series")


def body(results):
    metrics_port = harness.free_port()
    d = harness.start_herdless(["-t", "2", "-o", "metrics=127.0.0.1:%d" % metrics_port])
    workload(d.port)
    check_format(results, metrics_port)
    check_prometheus(results, d, metrics_port)
    check_scrapes_under_load(results, d, metrics_port)
    results.check(d.alive(), "herdless still running")
    d.stop()
    check_setup(results)


if __name__ == "__main__":
    harness.run("test_metrics", body)
