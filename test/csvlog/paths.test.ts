import { describe, expect, it } from 'vitest';
import {
  archiveName,
  csvLockName,
  endsLikeArchive,
  isArchiveTemp,
  isSidecarName,
  liveName,
  liveTask,
  parseArchiveName,
  sidecarName,
} from '../../src/csvlog/paths.js';

describe('names in a CSV directory', () => {
  it('an archive name parses back into its task, day and counter', () => {
    expect(parseArchiveName('train-7-20261129-3.csv.gz')).toEqual({
      file: 'train-7-20261129-3.csv.gz',
      task: 'train-7',
      day: '20261129',
      counter: 3,
      gzip: true,
    });
    expect(parseArchiveName(archiveName('train-7', '20261129', 1))).toEqual({
      file: 'train-7-20261129.csv',
      task: 'train-7',
      day: '20261129',
      counter: 1,
      gzip: false,
    });
    expect(parseArchiveName(archiveName('train-7', '20261129', 2))?.counter).toBe(2);
    expect(parseArchiveName('train-7.csv')).toBeUndefined();
  });

  it('a live file is <task>.csv, never an archive, a lock or a hidden file', () => {
    expect(liveTask(liveName('train-7'))).toBe('train-7');
    expect(liveTask('train-7-20261129.csv')).toBeUndefined();
    expect(liveTask(csvLockName('train-7'))).toBeUndefined();
    expect(liveTask('train-7.csv.gz')).toBeUndefined();
    expect(liveTask('.hidden.csv')).toBeUndefined();
  });

  it('a task ending like an archive is told apart', () => {
    expect(endsLikeArchive('job-20261129')).toBe(true);
    expect(endsLikeArchive('job-20261129-2')).toBe(true);
    expect(endsLikeArchive('job-2026')).toBe(false);
    expect(endsLikeArchive('job-20261129-12')).toBe(true);
    expect(endsLikeArchive('job-20261129x')).toBe(false);
  });

  it("only an archive's temp file counts as an archiver's leftover", () => {
    expect(isArchiveTemp('.train-20261129.csv.gz.0123456789abcdef.tmp')).toBe(true);
    expect(isArchiveTemp('.train.csv.0123456789abcdef.tmp')).toBe(false);
    expect(isArchiveTemp('.train-20261129.csv.gz.0123.tmp')).toBe(false);
    // A sidecar's temp file is an archiver's too; a live file's hours file is no sidecar.
    expect(isArchiveTemp('.train-20261129-2.csv.hours.json.0123456789abcdef.tmp')).toBe(true);
    expect(isArchiveTemp('.train.csv.hours.json.0123456789abcdef.tmp')).toBe(false);
  });

  it("an archive's sidecar is named after the archive, without .gz, so compressing keeps the name", () => {
    expect(sidecarName('train-20261129.csv')).toBe('train-20261129.csv.hours.json');
    expect(sidecarName('train-20261129-2.csv.gz')).toBe('train-20261129-2.csv.hours.json');
    expect(isSidecarName('train-20261129-2.csv.hours.json')).toBe(true);
    expect(isSidecarName('train.csv.hours.json')).toBe(false);
    // Neither a live file nor an archive to the reader and the archiver.
    expect(liveTask('train-20261129.csv.hours.json')).toBeUndefined();
    expect(parseArchiveName('train-20261129.csv.hours.json')).toBeUndefined();
  });
});
