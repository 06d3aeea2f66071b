"""GPU loads for recording `nvidia-smi -lms` series (pulse fixtures): each phase runs SECONDS on GPU 0.
Prints "phase NAME START_EPOCH LOCAL_TIME" lines (LOCAL_TIME as nvidia-smi prints its timestamps) so
recordings can be cut by phase; with --rest R, R seconds of nothing (phase "rest") separate phases, so
one phase's power does not spill into the next.
  idle           nothing
  saturated      back-to-back bf16 8192^2 matrix products
  starved-D      a job waiting on its data loader: busy D% of each 0.5 s cycle, asleep the rest
  bursts-D       a slow input pipeline: waits 0.35-0.5 s (seeded jitter), computes for D% of each cycle
                 (bursts-10: ~40-55 ms of compute, then a long wait)
  tiny           thousands of tiny kernels: busy, but doing little
  tiny-graph     the same tiny kernels replayed from one CUDA graph: fewer launches, still little work
  h2d-KIND       nothing but 256 MiB host-to-device copies, KIND pageable or pinned host memory
  d2h-KIND       the same, device to host
  both-KIND      both directions at once, one thread and stream each
usage: python3 load.py [--rest R] SECONDS phase [phase...]"""
import random, sys, threading, time
import torch

args = sys.argv[1:]
rest = 0.0
if args[0] == '--rest':
    rest, args = float(args[1]), args[2:]
seconds = float(args[0])
dev = torch.device('cuda:0')
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
small = torch.randn(64, device=dev)
COPY = 64 << 20  # float32 elements: 256 MiB per copy
torch.cuda.synchronize()

def say(name):
    now = time.time()
    local = time.strftime('%Y/%m/%d %H:%M:%S', time.localtime(now)) + f'.{int(now * 1000) % 1000:03d}'
    print(f'phase {name} {now:.3f} {local}', flush=True)

def copies(direction, pinned, end):
    """Copies in one direction until `end`, on a stream of its own; each copy waited for, as a loader would."""
    host = torch.ones(COPY, pin_memory=pinned)
    device = torch.ones(COPY, device=dev)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        while time.time() < end:
            if direction == 'h2d':
                device.copy_(host, non_blocking=pinned)
            else:
                host.copy_(device, non_blocking=pinned)
            stream.synchronize()

def run(name):
    say(name)
    end = time.time() + seconds
    if name == 'idle':
        time.sleep(seconds)
    elif name == 'saturated':
        while time.time() < end:
            for _ in range(20):
                a @ b
            torch.cuda.synchronize()
    elif name.startswith('starved-'):
        duty = int(name.split('-')[1]) / 100
        while time.time() < end:
            start = time.time()
            while time.time() - start < 0.5 * duty:
                a @ b
                torch.cuda.synchronize()
            time.sleep(max(0, 0.5 - (time.time() - start)))
    elif name.startswith('bursts-'):
        duty = int(name.split('-')[1]) / 100
        rng = random.Random(duty)
        while time.time() < end:
            wait = rng.uniform(0.35, 0.5)
            start = time.time()
            while time.time() - start < wait * duty / (1 - duty):
                a @ b
                torch.cuda.synchronize()
            time.sleep(wait)
    elif name == 'tiny':
        while time.time() < end:
            for _ in range(1000):
                small.add_(1.0)
            torch.cuda.synchronize()
    elif name == 'tiny-graph':
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            with torch.cuda.graph(graph):
                for _ in range(1000):
                    small.add_(1.0)
        while time.time() < end:
            graph.replay()
            torch.cuda.synchronize()
    elif name.split('-')[0] in ('h2d', 'd2h', 'both'):
        direction, kind = name.split('-')
        pinned = kind == 'pinned'
        directions = ['h2d', 'd2h'] if direction == 'both' else [direction]
        threads = [threading.Thread(target=copies, args=(d, pinned, end)) for d in directions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        sys.exit(f'unknown phase {name}')

for i, phase in enumerate(args[1:]):
    if i and rest:
        say('rest')
        time.sleep(rest)
    run(phase)
say('end')
