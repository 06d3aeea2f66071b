import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { closestCommand } from '../src/cli.js';
import { COMMAND_HELP } from '../src/commands/help.js';
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

describe('a mistyped option', () => {
  // Issue 39: yargs suggests commands only. Both parsers (collect's own, yargs for the rest) name the
  // option meant, and stay a usage error.
  it.each([
    [['collect', '--dryrun'], 'Unknown argument: dryrun. Did you mean --dry-run?'],
    [['report', '--demo', '--formt', 'json'], 'Unknown argument: formt. Did you mean --format?'],
    [['pulse', '--secnds', '3'], 'Unknown argument: secnds. Did you mean --seconds?'],
    [['doctor', '--frobnicate'], 'Unknown argument: frobnicate'],
  ])('%j', async (args, message) => {
    const result = await runCli(args);
    expect([result.exitCode, result.stderr]).toEqual([2, `gpu-textfile: ${message} (see --help)\n`]);
  });
});

describe('help on an 80-column terminal', () => {
  // Issue 39: yargs wrapped each example's command at the terminal's width (`--exclude-fields` on one
  // line, `"ecc*"` on the next), and a command cut in two cannot be pasted. Run on a real terminal of
  // 80 columns (script(1) gives the program one), as a user sees it.
  const helpAt80 = async (command: string) => {
    const shell = `stty cols 80 rows 50; exec ${process.execPath} ${CLI} ${command} --help`;
    const result = await execa('script', ['-qec', shell, '/dev/null'], { env: cliEnv(), extendEnv: false, reject: false, timeout: 60_000 });
    return { exitCode: result.exitCode, lines: result.stdout.replace(/\r/g, '').split('\n') };
  };

  it.each(COMMANDS.filter((command) => command !== 'uninstall'))('%s: every example whole on a line of its own', async (command) => {
    const { exitCode, lines } = await helpAt80(command);
    expect(exitCode).toBe(0);
    const examples = COMMAND_HELP[command]!.examples.map(([example]) => example);
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) expect(lines).toContain(`  ${example}`);
    // The rest is laid out to the terminal: no other line passes 80 columns.
    const others = lines.filter((line) => !examples.some((example) => line === `  ${example}`));
    expect(others.filter((line) => line.length > 80)).toEqual([]);
  });

  it("pulse's options in groups: what to sample, then where from", async () => {
    const { lines } = await helpAt80('pulse');
    const groupOf = (option: string) => {
      const at = lines.findIndex((line) => new RegExp(`^\\s+--${option}\\s`).test(line));
      return lines
        .slice(0, at)
        .reverse()
        .find((line) => /^[A-Z][\w -]*:$/.test(line));
    };
    expect(['gpu', 'seconds', 'interval', 'from'].map(groupOf)).toEqual(['Sampling:', 'Sampling:', 'Sampling:', 'Sampling:']);
    expect(['source', 'nvidia-smi', 'nvml-library', 'timeout'].map(groupOf)).toEqual(['Source:', 'Source:', 'Source:', 'Source:']);
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
