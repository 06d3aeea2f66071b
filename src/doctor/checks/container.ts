import { result, type Check } from '../types.js';

/** In a container without GPU device nodes, the runtime was not given the GPU. */
export const container: Check = (facts) => {
  if (!facts.container) return result('container', 'ok', 'not in a container');
  const ctl = facts.deviceNodes.find((n) => n.path === '/dev/nvidiactl');
  if (ctl?.exists)
    return result('container', 'ok', `in a container (${facts.container}) with the GPU device nodes`, { evidence: [facts.container] });
  return result('container', 'fail', `in a container (${facts.container}) started without the GPU`, {
    evidence: [facts.container, '/dev/nvidiactl is missing'],
    fix: [
      'docker run --gpus all …   (Podman: --device nvidia.com/gpu=all)',
      'install nvidia-container-toolkit on the host and run: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker',
      'Kubernetes: request nvidia.com/gpu in the pod and run the NVIDIA device plugin',
    ],
    verdict: 'container_without_gpu',
  });
};
