import { existsSync, realpathSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { execa } from 'execa';
import { ALL_UNITS, renderEnvironmentFile, renderUnit, unitNames, type InstallChoices } from '../deploy/units.js';
import { defaultTextfileDir } from './options.js';
import { taskNameProblem } from '../task-name.js';

export interface InstallArgs {
  root: string;
  daemon: boolean;
  enable: boolean;
  dryRun: boolean;
  textfileDir?: string;
  csvDir?: string;
  task?: string;
}

const ENV_FILE = 'etc/default/gpu-textfile';
const UNIT_DIR = 'etc/systemd/system';
const STATE_DIR = '/var/lib/gpu-textfile';

/** This installation: the node running us and our entry script; units come from the package's systemd/. */
function thisProgram() {
  const script = realpathSync(process.argv[1]!);
  const packageRoot = resolve(dirname(script), '..');
  return { node: process.execPath, script, systemdDir: join(packageRoot, 'systemd') };
}

// C0 and C1 controls: a newline in a path would end its line in a unit or the environment file and
// start a directive of its own.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** The one line that says what is wrong with install's options, or undefined: checked before anything is written. */
export function installArgsProblem(args: Pick<InstallArgs, 'textfileDir' | 'csvDir' | 'task'>): string | undefined {
  for (const [option, path] of [['textfile-dir', args.textfileDir], ['csv-dir', args.csvDir]] as const) {
    if (path === undefined) continue;
    if (CONTROL.test(path)) return `--${option}: ${JSON.stringify(path)} has a control character; a path for a unit file may not`;
    if (!isAbsolute(path)) return `--${option}: "${path}" must be an absolute path (ReadWritePaths= takes no other)`;
  }
  return args.task === undefined ? undefined : taskNameProblem(args.task);
}

type Step = { describe: string; run: () => Promise<void> };

const systemctl = (...args: string[]): Step => ({
  describe: `systemctl ${args.join(' ')}`,
  run: async () => {
    await execa('systemctl', args, { stdio: 'inherit' });
  },
});

async function perform(steps: Step[], args: InstallArgs, say: (line: string) => void): Promise<number> {
  for (const step of steps) {
    if (args.dryRun) {
      say(`would ${step.describe}`);
      continue;
    }
    try {
      await step.run();
      say(step.describe);
    } catch (error) {
      say(`failed: ${step.describe}: ${(error as Error).message.split('\n')[0]}`);
      return 1;
    }
  }
  return 0;
}

/** `gpu-textfile install`: units, environment file and directories under --root; enables the timers on a live system. */
export async function runInstall(args: InstallArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const say = (line: string) => io.out.write(`${line}\n`);
  const problem = installArgsProblem(args);
  if (problem) {
    io.err.write(`gpu-textfile: ${problem}\n`);
    return 2;
  }
  const program = thisProgram();
  const choices: InstallChoices = { daemon: args.daemon, textfileDir: args.textfileDir ?? defaultTextfileDir(), csvDir: args.csvDir, task: args.task };
  const at = (path: string) => join(args.root, path);
  const live = resolve(args.root) === '/';
  const steps: Step[] = [];

  for (const dir of [choices.textfileDir, STATE_DIR, ...(choices.csvDir ? [choices.csvDir] : [])]) {
    steps.push({ describe: `create ${at(dir)} (mode 0755)`, run: async () => void (await mkdir(at(dir), { recursive: true, mode: 0o755 })) });
  }
  for (const name of unitNames(choices)) {
    steps.push({
      describe: `write ${at(join(UNIT_DIR, name))}`,
      run: async () => {
        const unit = renderUnit(name, await readFile(join(program.systemdDir, name), 'utf8'), program, choices);
        await mkdir(at(UNIT_DIR), { recursive: true });
        await writeFile(at(join(UNIT_DIR, name)), unit, { mode: 0o644 });
      },
    });
  }
  // An existing environment file holds the user's settings: replace it only when options were given.
  if (!existsSync(at(ENV_FILE)) || args.textfileDir || args.csvDir || args.task) {
    steps.push({
      describe: `write ${at(ENV_FILE)}`,
      run: async () => {
        await mkdir(at('etc/default'), { recursive: true });
        await writeFile(at(ENV_FILE), renderEnvironmentFile(choices), { mode: 0o644 });
      },
    });
  }
  if (live && args.enable) {
    steps.push(systemctl('daemon-reload'));
    const started = unitNames(choices).filter((name) => name.endsWith('.timer') || name === 'gpu-textfile-daemon.service');
    steps.push(systemctl('enable', '--now', ...started));
  }
  return perform(steps, args, say);
}

/** `gpu-textfile uninstall`: stops and removes the units and environment file, and our .prom file. */
export async function runUninstall(args: InstallArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const say = (line: string) => io.out.write(`${line}\n`);
  const problem = installArgsProblem(args);
  if (problem) {
    io.err.write(`gpu-textfile: ${problem}\n`);
    return 2;
  }
  const at = (path: string) => join(args.root, path);
  const live = resolve(args.root) === '/';
  const textfileDir = args.textfileDir ?? defaultTextfileDir();
  const installed = ALL_UNITS.filter((name) => existsSync(at(join(UNIT_DIR, name))));
  const steps: Step[] = [];
  if (live && args.enable && installed.length > 0) steps.push(systemctl('disable', '--now', ...installed));
  for (const path of [...installed.map((name) => join(UNIT_DIR, name)), ENV_FILE]) {
    if (existsSync(at(path))) steps.push({ describe: `remove ${at(path)}`, run: () => rm(at(path)) });
  }
  // Left in place, the metrics file would be served with its last values for ever.
  const prom = join(textfileDir, 'nvidia_gpu.prom');
  if (existsSync(at(prom))) steps.push({ describe: `remove ${at(prom)}`, run: () => rm(at(prom)) });
  if (live && args.enable && installed.length > 0) steps.push(systemctl('daemon-reload'));
  const status = await perform(steps, args, say);
  if (status === 0 && !args.dryRun) say('left in place: the CSV trail and its archives, and the state in /var/lib/gpu-textfile');
  return status;
}
