import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { execa } from 'execa';
// The units and /etc/default/gpu-textfile go into root's own directories, where nobody else can plant
// a link: what write-file-atomic is made for. systemd (daemon-reload) or a collect sourcing the file
// while install writes it sees the old file or the new one, never half of one (writeFile truncated
// it in place), and a hand-set owner and mode are kept. src/files/safe-fs.ts stays for directories others control.
import writeFileAtomic from 'write-file-atomic';
import {
  ALL_UNITS,
  parseEnvironmentFile,
  renderEnvironmentFile,
  renderUnit,
  unitNames,
  type EnvSetting,
  type InstallChoices,
} from '../deploy/units.js';
import {
  COMMAND_LINK,
  commandLinkState,
  hiddenFromUnits,
  installProgram,
  LAUNCHER_PART,
  linkCommand,
  PROGRAM_DIR,
  releaseParts,
  unitProgram,
} from '../deploy/program.js';
import { PASSED_ON, type INSTALL_OPTIONS, type UNINSTALL_OPTIONS } from './install-options.js';
import { COLLECT_OPTIONS, defaultTextfileDir } from './options.js';
import type { ArgsOf } from './option-types.js';
import { envName, parseOptions, splitList } from './parse-options.js';
import { parseCollectArgs, type CollectArgs } from './collect.js';
import { COMPAT_NAMES, compatFileName } from '../compat/compat-file.js';

/** install's arguments: collect's options it passes on are undefined when not given. */
export type InstallArgs = ArgsOf<typeof INSTALL_OPTIONS>;
export type UninstallArgs = ArgsOf<typeof UNINSTALL_OPTIONS>;

const ENV_FILE = 'etc/default/gpu-textfile';
const UNIT_DIR = 'etc/systemd/system';
const STATE_DIR = '/var/lib/gpu-textfile';

const camel = (name: string) => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The package this command runs from (its real dist/'s parent): what install copies. */
const packageRoot = () => resolve(dirname(realpathSync(process.argv[1]!)), '..');

// C0 and C1 controls: a newline in a path would end its line in a unit or the environment file and
// start a directive of its own.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point here.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** The collect options given to install, by option name: what the environment file is to hold. */
export const givenSettings = (args: InstallArgs): Record<string, EnvSetting> =>
  Object.fromEntries(
    PASSED_ON.flatMap((name) => {
      const value = (args as Record<string, unknown>)[camel(name)];
      return value === undefined ? [] : [[name, value as EnvSetting]];
    }),
  );

/** The one line that says what is wrong with install's options, or undefined: checked before anything is written. */
export function installArgsProblem(args: InstallArgs): string | undefined {
  const settings = givenSettings(args);
  for (const [name, value] of Object.entries(settings)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      // (--task has its own rule, checked with collect's below.)
      if (typeof item === 'string' && name !== 'task' && CONTROL.test(item)) {
        return `--${name}: ${JSON.stringify(item)} has a control character; ${name.endsWith('-dir') ? 'a path for a unit file may not' : 'the environment file cannot hold one'}`;
      }
      // The environment file separates a list's items by commas and white space: an item cannot hold them.
      if (Array.isArray(value) && splitList(item as string).length !== 1) {
        return `--${name}: "${item}" has a comma or a space, which ${envName(name)} cannot hold (they separate its items)`;
      }
    }
  }
  for (const option of ['textfile-dir', 'csv-dir'] as const) {
    const path = settings[option];
    if (typeof path === 'string' && !isAbsolute(path))
      return `--${option}: "${path}" must be an absolute path (ReadWritePaths= takes no other)`;
  }
  if (settings.interval !== undefined && !args.daemon)
    return "--interval is the daemon mode's cadence: add --daemon (the timer runs every 15 s)";
  // Whatever collect would refuse is refused now, not at the first timer run.
  const defaults = parseOptions(COLLECT_OPTIONS, [], {});
  if (typeof defaults === 'string') return defaults;
  const collectArgs = {
    ...defaults,
    ...Object.fromEntries(Object.entries(settings).map(([name, value]) => [camel(name), value])),
  } as CollectArgs;
  const problem = parseCollectArgs(collectArgs);
  return typeof problem === 'string' ? problem : undefined;
}

/** What /etc/default/gpu-textfile under `root` sets, if it exists: what an earlier install recorded. */
function recorded(root: string): Map<string, string> | undefined {
  try {
    return parseEnvironmentFile(readFileSync(join(root, ENV_FILE), 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

type Step = { describe: string; run: () => Promise<void> };

const systemctl = (...args: string[]): Step => ({
  describe: `systemctl ${args.join(' ')}`,
  run: async () => {
    await execa('systemctl', args, { stdio: 'inherit' });
  },
});

async function perform(steps: Step[], dryRun: boolean, say: (line: string) => void): Promise<number> {
  for (const step of steps) {
    if (dryRun) {
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

/** Units that start something (the timers, the daemon): what enable and disable act on. */
const started = (names: string[]) => names.filter((name) => name.endsWith('.timer') || name === 'gpu-textfile-daemon.service');

/** `gpu-textfile install`: the program, units, environment file and directories under --root; enables the timers on a live system. */
export async function runInstall(args: InstallArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const say = (line: string) => io.out.write(`${line}\n`);
  const problem = installArgsProblem(args);
  if (problem) {
    io.err.write(`gpu-textfile: ${problem}\n`);
    return 2;
  }
  const at = (path: string) => join(args.root, path);
  const live = resolve(args.root) === '/';
  const given = givenSettings(args);
  // An existing environment file holds the user's settings: it is replaced only when options are
  // given, and otherwise the units are written for the directories it names.
  const before = recorded(args.root);
  const keepFile = before !== undefined && Object.keys(given).length === 0;
  const { 'textfile-dir': textfileDir, 'csv-dir': csvDir, task, ...collect } = given as Record<string, EnvSetting | undefined>;
  const choices: InstallChoices = keepFile
    ? {
        daemon: args.daemon,
        textfileDir: before.get(envName('textfile-dir')) || defaultTextfileDir(),
        csvDir: before.get(envName('csv-dir')) || undefined,
      }
    : {
        daemon: args.daemon,
        textfileDir: (textfileDir as string | undefined) ?? defaultTextfileDir(),
        csvDir: csvDir as string | undefined,
        task: task as string | undefined,
        collect: collect as Record<string, EnvSetting>,
      };
  const program = unitProgram(packageRoot(), process.execPath);
  const hidden = hiddenFromUnits(program.node);
  if (hidden) {
    io.err.write(
      `gpu-textfile: warning: the units will run ${program.node}, under ${hidden}, which their sandbox hides (ProtectHome=, PrivateTmp=): they cannot start; install Node.js where every user can reach it (e.g. /usr/bin/node) and run install with it\n`,
    );
  }
  const wanted = unitNames(choices);
  // The other mode's units (timer or daemon), and the archive pair without a CSV trail, are taken out.
  const stale = ALL_UNITS.filter((name) => !wanted.includes(name) && existsSync(at(join(UNIT_DIR, name))));
  const steps: Step[] = [];

  if (live && args.enable && started(stale).length > 0) steps.push(systemctl('disable', '--now', ...started(stale)));
  for (const name of stale) steps.push({ describe: `remove ${at(join(UNIT_DIR, name))}`, run: () => rm(at(join(UNIT_DIR, name))) });
  steps.push({
    describe: `install the program: copy ${packageRoot()}/{${releaseParts(packageRoot()).join(',')}} to ${at(PROGRAM_DIR)}`,
    run: async () => void (await installProgram(packageRoot(), at(PROGRAM_DIR))),
  });
  // The tarball's route: `gpu-textfile` on PATH, unless something else (npm's link, a hand-made
  // file) is there already.
  if (releaseParts(packageRoot()).includes(LAUNCHER_PART)) {
    const state = await commandLinkState(at(COMMAND_LINK));
    if (state === 'other') say(`left in place: ${at(COMMAND_LINK)} (not install's link)`);
    else steps.push({ describe: `link ${at(COMMAND_LINK)} to the installed program`, run: () => linkCommand(at(COMMAND_LINK)) });
  }
  for (const dir of [choices.textfileDir, STATE_DIR, ...(choices.csvDir ? [choices.csvDir] : [])]) {
    steps.push({
      describe: `create ${at(dir)} (mode 0755)`,
      run: async () => void (await mkdir(at(dir), { recursive: true, mode: 0o755 })),
    });
  }
  for (const name of wanted) {
    steps.push({
      describe: `write ${at(join(UNIT_DIR, name))}`,
      run: async () => {
        const unit = renderUnit(name, await readFile(join(packageRoot(), 'systemd', name), 'utf8'), program, choices);
        await mkdir(at(UNIT_DIR), { recursive: true });
        await writeFileAtomic(at(join(UNIT_DIR, name)), unit, { mode: 0o644 });
      },
    });
  }
  if (!keepFile) {
    steps.push({
      describe: `write ${at(ENV_FILE)}`,
      run: async () => {
        await mkdir(at('etc/default'), { recursive: true });
        await writeFileAtomic(at(ENV_FILE), renderEnvironmentFile(choices));
      },
    });
  }
  if (live && args.enable) {
    steps.push(systemctl('daemon-reload'));
    // The other mode's service may have failed last: not-found failed once its file is gone (see uninstall).
    if (stale.length > 0) steps.push(systemctl('reset-failed', 'gpu-textfile*'));
    const timers = started(wanted).filter((name) => name.endsWith('.timer'));
    if (timers.length > 0) steps.push(systemctl('enable', '--now', ...timers));
    // restart, not start: a daemon already running keeps the program it started with.
    if (args.daemon) steps.push(systemctl('enable', 'gpu-textfile-daemon.service'), systemctl('restart', 'gpu-textfile-daemon.service'));
  }
  return perform(steps, args.dryRun, say);
}

/** `gpu-textfile uninstall`: stops and removes the units, the program, the environment file, and the .prom files it names. */
export async function runUninstall(args: UninstallArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const say = (line: string) => io.out.write(`${line}\n`);
  const at = (path: string) => join(args.root, path);
  const live = resolve(args.root) === '/';
  // Where install put the metrics file, as it recorded it: left in place, the file would be served
  // with its last values for ever.
  const before = recorded(args.root);
  const textfileDir = before?.get(envName('textfile-dir')) || defaultTextfileDir();
  const fileName = before?.get(envName('file-name')) || (COLLECT_OPTIONS['file-name']!.default as string);
  const installed = ALL_UNITS.filter((name) => existsSync(at(join(UNIT_DIR, name))));
  const steps: Step[] = [];
  if (live && args.enable && installed.length > 0) steps.push(systemctl('disable', '--now', ...installed));
  for (const path of [...installed.map((name) => join(UNIT_DIR, name)), ENV_FILE]) {
    if (existsSync(at(path))) steps.push({ describe: `remove ${at(path)}`, run: () => rm(at(path)) });
  }
  if (existsSync(at(PROGRAM_DIR)))
    steps.push({ describe: `remove ${at(PROGRAM_DIR)}`, run: () => rm(at(PROGRAM_DIR), { recursive: true }) });
  if ((await commandLinkState(at(COMMAND_LINK))) === 'ours')
    steps.push({ describe: `remove ${at(COMMAND_LINK)}`, run: () => rm(at(COMMAND_LINK)) });
  // The peers' files (--compat) too, whichever an install named: their names carry no time of collection.
  const proms = [fileName, ...COMPAT_NAMES.map((name) => compatFileName(fileName, name))].map((name) => join(textfileDir, name));
  if (isAbsolute(textfileDir) && fileName.endsWith('.prom') && !fileName.includes('/'))
    for (const prom of proms.filter((path) => existsSync(at(path))))
      steps.push({ describe: `remove ${at(prom)}`, run: () => rm(at(prom)) });
  // A unit whose last run failed stays loaded, "not-found failed", after its file is gone (in
  // systemctl --failed and node_exporter's systemd metrics until a reboot): reset it. The pattern
  // matches nothing quietly where nothing failed.
  if (live && args.enable && installed.length > 0) steps.push(systemctl('daemon-reload'), systemctl('reset-failed', 'gpu-textfile*'));
  const status = await perform(steps, args.dryRun, say);
  if (status === 0 && !args.dryRun) say('left in place: the CSV trail and its archives, and the state in /var/lib/gpu-textfile');
  return status;
}
