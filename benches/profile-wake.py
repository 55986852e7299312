"""Profile the daemon's wake path: the wake benchmark's workload (plans of 21
sequential steps, each ticked in place as `task_complete` does, 3 ms apart,
every prompt read from the session's FIFO) run long enough to profile, with
`perf record` attached to the real `reveille run`.

usage: python3 benches/profile-wake.py [--rounds N] [--out perf.data] [--no-perf] [--] [perf record options]
    (run `cargo build --release` first; rounds of 20 plans × 21 writes)

It also prints the daemon's CPU time per wake by thread, from
/proc/<pid>/task/*/schedstat (`--no-perf`: only that, unprofiled).
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--out", default="perf.data")
ap.add_argument("--bin", default="target/release/reveille")
ap.add_argument("--no-perf", action="store_true")
ap.add_argument("perf", nargs="*", default=["-F", "4999", "--call-graph", "dwarf,16384"])
a = ap.parse_args()

root = tempfile.mkdtemp(prefix="reveille-profile-")
pl, sessions, state = (os.path.join(root, d) for d in ("pl", "s", "state"))
os.makedirs(pl)
os.makedirs(os.path.join(sessions, "bench"))
fifo = os.path.join(sessions, "bench", "fifo.in")
os.mkfifo(fifo)
reader = os.open(fifo, os.O_RDWR)
config = os.path.join(root, "reveille.toml")
with open(config, "w") as f:
    f.write(f'[project]\nname = "bench"\nplan_dir = "{pl}"\n[sessions]\ndir = "{sessions}"\n'
            f'[events]\npath = ""\n[state]\ndir = "{state}"\n[log]\ntarget = "stderr"\nlevel = "info"\n')
env = dict(os.environ, HOME=root)
daemon = subprocess.Popen([os.path.abspath(a.bin), "run", "--config", config], env=env,
                          stderr=subprocess.DEVNULL)
time.sleep(0.5)  # start-up: not profiled
perf = None
if not a.no_perf:
    perf = subprocess.Popen(["perf", "record", "-o", a.out, "-p", str(daemon.pid)] + a.perf)
    time.sleep(0.5)


def threads():
    """CPU nanoseconds by thread name (threads of one name summed)."""
    out = {}
    task = f"/proc/{daemon.pid}/task"
    for tid in os.listdir(task):
        try:
            name = open(f"{task}/{tid}/comm").read().strip()
            ns = int(open(f"{task}/{tid}/schedstat").read().split()[0])
        except OSError:
            continue
        out[name] = out.get(name, 0) + ns
    return out


def text(i, checked):
    t = f"# Bench goal {i}\n\n<!-- session: bench -->\n\n"
    for s in range(1, 22):
        mark = "x" if s <= checked else " "
        t += (f"- [{mark}] Step {s}: implement part {s} of goal {i}\n"
              f"  Touch the code for part {s}, then run the tests.\n")
    return t


def prompt():
    buf = b""
    while not buf.endswith(b"\0"):
        buf += os.read(reader, 65536)


before = threads()
started = time.time()
for r in range(a.rounds):
    for i in range(20):
        path = os.path.join(pl, f"20260101T000000_{r * 20 + i:08x}--p-{i}__wip.md")
        for checked in range(21):
            with open(path, "w") as f:
                f.write(text(i, checked))
            prompt()
            time.sleep(0.003)
wakes = a.rounds * 20 * 21
after = threads()
print(f"{wakes} wakes in {time.time() - started:.1f} s; CPU per wake:", file=sys.stderr)
for name, ns in sorted(after.items()):
    print(f"  {name}: {(ns - before.get(name, 0)) / wakes / 1000:.0f} µs", file=sys.stderr)
total = sum(after.values()) - sum(before.values())
print(f"  all threads: {total / wakes / 1000:.0f} µs", file=sys.stderr)
if perf:
    perf.send_signal(signal.SIGINT)
    perf.wait()
daemon.terminate()
daemon.wait()
