"""A training loop whose input pipeline turns slow halfway: for `gpu-textfile run` on a real GPU.

The first half of the steps runs back to back (the GPU busy); from the middle on, each batch waits
SLOW_INPUT_S seconds on the CPU before it reaches the GPU, as a DataLoader with too few workers does.
`gpu-textfile run` must show the slow-down in its step ranges and call it data-starved.

    gpu-textfile run --interval 200ms -- python3 test/gpu/slow-input-loop.py [STEPS] [SLOW_INPUT_S]
"""

import sys
import time

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 160
SLOW_INPUT_S = float(sys.argv[2]) if len(sys.argv) > 2 else 0.35
WIDTH = 8192
BATCH = 4096
# Matmuls per step (forward; backward doubles them): about 0.2 s of GPU work per step on an H200 in fp32 (TF32 off).
MATMULS = 8

torch.backends.cuda.matmul.allow_tf32 = False
device = torch.device("cuda")
weight = torch.nn.Parameter(torch.randn(WIDTH, WIDTH, device=device) / WIDTH**0.5)
optimizer = torch.optim.SGD([weight], lr=1e-3)
# One pinned batch, copied to the GPU each step: the copy is a few ms, the wait is the sleep alone.
host_batch = torch.randn(BATCH, WIDTH).pin_memory()
print(f"device {torch.cuda.get_device_name(0)}, {STEPS} steps, slow input from step {STEPS // 2 + 1}", flush=True)

for step in range(1, STEPS + 1):
    if step > STEPS // 2:
        time.sleep(SLOW_INPUT_S)  # the input pipeline: decoding and augmenting on the CPU
    batch = host_batch.to(device)
    out = batch
    for _ in range(MATMULS):
        out = torch.tanh(out @ weight)
    loss = out.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    # .item() waits for the GPU: the line is printed when the step is really done.
    print(f"step {step}/{STEPS} loss={loss.item():.5f}", flush=True)
