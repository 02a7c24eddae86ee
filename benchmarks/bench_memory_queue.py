"""Peak memory when requests queue for HTTP/2 streams, against the run-size estimate.

    python3 benchmarks/bench_memory_queue.py [--rate 2000] [--durations 100,200]

One Poisson source at ``rate`` per second on one client whose pool holds K = 32 streams
(one connection), a 100 ms round trip and a constant 100 ms service time: at most
mu = K / 0.2 s = 160 requests per second leave the queue, so it grows at rate - mu per
second and holds about (rate - mu) * duration requests at the end. The same demand with
a pool of 16 x 32 streams never queues. Each point is a fresh ``capsim run`` process
(``peak_child.CHILD``) whose peak RSS is read; the queued runs' extra bytes over the
unqueued ones, divided by the closed-form queue, is the cost of one queued request
(``sim.workload.size_estimate.BYTES_PER_QUEUED``). Every point also prints the
estimate, so the two can be compared; results go to
``benchmarks/results/memory_queue.json`` (``--json``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from peak_child import CHILD, parse_peak
from results import add_json_option, write

SCENARIO = """name = "queue"
duration = {duration}
tiers = ["Advanced bundle"]
[account]
keys = ["k1"]
[[regions]]
name = "here"
rtt_ms = 100
[clients.default]
retry = {{ policy = "none" }}
http = {{ max_connections = {conns}, max_streams_per_conn = 32 }}
[methods.svc_call]
api = "rpc"
service_time = {{ dist = "constant", value = 0.1 }}
[[sources]]
name = "s"
key = "k1"
mix = {{ svc_call = 1.0 }}
arrival = {{ process = "poisson", rate = {rate} }}
"""


def point(rate: float, duration: float, conns: int, tmp: Path) -> dict:
    from sim.config.resolved import load
    from sim.workload.size_estimate import estimate

    path = tmp / f"q-{rate}-{duration}-{conns}.toml"
    path.write_text(SCENARIO.format(rate=rate, duration=duration, conns=conns))
    out = tmp / "out"
    done = subprocess.run([sys.executable, "-c", CHILD, "run", str(path), "--out", str(out),
                           "-q", "--max-requests", "1000000000"],
                          check=True, capture_output=True, text=True)
    rss, _ = parse_peak(done.stdout)
    size = estimate(load(path))
    return {"rate": rate, "duration_s": duration, "connections": conns,
            "requests": size.requests, "queued_closed_form": size.queued,
            "peak_rss": rss, "estimate": size.bytes_needed()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--durations", default="100,200")
    add_json_option(parser, "memory_queue")
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in (float(x) for x in args.durations.split(",")):
            for conns in (16, 1):
                r = point(args.rate, d, conns, Path(tmp))
                rows.append(r)
                print(f"duration {d:>5.0f} s, {conns:>2} connection(s): {r['requests']:>9,.0f} "
                      f"requests, queue <= {r['queued_closed_form']:>9,.0f}; peak RSS "
                      f"{r['peak_rss'] / 2**20:7.1f} MiB, "
                      f"estimate {r['estimate'] / 2**20:7.1f} MiB "
                      f"(estimate / measured {r['estimate'] / r['peak_rss']:.2f})")
    per_queued = []
    for free, queued in zip(rows[::2], rows[1::2], strict=True):
        if queued["queued_closed_form"] > 0:
            per_queued.append((queued["peak_rss"] - free["peak_rss"])
                              / queued["queued_closed_form"])
    print("bytes per queued request: " + ", ".join(f"{b:.0f}" for b in per_queued))
    from sim.workload.size_estimate import BYTES_PER_QUEUED

    write(args.json, "memory_queue", {
        "rate": args.rate, "points": rows, "bytes_per_queued": [round(b) for b in per_queued],
        "bytes_per_queued_assumed": BYTES_PER_QUEUED}, load_before=load_before)


if __name__ == "__main__":
    main()
