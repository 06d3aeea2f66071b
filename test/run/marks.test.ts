import { describe, expect, it } from 'vitest';
import { DEFAULT_MARK, marksCell, parseMarkRegex, readMark } from '../../src/run/marks.js';

const regex = parseMarkRegex(DEFAULT_MARK) as RegExp;

describe('the default --mark', () => {
  it.each([
    ['step 120', 120],
    ['step=120', 120],
    ['Step: 120/5000', 120],
    ['[120/5000] loss 0.3', 120],
    ['epoch 2 global_step=120 loss=0.31', 120],
    ['train | step #7 |', 7],
  ])('%s -> step %s', (line, step) => expect(readMark(line, regex)?.step).toBe(step));

  it.each([['steps 12'], ['epoch 3 loss=0.2'], ['[12] done'], ['stepping 4'], ['']])('%s is no mark', (line) =>
    expect(readMark(line, regex)).toBeUndefined(),
  );

  it("takes the line's name=number pairs as marks, the step's own name left out", () => {
    const mark = readMark('step=120 loss=0.31, lr: 1e-4 acc=97.5% note=x', regex)!;
    expect(mark).toEqual({
      step: 120,
      marks: [
        ['loss', '0.31'],
        ['lr', '1e-4'],
        ['acc', '97.5'],
      ],
    });
    expect(marksCell(mark.marks)).toBe('loss=0.31 lr=1e-4 acc=97.5');
  });
});

describe('a training metric without = or :', () => {
  // Issue 39: `loss 0.250` is one of the commonest forms; it was left out.
  it.each([
    ['step 120 loss 0.250', [['loss', '0.250']]],
    [
      'Step: 7/500 | train_loss 1.03 | lr 3e-4 | acc 0.91',
      [
        ['train_loss', '1.03'],
        ['lr', '3e-4'],
        ['acc', '0.91'],
      ],
    ],
    [
      'step=9 val_loss 2.5 loss=2.25',
      [
        ['val_loss', '2.5'],
        ['loss', '2.25'],
      ],
    ],
    [
      '[12/100] Loss 0.5 grad_norm 1.2 ppl 12.3',
      [
        ['Loss', '0.5'],
        ['grad_norm', '1.2'],
        ['ppl', '12.3'],
      ],
    ],
  ])('%s', (line, marks) => expect(readMark(line, regex)?.marks).toEqual(marks));

  // No other name is a value without = or :, nor is a number that runs on into a word or a ratio.
  it.each(['step 3 epoch 2 batch 32 rank 0 GPU 3', 'step 3 closs 0.5', 'step 3 loss 0.5x', 'step 3 loss 4/10', 'step 3 lossy 0.5'])(
    '%s has no spaced mark',
    (line) => expect(readMark(line, regex)?.marks).toEqual([]),
  );
});

describe('--mark REGEX', () => {
  it('named groups other than step are the marks; a step that is no whole number is left out', () => {
    const own = parseMarkRegex('it (?<step>\\d+) loss (?<loss>[\\d.]+)(?: acc (?<acc>[\\d.]+))?') as RegExp;
    expect(readMark('it 42 loss 0.5 acc 0.9 extra=1', own)).toEqual({
      step: 42,
      marks: [
        ['loss', '0.5'],
        ['acc', '0.9'],
      ],
    });
    expect(readMark('it 43 loss 0.4', own)).toEqual({ step: 43, marks: [['loss', '0.4']] });
    const noStep = parseMarkRegex('epoch (?<epoch>\\d+)') as RegExp;
    expect(readMark('epoch 3', noStep)).toEqual({ marks: [['epoch', '3']] });
  });

  it('is refused when it does not compile, or matches every line', () => {
    expect(parseMarkRegex('step (?<step>\\d+')).toMatch(/^--mark: "step \(\?<step>\\\\d\+" is not a regular expression: /);
    expect(parseMarkRegex('x*')).toBe('--mark: "x*" matches an empty line: it would mark every line');
  });

  // Each would backtrack without end on some line; the linear engine cannot run them: refused.
  it.each(['step (?<step>\\d+)(a+)+\\2$', 'step (?<step>\\d+)(?=a)', '(?<=x)step (?<step>\\d+)', 'step (?<step>\\d{1,5000})'])(
    '%s is refused: it cannot be matched in linear time',
    (text) => {
      expect(parseMarkRegex(text)).toBe(
        `--mark: ${JSON.stringify(text)} cannot be matched in linear time (a backreference, a lookahead or lookbehind, or a large {n,m}): write it without`,
      );
    },
  );

  it('a pattern that would backtrack catastrophically matches a line in linear time', () => {
    // On the backtracking engine this line takes minutes (2^40 ways to split the a's); a test that
    // hung would never end, so the engine is asserted first.
    const evil = parseMarkRegex('step (?<step>\\d+)|^(a+)+$') as RegExp;
    expect(evil.flags).toContain('l');
    expect(readMark(`${'a'.repeat(40)}!`, evil)).toBeUndefined();
    expect(readMark('step 12', evil)).toEqual({ step: 12, marks: [] });
  });

  it('keeps each mark one short cell value', () => {
    const own = parseMarkRegex('msg=(?<msg>.*)') as RegExp;
    const [[, value]] = readMark(`msg=a,b;\tc${'x'.repeat(200)}`, own)!.marks as [[string, string]];
    expect(value).toMatch(/^a b cx+$/);
    expect(value.length).toBe(64);
  });
});
