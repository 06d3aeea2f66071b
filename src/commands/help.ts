import type { OptionSpec, OptionTable } from './option-types.js';

// What --help says beyond the option list: a usage line with placeholders, examples, exit codes and
// the GPU_TEXTFILE_* variables. Loaded only for help (with yargs), never on a collect run.

/** A command's usage line, from its option table: `gpu-textfile archive --csv-dir DIR [--keep N] …`. */
export function usageLine(command: string, table: OptionTable): string {
  const word = (name: string, spec: OptionSpec) => {
    if (spec.type === 'boolean') return spec.default === true ? `--no-${name}` : `--${name}`;
    return `--${name} ${spec.placeholder ?? (spec.type === 'number' ? 'N' : 'VALUE')}`;
  };
  const words = Object.entries(table).map(([name, spec]) =>
    spec.demandOption ? word(name, spec) : `[${word(name, spec)}]${spec.array ? '…' : ''}`,
  );
  const operands = COMMAND_HELP[command]?.operands;
  return `gpu-textfile ${command} ${words.join(' ')}${operands ? ` ${operands}` : ''}`;
}

const ENVIRONMENT =
  'Every option can also be set as GPU_TEXTFILE_<OPTION> (upper case, - as _: GPU_TEXTFILE_TEXTFILE_DIR), as in ' +
  '/etc/default/gpu-textfile, which the systemd units and the cron.d file read, and every command but install ' +
  'reads for its defaults (GPU_TEXTFILE_DEFAULTS_FILE names another file; empty, none): the environment wins over ' +
  'the file, the command line over both. A repeatable ' +
  'option takes a list there, items separated by commas or spaces: GPU_TEXTFILE_LABEL="env=prod site=x", ' +
  "GPU_TEXTFILE_EXCLUDE_FIELDS='ecc* power*' (an item given there cannot itself contain a comma or a space).";

/** Each command's examples and exit statuses. */
export const COMMAND_HELP: Record<string, { examples: [string, string][]; exit: string; operands?: string }> = {
  collect: {
    examples: [
      ['gpu-textfile collect --dry-run', 'print the metrics of this machine, write nothing'],
      ['gpu-textfile collect --label site=x --exclude-fields "ecc*"', 'publish into the textfile directory'],
      ['gpu-textfile collect --csv-dir /var/log/gpu-textfile --task train', 'also append to the CSV trail'],
      ['gpu-textfile collect --interval 1s', 'run on, publishing every second'],
    ],
    exit: '0 collected, 1 failed (the file holds the health block), 2 bad options or a --textfile-dir that does not exist, 75 another collect holds the lock',
  },
  archive: {
    examples: [['gpu-textfile archive --csv-dir /var/log/gpu-textfile --keep 30', 'rotate every live CSV, keep 30 archives per task']],
    exit: '0 done, 1 a file could not be rotated (left intact), 2 bad options',
  },
  doctor: {
    examples: [
      ['gpu-textfile doctor', 'walk every check'],
      ['gpu-textfile doctor --only kernel-module --only nouveau --json', 'two checks, as JSON'],
    ],
    exit: '0 healthy, 1 a cause found (or not finished in time), 2 bad options',
  },
  report: {
    examples: [
      ['gpu-textfile report --csv-dir /var/log/gpu-textfile --since 24h', 'hourly rows and findings for the last day'],
      ['gpu-textfile report --csv-dir /var/log/gpu-textfile --by day --format html --out report.html', 'one page with charts'],
    ],
    exit: '0 answered, 1 the CSV trail could not be read, 2 bad options',
  },
  export: {
    examples: [
      [
        'gpu-textfile export --csv-dir /var/log/gpu-textfile --since 2026-11-28 --until 2026-11-29 --out gap.om',
        'a day as OpenMetrics, for promtool',
      ],
      [
        'gpu-textfile export --csv-dir /var/log/gpu-textfile --since 6h --format prometheus | curl --data-binary @- http://vm:8428/api/v1/import/prometheus',
        'into VictoriaMetrics',
      ],
    ],
    exit: '0 exported, 1 the CSV trail or --out could not be read or written, 2 bad options',
  },
  pulse: {
    examples: [
      ['gpu-textfile pulse --gpu 0 --seconds 15', 'sample GPU 0 for 15 s and say what kind of work it is'],
      ['gpu-textfile pulse --from recording.csv --json', 'judge a recording'],
    ],
    exit: '0 answered, 1 nvidia-smi or the recording failed, 2 bad options',
  },
  run: {
    operands: '-- CMD [ARGS…]',
    examples: [
      ['gpu-textfile run -- python train.py', 'run the job, print its summary on stderr when it ends'],
      ['gpu-textfile run --csv-dir ~/gpu-runs --interval 200ms -- python train.py', 'also keep every sample with its step'],
      ["gpu-textfile run --mark 'it (?<step>\\d+) loss (?<loss>[\\d.]+)' -- ./train", 'steps and loss from your own log format'],
      ['gpu-textfile run --textfile-dir /var/lib/node_exporter/textfile -- torchrun train.py', 'dashboards see who runs where'],
    ],
    exit: "0 the job succeeded, else the job's own status (128 + the signal's number when a signal killed it), 2 bad options or a --textfile-dir that does not exist (the job not started), 127 the command cannot be run",
  },
  install: {
    examples: [
      ['gpu-textfile install --csv-dir /var/log/gpu-textfile --task "$(hostname)"', 'timer every 15 s, CSV trail archived daily'],
      ['gpu-textfile install --daemon --interval 1s --slow-fields', 'the daemon service instead, sampling every second'],
      ['gpu-textfile install --root /tmp/image --dry-run', 'say what would be written under /tmp/image'],
    ],
    exit: '0 installed, 1 a step failed (the step is named), 2 bad options (nothing changed)',
  },
  uninstall: {
    examples: [['gpu-textfile uninstall --dry-run', 'say what would be removed']],
    exit: '0 removed, 1 a step failed (the step is named), 2 bad options',
  },
};

/** `text` cut into lines of at most `width` columns at spaces (a longer word keeps its own line), each after `indent`. */
export function wrapWords(text: string, width: number, indent = ''): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(indent + line);
  return lines;
}

/**
 * The text after the option list: the examples, each command on a line of its own however long
 * (wrapped, it could not be pasted), what it does below it; then exit statuses and the variables.
 */
export function afterOptions(command: string, width: number): string {
  const examples = (COMMAND_HELP[command]?.examples ?? []).flatMap(([example, what]) => [
    `  ${example}`,
    ...wrapWords(what, width, '      '),
  ]);
  return [
    ...(examples.length > 0 ? ['Examples:', ...examples, ''] : []),
    ...wrapWords(`Exit status: ${COMMAND_HELP[command]?.exit ?? '0 done, 2 bad options'}.`, width),
    '',
    ...wrapWords(ENVIRONMENT, width),
  ].join('\n');
}
