import { result, type Check } from '../types.js';

/** systemd-nspawn shares no device unless told (systemd-nspawn(1), systemd.nspawn(5)). */
const NSPAWN_FIX = [
  'systemd-nspawn --bind=/dev/nvidiactl --bind=/dev/nvidia0 --bind=/dev/nvidia-uvm --property=DeviceAllow="char-nvidia* rw" …',
  "or in the machine's .nspawn file: Bind=/dev/nvidiactl (one per device node), and DeviceAllow= in its systemd-nspawn@ unit",
];

/** In a container without GPU device nodes, the runtime was not given the GPU. */
export const container: Check = (facts) => {
  if (!facts.container) return result('container', 'ok', 'not in a container');
  const ctl = facts.deviceNodes.find((n) => n.path === '/dev/nvidiactl');
  if (ctl?.exists)
    return result('container', 'ok', `in a container (${facts.container}) with the GPU device nodes`, { evidence: [facts.container] });
  return result('container', 'fail', `in a container (${facts.container}) started without the GPU`, {
    evidence: [facts.container, '/dev/nvidiactl is missing'],
    fix: facts.container.startsWith('systemd-nspawn')
      ? NSPAWN_FIX
      : [
          'docker run --gpus all …   (Podman: --device nvidia.com/gpu=all)',
          'install nvidia-container-toolkit on the host and run: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker',
          'Kubernetes: request nvidia.com/gpu in the pod and run the NVIDIA device plugin',
        ],
    verdict: 'container_without_gpu',
  });
};
