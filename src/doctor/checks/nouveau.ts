import { NVIDIA_VENDOR } from '../facts.js';
import { result, type Check } from '../types.js';

const BLACKLIST_FIX = [
  "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
  'sudo update-initramfs -u   # dracut -f on Fedora/RHEL',
  'sudo reboot',
];

/** nouveau, the open-source driver, loaded or bound to the GPU: the NVIDIA driver cannot take it then. */
export const nouveau: Check = (facts) => {
  const bound = facts.pci.filter((d) => d.vendor === NVIDIA_VENDOR && d.driver === 'nouveau');
  const loaded = facts.modules.has('nouveau');
  const evidence = [
    ...bound.map((d) => `${d.address} is bound to nouveau`),
    ...(loaded ? ['nouveau is in /proc/modules'] : []),
    facts.nouveauBlacklisted.length > 0 ? `blacklisted in ${facts.nouveauBlacklisted.join(', ')}` : 'not blacklisted in /etc/modprobe.d',
  ];
  if (bound.length > 0) {
    return result('nouveau', 'fail', 'nouveau drives the NVIDIA GPU instead of the NVIDIA driver', {
      evidence,
      fix:
        facts.nouveauBlacklisted.length > 0
          ? ['the blacklist is there but not in the initramfs:', ...BLACKLIST_FIX.slice(1)]
          : BLACKLIST_FIX,
      verdict: 'nouveau_active',
    });
  }
  if (loaded) return result('nouveau', 'warn', 'nouveau is loaded (not bound to an NVIDIA GPU)', { evidence, fix: BLACKLIST_FIX });
  return result('nouveau', 'ok', 'nouveau is not in the way', { evidence });
};
