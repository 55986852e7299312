"""Group a `perf record --call-graph dwarf` profile of the daemon (see
benches/profile-wake.py) by thread and by wake-path phase: each sample of
the main thread goes to the first phase in PHASES found on its stack.
Prints each thread's share, how much of it is in the kernel or the
allocator (the sampled leaf), and the phases' shares of all samples.

usage: python3 benches/profile-buckets.py perf.data [PHASE]
    with PHASE (e.g. "delivery"): also the top leaves and the innermost
    reveille frames of that phase's samples.
"""
import sys, subprocess, collections, re
data = sys.argv[1]
p = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym,dso"], capture_output=True, text=True)
PHASES = [("parse", ["markdown::parse", "parse_plan"]),
          ("prompt render", ["prompt::render"]),
          ("journal append", ["Store::append", "store::Store"]),
          ("log line", ["daemon::emit", "World>::log", "tracing_subscriber"]),
          ("plan read", ["read::read_fresh", "read::PlanFiles", "read::read_"]),
          ("delivery", ["Deliverer::deliver"]),
          ("engine (diff, records)", ["core::engine", "core::driver"]),
          ("wait / wake (epoll, park)", ["park", "epoll_wait", "Poll::poll"]),
          ]
ALLOC = re.compile(r"malloc|free|realloc|_int_|__rdl_|__rust_alloc|__rust_dealloc|__rust_realloc|alloc::alloc")
samples = collections.Counter(); phase = collections.Counter(); alloc = collections.Counter(); kern = collections.Counter()
comm = None; stack = []
def flush():
    if comm is None: return
    c = "main" if comm == "reveille" else ("notify" if comm.startswith("notify") else "other")
    samples[c] += 1
    joined = [s for s in stack]
    ph = "loop, other"
    if c == "main":
        for name, keys in PHASES:
            if any(any(k in f for k in keys) for f in joined):
                ph = name; break
    else:
        ph = c
    phase[(c, ph)] += 1
    if joined and ALLOC.search(joined[0]): alloc[c] += 1
    if joined and "[kernel" in joined[0]: kern[c] += 1
for line in p.stdout.splitlines():
    if not line.strip():
        flush(); comm = None; stack = []; continue
    if not line.startswith((" ", "\t")):
        flush(); stack = []
        comm = line.split()[0] if not line.startswith("notify") else "notify"
        if line.startswith("notify-rs"): comm = "notify"
        elif line.startswith("tokio-rt"): comm = "tokio-rt"
        else: comm = line.split()[0]
        continue
    parts = line.strip().split(None, 1)
    stack.append(parts[1] if len(parts) > 1 else "")
flush()
total = sum(samples.values())
print(f"samples {total}: " + ", ".join(f"{k} {v/total:.1%}" for k, v in samples.items()))
for c in ["main", "notify", "other"]:
    n = samples[c]
    if not n: continue
    print(f"{c}: {n/total:.1%} of all; kernel-leaf {kern[c]/n:.0%}, alloc-leaf {alloc[c]/n:.0%} of it")
    for (cc, ph), v in sorted(phase.items(), key=lambda x: -x[1]):
        if cc == c and c == "main":
            print(f"   {ph}: {v/total:.1%}")

# leaves per bucket (main thread), when asked
if len(sys.argv) > 2:
    want = sys.argv[2]
    leaves = collections.Counter(); callers = collections.Counter()
    comm = None; stack = []
    def take():
        if comm != "reveille" or not stack: return
        ph = "loop, other"
        for name, keys in PHASES:
            if any(any(k in f for k in keys) for f in stack):
                ph = name; break
        if ph == want:
            leaves[re.sub(r"\+0x[0-9a-f]+", "", stack[0])[:110]] += 1
            # first frame in reveille's own code
            own = next((f for f in stack if "reveille::" in f), "?")
            callers[re.sub(r"\+0x[0-9a-f]+", "", own)[:110]] += 1
    for line in p.stdout.splitlines():
        if not line.strip():
            take(); comm = None; stack = []; continue
        if not line.startswith((" ", "\t")):
            take(); stack = []; comm = line.split()[0]; continue
        parts = line.strip().split(None, 1)
        stack.append(parts[1] if len(parts) > 1 else "")
    take()
    print("top leaves:"); [print(f"  {v:4d} {k}") for k, v in leaves.most_common(15)]
    print("innermost own frame:"); [print(f"  {v:4d} {k}") for k, v in callers.most_common(15)]
