/** What a task name may be: it names <csv-dir>/<task>.csv and fills the CSV's task_id column. */
export const TASK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Longer names make file names no one types, and a CSV cell no report lines up. */
export const TASK_NAME_MAX_LENGTH = 100;

/** NAME-YYYYMMDD[-N] is how archives are named: a live file so named would be taken for one. */
const ARCHIVE_SUFFIX = /-\d{8}(-\d+)?$/;

/**
 * The one line that says what is wrong with a --task, or undefined when it is fine. Every command
 * that takes --task asks at parse time, so a bad name never reaches a path.
 */
export function taskNameProblem(task: string): string | undefined {
  if (task.length > TASK_NAME_MAX_LENGTH) return `--task: ${task.length} characters, at most ${TASK_NAME_MAX_LENGTH}`;
  // JSON.stringify: a newline or a control character in the name shows as \n, keeping the message one line.
  if (!TASK_NAME.test(task))
    return `--task: ${JSON.stringify(task)} must be letters, digits, '.', '_' or '-', starting with a letter or digit`;
  if (ARCHIVE_SUFFIX.test(task)) return `--task: "${task}" must not end in -YYYYMMDD, the archives' suffix`;
  return undefined;
}
