import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { closestCommand } from '../src/cli.js';
import { CLI, cliEnv, runCli } from './support/helpers.js';

const COMMANDS = ['collect', 'archive', 'doctor', 'report', 'pulse', 'run', 'install', 'uninstall'];

describe('help', () => {
  it('-h and --help at the top level list the commands, exit 0', async () => {
    for (const flag of ['-h', '--help']) {
      const result = await runCli([flag]);
      expect([flag, result.exitCode, result.stderr]).toEqual([flag, 0, '']);
      for (const command of [...COMMANDS, 'completion']) expect(result.stdout).toMatch(new RegExp(`^  gpu-textfile ${command} `, 'm'));
    }
  });

  it.each(COMMANDS)(
    '%s: -h, --help and `help <command>` print the same help with a usage line, exit statuses and the variables',
    async (command) => {
      const [short, long, viaHelp] = await Promise.all([runCli([command, '-h']), runCli([command, '--help']), runCli(['help', command])]);
      expect([short.exitCode, long.exitCode, viaHelp.exitCode, short.stderr]).toEqual([0, 0, 0, '']);
      expect(long.stdout).toBe(short.stdout);
      expect(viaHelp.stdout).toBe(short.stdout);
      expect(short.stdout.split('\n')[0]).toMatch(new RegExp(`^gpu-textfile ${command} `));
      expect(short.stdout).toMatch(/^Examples:$/m);
      expect(short.stdout).toMatch(/^Exit status: 0 /m);
      expect(short.stdout).toContain('GPU_TEXTFILE_<OPTION>');
    },
  );

  it('collect: placeholders in the usage line, options grouped', async () => {
    const { stdout } = await runCli(['collect', '--help']);
    const usage = stdout.slice(0, stdout.indexOf('\n\n')).replace(/\n/g, ' ');
    for (const word of [
      '[--textfile-dir DIR]',
      '[--timeout DURATION]',
      '[--label KEY=VALUE]…',
      '[--no-processes]',
      '[--interval DURATION]',
    ])
      expect(usage).toContain(word);
    for (const group of ['Output:', 'nvidia-smi:', 'CSV trail:', 'Daemon mode:', 'Host:'])
      expect(stdout).toMatch(new RegExp(`^${group}$`, 'm'));
  });

  it("run: the job's command follows -- in the usage line", async () => {
    const { stdout } = await runCli(['run', '--help']);
    const usage = stdout.slice(0, stdout.indexOf('\n\n')).replace(/\n/g, ' ');
    expect(usage).toMatch(/\[--mark REGEX\] .*-- CMD \[ARGS…\]$/);
  });

  it("uninstall has its own help and options, not install's", async () => {
    const help = await runCli(['uninstall', '--help']);
    expect(help.stdout).not.toContain('--daemon');
    expect(help.stdout).not.toContain('--csv-dir');
    const flag = await runCli(['uninstall', '--daemon', '--dry-run']);
    expect([flag.exitCode, flag.stderr]).toEqual([2, 'gpu-textfile: Unknown argument: daemon (see --help)\n']);
  });
});

describe('a mistyped command', () => {
  it.each([
    ['colect', 'collect'],
    ['instal', 'install'],
    ['docter', 'doctor'],
    ['reprot', 'report'],
    ['rnu', 'run'],
    ['frobnicate', undefined],
  ])('%s -> %s', (typed, expected) => expect(closestCommand(typed)).toBe(expected));

  it('is a usage error (exit 2) that names the command meant', async () => {
    const result = await runCli(['colect', '--dry-run']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toBe(
      'gpu-textfile: Unknown command: colect. Did you mean collect? Commands: collect, archive, doctor, report, export, pulse, run, install, uninstall (see --help)\n',
    );
    const help = await runCli(['help', 'nope']);
    expect([help.exitCode, help.stderr]).toEqual([
      2,
      'gpu-textfile: Unknown command: nope Commands: collect, archive, doctor, report, export, pulse, run, install, uninstall (see --help)\n',
    ]);
  });
});

describe('completion', () => {
  it("prints the bash script, or zsh's when $SHELL is zsh", async () => {
    const bash = await runCli(['completion'], { SHELL: '/bin/bash' });
    expect(bash.exitCode).toBe(0);
    expect(bash.stdout).toMatch(/^complete -o bashdefault -o default -F _gpu-textfile_yargs_completions gpu-textfile$/m);
    const zsh = await runCli(['completion'], { SHELL: '/usr/bin/zsh' });
    expect(zsh.stdout).toMatch(/^#compdef gpu-textfile$/m);
  });

  it("completes command names, and each command's options", async () => {
    const commands = await runCli(['--get-yargs-completions', 'gpu-textfile', 'col'], { SHELL: '/bin/bash' });
    expect(commands.stdout.split('\n')).toEqual(expect.arrayContaining(COMMANDS));
    const options = await runCli(['--get-yargs-completions', 'gpu-textfile', 'collect', '--sl'], { SHELL: '/bin/bash' });
    expect(options.stdout.split('\n')).toEqual(expect.arrayContaining(['--slow-fields', '--textfile-dir', '--exclude-fields']));
    const doctor = await runCli(['--get-yargs-completions', 'gpu-textfile', 'doctor', '--'], { SHELL: '/bin/bash' });
    expect(doctor.stdout.split('\n')).toEqual(expect.arrayContaining(['--only', '--root']));
  });
});

describe('--version', () => {
  it('answers from any working directory', async () => {
    const result = await execa(process.execPath, [CLI, '--version'], {
      cwd: '/',
      env: cliEnv(),
      extendEnv: false,
      reject: false,
      stripFinalNewline: false,
    });
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
