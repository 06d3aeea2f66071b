/** What the pattern of one GPU's utilization says. */
export type PulseVerdict = 'idle' | 'saturated' | 'data_starved' | 'throttled' | 'copies_or_tiny_kernels' | 'mixed';

/** What to try next after each verdict (printed under the explanation and the evidence). */
export const NEXT_STEPS: Record<PulseVerdict, string[]> = {
  idle: ['nothing runs on this GPU: check the job is placed on it (CUDA_VISIBLE_DEVICES, the scheduler)'],
  saturated: ['the GPU is the bottleneck, as it should be: for more speed use mixed precision (bf16), fused kernels, or more GPUs'],
  data_starved: [
    'the GPU waits for each batch: look at the input pipeline',
    'PyTorch DataLoader: raise num_workers, set pin_memory=True and persistent_workers=True, prefetch_factor >= 2',
    'move decoding and augmentation off the critical path (pre-process, DALI, GPU-side transforms); check storage and network read speed',
    'overlap host-to-device copies with compute (non_blocking=True on pinned memory)',
  ],
  throttled: [
    'clocks are held back: check cooling (inlet temperature, fans, airflow) and the power limit (nvidia-smi -q -d PERFORMANCE,POWER)',
    'nvidia-smi --query-gpu=clocks_event_reasons.active,temperature.gpu,power.draw,enforced.power.limit --format=csv -lms 500 while it runs',
  ],
  copies_or_tiny_kernels: [
    "nvidia-smi's fields cannot always tell these two apart: utilization.gpu counts the time a copy or any kernel runs, however little of the GPU it uses",
    'if it copies between host and device: use pinned memory (pin_memory=True), fewer and larger transfers, overlap copies with compute (non_blocking=True, a side stream), and keep data on the GPU between steps',
    'if it launches many tiny kernels: capture the loop with CUDA graphs (torch.compile mode="reduce-overhead"), fuse kernels, use larger batches',
    'to tell which: nvidia-smi dmon -s t shows PCIe traffic (high rxpci/txpci: copies); nsys profile shows copies and kernels on a timeline',
  ],
  mixed: ['no single pattern: record longer (--seconds 60) or at a faster interval, and look at the evidence'],
};
