"""GPU loads for recording `nvidia-smi -lms` series (pulse fixtures): each phase runs SECONDS on GPU 0.
Prints "phase NAME START_EPOCH" lines so recordings can be cut by phase.
  idle        nothing
  saturated   back-to-back bf16 8192^2 matrix products
  starved-D   a job waiting on its data loader: busy D% of each 0.5 s cycle, asleep the rest
  tiny        thousands of tiny kernels: busy, but doing little
usage: python3 load.py SECONDS phase [phase...]"""
import sys, time
import torch

seconds = float(sys.argv[1])
dev = torch.device('cuda:0')
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
small = torch.randn(64, device=dev)
torch.cuda.synchronize()

def run(name):
    print(f'phase {name} {time.time():.3f}', flush=True)
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
    elif name == 'tiny':
        while time.time() < end:
            for _ in range(1000):
                small.add_(1.0)
            torch.cuda.synchronize()

for phase in sys.argv[2:]:
    run(phase)
print(f'phase end {time.time():.3f}', flush=True)
