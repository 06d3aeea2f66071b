import { result, type Check } from '../types.js';

/** /dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm: present, and readable and writable by this user. */
export const deviceNodes: Check = (facts) => {
  const missing = facts.deviceNodes.filter((n) => !n.exists && n.path !== '/dev/nvidia-uvm');
  const missingUvm = facts.deviceNodes.some((n) => n.path === '/dev/nvidia-uvm' && !n.exists);
  const denied = facts.deviceNodes.filter((n) => n.exists && !n.readWritable);
  const evidence = facts.deviceNodes.map(
    (n) => `${n.path}: ${n.exists ? (n.readWritable ? 'read-write' : 'no read-write access') : 'missing'}`,
  );
  if (missing.length > 0) {
    return result('device_nodes', 'fail', `missing ${missing.map((n) => n.path).join(', ')}`, {
      evidence,
      fix: [
        'sudo nvidia-modprobe -c=0 -u   # creates the nodes (nvidia-smi run as root does too)',
        'check udev rules if they vanish again',
      ],
      verdict: 'device_nodes_missing',
    });
  }
  if (denied.length > 0) {
    return result('device_nodes', 'fail', `no read-write access to ${denied.map((n) => n.path).join(', ')}`, {
      evidence,
      fix: [
        'ls -l /dev/nvidia*   # expect crw-rw-rw- (NVreg_DeviceFileMode=0666)',
        'or add this user to the group owning them (often video): sudo usermod -aG video $USER',
      ],
      verdict: 'device_permission_denied',
    });
  }
  if (missingUvm)
    return result('device_nodes', 'warn', '/dev/nvidia-uvm is missing (CUDA programs need it)', {
      evidence,
      fix: ['sudo nvidia-modprobe -u -c=0'],
    });
  return result('device_nodes', 'ok', 'device nodes present and usable', { evidence });
};
