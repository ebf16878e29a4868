"""Stampede protection under hundreds of concurrent connections.

- meta: of 300 simultaneous `mg ... N` misses exactly one gets W, per lease period; after the
  lease times out exactly one more does, with a new CAS, and the old holder's `ms C` is refused.
- lease-get: exactly one token per lease period; a holder that dies (never stores) is replaced
  after lease_timeout; its late lease-set is refused, the new holder's stored, everyone hits.
- classic wait mode (-t 4): 300 parked `get`s are all answered with the new value once another
  connection sets it; none is answered before.
- classic wait mode with a dead holder: after lease_timeout exactly one parked reader takes the
  lease over (a miss), the rest keep waiting and get the value it stores.
- classic wait mode with parked readers whose clients left: none of them takes the dead lease
  over; the live reader parked behind them does, after one lease timeout.
- binary clients in stale and wait mode: a binary Get is a classic read (the winner gets Not
  found, the others the stale value, or wait for the Set); so is GAT/GATK, which touches only a
  fresh value it returns; Touch stays memcached's.
- refresh-ahead (mg Yr): keys read at about 100, 10 and under 1 reads/s through a read-through
  client: each value is refreshed early at most once, while still fresh; the hot key is; the
  cold key never is; `mg r`, refresh_grants and hot_keys agree with what the client saw.
Counts and values only; waits are for events (or for a lease timeout to pass), bounded.
Against memcached (TEST_AGAINST=memcached) only the meta part applies; the rest is skipped.
"""

# serial: 300 connections must each be answered within a lease of 1 or 2 s, and read rates are
# real time: CPU taken by tests running beside it could stretch them (tests/integration/run_all.py).

import select
import time

import harness
from binproto import BinConn, exp_extras, get as bin_get, packet as bin_packet, set_ as bin_set

N = 300
TIMEOUT = harness.TIMEOUT * 4


def wait_parked(conn, n):
    """waits_parked once it reaches n (the last value read if it does not within TIMEOUT)."""
    return harness.wait_for_stat(conn, "waits_parked", lambda parked: parked >= n, TIMEOUT)


def read_mg(conn):
    """(code, flags as a list of words, value or None)."""
    words = conn.recv_line().split()
    value = None
    if words[0] == b"VA":
        value = conn.recv_exact(int(words[1]) + 2)[:-2]
        return words[0], words[2:], value
    return words[0], words[1:], value


def read_lease_get(conn):
    """("VALUE"|"LVALUE", token or None, value)."""
    words = conn.recv_line().split()
    if words[0] == b"VALUE":
        value = conn.recv_exact(int(words[3]) + 2)[:-2]
        token = None
    elif words[0] == b"LVALUE":
        value = conn.recv_exact(int(words[4]) + 2)[:-2]
        token = int(words[2])
    else:
        raise AssertionError("lease-get: unexpected %r" % words)
    end = conn.recv_line()
    if end != b"END\r\n":
        raise AssertionError("lease-get: %r instead of END" % end)
    return words[0], token, value


def read_get(conn):
    """The value of a one-key get, or None for a miss."""
    line = conn.recv_line()
    if line == b"END\r\n":
        return None
    words = line.split()
    if words[0] != b"VALUE":
        raise AssertionError("get: unexpected %r" % line)
    value = conn.recv_exact(int(words[3]) + 2)[:-2]
    end = conn.recv_line()
    if end != b"END\r\n":
        raise AssertionError("get: %r instead of END" % end)
    return value


def open_conns(port, n):
    return [harness.Conn(port, timeout=TIMEOUT) for _ in range(n)]


def readable(conns, timeout):
    """The connections with reply bytes (buffered or on the socket) within `timeout`."""
    ready = [c for c in conns if c.buf]
    if ready:
        return ready
    socks = {c.sock: c for c in conns}
    r, _, _ = select.select(list(socks), [], [], timeout)
    return [socks[s] for s in r]


def meta_one_winner_per_lease_period(res):
    """N simultaneous `mg ... N30` of a missing key: one W, N - 1 Z. herdless's lease outlives
    the requests (30 s), as in lease_get_one_token_among_many."""
    herdless = harness.target_name() == "herdless"
    with harness.start_target(["-t", "4"] + (["-o", "lease_timeout=30"] if herdless else [])) as d:
        conns = open_conns(d.port, N)
        for c in conns:
            c.send(b"mg hot s v c N30\r\n")
        replies = [read_mg(c) for c in conns]
        res.equal(sum(1 for r in replies if b"W" in r[1]), 1, "meta: one W among %d simultaneous misses" % N)
        res.equal(sum(1 for r in replies if b"Z" in r[1]), N - 1, "meta: the others get Z")
        for c in conns:
            c.close()
    if not herdless:
        return
    # The winner "dies": after lease_timeout the next period has one W again, a new CAS, and
    # only its holder can store. 20 clients, answered well within the 2 s lease anywhere.
    with harness.start_herdless(["-t", "4", "-o", "lease_timeout=2"]) as d:
        conns = open_conns(d.port, 20)
        for c in conns:
            c.send(b"mg hot s v c N30\r\n")
        replies = [read_mg(c) for c in conns]
        winners = [r for r in replies if b"W" in r[1]]
        res.equal(len(winners), 1, "meta: one W among 20 simultaneous misses")
        first_cas = int([w for w in winners[0][1] if w.startswith(b"c")][0][1:])
        time.sleep(2.2)  # let the lease time out: the winner "died"
        for c in conns:
            c.send(b"mg hot s v c N30\r\n")
        replies = [read_mg(c) for c in conns]
        winners = [r for r in replies if b"W" in r[1]]
        res.equal(len(winners), 1, "meta: one W in the next lease period")
        second_cas = int([w for w in winners[0][1] if w.startswith(b"c")][0][1:])
        res.check(second_cas != first_cas, "meta: the new lease has a new CAS")
        res.equal(conns[0].call(b"ms hot 3 T30 C%d\r\nold\r\n" % first_cas), b"EX\r\n",
                  "meta: the dead holder's store is refused")
        res.equal(conns[1].call(b"ms hot 3 T30 C%d\r\nnew\r\n" % second_cas), b"HD\r\n",
                  "meta: the live holder's store succeeds")
        for c in conns:
            c.send(b"mg hot v\r\n")
        values = [read_mg(c) for c in conns]
        res.equal(sum(1 for v in values if v[2] == b"new" and not v[1]), len(conns),
                  "meta: everyone reads the new value, without hints")
        for c in conns:
            c.close()


def lease_get_one_token_among_many(res):
    """N simultaneous lease-gets of a missing key: one token, N - 1 hot misses. The lease
    outlives the requests (30 s): a second token after lease_timeout would be right, and 300
    requests took more than 3 s under TSan on a loaded machine."""
    with harness.start_herdless(["-t", "4", "-o", "lease_timeout=30"]) as d:
        conns = open_conns(d.port, N)
        for c in conns:
            c.send(b"lease-get hot\r\n")
        replies = [read_lease_get(c) for c in conns]
        tokens = [r[1] for r in replies if r[1] is not None and r[1] > 1]
        res.equal(len(tokens), 1, "lease-get: one token among %d misses" % N)
        res.equal(sum(1 for r in replies if r == (b"LVALUE", 1, b"")), N - 1,
                  "lease-get: the others get the hot miss (token 1, no value)")
        for c in conns:
            c.close()


def lease_get_with_a_crashed_holder(res):
    """The holder of a lease-get token dies without storing: after lease_timeout the next
    reader gets a new token, and the old one can no longer store. 20 clients, few enough
    to be answered well within the 1 s lease (3 s sanitized) on any machine."""
    holders = 20
    lease_s = 3 if harness.SANITIZED else 1
    with harness.start_herdless(["-t", "4", "-o", "lease_timeout=%d" % lease_s]) as d:
        conns = open_conns(d.port, holders)
        for c in conns:
            c.send(b"lease-get hot\r\n")
        replies = [read_lease_get(c) for c in conns]
        tokens = [r[1] for r in replies if r[1] is not None and r[1] > 1]
        res.equal(len(tokens), 1, "lease-get: one token among %d misses" % holders)
        old = tokens[0] if tokens else 0
        holder = [c for c, r in zip(conns, replies) if r[1] == old]
        for c in holder:  # the holder crashes without storing
            conns.remove(c)
            c.close()

        time.sleep(lease_s + 0.2)  # lease_timeout passes
        for c in conns:
            c.send(b"lease-get hot\r\n")
        replies = [read_lease_get(c) for c in conns]
        tokens = [r[1] for r in replies if r[1] is not None and r[1] > 1]
        res.equal(len(tokens), 1, "lease-get: one new token after the holder died")
        new = tokens[0] if tokens else 0
        res.check(new != old, "lease-get: the new token supersedes the old one")
        res.equal(conns[0].call(b"lease-set hot %d 0 30 3\r\nold\r\n" % old), b"NOT_STORED\r\n",
                  "lease-set with the superseded token is refused")
        res.equal(conns[0].call(b"lease-set hot %d 0 30 3\r\nnew\r\n" % new), b"STORED\r\n",
                  "lease-set with the live token is stored")
        res.equal(conns[0].call(b"lease-set hot %d 0 30 3\r\nbad\r\n" % new), b"NOT_STORED\r\n",
                  "a fulfilled token cannot store twice")
        for c in conns:
            c.send(b"lease-get hot\r\n")
        replies = [read_lease_get(c) for c in conns]
        res.equal(sum(1 for r in replies if r == (b"VALUE", None, b"new")), len(conns),
                  "lease-get: everyone hits the new value")
        s = harness.stats(conns[0])
        res.check(int(s["lease_timeouts"]) >= 1, "stats: lease_timeouts counted", repr(s))
        res.equal(s["lease_sets_refused"], "2", "stats: lease_sets_refused")
        res.equal(s["curr_leases"], "0", "stats: no lease left")
        for c in conns:
            c.close()


def wait_mode_parked_readers_woken_by_another_worker(res):
    with harness.start_herdless(["-t", "4", "-o", "classic_stampede=wait,lease_timeout=30"]) as d:
        control = harness.Conn(d.port, timeout=TIMEOUT)
        res.equal(control.call(b"get hot\r\n"), b"END\r\n", "wait: the first reader wins (a miss)")
        readers = open_conns(d.port, N)
        readers[0].send(b"get hot\r\nversion\r\n")  # its pipeline waits behind the parked get
        for c in readers[1:]:
            c.send(b"get hot\r\n")
        parked = wait_parked(control, N)
        res.equal(parked, N, "wait: every reader is parked")
        res.equal(readable(readers, 0), [], "wait: no parked reader has been answered")
        # Other connections are not held up by the parked ones.
        control.call(b"set other 0 0 1\r\nx\r\n")
        res.equal(control.call(b"get other\r\n", b"END\r\n"), b"VALUE other 0 1\r\nx\r\nEND\r\n",
                  "wait: other keys answer at once")
        setter = harness.Conn(d.port, timeout=TIMEOUT)  # round-robin: another worker than most
        res.equal(setter.call(b"set hot 5 30 10\r\nrecomputed\r\n"), b"STORED\r\n",
                  "wait: the set")
        values = [read_get(c) for c in readers]
        res.equal(sum(1 for v in values if v == b"recomputed"), N,
                  "wait: every parked reader gets the new value")
        res.equal(readers[0].recv_line(), b"VERSION 1.6.18-herdless\r\n",
                  "wait: the parked connection's pipeline resumes")
        s = harness.stats(control)
        res.equal(s["waits_woken"], str(N), "stats: waits_woken")
        res.equal(s["waits_timed_out"], "0", "stats: waits_timed_out")
        res.equal(s["curr_leases"], "0", "stats: the lease is fulfilled")
        for c in readers + [control, setter]:
            c.close()


def wait_mode_with_a_crashed_holder(res):
    n = 50
    with harness.start_herdless(["-t", "4", "-o", "classic_stampede=wait,lease_timeout=1"]) as d:
        control = harness.Conn(d.port, timeout=TIMEOUT)
        holder = harness.Conn(d.port, timeout=TIMEOUT)
        res.equal(holder.call(b"get hot\r\n"), b"END\r\n", "crash: the first reader wins")
        holder.close()  # and dies without storing
        readers = open_conns(d.port, n)
        for c in readers:
            c.send(b"get hot\r\n")
        res.equal(wait_parked(control, n), n, "crash: every reader is parked")
        # After lease_timeout one parked reader takes the lease over: its reply is a miss.
        first = readable(readers, TIMEOUT)
        res.equal(len(first), 1, "crash: exactly one reader is answered after the timeout")
        taker = first[0] if first else readers[0]
        res.equal(read_get(taker), None, "crash: the taker gets a miss (its cue to recompute)")
        others = [c for c in readers if c is not taker]
        res.equal(taker.call(b"set hot 0 30 5\r\nfresh\r\n"), b"STORED\r\n", "crash: the taker sets")
        values = [read_get(c) for c in others]
        res.equal(sum(1 for v in values if v == b"fresh"), n - 1,
                  "crash: the others wait for the new holder and get its value")
        s = harness.stats(control)
        # The taker's wait timed out. Another reader whose timer fires in the
        # instant between the new value's store and its wake-up is answered
        # with that value but counted as timed out: how many do is timing.
        timed_out, woken = int(s["waits_timed_out"]), int(s["waits_woken"])
        res.check(timed_out >= 1, "stats: the taker's wait timed out", "waits_timed_out %d" % timed_out)
        res.equal(timed_out + woken, n, "stats: every parked reader was answered once")
        res.check(int(s["lease_timeouts"]) >= 1, "stats: the dead lease timed out", repr(s))
        for c in readers + [control]:
            c.close()


def wait_mode_with_parked_readers_that_left(res):
    """Parked readers whose clients closed (timed out) never take over a dead lease: the one
    live reader parked with them does, after one lease timeout, not after one each. The
    readers' waits end a few seconds after the lease dies, long after their closes are read."""
    n = 5
    wait_ms = 8000 if harness.SANITIZED else 3000
    with harness.start_herdless(["-t", "2", "-o", "classic_stampede=wait,lease_timeout=1,"
                                 "wait_timeout_ms=%d" % wait_ms]) as d:
        control = harness.Conn(d.port, timeout=TIMEOUT)
        holder = harness.Conn(d.port, timeout=TIMEOUT)
        res.equal(holder.call(b"get hot\r\n"), b"END\r\n", "left: the holder wins, and hangs")
        gone = open_conns(d.port, n)
        for c in gone:
            c.send(b"get hot\r\n")
        res.equal(wait_parked(control, n), n, "left: the readers that will leave are parked")
        live = harness.Conn(d.port, timeout=TIMEOUT)
        live.send(b"get hot\r\n")
        res.equal(wait_parked(control, n + 1), n + 1, "left: the live reader is parked behind them")
        for c in gone:
            c.close()
        res.equal(read_get(live), None, "left: the live reader takes the dead lease over (a miss)")
        res.equal(live.call(b"set hot 0 30 5\r\nfresh\r\n"), b"STORED\r\n", "left: and stores")
        s = harness.stats(control)
        # (the dead lease's placeholder may have expired by then: the live reader's lease is a
        # takeover or a new one, either way the only lease after the holder's)
        res.equal(s["lease_grants"], "2", "left: one lease after the dead one: the readers that "
                  "left took none")
        for c in [control, holder, live]:
            c.close()


def wait_mode_woken_by_a_delayed_flush(res):
    n = 20
    with harness.start_herdless(["-t", "4", "-o", "classic_stampede=wait,lease_timeout=60"]) as d:
        control = harness.Conn(d.port, timeout=TIMEOUT)
        # Many other items: the expiry crawler alone (64 a tick) would take
        # minutes to reach the flushed key.
        fill = b"".join(b"set f%d 0 0 1 noreply\r\nx\r\n" % i for i in range(30000))
        res.equal(control.call(fill + b"get f29999\r\n", b"END\r\n"),
                  b"VALUE f29999 0 1\r\nx\r\nEND\r\n", "flush: 30000 items stored")
        res.equal(control.call(b"get hot\r\n"), b"END\r\n", "flush: the first reader wins")
        readers = open_conns(d.port, n)
        for c in readers:
            c.send(b"get hot\r\n")
        res.equal(wait_parked(control, n), n, "flush: every reader is parked")
        res.equal(control.call(b"flush_all 1\r\n"), b"OK\r\n", "flush: a delayed flush_all")
        # When the flush takes effect the lease goes with the key: the parked
        # readers are woken (not left to the 60 s lease timeout); the first to
        # read again takes a new lease (a miss), the others wait for it.
        first = readable(readers, TIMEOUT)
        res.equal(len(first), 1, "flush: exactly one woken reader takes the new lease")
        taker = first[0] if first else readers[0]
        res.equal(read_get(taker), None, "flush: the taker gets a miss (its cue to recompute)")
        res.equal(taker.call(b"set hot 0 30 5\r\nfresh\r\n"), b"STORED\r\n", "flush: the taker sets")
        others = [c for c in readers if c is not taker]
        values = [read_get(c) for c in others]
        res.equal(sum(1 for v in values if v == b"fresh"), n - 1,
                  "flush: the others get the new holder's value")
        s = harness.stats(control)
        res.equal(s["waits_timed_out"], "0", "stats: no wait timed out")
        for c in readers + [control]:
            c.close()


def binary_clients_in_the_classic_modes(res):
    n = 50
    with harness.start_herdless(["-t", "4", "-o", "classic_stampede=stale,stale_grace=30"]) as d:
        control = BinConn(d.port, timeout=TIMEOUT)
        res.equal(control.call(bin_set("hot", "old", exptime=1)).status, 0, "binary stale: set")
        time.sleep(2.1)   # expire (TTLs count whole seconds) into the stale grace
        readers = [BinConn(d.port, timeout=TIMEOUT) for _ in range(n)]
        replies = [c.call(bin_get("hot", i)) for i, c in enumerate(readers)]
        misses = [r for r in replies if r.status == 1]
        res.equal(len(misses), 1, "binary stale: exactly one reader gets Not found (recompute)")
        res.equal(sum(1 for r in replies if r.status == 0 and r.value == b"old"), n - 1,
                  "binary stale: every other reader gets the stale value")
        for c in readers + [control]:
            c.close()
    with harness.start_herdless(["-t", "4", "-o", "classic_stampede=wait,lease_timeout=30"]) as d:
        control = BinConn(d.port, timeout=TIMEOUT)
        res.equal(control.call(bin_get("hot", 1)).status, 1, "binary wait: the winner's miss")
        readers = [BinConn(d.port, timeout=TIMEOUT) for _ in range(n)]
        for i, c in enumerate(readers):
            c.send(bin_get("hot", i, "GETK"))
        text = harness.Conn(d.port, timeout=TIMEOUT)
        res.equal(wait_parked(text, n), n, "binary wait: every reader is parked")
        res.equal(readable(readers, 0), [], "binary wait: no parked reader has been answered")
        res.equal(control.call(bin_set("hot", "fresh")).status, 0, "binary wait: the set")
        values = [c.recv_packet() for c in readers]
        res.equal(sum(1 for v in values if v.status == 0 and v.key == b"hot" and
                      v.value == b"fresh"), n, "binary wait: every parked reader gets the value")
        for c in readers + [control, text]:
            c.close()


def bin_gat(key, exptime, opaque=0, op="GAT"):
    return bin_packet(op, key, exp_extras(exptime), opaque=opaque)


def binary_gat_in_the_classic_modes(res):
    n = 50
    with harness.start_herdless(["-t", "4", "-o", "classic_stampede=stale,stale_grace=30"]) as d:
        control = BinConn(d.port, timeout=TIMEOUT)
        text = harness.Conn(d.port, timeout=TIMEOUT)
        res.equal(control.call(bin_set("hot", "old", exptime=1)).status, 0, "binary GAT stale: set")
        time.sleep(2.1)   # expire (TTLs count whole seconds) into the stale grace
        readers = [BinConn(d.port, timeout=TIMEOUT) for _ in range(n)]
        replies = [c.call(bin_gat("hot", 100, i, "GATK" if i % 2 else "GAT"))
                   for i, c in enumerate(readers)]
        res.equal(sum(1 for r in replies if r.status == 1), 1,
                  "binary GAT stale: exactly one reader gets Not found (recompute)")
        res.equal(sum(1 for r in replies if r.status == 0 and r.value == b"old"), n - 1,
                  "binary GAT stale: every other reader gets the stale value")
        res.equal(control.call(bin_packet("TOUCH", "hot", exp_extras(100))).status, 1,
                  "binary Touch of a stale value: Not found, as memcached")
        res.equal(text.call(b"mg hot t\r\n"), b"HD t-1 Z X\r\n",
                  "binary GAT stale: the stale value was not touched")
        res.equal(control.call(bin_set("hot", "new", exptime=5)).status, 0, "binary GAT stale: set")
        r = control.call(bin_gat("hot", 100))
        res.check(r.status == 0 and r.value == b"new", "binary GAT stale: the fresh value")
        ttl = int(text.call(b"mg hot t\r\n").split()[1][1:])
        res.check(ttl > 50, "binary GAT stale: the fresh value is touched", "t%d" % ttl)
        for c in readers + [control, text]:
            c.close()
    with harness.start_herdless(["-t", "4", "-o", "classic_stampede=wait,lease_timeout=30"]) as d:
        control = BinConn(d.port, timeout=TIMEOUT)
        res.equal(control.call(bin_gat("hot", 100)).status, 1, "binary GAT wait: the winner's miss")
        readers = [BinConn(d.port, timeout=TIMEOUT) for _ in range(n)]
        for i, c in enumerate(readers):
            c.send(bin_gat("hot", 100, i, "GATK"))
        text = harness.Conn(d.port, timeout=TIMEOUT)
        res.equal(wait_parked(text, n), n, "binary GAT wait: every reader is parked")
        res.equal(readable(readers, 0), [], "binary GAT wait: no parked reader has been answered")
        res.equal(control.call(bin_set("hot", "fresh", exptime=5)).status, 0, "binary GAT wait: the set")
        values = [c.recv_packet() for c in readers]
        res.equal(sum(1 for v in values if v.status == 0 and v.key == b"hot" and
                      v.value == b"fresh"), n, "binary GAT wait: every parked reader gets the value")
        ttl = int(text.call(b"mg hot t\r\n").split()[1][1:])
        res.check(ttl > 50, "binary GAT wait: the woken readers touched the value", "t%d" % ttl)
        for c in readers + [control, text]:
            c.close()


def refresh_ahead_by_read_rate(res):
    ttl = 3
    duration = 10.0
    keys = {"hot": 0.01, "warm": 0.1, "cold": 1.3}   # seconds between reads
    with harness.start_herdless(["-t", "2"]) as d:
        conn = harness.Conn(d.port, timeout=TIMEOUT)
        seen = {k: {"reads": 0, "misses": 0, "early": 0, "late": 0, "wins_per_cas": {}}
                for k in keys}
        last = {k: 0.0 for k in keys}
        start = time.monotonic()
        while time.monotonic() - start < duration:
            now = time.monotonic()
            for key, gap in keys.items():
                if now - last[key] < gap:
                    continue
                last[key] = now
                s = seen[key]
                conn.send(b"mg %s s v c Yr\r\n" % key.encode())
                code, flags, _ = read_mg(conn)
                s["reads"] += 1
                if code == b"EN":
                    s["misses"] += 1
                    conn.call(b"ms %s 1 T%d\r\nv\r\n" % (key.encode(), ttl))
                elif b"W" in flags:
                    cas = int([f for f in flags if f.startswith(b"c")][0][1:])
                    s["wins_per_cas"][cas] = s["wins_per_cas"].get(cas, 0) + 1
                    s["late" if b"X" in flags else "early"] += 1
                    # The recompute (instant here), stored with the lease's token.
                    res.equal(conn.call(b"ms %s 1 T%d C%d\r\nv\r\n" % (key.encode(), ttl, cas)),
                              b"HD\r\n", "refresh-ahead: the holder's store (%s)" % key)
            time.sleep(0.005)
        for key, s in seen.items():
            harness.log("refresh-ahead %s: %s" % (key, {k: v for k, v in s.items()
                                                        if k != "wins_per_cas"}))
            res.check(all(n == 1 for n in s["wins_per_cas"].values()),
                      "refresh-ahead: at most one hint per value (%s)" % key)
            res.equal(s["late"], 0, "refresh-ahead: no hint on an expired value (%s)" % key)
            # A value lives ttl - 1 s at least (whole-second expiry): at most one
            # early refresh per such period.
            res.check(s["early"] <= duration / (ttl - 1) + 1,
                      "refresh-ahead: at most one early refresh per TTL (%s)" % key,
                      str(s["early"]))
        res.check(seen["hot"]["early"] >= 1, "refresh-ahead: the hot key is refreshed early",
                  str(seen["hot"]))
        res.equal(seen["cold"]["early"], 0, "refresh-ahead: the cold key never is")
        res.check(seen["cold"]["misses"] >= 2, "refresh-ahead: the cold key expires as usual",
                  str(seen["cold"]))
        rate = float(conn.call(b"mg hot r\r\n").split()[1][1:])
        res.check(rate > 2, "refresh-ahead: mg r shows the hot key's rate", str(rate))
        res.check(conn.call(b"mg cold r\r\n") in (b"HD r0.00\r\n", b"EN\r\n"),
                  "refresh-ahead: mg r shows no rate for the cold key")
        st = harness.stats(conn)
        res.equal(int(st["refresh_grants"]), sum(s["early"] for s in seen.values()),
                  "stats: refresh_grants counts the early hints the client saw")
        res.check(int(st["hot_keys"]) >= 1, "stats: hot_keys counts the hot key", st["hot_keys"])
        conn.close()

def body(res):
    meta_one_winner_per_lease_period(res)
    if harness.target_name() != "herdless":
        harness.log("lease-get and classic modes are herdless extensions: skipped")
        return
    lease_get_one_token_among_many(res)
    lease_get_with_a_crashed_holder(res)
    wait_mode_parked_readers_woken_by_another_worker(res)
    wait_mode_with_a_crashed_holder(res)
    wait_mode_with_parked_readers_that_left(res)
    wait_mode_woken_by_a_delayed_flush(res)
    binary_clients_in_the_classic_modes(res)
    binary_gat_in_the_classic_modes(res)
    refresh_ahead_by_read_rate(res)


if __name__ == "__main__":
    harness.run("test_stampede", body)
