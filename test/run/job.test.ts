import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, FAKE_SMI, capture, cliEnv, tempDir, madeDir } from '../support/helpers.js';
import { fillLeaving, smallTmpfs } from '../support/small-tmpfs.js';

// The job as a process: its bytes, its signals and its status pass through the wrapper unchanged.

const H200X2 = capture('h200x2__580.159.04__linux-load');
const text = (bytes: unknown) => Buffer.from(bytes as Uint8Array).toString('utf8');

async function script(dir: string, name: string, body: string, mode = 0o755): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, body);
  await chmod(path, mode);
  return path;
}

/** Starts `gpu-textfile run` over the stand-in; never rejects. */
function wrap(dir: string, command: string[], args: string[] = [], smi = FAKE_SMI) {
  return execa(process.execPath, [CLI, 'run', '--nvidia-smi', smi, '--state-dir', join(dir, 'state'), ...args, '--', ...command], {
    env: cliEnv({ FAKE_SMI_CAPTURE: H200X2 }),
    extendEnv: false,
    reject: false,
    timeout: 60_000,
    stdin: 'ignore',
    encoding: 'buffer',
    stripFinalNewline: false,
  });
}

/** Resolves once `child`'s stdout has printed `line` (or rejects after 90 s: a generous deadline, for a busy machine). */
function printed(child: ReturnType<typeof wrap>, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no "${line}" within 90 s; saw ${JSON.stringify(seen)}`)), 90_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += String(chunk);
      if (seen.includes(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

describe("the job's output", () => {
  it('passes byte for byte and in order on each stream: invalid UTF-8, CR, a 200 kB line, 3000 writes', async () => {
    const dir = await tempDir();
    const expected = { out: [] as Buffer[], err: [] as Buffer[] };
    const writer = [
      'const out = (b) => process.stdout.write(b), err = (b) => process.stderr.write(b);',
      'for (let i = 0; i < 3000; i++) {',
      "  out('step ' + i + ' ' + 'x'.repeat(i % 300) + '\\n');",
      "  if (i % 7 === 0) err('e ' + i + '\\r');",
      '}',
      'out(Buffer.from([0xff, 0xfe, 0x00, 0x0d, 0x0a, 0xc3]));',
      "out('y'.repeat(200000));",
      "err('last, no newline');",
    ].join('\n');
    for (let i = 0; i < 3000; i++) {
      expected.out.push(Buffer.from(`step ${i} ${'x'.repeat(i % 300)}\n`));
      if (i % 7 === 0) expected.err.push(Buffer.from(`e ${i}\r`));
    }
    expected.out.push(Buffer.from([0xff, 0xfe, 0x00, 0x0d, 0x0a, 0xc3]), Buffer.from('y'.repeat(200000)));
    expected.err.push(Buffer.from('last, no newline'));
    const path = await script(dir, 'writer.mjs', writer);
    const result = await wrap(dir, [process.execPath, path], ['--summary-json', join(dir, 's.json')]);
    expect(result.exitCode).toBe(0);
    expect(Buffer.compare(Buffer.from(result.stdout as Uint8Array), Buffer.concat(expected.out))).toBe(0);
    const stderr = Buffer.from(result.stderr as Uint8Array);
    const jobErr = Buffer.concat(expected.err);
    expect(Buffer.compare(stderr.subarray(0, jobErr.length), jobErr)).toBe(0);
    // The job's last line had no newline: ours starts on a new line.
    expect(text(stderr.subarray(jobErr.length))).toMatch(/^\ngpu-textfile run: /);
    const summary = JSON.parse(await readFile(join(dir, 's.json'), 'utf8'));
    expect(summary.steps).toMatchObject({ lines: 3000, done: 2999, last_step: 2999 });
  });

  it('ends when the job does, though a child of the job still holds its output open', async () => {
    const dir = await tempDir();
    // The background subshell keeps stdout open for 20 s: the wrapper stops reading 5 s after the job
    // exits, so the subshell's late line finds the pipe closed and ends it (no process is left behind).
    const result = await wrap(dir, ['sh', '-c', '(sleep 20; echo late) & echo started; exit 4']);
    expect([result.exitCode, text(result.stdout)]).toEqual([4, 'started\n']);
    expect(text(result.stderr)).toMatch(/: exit status 4 after /);
  });

  it('passes the words after -- to the job, --help included', async () => {
    const dir = await tempDir();
    const result = await wrap(dir, ['sh', '-c', 'echo "$@"', 'sh', '--help', '-x', '--']);
    expect([result.exitCode, text(result.stdout)]).toEqual([0, '--help -x --\n']);
  });
});

describe('exit status and signals', () => {
  it.each([
    ['SIGINT', 7],
    ['SIGTERM', 8],
    ['SIGHUP', 9],
  ] as const)('forwards %s to the job, and exits with what the job then exits with', async (signal, status) => {
    const dir = await tempDir();
    const path = await script(
      dir,
      'job.sh',
      "#!/bin/sh\ntrap 'echo got INT; exit 7' INT\ntrap 'echo got TERM; exit 8' TERM\ntrap 'echo got HUP; exit 9' HUP\necho ready\nwhile :; do sleep 0.05; done\n",
    );
    const child = wrap(dir, [path]);
    await printed(child, 'ready\n');
    child.kill(signal);
    const result = await child;
    expect([result.exitCode, text(result.stdout)]).toEqual([status, `ready\ngot ${signal.slice(3)}\n`]);
  });

  it('a job killed by a signal: 128 + its number, and the summary says so', async () => {
    const dir = await tempDir();
    const path = await script(dir, 'job.sh', '#!/bin/sh\necho ready\nexec sleep 60\n');
    const child = wrap(dir, [path]);
    await printed(child, 'ready\n');
    child.kill('SIGTERM');
    const result = await child;
    expect(result.exitCode).toBe(143);
    expect(text(result.stderr)).toMatch(/: killed by SIGTERM \(status 143\) after /);
  });

  it('a command that is not found, or not executable: 127 and one line, as a shell', async () => {
    const dir = await tempDir();
    const missing = await wrap(dir, [join(dir, 'no-such-job')]);
    expect([missing.exitCode, text(missing.stdout), text(missing.stderr)]).toEqual([
      127,
      '',
      `gpu-textfile run: ${join(dir, 'no-such-job')}: command not found\n`,
    ]);
    const plain = await script(dir, 'plain.sh', '#!/bin/sh\necho never\n', 0o644);
    const refused = await wrap(dir, [plain]);
    expect([refused.exitCode, text(refused.stderr)]).toEqual([127, `gpu-textfile run: ${plain}: permission denied (not executable)\n`]);
  });

  it('without nvidia-smi the job still runs; the summary says there is no GPU data', async () => {
    const dir = await tempDir();
    const result = await wrap(dir, ['sh', '-c', 'echo hello; exit 5'], [], join(dir, 'no-nvidia-smi'));
    expect([result.exitCode, text(result.stdout)]).toEqual([5, 'hello\n']);
    expect(text(result.stderr)).toMatch(
      /^gpu-textfile run: sh-\d{8}T\d{6}: exit status 5 after .*\n {2}no GPU data: nvidia_smi_not_found: /m,
    );
  });

  it('bad options exit 2 before anything starts: no command, a --mark that does not compile', async () => {
    const dir = await tempDir();
    const none = await wrap(dir, []);
    expect([none.exitCode, text(none.stderr)]).toEqual([
      2,
      'gpu-textfile: name the command to run after --: gpu-textfile run [OPTIONS] -- CMD [ARGS…]\n',
    ]);
    const mark = await wrap(dir, ['sh', '-c', `touch ${join(dir, 'ran')}`], ['--mark', 'step (?<step>\\d+']);
    expect(mark.exitCode).toBe(2);
    expect(text(mark.stderr)).toMatch(/^gpu-textfile: --mark: "step \(\?<step>\\\\d\+" is not a regular expression: .*\n$/);
    await expect(readFile(join(dir, 'ran'))).rejects.toThrow(/ENOENT/);
  });

  it('our stdout on a full disk: the job, which does not ignore SIGPIPE, writes on and ends as it would; run summarises, cleans up, returns its status', async () => {
    const dir = await tempDir();
    const disk = await smallTmpfs(256 * 1024);
    fillLeaving(disk, 0);
    // 4 MB, far more than a pipe holds: its writes go on after run's first failed. Without run, head's
    // writes would fail with ENOSPC; with run they are dropped, and it must not get SIGPIPE (141).
    const body = '#!/bin/sh\nhead -c 4000000 /dev/zero\necho "head: $?" >&2\nexit 3\n';
    const path = await script(dir, 'job.sh', body);
    const runArgs = [
      'run',
      '--nvidia-smi',
      FAKE_SMI,
      '--state-dir',
      join(dir, 's'),
      '--textfile-dir',
      madeDir(join(dir, 't')),
      '--task',
      'full',
    ];
    const result = await execa('sh', ['-c', '"$0" "$@" > "$OUT"', process.execPath, CLI, ...runArgs, '--', path], {
      env: cliEnv({ FAKE_SMI_CAPTURE: H200X2, OUT: join(disk, 'out') }),
      extendEnv: false,
      reject: false,
      timeout: 60_000,
      stdin: 'ignore',
    });
    // Not 141: run never ends the job over its own output.
    expect(result.exitCode).toBe(3);
    expect(result.stderr.split('\n').slice(0, 3)).toEqual([
      "gpu-textfile run: cannot write to stdout: ENOSPC; the job's further output there is dropped",
      'head: 0',
      expect.stringMatching(/^gpu-textfile run: full: exit status 3 after /),
    ]);
    expect(await readdir(join(dir, 't'))).toEqual([]);
  }, 90_000);

  it("the summary starts on a line of its own after a job's last stderr line without a newline", async () => {
    const dir = await tempDir();
    const result = await wrap(dir, ['sh', '-c', 'printf "50%% done" >&2'], ['--task', 'glued']);
    expect(result.exitCode).toBe(0);
    expect(text(result.stderr)).toMatch(/^50% done\ngpu-textfile run: glued: exit status 0 after /);
  });

  it('a --mark that would backtrack for ever on a line: the line is matched in linear time, the job ends as it does', async () => {
    const dir = await tempDir();
    const line = `${'a'.repeat(40)}!`;
    const result = await wrap(dir, ['sh', '-c', `echo ${line}; echo step 3; exit 4`], ['--mark', 'step (?<step>\\d+)|^(a+)+$']);
    expect([result.exitCode, result.timedOut, text(result.stdout)]).toEqual([4, false, `${line}\nstep 3\n`]);
    expect(text(result.stderr)).toMatch(/: exit status 4 after /);
  });

  it('a --mark the linear-time engine cannot run is refused before anything starts', async () => {
    const dir = await tempDir();
    const result = await wrap(dir, ['touch', join(dir, 'ran')], ['--mark', '(a+)+\\1$']);
    expect([result.exitCode, text(result.stderr)]).toEqual([
      2,
      'gpu-textfile: --mark: "(a+)+\\\\1$" cannot be matched in linear time (a backreference, a lookahead or lookbehind, or a large {n,m}): write it without\n',
    ]);
    await expect(readFile(join(dir, 'ran'))).rejects.toThrow(/ENOENT/);
  });
});
