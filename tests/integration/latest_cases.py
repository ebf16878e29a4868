"""The request sequences whose memcached 1.6.45 replies are recorded (tests/record_latest.py) into
data/memcached-1.6.45.jsonl and replayed against herdless (test_compare_latest.py).

A case is test_compare's Case (steps on one or more connections, replies collected with `mn`)
plus, optionally, a stream read after the steps: `dump` (a request such as `lru_crawler mgdump
all`, read up to its end line; the listed lines are sorted, as their order is the hash table's)
or `watch` (the kinds a watcher connection asks for before the steps, and how many log lines
the steps make it print). Log lines' `ts=`, `gid=` and `cfd=` are masked, as CAS values and TTLs are
(test_compare.TextTranscript).

same_in_1618: Debian's memcached 1.6.18 answers the case the same way, so the test also compares
it live. compat: herdless gives 1.6.45's answer only under `-o compat=1.6.45`; its default answer
is compared live with 1.6.18's unless live=False (a stream 1.6.18 refuses, or a difference the
docs/protocol.md table lists for both settings).

A ShapeCase records what `stats` and `stats settings` print, over text or binary: the names in
order and the values that neither vary from run to run nor differ by design (SHAPE_MASKED). Its
replay drops the names herdless has and memcached lacks (herdless's own settings and counters)
and memcached's extstore block (herdless has no extstore); every other name must be there, in
1.6.45's order. A BinaryCase sends binary packets and records the replies field by field.
"""

import re

import harness
import test_compare as tc
from binproto import OP, OPNAME, BinConn, packet, parse, set_extras
from test_compare import SYNC, Case, setcmd

COMPAT_ARGS = ("-o", "compat=1.6.45")


class LatestCase(Case):
    def __init__(self, name, steps, args=(), same_in_1618=False, compat=False, dump=None,
                 watch=None, live=True):
        super().__init__(name, steps, args=args)
        self.same_in_1618 = same_in_1618
        self.compat = compat
        self.live = live and (same_in_1618 or compat)
        self.dump = dump     # (request, end line)
        self.watch = watch   # (watch request, number of lines the steps log)


def cases():
    c = []
    add = lambda *a, **k: c.append(LatestCase(*a, **k))

    # E<cas> (1.6.19+): the client chooses the item's CAS.
    add("e_cas_ms", [b"ms d 1 E77 c\r\nx\r\n", b"mg d c v\r\n", b"ms d 1 C77 E78 c\r\ny\r\n",
                     b"mg d c\r\n", b"ms d 1 C77 E79 c\r\nz\r\n", b"ms d 1 MA E90 c\r\nz\r\n",
                     b"mg d c v\r\n", b"ms d 1 Eabc\r\nz\r\n", b"ms d 1 E\r\nz\r\n"])
    add("e_cas_md_ma_mg", [b"ms d 1\r\nx\r\n", b"md d I E90\r\n", b"mg d c\r\n", b"md d E5\r\n",
                           b"mg d c\r\n", b"ma e N0 J5 E55 c v\r\n", b"ma e E56 c v\r\n",
                           b"mg b N30 E1234 c v t\r\n", b"mg b E1 c\r\n", b"mg e E1 c\r\n",
                           b"mg b Exyz\r\n"])
    # md x (1.6.19+): empty the value, keep the item.
    add("md_x", [b"ms a 2 T0 F5 c\r\nhi\r\n", b"md a x F7 T100\r\n", b"mg a c f v t s\r\n",
                 b"md a x\r\n", b"mg a f t s\r\n", b"md zz x\r\n", b"md a x C1\r\n", SYNC,
                 b"md a x C{cas1} q\r\n", b"mg a c s\r\n", b"md a x k O5\r\n"])
    add("md_x_stale", [b"ms a 2\r\nhi\r\n", b"md a x I E999\r\n", b"mg a c f v t s\r\n",
                       b"mg a c\r\n", b"ms a 3 C999\r\nnew\r\n", b"mg a v c\r\n",
                       b"md a x I T30\r\n", b"mg a t v\r\n"])
    # ms N in append/prepend mode (1.6.20+), ms s.
    add("ms_append_vivify", [b"ms c 2 MA N30 F3 s c\r\nab\r\n", b"mg c v f t\r\n",
                             b"ms c 1 MP N30 s\r\nz\r\n", b"mg c v t\r\n",
                             b"ms nn 1 MA s\r\nz\r\n", b"ms np 1 MP N0 F9\r\nq\r\n",
                             b"mg np v f t\r\n", b"ms c 2 s\r\nxy\r\n"])
    # slabs automove window / freeratio (1.6.20+).
    add("slabs_automove_new", [b"slabs automove window 2\r\n", b"slabs automove window 1801\r\n",
                               b"slabs automove window 5\r\n", b"slabs automove window x\r\n",
                               b"slabs automove window\r\n", b"slabs automove freeratio 0.5\r\n",
                               b"slabs automove freeratio\r\n",
                               b"slabs automove freeratio abc\r\n",
                               b"slabs automove window 1800\r\n", b"slabs automove window 3\r\n"])
    add("slabs_automove_1618", [b"slabs automove 0\r\n", b"slabs automove 2\r\n",
                                b"slabs automove 3\r\n", b"slabs automove x\r\n",
                                b"slabs automove ratio 0.5\r\n", b"slabs automove ratio\r\n",
                                b"slabs automove 1\r\n"], same_in_1618=True)
    # lru_crawler mgdump (1.6.22+).
    add("mgdump_all", [setcmd("a", "1"), b"ms Zm9v 1 b\r\nx\r\n", setcmd("big", "v" * 3000),
                       setcmd("gone", "1", exptime=-1)],
        dump=(b"lru_crawler mgdump all\r\n", b"EN\r\n"))
    add("mgdump_hash", [setcmd("a", "1"), setcmd("b", "2")],
        dump=(b"lru_crawler mgdump hash\r\n", b"EN\r\n"))
    add("mgdump_class", [setcmd("a", "1"), setcmd("big", "v" * 3000)],
        dump=(b"lru_crawler mgdump 1\r\n", b"EN\r\n"))
    # One at a time: a dump command refuses to follow requests whose replies are not sent yet.
    add("mgdump_errors", [b"lru_crawler mgdump 99\r\n", SYNC, b"lru_crawler mgdump 0\r\n", SYNC,
                          b"lru_crawler mgdump\r\n", SYNC, b"lru_crawler mgdump a b\r\n"])
    # mn flushes the replies before it: a dump after it is not pipelined.
    add("mgdump_after_mn", [setcmd("a", "1")], dump=(b"mn\r\nlru_crawler mgdump all\r\n", b"EN\r\n"))
    add("mgdump_disabled", [b"lru_crawler mgdump all\r\n"], args=("-X",))
    # (Not "lru_crawler disable" then mgdump: memcached stops its crawler thread asynchronously,
    # so what the mgdump meets varies from run to run.)
    # watch deletions (1.6.21+).
    add("watch_deletions", [setcmd("a", "hi"), b"delete a\r\n", b"delete a\r\n",
                            b"ms b 3 F4\r\nabc\r\n", b"md b\r\n", b"ms c 3\r\nabc\r\n",
                            b"md c x F9\r\n", b"ms d 1\r\nx\r\n", b"md d I\r\n",
                            b"md d x I\r\n"],
        watch=(b"watch deletions\r\n", 3))
    # Where 1.6.18 and 1.6.45 differ: herdless answers as 1.6.45 under -o compat=1.6.45 (these
    # are replayed so) and as 1.6.18 by default (compared live with 1.6.18).
    add("compat_short_lines", [b"\r\n", b" \r\n", b"a\r\n", b"ab\r\n", b"get\r\n", b"gets\r\n",
                               b"gat\r\n", b"gat 10\r\n", b"gats 10\r\n", b"set\r\n",
                               b"set a 0 0\r\n", b"add a\r\n", b"incr a\r\n", b"decr\r\n",
                               b"touch a\r\n", b"delete\r\n", b"mg\r\n", b"ms a\r\n", b"md\r\n",
                               b"ma\r\n", b"verbosity\r\n"], compat=True)
    add("compat_trailing_words", [b"set a 0 0 1 noreply extra\r\nx\r\n", b"get a\r\n",
                                  b"touch a 10 x y\r\n", b"incr a 1 x y\r\n",
                                  b"verbosity 1 2 3\r\n", b"delete a noreply extra\r\n",
                                  b"delete a 0\r\n", b"flush_all 0 x y\r\n",
                                  b"cache_memlimit 100 x y\r\n"], compat=True)
    # 1.6.45 takes the command word up to the first space: after a leading space only its operator
    # commands (flush_all, verbosity, ...) are found; a last "noreply" hides an unknown line's ERROR.
    add("compat_leading_space_noreply", [setcmd("a", "1"), b" get a\r\n", b"  mn\r\n", b" version\r\n",
                                         b" set a 0 0 1\r\nx\r\n", b" incr a 1 noreply\r\n", b"get a\r\n",
                                         b"   \r\n", b" verbosity 1\r\n", b" verbosity\r\n", b"foo noreply\r\n",
                                         b"GET a noreply\r\n", b"foo noreplyx\r\n", b"touch noreply\r\n",
                                         b" flush_all\r\n", b"get a\r\n"], compat=True)
    # 1.6.45's tokenizer gives up on a meta flag word that starts with neither a letter nor a digit.
    add("compat_meta_untokenizable_flag", [b"mg a +x\r\n", b"mg a v !\r\n", b"ms a 1 ~\r\nx\r\n",
                                           b"md a {\r\n", b"ma a -\r\n", b"me a ~\r\n", b"mg a \x80\r\n",
                                           b"mg a q q ~\r\n", b"mg a [ _\r\n", b"mx a ~\r\n"], compat=True)
    add("compat_cas_without_unique", [b"cas a 0 0 1\r\nx\r\n", b"cas a 0 0 1 noreply\r\nx\r\n",
                                      b"set a 0 0 x\r\n", b"set a z 0 1\r\nx\r\n"], compat=True)
    add("compat_mg_conditional", [b"ms a 2\r\nhi\r\n", b"mg a c\r\n", SYNC,
                                  b"mg a C{cas1} v c\r\n", b"mg a C1 v\r\n", b"mg a C{cas1} s\r\n"],
        compat=True)
    # 1.6.45 reads a length, a CAS, a delta, a TTL, a level and the meta flags' numbers with its
    # token readers: digits only (a '-' for the signed ones), in range, a flag's number not empty.
    # (cachedump: an empty class; what memcached lists of a class depends on its LRU thread.)
    add("compat_token_numbers_text",
        [b"set a +0 +0 +1\r\nx\r\n", b"set a 0 0 01\r\nx\r\n", b"cas a 0 0 1 +1\r\nx\r\n",
         b"set n 0 0 1\r\n5\r\n", b"incr n +1\r\n", b"decr n 00000000000000000000001\r\n",
         b"incr n 000000000000000000000001\r\n", b"touch a +10\r\n", b"touch a 2147483648\r\n",
         b"gat +10 a\r\n", b"gat - a\r\n", b"verbosity +1\r\n", b"verbosity 4294967296\r\n",
         b"flush_all +0\r\n", b"cache_memlimit +100\r\n", b"stats cachedump +30 1\r\n",
         b"stats cachedump 30 00000000001\r\n", b"get a\r\n"], compat=True)
    add("compat_token_numbers_meta",
        [b"ms a 1 T+5\r\nx\r\n", b"ms a 1 F+5\r\nx\r\n", b"ms a 1 C+1\r\nx\r\n", b"mg a f v\r\n",
         b"ms a +1\r\nx\r\n", b"ms a 01 T00000000005 F00000000005\r\nx\r\n",
         b"mg a T000000000005 t\r\n", b"mg a N+30 v\r\n", b"mg a R+5 v\r\n", b"mg a T\r\n",
         b"ms a 1 T\r\nx\r\n", b"ma n N0 J+5 v\r\n", b"ma n D+1 v\r\n", b"ma n D\r\n",
         b"ma n J\r\n", b"md a C+1\r\n", b"md a T+5 I\r\n", b"mg a f v\r\n"], compat=True)
    add("compat_token_numbers_cas_in", [b"ms a 1 E+7\r\nx\r\n", b"md a E\r\n",
                                        b"ms a 1 E18446744073709551616\r\nx\r\n",
                                        b"ms a 1 E18446744073709551615\r\nx\r\n", b"mg a c v\r\n"],
        compat=True, live=False)   # E is 1.6.19's: 1.6.18 refuses it
    # ma's q hides the HD of an item N created: from 1.6.19 on (1.6.18 answers it).
    add("compat_ma_vivify_quiet", [b"ma n q N30 J5\r\n", b"ma n q\r\n", b"ma n v\r\n",
                                   b"ma m q N0 J1 k O9 t\r\n", b"ma m q v\r\n", b"mg m v\r\n"],
        compat=True)
    # me's exp: 1.6.18 prints minus the remaining TTL, 1.6.24+ the TTL.
    add("compat_me_exp", [b"ms a 1 T100\r\nx\r\n", b"me a\r\n", b"ms b 1\r\nx\r\n", b"me b\r\n"],
        compat=True)
    add("compat_shutdown", [b"shutdown\r\n", b"shutdown graceful\r\n"], compat=True)
    add("compat_bget_sizes", [setcmd("a", "1"), b"bget a\r\n", b"stats sizes_enable\r\n",
                              b"stats sizes_disable\r\n"], compat=True)
    add("compat_md_errors", [b"md a Zz\r\n", b"md a q q\r\n", b"md a Tabc\r\n", b"md a Fx\r\n",
                             b"ma a Zz\r\n", b"ma a q q\r\n"], compat=True)
    add("compat_ms_mode_token", [b"ms a 1 MSX\r\nx\r\n", b"ms a 1 MEX\r\ny\r\n", b"ms a 1 M\r\nz\r\n",
                                 b"mg a v\r\n", b"ma n N0 MIX\r\n"], compat=True)
    # The lookup inside a delete, incr, decr, touch, md, ma of an expired copy logs `expired`
    # (-o no_lru_maintainer: nothing reclaims the copies first; the next set's allocation pulls
    # only the tail of its class, where the lookups left nothing expired).
    expired = lambda key: b"set %s 0 -1 1\r\n1\r\n" % key
    add("watch_expired_lookups",
        [expired(b"a"), b"delete a\r\n", expired(b"b"), b"incr b 1\r\n", expired(b"c"),
         b"touch c 10\r\n", expired(b"d"), b"md d\r\n", expired(b"e"), b"ma e\r\n",
         expired(b"f"), b"mg f v\r\n", expired(b"g"), b"gat 10 g\r\n", expired(b"i"),
         b"md i I\r\n", expired(b"j"), b"decr j 1\r\n"],
        args=("-o", "no_lru_maintainer"), watch=(b"watch fetchers\r\n", 18), same_in_1618=True)
    add("watch_expired_md_x", [expired(b"h"), b"md h x\r\n"], args=("-o", "no_lru_maintainer"),
        watch=(b"watch fetchers\r\n", 2))
    # lru_crawler crawl's class list: safe_strtoul in both (+1, the low 32 bits); hash only
    # dumps. (-o no_lru_maintainer: no background crawl makes a reply BUSY.)
    add("lru_crawler_crawl_classes",
        [b"lru_crawler crawl hash\r\n", b"lru_crawler crawl 0\r\n", b"lru_crawler crawl 64\r\n",
         b"lru_crawler crawl -1\r\n", b"lru_crawler crawl 1,x\r\n", b"lru_crawler crawl 1,,64\r\n",
         b"lru_crawler crawl 4294967360\r\n", b"lru_crawler crawl +0\r\n"],
        args=("-o", "no_lru_maintainer"), same_in_1618=True)
    add("watch_kinds", [b"watch bogus\r\n"], same_in_1618=True)
    add("watch_after_mn", [], dump=(b"mn\r\nwatch fetchers\r\n", b"OK\r\n"), same_in_1618=True)
    # 1.6.45's parser takes a prefix of an operator command's words.
    add("compat_stats_prefix", [b"stats r\r\n", b"stats det on\r\n", b"stats detail d\r\n",
                                b"stats detail of\r\n", b"stats detail x\r\n",
                                b"stats c 1 1\r\n", b"stats c\r\n", b"stats sizes\r\n",
                                b"stats siz\r\n", b"stats sl\r\n", b"stats settingsx\r\n",
                                b"stats resetx\r\n"], compat=True)
    add("compat_slabs_prefix", [b"slabs a 0\r\n", b"slabs auto 1\r\n",
                                b"slabs automove r 0.7\r\n", b"slabs automove f 0.02\r\n",
                                b"slabs automove w 20\r\n", b"slabs automove wi\r\n",
                                b"slabs re 1 1\r\n", b"slabs re 99 1\r\n", b"slabs automovex 1\r\n",
                                b"slabs automove ratio 0.8\r\n"], compat=True)
    add("compat_lru_crawler_prefix", [b"lru_crawler t 0\r\n", b"lru_crawler s 100\r\n",
                                      b"lru_crawler sl 2000000\r\n", b"lru_crawler e\r\n",
                                      b"lru_crawler x 1\r\n", b"lru_crawler c 99\r\n", SYNC,
                                      b"lru_crawler m 99\r\n", SYNC, b"lru_crawler mg 99\r\n"],
        compat=True)
    # 1.6.45 reads slabs' numbers with its token readers: digits only, in range.
    add("compat_slabs_numbers", [b"slabs automove +1\r\n", b"slabs automove 4294967297\r\n",
                                 b"slabs reassign +1 2\r\n", b"slabs reassign 1 -0\r\n",
                                 b"slabs automove 1\r\n"], compat=True)
    add("compat_lru_crawler_numbers", [b"lru_crawler tocrawl +5\r\n", b"lru_crawler sleep +5\r\n",
                                       b"lru_crawler tocrawl 4294967296\r\n",
                                       b"lru_crawler tocrawl 0\r\n", b"lru_crawler sleep 100\r\n"],
        compat=True)
    add("compat_slabs_window_number", [b"slabs automove window +5\r\n",
                                       b"slabs automove window 4294967326\r\n",
                                       b"slabs automove window 10\r\n"], compat=True, live=False)
    # A trailing noreply hides every reply of slabs, lru_crawler and shutdown, errors too.
    add("compat_operator_noreply", [b"lru_crawler tocrawl 0 noreply\r\n",
                                    b"lru_crawler sleep x noreply\r\n", b"lru_crawler x noreply\r\n",
                                    b"lru_crawler noreply\r\n", b"slabs x noreply\r\n",
                                    b"slabs reassign 1 1 noreply\r\n", b"shutdown noreply\r\n",
                                    b"lru_crawler tocrawl 0\r\n"], compat=True)
    # (1.6.45 also logs the lookup inside a set as an item_get: fetchers are left out here.)
    add("compat_watch_prefix", [setcmd("a", "1")], watch=(b"watch m e\r\n", 1), compat=True,
        live=False)
    add("compat_stats_detail_disabled", [b"stats detail on\r\n", b"stats detail dump\r\n"],
        args=("-X",), compat=True)
    # lru tune|mode|temp_ttl: the replies, and what `stats settings` then shows (1.6.18's too).
    add("lru_command", [x for x in tc.LRU_STEPS if x not in LRU_COMPAT_ONLY], same_in_1618=True,
        live=False)   # test_compare.py compares them live
    add("compat_lru_prefix", [b"lru m f\r\n", b"lru mo segmented\r\n", b"lru t 5\r\n",
                              b"lru te -1\r\n", b"lru tu 10 10 1 1\r\n", b"lru mode fl\r\n",
                              b"lru tune +5 10 1 1\r\n", b"lru tune 5 10 1 1 noreply\r\n",
                              b"lru temp_ttl 4294967296\r\n", b"lru tune 4294967296 1 1 1\r\n"]
        + tc.LRU_DEFAULTS, compat=True)
    c.append(ShapeCase("lru_settings", b"stats settings\r\n", only=LRU_SETTINGS,
                       before=[b"lru tune 15 35 0.25 2.5\r\n", b"lru mode flat\r\n",
                               b"lru temp_ttl 30\r\n"], same_in_1618=True))
    c.append(ShapeCase("lru_settings_after", b"stats settings\r\n", only=LRU_SETTINGS,
                       before=tc.LRU_DEFAULTS, same_in_1618=True))
    # memcached's crawler / maintainer switches in `stats settings` (lru mode needs the maintainer).
    for args in (("-o", "no_modern"), ("-o", "no_lru_maintainer"), ("-o", "no_lru_crawler"),
                 ("-o", "temporary_ttl=61")):
        c.append(ShapeCase("switch_" + args[1].split("=")[0], b"stats settings\r\n", args=args,
                           only=SWITCH_SETTINGS, same_in_1618=True,
                           before=[b"lru mode flat\r\n", b"lru tune 10 10 1 1\r\n",
                                   b"slabs reassign 1 1\r\n"]))
    # Which of the slab mover's, crawler's and maintainer's lines `stats` prints (names only).
    for args in ((), ("-o", "no_modern"), ("-o", "no_lru_maintainer"), ("-o", "no_lru_crawler"),
                 ("-o", "no_slab_reassign"), ("-o", "no_modern,lru_crawler,slab_reassign")):
        c.append(ShapeCase("stats_machinery" + "_".join([""] + list(args[1:])).replace(",", "_"),
                           b"stats\r\n", args=args, only=MACHINERY_STATS, values=(),
                           same_in_1618=True))
    # (Replayed only: memcached's disable stops the crawler thread without waiting, so a live
    # `stats` right after it may still show the crawler's lines.)
    c.append(ShapeCase("stats_machinery_crawler_disabled", b"stats\r\n", args=("-o", "lru_crawler"),
                       before=[b"lru_crawler disable\r\n"], only=MACHINERY_STATS, values=()))
    c.append(ShapeCase("switch_slab_mover", b"stats settings\r\n", same_in_1618=True,
                       args=("-o", "no_slab_reassign,no_maxconns_fast,slab_automove=2"),
                       only=SWITCH_SETTINGS - {"lru_segmented"}))   # memcached's starts at yes
    c.append(ShapeCase("switch_lru_tuning", b"stats settings\r\n", same_in_1618=True,
                       args=("-o", "hot_lru_pct=30,warm_lru_pct=45,hot_max_factor=0.5,"
                             "warm_max_factor=3,temporary_ttl=90"),
                       only=LRU_SETTINGS - {"lru_segmented"}))   # memcached's starts at yes

    # What memcached 1.6.45's proxy (--enable-proxy, routelib, route_direct) sends a backend, as
    # it wrote it (recorded between the proxy and a server): a `version` check per connection,
    # a client's multi-get split into one get per key, its noreply turned into "noreplY" (the
    # backend must answer, the proxy drops the reply), a meta `q` blanked out. docs/deployment.md.
    add("proxy_backend_classic", [
        b"version\r\n", b"set a 0 0 1 noreplY\r\n1\r\n", b"get a\r\n",
        b"set b 5 100 2\r\nhi\r\nset c 0 0 1 noreplY\r\n3\r\nget a\r\nget b\r\nget c\r\nget zz\r\n",
        b"gets a\r\ngets b\r\n", b"gat 100 a\r\n", b"gats 0 a\r\ngats 0 b\r\n",
        b"incr a 10 noreplY\r\n", b"decr a 1\r\n", b"touch b 10 noreplY\r\n", b"delete c\r\n",
        b"cas a 0 0 1 1 noreplY\r\nx\r\n", b"add b 0 0 1\r\nx\r\n", b"prepend b 0 0 1\r\nx\r\n",
        b"get b\r\n"], same_in_1618=True)
    add("proxy_backend_meta", [
        b"version\r\n", b"ms a 2 T0\r\n10\r\n", b"mg a v c t f s k O123  \r\n", b"mg zz v  \r\n",
        b"mg zz v k   O9\r\n", b"mg hot v c N30 R10 T60\r\n", b"mg hot v c N30 R10 T60\r\n",
        SYNC, b"ms hot 2 T60 C{cas2}\r\nhi\r\n", b"mg hot v c t\r\n", b"md hot I   T30\r\n",
        b"mg hot v c\r\n", b"mg hot v c\r\n", b"ms hot 2   I\r\nho\r\n", b"md hot  \r\n",
        b"mg hot v\r\n", b"ma n N0 J7 v\r\n", b"ma n   D5\r\n", b"ma n v MD\r\n",
        b"mg YWJj b v k\r\n", b"ms YWJj 1 b\r\nz\r\n", b"mg YWJj b v k\r\n"], same_in_1618=True)
    # A client's `delete <key> noreply` reaches the backend as `delete <key> noreplY`: 1.6.45
    # answers it, 1.6.18 refuses the line (CLIENT_ERROR, which also makes the proxy drop its
    # backend connection). herdless answers, by default too.
    add("proxy_backend_delete_noreply", [
        b"set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\n", b"delete a noreplY\r\n", b"delete a noreplY\r\n",
        b"delete b 0 noreplY\r\n", b"get a b\r\n"])
    return c


# 1.6.45 reads these differently (a prefix, digits only): compat_lru_prefix.
LRU_COMPAT_ONLY = {b"lru tune +5 10 .5 1e1\r\n", b"lru mode f\r\n", b"lru t 5\r\n"}
LRU_SETTINGS = {"lru_maintainer_thread", "lru_segmented", "hot_lru_pct", "warm_lru_pct",
                "hot_max_factor", "warm_max_factor", "temp_lru", "temporary_ttl"}
# (Not the slab mover's names that 1.6.18 and 1.6.45 differ on: the cases compare both.)
MACHINERY_STATS = {"hash_is_expanding", "slab_reassign_rescues", "slab_reassign_chunk_rescues",
                   "slab_reassign_inline_reclaim", "slab_reassign_busy_items",
                   "slab_reassign_busy_deletes", "slab_reassign_running", "slabs_moved",
                   "lru_crawler_running", "lru_crawler_starts", "lru_maintainer_juggles",
                   "malloc_fails"}
SWITCH_SETTINGS = {"maxconns_fast", "slab_reassign", "slab_automove", "slab_chunk_max", "lru_crawler",
                   "lru_maintainer_thread", "lru_segmented", "temp_lru", "temporary_ttl",
                   "hot_lru_pct"}


# Values a shape case masks: they vary from run to run, or differ by design (herdless's hash, its
# LRU, its threads and memory; docs/operations.md). `stats` keeps only STATS_VALUES.
SHAPE_MASKED = {"tcpport", "hash_algorithm", "lru_segmented"}
STATS_VALUES = {"version", "pointer_size", "slab_reassign_last_busy_status"}


class ShapeCase:
    """`stats <group>` over text (request: bytes) or binary (group: the STAT key). only: the
    names kept (with their values), the others left out; same_in_1618: herdless's default
    answer is compared live with Debian's 1.6.18 and replayed without -o compat=1.6.45."""

    def __init__(self, name, group, binary=False, args=(), before=(), values=STATS_VALUES,
                 only=None, same_in_1618=False):
        # With `only`, every value of those names is kept unless `values` is given (then only
        # those), and a name herdless prints that memcached does not is a difference.
        self.name, self.group, self.binary, self.args = name, group, binary, tuple(args)
        self.before, self.values = before, values   # requests sent first; `stats` values kept
        self.only = only
        self.compat, self.same_in_1618, self.live = not same_in_1618, same_in_1618, same_in_1618


class ShapeTranscript(harness.Transcript):
    def add_stat(self, name, value, values):
        keep = name in values if values is not None else name not in SHAPE_MASKED
        if name == "version":
            value = value.replace("-herdless", "")
        self.lines.append("STAT %s %s" % (name, value) if keep else "STAT %s" % name)

    def differences(self, reference):
        ours = {line.split(" ")[1] for line in self.lines if line.startswith("STAT ")}

        def expected(line):
            name = line.split(" ")[1] if line.startswith("STAT ") else None
            return not (name and (name.startswith("ext_") or
                                  (name.startswith("ssl_") and "ssl_enabled" not in ours)))
        ref = ShapeTranscript()
        ref.lines = [line for line in reference.lines if expected(line)]
        names = {line.split(" ")[1] for line in ref.lines if line.startswith("STAT ")}
        mine = ShapeTranscript()
        mine.lines = [line for line in self.lines
                      if not line.startswith("STAT ") or line.split(" ")[1] in names]
        if getattr(self, "exact", False):   # `only`: memcached's names, every one compared
            return harness.Transcript.differences(self, reference)
        extras = sorted(ours - names)
        if extras:
            harness.log("  %s: herdless's own names: %s" % (reference.name, " ".join(extras)))
        return harness.Transcript.differences(mine, ref)


def run_shape(case, port):
    t = ShapeTranscript()
    t.name = case.name
    if case.only:
        general = set(case.only) if case.values is STATS_VALUES else set(case.values)
        t.exact = True
    else:
        general = case.values if case.group in (b"", b"stats\r\n") else None
    if case.before:
        with harness.Conn(port) as conn:
            t.lines.append(conn.call(b"".join(case.before) + b"mn\r\n", b"MN\r\n").decode())
    if case.binary:
        with BinConn(port) as conn:
            conn.send(packet("STAT", case.group))
            while True:
                p = conn.recv_packet()
                if p.status != 0 or not p.key:
                    t.lines.append("END st=%#x" % p.status)
                    return t
                t.add_stat(p.key.decode(), p.value.decode(), general)
    with harness.Conn(port) as conn:
        for line in conn.call(case.group, b"END\r\n").split(b"\r\n"):
            f = line.decode().split(" ", 2)
            if f[0] == "STAT" and case.only is not None and f[1] not in case.only:
                continue
            if f[0] == "STAT":
                t.add_stat(f[1], f[2], general)
            elif line:
                t.lines.append(line.decode())
    return t


class BinaryCase:
    """Binary request packets on one connection; eof: the server closes it after them."""

    def __init__(self, name, packets, args=(), eof=False, compat=True, live=False):
        self.name, self.packets, self.args, self.eof = name, packets, tuple(args), eof
        self.compat, self.same_in_1618, self.live = compat, False, live


def run_binary(case, port):
    t = harness.Transcript()
    with BinConn(port) as conn:
        for p in case.packets:
            conn.send(p)
        if case.eof:
            packets, rest = parse(conn.recv_until_eof())
        else:
            packets, rest = conn.until_noop(0x7E57), b""
        for p in packets:
            value = p.value
            if p.opcode == OP["VERSION"]:
                value = value.replace(b"-herdless", b"")
            t.lines.append("%s st=%#x ext=%s key=%r val=%r opq=%#x" % (
                OPNAME.get(p.opcode, hex(p.opcode)), p.status, p.extras.hex(), p.key, value,
                p.opaque))
        if rest:
            t.lines.append("<%d trailing bytes>" % len(rest))
        if case.eof:
            t.lines.append("<EOF>")
    return t


def all_cases():
    """Every recorded case; the shapes first, so they see each server's settings as started."""
    return shape_cases() + cases()


def shape_cases():
    """The stats shapes and the binary cases (1.6.45's, herdless's under -o compat=1.6.45)."""
    huge = packet("SET", b"a", set_extras(), bodylen=(1 << 30) + 12)
    return [
        ShapeCase("shape_stats_settings", b"stats settings\r\n"),
        ShapeCase("shape_stats", b"stats\r\n"),
        ShapeCase("shape_stats_settings_chunk", b"stats settings\r\n",
                  args=("-I", "2m", "-o", "slab_chunk_max=16")),
        ShapeCase("shape_bin_stats_settings", b"settings", binary=True),
        ShapeCase("shape_bin_stats", b"", binary=True),
        # flush_all without CAS (1.6.25+): an item stored in the second before the flush is
        # removed at once, so the get after it is a plain miss, not a flushed one (1.6.18 and
        # herdless's default: herdless removes every item at once, 1.6.18 hides them).
        ShapeCase("compat_flush_recent", b"stats\r\n",
                  before=[b"stats reset\r\n", setcmd("a", "1"), b"flush_all\r\n", b"get a\r\n"],
                  values={"get_flushed", "get_misses", "cmd_flush", "curr_items"}),
        BinaryCase("bin_version", [packet("VERSION", opaque=7)]),
        BinaryCase("bin_stats_detail_disabled", [packet("STAT", b"detail on", opaque=3),
                                                 packet("STAT", b"detail dump", opaque=4)],
                   args=("-X",)),
        BinaryCase("bin_body_over_1g", [huge], eof=True),
    ]


class LatestTranscript(tc.TextTranscript):
    """test_compare's transcript, with stream lines: a watcher's log lines (ts and gid masked)
    and a dump's lines (sorted)."""

    def add_log(self, data):
        self.lines.append("--- watcher")
        for line in data.split(b"\n"):
            if line:
                line = re.sub(rb"^ts=\d+\.\d+ gid=\d+ ", b"ts=<ts> gid=<gid> ", line)
                self.lines.append(re.sub(rb" cfd=\d+", b" cfd=<fd>", line).decode(errors="replace"))

    def add_dump(self, data, end):
        self.lines.append("--- dump")
        body = data[:-len(end)] if data.endswith(end) else data
        lines = body.split(b"\r\n")
        head = [lines[0]] if lines and lines[0] == b"OK" else []
        rest = sorted(x for x in lines[len(head):] if x)
        for line in head + rest:
            self.lines.append(repr(line)[2:-1])
        if data.endswith(end):
            self.lines.append(repr(end)[2:-1])


def run(case, port):
    """The case's transcript from the server on `port`."""
    if isinstance(case, ShapeCase):
        return run_shape(case, port)
    if isinstance(case, BinaryCase):
        return run_binary(case, port)
    watcher = None
    if case.watch:
        watcher = harness.Conn(port)
        watcher.send(case.watch[0])
        opening = watcher.recv_line()
    transcript = tc.run_case(case, port)
    t = LatestTranscript()
    t.lines, t.cas_values, t.ttls = transcript.lines, transcript.cas_values, transcript.ttls
    if watcher is not None:
        with watcher:
            t.lines.append("--- watch reply %r" % opening)
            t.add_log(b"".join(watcher.recv_until(b"\n", at_line_start=False)
                               for _ in range(case.watch[1])))
    if case.dump:
        with harness.Conn(port) as conn:
            conn.send(case.dump[0])
            t.add_dump(conn.recv_until(case.dump[1]), case.dump[1])
    return t


def to_record(case, transcript):
    """One JSON-lines record: the case's name and arguments, and what the server answered."""
    if isinstance(case, (ShapeCase, BinaryCase)):
        return {"name": case.name, "args": list(case.args), "lines": transcript.lines,
                "kind": "shape" if isinstance(case, ShapeCase) else "binary"}
    return {"name": case.name, "args": list(case.args), "lines": transcript.lines,
            "ttls": transcript.ttls}


def from_record(record):
    if record.get("kind") in ("shape", "binary"):
        t = ShapeTranscript() if record["kind"] == "shape" else harness.Transcript()
        t.lines = list(record["lines"])
        t.name = record["name"]
        return t
    t = LatestTranscript()
    t.lines = list(record["lines"])
    t.ttls = list(record["ttls"])
    return t
