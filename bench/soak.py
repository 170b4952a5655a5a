#!/usr/bin/env python3
"""soak.py: the peers and the bookkeeping of the soak (bench/soak.sh, `make soak`) that
`trove bench soak` leaves to a script:

  stall URL CAPTURE PORTFILE   open /api/live as a WebSocket (raw, from=now), write the local
                               port to PORTFILE, then never read, until SIGTERM
  garbage SOCKET CAPTURE KIND  one bad producer: connect to the producers' socket, send the
                               KIND of garbage (KINDS below), wait for the service to close
                               the connection; one JSON line
  monitor PIDFILE CSV STATUS INTERVAL
                               every INTERVAL s until SIGTERM: the service's RSS, open fds and
                               threads (/proc/PID) and its /api/status, as a CSV row and a
                               line of STATUS (JSON lines); PIDFILE holds "PID URL T0" of the
                               service running now (empty while there is none)
  report DIR                   the soak's figures from what the run left in DIR: printed,
                               and written as DIR/report.json; exit 1 when a criterion failed
"""
import json
import os
import signal
import socket
import struct
import sys
import time
import urllib.request
import base64

# After the restart, the producers' backlog (what their rings held while the service was
# away: about a second of events, all at once) and their reconnection fall in this window.
RESTART_WINDOW = 10.0

# The garbage producers, one each 10 s in turn: what a broken or hostile producer may send.
KINDS = ["random", "bad-name", "not-json", "long-line", "frames", "huge-frame", "truncated"]

stop = False


def on_term(sig, frame):
    global stop
    stop = True


def host_port(url):
    rest = url.split("://", 1)[1].split("/", 1)[0]
    host, port = rest.rsplit(":", 1)
    return host, int(port)


def cmd_stall(url, capture, portfile):
    signal.signal(signal.SIGTERM, on_term)
    host, port = host_port(url)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    s.connect((host, port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /api/live?capture={capture}&wire=raw&from=now HTTP/1.1\r\n"
               f"Host: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            return 1
        head += b
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        return 1
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    while not stop:  # never read again
        time.sleep(0.2)
    return 0


def wire_header(fmt, count, payload, raw_len=0):
    return b"TV" + bytes([fmt, 1]) + struct.pack("<III", count, payload, raw_len)


def cmd_garbage(sock, capture, kind):
    hello = json.dumps({"capture": capture, "producer": "soak garbage", "append": True}) + "\n"
    data = {
        "random": os.urandom(4096),                          # no hello at all
        "bad-name": b'{"capture":"../etc","pid":1}\n',        # a name the rules refuse
        "not-json": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",     # a line that is no JSON
        "long-line": b"{" + b" " * 8192,                       # a hello over 4,096 bytes
        "frames": hello.encode() + os.urandom(8192),           # a good hello, then noise
        "huge-frame": hello.encode() + wire_header(1, 65536, 0x7FFFFFFF),  # past the limits
        "truncated": hello.encode() + wire_header(1, 100, 3200) + os.urandom(1000),
    }[kind]
    t0 = time.time()
    out = {"t": t0, "kind": kind, "connected": False, "closed_by_service": False}
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sock)
        out["connected"] = True
        try:
            s.sendall(data)
            if kind == "truncated":
                s.shutdown(socket.SHUT_WR)  # the stream ends inside a frame
            while s.recv(4096):
                pass
            out["closed_by_service"] = True
        except (BrokenPipeError, ConnectionResetError):
            out["closed_by_service"] = True
        except socket.timeout:
            pass
        s.close()
    except OSError as e:
        out["error"] = str(e)
    out["ms"] = round((time.time() - t0) * 1000, 1)
    print(json.dumps(out), flush=True)
    return 0


def proc_figures(pid):
    rss = hwm = threads = fds = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        pass
    return rss, hwm, threads, fds


CSV_COLUMNS = ["t", "life", "pid", "rss_kb", "hwm_kb", "fds", "threads", "state", "events",
               "committed", "uncommitted_bytes", "producers", "viewers", "producers_refused",
               "stall_drops", "other_drops"]


def cmd_monitor(pidfile, csv_path, status_path, interval):
    signal.signal(signal.SIGTERM, on_term)
    csv = open(csv_path, "a")
    if csv.tell() == 0:
        csv.write(",".join(CSV_COLUMNS) + "\n")
    st = open(status_path, "a")
    lives = {}
    run_dir = os.path.dirname(os.path.abspath(pidfile))
    while not stop:
        t = time.time()
        try:
            pid, url, _ = open(pidfile).read().split()
        except (OSError, ValueError):
            pid = url = None
        if pid:
            lives.setdefault(pid, len(lives) + 1)
            rss, hwm, threads, fds = proc_figures(pid)
            j = None
            try:
                with urllib.request.urlopen(url + "api/status", timeout=max(1, interval)) as r:
                    j = json.loads(r.read())
            except Exception:
                pass
            stall_ports = set()
            for name in os.listdir(run_dir):
                if name.startswith("stall") and name.endswith(".port"):
                    try:
                        stall_ports.add(open(os.path.join(run_dir, name)).read().strip())
                    except OSError:
                        pass
            row = {"t": round(t, 3), "life": lives[pid], "pid": pid, "rss_kb": rss,
                   "hwm_kb": hwm, "fds": fds, "threads": threads}
            if j:
                cap = next((c for c in j["captures"] if c["name"] == "soak"), {})
                conns = j["connections"]
                viewers = [c for c in conns if c["kind"] == "viewer"]
                stall = [c for c in viewers if c["peer"].rsplit(":", 1)[-1] in stall_ports]
                other = [c for c in viewers if c not in stall]
                row.update(state=cap.get("state"), events=cap.get("events"),
                           committed=cap.get("committed_events"),
                           uncommitted_bytes=cap.get("uncommitted_bytes"),
                           producers=sum(c["kind"] == "producer" for c in conns),
                           viewers=len(viewers), producers_refused=j["producers_refused"],
                           stall_drops=sum(c["drops"] for c in stall),
                           other_drops=sum(c["drops"] for c in other))
                st.write(json.dumps({
                    "t": row["t"], "life": row["life"], "uptime_s": j["uptime_s"],
                    "producers_total": j["producers_total"],
                    "producers_refused": j["producers_refused"],
                    "viewers_total": j["viewers_total"], "capture": cap,
                    "viewers": [{k: c[k] for k in ("id", "peer", "wire", "events", "drops",
                                                   "queue_bytes")} for c in viewers],
                    "stall_ports": sorted(stall_ports)}) + "\n")
                st.flush()
            csv.write(",".join("" if row.get(k) is None else str(row[k]) for k in CSV_COLUMNS)
                      + "\n")
            csv.flush()
        # Sleep to the next tick, waking for SIGTERM.
        end = t + interval
        while not stop and time.time() < end:
            time.sleep(min(0.1, max(0, end - time.time())))
    return 0


# ---- the report ----------------------------------------------------------------------------

def jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass  # a line cut by a kill
    except OSError:
        pass
    return out


def load_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def read_env(path):
    env = {}
    try:
        for line in open(path):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                env[k] = v
    except OSError:
        pass
    return env


def in_runs(runs, a, b):
    """How many of the seqs a..b the runs [[x, y], ...] (sorted, disjoint) hold."""
    n = 0
    for x, y in runs:
        lo, hi = max(a, x), min(b, y)
        if lo <= hi:
            n += hi - lo + 1
    return n


def pct(a, b):
    return None if not b else round(100.0 * (a - b) / b, 2)


def cmd_report(d):
    env = read_env(os.path.join(d, "meta.env"))
    f = lambda k, default=0.0: float(env.get(k, default) or default)
    seconds, rate = f("SOAK_SECONDS"), f("SOAK_RATE")
    t0, t_kill, t_restart, t_stop = f("T0"), f("T_KILL"), f("T_RESTART"), f("T_STOP")
    killed = t_kill > 0
    nprod = int(f("PRODUCERS", 4))
    crit = []

    def criterion(name, ok, detail):
        crit.append({"criterion": name, "pass": bool(ok), "detail": detail})

    def note(name, detail):  # reported, not passed or failed
        crit.append({"criterion": name, "pass": None, "detail": detail})

    # -- producers: what they recorded and sent (the client's counters)
    prods = []
    for k in range(nprod):
        lines = jsonl(os.path.join(d, f"producer{k}.jsonl"))
        if not lines:
            prods.append(None)
            continue
        final = next((x for x in reversed(lines) if x.get("final")), lines[-1])
        before = [x for x in lines if killed and x["t"] < t_restart]
        # Moments it was not connected, other than the kill's outage and the stop.
        away = [round(x["t"] - t0, 1) for x in lines
                if not x["connected"] and not x.get("final") and x["t"] < t_stop
                and not (killed and t_kill <= x["t"] <= t_restart + RESTART_WINDOW)]
        prods.append({"pid": final["pid"], "final": final, "had_final": bool(final.get("final")),
                      "at_kill": before[-1] if before else None, "away": away})
    ok_prods = [p for p in prods if p]
    sent = sum(p["final"]["sent"] for p in ok_prods)
    recorded = sum(p["final"]["recorded"] for p in ok_prods)
    cdropped = sum(p["final"]["dropped"] for p in ok_prods)
    elapsed = max([p["final"]["elapsed"] for p in ok_prods] or [0])

    # -- the store: the check walk, and the counts before the restart
    check = load_json(os.path.join(d, "check.json"), {"pids": [], "events": 0})
    by_pid = {p["pid"]: p for p in check["pids"]}
    ls_kill = load_json(os.path.join(d, "ls_at_kill.json"), [])
    committed_at_kill = next((c["events"] for c in ls_kill if c.get("name") == "soak"), 0) \
        if isinstance(ls_kill, list) else 0
    committed = check["events"]
    gap_counters = sum(p["gap_counters"] for p in check["pids"])
    foreign = sum(p["events"] for p in check["pids"]
                  if p["pid"] not in {q["pid"] for q in ok_prods})

    per_prod = []
    for p in ok_prods:
        s = by_pid.get(p["pid"], {"runs": [], "seqs": 0, "events": 0, "zones": 0,
                                  "gap_counters": 0, "dups": 0, "other": 0})
        runs = s["runs"]
        last_seq = p["final"]["seq"]
        missing = last_seq - s["seqs"]
        holes = [[runs[i][1] + 1, runs[i + 1][0] - 1] for i in range(len(runs) - 1)]
        if runs and runs[-1][1] < last_seq:
            holes.append([runs[-1][1] + 1, last_seq])
        if runs and runs[0][0] > 1:
            holes.insert(0, [1, runs[0][0] - 1])
        ak = p["at_kill"]
        per_prod.append({
            "pid": p["pid"], "recorded": p["final"]["recorded"], "sent": p["final"]["sent"],
            "client_dropped": p["final"]["dropped"], "connects": p["final"]["connects"],
            "last_seq": last_seq, "committed_events": s["events"], "committed_seqs": s["seqs"],
            "committed_zones": s["zones"], "gap_counters": s["gap_counters"],
            "dups": s["dups"], "other": s["other"], "missing_seqs": missing,
            "holes": holes, "runs": len(runs), "away": p["away"],
            "sent_at_kill": ak["sent"] if ak else None,
            "seq_at_kill": ak["seq"] if ak else None})

    # Sent vs committed, before and after the restart. The client's "sent" counts what it
    # wrote into the socket; what the service had not committed when it was killed is lost,
    # and so is what the client could not write (its "dropped"). Before the kill: the
    # events committed then (trove ls on the store while the service was down) against what
    # the producers had sent by then; after: what was sent after the restart, every bit of
    # which should be in the store.
    sent_at_kill = sum(x["sent_at_kill"] or 0 for x in per_prod) if killed else None
    after_sent = sent - sent_at_kill if killed else None
    after_committed = committed - committed_at_kill if killed else None
    lost = sent - (committed - gap_counters)
    kill_loss = {
        "committed_at_kill": committed_at_kill if killed else None,
        "sent_before_kill": sent_at_kill,
        "lost_in_kill_before": (sent_at_kill - committed_at_kill) if killed else None,
        "sent_after_restart": after_sent,
        "committed_after_restart": after_committed,
        "client_dropped": cdropped,
        "sent_not_committed": lost,
    }

    rate_achieved = sent / elapsed if elapsed else 0
    criterion("rate", rate_achieved >= 0.95 * rate,
              f"{rate_achieved:,.0f} events/s sent of {rate:,.0f} asked")
    criterion("producers stopped cleanly", all(p and p["had_final"] for p in prods),
              f"{sum(1 for p in prods if p and p['had_final'])} of {nprod} printed their final "
              "counts")
    # Every seq a producer recorded is in the store exactly once, except a hole at the kill
    # (with a kill: at most one hole per producer, what was in flight).
    bad = []
    for x in per_prod:
        if x["dups"] or x["other"]:
            bad.append(f"pid {x['pid']}: {x['dups']} seqs twice or out of order")
        allowed = 1 if killed else 0
        if len(x["holes"]) > allowed:
            bad.append(f"pid {x['pid']}: {len(x['holes'])} holes {x['holes'][:4]}")
        if x["committed_zones"] != x["committed_seqs"] and not x["holes"]:
            bad.append(f"pid {x['pid']}: {x['committed_zones']} zones, {x['committed_seqs']} seqs")
        if x["holes"] and x["holes"][-1][1] == x["last_seq"]:
            bad.append(f"pid {x['pid']}: its last events {x['holes'][-1]} are not in the store")
    criterion("committed = sent, but for the kill", not bad and foreign == 0,
              "; ".join(bad) if bad else
              f"{committed:,} events in the store ({gap_counters} of them the clients' "
              f"trove.dropped counters); {lost:,} sent and not committed"
              + (f", all of them in flight at the kill" if killed else ""))
    if killed:
        criterion("after the restart everything sent is committed",
                  after_committed is not None and after_committed - gap_counters == after_sent,
                  f"sent {after_sent:,} after the restart, committed {after_committed:,} "
                  f"({gap_counters} of them the clients' trove.dropped counters)")

    # -- the viewers' sessions: delivered vs committed in their window
    sessions = []
    for name in sorted(os.listdir(d)):
        if name.startswith("viewer") and name.endswith(".jsonl"):
            for s in jsonl(os.path.join(d, name)):
                s["loop"] = name
                sessions.append(s)
    total_delivered = sum(s["events"] for s in sessions)
    sess_bad, cut, burst = [], 0, []
    compared = dict(sessions=0, delivered=0, committed=0)
    for s in sessions:
        # a session the kill cut short may hold events never committed: counted apart
        around_kill = killed and s["t0"] <= t_restart and s["t1"] >= t_kill - 2
        in_burst = killed and s["t1"] >= t_restart and s["t0"] <= t_restart + RESTART_WINDOW
        if around_kill:
            cut += 1
        if (s["gap_msgs"] or s["gap_events"]) and in_burst:
            burst.append(s)
            continue  # counted apart, below
        if s["gap_msgs"] or s["gap_events"]:
            sess_bad.append(f"session {s['loop']}#{s['session']}: {s['gap_events']} events "
                            "dropped (gap)")
        if s["error"]:
            sess_bad.append(f"session {s['loop']}#{s['session']}: a frame did not decode")
        deliv = comm = 0
        for p in s["pids"]:
            if p["pid"] not in by_pid:
                continue
            runs = p["runs"]
            a, b = runs[0][0], runs[-1][1]
            got = p["seqs"]
            have = in_runs(by_pid[p["pid"]]["runs"], a, b)
            deliv += got
            comm += have
            if p["dups"]:
                sess_bad.append(f"session {s['loop']}#{s['session']} pid {p['pid']}: "
                                f"{p['dups']} seqs twice")
            if got < have:
                sess_bad.append(f"session {s['loop']}#{s['session']} pid {p['pid']}: got "
                                f"{got} of the {have} seqs {a}..{b} the store has")
            elif got > have and not around_kill:
                sess_bad.append(f"session {s['loop']}#{s['session']} pid {p['pid']}: got "
                                f"{got - have} seqs the store does not have")
        if not around_kill:
            compared["sessions"] += 1
            compared["delivered"] += deliv
            compared["committed"] += comm
    criterion("every viewer session got what was committed in its window, no drop",
              not sess_bad,
              "; ".join(sess_bad[:6]) if sess_bad else
              f"{compared['sessions']} sessions: {compared['delivered']:,} seqs delivered, "
              f"{compared['committed']:,} committed in their windows ({cut} sessions around "
              f"the kill and {len(burst)} in the restart's backlog counted apart)")

    # -- drops in /api/status: only the stalled viewer's
    statuses = jsonl(os.path.join(d, "status.jsonl"))
    stall_drops, other = 0, []
    per_life, burst_status = {}, {}
    for st in statuses:
        ports = set(st["stall_ports"])
        for v in st["viewers"]:
            port = v["peer"].rsplit(":", 1)[-1]
            if port in ports:
                per_life[(st["life"], v["id"])] = v["drops"]
            elif v["drops"] and killed and t_restart <= st["t"] <= t_restart + RESTART_WINDOW + 2:
                burst_status[(st["life"], v["id"])] = v["drops"]
            elif v["drops"]:
                other.append(f"viewer {v['id']} ({v['peer']}, {v['wire']}) at "
                             f"{st['t'] - t0:.0f} s: {v['drops']} dropped")
    stall_drops = sum(per_life.values())
    criterion("drops only to the stalled viewer (outside the restart's backlog)",
              not other and stall_drops > 0,
              "; ".join(other[:4]) if other else
              f"the stalled viewer(s) lost {stall_drops:,} events "
              f"({len(per_life)} connection(s)); no other viewer lost any")
    if killed:
        lost = sum(s["gap_events"] for s in burst)
        backlog = sum(max(0, (x["sent"] - (x["sent_at_kill"] or 0))) for x in per_prod)
        note(f"the restart's backlog",
             f"{len(burst)} viewer session(s) in the {RESTART_WINDOW:.0f} s after the restart "
             f"lost {lost:,} events "
             f"({', '.join(s['wire'] + ' from=' + s['from'] for s in burst) or 'none'}); "
             f"/api/status showed drops on {len(burst_status)} viewer(s) then. The producers' "
             "rings held what they recorded while the service was away and sent it at once on "
             "reconnecting; a from=now viewer's queue (8 MiB, 262,144 raw events) holds less, "
             "and a live viewer that falls behind loses its oldest frames by design")

    # -- garbage producers
    garbage = jsonl(os.path.join(d, "garbage.jsonl"))
    g_conn = [g for g in garbage if g["connected"]]
    g_closed = [g for g in g_conn if g["closed_by_service"]]
    # Each life's last /api/status sample counts the refusals of that life; a garbage
    # connection after it (just before the kill, or the stop) is in no sample.
    refused = seen = 0
    for life in sorted({st["life"] for st in statuses}):
        ls = [st for st in statuses if st["life"] == life]
        start, last = ls[0]["t"] - ls[0]["uptime_s"], ls[-1]
        refused += last["producers_refused"]
        seen += sum(1 for g in g_conn if start <= g["t"] and g["t"] + g["ms"] / 1000 < last["t"])
    reconnects = sum(x["connects"] for x in per_prod)
    away = [f"pid {x['pid']} at {x['away'][:3]} s" for x in per_prod if x["away"]]
    criterion("garbage producers closed, good producers unaffected",
              len(g_closed) == len(g_conn) and refused == seen and not away,
              f"{len(g_conn)} garbage connections ({', '.join(sorted({g['kind'] for g in g_conn}))}), "
              f"{len(g_closed)} closed by the service; /api/status counted {refused} refused "
              f"of the {seen} made before its last sample; "
              f"the good producers connected {reconnects} times in all "
              f"({nprod} producers{', a kill' if killed else ''}), "
              + (f"and were disconnected outside the kill: {'; '.join(away)}" if away else
                 "never disconnected but by the kill"))

    # -- RSS and fds: the value at the end of warm-up against the most after it, per life
    rows = []
    try:
        lines = open(os.path.join(d, "samples.csv")).read().split("\n")
        cols = lines[0].split(",")
        for line in lines[1:]:
            if line:
                r = dict(zip(cols, line.split(",")))
                rows.append(r)
    except (OSError, IndexError):
        pass
    warm = float(env.get("WARMUP", 0) or 0)
    lives = []
    for life in sorted({r["life"] for r in rows}):
        # under load only: after the stop the producers and viewers are gone
        rs = [r for r in rows if r["life"] == life and r["rss_kb"] and float(r["t"]) < t_stop]
        if not rs:
            continue
        start = float(rs[0]["t"])
        w_end = start + warm
        before = [r for r in rs if float(r["t"]) <= w_end]
        after = [r for r in rs if float(r["t"]) > w_end]
        if not before or not after:
            continue
        entry = {"life": int(life), "pid": rs[0]["pid"], "start_s": round(start - t0, 1),
                 "warmup_end_s": round(w_end - t0, 1), "samples": len(rs)}
        # RSS's level: the median over a window of half the warm-up, the last such window of
        # the warm-up against every one after (the heap is trimmed every 10 s, so a sample
        # shows that stretch's peak; the median of a few stretches is their level)
        def median(vals):
            vals = sorted(vals)
            return vals[len(vals) // 2] if vals else None
        win = max(warm / 2, 4 * float(env.get("SAMPLE_S", 2) or 2))
        rss = [(float(r["t"]), int(r["rss_kb"])) for r in rs]
        level_w = median([v for t, v in rss if w_end - win <= t <= w_end])
        levels = [median([v for t, v in rss if a <= t < a + win]) for a, _ in rss
                  if a > w_end and a + win <= rss[-1][0] + 0.01]
        level_after = max(levels) if levels else None
        entry["rss_level"] = {"window_s": win, "warmup_kb": level_w, "max_after_kb": level_after,
                              "growth_pct": pct(level_after, level_w) if level_after else None}
        for key in ("rss_kb", "fds", "threads"):
            at = int(before[-1][key])
            mx = max(int(r[key]) for r in after)
            wmax = max(int(r[key]) for r in before)
            last = int(after[-1][key])
            # the floor: a leak raises it, a connection that comes and goes does not
            floor_w = min(int(r[key]) for r in before[len(before) // 2:])
            tail = [r for r in after if float(r["t"]) >= float(after[-1]["t"]) - warm / 2]
            floor_end = min(int(r[key]) for r in tail)
            entry[key] = {"at_warmup_end": at, "max_in_warmup": wmax,
                          "max_after": mx, "last": last, "growth_pct": pct(mx, at),
                          "growth_vs_warmup_max_pct": pct(mx, wmax),
                          "floor_warmup": floor_w, "floor_end": floor_end,
                          "floor_growth_pct": pct(floor_end, floor_w)}
        lives.append(entry)
    for e in lives:
        for key, label in (("rss_kb", "RSS"), ("fds", "open fds")):
            g = e[key]
            # RSS: the most after the warm-up against the warm-up's most (its envelope: the
            # heap is trimmed every 10 s, so RSS goes up and down with what is in use). Open
            # fds: a viewer, a from=start viewer's stream or a garbage producer holds some for
            # a second, so the most at one sample says how many were connected at once; a
            # leaked descriptor is never closed and raises the floor (the least over the
            # warm-up's second half against the least over the run's last stretch).
            lv = e["rss_level"]
            if key == "rss_kb":
                ok = lv["growth_pct"] is not None and lv["growth_pct"] <= 5
            else:
                ok = g["floor_growth_pct"] is not None and g["floor_growth_pct"] <= 5
            unit = " KiB" if key == "rss_kb" else ""
            what = (f"its level (the median over {lv['window_s']:.0f} s)" if key == "rss_kb"
                    else "the floor")
            level = (f"level {lv['warmup_kb']:,} KiB over the warm-up's last {lv['window_s']:.0f} s, "
                     f"at most {lv['max_after_kb'] or 0:,} KiB after ({lv['growth_pct'] or 0:+.1f} %); "
                     if key == "rss_kb" else "")
            criterion(f"{label}: {what} grows <= 5 % after warm-up (service life {e['life']})", ok,
                      level +
                      f"{g['at_warmup_end']:,}{unit} at warm-up end ({e['warmup_end_s']:.0f} s), "
                      f"{g['max_in_warmup']:,}{unit} the most in the warm-up, "
                      f"{g['max_after']:,}{unit} the most after "
                      f"({g['growth_vs_warmup_max_pct']:+.1f} % vs that, "
                      f"{g['growth_pct']:+.1f} % vs the warm-up-end sample), last {g['last']:,}{unit}; "
                      f"the floor {g['floor_warmup']:,} -> {g['floor_end']:,}{unit} "
                      f"({g['floor_growth_pct']:+.1f} %)")
    if not lives:
        criterion("RSS and fds sampled", False, "no service life long enough to compare")

    # -- the service's exits and verify --deep
    rc1, rc2 = env.get("SERVE_RC_FIRST", ""), env.get("SERVE_RC_LAST", "")
    criterion("service: killed by SIGKILL once, stopped cleanly at the end",
              (not killed or rc1 == "137") and rc2 == "0",
              f"first life exit {rc1 or '-'}, last life exit {rc2 or '-'}")
    verify = load_json(os.path.join(d, "verify.json"), {})
    criterion("verify --deep", verify.get("ok") is True and verify.get("deep") is True,
              f"{verify.get('volumes', '?')} volumes, {verify.get('objects', '?')} objects, "
              f"bad_hash {verify.get('bad_hash', '?')}, missing {verify.get('missing_objects', '?')}"
              + (f": {verify.get('first_problem')}" if verify.get("first_problem") else ""))

    report = {
        "command": env.get("COMMAND", ""), "seconds": seconds, "rate_asked": rate,
        "producers": nprod, "kill_at_s": round(t_kill - t0, 1) if killed else None,
        "restart_at_s": round(t_restart - t0, 1) if killed else None,
        "downtime_s": round(t_restart - t_kill, 2) if killed else None,
        "events": {"recorded": recorded, "sent": sent, "committed": committed,
                   "delivered": total_delivered, "rate_achieved": round(rate_achieved),
                   "gap_counters_in_store": gap_counters, "kill": kill_loss},
        "producers_detail": per_prod,
        "viewers": {"sessions": len(sessions), "delivered_events": total_delivered,
                    "compared": compared, "around_kill": cut,
                    "from_start": sum(s["from"] == "start" for s in sessions),
                    "failed_connects": sum(1 for s in sessions if s["rc"] != 0 and not s["hello"])},
        "stall_drops": stall_drops,
        "garbage": {"connections": len(g_conn), "closed": len(g_closed), "refused": refused,
                    "kinds": sorted({g["kind"] for g in g_conn})},
        "memory": lives, "verify": verify, "criteria": crit,
        "pass": all(c["pass"] is not False for c in crit),
    }
    with open(os.path.join(d, "report.json"), "w") as fo:
        json.dump(report, fo, indent=1)

    ev = report["events"]
    print(f"\nsoak: {seconds:.0f} s, {nprod} producers asked for {rate:,.0f} events/s in all"
          + (f"; kill -9 at {t_kill - t0:.1f} s, up again at {t_restart - t0:.1f} s" if killed else ""))
    print(f"  events recorded {ev['recorded']:,}, sent {ev['sent']:,} "
          f"({ev['rate_achieved']:,}/s), committed {ev['committed']:,}, delivered to viewers "
          f"{ev['delivered']:,} in {len(sessions)} sessions")
    if killed:
        k = kill_loss
        print(f"  before the kill: sent {k['sent_before_kill']:,}, committed "
              f"{k['committed_at_kill']:,} (lost in flight {k['lost_in_kill_before']:,}); "
              f"after the restart: sent {k['sent_after_restart']:,}, committed "
              f"{k['committed_after_restart']:,}; client-side drops {k['client_dropped']:,}")
    for e in lives:
        print(f"  service life {e['life']} (pid {e['pid']}, from {e['start_s']:.0f} s): RSS "
              f"{e['rss_kb']['at_warmup_end'] / 1024:.1f} MiB at warm-up end, "
              f"{e['rss_kb']['max_after'] / 1024:.1f} MiB the most after; fds "
              f"{e['fds']['at_warmup_end']} -> {e['fds']['max_after']}; threads "
              f"{e['threads']['at_warmup_end']} -> {e['threads']['max_after']}")
    for c in crit:
        tag = "NOTE" if c["pass"] is None else "PASS" if c["pass"] else "FAIL"
        print(f"  {tag}  {c['criterion']}: {c['detail']}")
    print(f"  report: {os.path.join(d, 'report.json')}")
    return 0 if report["pass"] else 1


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "stall":
        return cmd_stall(*args)
    if cmd == "garbage":
        return cmd_garbage(*args)
    if cmd == "monitor":
        return cmd_monitor(args[0], args[1], args[2], float(args[3]))
    if cmd == "report":
        return cmd_report(args[0])
    raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    sys.exit(main())
